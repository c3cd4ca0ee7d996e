//! Scope parsing and the binding table (SPEC B1–B7).

use expect_test::{expect, Expect};
use ext_core::binding::{BindingInput, Bindings, CatalogWorkspace};
use ext_core::scope::{classify_url, PageKind, Scope};

const PROJECT_HOME: &str = "https://chatgpt.com/g/g-p-0123456789ABCDEF0123456789abcdef-my-app/project";
const PROJECT_CHAT_A: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-renamed/c/6a1b2c3d-0000-4000-8000-00000000000a";
const PROJECT_CHAT_B: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/6a1b2c3d-0000-4000-8000-00000000000b";

fn check_urls(urls: &[&str], expect: Expect) {
    let lines: Vec<String> = urls.iter().map(|url| format!("{url}\n  -> {:?}", classify_url(url))).collect();
    expect.assert_eq(&lines.join("\n"));
}

#[test]
fn chatgpt_urls_classify_into_page_kinds_with_the_slug_normalised_away() {
    // B2, B3, B6; temporary chats have no id.
    check_urls(
        &[
            "https://chatgpt.com/",
            "https://chatgpt.com/?temporary-chat=true",
            "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-my-app/project?temporary-chat=true",
            "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/6a1b2c3d-0000-4000-8000-00000000000a?model=x&temporary-chat=true",
            "https://chatgpt.com/c/6A1B2C3D-0000-4000-8000-00000000000A",
            PROJECT_HOME,
            PROJECT_CHAT_A,
            "https://chatgpt.com/g/g-abc123-some-gpt/c/6a1b2c3d-0000-4000-8000-00000000000c",
            "https://chatgpt.com/gpts",
            "https://chatgpt.com/g/g-p-0123/project",
            "https://chat.z.ai/c/3f2e1d0c-aaaa-bbbb",
            "https://chat.z.ai/",
            "https://chat.deepseek.com/a/chat/s/AbC-123",
            "https://example.com/c/6a1b2c3d-0000-4000-8000-00000000000a",
            "chrome://extensions",
        ],
        expect![[r#"
            https://chatgpt.com/
              -> Root
            https://chatgpt.com/?temporary-chat=true
              -> Unsupported { reason: TemporaryChat }
            https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-my-app/project?temporary-chat=true
              -> Unsupported { reason: TemporaryChat }
            https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/6a1b2c3d-0000-4000-8000-00000000000a?model=x&temporary-chat=true
              -> Unsupported { reason: TemporaryChat }
            https://chatgpt.com/c/6A1B2C3D-0000-4000-8000-00000000000A
              -> Chat { site: ChatGpt, conversation_id: "6a1b2c3d-0000-4000-8000-00000000000a" }
            https://chatgpt.com/g/g-p-0123456789ABCDEF0123456789abcdef-my-app/project
              -> ProjectHome { project_id: "g-p-0123456789abcdef0123456789abcdef" }
            https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-renamed/c/6a1b2c3d-0000-4000-8000-00000000000a
              -> ProjectChat { project_id: "g-p-0123456789abcdef0123456789abcdef", conversation_id: "6a1b2c3d-0000-4000-8000-00000000000a" }
            https://chatgpt.com/g/g-abc123-some-gpt/c/6a1b2c3d-0000-4000-8000-00000000000c
              -> Chat { site: ChatGpt, conversation_id: "6a1b2c3d-0000-4000-8000-00000000000c" }
            https://chatgpt.com/gpts
              -> Unsupported { reason: NotAChatPage }
            https://chatgpt.com/g/g-p-0123/project
              -> Unsupported { reason: NotAChatPage }
            https://chat.z.ai/c/3f2e1d0c-aaaa-bbbb
              -> Chat { site: Zai, conversation_id: "3f2e1d0c-aaaa-bbbb" }
            https://chat.z.ai/
              -> Unsupported { reason: NoConversationYet }
            https://chat.deepseek.com/a/chat/s/AbC-123
              -> Chat { site: DeepSeek, conversation_id: "AbC-123" }
            https://example.com/c/6a1b2c3d-0000-4000-8000-00000000000a
              -> Unsupported { reason: UnknownSite }
            chrome://extensions
              -> Unsupported { reason: NotAUrl }"#]],
    );
}

#[test]
fn both_urls_of_one_project_give_the_same_scope_key() {
    // B2: Project binding keys on the stable project_id, not the slug.
    let home = classify_url(PROJECT_HOME).scope();
    let chat = classify_url(PROJECT_CHAT_A).scope();
    assert_eq!(home, chat);
    assert_eq!(home.map(|s| s.key()).as_deref(), Some("project:g-p-0123456789abcdef0123456789abcdef"));
}

#[test]
fn root_and_project_home_pages_offer_scope_controls_only() {
    // B5.
    assert!(!classify_url("https://chatgpt.com/").has_composer_target());
    assert!(!classify_url(PROJECT_HOME).has_composer_target());
    assert!(classify_url(PROJECT_CHAT_A).has_composer_target());
}

fn workspace(id: &str, label: &str) -> CatalogWorkspace {
    CatalogWorkspace { workspace_id: id.to_string(), label: label.to_string() }
}

/// Feeds `(time, input)` steps and prints every output, then the final table.
fn check_bindings(steps: Vec<(u64, BindingInput)>, expect: Expect) {
    let mut table = Bindings::new();
    let mut trace = String::new();
    for (now, input) in steps {
        trace.push_str(&format!("t={now} {}\n", describe_input(&input)));
        table.handle(now, input);
        while let Some(out) = table.poll() {
            trace.push_str(&format!("  => {}\n", serde_json::to_string(&out).unwrap_or_default()));
        }
    }
    trace.push_str("final:\n");
    for b in table.list() {
        trace.push_str(&format!(
            "  {} -> {} ({}, in catalog: {}) active={:?}\n",
            b.scope.key(),
            b.workspace_id,
            b.label,
            b.workspace_in_catalog,
            b.active_conv_key
        ));
    }
    expect.assert_eq(&trace);
}

fn describe_input(input: &BindingInput) -> String {
    match input {
        BindingInput::Bind { tab, page, workspace, target_held } => {
            format!("bind tab {tab} on {} to {}{}", page_name(page), workspace.workspace_id, held(*target_held))
        }
        BindingInput::Unbind { tab, page } => format!("unbind tab {tab} on {}", page_name(page)),
        BindingInput::UnbindScope { scope } => format!("unbind scope {}", scope.key()),
        BindingInput::PageVisited { tab, page, target_held } => format!("tab {tab} visits {}{}", page_name(page), held(*target_held)),
        BindingInput::TabClosed { tab } => format!("tab {tab} closed"),
        BindingInput::CutOver { scope, conversation_id } => format!("cut-over of {} to {conversation_id}", scope.key()),
        BindingInput::CatalogRefreshed { workspaces } => {
            format!("catalog: {}", workspaces.iter().map(|w| format!("{}={}", w.workspace_id, w.label)).collect::<Vec<_>>().join(", "))
        }
    }
}

fn held(target_held: bool) -> &'static str {
    if target_held {
        " (target held by a handoff)"
    } else {
        ""
    }
}

fn page_name(page: &PageKind) -> String {
    match page {
        PageKind::Root => "root".into(),
        PageKind::ProjectHome { .. } => "project home".into(),
        PageKind::ProjectChat { conversation_id, .. } => format!("project chat …{}", &conversation_id[34..]),
        PageKind::Chat { site, conversation_id } => format!("{site:?} chat {conversation_id}"),
        PageKind::Unsupported { reason } => format!("unsupported ({reason:?})"),
    }
}

#[test]
fn project_binding_on_home_page_then_active_target_follows_the_open_conversation() {
    // B2 (bind on home before any conversation), B3 (active_conv_key), B1 (label refresh).
    check_bindings(
        vec![
            (1, BindingInput::Bind { tab: 7, page: classify_url(PROJECT_HOME), workspace: workspace("w1", "api"), target_held: false }),
            (2, BindingInput::PageVisited { tab: 7, page: classify_url(PROJECT_CHAT_A), target_held: false }),
            (3, BindingInput::PageVisited { tab: 7, page: classify_url(PROJECT_CHAT_A), target_held: false }),
            (4, BindingInput::PageVisited { tab: 8, page: classify_url(PROJECT_CHAT_B), target_held: false }),
            (5, BindingInput::CatalogRefreshed { workspaces: vec![workspace("w1", "api-v2")] }),
            (6, BindingInput::CatalogRefreshed { workspaces: vec![] }),
            (7, BindingInput::CatalogRefreshed { workspaces: vec![workspace("w1", "api-v2")] }),
        ],
        expect![[r#"
            t=1 bind tab 7 on project home to w1
              => {"type":"bound","scope":{"kind":"project","project_id":"g-p-0123456789abcdef0123456789abcdef"},"workspace_id":"w1"}
            t=2 tab 7 visits project chat …0a
              => {"type":"active_target_changed","project_id":"g-p-0123456789abcdef0123456789abcdef","conversation_id":"6a1b2c3d-0000-4000-8000-00000000000a"}
            t=3 tab 7 visits project chat …0a
            t=4 tab 8 visits project chat …0b
              => {"type":"active_target_changed","project_id":"g-p-0123456789abcdef0123456789abcdef","conversation_id":"6a1b2c3d-0000-4000-8000-00000000000b"}
            t=5 catalog: w1=api-v2
              => {"type":"label_refreshed","workspace_id":"w1","label":"api-v2"}
            t=6 catalog: 
              => {"type":"workspace_presence_changed","workspace_id":"w1","in_catalog":false}
            t=7 catalog: w1=api-v2
              => {"type":"workspace_presence_changed","workspace_id":"w1","in_catalog":true}
            final:
              project:g-p-0123456789abcdef0123456789abcdef -> w1 (api-v2, in catalog: true) active=Some("6a1b2c3d-0000-4000-8000-00000000000b")
        "#]],
    );
}

#[test]
fn a_visit_while_a_handoff_holds_the_target_leaves_the_target_where_it_is() {
    // B3 with X2/X6: the binding table is told the page the tab shows and, as its own fact,
    // that a handoff holds the Project's target; the conversation does not become the target.
    check_bindings(
        vec![
            (1, BindingInput::Bind { tab: 7, page: classify_url(PROJECT_CHAT_A), workspace: workspace("w1", "api"), target_held: false }),
            (2, BindingInput::PageVisited { tab: 8, page: classify_url(PROJECT_CHAT_B), target_held: true }),
            (3, BindingInput::Bind { tab: 8, page: classify_url(PROJECT_CHAT_B), workspace: workspace("w1", "api"), target_held: true }),
            (4, BindingInput::PageVisited { tab: 8, page: classify_url(PROJECT_CHAT_B), target_held: false }),
        ],
        expect![[r#"
            t=1 bind tab 7 on project chat …0a to w1
              => {"type":"bound","scope":{"kind":"project","project_id":"g-p-0123456789abcdef0123456789abcdef"},"workspace_id":"w1"}
              => {"type":"active_target_changed","project_id":"g-p-0123456789abcdef0123456789abcdef","conversation_id":"6a1b2c3d-0000-4000-8000-00000000000a"}
            t=2 tab 8 visits project chat …0b (target held by a handoff)
            t=3 bind tab 8 on project chat …0b to w1 (target held by a handoff)
              => {"type":"bound","scope":{"kind":"project","project_id":"g-p-0123456789abcdef0123456789abcdef"},"workspace_id":"w1"}
            t=4 tab 8 visits project chat …0b
              => {"type":"active_target_changed","project_id":"g-p-0123456789abcdef0123456789abcdef","conversation_id":"6a1b2c3d-0000-4000-8000-00000000000b"}
            final:
              project:g-p-0123456789abcdef0123456789abcdef -> w1 (api, in catalog: true) active=Some("6a1b2c3d-0000-4000-8000-00000000000b")
        "#]],
    );
}

#[test]
fn root_page_binding_stays_pending_for_its_tab_and_migrates_once() {
    // B4: pending per tab, migrated once on the first concrete scope; another tab's root
    // page is unaffected; a migrated tab moving on does not rebind anything.
    let plain = "https://chatgpt.com/c/6a1b2c3d-0000-4000-8000-0000000000c1";
    let other = "https://chatgpt.com/c/6a1b2c3d-0000-4000-8000-0000000000c2";
    check_bindings(
        vec![
            (1, BindingInput::Bind { tab: 1, page: PageKind::Root, workspace: workspace("w2", "docs"), target_held: false }),
            (2, BindingInput::PageVisited { tab: 2, page: classify_url(plain), target_held: false }),
            (3, BindingInput::PageVisited { tab: 1, page: PageKind::Root, target_held: false }),
            (4, BindingInput::PageVisited { tab: 1, page: classify_url(plain), target_held: false }),
            (5, BindingInput::PageVisited { tab: 1, page: classify_url(other), target_held: false }),
            (6, BindingInput::Bind { tab: 3, page: PageKind::Root, workspace: workspace("w3", "x"), target_held: false }),
            (7, BindingInput::PageVisited { tab: 3, page: classify_url(plain), target_held: false }),
            (8, BindingInput::Bind { tab: 4, page: PageKind::Root, workspace: workspace("w4", "y"), target_held: false }),
            (9, BindingInput::TabClosed { tab: 4 }),
            (
                10,
                BindingInput::Bind {
                    tab: 5,
                    page: classify_url("https://chatgpt.com/?temporary-chat=true"),
                    workspace: workspace("w5", "z"),
                    target_held: false,
                },
            ),
            (11, BindingInput::Unbind { tab: 1, page: classify_url(plain) }),
        ],
        expect![[r#"
            t=1 bind tab 1 on root to w2
              => {"type":"pending_saved","tab":1,"workspace_id":"w2"}
            t=2 tab 2 visits ChatGpt chat 6a1b2c3d-0000-4000-8000-0000000000c1
            t=3 tab 1 visits root
            t=4 tab 1 visits ChatGpt chat 6a1b2c3d-0000-4000-8000-0000000000c1
              => {"type":"pending_migrated","tab":1,"scope":{"kind":"conversation","site":"chatgpt","conversation_id":"6a1b2c3d-0000-4000-8000-0000000000c1"},"workspace_id":"w2"}
              => {"type":"bound","scope":{"kind":"conversation","site":"chatgpt","conversation_id":"6a1b2c3d-0000-4000-8000-0000000000c1"},"workspace_id":"w2"}
            t=5 tab 1 visits ChatGpt chat 6a1b2c3d-0000-4000-8000-0000000000c2
            t=6 bind tab 3 on root to w3
              => {"type":"pending_saved","tab":3,"workspace_id":"w3"}
            t=7 tab 3 visits ChatGpt chat 6a1b2c3d-0000-4000-8000-0000000000c1
              => {"type":"pending_discarded","tab":3,"reason":"scope_already_bound"}
            t=8 bind tab 4 on root to w4
              => {"type":"pending_saved","tab":4,"workspace_id":"w4"}
            t=9 tab 4 closed
              => {"type":"pending_discarded","tab":4,"reason":"tab_closed"}
            t=10 bind tab 5 on unsupported (TemporaryChat) to w5
              => {"type":"bind_refused","reason":{"kind":"unsupported_page","page":"temporary_chat"}}
            t=11 unbind tab 1 on ChatGpt chat 6a1b2c3d-0000-4000-8000-0000000000c1
              => {"type":"unbound","scope":{"kind":"conversation","site":"chatgpt","conversation_id":"6a1b2c3d-0000-4000-8000-0000000000c1"},"workspace_id":"w2"}
            final:
        "#]],
    );
}

#[test]
fn bindings_survive_a_snapshot_round_trip() {
    // B7: the table is plain serde data.
    let mut table = Bindings::new();
    table.handle(
        1,
        BindingInput::Bind { tab: 7, page: classify_url(PROJECT_CHAT_A), workspace: workspace("w1", "api"), target_held: false },
    );
    table.handle(2, BindingInput::Bind { tab: 9, page: PageKind::Root, workspace: workspace("w2", "docs"), target_held: false });
    let json = serde_json::to_string(&table).expect("serializes");
    let mut restored: Bindings = ext_core::json_read::from_str(&json).expect("deserializes");
    while table.poll().is_some() {}
    assert_eq!(restored, table);
    let scope = Scope::Project { project_id: "g-p-0123456789abcdef0123456789abcdef".into() };
    let binding = restored.binding_for(&scope).expect("project bound");
    assert_eq!(binding.workspace_id, "w1");
    assert_eq!(binding.active_conv_key.as_deref(), Some("6a1b2c3d-0000-4000-8000-00000000000a"));
    // The pending root binding also survived and still migrates.
    restored.handle(3, BindingInput::PageVisited { tab: 9, page: classify_url("https://chat.z.ai/c/abc"), target_held: false });
    assert_eq!(
        restored.poll().map(|o| serde_json::to_string(&o).unwrap_or_default()).as_deref(),
        Some(
            r#"{"type":"pending_migrated","tab":9,"scope":{"kind":"conversation","site":"zai","conversation_id":"abc"},"workspace_id":"w2"}"#
        )
    );
}

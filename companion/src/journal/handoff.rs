//! The handoff package (`herdr_mcp.browser_handoff.prepare`, SPEC X4, X5, C2, X11): a
//! journaled chain's seed message for a new conversation, and the package around it.
//!
//! Invariants:
//! - Read-only: [`prepare`] only reads the journal (the chain and the source conversation's
//!   chain); it writes nothing, to `state.db` or anywhere.
//! - Live confirmation before anything is built (C2): the chain must exist, and the source
//!   URL's conversation, when journaled, must be in that chain, and the chain's Project, when
//!   known, the URL's. Otherwise the call fails with the reason (X5); nothing is invented, no
//!   chat or LLM is asked for a summary.
//! - The message is built once ([`seed_message`]) and cloned into `handoff.message`,
//!   `automatic_delivery.params.message` and `manual_delivery.copy_prompt`: byte-identical
//!   (X4). It ends with the seed block and never contains `HERDR_HANDOFF_V1` (X11; the params
//!   that go into it are refused when they carry a marker).
//! - Idempotent: the same params give the same package, byte for byte; without a
//!   `handoff_id` the id is derived from the other params ([`derived_handoff_id`]).

use continuity_protocol::handoff::{
    AutomaticDelivery, HandoffDeliveryMethod, HandoffPackage, HandoffSafety, HandoffTarget, ManualDelivery,
    PreparedHandoff, SessionCreateParams, SEED_BLOCK_END, SEED_BLOCK_START,
};
use continuity_protocol::MethodResult;
use sha2::{Digest, Sha256};

use super::store::{JournalError, JournalStore};
use super::ConversationUrl;

/// Why `source_route` is `null`: this companion cannot deliver the seed itself.
pub const SOURCE_ROUTE_ERROR: &str = "herdr-companion keeps no registry of browser sessions, so it has no route to the source tab and does not serve herdr_mcp.browser_session.create. The herdr-continuity extension delivers the seed itself (a new conversation in the same Project, or a new z.ai chat); anyone else pastes manual_delivery.copy_prompt into a new conversation.";

/// A validated `herdr_mcp.browser_handoff.prepare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffRequest {
    /// The chain to carry on.
    pub continuity_id: String,
    /// The source conversation's URL, exactly as given.
    pub source_url: String,
    /// `source_url` read.
    pub source: ConversationUrl,
    /// What the new conversation is for.
    pub objective: Option<String>,
    /// The Work Memory chain.
    pub work_chain_id: Option<String>,
    /// The transfer id given, if any.
    pub handoff_id: Option<String>,
}

/// The transfer id of a request without one: `hf-` and the first 128 bits of the SHA-256
/// of the other params, each length-prefixed (so no two requests share an encoding).
pub fn derived_handoff_id(request: &HandoffRequest) -> String {
    let mut hash = Sha256::new();
    for part in [Some(&request.continuity_id), Some(&request.source_url), request.objective.as_ref(), request.work_chain_id.as_ref()] {
        match part {
            Some(text) => {
                hash.update(b"s");
                hash.update((text.len() as u64).to_be_bytes());
                hash.update(text.as_bytes());
            }
            None => hash.update(b"n"),
        }
    }
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("hf-{hex}")
}

/// The seed message: what the new conversation does first, what it must re-check, where
/// the work came from, and the seed block the extension recognises it by.
pub fn seed_message(request: &HandoffRequest, handoff_id: &str) -> String {
    let chain = &request.continuity_id;
    let resume_params = serde_json::json!({ "continuity_id": chain }).to_string();
    let mut lines = vec![
        format!("This conversation takes over herdr-continuity chain {chain} from an earlier conversation."),
        format!(
            "Before anything else, call herdr_call with method \"continuity.resume\" and params {resume_params} (a JSON string) to read what the chain recorded."
        ),
        "What it returns is a record, not the present: before you act on it, look again at the live Herdr workspace (herdr_inspect, pane.read), at Git (status, branch, log) and at the runtime, and go by what you find there.".to_owned(),
        format!("Earlier conversation: {}", request.source_url),
    ];
    if let Some(objective) = &request.objective {
        lines.push(format!("Objective: {objective}"));
    }
    if let Some(work_chain) = &request.work_chain_id {
        lines.push(format!("Work Memory chain: {work_chain}"));
    }
    lines.push(String::new());
    lines.push(format!("{SEED_BLOCK_START} id={handoff_id} continuity_id={chain}]"));
    lines.push(format!("continuity_id: {chain}"));
    lines.push(SEED_BLOCK_END.to_owned());
    lines.join("\n")
}

/// `herdr_mcp.browser_handoff.prepare`: confirms the chain live (C2), then builds the package.
pub fn prepare(store: &JournalStore, request: &HandoffRequest) -> Result<MethodResult, JournalError> {
    let chain_id = &request.continuity_id;
    let chain = store.chain(chain_id)?.ok_or_else(|| {
        JournalError::NotFound(format!(
            "there is no continuity chain {chain_id} in this companion's journal, so there is nothing to hand off; keep working in {} and check the id (continuity.resolve with its conversation id gives the right one)",
            request.source_url
        ))
    })?;
    let conversation = &request.source.conversation_id;
    if let Some(owner) = store.chain_of_conversation(conversation)? {
        if owner.continuity_id != *chain_id {
            return Err(JournalError::Mismatch(format!(
                "conversation {conversation} of source_url is journaled in chain {}, not {chain_id}; prepare the handoff with continuity_id {} (or with the source URL of a conversation of {chain_id})",
                owner.continuity_id, owner.continuity_id
            )));
        }
    }
    if let (Some(theirs), Some(ours)) = (&chain.project_id, &request.source.project_id) {
        if theirs != ours {
            return Err(JournalError::Mismatch(format!(
                "chain {chain_id} belongs to project {theirs}, but source_url is in project {ours}; a chain never spans Projects — send a source URL of the chain's own Project"
            )));
        }
    }
    let handoff_id = request.handoff_id.clone().unwrap_or_else(|| derived_handoff_id(request));
    let message = seed_message(request, &handoff_id);
    Ok(MethodResult::HandoffPrepared(Box::new(PreparedHandoff {
        ok: true,
        source_route: None,
        source_route_error: Some(SOURCE_ROUTE_ERROR.to_owned()),
        automatic_delivery: AutomaticDelivery {
            method: HandoffDeliveryMethod::BrowserSessionCreate,
            params: SessionCreateParams {
                source_url: request.source_url.clone(),
                message: message.clone(),
                work_chain_id: request.work_chain_id.clone(),
            },
        },
        manual_delivery: ManualDelivery { copy_prompt: message.clone() },
        handoff: HandoffPackage {
            handoff_id,
            continuity_id: chain_id.clone(),
            source_url: request.source_url.clone(),
            message,
            work_chain_id: request.work_chain_id.clone(),
            target_context: HandoffTarget { provider: request.source.provider, project_id: request.source.project_id.clone() },
        },
        safety: HandoffSafety::FIXED,
    })))
}

#[cfg(test)]
mod tests {
    use continuity_protocol::handoff::{
        LEGACY_PACKET_MARKER, MAX_HANDOFF_CONTINUITY_ID_CHARS, MAX_HANDOFF_ID_CHARS, MAX_HANDOFF_MESSAGE_CHARS,
        MAX_HANDOFF_OBJECTIVE_CHARS, MAX_HANDOFF_SOURCE_URL_CHARS, MAX_HANDOFF_WORK_CHAIN_ID_CHARS,
    };
    use continuity_protocol::journal::ContinuityAppendParams;
    use continuity_protocol::TurnRole;

    use super::*;

    const PROJECT: &str = "g-p-0123456789abcdef0123456789abcdef";
    const URL: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-herdr/c/6a1b";

    /// A store with chain `hc-1` (conversation 6a1b of [`PROJECT`]) and chain `hc-2`
    /// (conversation 7c2d outside any Project).
    fn journal() -> (tempfile::TempDir, JournalStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = JournalStore::open(&dir.path().join("state.db")).expect("open the journal");
        for (chain, conversation, project) in [("hc-1", "6a1b", Some(PROJECT)), ("hc-2", "7c2d", None)] {
            store.append(&chain_turn(chain, conversation, project), 2_000).expect("append");
        }
        (dir, store)
    }

    /// One user turn of `conversation` in `chain`.
    fn chain_turn(chain: &str, conversation: &str, project: Option<&str>) -> ContinuityAppendParams {
        ContinuityAppendParams {
            continuity_id: Some(chain.to_owned()),
            conversation_id: conversation.to_owned(),
            message_id: "m1".to_owned(),
            role: TurnRole::User,
            text: "Split the parser".to_owned(),
            observed_at: 1_000,
            project_id: project.map(str::to_owned),
            workspace_id: Some("w1".to_owned()),
            conversation_url: None,
            title: None,
        }
    }

    fn request(continuity_id: &str, source_url: &str) -> HandoffRequest {
        HandoffRequest {
            continuity_id: continuity_id.to_owned(),
            source_url: source_url.to_owned(),
            source: ConversationUrl::parse(source_url).expect("a conversation URL"),
            objective: None,
            work_chain_id: None,
            handoff_id: None,
        }
    }

    fn package(store: &JournalStore, request: &HandoffRequest) -> serde_json::Value {
        serde_json::to_value(prepare(store, request).expect("prepared")).expect("json")
    }

    #[test]
    fn x4_one_message_in_three_places_ending_with_the_seed_block() {
        let (_dir, store) = journal();
        let mut asked = request("hc-1", URL);
        asked.objective = Some("Finish the route pool and its tests".to_owned());
        asked.work_chain_id = Some("main".to_owned());
        asked.handoff_id = Some("hf-given".to_owned());
        let answer = package(&store, &asked);
        let message = answer["handoff"]["message"].as_str().expect("message");
        assert_eq!(answer["automatic_delivery"]["params"]["message"].as_str(), Some(message));
        assert_eq!(answer["manual_delivery"]["copy_prompt"].as_str(), Some(message));
        assert!(!message.contains(LEGACY_PACKET_MARKER), "X11: no legacy packet is generated");
        assert!(message.ends_with("[HERDR_CONTINUITY_REF id=hf-given continuity_id=hc-1]\ncontinuity_id: hc-1\n[END_HERDR_CONTINUITY_REF]"), "{message}");
        expect_test::expect![[r#"
            This conversation takes over herdr-continuity chain hc-1 from an earlier conversation.
            Before anything else, call herdr_call with method "continuity.resume" and params {"continuity_id":"hc-1"} (a JSON string) to read what the chain recorded.
            What it returns is a record, not the present: before you act on it, look again at the live Herdr workspace (herdr_inspect, pane.read), at Git (status, branch, log) and at the runtime, and go by what you find there.
            Earlier conversation: https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-herdr/c/6a1b
            Objective: Finish the route pool and its tests
            Work Memory chain: main

            [HERDR_CONTINUITY_REF id=hf-given continuity_id=hc-1]
            continuity_id: hc-1
            [END_HERDR_CONTINUITY_REF]"#]]
        .assert_eq(message);
        let mut rest = answer.clone();
        for pointer in ["/handoff/message", "/automatic_delivery/params/message", "/manual_delivery/copy_prompt"] {
            *rest.pointer_mut(pointer).expect("present") = serde_json::json!("<message>");
        }
        expect_test::expect![[r#"{"automatic_delivery":{"method":"herdr_mcp.browser_session.create","params":{"message":"<message>","source_url":"https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-herdr/c/6a1b","work_chain_id":"main"}},"handoff":{"continuity_id":"hc-1","handoff_id":"hf-given","message":"<message>","source_url":"https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-herdr/c/6a1b","target_context":{"project_id":"g-p-0123456789abcdef0123456789abcdef","provider":"chatgpt"},"work_chain_id":"main"},"manual_delivery":{"copy_prompt":"<message>"},"ok":true,"safety":{"pre_delivery_retry_limit":1,"preserve_mutation_idempotency_key":true,"retry_requires_no_execution_evidence":true,"rewrite_rejected_payload":false},"source_route":null,"source_route_error":"herdr-companion keeps no registry of browser sessions, so it has no route to the source tab and does not serve herdr_mcp.browser_session.create. The herdr-continuity extension delivers the seed itself (a new conversation in the same Project, or a new z.ai chat); anyone else pastes manual_delivery.copy_prompt into a new conversation.","type":"handoff_prepared"}"#]]
        .assert_eq(&rest.to_string());
    }

    #[test]
    fn x4_without_an_objective_or_a_project_the_message_leaves_them_out() {
        let (_dir, store) = journal();
        let answer = package(&store, &request("hc-2", "https://chatgpt.com/c/7c2d"));
        let message = answer["handoff"]["message"].as_str().expect("message");
        assert!(!message.contains("Objective:") && !message.contains("Work Memory chain:"), "{message}");
        assert!(message.contains("Earlier conversation: https://chatgpt.com/c/7c2d\n"), "{message}");
        assert_eq!(answer["handoff"]["target_context"], serde_json::json!({"provider": "chatgpt", "project_id": null}));
        assert_eq!((answer["handoff"]["work_chain_id"].clone(), answer["source_route"].clone()), (serde_json::Value::Null, serde_json::Value::Null));
    }

    #[test]
    fn x4_every_param_at_its_limit_still_fits_the_message_bound() {
        let (_dir, store) = journal();
        let long_id = "c".repeat(MAX_HANDOFF_CONTINUITY_ID_CHARS);
        let mut asked = request(&long_id, "https://chatgpt.com/c/7c2d");
        asked.source_url = format!("https://chatgpt.com/c/7c2d?q={}", "語".repeat(MAX_HANDOFF_SOURCE_URL_CHARS - 30));
        asked.objective = Some("語".repeat(MAX_HANDOFF_OBJECTIVE_CHARS));
        asked.work_chain_id = Some("w".repeat(MAX_HANDOFF_WORK_CHAIN_ID_CHARS));
        let longest_id = "h".repeat(MAX_HANDOFF_ID_CHARS);
        let message = seed_message(&asked, &longest_id);
        assert!(message.chars().count() <= MAX_HANDOFF_MESSAGE_CHARS, "{} characters", message.chars().count());
        // And the bound is not loose by a factor: the longest message is most of it.
        assert!(message.chars().count() > MAX_HANDOFF_MESSAGE_CHARS * 2 / 3, "{} characters", message.chars().count());
        assert!(prepare(&store, &asked).is_err(), "an unknown chain is still refused, however long");
    }

    #[test]
    fn idempotent_the_same_params_give_the_same_bytes_and_another_objective_another_id() {
        let (_dir, store) = journal();
        let asked = request("hc-1", URL);
        let first = package(&store, &asked).to_string();
        assert_eq!(package(&store, &asked).to_string(), first, "a retry gets the same package");
        let id = derived_handoff_id(&asked);
        // The derivation is part of the contract (a retry after a runtime upgrade must get
        // the same id): docs/PROTOCOL.md's example shows this one.
        let mut documented = request("hc-5f0c9a7e2b1d4c3a8e6f0b2d4a6c8e01", URL);
        documented.objective = Some("Finish the route pool and its tests".to_owned());
        documented.work_chain_id = Some("main".to_owned());
        assert_eq!(derived_handoff_id(&documented), "hf-5dab4e02f1c75f974a88f9dbc5784107");
        assert!(id.starts_with("hf-") && id.len() == 35 && id.len() <= MAX_HANDOFF_ID_CHARS, "{id}");
        assert!(first.contains(&format!("id={id} continuity_id=hc-1]")), "{first}");
        let mut other = asked.clone();
        other.objective = Some("Ship it".to_owned());
        assert_ne!(derived_handoff_id(&other), id);
        // An absent field and an empty one are not the same input.
        let mut empty = asked.clone();
        empty.work_chain_id = Some(String::new());
        assert_ne!(derived_handoff_id(&empty), id);
        let mut given = asked;
        given.handoff_id = Some("hf-from-the-extension".to_owned());
        assert_eq!(package(&store, &given)["handoff"]["handoff_id"], "hf-from-the-extension");
    }

    #[test]
    fn c2_an_unknown_chain_or_a_source_of_another_chain_or_project_is_refused_by_name() {
        let (_dir, store) = journal();
        let printed: Vec<String> = [
            request("hc-9", URL),
            request("hc-2", URL),
            request("hc-1", "https://chatgpt.com/g/g-p-fedcba9876543210fedcba9876543210/c/new1"),
        ]
        .iter()
        .map(|asked| match prepare(&store, asked) {
            Ok(answer) => format!("prepared {answer:?}"),
            Err(JournalError::NotFound(m)) => format!("not found: {m}"),
            Err(JournalError::Mismatch(m)) => format!("mismatch: {m}"),
            Err(other) => format!("other: {other}"),
        })
        .collect();
        expect_test::expect![[r#"
            not found: there is no continuity chain hc-9 in this companion's journal, so there is nothing to hand off; keep working in https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-herdr/c/6a1b and check the id (continuity.resolve with its conversation id gives the right one)
            mismatch: conversation 6a1b of source_url is journaled in chain hc-1, not hc-2; prepare the handoff with continuity_id hc-1 (or with the source URL of a conversation of hc-2)
            mismatch: chain hc-1 belongs to project g-p-0123456789abcdef0123456789abcdef, but source_url is in project g-p-fedcba9876543210fedcba9876543210; a chain never spans Projects — send a source URL of the chain's own Project"#]]
        .assert_eq(&printed.join("\n"));
        // A source conversation the journal has not seen yet, in the chain's Project, is fine.
        let fresh = package(&store, &request("hc-1", "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/new2"));
        assert_eq!(fresh["ok"], true);
    }

    /// docs/PROTOCOL.md's `j-14` example is what this code answers, byte for byte.
    #[test]
    fn x4_the_documented_example_is_the_package_this_code_builds() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/PROTOCOL.md")).expect("PROTOCOL.md");
        let example = |prefix: &str| -> serde_json::Value {
            let line = doc.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no example {prefix}"));
            serde_json::from_str(line).expect("json")
        };
        let asked = example(r#"{"id":"j-14","method""#);
        let answered = example(r#"{"id":"j-14","result""#);
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = JournalStore::open(&dir.path().join("state.db")).expect("open the journal");
        let params: continuity_protocol::handoff::HandoffPrepareParams = serde_json::from_value(asked["params"].clone()).expect("params");
        store.append(&chain_turn(&params.continuity_id, "6a1b", Some(PROJECT)), 2).expect("append");
        let mut documented = request(&params.continuity_id, &params.source_url);
        documented.objective = params.objective;
        documented.work_chain_id = params.work_chain_id;
        assert_eq!(package(&store, &documented), answered["result"]);
    }
}

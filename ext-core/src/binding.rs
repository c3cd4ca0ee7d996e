//! Bindings: which web scope maps to which Herdr workspace (SPEC B1–B7).
//!
//! A binding maps a [`Scope`] (a ChatGPT Project by `project_id`, or one conversation) to
//! a Herdr workspace. The workspace id is identity; its label is display only and is
//! refreshed from the live catalog (B1). A Project remembers the concrete conversation
//! open in it as the delivery target, `active_conv_key` (B3). A binding made on the
//! ChatGPT root page is kept pending for that tab and migrated once, when the tab first
//! enters a concrete Project or conversation (B4).
//!
//! Invariants:
//! - A scope has at most one binding; a tab has at most one pending binding.
//! - A pending binding is migrated at most once: after migration (or discard) it is gone.
//! - Migration never overwrites an existing binding of the target scope: the durable
//!   binding wins and the pending one is discarded with a displayable reason.
//! - Bindings never change because of a label: only `Bind` / `Unbind` change identity.
//! - The whole machine is plain serde data: a snapshot restores it exactly (B7).

use std::collections::VecDeque;

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};
use crate::scope::{ConversationRef, PageKind, Scope, Site, UnsupportedPage};
use crate::vec_map::{VecMap, VecSet};
use crate::Millis;

/// A Chrome tab id (non-negative; the shell never passes `TAB_ID_NONE`).
pub type TabId = u32;

/// One workspace as the live Herdr catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct CatalogWorkspace {
    /// Herdr's workspace id (`w1`): the identity of a binding.
    pub workspace_id: String,
    /// Herdr's current label, for display only.
    pub label: String,
}

/// One App pill of a user turn (ChatGPT's Apps, e.g. the Herdr App): `keyword` is what
/// `@<keyword>` selects in the composer's picker (old pill generation: its `data-keyword`;
/// new: the lower-cased `app-mention-name`), `name` the pill's text, `path` its
/// `app-mention-path` (`""` for the old generation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct AppMention {
    /// The picker keyword (`herdr`).
    pub keyword: String,
    /// The App's name as the pill shows it (`Herdr`).
    pub name: String,
    /// The App's path (`connector://apps/herdr`), `""` when the pill names none.
    pub path: String,
}

/// What a binding's chat needs attached to every message the extension types into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppNeed<'a> {
    /// The chat never showed an App pill (or the user forgot it): plain messages.
    None,
    /// This App, attached before the text (never a message without it).
    App(&'a AppMention),
    /// The newest human turn carried several Apps: nothing is typed until a newer human
    /// turn carries exactly one (`app_ambiguous`).
    Ambiguous,
}

/// A durable binding of one scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct ScopeBinding {
    /// The bound scope.
    pub scope: Scope,
    /// The bound workspace's id (identity, B1).
    pub workspace_id: String,
    /// The workspace label last seen (display only, B1).
    pub label: String,
    /// False when the last catalog refresh did not list the workspace.
    pub workspace_in_catalog: bool,
    /// Project scopes: the conversation open in the Project, where messages go (B3).
    /// Conversation scopes: always the conversation itself.
    pub active_conv_key: Option<String>,
    /// When the binding was made.
    pub bound_at: Millis,
    /// The chat's App, learned from the newest accepted human turn that carried exactly one
    /// App pill with a keyword (`None`: plain messages).
    #[serde(default)]
    pub app: Option<AppMention>,
    /// The newest human turn carried several Apps: every message is withheld
    /// (`app_ambiguous`) until a newer human turn carries exactly one.
    #[serde(default)]
    pub app_ambiguous: bool,
    /// The human turn (`PageReport::last_human_turn_id`) the App was last read from: a turn
    /// is read once, and a forgotten App is not learned again from the same turn.
    #[serde(default)]
    pub app_turn: Option<String>,
}

impl ScopeBinding {
    /// What every message typed into this binding's chat must carry.
    pub fn app_need(&self) -> AppNeed<'_> {
        match (&self.app, self.app_ambiguous) {
            (_, true) => AppNeed::Ambiguous,
            (Some(app), false) => AppNeed::App(app),
            (None, false) => AppNeed::None,
        }
    }

    /// Reads the chat's newest human turn (`turn`, with the App pills it carries) once: one
    /// App (a keyword, duplicates of the same App counted once) is learned, several make the
    /// binding ambiguous, none keeps what was learned. Returns whether anything changed.
    pub fn learn_app(&mut self, turn: &str, apps: &[AppMention]) -> bool {
        if self.app_turn.as_deref() == Some(turn) {
            return false;
        }
        self.app_turn = Some(turn.to_owned());
        let mut named = apps.iter().filter(|a| !a.keyword.is_empty());
        let Some(first) = named.next() else { return true };
        if named.all(|a| a.keyword == first.keyword && a.path == first.path) {
            self.app = Some(first.clone());
            self.app_ambiguous = false;
        } else {
            self.app_ambiguous = true;
        }
        true
    }

    /// The user's "Forget App": plain messages from now on, until a newer human turn
    /// carries an App pill again (the turn it was learned from is not read again).
    pub fn forget_app(&mut self) -> bool {
        let had = self.app.is_some() || self.app_ambiguous;
        self.app = None;
        self.app_ambiguous = false;
        had
    }

    /// Where progress and continue messages for this scope are delivered, if anywhere.
    pub fn delivery_target(&self) -> Option<ConversationRef> {
        let site = match &self.scope {
            Scope::Project { .. } => Site::ChatGpt,
            Scope::Conversation { site, .. } => *site,
        };
        self.active_conv_key.as_ref().map(|conversation_id| ConversationRef { site, conversation_id: conversation_id.clone() })
    }
}

/// A binding made on the root page, waiting for the tab to enter a concrete scope (B4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct PendingBinding {
    /// The chosen workspace's id.
    pub workspace_id: String,
    /// The chosen workspace's label (display only).
    pub label: String,
    /// When the user chose it.
    pub saved_at: Millis,
}

/// Facts and commands the shell feeds in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BindingInput {
    /// The user binds the page shown in `tab` to a workspace.
    Bind {
        /// The tab the HUD acted in.
        tab: TabId,
        /// What the tab shows.
        page: PageKind,
        /// The chosen workspace.
        workspace: CatalogWorkspace,
        /// A handoff holds the Project's delivery target (see [`BindingInput::PageVisited`]).
        target_held: bool,
    },
    /// The user removes the binding of the page shown in `tab` (or its pending binding).
    Unbind {
        /// The tab the HUD acted in.
        tab: TabId,
        /// What the tab shows.
        page: PageKind,
    },
    /// The user removes a binding by its scope (side panel list).
    UnbindScope {
        /// The bound scope.
        scope: Scope,
    },
    /// A tab now shows `page` (navigation, reload, SPA route change).
    PageVisited {
        /// The tab.
        tab: TabId,
        /// What it shows now.
        page: PageKind,
        /// A handoff holds the Project's delivery target (its transfer is in flight, or the
        /// conversation is the one its cut-over left and the tab did not navigate to it):
        /// the conversation shown does not become the target (B3, X2, X6).
        target_held: bool,
    },
    /// A tab was closed: its pending binding is dropped.
    TabClosed {
        /// The closed tab.
        tab: TabId,
    },
    /// A handoff's cut-over (B8, X6, X10): a Project's delivery target becomes the new
    /// conversation, its binding (workspace, continuity) as it is; a conversation scope's
    /// binding (z.ai, a plain ChatGPT conversation) moves to the new conversation, with the
    /// same workspace.
    CutOver {
        /// The source's scope.
        scope: Scope,
        /// The conversation the handoff confirmed.
        conversation_id: String,
    },
    /// A fresh list of the workspaces Herdr has (B1 label refresh).
    CatalogRefreshed {
        /// Every workspace currently listed.
        workspaces: Vec<CatalogWorkspace>,
    },
}

/// Why a pending root-page binding was dropped without migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PendingDiscardReason {
    /// The tab was closed before it entered a conversation.
    TabClosed,
    /// The user removed it.
    Unbound,
    /// The scope the tab entered already had its own binding, which is kept.
    ScopeAlreadyBound,
}

/// Why a bind request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "page", rename_all = "snake_case")]
pub enum BindRefusal {
    /// The page cannot be bound.
    UnsupportedPage(UnsupportedPage),
    /// The workspace id was empty.
    EmptyWorkspaceId,
}

impl BindRefusal {
    /// Its `_locales` message: `unsupported_<code>` or `bindRefused_empty_workspace_id`.
    pub fn message_key(self) -> String {
        match self {
            BindRefusal::UnsupportedPage(reason) => crate::text::concat(&["unsupported_", reason.wire_name()]),
            BindRefusal::EmptyWorkspaceId => "bindRefused_empty_workspace_id".to_owned(),
        }
    }
}

/// Decisions for the shell to persist, display or act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BindingOutput {
    /// A scope is now bound (new binding or rebinding to another workspace).
    Bound {
        /// The scope.
        scope: Scope,
        /// Its workspace.
        workspace_id: String,
    },
    /// A binding made on the root page is kept for the tab (B4).
    PendingSaved {
        /// The tab.
        tab: TabId,
        /// The chosen workspace.
        workspace_id: String,
    },
    /// A pending binding became the binding of the scope the tab entered (B4).
    PendingMigrated {
        /// The tab.
        tab: TabId,
        /// The scope it entered.
        scope: Scope,
        /// The workspace.
        workspace_id: String,
    },
    /// A pending binding was dropped.
    PendingDiscarded {
        /// The tab.
        tab: TabId,
        /// Why.
        reason: PendingDiscardReason,
    },
    /// A Project's delivery target changed (B3).
    ActiveTargetChanged {
        /// The Project.
        project_id: String,
        /// The conversation now receiving messages.
        conversation_id: String,
    },
    /// A scope's binding was removed.
    Unbound {
        /// The scope.
        scope: Scope,
        /// The workspace it was bound to.
        workspace_id: String,
    },
    /// A bound workspace's label changed in the catalog (display only).
    LabelRefreshed {
        /// The workspace.
        workspace_id: String,
        /// Its new label.
        label: String,
    },
    /// A bound workspace appeared in or vanished from the catalog.
    WorkspacePresenceChanged {
        /// The workspace.
        workspace_id: String,
        /// Whether the catalog lists it now.
        in_catalog: bool,
    },
    /// A bind request was refused.
    BindRefused {
        /// Why.
        reason: BindRefusal,
    },
}

/// The binding table of the extension.
///
/// Driver contract: the shell calls [`Bindings::handle`] with each input and then drains
/// [`Bindings::poll`] until `None`, persisting [`Bindings`] (it is serde data) after each
/// drained batch; on a service-worker start it deserializes the last snapshot. This
/// machine has no timers. Queries ([`Bindings::binding_for`], [`Bindings::list`], …) may be
/// called at any time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct Bindings {
    /// Durable bindings by [`Scope::key`].
    bindings: VecMap<String, ScopeBinding>,
    /// Root-page pending bindings by tab.
    pending: VecMap<TabId, PendingBinding>,
    /// Decisions not yet drained; not persisted (the effects are already in the state).
    #[serde(skip)]
    outputs: VecDeque<BindingOutput>,
}

impl Bindings {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one input.
    pub fn handle(&mut self, now: Millis, input: BindingInput) {
        match input {
            BindingInput::Bind { tab, page, workspace, target_held } => self.bind(now, tab, page, workspace, target_held),
            BindingInput::Unbind { tab, page } => self.unbind(tab, &page),
            BindingInput::UnbindScope { scope } => {
                if let Some(removed) = self.bindings.remove(&scope.key()) {
                    self.outputs.push_back(BindingOutput::Unbound { scope, workspace_id: removed.workspace_id });
                }
            }
            BindingInput::PageVisited { tab, page, target_held } => self.visit(now, tab, &page, target_held),
            BindingInput::TabClosed { tab } => {
                if self.pending.remove(&tab).is_some() {
                    self.outputs.push_back(BindingOutput::PendingDiscarded { tab, reason: PendingDiscardReason::TabClosed });
                }
            }
            BindingInput::CatalogRefreshed { workspaces } => self.refresh(&workspaces),
            BindingInput::CutOver { scope: Scope::Project { project_id }, conversation_id } => {
                self.note_active_conversation(&PageKind::ProjectChat { project_id, conversation_id });
            }
            BindingInput::CutOver { scope, conversation_id } => {
                let Scope::Conversation { site, .. } = scope else { return };
                if let Some(old) = self.bindings.remove(&scope.key()) {
                    self.outputs.push_back(BindingOutput::Unbound { scope, workspace_id: old.workspace_id.clone() });
                    let target = Scope::Conversation { site, conversation_id };
                    let key = target.key();
                    self.install(now, target, old.workspace_id, old.label);
                    // The new conversation's seed carried the source's App: so does every
                    // later message (its own human turns may teach another).
                    if let Some(moved) = self.bindings.get_mut(&key) {
                        (moved.app, moved.app_ambiguous) = (old.app, old.app_ambiguous);
                    }
                }
            }
        }
    }

    /// The next decision, if any.
    pub fn poll(&mut self) -> Option<BindingOutput> {
        self.outputs.pop_front()
    }

    /// The binding of a scope.
    pub fn binding_for(&self, scope: &Scope) -> Option<&ScopeBinding> {
        self.bindings.get(&scope.key())
    }

    /// The pending root-page binding of a tab.
    pub fn pending_for(&self, tab: TabId) -> Option<&PendingBinding> {
        self.pending.get(&tab)
    }

    /// Every binding, ordered by scope key.
    pub fn list(&self) -> impl Iterator<Item = &ScopeBinding> {
        self.bindings.values()
    }

    /// Reads the newest human turn of the chat bound as `scope_key` (see
    /// [`ScopeBinding::learn_app`]); `false` when nothing changed or nothing is bound.
    pub fn learn_app(&mut self, scope_key: &str, turn: &str, apps: &[AppMention]) -> bool {
        self.bindings.get_mut(scope_key).is_some_and(|b| b.learn_app(turn, apps))
    }

    /// The user's "Forget App" for the chat bound as `scope_key` (see
    /// [`ScopeBinding::forget_app`]); `false` when there was nothing to forget.
    pub fn forget_app(&mut self, scope_key: &str) -> bool {
        self.bindings.get_mut(scope_key).is_some_and(ScopeBinding::forget_app)
    }

    /// The scopes bound to a workspace (to route its settle events), ordered by key.
    pub fn scopes_bound_to<'a>(&'a self, workspace_id: &'a str) -> impl Iterator<Item = &'a Scope> {
        self.bindings.values().filter(move |b| b.workspace_id == workspace_id).map(|b| &b.scope)
    }

    fn bind(&mut self, now: Millis, tab: TabId, page: PageKind, workspace: CatalogWorkspace, target_held: bool) {
        if workspace.workspace_id.is_empty() {
            self.outputs.push_back(BindingOutput::BindRefused { reason: BindRefusal::EmptyWorkspaceId });
            return;
        }
        match (&page, page.scope()) {
            (PageKind::Root, _) => {
                self.outputs.push_back(BindingOutput::PendingSaved { tab, workspace_id: workspace.workspace_id.clone() });
                self.pending.insert(tab, PendingBinding { workspace_id: workspace.workspace_id, label: workspace.label, saved_at: now });
            }
            (_, Some(scope)) => {
                // An explicit bind on a concrete page supersedes the tab's pending choice.
                self.pending.remove(&tab);
                self.install(now, scope, workspace.workspace_id, workspace.label);
                if !target_held {
                    self.note_active_conversation(&page);
                }
            }
            (PageKind::Unsupported { reason }, None) => {
                self.outputs.push_back(BindingOutput::BindRefused { reason: BindRefusal::UnsupportedPage(*reason) });
            }
            (_, None) => {
                self.outputs.push_back(BindingOutput::BindRefused { reason: BindRefusal::UnsupportedPage(UnsupportedPage::NotAChatPage) })
            }
        }
    }

    fn install(&mut self, now: Millis, scope: Scope, workspace_id: String, label: String) {
        let key = scope.key();
        let previous = self.bindings.get(&key);
        let previous_target = previous.and_then(|b| b.active_conv_key.clone());
        // The chat's App belongs to the chat, not to the workspace: a rebind keeps it.
        let (app, app_ambiguous, app_turn) = previous.map(|b| (b.app.clone(), b.app_ambiguous, b.app_turn.clone())).unwrap_or_default();
        let active_conv_key = match &scope {
            Scope::Project { .. } => previous_target,
            Scope::Conversation { conversation_id, .. } => Some(conversation_id.clone()),
        };
        self.outputs.push_back(BindingOutput::Bound { scope: scope.clone(), workspace_id: workspace_id.clone() });
        self.bindings.insert(
            key,
            ScopeBinding {
                scope,
                workspace_id,
                label,
                workspace_in_catalog: true,
                active_conv_key,
                bound_at: now,
                app,
                app_ambiguous,
                app_turn,
            },
        );
    }

    fn unbind(&mut self, tab: TabId, page: &PageKind) {
        if let PageKind::Root = page {
            if self.pending.remove(&tab).is_some() {
                self.outputs.push_back(BindingOutput::PendingDiscarded { tab, reason: PendingDiscardReason::Unbound });
            }
            return;
        }
        if let Some(scope) = page.scope() {
            if let Some(removed) = self.bindings.remove(&scope.key()) {
                self.outputs.push_back(BindingOutput::Unbound { scope, workspace_id: removed.workspace_id });
            }
        }
    }

    fn visit(&mut self, now: Millis, tab: TabId, page: &PageKind, target_held: bool) {
        if let Some(scope) = page.scope() {
            if let Some(pending) = self.pending.remove(&tab) {
                if self.bindings.contains_key(&scope.key()) {
                    self.outputs.push_back(BindingOutput::PendingDiscarded { tab, reason: PendingDiscardReason::ScopeAlreadyBound });
                } else {
                    self.outputs.push_back(BindingOutput::PendingMigrated {
                        tab,
                        scope: scope.clone(),
                        workspace_id: pending.workspace_id.clone(),
                    });
                    self.install(now, scope, pending.workspace_id, pending.label);
                }
            }
        }
        if !target_held {
            self.note_active_conversation(page);
        }
    }

    /// B3: the concrete conversation open in a bound Project becomes its delivery target.
    fn note_active_conversation(&mut self, page: &PageKind) {
        let PageKind::ProjectChat { project_id, conversation_id } = page else {
            return;
        };
        let key = Scope::Project { project_id: project_id.clone() }.key();
        if let Some(binding) = self.bindings.get_mut(&key) {
            if binding.active_conv_key.as_deref() != Some(conversation_id.as_str()) {
                binding.active_conv_key = Some(conversation_id.clone());
                self.outputs.push_back(BindingOutput::ActiveTargetChanged {
                    project_id: project_id.clone(),
                    conversation_id: conversation_id.clone(),
                });
            }
        }
    }

    fn refresh(&mut self, workspaces: &[CatalogWorkspace]) {
        // Several scopes may share a workspace: report each change once per workspace.
        let mut reported: VecSet<(String, &'static str)> = VecSet::new();
        for binding in self.bindings.values_mut() {
            let listed = workspaces.iter().find(|w| w.workspace_id == binding.workspace_id);
            let in_catalog = listed.is_some();
            if let Some(live) = listed {
                if live.label != binding.label {
                    binding.label = live.label.clone();
                    if reported.insert((live.workspace_id.clone(), "label")) {
                        self.outputs.push_back(BindingOutput::LabelRefreshed {
                            workspace_id: live.workspace_id.clone(),
                            label: live.label.clone(),
                        });
                    }
                }
            }
            if binding.workspace_in_catalog != in_catalog {
                binding.workspace_in_catalog = in_catalog;
                if reported.insert((binding.workspace_id.clone(), "presence")) {
                    self.outputs
                        .push_back(BindingOutput::WorkspacePresenceChanged { workspace_id: binding.workspace_id.clone(), in_catalog });
                }
            }
        }
    }
}

// Readers and writers of the persisted shapes (crate::json_read; the same shape serde writes).

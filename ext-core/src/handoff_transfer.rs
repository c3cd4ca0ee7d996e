//! One handoff transfer as the browser carries it out (SPEC X1–X10, B8, Q9): the
//! [`Handoff`] machine (the steps and their evidence) and what the transfer knows around
//! it — the source's site, Project, conversation and tab, the new tab once asked for and
//! found, the seed deliveries posted, whether a seed is due — fed by the runtime's answers,
//! the new tab's page, the seed's delivery and the HUD's Resume.
//!
//! The new tab is asked for with a URL naming the transfer (`herdr_handoff=<transfer id>`),
//! so after a worker restart it is found by evidence (its URL), never by guess; a tab asked
//! for by an earlier worker life that never showed up is asked for again on Resume (no seed
//! was typed anywhere, so no second conversation can come of it).
//!
//! Invariants (transcript and property tests in `tests/it/handoff_transfer.rs`; the
//! composed flow in `continuity_handoff.rs`):
//! - The new tab is adopted only by its own transfer id in its URL, and only after this
//!   transfer asked for it; a target tab, once known, is never replaced.
//! - A seed is due only when the [`Handoff`] machine asks for one (or its App could not
//!   be attached: it goes again once attaching works, never without the App); a posted
//!   seed is recorded (its id) before anything else of the transfer happens.
//! - The cut-over ([`TransferOutput::CutOver`]) comes only from the machine, which needs
//!   the new conversation's id from the target's URL **and** the seed's confirmation or
//!   its marker in the target's thread (X6, X7).
//! - A transfer's end (failed, Copy Prompt) is announced once ([`TransferOutput::Ended`]).
//!
//! Driver contract: build it with [`Transfer::start`] after the machine accepted the
//! HUD's Start; feed [`TransferInput`]s with [`Transfer::handle`] and drain
//! [`Transfer::poll`] until `None` after each. Send `Confirm` / `Prepare` as runtime calls
//! and feed their answers; carry out `OpenTab` with `chrome.tabs.create` and feed its
//! answer as `TabOpened`; on `SeedDue` (and after a page report, a seed's end or an App's
//! wait) post [`Transfer::seed_to_post`] through the delivery ledger once the target page
//! is idle and feed `SeedPosted`; feed every page report of any tab as `Page`, every end of
//! one of [`Transfer::seeds`] as `SeedEnded`, and on link-up `Reconnected` for a transfer
//! with no call out. Write the snapshot on `Persist`. No timers: every step waits for
//! evidence. Persisted in the snapshot's `handoff.transfers` (the outputs and what this
//! worker life asked for are not).

use std::collections::VecDeque;

use serde::Serialize;

use crate::binding::TabId;
use crate::handoff::{Handoff, HandoffInput, HandoffOutput, HandoffState, Package, SeedOutcome};
use crate::json_read::{ReadJson, WriteJson};
use crate::scope::{classify_url, PageKind, Site, UnsupportedPage};
use crate::Millis;

/// The query parameter that names a transfer in its new tab's URL.
pub const HANDOFF_QUERY: &str = "herdr_handoff=";

/// The new tab's URL: the Project's home (ChatGPT opens a new chat of the Project there),
/// ChatGPT's or z.ai's new chat, naming the transfer.
pub fn new_chat_url(site: Site, project_id: Option<&str>, transfer_id: &str) -> String {
    match (site, project_id) {
        (_, Some(project)) => crate::text::concat(&["https://chatgpt.com/g/", project, "/project?", HANDOFF_QUERY, transfer_id]),
        (Site::Zai, None) => crate::text::concat(&["https://chat.z.ai/?", HANDOFF_QUERY, transfer_id]),
        (_, None) => crate::text::concat(&["https://chatgpt.com/?", HANDOFF_QUERY, transfer_id]),
    }
}

/// A page where a new chat starts: ChatGPT's root or a Project's home, z.ai's root.
fn new_chat_page(url: &str) -> bool {
    match classify_url(url) {
        PageKind::Root | PageKind::ProjectHome { .. } => true,
        PageKind::Unsupported { reason: UnsupportedPage::NoConversationYet } => url.starts_with("https://chat.z.ai/"),
        _ => false,
    }
}

/// The package of a transfer that has one.
pub fn package_of(state: &HandoffState) -> Option<&Package> {
    match state {
        HandoffState::Opening { package, .. }
        | HandoffState::Seeding { package, .. }
        | HandoffState::SeedUncertain { package, .. }
        | HandoffState::CopyPrompt { package } => Some(package),
        _ => None,
    }
}

fn query_names(url: &str, transfer_id: &str) -> bool {
    let wanted = crate::text::concat(&[HANDOFF_QUERY, transfer_id]);
    url.split_once('?').is_some_and(|(_, query)| query.split(['&', '#']).any(|part| part == wanted))
}

/// How a seed's delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedEnd {
    /// Its App could not be attached: not an attempt of the seed (it stays due).
    AppNotAttached,
    /// Confirmed, certainly not sent, or uncertain.
    Outcome(SeedOutcome),
}

/// What the target tab shows when Resume is pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetPage {
    /// Its URL.
    pub url: String,
    /// The delivery markers in its thread.
    pub markers: Vec<String>,
}

/// Inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferInput {
    /// `continuity.resolve` answered: the chain, or what failed.
    Confirmed(Result<String, String>),
    /// The package came, or what failed.
    Prepared(Result<Package, String>),
    /// `chrome.tabs.create` answered: the new tab, or browser control is unavailable (X8).
    TabOpened(Result<TabId, String>),
    /// A tab's page reported: its URL and whether it is idle for a message.
    Page {
        /// The tab.
        tab: TabId,
        /// Its URL.
        url: String,
        /// No reply streams, no draft, a composer (a message could be typed now).
        idle: bool,
    },
    /// The seed [`Transfer::seed_to_post`] gave was posted as delivery `id`.
    SeedPosted {
        /// The delivery id.
        id: String,
    },
    /// One of [`Transfer::seeds`] ended.
    SeedEnded(SeedEnd),
    /// The HUD's "Resume handoff": what the target tab shows, if it has a page.
    Resume {
        /// The target's page.
        target: Option<TargetPage>,
    },
    /// The link is up and no call of this transfer is out: a call lost with an earlier
    /// worker goes again.
    Reconnected,
}

/// Outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransferOutput {
    /// Call `continuity.resolve` for the source conversation (C2).
    Confirm {
        /// The source conversation.
        conversation_id: String,
    },
    /// Call `herdr_mcp.browser_handoff.prepare` (X4; the composition adds the source's
    /// workspace, inbox ref and queue).
    Prepare {
        /// The chain.
        continuity_id: String,
        /// The source's full URL.
        source_url: String,
    },
    /// Open the new chat in a new tab.
    OpenTab {
        /// The transfer id (`chrome.tabs.create`'s answer names it).
        transfer_id: String,
        /// The URL.
        url: String,
    },
    /// A seed is due: post [`Transfer::seed_to_post`] once the target is idle.
    SeedDue,
    /// The cut-over (B8, Q9, X10).
    CutOver {
        /// The new conversation.
        new_conversation: String,
    },
    /// A step for the Activity timeline (`new_chat_opened`, `tab_asked_again`).
    Activity(&'static str),
    /// The transfer ended without a cut-over (a failure's code, `copy_prompt_offered`).
    Ended(&'static str),
    /// Resume was pressed but the target tab shows no page.
    ResumeNoTarget,
    /// Write the snapshot.
    Persist,
}

/// One transfer: the machine and what the composition knows around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct Transfer {
    /// The machine.
    pub machine: Handoff,
    /// The source's site (ChatGPT, or z.ai: X10).
    #[serde(default)]
    pub site: Site,
    /// The source's Project, `None` for a conversation outside a Project.
    pub project_id: Option<String>,
    /// The source conversation.
    pub source_conversation: String,
    /// The tab the Handoff was pressed in.
    pub source_tab: TabId,
    /// The new conversation's tab, once opened (or found by its URL after a restart).
    pub target_tab: Option<TabId>,
    /// The seed deliveries posted (ids), oldest first.
    pub seeds: Vec<String>,
    /// The machine asked for a seed that has not been posted yet (the page was busy).
    pub seed_due: bool,
    /// The new tab was asked for (its `open_tab` left after the snapshot write).
    pub tab_requested: bool,
    /// The transfer's end (failed, Copy Prompt) is in the Activity timeline.
    #[serde(default)]
    pub end_recorded: bool,
    /// This worker life asked for the new tab and has not heard back (not persisted: after
    /// a restart an unanswered request may have been lost).
    #[serde(skip)]
    asked: bool,
    #[serde(skip)]
    outputs: VecDeque<TransferOutput>,
}

impl Transfer {
    /// A transfer whose `machine` accepted the Start pressed on `source_tab`.
    pub fn start(machine: Handoff, site: Site, project_id: Option<String>, source_conversation: String, source_tab: TabId) -> Self {
        let mut transfer = Transfer {
            machine,
            site,
            project_id,
            source_conversation,
            source_tab,
            target_tab: None,
            seeds: Vec::new(),
            seed_due: false,
            tab_requested: false,
            end_recorded: false,
            asked: false,
            outputs: VecDeque::new(),
        };
        transfer.drain();
        transfer
    }

    /// Feeds one input.
    pub fn handle(&mut self, _now: Millis, input: TransferInput) {
        match input {
            TransferInput::Confirmed(result) => self.step(HandoffInput::Confirmed(result)),
            TransferInput::Prepared(result) => self.step(HandoffInput::Prepared(result)),
            TransferInput::TabOpened(Ok(tab)) => {
                self.asked = false;
                self.target_tab.get_or_insert(tab);
                self.outputs.push_back(TransferOutput::Activity("new_chat_opened"));
                self.outputs.push_back(TransferOutput::Persist);
            }
            TransferInput::TabOpened(Err(_)) => {
                self.asked = false;
                self.step(HandoffInput::BrowserControlUnavailable);
            }
            TransferInput::Page { tab, url, idle } => self.page(tab, &url, idle),
            TransferInput::SeedPosted { id } => {
                self.seed_due = false;
                self.seeds.push(id);
            }
            TransferInput::SeedEnded(SeedEnd::AppNotAttached) => {
                self.seed_due = true;
                self.outputs.push_back(TransferOutput::Persist);
            }
            TransferInput::SeedEnded(SeedEnd::Outcome(outcome)) => self.step(HandoffInput::Seed(outcome)),
            TransferInput::Resume { target } => self.resume(target),
            TransferInput::Reconnected => match self.machine.state() {
                HandoffState::Confirming { conversation_id, .. } => {
                    let conversation_id = conversation_id.clone();
                    self.outputs.push_back(TransferOutput::Confirm { conversation_id });
                }
                HandoffState::Preparing { continuity_id, source_url } => {
                    let (continuity_id, source_url) = (continuity_id.clone(), source_url.clone());
                    self.outputs.push_back(TransferOutput::Prepare { continuity_id, source_url });
                }
                _ => {}
            },
        }
    }

    /// The next output, if any.
    pub fn poll(&mut self) -> Option<TransferOutput> {
        self.outputs.pop_front()
    }

    /// No timers: every step waits for evidence.
    pub fn next_deadline(&self) -> Option<Millis> {
        None
    }

    /// The seed to post now, if one is due and the target tab is known: the tab, the
    /// marker's subject (`handoff:<transfer id>`) and the message.
    pub fn seed_to_post(&self) -> Option<(TabId, String, &str)> {
        let (Some(tab), true) = (self.target_tab, self.seed_due) else { return None };
        let package = package_of(self.machine.state())?;
        Some((tab, crate::text::concat(&["handoff:", &package.transfer_id]), package.message.as_str()))
    }

    /// The package's transfer id, once there is a package.
    pub fn transfer_id(&self) -> Option<&str> {
        package_of(self.machine.state()).map(|p| p.transfer_id.as_str())
    }

    /// The new tab was asked for by an earlier worker life and is not known: the request
    /// may have been lost with that worker.
    pub fn tab_lost(&self) -> bool {
        matches!(self.machine.state(), HandoffState::Opening { .. }) && self.tab_requested && self.target_tab.is_none() && !self.asked
    }

    /// The new conversation a target page of `url` shows: a conversation of the source's
    /// Project (or of the source's site outside one) other than the source.
    fn new_conversation(&self, url: &str) -> Option<String> {
        let id = match (classify_url(url), &self.project_id) {
            (PageKind::ProjectChat { project_id, conversation_id }, Some(ours)) if project_id == *ours => conversation_id,
            (PageKind::Chat { site, conversation_id }, None) if site == self.site => conversation_id,
            _ => return None,
        };
        (id != self.source_conversation).then_some(id)
    }

    /// A page reported: the new tab is found by its URL, becomes ready for the seed, shows
    /// the new conversation's id.
    fn page(&mut self, tab: TabId, url: &str, idle: bool) {
        if !self.machine.in_flight() {
            return;
        }
        let adopt = self.target_tab.is_none() && self.tab_requested && self.transfer_id().is_some_and(|id| query_names(url, id));
        if self.target_tab != Some(tab) && !adopt {
            return;
        }
        if adopt {
            self.target_tab = Some(tab);
            self.outputs.push_back(TransferOutput::Persist);
        }
        if let Some(conversation_id) = self.new_conversation(url) {
            let _ = self.machine.handle(HandoffInput::NewConversation { conversation_id });
        }
        let ready = new_chat_page(url) && idle;
        if ready && matches!(self.machine.state(), HandoffState::Opening { .. }) {
            let _ = self.machine.handle(HandoffInput::TargetReady);
        }
        self.drain();
    }

    /// "Resume handoff" (X7): a lost tab is asked for again; an uncertain seed is looked
    /// for in the target's thread — present → the cut-over; absent → the seed goes again.
    fn resume(&mut self, target: Option<TargetPage>) {
        if self.tab_lost() {
            self.outputs.push_back(TransferOutput::Activity("tab_asked_again"));
            return self.open_tab();
        }
        if !matches!(self.machine.state(), HandoffState::SeedUncertain { .. }) {
            return;
        }
        let Some(target) = target else {
            return self.outputs.push_back(TransferOutput::ResumeNoTarget);
        };
        let seed_present = target.markers.iter().any(|m| self.seeds.contains(m));
        if let Some(conversation_id) = self.new_conversation(&target.url) {
            let _ = self.machine.handle(HandoffInput::NewConversation { conversation_id });
        }
        self.step(HandoffInput::Resume { seed_present });
    }

    /// One input of the machine, then what it asks for.
    fn step(&mut self, input: HandoffInput) {
        let _ = self.machine.handle(input);
        self.drain();
    }

    /// The machine's outputs, then its end (once), then the snapshot.
    fn drain(&mut self) {
        while let Some(output) = self.machine.poll() {
            match output {
                // The source's scheduler reads `in_flight` on its next sync.
                HandoffOutput::PauseSource | HandoffOutput::ResumeSource => {}
                HandoffOutput::Confirm { conversation_id } => self.outputs.push_back(TransferOutput::Confirm { conversation_id }),
                HandoffOutput::Prepare { continuity_id } => {
                    if let HandoffState::Preparing { source_url, .. } = self.machine.state() {
                        let source_url = source_url.clone();
                        self.outputs.push_back(TransferOutput::Prepare { continuity_id, source_url });
                    }
                }
                HandoffOutput::OpenNewChat => self.open_tab(),
                HandoffOutput::SendSeed { .. } => {
                    self.seed_due = true;
                    self.outputs.push_back(TransferOutput::SeedDue);
                }
                HandoffOutput::CutOver { new_conversation } => self.outputs.push_back(TransferOutput::CutOver { new_conversation }),
            }
        }
        // The end's code (the refusal's codes are `'static`): no copy of the state.
        let ended = match self.machine.state() {
            HandoffState::Failed { reason, .. } => Some(reason.code()),
            HandoffState::CopyPrompt { .. } => Some("copy_prompt_offered"),
            _ => None,
        };
        if let Some(code) = ended {
            if !std::mem::replace(&mut self.end_recorded, true) {
                self.outputs.push_back(TransferOutput::Ended(code));
            }
        }
        self.outputs.push_back(TransferOutput::Persist);
    }

    fn open_tab(&mut self) {
        let Some(transfer_id) = self.transfer_id().map(str::to_owned) else { return };
        self.tab_requested = true;
        self.asked = true;
        let url = new_chat_url(self.site, self.project_id.as_deref(), &transfer_id);
        self.outputs.push_back(TransferOutput::Persist);
        self.outputs.push_back(TransferOutput::OpenTab { transfer_id, url });
    }

    /// The transfer as the snapshot holds it (nothing of this worker life).
    pub fn persisted(&self) -> Self {
        Self { asked: false, outputs: VecDeque::new(), ..self.clone() }
    }
}

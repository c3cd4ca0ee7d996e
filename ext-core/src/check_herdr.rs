//! Check Herdr, the HUD's manual look at the bound workspace (SPEC M4): one run per tab
//! lists the workspace's panes (`herdr.panes`), reads each agent pane's tail (at most
//! [`MAX_PANE_READS`], `herdr.pane_read`) and, once every read has answered, hands the
//! panes and texts on to be inserted into the composer — never sent.
//!
//! Invariants (transcript and property tests in `tests/it/check_herdr.rs`):
//! - A press refused by the HUD's lock (Auto drives the chat, or the page has no composer,
//!   M4) or on an unbound chat starts nothing and says why ([`CheckOutput::Refused`]).
//! - At most one run per tab: a new press replaces the tab's run, and an answer to an
//!   earlier run (its `run` number) is never read into the new one.
//! - A run ends exactly once: one [`CheckOutput::Summary`] after its last read answered (a
//!   pane whose read failed, or was lost with the link, is listed without text), or one
//!   [`CheckOutput::Failed`] when the pane list could not be read; a page that went away
//!   ends it silently, and nothing of a run outlives the link (`LinkDown`).
//! - The summary's fence nonce is unique per run: [`CheckOutput::Summary`] carries a
//!   number that grows with every summary of this worker life.
//!
//! Driver contract: feed [`CheckInput`]s with [`CheckHerdr::handle`] and drain
//! [`CheckHerdr::poll`] until `None` after each. Send every [`CheckOutput::ReadPanes`] and
//! [`CheckOutput::ReadPane`] as a runtime call and feed its answer back with the same
//! `tab` and `run` (a call the runtime will never answer is answered as an error by the
//! composition); turn a `Summary` into the fenced text (`continuity::check_herdr_summary`)
//! and a `Refused` / `Failed` into the HUD's notice. No timers: a read waits for its
//! answer, and the composition answers every call its lost link leaves. Not persisted: a
//! worker restart forgets runs, whose answers then name no run.

use std::collections::VecDeque;

use crate::auto_gate::ActionLocked;
use crate::binding::TabId;
use crate::continuity::PaneInfo;
use crate::vec_map::{VecMap, VecSet};
use crate::Millis;

/// Most agent panes one run reads.
pub const MAX_PANE_READS: usize = 8;

/// Why a press started nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckRefusal {
    /// The HUD's lock for the action (M4).
    Locked(ActionLocked),
    /// The chat is bound to no workspace.
    NotBound,
}

/// What happens to the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckInput {
    /// The HUD's Check Herdr on `tab`: the Auto gate's lock of the action (`None` when it
    /// is open) and the workspace the tab's chat is bound to, if any.
    Pressed {
        /// The tab.
        tab: TabId,
        /// The action's lock, if locked.
        locked: Option<ActionLocked>,
        /// The bound workspace.
        workspace_id: Option<String>,
    },
    /// `herdr.panes` answered for `run`: the panes, or why not.
    Panes {
        /// The tab.
        tab: TabId,
        /// The run the call was made for.
        run: u64,
        /// The panes, or the error's text.
        panes: Result<Vec<PaneInfo>, String>,
    },
    /// One `herdr.pane_read` of `run` answered: the pane's text, or nothing (an error).
    PaneText {
        /// The tab.
        tab: TabId,
        /// The run the call was made for.
        run: u64,
        /// The pane the call named.
        pane_id: String,
        /// Its text when the read succeeded: the pane the answer names, and the text.
        text: Option<(String, String)>,
    },
    /// The tab's page went away.
    PageGone {
        /// The tab.
        tab: TabId,
    },
    /// The companion link is down (its calls were answered as errors first).
    LinkDown,
}

/// What the driver carries out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOutput {
    /// Say why the press started nothing.
    Refused {
        /// The tab.
        tab: TabId,
        /// Why.
        why: CheckRefusal,
    },
    /// Call `herdr.panes` for the workspace.
    ReadPanes {
        /// The tab.
        tab: TabId,
        /// The run.
        run: u64,
        /// The workspace.
        workspace_id: String,
    },
    /// Call `herdr.pane_read` for one agent pane.
    ReadPane {
        /// The tab.
        tab: TabId,
        /// The run.
        run: u64,
        /// The pane.
        pane_id: String,
    },
    /// The pane list could not be read: say so.
    Failed {
        /// The tab.
        tab: TabId,
        /// What the runtime said.
        message: String,
    },
    /// Every read answered: insert the summary into the composer.
    Summary {
        /// The tab.
        tab: TabId,
        /// Summaries of this worker life so far, this one included (the fence nonce's id).
        seq: u64,
        /// The workspace.
        workspace_id: String,
        /// Its panes, as listed.
        panes: Vec<PaneInfo>,
        /// The texts read, by pane.
        texts: VecMap<String, String>,
    },
}

/// One run being collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Run {
    run: u64,
    workspace_id: String,
    /// The pane list has answered.
    listed: bool,
    /// Reads not answered yet, by pane.
    waiting: VecSet<String>,
    panes: Vec<PaneInfo>,
    texts: VecMap<String, String>,
}

/// Check Herdr's runs, one per tab.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckHerdr {
    runs: VecMap<TabId, Run>,
    /// Runs started (the next run's number).
    started: u64,
    /// Summaries handed out (their fence nonces' ids).
    summaries: u64,
    outputs: VecDeque<CheckOutput>,
}

impl CheckHerdr {
    /// Feeds one input.
    pub fn handle(&mut self, _now: Millis, input: CheckInput) {
        match input {
            CheckInput::Pressed { tab, locked, workspace_id } => self.pressed(tab, locked, workspace_id),
            CheckInput::Panes { tab, run, panes } => self.listed(tab, run, panes),
            CheckInput::PaneText { tab, run, pane_id, text } => {
                // Only the answer to a read still out counts (one per read).
                let Some(current) = self.runs.get_mut(&tab).filter(|r| r.run == run) else { return };
                if !current.waiting.remove(&pane_id) {
                    return;
                }
                if let Some((pane, text)) = text {
                    current.texts.insert(pane, text);
                }
                self.finish(tab);
            }
            CheckInput::PageGone { tab } => {
                self.runs.remove(&tab);
            }
            CheckInput::LinkDown => self.runs.clear(),
        }
    }

    /// The next output, if any.
    pub fn poll(&mut self) -> Option<CheckOutput> {
        self.outputs.pop_front()
    }

    /// No timers: every step waits for an answer.
    pub fn next_deadline(&self) -> Option<Millis> {
        None
    }

    /// Whether a run of `tab` is being collected.
    pub fn running(&self, tab: TabId) -> bool {
        self.runs.contains_key(&tab)
    }

    fn pressed(&mut self, tab: TabId, locked: Option<ActionLocked>, workspace_id: Option<String>) {
        let refused = match (locked, workspace_id) {
            (Some(lock), _) => CheckRefusal::Locked(lock),
            (None, None) => CheckRefusal::NotBound,
            (None, Some(workspace_id)) => {
                self.started += 1;
                let run = self.started;
                self.runs.insert(tab, Run { run, workspace_id: workspace_id.clone(), ..Run::default() });
                return self.outputs.push_back(CheckOutput::ReadPanes { tab, run, workspace_id });
            }
        };
        self.outputs.push_back(CheckOutput::Refused { tab, why: refused });
    }

    fn listed(&mut self, tab: TabId, run: u64, panes: Result<Vec<PaneInfo>, String>) {
        let Some(current) = self.runs.get_mut(&tab).filter(|r| r.run == run && !r.listed) else { return };
        let panes = match panes {
            Ok(panes) => panes,
            Err(message) => {
                self.runs.remove(&tab);
                return self.outputs.push_back(CheckOutput::Failed { tab, message });
            }
        };
        current.listed = true;
        for pane in panes.iter().filter(|p| p.agent.is_some()).take(MAX_PANE_READS) {
            if current.waiting.insert(pane.pane_id.clone()) {
                self.outputs.push_back(CheckOutput::ReadPane { tab, run, pane_id: pane.pane_id.clone() });
            }
        }
        current.panes = panes;
        self.finish(tab);
    }

    fn finish(&mut self, tab: TabId) {
        if !self.runs.get(&tab).is_some_and(|r| r.listed && r.waiting.is_empty()) {
            return;
        }
        let Some(done) = self.runs.remove(&tab) else { return };
        self.summaries += 1;
        self.outputs.push_back(CheckOutput::Summary {
            tab,
            seq: self.summaries,
            workspace_id: done.workspace_id,
            panes: done.panes,
            texts: done.texts,
        });
    }
}

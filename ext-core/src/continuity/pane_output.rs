//! Pane output for progress (P2–P6): the latest `agent_output` tail per pane of a bound
//! workspace, with the baseline of the current working episode, and the bounded summary
//! built from them.
//!
//! Invariants: output equal to the episode's baseline is never progress; a summary is at
//! most [`PROGRESS_SUMMARY_MAX_CHARS`]; panes of unbound workspaces are not kept.

use super::*;
use crate::json_read::{ReadJson, WriteJson};

/// How many non-empty output lines of one pane a progress summary shows.
pub const PROGRESS_LINES_PER_PANE: usize = 4;

/// How many characters of one output line a progress summary shows.
pub const PROGRESS_LINE_MAX_CHARS: usize = 160;

/// The longest progress summary (all panes together).
pub const PROGRESS_SUMMARY_MAX_CHARS: usize = 600;

/// The latest output of one pane (from `agent_output`), with the baseline of the current
/// working episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct PaneOutput {
    /// The workspace of the pane.
    pub workspace_id: String,
    /// The agent in the pane, if Herdr named one.
    pub agent: Option<String>,
    /// The latest tail (≤ 2 000 characters, runtime-bounded).
    pub tail: String,
    /// The tail when the episode began; output equal to it is not progress.
    pub baseline: String,
    /// Stream seq of the latest tail (a replayed older event never overwrites it).
    #[serde(default)]
    pub seq: u64,
}

/// The progress summary of `workspace_id` (P4): for each of its panes (ordered by id)
/// whose latest output differs from the episode's baseline, a `pane (agent):` line and the
/// last [`PROGRESS_LINES_PER_PANE`] non-empty lines of output (each ≤
/// [`PROGRESS_LINE_MAX_CHARS`]); ≤ [`PROGRESS_SUMMARY_MAX_CHARS`] in total. `None` when no
/// pane has new output. Deterministic, so equal output gives an equal summary (dedup).
pub fn progress_summary(workspace_id: &str, outputs: &VecMap<String, PaneOutput>) -> Option<String> {
    // One text, blocks separated by a newline (no `join`: it is one more generic copy in
    // the wasm).
    let mut summary = String::new();
    for (pane_id, output) in outputs {
        if output.workspace_id != workspace_id || output.tail == output.baseline {
            continue;
        }
        let lines: Vec<&str> = output.tail.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
        if lines.is_empty() {
            continue;
        }
        let agent = output.agent.as_deref().unwrap_or("no agent");
        if !summary.is_empty() {
            summary.push('\n');
        }
        for part in [pane_id.as_str(), " (", agent, "):"] {
            summary.push_str(part);
        }
        for line in &lines[lines.len().saturating_sub(PROGRESS_LINES_PER_PANE)..] {
            summary.push('\n');
            summary.push_str(&bounded(line.trim(), PROGRESS_LINE_MAX_CHARS));
        }
    }
    (!summary.is_empty()).then(|| bounded(&summary, PROGRESS_SUMMARY_MAX_CHARS))
}

impl Continuity {
    /// Stores a pane's latest output (bound workspaces only). `fresh.baseline` is its own
    /// tail: used only when the pane was never seen (its first output is the baseline).
    pub(super) fn agent_output(&mut self, fresh: PaneOutput, pane_id: String) {
        if self.bindings.scopes_bound_to(&fresh.workspace_id).next().is_none() {
            return;
        }
        match self.pane_outputs.get_mut(&pane_id) {
            Some(known) if fresh.seq != 0 && fresh.seq <= known.seq => return, // a replay of older output
            Some(known) => {
                known.workspace_id = fresh.workspace_id;
                known.agent = fresh.agent;
                known.tail = fresh.tail;
                known.seq = fresh.seq;
            }
            None => {
                self.pane_outputs.insert(pane_id, fresh);
            }
        }
        self.persist();
    }
}

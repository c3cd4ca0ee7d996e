//! The persisted state of the extension's continuity loop: an explicit, versioned snapshot
//! (SPEC B7, P6, I4). The service worker writes it to `chrome.storage.local` after every
//! burst of changes and reads it once at start; an upgrade of the extension must never
//! wipe a user's bindings.
//!
//! What is kept: bindings and Auto toggles, the settle tracker's marks (generation, seq
//! high-water mark, per-pane states), each bound scope's scheduler (pending wake, last
//! progress summary), counters and a settle waiting for its inbox read, the delivery ledger,
//! the acks still due and the tasks already carried, the due inbox checks, the latest pane
//! output per pane, the progress timing, the message language and the JSON bridge replies
//! whose results are still owed to their chats, and per tab the page load whose rate-limit
//! notice was counted. What is not: page facts (pages report again),
//! runtime calls in flight (re-issued), views.
//!
//! Versions: `1` is release 0.1.0's snapshot, which had no `version` field and kept a
//! delivery in flight per scope (`scopes.*.in_flight`); it loads, and that delivery joins the
//! ledger as uncertain. `2` is today's. A snapshot of a *newer* version is refused with
//! [`SnapshotError::Newer`] (the shell keeps the stored text aside instead of overwriting it).
//!
//! Invariant: every snapshot this or an earlier release wrote loads with its bindings and
//! Auto intact (`tests/it/snapshot.rs` loads the recorded one of release 0.1.0).

use std::collections::VecDeque;

use serde::Serialize;

use crate::auto_gate::AutoGate;
use crate::binding::{Bindings, CatalogWorkspace, TabId};
use crate::continuity::{HandoffBook, JournalBook, WithheldMark};
use crate::continuity::{PaneOutput, QueueDurable, ScopeStatus};
use crate::delivery_ledger::DeliveryLedger;
use crate::json_read::{Object, ReadJson};
use crate::permission_card::CardLedger;
use crate::progress_push::ProgressConfig;
use crate::recovery::RecoveryPlanner;
use crate::semantic_auto::SemanticAuto;
use crate::settle_tracker::SettleTracker;
use crate::vec_map::VecMap;
use crate::wake::Language;

/// The version this release writes.
pub const SNAPSHOT_VERSION: u32 = 2;

/// Why a stored snapshot was not loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    /// The text is not a snapshot of any known shape.
    Unreadable(String),
    /// A newer release wrote it.
    Newer(u32),
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreadable(why) => write!(f, "the saved state could not be read ({why}); starting with no bindings. Bind your chats again from the side panel."),
            Self::Newer(version) => write!(f, "the saved state was written by a newer version of Herdr Continuity (format {version}); it is kept aside, not overwritten. Update the extension to use it."),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// The persisted continuity state (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson)]
pub struct Snapshot {
    /// Format version; absent (0) in release 0.1.0's snapshots, which are version 1.
    #[serde(default)]
    pub version: u32,
    /// Bindings (B1–B7).
    pub(crate) bindings: Bindings,
    /// Auto settings (M1–M3).
    pub(crate) auto: AutoGate,
    /// Settle tracking marks (P8, P9).
    pub(crate) tracker: SettleTracker,
    /// Per-scope state by scope key.
    pub(crate) scopes: VecMap<String, ScopeStatus>,
    /// Message language.
    #[serde(default)]
    pub(crate) language: Language,
    /// Every message on its way into a page.
    #[serde(default)]
    pub(crate) ledger: DeliveryLedger,
    /// Last catalog read (display only).
    #[serde(default)]
    pub(crate) catalog: Vec<CatalogWorkspace>,
    /// Progress timing (clamped).
    #[serde(default)]
    pub(crate) progress: ProgressConfig,
    /// Latest output per pane of bound workspaces.
    #[serde(default)]
    pub(crate) pane_outputs: VecMap<String, PaneOutput>,
    /// Task ids carried by confirmed deliveries, per session ref.
    #[serde(default)]
    pub(crate) confirmed_tasks: VecMap<String, VecDeque<String>>,
    /// Confirmed-but-unacknowledged task ids of bindings that are gone, per session ref.
    #[serde(default)]
    pub(crate) orphan_acks: VecMap<String, Vec<String>>,
    /// Queue batches in flight, confirmed removals not yet written, undelivered batches.
    #[serde(default)]
    pub(crate) queue: QueueDurable,
    /// Semantic Auto per conversation key: judged fingerprints, the streak (M7).
    #[serde(default)]
    pub(crate) semantic: VecMap<String, SemanticAuto>,
    /// Stuck-page recovery per conversation key: budgets, the last reload, the pending
    /// record, the 429 back-off (S7, H5).
    #[serde(default)]
    pub(crate) recovery: VecMap<String, RecoveryPlanner>,
    /// Tool-permission cards accepted (M5): a key in it is never clicked again.
    #[serde(default)]
    pub(crate) cards: CardLedger,
    /// Per scope key, the withheld wake its last Activity entry recorded (not again, O1).
    #[serde(default)]
    pub(crate) withheld_marks: VecMap<String, WithheldMark>,
    /// The Continuity Journal's outbox, answered turns, chains and message floors (C1, R1).
    #[serde(default)]
    pub(crate) journal: JournalBook,
    /// Handoffs per source scope and the conversations their cut-overs left (X1–X8).
    #[serde(default)]
    pub(crate) handoff: HandoffBook,
    /// The request pacer: per account the last backend read and the 429 cooldown (issue 26;
    /// a worker restart keeps them).
    #[serde(default)]
    pub(crate) pacer: crate::request_pacer::RequestPacer,
    /// Goal mode's goals per scope key (J7), as the runtime last answered them: a restarted
    /// worker keeps deciding with them (the runtime's evidence still decides each turn).
    #[serde(default)]
    pub(crate) goals: VecMap<String, String>,
    /// Goal mode's rounds, last continue and Stop per scope key (J7, M7): a restart does
    /// not reset the bound on continues nor drop the user's Stop.
    #[serde(default)]
    pub(crate) goal_counts: VecMap<String, crate::goal_supervisor::GoalCounts>,
    /// The scopes whose inbox check is due (I2, P9; earlier releases kept the flag in
    /// `scopes.*.inbox_check_due`, still read).
    #[serde(default)]
    pub(crate) inbox_checks: crate::inbox_checks::InboxChecks,
    /// JSON bridge results owed to their chats (the replies, not the results' text): a
    /// restart asks the runtime again and types them once.
    #[serde(default)]
    pub(crate) bridge: crate::continuity::BridgeBook,
    /// Per tab, the page load whose visible rate-limit notice was counted as a 429: after a
    /// restart the same notice still shown is not counted again.
    #[serde(default)]
    pub(crate) recovery_notices: VecMap<TabId, String>,
}

impl Snapshot {
    /// Reads a stored snapshot of this or an earlier release.
    pub fn parse(text: &str) -> Result<Self, SnapshotError> {
        let unreadable = |e: serde_json::Error| SnapshotError::Unreadable(e.to_string());
        Self::read(&serde_json::from_str(text).map_err(unreadable)?)
    }

    /// Reads a stored snapshot already parsed into JSON (the shell parses text with the
    /// browser's `JSON.parse`): the version first, since a newer release's snapshot may have
    /// another shape, then the hand-written readers (`crate::json_read`).
    pub fn read(value: &serde_json::Value) -> Result<Self, SnapshotError> {
        let version = value.get("version").and_then(serde_json::Value::as_u64).unwrap_or(0);
        let version = u32::try_from(version).unwrap_or(u32::MAX);
        if version > SNAPSHOT_VERSION {
            return Err(SnapshotError::Newer(version));
        }
        let mut snapshot = Snapshot::read_json(value).map_err(|e| SnapshotError::Unreadable(e.to_string()))?;
        if snapshot.version == 0 {
            snapshot.version = 1;
        }
        Ok(snapshot)
    }

    /// The text to store.
    pub fn to_json(&self) -> Result<String, SnapshotError> {
        Ok(SnapshotRef {
            version: self.version,
            bindings: &self.bindings,
            auto: &self.auto,
            tracker: &self.tracker,
            scopes: &self.scopes,
            language: self.language,
            ledger: &self.ledger,
            catalog: &self.catalog,
            progress: self.progress,
            pane_outputs: &self.pane_outputs,
            confirmed_tasks: &self.confirmed_tasks,
            orphan_acks: &self.orphan_acks,
            queue: &self.queue,
            semantic: &self.semantic,
            recovery: &self.recovery,
            cards: &self.cards,
            withheld_marks: &self.withheld_marks,
            journal: &self.journal,
            handoff: &self.handoff,
            pacer: &self.pacer,
            goals: &self.goals,
            goal_counts: &self.goal_counts,
            inbox_checks: &self.inbox_checks,
            bridge: &self.bridge,
            recovery_notices: &self.recovery_notices,
        }
        .to_value()
        .to_string())
    }
}

/// A [`Snapshot`] of borrowed parts: what is written, without cloning the machines' state
/// first (`Continuity::snapshot_json`). The field names are the stored keys. (`Snapshot`
/// derives serde's `Serialize` only so tests can check that this writer writes its shape.)
pub(crate) struct SnapshotRef<'a> {
    /// See [`Snapshot::version`].
    pub(crate) version: u32,
    /// See [`Snapshot::bindings`].
    pub(crate) bindings: &'a Bindings,
    /// See [`Snapshot::auto`].
    pub(crate) auto: &'a AutoGate,
    /// See [`Snapshot::tracker`].
    pub(crate) tracker: &'a SettleTracker,
    /// See [`Snapshot::scopes`].
    pub(crate) scopes: &'a VecMap<String, ScopeStatus>,
    /// See [`Snapshot::language`].
    pub(crate) language: Language,
    /// See [`Snapshot::ledger`].
    pub(crate) ledger: &'a DeliveryLedger,
    /// See [`Snapshot::catalog`].
    pub(crate) catalog: &'a [CatalogWorkspace],
    /// See [`Snapshot::progress`].
    pub(crate) progress: ProgressConfig,
    /// See [`Snapshot::pane_outputs`].
    pub(crate) pane_outputs: &'a VecMap<String, PaneOutput>,
    /// See [`Snapshot::confirmed_tasks`].
    pub(crate) confirmed_tasks: &'a VecMap<String, VecDeque<String>>,
    /// See [`Snapshot::orphan_acks`].
    pub(crate) orphan_acks: &'a VecMap<String, Vec<String>>,
    /// See [`Snapshot::queue`].
    pub(crate) queue: &'a QueueDurable,
    /// See [`Snapshot::semantic`].
    pub(crate) semantic: &'a VecMap<String, SemanticAuto>,
    /// See [`Snapshot::recovery`].
    pub(crate) recovery: &'a VecMap<String, RecoveryPlanner>,
    /// See [`Snapshot::cards`].
    pub(crate) cards: &'a CardLedger,
    /// See [`Snapshot::withheld_marks`].
    pub(crate) withheld_marks: &'a VecMap<String, WithheldMark>,
    /// See [`Snapshot::journal`].
    pub(crate) journal: &'a JournalBook,
    /// See [`Snapshot::handoff`].
    pub(crate) handoff: &'a HandoffBook,
    /// See [`Snapshot::pacer`].
    pub(crate) pacer: &'a crate::request_pacer::RequestPacer,
    /// See [`Snapshot::goals`].
    pub(crate) goals: &'a VecMap<String, String>,
    /// See [`Snapshot::goal_counts`].
    pub(crate) goal_counts: &'a VecMap<String, crate::goal_supervisor::GoalCounts>,
    /// See [`Snapshot::inbox_checks`].
    pub(crate) inbox_checks: &'a crate::inbox_checks::InboxChecks,
    /// See [`Snapshot::bridge`].
    pub(crate) bridge: &'a crate::continuity::BridgeBook,
    /// See [`Snapshot::recovery_notices`].
    pub(crate) recovery_notices: &'a VecMap<TabId, String>,
}

impl SnapshotRef<'_> {
    /// What to store: the hand-written writers (`crate::json_read`), not serde's derived
    /// `Serialize` (smaller wasm); keys sorted.
    pub(crate) fn to_value(&self) -> serde_json::Value {
        Object::default()
            .with("version", &self.version)
            .with("bindings", self.bindings)
            .with("auto", self.auto)
            .with("tracker", self.tracker)
            .with("scopes", self.scopes)
            .with("language", &self.language)
            .with("ledger", self.ledger)
            .with("catalog", self.catalog)
            .with("progress", &self.progress)
            .with("pane_outputs", self.pane_outputs)
            .with("confirmed_tasks", self.confirmed_tasks)
            .with("orphan_acks", self.orphan_acks)
            .with("queue", self.queue)
            .with("semantic", self.semantic)
            .with("recovery", self.recovery)
            .with("cards", self.cards)
            .with("withheld_marks", self.withheld_marks)
            .with("journal", self.journal)
            .with("handoff", self.handoff)
            .with("pacer", self.pacer)
            .with("goals", self.goals)
            .with("goal_counts", self.goal_counts)
            .with("inbox_checks", self.inbox_checks)
            .with("bridge", self.bridge)
            .with("recovery_notices", self.recovery_notices)
            .done()
    }
}

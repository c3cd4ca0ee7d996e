//! Settle tracking: turns the runtime's per-pane event stream into one working → settled
//! signal per workspace (SPEC P1, P2, P7, P8, P9).
//!
//! All panes of a workspace form one task scope (P1). The scope is *working* while any of
//! its panes works; one pane settling while others still work is only partial progress
//! (P7); when no pane works any more the scope is *settled* and exactly one
//! [`SettleOutput::ScopeSettled`] is emitted for that transition (P8). Events are
//! deduplicated by a `(boot_id, seq)` high-water mark that is part of the persisted state,
//! so a replay after a reconnect or a service-worker restart applies each event at most
//! once, and settles that happened while offline are reported once (P9). Events of an older
//! *source* are rejected (P9): a `hello` of a retired runtime generation, and any event of a
//! generation other than the current one that is not part of the current subscription's
//! replay.
//!
//! Why replayed events of an older generation are applied: `seq` is global and persisted,
//! so the runtime's replay is the durable record, delivered once by `seq`. A settle stored by
//! the previous runtime start while this extension was offline exists nowhere else; dropping
//! it would lose the wake, and dropping a replayed `working` would let a later partial settle
//! look like a full one. What must be refused is an event that claims to be *live* from a
//! generation that is no longer live (a zombie runtime, an old port): with `hello.last_seq`
//! known, such an event has `seq > last_seq` and another `boot_id`. Without `last_seq` (an
//! older runtime) every other-generation event is refused: fail closed.
//!
//! Closing a gap the replay cannot cover (P9, "nothing is lost: not a wake"): the runtime
//! keeps only its newest events, so after a long offline period the replay may start after
//! a gap that held a workspace's settle. The `hello` therefore carries the runtime's live
//! agent snapshot (`agents`), taken when the subscription began, so at least as new as the
//! replay's end (`last_seq`). Once the replay has been applied — an event or stream position
//! with `seq >= last_seq` was handled, a live event is about to be, or the mark was already
//! at `last_seq` — every workspace still believed working whose panes the snapshot shows as
//! none working (none of them without a settled status) is settled with one `ScopeSettled` whose [`WakeId`] is `(hello.boot_id,
//! max(last_seq, mark))`. A replay that carried the settle itself left the workspace settled,
//! so it is never woken twice; a snapshot showing a pane working leaves it alone; no
//! snapshot (`agents` absent) or no `last_seq` means no reconciliation (fail closed). The
//! pending reconciliation belongs to one subscription: `Reconnected` or the next `hello`
//! replaces it, and it is not persisted (a restarted worker resubscribes and gets a new
//! `hello`).
//!
//! Stream contract this machine relies on (docs/PROTOCOL.md "Event stream"): `seq` strictly
//! increases in the order the runtime applied the events and is never reused, not even
//! across runtime restarts (gaps are allowed); every subscription starts with `hello
//! {boot_id}` naming the current runtime start; a stream delivers events in `seq` order
//! (replay first, then live). An event whose `boot_id` is not the current one is *stale*.
//!
//! Invariants:
//! - An event with `seq` at or below the high-water mark is dropped unread, so duplicates
//!   and late (reordered) copies never change state or produce output.
//! - An event of another runtime start than the current `hello` changes state (and may wake)
//!   only when it is part of the replay (`seq <= hello.last_seq`); otherwise it never changes
//!   pane state and never wakes. Only a `hello` changes the generation.
//! - `ScopeSettled` for a workspace is only emitted while it was working and only when no
//!   pane of it is working; between two `ScopeSettled` of a workspace lies a `ScopeWorking`.
//! - A retired `boot_id` is never adopted again.
//! - A `hello` snapshot settles a workspace at most once per subscription, only after the
//!   replay was applied, only while it is still working, and only when no pane of it is
//!   shown without a settled status.

use std::collections::VecDeque;

use serde::Serialize;
use serde_json::Value;

use crate::json_read::{unknown_variant, Fields, Object, ReadError, ReadJson, WriteJson};

use crate::vec_map::VecMap;
use crate::Millis;

/// How many retired runtime generations are remembered to reject their late events.
const RETIRED_BOOTS_KEPT: usize = 16;

/// Herdr's settled statuses (REFERENCE §1: "settled" is idle | done | blocked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum SettledStatus {
    /// The agent is idle.
    Idle,
    /// The agent finished and the user has not looked yet.
    Done,
    /// The agent waits for input or approval.
    Blocked,
}

/// What happened to a pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "status", rename_all = "snake_case")]
pub enum PaneEventKind {
    /// The pane's agent started working.
    Working,
    /// The pane's agent settled.
    Settled(SettledStatus),
    /// The pane (or its agent) went away.
    PaneRemoved,
}

/// One event of the runtime's stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamEvent {
    /// The runtime generation that produced it.
    pub boot_id: String,
    /// Its position in that generation's stream.
    pub seq: u64,
    /// Herdr workspace id.
    pub workspace_id: String,
    /// Herdr pane id.
    pub pane_id: String,
    /// What happened.
    pub kind: PaneEventKind,
    /// When it happened (runtime clock, ms).
    pub at: Millis,
}

/// One agent pane in the runtime's live snapshot (`hello.agents`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentSnapshot {
    /// Herdr workspace id.
    pub workspace_id: String,
    /// Herdr pane id.
    pub pane_id: String,
    /// Its settled status (idle | done | blocked); `None` while the agent works or its
    /// status is anything else (unknown counts as not settled: fail closed, no wake).
    pub settled: Option<SettledStatus>,
}

/// Facts the shell feeds in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SettleInput {
    /// The identity of the runtime's event log, from the stream `hello`; `reset` when the
    /// runtime replays a log the high-water mark does not belong to (fed before the hello).
    LogIdentity {
        /// `hello.log_id`.
        log_id: Option<String>,
        /// `hello.log_reset`.
        reset: bool,
    },
    /// The stream's first message: which runtime generation speaks.
    StreamHello {
        /// The runtime generation.
        boot_id: String,
        /// The highest `seq` the runtime had stored when this subscription began (events up
        /// to it are replayed history); `None` from a runtime that does not say.
        #[serde(default)]
        last_seq: Option<u64>,
        /// The runtime's agent panes when this subscription began; `None` when the runtime
        /// did not send them (then nothing is reconciled: fail closed).
        #[serde(default)]
        agents: Option<Vec<AgentSnapshot>>,
    },
    /// One pane event.
    Event(StreamEvent),
    /// A stored stream event this machine has no use for (output, catalog changes): it only
    /// tells how far the stream has got, so the end of the replay is noticed.
    StreamPosition {
        /// The event's seq.
        seq: u64,
    },
    /// The stream was lost and the shell is about to reopen it.
    Reconnected,
}

/// The identity of one settle: the event that completed it. Unique per settle, so the
/// delivery side can refuse to send the same wake twice.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, ReadJson, WriteJson)]
pub struct WakeId {
    /// The runtime generation.
    pub boot_id: String,
    /// The completing event's seq.
    pub seq: u64,
}

/// How a workspace settled, for the wake text (A3: blocked / gone are diagnosed further).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum SettleOutcome {
    /// Every pane is idle.
    Idle,
    /// At least one pane is done, none blocked.
    Done,
    /// At least one pane is blocked.
    Blocked,
    /// The last working pane went away without settling.
    PaneGone,
}

/// Where to resume a stream: the runtime replays everything after `after_seq`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct ResumePoint {
    /// The generation the mark belongs to.
    pub boot_id: String,
    /// The high-water mark.
    pub after_seq: u64,
    /// The event log the mark belongs to (`None` before a runtime named one).
    #[serde(default)]
    pub log_id: Option<String>,
}

/// Decisions for the shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SettleOutput {
    /// A workspace went from settled to working (P2).
    ScopeWorking {
        /// The workspace.
        workspace_id: String,
        /// When (event time).
        at: Millis,
    },
    /// A pane settled while others in its workspace still work (P7).
    PartialSettle {
        /// The workspace.
        workspace_id: String,
        /// The pane that settled.
        pane_id: String,
        /// How many panes still work.
        still_working: u32,
    },
    /// A workspace went from working to settled: wake its page once (P8).
    ScopeSettled {
        /// The workspace.
        workspace_id: String,
        /// The settle's identity.
        wake_id: WakeId,
        /// How it settled.
        outcome: SettleOutcome,
        /// When (event time).
        at: Millis,
    },
    /// Reopen the stream from here (answer to `Reconnected`).
    Resubscribe {
        /// `None` when nothing was seen yet: subscribe from the start.
        resume: Option<ResumePoint>,
    },
    /// A new runtime generation took over (a `hello` with a new `boot_id`).
    GenerationChanged {
        /// The new generation.
        boot_id: String,
    },
    /// A `hello` of a retired generation or a stale event was rejected (P9).
    StaleGenerationRejected {
        /// The retired generation.
        boot_id: String,
    },
}

/// What the tracker knows about one workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct WorkspaceActivity {
    /// Last known state of each pane.
    panes: VecMap<String, PaneState>,
    /// Whether the scope is in the working phase.
    working: bool,
}

/// Last known state of one pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "status", rename_all = "snake_case")]
enum PaneState {
    /// The agent works.
    Working,
    /// The agent settled.
    Settled(SettledStatus),
}

/// A `hello` snapshot waiting for the replay to be applied before it is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PendingReconcile {
    /// The `hello` generation (the wake id's `boot_id`).
    boot_id: String,
    /// `hello.last_seq`: the replay's end.
    through: u64,
    /// The snapshot.
    agents: Vec<AgentSnapshot>,
}

/// Settle tracking over every workspace of one runtime stream.
///
/// Driver contract: feed every stream message with [`SettleTracker::handle`], then drain
/// [`SettleTracker::poll`]; persist the struct (serde) after each drained batch so the
/// high-water mark survives a service-worker restart. When the stream drops, feed
/// `Reconnected` and reopen it from the `Resubscribe` output. No timers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct SettleTracker {
    /// The runtime generation currently accepted.
    boot_id: Option<String>,
    /// Generations seen before, newest last; their messages are rejected.
    retired_boots: Vec<String>,
    /// Highest seq seen (applied or rejected as stale); seq is global across generations.
    high_water: u64,
    /// The event log `high_water` belongs to.
    #[serde(default)]
    log_id: Option<String>,
    /// The current subscription's replay horizon (`hello.last_seq`): events of another
    /// generation up to it are history and applied; later ones are refused.
    #[serde(default)]
    replay_through: Option<u64>,
    /// Per-workspace pane states and phase.
    workspaces: VecMap<String, WorkspaceActivity>,
    /// The current subscription's `hello` snapshot until its replay is applied (not
    /// persisted: a new subscription brings a new one).
    #[serde(skip)]
    pending_reconcile: Option<PendingReconcile>,
    /// Decisions not yet drained (not persisted).
    #[serde(skip)]
    outputs: VecDeque<SettleOutput>,
}

impl SettleTracker {
    /// Knows nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where a reopened stream should resume.
    pub fn resume_point(&self) -> Option<ResumePoint> {
        self.boot_id.as_ref().map(|boot_id| ResumePoint {
            boot_id: boot_id.clone(),
            after_seq: self.high_water,
            log_id: self.log_id.clone(),
        })
    }

    /// Whether the workspace is in the working phase.
    pub fn is_working(&self, workspace_id: &str) -> bool {
        self.workspaces.get(workspace_id).is_some_and(|w| w.working)
    }

    /// Whether a `hello` snapshot waits for the end of the replay.
    pub fn reconcile_pending(&self) -> bool {
        self.pending_reconcile.is_some()
    }

    /// How many panes of the workspace work right now.
    pub fn working_panes(&self, workspace_id: &str) -> u32 {
        self.workspaces.get(workspace_id).map_or(0, count_working)
    }

    /// Feeds one stream message. `now` is only the `at` of a settle found by comparing the
    /// `hello` snapshot (stream events carry their own time).
    pub fn handle(&mut self, now: Millis, input: SettleInput) {
        match input {
            SettleInput::StreamHello { boot_id, last_seq, agents } => {
                self.pending_reconcile = None;
                // A tracker that never heard a runtime subscribed live-only: no replay follows,
                // so the snapshot is the state now (a pane it shows working works).
                let live_only = self.boot_id.is_none();
                if self.accept_generation(&boot_id, last_seq) {
                    if let (Some(through), Some(agents)) = (last_seq, agents) {
                        self.pending_reconcile = Some(PendingReconcile { boot_id, through, agents });
                        if live_only {
                            self.reconcile(now);
                        } else {
                            // Nothing to replay: the snapshot already follows the mark.
                            self.replay_reached(now, self.high_water);
                        }
                    }
                }
            }
            SettleInput::Event(event) => {
                // A live event: the replay is over, compare before applying it.
                if self.pending_reconcile.as_ref().is_some_and(|pending| event.seq > pending.through) {
                    self.reconcile(now);
                }
                let seq = event.seq;
                self.apply(event);
                self.replay_reached(now, seq);
            }
            SettleInput::StreamPosition { seq } => self.replay_reached(now, seq),
            SettleInput::LogIdentity { log_id, reset } => {
                if reset {
                    // The runtime replays its (new) log from the start: seqs begin again.
                    self.high_water = 0;
                    self.replay_through = None;
                }
                if log_id.is_some() {
                    self.log_id = log_id;
                }
            }
            SettleInput::Reconnected => {
                self.pending_reconcile = None;
                self.outputs.push_back(SettleOutput::Resubscribe { resume: self.resume_point() });
            }
        }
    }

    /// The next decision, if any.
    pub fn poll(&mut self) -> Option<SettleOutput> {
        self.outputs.pop_front()
    }

    /// A `hello` names the runtime generation speaking from now on; `false` when it was
    /// rejected as a retired one.
    fn accept_generation(&mut self, boot_id: &str, last_seq: Option<u64>) -> bool {
        if self.retired_boots.iter().any(|b| b == boot_id) {
            self.outputs.push_back(SettleOutput::StaleGenerationRejected { boot_id: boot_id.to_string() });
            return false;
        }
        // Every subscription starts with a hello; its horizon replaces the previous one.
        self.replay_through = last_seq;
        if self.boot_id.as_deref() == Some(boot_id) {
            return true;
        }
        if let Some(old) = self.boot_id.take() {
            self.retired_boots.push(old);
            if self.retired_boots.len() > RETIRED_BOOTS_KEPT {
                self.retired_boots.remove(0);
            }
        }
        // seq never repeats across runtime starts, so the high-water mark carries over.
        self.boot_id = Some(boot_id.to_string());
        self.outputs.push_back(SettleOutput::GenerationChanged { boot_id: boot_id.to_string() });
        true
    }

    /// The stream got to `seq`: once that covers the replay, compare the snapshot.
    fn replay_reached(&mut self, now: Millis, seq: u64) {
        if self.pending_reconcile.as_ref().is_some_and(|pending| seq >= pending.through) {
            self.reconcile(now);
        }
    }

    /// Settles every workspace still believed working that the `hello` snapshot shows with
    /// no pane working (its settle fell into a gap the replay could not cover). Once per
    /// subscription.
    fn reconcile(&mut self, now: Millis) {
        let Some(pending) = self.pending_reconcile.take() else {
            return;
        };
        let wake_seq = pending.through.max(self.high_water);
        // Panes the runtime says work that the replay never showed working (their working
        // event fell outside the retention): they work, so their later settle wakes.
        for agent in pending.agents.iter().filter(|a| a.settled.is_none()) {
            let workspace = self.workspaces.entry(agent.workspace_id.clone()).or_default();
            workspace.panes.insert(agent.pane_id.clone(), PaneState::Working);
            if !workspace.working {
                workspace.working = true;
                self.outputs.push_back(SettleOutput::ScopeWorking { workspace_id: agent.workspace_id.clone(), at: now });
            }
        }
        for (workspace_id, workspace) in &mut self.workspaces {
            if !workspace.working {
                continue;
            }
            let snapshot = || pending.agents.iter().filter(|a| &a.workspace_id == workspace_id);
            if snapshot().any(|agent| agent.settled.is_none()) {
                continue;
            }
            let mut any_gone = false;
            for (pane_id, state) in &mut workspace.panes {
                if *state != PaneState::Working {
                    continue;
                }
                match snapshot().find(|agent| &agent.pane_id == pane_id) {
                    Some(AgentSnapshot { settled: Some(status), .. }) => *state = PaneState::Settled(*status),
                    _ => any_gone = true,
                }
            }
            if any_gone {
                workspace.panes.retain(|_, state| *state != PaneState::Working);
            }
            workspace.working = false;
            let trigger = if any_gone { PaneEventKind::PaneRemoved } else { PaneEventKind::Settled(SettledStatus::Idle) };
            self.outputs.push_back(SettleOutput::ScopeSettled {
                workspace_id: workspace_id.clone(),
                wake_id: WakeId { boot_id: pending.boot_id.clone(), seq: wake_seq },
                outcome: outcome_of(workspace, trigger),
                at: now,
            });
        }
    }

    fn apply(&mut self, event: StreamEvent) {
        if event.seq <= self.high_water {
            return;
        }
        let replayed = self.replay_through.is_some_and(|through| event.seq <= through);
        if self.boot_id.as_deref() != Some(event.boot_id.as_str()) && !replayed {
            // Another generation claiming to be live: an old source (P9). It moves the mark
            // so it is not asked for again, but never changes state or wakes.
            self.high_water = event.seq;
            self.outputs.push_back(SettleOutput::StaleGenerationRejected { boot_id: event.boot_id });
            return;
        }
        self.high_water = event.seq;
        let workspace = self.workspaces.entry(event.workspace_id.clone()).or_default();
        match event.kind {
            PaneEventKind::Working => {
                workspace.panes.insert(event.pane_id.clone(), PaneState::Working);
            }
            PaneEventKind::Settled(status) => {
                workspace.panes.insert(event.pane_id.clone(), PaneState::Settled(status));
            }
            PaneEventKind::PaneRemoved => {
                workspace.panes.remove(&event.pane_id);
            }
        }
        let mut still_working = count_working(workspace);
        // A replay that lost events to retention: the hello's snapshot (the truth at the end
        // of the replay) may show a pane of this workspace working whose working event is
        // gone. Then this is not a full settle (P7): the pane works.
        if workspace.working && still_working == 0 {
            if let Some(pending) = self.pending_reconcile.as_ref().filter(|p| event.seq <= p.through) {
                for agent in pending.agents.iter().filter(|a| a.workspace_id == event.workspace_id && a.settled.is_none()) {
                    workspace.panes.insert(agent.pane_id.clone(), PaneState::Working);
                }
                still_working = count_working(workspace);
            }
        }
        if !workspace.working && still_working > 0 {
            workspace.working = true;
            self.outputs.push_back(SettleOutput::ScopeWorking { workspace_id: event.workspace_id, at: event.at });
        } else if workspace.working && still_working == 0 {
            workspace.working = false;
            let outcome = outcome_of(workspace, event.kind);
            self.outputs.push_back(SettleOutput::ScopeSettled {
                workspace_id: event.workspace_id,
                wake_id: WakeId { boot_id: event.boot_id, seq: event.seq },
                outcome,
                at: event.at,
            });
        } else if workspace.working && event.kind != PaneEventKind::Working {
            self.outputs.push_back(SettleOutput::PartialSettle { workspace_id: event.workspace_id, pane_id: event.pane_id, still_working });
        }
        // Otherwise: working while already working, or a settle of a settled scope.
    }
}

fn count_working(workspace: &WorkspaceActivity) -> u32 {
    let working = workspace.panes.values().filter(|p| **p == PaneState::Working).count();
    u32::try_from(working).unwrap_or(u32::MAX)
}

fn outcome_of(workspace: &WorkspaceActivity, trigger: PaneEventKind) -> SettleOutcome {
    let statuses = || {
        workspace.panes.values().filter_map(|p| match p {
            PaneState::Settled(status) => Some(*status),
            PaneState::Working => None,
        })
    };
    if statuses().any(|s| s == SettledStatus::Blocked) {
        SettleOutcome::Blocked
    } else if trigger == PaneEventKind::PaneRemoved {
        SettleOutcome::PaneGone
    } else if statuses().any(|s| s == SettledStatus::Done) {
        SettleOutcome::Done
    } else {
        SettleOutcome::Idle
    }
}

// Readers and writers of the persisted shapes (crate::json_read; the same shape serde writes).

impl ReadJson for PaneState {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        match f.tag("state")? {
            "working" => Ok(PaneState::Working),
            "settled" => Ok(PaneState::Settled(f.get("status")?)),
            _ => Err(unknown_variant("a known pane state")),
        }
    }
}

impl WriteJson for PaneState {
    fn write_json(&self) -> Value {
        match self {
            PaneState::Working => Object::tagged("state", "working"),
            PaneState::Settled(status) => Object::tagged("state", "settled").with("status", status),
        }
        .done()
    }
}

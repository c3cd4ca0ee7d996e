//! Goal mode of one scope (SPEC J7): while the user (or the planner) has set a goal for the
//! scope and Auto is on, an ended turn is continued when the evidence the runtime holds
//! says the goal's work is still open, and Goal mode stops — and says which evidence
//! decided — when it is not.
//!
//! The runtime answers the evidence (`goal.evidence`: the goal, its TODO items from Work
//! Memory, the scope's open inbox tasks, the bound workspace's state); the turn-end judge
//! may give five priors (`can_continue`, `needs_human`, `waiting_external`,
//! `task_completed`, `needs_handoff`). This machine combines them with the deterministic
//! guards; it does no IO.
//!
//! Driver contract: feed [`GoalInput::TurnEnded`] when a reply of the scope's chat ended
//! (with the guards' facts now), answer [`GoalOutput::FetchEvidence`] with
//! [`GoalInput::Evidence`] and [`GoalOutput::AskPriors`] with [`GoalInput::Priors`] (a
//! failed call as `None`: priors are advice and may be missing), feed
//! [`GoalInput::UserStopped`], [`GoalInput::HumanTurn`], [`GoalInput::AutoOff`] and
//! [`GoalInput::ContinueResolved`] as they happen, call [`GoalSupervisor::handle`] with
//! [`GoalInput::Tick`] when [`GoalSupervisor::next_deadline`] passes, and drain
//! [`GoalSupervisor::poll`].
//!
//! Invariants (transcript and property tests in `tests/it/goal_supervisor.rs`):
//! - Priors advise, evidence and guards decide: a prior never makes a continue and never
//!   blocks one; it only rides along in the HUD's line.
//! - Never continues when the evidence says the goal is done (its TODO items are all
//!   done, or nothing is open), when the evidence is missing, late or malformed (fail
//!   closed), or when a guard says no: no goal, Auto off, the user's Stop (until a human
//!   turn), queued messages first, a continue still out, a newer reply, the cooldown since the last
//!   continue, or `max_rounds` continues without a human turn.
//! - At most one continue per ended turn: a turn is decided once; a late or repeated
//!   answer for it is dropped.
//! - Every decision names the evidence or the guard that made it ([`GoalWhy`]).

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};
use crate::Millis;

/// How long the evidence (and the priors) may take before the turn is decided without
/// them: the evidence missing stops (fail closed), priors missing are no advice.
pub const ANSWER_TIMEOUT_MS: Millis = 30_000;
/// Least time between two goal continues of a scope.
pub const DEFAULT_COOLDOWN_MS: Millis = 20_000;
/// Default bound on goal continues without a human turn.
pub const DEFAULT_MAX_ROUNDS: u32 = 8;
/// Most rounds a setting may allow.
pub const MAX_MAX_ROUNDS: u32 = 30;
/// A goal's text is cut to this many characters (the runtime caps it too).
pub const GOAL_MAX_CHARS: usize = 500;

/// The state of the scope's bound workspace, as the runtime reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceState {
    /// An agent of the workspace is working: its wake will come.
    Working,
    /// Nothing runs.
    Idle,
    /// An agent waits for a human (a permission, a question).
    Blocked,
    /// Not bound, not reachable, or not known.
    #[default]
    Unknown,
}

/// What the runtime holds for the scope (`goal.evidence`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// The goal set for the scope, if any (the runtime is its truth).
    pub goal: Option<String>,
    /// The goal's TODO items still open.
    pub todo_open: u32,
    /// The goal's TODO items done.
    pub todo_done: u32,
    /// The scope's inbox tasks not yet terminal.
    pub open_tasks: u32,
    /// The bound workspace's state.
    pub workspace: WorkspaceState,
}

/// The five J7 priors as whole percents (each may be missing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Priors(pub Vec<(String, u8)>);

impl Priors {
    /// `name 40%, other 70%`, for the HUD (empty when none).
    pub fn line(&self) -> String {
        let mut out = String::new();
        for (name, percent) in &self.0 {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(name);
            out.push(' ');
            out.push_str(&percent.to_string());
            out.push('%');
        }
        out
    }
}

/// Inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalInput {
    /// The goal was set (HUD or planner); a new goal starts its rounds afresh.
    GoalSet {
        /// The goal's text.
        text: String,
    },
    /// The goal was cleared.
    GoalCleared,
    /// A reply of the scope's chat ended; the guards' facts now.
    TurnEnded {
        /// Auto is on for the scope.
        auto_on: bool,
        /// Messages are queued for the chat (they go first).
        queue_waiting: bool,
    },
    /// The runtime's evidence for `turn` (`Err`: the call failed or the answer was not
    /// valid; the text says why).
    Evidence {
        /// Which ended turn.
        turn: u64,
        /// The evidence.
        evidence: Result<Evidence, String>,
    },
    /// The judge's priors for `turn` (`None`: no route gave any, or the call failed).
    Priors {
        /// Which ended turn.
        turn: u64,
        /// The priors.
        priors: Option<Priors>,
    },
    /// The user pressed the page's Stop: nothing is continued until a human turn.
    UserStopped,
    /// The human wrote a turn: the Stop ends, the rounds start afresh.
    HumanTurn,
    /// Auto was switched off for the scope: a turn being decided is dropped.
    AutoOff,
    /// The goal continue's delivery ended (`confirmed`: it is in the thread).
    ContinueResolved {
        /// Whether it landed.
        confirmed: bool,
    },
    /// Time passed (the shell's timer at [`GoalSupervisor::next_deadline`]).
    Tick,
}

/// What decided, for the HUD: `goalWhy_<code>` with [`GoalDecision::args`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalWhy {
    /// Evidence: TODO items of the goal are open (`open`, `done`).
    TodosOpen {
        /// Open items.
        open: u32,
        /// Done items.
        done: u32,
    },
    /// Evidence: every TODO item of the goal is done.
    TodosDone {
        /// Done items.
        done: u32,
    },
    /// Evidence: no TODO item and no open task: nothing says work is open.
    NothingOpen,
    /// Evidence: inbox tasks are open and the workspace works; their wake comes.
    TasksRunning {
        /// Open tasks.
        open: u32,
    },
    /// Evidence: the workspace waits for a human.
    WorkspaceBlocked,
    /// Evidence missing, late or not valid (fail closed).
    EvidenceUnavailable {
        /// Why.
        error: String,
    },
    /// The runtime has no goal for the scope (cleared elsewhere).
    NoGoal,
    /// Guard: Auto is off.
    AutoOff,
    /// Guard: the user pressed Stop.
    UserStopped,
    /// Guard: queued messages go first.
    QueueFirst,
    /// Guard: a continue is out.
    Busy,
    /// A newer reply ended before this turn was decided.
    Superseded,
    /// Guard: `max` continues without a human turn.
    RoundLimit {
        /// The bound.
        max: u32,
    },
}

impl GoalWhy {
    /// The `_locales` code: `goalWhy_<code>`.
    pub fn code(&self) -> &'static str {
        match self {
            GoalWhy::TodosOpen { .. } => "todos_open",
            GoalWhy::TodosDone { .. } => "todos_done",
            GoalWhy::NothingOpen => "nothing_open",
            GoalWhy::TasksRunning { .. } => "tasks_running",
            GoalWhy::WorkspaceBlocked => "workspace_blocked",
            GoalWhy::EvidenceUnavailable { .. } => "evidence_unavailable",
            GoalWhy::NoGoal => "no_goal",
            GoalWhy::AutoOff => "auto_off",
            GoalWhy::UserStopped => "user_stopped",
            GoalWhy::QueueFirst => "queue_first",
            GoalWhy::Busy => "busy",
            GoalWhy::Superseded => "superseded",
            GoalWhy::RoundLimit { .. } => "round_limit",
        }
    }

    /// The `_locales` arguments of the code, in order.
    pub fn args(&self) -> Vec<String> {
        match self {
            GoalWhy::TodosOpen { open, done } => vec![open.to_string(), done.to_string()],
            GoalWhy::TodosDone { done } => vec![done.to_string()],
            GoalWhy::TasksRunning { open } => vec![open.to_string()],
            GoalWhy::EvidenceUnavailable { error } => vec![error.clone()],
            GoalWhy::RoundLimit { max } => vec![max.to_string()],
            _ => Vec::new(),
        }
    }
}

/// What Goal mode did with an ended turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalAction {
    /// One continue is sent.
    Continue,
    /// Goal mode stops here (the user's turn, or the goal is done).
    Stop,
}

/// A decision and what made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoalDecision {
    /// The ended turn.
    pub turn: u64,
    /// What is done.
    pub action: GoalAction,
    /// The evidence or guard that decided.
    pub why: GoalWhy,
    /// The priors, as advice only (may be empty).
    pub priors: Priors,
}

/// Outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalOutput {
    /// Ask the runtime's `goal.evidence` for the scope; answer with [`GoalInput::Evidence`].
    FetchEvidence {
        /// The ended turn.
        turn: u64,
    },
    /// Ask the judge for the priors; answer with [`GoalInput::Priors`].
    AskPriors {
        /// The ended turn.
        turn: u64,
    },
    /// A decision (a [`GoalAction::Continue`] is sent by the shell through the ledger and
    /// answered with [`GoalInput::ContinueResolved`]).
    Decided(GoalDecision),
}

/// A turn being decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Pending {
    turn: u64,
    /// Answers are awaited until then.
    deadline: Millis,
    evidence: Option<Result<Evidence, String>>,
    /// `Some(None)`: answered without priors.
    priors: Option<Option<Priors>>,
    /// Held by the cooldown until `deadline`; the evidence is asked afresh then.
    cooling: bool,
}

/// What of a scope's Goal mode outlives a worker restart besides the goal (B7, M7): the
/// bound on continues without a human turn, the cooldown, and the user's Stop hold across it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, WriteJson, ReadJson)]
pub struct GoalCounts {
    /// Continues since the goal was set or the last human turn.
    #[serde(default)]
    pub rounds: u32,
    /// When the last continue was decided.
    #[serde(default)]
    pub last_continue: Option<Millis>,
    /// The user's Stop holds until a human turn.
    #[serde(default)]
    pub stopped: bool,
    /// The conversation the goal belongs to (`<site>:<conversation id>`, where it was set
    /// or first picked up): in a ChatGPT Project the goal row is the Project's, and only
    /// this chat of it is continued. Kept by the driver; the machine does not read it.
    #[serde(default)]
    pub conversation: Option<String>,
}

/// Goal mode of one scope (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoalSupervisor {
    goal: Option<String>,
    /// Ended turns seen (the id of the next one is `turns + 1`).
    turns: u64,
    pending: Option<Pending>,
    /// A continue out.
    continuing: bool,
    /// Continues since the goal was set or the last human turn.
    rounds: u32,
    max_rounds: u32,
    cooldown_ms: Millis,
    /// When the last continue was decided.
    last_continue: Option<Millis>,
    /// The user's Stop holds until a human turn.
    stopped: bool,
    #[serde(skip)]
    outputs: Vec<GoalOutput>,
}

impl Default for GoalSupervisor {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_ROUNDS, DEFAULT_COOLDOWN_MS)
    }
}

impl GoalSupervisor {
    /// A machine with no goal, the bound `max_rounds` (clamped to 1..=[`MAX_MAX_ROUNDS`])
    /// and `cooldown_ms` between continues.
    pub fn new(max_rounds: u32, cooldown_ms: Millis) -> Self {
        Self {
            goal: None,
            turns: 0,
            pending: None,
            continuing: false,
            rounds: 0,
            max_rounds: max_rounds.clamp(1, MAX_MAX_ROUNDS),
            cooldown_ms,
            last_continue: None,
            stopped: false,
            outputs: Vec::new(),
        }
    }

    /// The goal in force, if any.
    pub fn goal(&self) -> Option<&str> {
        self.goal.as_deref()
    }

    /// Continues since the goal was set or the last human turn.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Whether a continue decided here still waits for [`GoalInput::ContinueResolved`].
    pub fn continuing(&self) -> bool {
        self.continuing
    }

    /// Whether the user's Stop holds.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The runtime's text of the goal in force (the planner may reword it): the text
    /// changes, the rounds go on (a rewording does not lift the bound). No goal in force,
    /// or an empty text, changes nothing.
    pub fn reword(&mut self, text: &str) {
        let text = crate::limits::clip(text.trim().to_owned(), GOAL_MAX_CHARS);
        if self.goal.is_some() && !text.is_empty() {
            self.goal = Some(text);
        }
    }

    /// What outlives a worker restart (see [`GoalCounts`]).
    pub fn counts(&self) -> GoalCounts {
        GoalCounts { rounds: self.rounds, last_continue: self.last_continue, stopped: self.stopped, conversation: None }
    }

    /// After a restart: the counts saved with the goal. A continue that was out is not
    /// known to have landed: it still counts (the bound errs towards fewer continues).
    pub fn restore_counts(&mut self, counts: &GoalCounts) {
        self.rounds = counts.rounds.min(self.max_rounds);
        self.last_continue = counts.last_continue;
        self.stopped = counts.stopped;
    }

    /// Feeds one input at `now`.
    pub fn handle(&mut self, now: Millis, input: GoalInput) {
        match input {
            GoalInput::GoalSet { text } => {
                let text = crate::limits::clip(text.trim().to_owned(), GOAL_MAX_CHARS);
                if text.is_empty() {
                    self.clear();
                } else {
                    if self.goal.as_deref() != Some(text.as_str()) {
                        self.rounds = 0;
                    }
                    self.goal = Some(text);
                }
            }
            GoalInput::GoalCleared => self.clear(),
            GoalInput::TurnEnded { auto_on, queue_waiting } => self.turn_ended(now, auto_on, queue_waiting),
            GoalInput::Evidence { turn, evidence } => {
                if let Some(pending) = self.pending.as_mut().filter(|p| p.turn == turn && p.evidence.is_none() && !p.cooling) {
                    pending.evidence = Some(evidence);
                    self.try_decide(now, false);
                }
            }
            GoalInput::Priors { turn, priors } => {
                if let Some(pending) = self.pending.as_mut().filter(|p| p.turn == turn && p.priors.is_none()) {
                    pending.priors = Some(priors);
                    self.try_decide(now, false);
                }
            }
            GoalInput::UserStopped => {
                self.stopped = true;
                self.drop_pending(GoalWhy::UserStopped);
            }
            GoalInput::HumanTurn => {
                self.stopped = false;
                self.rounds = u32::from(self.continuing);
                // The human spoke: a turn being decided is theirs now, not ours to continue.
                self.pending = None;
            }
            GoalInput::AutoOff => self.drop_pending(GoalWhy::AutoOff),
            GoalInput::ContinueResolved { confirmed } => {
                if std::mem::take(&mut self.continuing) && !confirmed {
                    // It did not land: it does not count against the bound.
                    self.rounds = self.rounds.saturating_sub(1);
                }
            }
            GoalInput::Tick => {
                let Some(pending) = self.pending.as_mut().filter(|p| now >= p.deadline) else { return };
                if pending.cooling {
                    // The cooldown is over: the evidence of now decides, not that of then.
                    pending.cooling = false;
                    pending.deadline = now.saturating_add(ANSWER_TIMEOUT_MS);
                    let turn = pending.turn;
                    self.outputs.push(GoalOutput::FetchEvidence { turn });
                } else {
                    self.try_decide(now, true);
                }
            }
        }
    }

    fn clear(&mut self) {
        self.goal = None;
        self.pending = None;
        self.rounds = 0;
    }

    /// A turn being decided ends with `why` (a Stop).
    fn drop_pending(&mut self, why: GoalWhy) {
        if let Some(pending) = self.pending.take() {
            let priors = pending.priors.flatten().unwrap_or_default();
            self.outputs.push(GoalOutput::Decided(GoalDecision { turn: pending.turn, action: GoalAction::Stop, why, priors }));
        }
    }

    fn stop_now(&mut self, turn: u64, why: GoalWhy) {
        self.outputs.push(GoalOutput::Decided(GoalDecision { turn, action: GoalAction::Stop, why, priors: Priors::default() }));
    }

    fn turn_ended(&mut self, now: Millis, auto_on: bool, queue_waiting: bool) {
        if self.goal.is_none() {
            return;
        }
        // A newer reply ended: a turn still being decided is not the page's last any more.
        self.drop_pending(GoalWhy::Superseded);
        self.turns += 1;
        let turn = self.turns;
        let guard = if !auto_on {
            Some(GoalWhy::AutoOff)
        } else if self.stopped {
            Some(GoalWhy::UserStopped)
        } else if queue_waiting {
            Some(GoalWhy::QueueFirst)
        } else if self.continuing {
            Some(GoalWhy::Busy)
        } else if self.rounds >= self.max_rounds {
            Some(GoalWhy::RoundLimit { max: self.max_rounds })
        } else {
            None
        };
        if let Some(why) = guard {
            self.stop_now(turn, why);
            return;
        }
        self.pending =
            Some(Pending { turn, deadline: now.saturating_add(ANSWER_TIMEOUT_MS), evidence: None, priors: None, cooling: false });
        self.outputs.push(GoalOutput::FetchEvidence { turn });
        self.outputs.push(GoalOutput::AskPriors { turn });
    }

    /// Decides the pending turn when its answers are in (or `late`: its deadline passed),
    /// and the cooldown since the last continue is over.
    fn try_decide(&mut self, now: Millis, late: bool) {
        let Some(pending) = self.pending.as_ref().filter(|p| !p.cooling) else { return };
        let answered = pending.evidence.is_some() && pending.priors.is_some();
        let evidence_is_stop = matches!(&pending.evidence, Some(Err(_)));
        if !answered && !late && !evidence_is_stop {
            return;
        }
        let cooling = self.last_continue.map(|at| at.saturating_add(self.cooldown_ms)).filter(|&until| now < until);
        let Some(pending) = self.pending.take() else { return };
        let priors = pending.priors.clone().flatten().unwrap_or_default();
        let why = match &pending.evidence {
            None => GoalWhy::EvidenceUnavailable { error: "the runtime did not answer in time".to_owned() },
            Some(Err(error)) => GoalWhy::EvidenceUnavailable { error: error.clone() },
            Some(Ok(evidence)) => Self::judge_evidence(evidence),
        };
        if let GoalWhy::NoGoal = why {
            self.goal = None;
        }
        let wants_continue = matches!(why, GoalWhy::TodosOpen { .. });
        if wants_continue {
            if let Some(until) = cooling {
                // The cooldown holds the continue back; the evidence is asked again then.
                self.pending =
                    Some(Pending { turn: pending.turn, deadline: until, evidence: None, priors: Some(Some(priors)), cooling: true });
                return;
            }
        }
        let action = if wants_continue { GoalAction::Continue } else { GoalAction::Stop };
        if action == GoalAction::Continue {
            self.rounds += 1;
            self.continuing = true;
            self.last_continue = Some(now);
        }
        self.outputs.push(GoalOutput::Decided(GoalDecision { turn: pending.turn, action, why, priors }));
    }

    /// What the evidence says: the only way to a continue is open TODO items of the goal.
    fn judge_evidence(evidence: &Evidence) -> GoalWhy {
        if evidence.goal.as_deref().is_none_or(|g| g.trim().is_empty()) {
            return GoalWhy::NoGoal;
        }
        if evidence.workspace == WorkspaceState::Blocked {
            return GoalWhy::WorkspaceBlocked;
        }
        if evidence.todo_open == 0 && evidence.todo_done > 0 {
            return GoalWhy::TodosDone { done: evidence.todo_done };
        }
        if evidence.todo_open > 0 {
            if evidence.open_tasks > 0 && evidence.workspace == WorkspaceState::Working {
                return GoalWhy::TasksRunning { open: evidence.open_tasks };
            }
            return GoalWhy::TodosOpen { open: evidence.todo_open, done: evidence.todo_done };
        }
        if evidence.open_tasks > 0 {
            return GoalWhy::TasksRunning { open: evidence.open_tasks };
        }
        GoalWhy::NothingOpen
    }

    /// When [`GoalInput::Tick`] is due: the pending turn's deadline (or cooldown's end).
    pub fn next_deadline(&self) -> Option<Millis> {
        self.pending.as_ref().map(|p| p.deadline)
    }

    /// The next output, if any.
    pub fn poll(&mut self) -> Option<GoalOutput> {
        if self.outputs.is_empty() {
            None
        } else {
            Some(self.outputs.remove(0))
        }
    }
}

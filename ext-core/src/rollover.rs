//! Auto rollover (SPEC R2): whether a Project conversation may hand itself over to a new
//! one without the user pressing Handoff.
//!
//! High context pressure, or the conversation's recovery budgets spent (`crate::recovery`:
//! the page cannot be recovered in place), only *allows* a rollover. Every other condition
//! must hold too, and each one that does not is named, so the HUD can say why nothing
//! happened:
//! - a pressure reading at the `auto` level or above (no reading: no rollover, fail closed),
//!   unless the recovery budgets are spent;
//! - a ChatGPT Project conversation (a handoff opens the new chat in the same Project);
//! - the Project's Auto on;
//! - the bound workspace (if any) not working;
//! - no reply streaming, no tool running, no permission card shown;
//! - no unsent human draft in the composer;
//! - no delivery whose outcome is uncertain;
//! - the journal holds every ended turn of the conversation (none waits in the outbox: the
//!   handoff's package is built from the journal, and would miss the newest turns);
//! - no other handoff of the Project in flight;
//! - the page is the Project's active target (a stale source tab, left open after a
//!   cut-over, never starts a second rollover);
//! - this conversation never started one before ([`Rollovers`] remembers the sources,
//!   persisted: a failed or abandoned rollover is not retried by itself; the user's
//!   Handoff button still works).
//!
//! Invariants (tests in `tests/it/rollover.rs`, a property test among them):
//! - `Ok` only when every condition above holds;
//! - adding a blocker never turns a refusal into `Ok`;
//! - a conversation starts at most one automatic rollover, whatever follows.

use crate::context_pressure::PressureLevel;
use crate::json_read::{ReadJson, WriteJson};

/// What the composition knows of one page when it asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RolloverFacts {
    /// The page's pressure level (`None`: the page reported no turns).
    pub level: Option<PressureLevel>,
    /// A ChatGPT Project conversation.
    pub project: bool,
    /// The Project's Auto is on.
    pub auto_on: bool,
    /// A pane of the bound workspace works.
    pub workspace_working: bool,
    /// A reply streams.
    pub streaming: bool,
    /// A tool runs in the reply.
    pub tool_running: bool,
    /// A permission card is shown.
    pub permission_card: bool,
    /// The user has a draft in the composer.
    pub human_draft: bool,
    /// A delivery's outcome is uncertain.
    pub delivery_uncertain: bool,
    /// Ended turns of the conversation wait to be written to the journal.
    pub journal_behind: bool,
    /// A handoff of the Project is in flight.
    pub handoff_in_flight: bool,
    /// The page is the Project's active target.
    pub active_target: bool,
    /// The conversation's recovery budgets are spent (stands for the pressure condition).
    pub recovery_spent: bool,
}

/// Why an automatic rollover does not start (a stable code for the HUD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RolloverBlocker {
    /// The page reported no turns: no reading, no rollover.
    NoReading,
    /// The pressure is below the `auto` level.
    PressureBelowAuto,
    /// Not a Project conversation.
    NotProject,
    /// The Project's Auto is off.
    AutoOff,
    /// The bound workspace works.
    WorkspaceWorking,
    /// A reply streams or a tool runs.
    Busy,
    /// A permission card waits.
    PermissionCard,
    /// The user is typing.
    HumanDraft,
    /// A delivery's outcome is uncertain.
    DeliveryUncertain,
    /// Turns of the conversation are not in the journal yet.
    JournalBehind,
    /// Another handoff of the Project is in flight.
    HandoffInFlight,
    /// The page is not the Project's active target (a stale source).
    NotActiveTarget,
    /// This conversation started a rollover before.
    AlreadyStarted,
}

impl RolloverBlocker {
    /// Every blocker (tests check each has its HUD texts).
    pub const ALL: [RolloverBlocker; 13] = [
        Self::NoReading,
        Self::PressureBelowAuto,
        Self::NotProject,
        Self::AutoOff,
        Self::WorkspaceWorking,
        Self::Busy,
        Self::PermissionCard,
        Self::HumanDraft,
        Self::DeliveryUncertain,
        Self::JournalBehind,
        Self::HandoffInFlight,
        Self::NotActiveTarget,
        Self::AlreadyStarted,
    ];

    /// The HUD's reason code.
    pub fn code(self) -> &'static str {
        match self {
            Self::NoReading => "no_reading",
            Self::PressureBelowAuto => "pressure_below_auto",
            Self::NotProject => "not_project",
            Self::AutoOff => "auto_off",
            Self::WorkspaceWorking => "workspace_working",
            Self::Busy => "busy",
            Self::PermissionCard => "permission_card",
            Self::HumanDraft => "human_draft",
            Self::DeliveryUncertain => "delivery_uncertain",
            Self::JournalBehind => "journal_behind",
            Self::HandoffInFlight => "handoff_in_flight",
            Self::NotActiveTarget => "not_active_target",
            Self::AlreadyStarted => "already_started",
        }
    }
}

/// The first condition of R2 that does not hold, or `Ok` when a rollover may start.
/// Checks run in a fixed order, so the HUD names the same reason for the same facts.
pub fn check(facts: &RolloverFacts) -> Result<(), RolloverBlocker> {
    use RolloverBlocker as B;
    if !facts.recovery_spent && facts.level.ok_or(B::NoReading)? < PressureLevel::Auto {
        return Err(B::PressureBelowAuto);
    }
    // One `if` per condition (an array of (refused, blocker) pairs searched costs more code).
    let blocker = if !facts.project {
        B::NotProject
    } else if !facts.auto_on {
        B::AutoOff
    } else if facts.workspace_working {
        B::WorkspaceWorking
    } else if facts.streaming || facts.tool_running {
        B::Busy
    } else if facts.permission_card {
        B::PermissionCard
    } else if facts.human_draft {
        B::HumanDraft
    } else if facts.delivery_uncertain {
        B::DeliveryUncertain
    } else if facts.journal_behind {
        B::JournalBehind
    } else if facts.handoff_in_flight {
        B::HandoffInFlight
    } else if !facts.active_target {
        B::NotActiveTarget
    } else {
        return Ok(());
    };
    Err(blocker)
}

/// The conversations that started an automatic rollover (persist with the snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, ReadJson, WriteJson)]
pub struct Rollovers {
    /// Oldest first.
    #[serde(default)]
    started: Vec<String>,
}

// Persisted in the handoff's book (`continuity::handoff::HandoffBook`).

/// At most this many sources are remembered; the one that started longest ago goes first.
/// A conversation forgotten this way is one whose Project moved on long ago: its tab, if
/// still open, is not the active target, which blocks it too.
pub const MAX_ROLLOVER_SOURCES: usize = 256;

impl Rollovers {
    /// Restores the remembered sources.
    pub fn from_sources(sources: impl IntoIterator<Item = String>) -> Self {
        let mut this = Self::default();
        for source in sources {
            this.remember(source);
        }
        this
    }

    /// The remembered sources, oldest first.
    pub fn sources(&self) -> impl Iterator<Item = &String> {
        self.started.iter()
    }

    /// Whether `conversation` started an automatic rollover.
    pub fn started(&self, conversation: &str) -> bool {
        self.started.iter().any(|s| s == conversation)
    }

    /// Whether `conversation` may start an automatic rollover now; on `Ok` it is
    /// remembered, so it never starts a second one.
    pub fn try_start(&mut self, conversation: &str, facts: &RolloverFacts) -> Result<(), RolloverBlocker> {
        if self.started(conversation) {
            return Err(RolloverBlocker::AlreadyStarted);
        }
        check(facts)?;
        self.remember(conversation.to_owned());
        Ok(())
    }

    fn remember(&mut self, conversation: String) {
        if self.started.contains(&conversation) {
            return;
        }
        if self.started.len() >= MAX_ROLLOVER_SOURCES {
            self.started.remove(0);
        }
        self.started.push(conversation);
    }
}

//! Handoff of a ChatGPT Project's conversation to a new one (SPEC X1–X8, B8, C2, Q9): the
//! old conversation stays authoritative until the new one is confirmed.
//!
//! One transfer, step by step (each step waits for evidence, never for time alone):
//! 1. [`HandoffInput::Start`] from the HUD (X1) — refused while the bound workspace works
//!    (X2) or another transfer of the Project is in flight; the source's automatic wakes
//!    pause ([`HandoffOutput::PauseSource`]).
//! 2. The machine looks the chain up by the source conversation and so confirms it live
//!    (C2: `continuity.resolve {conversation_id}`), then the runtime's
//!    read-only `herdr_mcp.browser_handoff.prepare` returns the package (X4). A failure of
//!    either fails the transfer and keeps the source and its full URL (X5): nothing asks a
//!    chat or an LLM for a summary.
//! 3. A new conversation is opened in the same Project ([`HandoffOutput::OpenNewChat`]) and
//!    the package's message is submitted through the delivery ledger as the seed.
//! 4. Cut-over ([`HandoffOutput::CutOver`]: the Project's active target switches, never its
//!    binding or continuity id, B8) only when the new conversation's id **and** the seed's
//!    confirmation are both known (X6). Unsent queue items move with it, in order (Q9).
//! 5. An uncertain seed keeps the old target and a recoverable state (X7); "Resume handoff"
//!    probes the target: seed present → cut over, absent → the seed goes again.
//!
//! Copy Prompt (X8): when browser control is confirmed unavailable — no tab could be opened,
//! or the seed certainly did not land twice (the page refused it both times) — the package's
//! `copy_prompt` (byte-identical to the automatic message) is offered instead; never while a
//! seed is uncertain or any mutation of the transfer is uncertain.
//!
//! Invariants (property test in `tests/it/handoff.rs`): cut-over never precedes both
//! confirmations; at most one transfer per Project; Copy Prompt is never offered after a
//! seed was sent and not confirmed failed; a failed transfer leaves the source target.
//!
//! Driver contract: feed inputs with [`Handoff::handle`] (a refused `Start` returns the
//! refusal and changes nothing), then drain [`Handoff::poll`] until `None`; no timers (every
//! step waits for evidence). Persist it with its Project (`crate::json_read` writer and
//! reader): `continuity/handoff` drives it.

use serde::Serialize;

/// What the runtime's `browser_handoff.prepare` returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson, ReadJson)]
pub struct Package {
    /// The transfer's id (in the seed's marker subject).
    pub transfer_id: String,
    /// The journal chain.
    pub continuity_id: String,
    /// The source conversation's full URL.
    pub source_url: String,
    /// `automatic_delivery.params.message`.
    pub message: String,
    /// `manual_delivery.copy_prompt` (the same bytes).
    pub copy_prompt: String,
}

/// Why a transfer did not go ahead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum HandoffRefusal {
    /// A pane of the bound workspace works (X2).
    WorkspaceWorking,
    /// Another transfer of this Project is in flight.
    InFlight,
    /// A message of ours to the source is still on its way (the composition refuses the
    /// Start: its fate decides whether it is queued again, before the cut-over moves the
    /// queue, Q9).
    DeliveryInFlight,
    /// Not a ChatGPT or z.ai conversation (X3, X10).
    NoContinuity,
    /// The conversation was handed over already and is no longer its scope's target: a
    /// second transfer from it would fork the chain (its HUD names the new conversation).
    Retired,
    /// The journal or the live confirmation failed (X5).
    JournalUnavailable {
        /// What the runtime said.
        detail: String,
    },
    /// The package is not usable (its two messages differ, or it is empty).
    BadPackage,
    /// The seed certainly did not land and its retry was spent.
    SeedFailed,
}

/// Where a transfer stands (persist it with the Project).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum HandoffState {
    /// Nothing in flight.
    Idle,
    /// Looking the chain up by the source conversation, live (C2).
    Confirming {
        /// The source conversation.
        conversation_id: String,
        /// The source's full URL.
        source_url: String,
    },
    /// Waiting for the package.
    Preparing {
        /// The chain.
        continuity_id: String,
        /// The source's full URL.
        source_url: String,
    },
    /// The new conversation is being opened.
    Opening {
        /// The package.
        package: Package,
        /// Its id once the page shows one.
        new_conversation: Option<String>,
    },
    /// The seed is on its way.
    Seeding {
        /// The package.
        package: Package,
        /// The new conversation, once known.
        new_conversation: Option<String>,
        /// The seed's confirmation came.
        seed_confirmed: bool,
        /// Seeds sent (at most two: the first and one retry after a certain failure).
        attempts: u8,
    },
    /// The seed may or may not have landed: recoverable by "Resume handoff" (X7).
    SeedUncertain {
        /// The package.
        package: Package,
        /// The new conversation, if known.
        new_conversation: Option<String>,
    },
    /// Browser control is unavailable: the user pastes the prompt (X8).
    CopyPrompt {
        /// The package.
        package: Package,
    },
    /// Done: the target is the new conversation.
    Done {
        /// The new conversation.
        new_conversation: String,
    },
    /// Failed; the source stays the target (X5).
    Failed {
        /// Why.
        reason: HandoffRefusal,
        /// The source's full URL, to go back to.
        source_url: String,
    },
}

/// Inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandoffInput {
    /// The HUD's Handoff button (X1).
    Start {
        /// The source conversation (its chain is looked up live, C2).
        conversation_id: String,
        /// The source's full URL.
        source_url: String,
        /// A pane of the bound workspace works now.
        workspace_working: bool,
    },
    /// `continuity.resolve` confirmed the conversation's chain (its `continuity_id`), or
    /// failed (what the runtime said).
    Confirmed(Result<String, String>),
    /// `browser_handoff.prepare` answered.
    Prepared(Result<Package, String>),
    /// Browser control is confirmed unavailable (no new tab could be opened).
    BrowserControlUnavailable,
    /// The new chat's page is ready for the seed (a Project's new chat has no id until
    /// its first message is sent).
    TargetReady,
    /// The new conversation's page shows its id.
    NewConversation {
        /// Its id.
        conversation_id: String,
    },
    /// The seed's delivery ended.
    Seed(SeedOutcome),
    /// "Resume handoff": what the target shows now.
    Resume {
        /// The seed's marker is in the target's thread.
        seed_present: bool,
    },
}

/// How the seed's delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeedOutcome {
    /// Its marker is in a new user turn.
    Confirmed,
    /// It certainly did not land (not sent, lost).
    NotSent,
    /// No evidence either way.
    Uncertain,
}

/// Outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandoffOutput {
    /// Pause the source's automatic wakes (X2).
    PauseSource,
    /// Resume them (the transfer ended without a cut-over).
    ResumeSource,
    /// Call `continuity.resolve` for the source conversation (C2).
    Confirm {
        /// The source conversation.
        conversation_id: String,
    },
    /// Call `herdr_mcp.browser_handoff.prepare`.
    Prepare {
        /// The chain.
        continuity_id: String,
    },
    /// Open a new conversation in the Project.
    OpenNewChat,
    /// Send the seed through the delivery ledger (subject `handoff:<transfer id>`).
    SendSeed {
        /// The subject.
        subject: String,
        /// The message.
        text: String,
    },
    /// Switch the Project's active target to `new_conversation` and move the source's
    /// unsent queue items there, in order (B8, Q9).
    CutOver {
        /// The new conversation.
        new_conversation: String,
    },
}

/// The handoff of one Project (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson)]
pub struct Handoff {
    state: HandoffState,
    #[serde(skip)]
    outputs: Vec<HandoffOutput>,
}

impl Default for Handoff {
    fn default() -> Self {
        Self { state: HandoffState::Idle, outputs: Vec::new() }
    }
}

impl Handoff {
    /// Where the transfer stands.
    pub fn state(&self) -> &HandoffState {
        &self.state
    }

    /// A transfer is in flight (the Project's other automation waits).
    pub fn in_flight(&self) -> bool {
        !matches!(self.state, HandoffState::Idle | HandoffState::Done { .. } | HandoffState::Failed { .. })
    }

    /// The Copy Prompt text, when it may be offered (X8).
    pub fn copy_prompt(&self) -> Option<&str> {
        match &self.state {
            HandoffState::CopyPrompt { package } => Some(&package.copy_prompt),
            _ => None,
        }
    }

    /// The next output.
    pub fn poll(&mut self) -> Option<HandoffOutput> {
        (!self.outputs.is_empty()).then(|| self.outputs.remove(0))
    }

    /// Feeds one input; `Err` when a Start is refused.
    pub fn handle(&mut self, input: HandoffInput) -> Result<(), HandoffRefusal> {
        let state = std::mem::replace(&mut self.state, HandoffState::Idle);
        let (next, result) = self.step(state, input);
        self.state = next;
        result
    }

    fn fail(&mut self, reason: HandoffRefusal, source_url: String) -> HandoffState {
        self.outputs.push(HandoffOutput::ResumeSource);
        HandoffState::Failed { reason, source_url }
    }

    fn seed(&mut self, package: Package, new_conversation: Option<String>, attempts: u8) -> HandoffState {
        self.outputs.push(HandoffOutput::SendSeed {
            subject: crate::text::concat(&["handoff:", &package.transfer_id]),
            text: package.message.clone(),
        });
        HandoffState::Seeding { package, new_conversation, seed_confirmed: false, attempts }
    }

    /// Cut over if both confirmations are in.
    fn maybe_cut_over(&mut self, package: Package, new_conversation: Option<String>, seed_confirmed: bool, attempts: u8) -> HandoffState {
        match new_conversation {
            Some(new_conversation) if seed_confirmed => {
                self.outputs.push(HandoffOutput::CutOver { new_conversation: new_conversation.clone() });
                HandoffState::Done { new_conversation }
            }
            new_conversation => HandoffState::Seeding { package, new_conversation, seed_confirmed, attempts },
        }
    }

    fn step(&mut self, state: HandoffState, input: HandoffInput) -> (HandoffState, Result<(), HandoffRefusal>) {
        use HandoffInput as I;
        use HandoffState as S;
        match (state, input) {
            (state, I::Start { .. }) if !matches!(state, S::Idle | S::Done { .. } | S::Failed { .. }) => {
                (state, Err(HandoffRefusal::InFlight))
            }
            (state, I::Start { workspace_working: true, .. }) => (state, Err(HandoffRefusal::WorkspaceWorking)),
            (state, I::Start { conversation_id, .. }) if conversation_id.is_empty() => (state, Err(HandoffRefusal::NoContinuity)),
            (_, I::Start { conversation_id, source_url, .. }) => {
                self.outputs.push(HandoffOutput::PauseSource);
                self.outputs.push(HandoffOutput::Confirm { conversation_id: conversation_id.clone() });
                (S::Confirming { conversation_id, source_url }, Ok(()))
            }
            (S::Confirming { source_url, .. }, I::Confirmed(Ok(continuity_id))) => {
                self.outputs.push(HandoffOutput::Prepare { continuity_id: continuity_id.clone() });
                (S::Preparing { continuity_id, source_url }, Ok(()))
            }
            (S::Confirming { source_url, .. }, I::Confirmed(Err(detail))) | (S::Preparing { source_url, .. }, I::Prepared(Err(detail))) => {
                (self.fail(HandoffRefusal::JournalUnavailable { detail }, source_url), Ok(()))
            }
            (S::Preparing { .. }, I::Prepared(Ok(package))) => {
                if package.message.trim().is_empty() || package.message != package.copy_prompt {
                    let url = package.source_url.clone();
                    return (self.fail(HandoffRefusal::BadPackage, url), Ok(()));
                }
                self.outputs.push(HandoffOutput::OpenNewChat);
                (S::Opening { package, new_conversation: None }, Ok(()))
            }
            // Confirmed unavailable before anything was sent: the same bytes to paste.
            (S::Opening { package, .. }, I::BrowserControlUnavailable) => (S::CopyPrompt { package }, Ok(())),
            // The new chat's composer is ready (on ChatGPT the id appears after the first
            // message): the seed goes now; the id may come before or after its confirmation.
            (S::Opening { package, new_conversation }, I::TargetReady) => (self.seed(package, new_conversation, 1), Ok(())),
            (S::Opening { package, .. }, I::NewConversation { conversation_id }) => (self.seed(package, Some(conversation_id), 1), Ok(())),
            (S::Seeding { package, seed_confirmed, attempts, .. }, I::NewConversation { conversation_id }) => {
                (self.maybe_cut_over(package, Some(conversation_id), seed_confirmed, attempts), Ok(()))
            }
            (S::Seeding { package, new_conversation, attempts, .. }, I::Seed(SeedOutcome::Confirmed)) => {
                (self.maybe_cut_over(package, new_conversation, true, attempts), Ok(()))
            }
            (S::Seeding { package, new_conversation, attempts, .. }, I::Seed(SeedOutcome::NotSent)) if attempts < 2 => {
                (self.seed(package, new_conversation, attempts + 1), Ok(()))
            }
            // It certainly did not land twice: the page will not take it from the extension,
            // so browser control is confirmed unavailable — the same bytes to paste (X8).
            (S::Seeding { package, .. }, I::Seed(SeedOutcome::NotSent)) => (S::CopyPrompt { package }, Ok(())),
            (S::Seeding { package, new_conversation, .. }, I::Seed(SeedOutcome::Uncertain)) => {
                (S::SeedUncertain { package, new_conversation }, Ok(()))
            }
            (S::SeedUncertain { package, new_conversation }, I::NewConversation { conversation_id }) if new_conversation.is_none() => {
                (S::SeedUncertain { package, new_conversation: Some(conversation_id) }, Ok(()))
            }
            (S::SeedUncertain { package, new_conversation: Some(id) }, I::Resume { seed_present: true }) => {
                (self.maybe_cut_over(package, Some(id), true, 2), Ok(()))
            }
            (S::SeedUncertain { package, new_conversation }, I::Resume { seed_present: false }) => {
                (self.seed(package, new_conversation, 2), Ok(()))
            }
            // Anything else changes nothing (late or repeated answers).
            (state, _) => (state, Ok(())),
        }
    }
}

impl crate::json_read::ReadJson for HandoffRefusal {
    fn read_json(value: &serde_json::Value) -> Result<Self, crate::json_read::ReadError> {
        let f = crate::json_read::Fields::of(value)?;
        match f.tag("why")? {
            "workspace_working" => Ok(Self::WorkspaceWorking),
            "in_flight" => Ok(Self::InFlight),
            "delivery_in_flight" => Ok(Self::DeliveryInFlight),
            "no_continuity" => Ok(Self::NoContinuity),
            "journal_unavailable" => Ok(Self::JournalUnavailable { detail: f.get("detail")? }),
            "bad_package" => Ok(Self::BadPackage),
            "seed_failed" => Ok(Self::SeedFailed),
            _ => Err(crate::json_read::unknown_variant("a known handoff refusal")),
        }
    }
}

impl crate::json_read::ReadJson for HandoffState {
    fn read_json(value: &serde_json::Value) -> Result<Self, crate::json_read::ReadError> {
        let f = crate::json_read::Fields::of(value)?;
        Ok(match f.tag("step")? {
            "idle" => Self::Idle,
            "confirming" => Self::Confirming { conversation_id: f.get("conversation_id")?, source_url: f.get("source_url")? },
            "preparing" => Self::Preparing { continuity_id: f.get("continuity_id")?, source_url: f.get("source_url")? },
            "opening" => Self::Opening { package: f.get("package")?, new_conversation: f.get("new_conversation")? },
            "seeding" => Self::Seeding {
                package: f.get("package")?,
                new_conversation: f.get("new_conversation")?,
                seed_confirmed: f.get("seed_confirmed")?,
                attempts: f.get::<u32>("attempts")?.min(u32::from(u8::MAX)) as u8,
            },
            "seed_uncertain" => Self::SeedUncertain { package: f.get("package")?, new_conversation: f.get("new_conversation")? },
            "copy_prompt" => Self::CopyPrompt { package: f.get("package")? },
            "done" => Self::Done { new_conversation: f.get("new_conversation")? },
            "failed" => Self::Failed { reason: f.get("reason")?, source_url: f.get("source_url")? },
            _ => return Err(crate::json_read::unknown_variant("a known handoff step")),
        })
    }
}

use crate::json_read::{Object, ReadJson, WriteJson};

impl WriteJson for HandoffRefusal {
    fn write_json(&self) -> serde_json::Value {
        let object = Object::tagged("why", self.code());
        match self {
            Self::JournalUnavailable { detail } => object.with("detail", detail).done(),
            _ => object.done(),
        }
    }
}

impl HandoffRefusal {
    /// The refusal's wire name (its `_locales` texts are `handoffFailed_<code>`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::WorkspaceWorking => "workspace_working",
            Self::InFlight => "in_flight",
            Self::DeliveryInFlight => "delivery_in_flight",
            Self::NoContinuity => "no_continuity",
            Self::Retired => "retired",
            Self::JournalUnavailable { .. } => "journal_unavailable",
            Self::BadPackage => "bad_package",
            Self::SeedFailed => "seed_failed",
        }
    }
}

impl HandoffState {
    /// The step's wire name.
    pub fn step(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Confirming { .. } => "confirming",
            Self::Preparing { .. } => "preparing",
            Self::Opening { .. } => "opening",
            Self::Seeding { .. } => "seeding",
            Self::SeedUncertain { .. } => "seed_uncertain",
            Self::CopyPrompt { .. } => "copy_prompt",
            Self::Done { .. } => "done",
            Self::Failed { .. } => "failed",
        }
    }
}

impl WriteJson for HandoffState {
    fn write_json(&self) -> serde_json::Value {
        let object = Object::tagged("step", self.step());
        match self {
            Self::Idle => object.done(),
            Self::Confirming { conversation_id, source_url } => {
                object.with("conversation_id", conversation_id).with("source_url", source_url).done()
            }
            Self::Preparing { continuity_id, source_url } => {
                object.with("continuity_id", continuity_id).with("source_url", source_url).done()
            }
            Self::Opening { package, new_conversation } | Self::SeedUncertain { package, new_conversation } => {
                object.with("package", package).with("new_conversation", new_conversation).done()
            }
            Self::Seeding { package, new_conversation, seed_confirmed, attempts } => object
                .with("package", package)
                .with("new_conversation", new_conversation)
                .with("seed_confirmed", seed_confirmed)
                .with("attempts", &u32::from(*attempts))
                .done(),
            Self::CopyPrompt { package } => object.with("package", package).done(),
            Self::Done { new_conversation } => object.with("new_conversation", new_conversation).done(),
            Self::Failed { reason, source_url } => object.with("reason", reason).with("source_url", source_url).done(),
        }
    }
}

impl WriteJson for Handoff {
    fn write_json(&self) -> serde_json::Value {
        Object::default().with("state", &self.state).done()
    }
}

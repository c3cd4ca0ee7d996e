//! The Activity timeline's entries (issue 13, SPEC O1): every automatic action the
//! continuity loop took or withheld, as [`ContinuityOutput::Activity`] — the scope, what
//! ([`ActivityKind`]), how it went ([`ActivityOutcome`]), why (a short stable snake_case
//! code, [`ActivityReason`]) and the delivery id when there is one. The shell stamps the
//! time and stores it (`extension/activity-log.js`); the side panel turns each code into
//! text from `_locales`. No human-readable text is made here.
//!
//! Recorded: a wake or inbox wake and a progress / fallback message the scheduler offered
//! (`sent`) and how its delivery ended (`confirmed` by its marker, `failed` when it
//! certainly did not land, `not_confirmed` when it was given up without evidence); a wake
//! held back (`withheld`, with the gate's [`WakeWithheld`] code); a queue batch; a judge
//! continue, or a `continue` verdict that could not be sent (Auto switched off meanwhile,
//! the user's queued turn first, the page not free); a recovery reload or Retry; the
//! JSON bridge's calls awaiting approval (`withheld`), a Run (`sent`) or Skip (`withheld`)
//! the user pressed, its round limit reached (`withheld`) and its results message; a permission card accepted (`sent`), clicked
//! (`confirmed`), found gone (`failed`) or left to the user (`withheld`, once per card and
//! reason while it is shown); a handoff's steps (started or refused, the new tab, each seed and
//! how it ended, the cut-over, a failure or Copy Prompt). A manual Continue is the user's own action and is not recorded.
//! A delivery whose App could not be attached is `failed` with the `app_*` reason (it is
//! held and goes again once attaching works); a judge continue held for its App before
//! typing is `withheld` with it.
//!
//! Invariants:
//! - Once per change, never per page fact: a withheld wake is recorded once per (pending
//!   wake, reason) — a page report that repeats the same state records nothing, a new
//!   reason is a new entry, and a worker restart records nothing again (what the restored
//!   schedulers hold back was recorded before their snapshot was written).
//! - Every scheduler delivery the ledger accepted has exactly one `sent` entry with its
//!   delivery id, and every resolution of an automatic delivery exactly one entry.
//! - With Auto off nothing automatic is recorded as `sent` but the user's own queued turn
//!   (Q2, Q10); a wake held back by Auto says so (`auto_off`, M1).

use serde::Serialize;
use serde_json::Value;

use super::*;
use crate::json_read::{Object, ReadJson, WriteJson};

/// What the extension did (or held back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    /// A settle wake or an inbox wake (P8, I2).
    Wake,
    /// A progress or fallback status (P4, P5).
    Progress,
    /// The user's queued messages (Q2).
    QueueBatch,
    /// A continue on the turn-end judge's verdict (J1).
    JudgeContinue,
    /// A reload of a stuck page (S3, S4, H5).
    RecoveryReload,
    /// A click on ChatGPT's Retry (S6).
    RecoveryRetry,
    /// The JSON bridge's tool results (O2).
    BridgeCall,
    /// A tool-permission card accepted or left to the user (M5).
    PermissionCard,
    /// A step of the HUD's Handoff (X1–X8): started or refused, the new tab, the seed, the
    /// cut-over, a failure or Copy Prompt.
    Handoff,
}

/// How it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum ActivityOutcome {
    /// Typed into the page, or the page command issued.
    Sent,
    /// Its marker appeared in a new user turn.
    Confirmed,
    /// Given up without evidence either way; not sent again by itself.
    NotConfirmed,
    /// Held back; the reason says why.
    Withheld,
    /// It certainly did not reach the chat; it may be offered again.
    Failed,
}

/// Why, as a stable code the side panel translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ActivityReason {
    /// The wake gate's reason (its wire name).
    Withheld(WakeWithheld),
    /// Any other code (`settled`, `marker_seen`, …).
    Code(&'static str),
}

impl WriteJson for ActivityReason {
    fn write_json(&self) -> Value {
        match self {
            Self::Withheld(reason) => reason.write_json(),
            Self::Code(code) => Value::from(*code),
        }
    }
}

/// One entry of the timeline, without its time (the shell adds `Date.now()`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Activity {
    /// The scope key (`Scope::key`).
    pub scope_key: String,
    /// What.
    pub kind: ActivityKind,
    /// How it went.
    pub outcome: ActivityOutcome,
    /// Why.
    pub reason: ActivityReason,
    /// The delivery id (a withheld wake: its id's stem, `wake:<ws>#<seq>`), bounded by
    /// [`crate::limits::MAX_ID_CHARS`] like every id.
    pub id: Option<String>,
    /// The tool the entry is about (a permission card: the Herdr tool its wording names,
    /// at most [`crate::permission_card::MAX_TOOL_CHARS`]); `None` for every other entry.
    pub tool: Option<String>,
}

impl WriteJson for Activity {
    fn write_json(&self) -> Value {
        Object::default()
            .with("scope_key", &self.scope_key)
            // Each written first: `with` is then the `Value` instance every writer shares.
            .with("kind", &self.kind.write_json())
            .with("outcome", &self.outcome.write_json())
            .with("reason", &self.reason.write_json())
            .with("id", &self.id)
            .with("tool", &self.tool)
            .done()
    }
}

/// The activity kind of an automatic delivery (`None`: a manual Continue).
fn delivery_activity_kind(kind: DeliveryKind) -> Option<ActivityKind> {
    Some(match kind {
        DeliveryKind::Wake => ActivityKind::Wake,
        DeliveryKind::Progress => ActivityKind::Progress,
        DeliveryKind::Queue => ActivityKind::QueueBatch,
        DeliveryKind::JudgeContinue => ActivityKind::JudgeContinue,
        DeliveryKind::BridgeResults => ActivityKind::BridgeCall,
        DeliveryKind::HandoffSeed => ActivityKind::Handoff,
        DeliveryKind::Continue => return None,
    })
}

/// The reason of a delivery the worker never posted because the snapshot naming it could
/// not be written (`chrome.storage` full or failing): certainly not in the chat.
pub const STATE_NOT_SAVED: &str = "state_not_saved";

/// The page adapter's `not_submitted` reasons (docs/PROTOCOL.md) and the ledger's own, as
/// codes; anything else reads as `not_sent`.
const NOT_SENT_REASONS: [&str; 10] = [
    STATE_NOT_SAVED,
    "no_composer",
    "human_draft",
    "insert_failed",
    "send_button_missing",
    "fact_unresolved",
    "unknown_layout",
    "busy",
    "left_in_composer",
    "other_conversation",
];

/// Every reason code an entry may carry besides the wake gate's [`WakeWithheld`] names:
/// the side panel has a text for each in `_locales` (a test checks both lists).
pub const REASON_CODES: &[&str] = &[
    "settled",
    "inbox_results",
    "new_output",
    "quiet_fallback",
    "queued_turn",
    "verdict_continue",
    "auto_on",
    "send_pressed",
    "marker_seen",
    "not_sent",
    "lost_on_reload",
    "no_evidence",
    "insert_failed",
    "send_button_missing",
    STATE_NOT_SAVED,
    "busy",
    "left_in_composer",
    "no_composer",
    "human_draft",
    "unknown_layout",
    "fact_unresolved",
    "auto_off",
    "other_conversation",
    "queue_first",
    "queue_unreadable",
    "queue_storage_failed",
    "queue_null",
    "page_busy",
    "reply_timeout",
    "assistant_stall",
    "send_timeout",
    "server_ahead",
    "server_stalled",
    "synced",
    "request_not_accepted",
    "unknown",
    "suspect_page",
    // Page health (continuity/health).
    "health_pressure",
    "sustained_pressure",
    "heap_critical",
    // Permission cards (M5): accepted, clicked, gone, and `CardRefusal::CODES`.
    "herdr_card",
    "allow_clicked",
    "card_gone",
    "not_chatgpt",
    "no_permission_wording",
    "other_connector",
    "no_single_allow",
    "allow_not_usable",
    "no_deny",
    "no_key",
    // Handoff (continuity/handoff): its steps and `HandoffRefusal` codes.
    "handoff_started",
    "new_chat_opened",
    "seed_sent",
    "cut_over",
    "copy_prompt_offered",
    "workspace_working",
    "in_flight",
    "no_continuity",
    "journal_unavailable",
    "bad_package",
    "seed_failed",
    "tab_asked_again",
    // The JSON bridge's approval (continuity/bridge).
    "awaiting_approval",
    "run_approved",
    "call_skipped",
    "call_refused",
    "round_limit",
    "auto_ran_read_only",
];

/// The withheld wake a scope's last Activity entry recorded: its id stem and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct WithheldMark {
    /// The wake's id stem (`wake:<ws>#<seq>` or `inbox:<ws>#<task>`).
    pub stem: String,
    /// Why it was held back.
    pub reason: WakeWithheld,
}

/// The id stem of a settle wake's deliveries (`wake:<ws>#<seq>`).
pub(super) fn wake_stem(workspace_id: &str, seq: u64) -> String {
    format!("wake:{workspace_id}#{seq}")
}

/// The pending wake of a scope's scheduler that is held back, and why: `(id stem, reason)`.
fn withheld_wake(bindings: &Bindings, key: &str, status: &ScopeStatus) -> Option<(String, WakeWithheld)> {
    let scheduler = status.scheduler.as_ref()?;
    let reason = scheduler.withheld()?;
    let workspace = bindings.list().find(|b| b.scope.key() == key).map(|b| b.workspace_id.as_str()).unwrap_or_default();
    let subject = match (scheduler.pending_wake(), scheduler.pending_inbox()) {
        (Some(wake), _) => wake_stem(workspace, wake.wake_id.seq),
        (None, Some(first_task)) => inbox_delivery_id(workspace, first_task),
        (None, None) => return None,
    };
    Some((subject, reason))
}

impl Continuity {
    /// Records one entry.
    pub(super) fn record_activity(
        &mut self,
        scope_key: &str,
        kind: ActivityKind,
        outcome: ActivityOutcome,
        reason: ActivityReason,
        id: Option<&str>,
    ) {
        self.record_activity_with_tool(scope_key, kind, outcome, reason, id, None);
    }

    /// [`Self::record_activity`] with the tool the entry is about (a permission card's).
    pub(super) fn record_activity_with_tool(
        &mut self,
        scope_key: &str,
        kind: ActivityKind,
        outcome: ActivityOutcome,
        reason: ActivityReason,
        id: Option<&str>,
        tool: Option<&str>,
    ) {
        if outcome != ActivityOutcome::Withheld || kind != ActivityKind::Wake {
            // Something else of the scope is its last entry now: a withheld wake after it is
            // a new entry (property (m): never the same withheld entry twice in a row).
            self.withheld_marks.remove(scope_key);
        }
        self.emit(ContinuityOutput::Activity(Activity {
            scope_key: scope_key.to_owned(),
            kind,
            outcome,
            reason,
            id: id.map(str::to_owned),
            tool: tool.map(str::to_owned),
        }));
    }

    /// Records an automatic delivery the ledger accepted (`sent`; like every entry but a
    /// withheld wake, it clears the scope's withheld mark).
    pub(super) fn activity_sent(&mut self, key: &str, kind: DeliveryKind, reason: &'static str, id: &str) {
        let Some(kind) = delivery_activity_kind(kind) else { return };
        self.record_activity(key, kind, ActivityOutcome::Sent, ActivityReason::Code(reason), Some(id));
    }

    /// Records how an automatic delivery ended.
    pub(super) fn activity_resolved(&mut self, delivery: &Delivery, resolution: &Resolution) {
        let Some(kind) = delivery_activity_kind(delivery.kind) else { return };
        if resolution.app_not_attached() {
            // It did not land, with the named reason; it is held and goes once its App can be
            // attached (a pending wake's own `withheld` entry follows).
            let why = self.app_hold(&delivery.scope_key).map_or(WakeWithheld::AppNotAttached, |h| h.reason);
            return self.record_activity(
                &delivery.scope_key,
                kind,
                ActivityOutcome::Failed,
                ActivityReason::Withheld(why),
                Some(&delivery.id),
            );
        }
        let (outcome, reason) = match resolution {
            Resolution::Confirmed => (ActivityOutcome::Confirmed, "marker_seen"),
            Resolution::NotSent { reason } => {
                (ActivityOutcome::Failed, NOT_SENT_REASONS.iter().find(|r| **r == reason.as_str()).copied().unwrap_or("not_sent"))
            }
            Resolution::Lost => (ActivityOutcome::Failed, "lost_on_reload"),
            Resolution::Abandoned => (ActivityOutcome::NotConfirmed, "no_evidence"),
        };
        self.record_activity(&delivery.scope_key, kind, outcome, ActivityReason::Code(reason), Some(&delivery.id));
    }

    /// After a scheduler step: a pending wake held back is recorded once per (wake, reason).
    /// Nothing is recorded while the scope's page has not reported: after a worker restart
    /// the schedulers see no composer until the pages report again, no reason worth recording.
    pub(super) fn activity_withheld_check(&mut self, key: &str) {
        if self.target_tab(key).is_none() {
            return;
        }
        let Some((stem, reason)) = self.scopes.get(key).and_then(|status| withheld_wake(&self.bindings, key, status)) else { return };
        let mark = WithheldMark { stem, reason };
        if self.withheld_marks.get(key) == Some(&mark) {
            return;
        }
        self.withheld_marks.insert(key.to_owned(), mark.clone());
        self.record_activity(key, ActivityKind::Wake, ActivityOutcome::Withheld, ActivityReason::Withheld(mark.reason), Some(&mark.stem));
    }
}

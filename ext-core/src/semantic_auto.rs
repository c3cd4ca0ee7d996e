//! Semantic Auto of one ChatGPT conversation (SPEC J1–J3, M4, M6, M7): when a reply that
//! looks finished ends, ask the runtime's turn-end judge whether the assistant stopped
//! with work still pending, and if it says so, continue it — bounded, once per reply, and
//! never before what the user queued.
//!
//! The judge itself (decision route → LLM → script, fail closed) is the runtime's
//! `judge.turn_end`; this machine decides only *whether to ask* and *what to do with the
//! verdict*.
//!
//! Driver contract: feed [`SemanticInput::TurnEnded`] when the page's reply finished
//! (generating went false) with the reply's facts, [`SemanticInput::HumanTurn`] when a user
//! turn without our marker appears, [`SemanticInput::HerdrActivity`] for every working or
//! settle signal of the bound workspace, [`SemanticInput::Verdict`] for the judge's answer
//! (an error answer as [`Verdict::Uncertain`]) and [`SemanticInput::ContinueResolved`] when
//! the continue's delivery ended; drain [`SemanticAuto::poll`].
//!
//! Invariants (tests in `tests/it/semantic_auto.rs`, property test there):
//! - Nothing is asked or continued unless the mode allows it, Auto is on for the scope,
//!   the site is ChatGPT (M6), and nothing is queued for the conversation (the user's next
//!   turn goes first).
//! - A reply is judged at most once (by its fingerprint), also across reloads and worker
//!   restarts (the fingerprints are persisted).
//! - Only [`Verdict::Continue`] continues; done, uncertain and errors stop (fail closed).
//! - At most `max_continues` automatic continues in a row without a human turn or Herdr
//!   activity (M7); the next one is withheld with that reason.
//! - One judge call and one continue at a time.
//! - A reply the user stopped ([`SemanticInput::UserStopped`]) is never continued, however
//!   its text reads: from the Stop until the next human turn the machine is
//!   [`SemanticAuto::stopped`], which asks nothing and drops a judge call already out, so no
//!   [`SemanticOutput::Continue`] can be produced (a `Continue` is only ever the answer to
//!   the call in `asking`, and `asking` is empty and cannot be set while stopped).
//! - A human turn supersedes a judge call out for an older reply: its verdict is dropped
//!   ([`SemanticOutput::Superseded`]), never typed after the human's turn.

use crate::json_read::{ReadJson, WriteJson};
use serde::Serialize;

/// When the judge is used (options page, O4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum JudgeMode {
    /// Never.
    Off,
    /// Only from the HUD button (M4).
    #[default]
    ManualOnly,
    /// Also automatically at turn end while Auto is on.
    InAuto,
}

/// Default bound on automatic continues in a row (M7).
pub const DEFAULT_MAX_CONTINUES: u32 = 3;
/// Fewest continues in a row an option may allow.
pub const MIN_MAX_CONTINUES: u32 = 1;
/// Most continues in a row an option may allow.
pub const MAX_MAX_CONTINUES: u32 = 10;
/// Fingerprints of judged replies kept.
const JUDGED_KEPT: usize = 32;
/// A reply shorter than this (characters, trimmed) is not judged: nothing to continue.
pub const MIN_REPLY_CHARS: usize = 40;

/// The judge's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Work the assistant declared is still pending: continue.
    Continue,
    /// Finished, or waiting on the user.
    Done,
    /// Not sure (also: the judge failed). Treated as done.
    Uncertain,
}

/// What ended on the page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EndedTurn {
    /// The assistant reply's text (the page bounds it).
    pub assistant_text: String,
    /// The user turn it answers (with our marker lines removed by the page adapter).
    pub user_text: String,
}

/// Inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SemanticInput {
    /// A reply finished. `auto_on`, `chatgpt` and `queue_waiting` are the gate's facts now.
    TurnEnded {
        /// The reply.
        turn: EndedTurn,
        /// Auto is on for the scope.
        auto_on: bool,
        /// The page is ChatGPT (M6).
        chatgpt: bool,
        /// The conversation has queued messages (they go first).
        queue_waiting: bool,
    },
    /// The human wrote a turn (no marker of ours); a new turn after a Stop.
    HumanTurn,
    /// The user pressed the page's Stop on the reply to the user turn `at`.
    UserStopped {
        /// The user turn the stopped reply answers.
        at: StoppedTurn,
    },
    /// The bound workspace worked or settled.
    HerdrActivity,
    /// The judge answered for `fingerprint`.
    Verdict {
        /// Which reply.
        fingerprint: String,
        /// The verdict.
        verdict: Verdict,
        /// `jev | llm | script`.
        source: String,
        /// Why, in the judge's words (bounded by the shell).
        reason: String,
    },
    /// The continue's delivery ended; `confirmed` when it is in the thread.
    ContinueResolved {
        /// Whether it landed.
        confirmed: bool,
    },
}

/// Why a reply was not judged or continued (HUD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum SemanticWithheld {
    /// The judge is off or manual only.
    ModeOff,
    /// Auto is off for the scope.
    AutoOff,
    /// Not a ChatGPT page (M6).
    NotChatGpt,
    /// Queued messages go first.
    QueueFirst,
    /// `max_continues` automatic continues in a row (M7).
    StreakLimit,
    /// This reply was judged already.
    JudgedBefore,
    /// The reply is too short to hold pending work.
    ShortReply,
    /// A judge call or a continue is already out.
    Busy,
    /// The user pressed Stop on this reply: it is their decision, never continued.
    UserStopped,
}

/// The user turn whose reply the user stopped, as the page showed it at the Stop: a turn
/// ended for the same user turn is the stopped reply; a human turn after it (more user
/// turns, or another id) is a new decision and ends the Stop.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct StoppedTurn {
    /// The page's number of user turns.
    pub user_turns: u32,
    /// The last user turn's page id, when it shows one.
    #[serde(default)]
    pub user_turn_id: Option<String>,
}

impl StoppedTurn {
    /// Whether a page with `user_turns` and `user_turn_id` shows a user turn newer than the
    /// stopped one: more user turns, or as many with another id (an edited message). Fail
    /// closed: fewer turns (a stale second tab, an older edit branch) is never new, whatever
    /// its id.
    pub fn is_older_than(&self, user_turns: u32, user_turn_id: Option<&str>) -> bool {
        user_turns > self.user_turns
            || (user_turns == self.user_turns && matches!((self.user_turn_id.as_deref(), user_turn_id), (Some(a), Some(b)) if a != b))
    }
}

/// Outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SemanticOutput {
    /// Ask `judge.turn_end` and answer with [`SemanticInput::Verdict`].
    Judge {
        /// The reply's fingerprint.
        fingerprint: String,
        /// The user turn.
        user_text: String,
        /// The reply.
        assistant_text: String,
    },
    /// Send a continue (through the delivery ledger) and answer with
    /// [`SemanticInput::ContinueResolved`].
    Continue {
        /// Subject for the delivery id: `judge:<fingerprint>`.
        subject: String,
        /// Which judge decided.
        source: String,
        /// Why.
        reason: String,
    },
    /// The verdict, for the HUD.
    Decided {
        /// The verdict.
        verdict: Verdict,
        /// `jev | llm | script`.
        source: String,
        /// Why.
        reason: String,
    },
    /// A reply was not judged or continued, and why.
    Withheld(SemanticWithheld),
    /// A judge call out for an older reply was dropped: a human turn (or the user's Stop)
    /// came first; its verdict is never acted on.
    Superseded {
        /// The older reply's fingerprint.
        fingerprint: String,
        /// Dropped by the user's Stop (else by a human turn).
        by_stop: bool,
    },
}

/// Semantic Auto of one conversation (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct SemanticAuto {
    /// The judge mode.
    pub mode: JudgeMode,
    /// Bound on automatic continues in a row (clamped to 1..=[`MAX_MAX_CONTINUES`]).
    max_continues: u32,
    /// Automatic continues since the last human turn or Herdr activity.
    streak: u32,
    /// Fingerprints of replies judged (newest last).
    judged: Vec<String>,
    /// A judge call out for this fingerprint.
    #[serde(default)]
    asking: Option<String>,
    /// A continue out.
    #[serde(default)]
    continuing: bool,
    /// The user stopped the reply to this user turn: nothing is asked or continued until
    /// a human turn.
    #[serde(default)]
    stopped: Option<StoppedTurn>,
    #[serde(skip)]
    outputs: Vec<SemanticOutput>,
}

/// `<chars>:<fnv-1a 64 of the text>`: the same reply gives the same fingerprint after a
/// reload or restart.
pub fn fingerprint(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.trim().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{}:{hash:016x}", crate::text::char_count(text.trim()))
}

impl SemanticAuto {
    /// A machine with `mode` and the bound `max_continues`.
    pub fn new(mode: JudgeMode, max_continues: u32) -> Self {
        Self { mode, max_continues: max_continues.clamp(1, MAX_MAX_CONTINUES), ..Self::default() }
    }

    /// Automatic continues since the last human turn or Herdr activity.
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// Whether a `continue` it decided still waits for [`SemanticInput::ContinueResolved`].
    pub fn continuing(&self) -> bool {
        self.continuing
    }

    /// The user turn whose reply the user stopped, while the Stop holds.
    pub fn stopped(&self) -> Option<&StoppedTurn> {
        self.stopped.as_ref()
    }

    /// The bound in force.
    pub fn max_continues(&self) -> u32 {
        if self.max_continues == 0 {
            DEFAULT_MAX_CONTINUES
        } else {
            self.max_continues
        }
    }

    /// Feeds one input.
    pub fn handle(&mut self, input: SemanticInput) {
        match input {
            SemanticInput::TurnEnded { turn, auto_on, chatgpt, queue_waiting } => {
                if let Err(why) = self.may_ask(&turn, auto_on, chatgpt, queue_waiting) {
                    self.outputs.push(SemanticOutput::Withheld(why));
                    return;
                }
                let fingerprint = fingerprint(&turn.assistant_text);
                self.judged.push(fingerprint.clone());
                if self.judged.len() > JUDGED_KEPT {
                    self.judged.remove(0);
                }
                self.asking = Some(fingerprint.clone());
                self.outputs.push(SemanticOutput::Judge { fingerprint, user_text: turn.user_text, assistant_text: turn.assistant_text });
            }
            // A new run starts; a continue still on its way belongs to it.
            SemanticInput::HerdrActivity => self.streak = u32::from(self.continuing),
            // The human spoke: a new decision. A judge call for the older reply is dropped.
            SemanticInput::HumanTurn => {
                self.streak = u32::from(self.continuing);
                self.stopped = None;
                if let Some(fingerprint) = self.asking.take() {
                    self.outputs.push(SemanticOutput::Superseded { fingerprint, by_stop: false });
                }
            }
            SemanticInput::UserStopped { at } => {
                self.stopped = Some(at);
                if let Some(fingerprint) = self.asking.take() {
                    self.outputs.push(SemanticOutput::Superseded { fingerprint, by_stop: true });
                }
            }
            SemanticInput::Verdict { fingerprint, verdict, source, reason } => {
                // Only the answer to the call out; a Stop or a human turn emptied it.
                if self.asking.as_deref() != Some(fingerprint.as_str()) {
                    return;
                }
                self.asking = None;
                self.outputs.push(SemanticOutput::Decided { verdict, source: source.clone(), reason: reason.clone() });
                if verdict != Verdict::Continue {
                    return;
                }
                if self.stopped.is_some() {
                    self.outputs.push(SemanticOutput::Withheld(SemanticWithheld::UserStopped));
                    return;
                }
                if self.streak >= self.max_continues() {
                    self.outputs.push(SemanticOutput::Withheld(SemanticWithheld::StreakLimit));
                    return;
                }
                self.streak += 1;
                self.continuing = true;
                self.outputs.push(SemanticOutput::Continue { subject: format!("judge:{fingerprint}"), source, reason });
            }
            SemanticInput::ContinueResolved { confirmed } => {
                self.continuing = false;
                if !confirmed {
                    // It did not land: it does not count against the bound.
                    self.streak = self.streak.saturating_sub(1);
                }
            }
        }
    }

    fn may_ask(&self, turn: &EndedTurn, auto_on: bool, chatgpt: bool, queue_waiting: bool) -> Result<(), SemanticWithheld> {
        if self.mode != JudgeMode::InAuto {
            return Err(SemanticWithheld::ModeOff);
        }
        if !chatgpt {
            return Err(SemanticWithheld::NotChatGpt);
        }
        if !auto_on {
            return Err(SemanticWithheld::AutoOff);
        }
        // Before anything that may pass later: the user's Stop is the reason, and it holds.
        if self.stopped.is_some() {
            return Err(SemanticWithheld::UserStopped);
        }
        if queue_waiting {
            return Err(SemanticWithheld::QueueFirst);
        }
        if self.asking.is_some() || self.continuing {
            return Err(SemanticWithheld::Busy);
        }
        if crate::text::char_count(turn.assistant_text.trim()) < MIN_REPLY_CHARS {
            return Err(SemanticWithheld::ShortReply);
        }
        if self.judged.contains(&fingerprint(&turn.assistant_text)) {
            return Err(SemanticWithheld::JudgedBefore);
        }
        if self.streak >= self.max_continues() {
            return Err(SemanticWithheld::StreakLimit);
        }
        Ok(())
    }

    /// The next output, if any.
    pub fn poll(&mut self) -> Option<SemanticOutput> {
        if self.outputs.is_empty() {
            None
        } else {
            Some(self.outputs.remove(0))
        }
    }

    /// After a restore: a judge call of the old worker is never answered, a continue's
    /// resolution comes from the ledger again.
    pub fn restored(&mut self) {
        self.asking = None;
    }

    /// New options (O4): the mode and the bound apply from the next reply on.
    pub fn configure(&mut self, settings: JudgeSettings) {
        self.mode = settings.mode;
        self.max_continues = settings.max_continues.clamp(MIN_MAX_CONTINUES, MAX_MAX_CONTINUES);
    }
}

/// The `chrome.storage.local` key of the options page's judge settings (versioned).
pub const SETTINGS_KEY: &str = "herdrContinuityJudgeV1";

/// The judge settings of the options page (O4): `{"mode", "max_continues"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
pub struct JudgeSettings {
    /// When the judge is used.
    pub mode: JudgeMode,
    /// Automatic continues in a row at most (1..=[`MAX_MAX_CONTINUES`]).
    pub max_continues: u32,
}

impl Default for JudgeSettings {
    fn default() -> Self {
        Self { mode: JudgeMode::ManualOnly, max_continues: DEFAULT_MAX_CONTINUES }
    }
}

impl JudgeSettings {
    /// Reads the stored record (`None`: nothing stored, the defaults). A part that is not
    /// valid falls back to its default, and the second value says which, as a code
    /// (`not_json`, `bad_mode`, `bad_max`: the `_locales` texts `judgeSettingsBad_<code>` of
    /// the HUD and `judgeProblem_<code>` of the options page); nothing is guessed.
    pub fn parse(stored: Option<&str>) -> (Self, Option<&'static str>) {
        Self::read(stored.map(|text| serde_json::from_str(text).map_err(|_| ())).as_ref().map(|r| r.as_ref()))
    }

    /// [`Self::parse`] of a record already parsed (the shell parses the stored text with
    /// the browser's `JSON.parse`): `Some(Err(()))` when the stored text is not JSON.
    pub fn read(stored: Option<Result<&serde_json::Value, &()>>) -> (Self, Option<&'static str>) {
        let mut settings = Self::default();
        let Some(parsed) = stored else { return (settings, None) };
        let Ok(value) = parsed else {
            return (settings, Some("not_json"));
        };
        let mut problem = None;
        match value.get("mode").map(crate::json_read::ReadJson::read_json) {
            Some(Ok(mode)) => settings.mode = mode,
            _ => problem = Some("bad_mode"),
        }
        match value.get("max_continues").and_then(serde_json::Value::as_u64) {
            Some(n) if (u64::from(MIN_MAX_CONTINUES)..=u64::from(MAX_MAX_CONTINUES)).contains(&n) => {
                settings.max_continues = u32::try_from(n).unwrap_or(MAX_MAX_CONTINUES);
            }
            _ => problem = problem.or(Some("bad_max")),
        }
        (settings, problem)
    }

    /// The record to store.
    pub fn to_json(&self) -> String {
        crate::json_read::WriteJson::write_json(self).to_string()
    }
}

//! The order of the turn-end judge (SPEC J2, J3), apart from any IO: the safety gate, then
//! the decision stage, then the chat stage, then the script.
//!
//! Each provider stage is given as a closure that is called at most once, and only when
//! every stage before it gave no confident verdict; it answers an [`Opinion`].
//!
//! Invariants (checked by the property test in `companion/tests/it/judge.rs`):
//! - A reply the gate stops is `done` from `script`, and no provider is asked.
//! - A confident decision (`Opinion::Decided` from the decision stage) is final: the chat
//!   stage is not asked and the script does not run.
//! - A confident chat verdict is final when the decision stage was unsure or unavailable.
//! - Only when both were unsure or unavailable does the script decide; it never replaces
//!   a confident provider verdict. An unsure provider's priors stay on the verdict.

use std::future::Future;

use continuity_protocol::{GoalPriors, JudgeSource, JudgeVerdict};

use super::{gate, script};

/// A confident verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Work the assistant means to do is left.
    Continue,
    /// The turn is over.
    Done,
}

impl Decided {
    fn verdict(self) -> JudgeVerdict {
        match self {
            Decided::Continue => JudgeVerdict::Continue,
            Decided::Done => JudgeVerdict::Done,
        }
    }
}

/// What one provider stage said.
#[derive(Debug, Clone, PartialEq)]
pub enum Opinion {
    /// A confident verdict.
    Decided {
        /// The verdict.
        verdict: Decided,
        /// The provider's probability that work is left, when it gave one.
        confidence: Option<f64>,
        /// Why (names the route).
        reason: String,
        /// Goal-mode priors, when asked and answered.
        priors: Option<GoalPriors>,
    },
    /// The provider answered but could not tell.
    Unsure {
        /// Why (names the route and its number).
        reason: String,
        /// Goal-mode priors, when asked and answered.
        priors: Option<GoalPriors>,
    },
    /// No answer: no route configured, skipped, every route failed, or the deadline.
    Unavailable {
        /// Why.
        reason: String,
    },
}

/// The chain's answer (`judge_verdict` on the wire).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `continue` or `done` (`uncertain` only ever comes from a provider stage, which then
    /// hands on; the chain itself always ends in a verdict).
    pub verdict: JudgeVerdict,
    /// Which judge decided.
    pub source: JudgeSource,
    /// The deciding provider's probability, when it gave one.
    pub confidence: Option<f64>,
    /// Why, including what the earlier stages said.
    pub reason: String,
    /// Goal-mode priors of the decision stage (advice, never deciding).
    pub priors: Option<GoalPriors>,
}

/// Runs the chain on `reply`: gate → `decision()` → `chat()` → script.
pub async fn judge<D, DF, C, CF>(reply: &str, decision: D, chat: C) -> Verdict
where
    D: FnOnce() -> DF,
    DF: Future<Output = Opinion>,
    C: FnOnce() -> CF,
    CF: Future<Output = Opinion>,
{
    if let Some(stop) = gate::check(reply) {
        return Verdict {
            verdict: JudgeVerdict::Done,
            source: JudgeSource::Script,
            confidence: None,
            reason: format!("safety gate: {stop}"),
            priors: None,
        };
    }
    let mut notes = Vec::new();
    let mut priors = None;
    match decision().await {
        Opinion::Decided { verdict, confidence, reason, priors } => {
            return Verdict { verdict: verdict.verdict(), source: JudgeSource::Jev, confidence, reason: format!("jev: {reason}"), priors };
        }
        Opinion::Unsure { reason, priors: unsure_priors } => {
            priors = unsure_priors;
            notes.push(format!("jev unsure: {reason}"));
        }
        Opinion::Unavailable { reason } => notes.push(format!("jev unavailable: {reason}")),
    }
    match chat().await {
        Opinion::Decided { verdict, confidence, reason, .. } => {
            notes.push(format!("llm: {reason}"));
            return Verdict { verdict: verdict.verdict(), source: JudgeSource::Llm, confidence, reason: notes.join("; "), priors };
        }
        Opinion::Unsure { reason, .. } => notes.push(format!("llm unsure: {reason}")),
        Opinion::Unavailable { reason } => notes.push(format!("llm unavailable: {reason}")),
    }
    let script = script::judge(reply);
    notes.push(format!("script: {}", script.reason));
    Verdict {
        verdict: if script.pending { JudgeVerdict::Continue } else { JudgeVerdict::Done },
        source: JudgeSource::Script,
        confidence: None,
        reason: notes.join("; "),
        priors,
    }
}

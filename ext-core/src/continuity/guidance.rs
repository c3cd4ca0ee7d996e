//! Parent guidance (SPEC I5) as the extension shows it: read from an inbox item's
//! `guidance`, worded in the wake as advice after the task facts, and listed in the HUD.
//!
//! Invariants:
//! - Guidance is advice, never evidence: the wake says so in its own words, and the task
//!   facts (the agents' output) stay what decides.
//! - Only the five documented kinds are read; an item with any other `guidance` has none.
//! - The note is a model's text: in the wake it is only ever inside the task facts' data
//!   fence, and it is one line of at most [`MAX_NOTE_CHARS`] characters.

use serde::Serialize;
use serde_json::Value;

use crate::json_read::{ReadJson, WriteJson};
use crate::wake::Language;

/// Characters of a guidance note kept (the runtime sends at most 200).
pub const MAX_NOTE_CHARS: usize = 200;

/// The kinds the runtime's advisor may attach.
pub const KINDS: [&str; 5] = ["verify_completion", "continue_unobserved", "needs_human", "blocker", "drift"];

/// One task's guidance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default, ReadJson, WriteJson)]
pub struct TaskGuidance {
    /// One of [`KINDS`].
    pub kind: String,
    /// The model's short reason, if it gave one.
    pub note: Option<String>,
}

impl TaskGuidance {
    /// An inbox item's `guidance` value, when it is the documented shape.
    pub fn from_wire(value: &Value) -> Option<Self> {
        let kind = value.get("kind")?.as_str()?;
        if !KINDS.contains(&kind) {
            return None;
        }
        let note = value
            .get("note")
            .and_then(Value::as_str)
            .map(|n| crate::text::one_line(n).chars().take(MAX_NOTE_CHARS).collect::<String>())
            .filter(|n| !n.is_empty());
        Some(Self { kind: kind.to_owned(), note })
    }

    /// What the guidance advises, in `language` (our words, never the model's).
    pub fn advice(&self, language: Language) -> &'static str {
        match (self.kind.as_str(), language) {
            ("verify_completion", Language::En) => "verify its completion before building on it",
            ("verify_completion", Language::Zh) => "先核实它确实完成，再在其基础上继续",
            ("continue_unobserved", Language::En) => "it needs no attention now; you may continue",
            ("continue_unobserved", Language::Zh) => "目前无需关注，可以继续",
            ("needs_human", Language::En) => "a person should look at it",
            ("needs_human", Language::Zh) => "需要由人查看",
            ("blocker", Language::En) => "it is blocked on something you must resolve",
            ("blocker", Language::Zh) => "它被阻塞，需要你来解决",
            (_, Language::En) => "it may have drifted from what was asked",
            (_, Language::Zh) => "它可能偏离了要求",
        }
    }
}

/// The line inside the task facts' fence that carries a task's guidance note, labelled in
/// `language`.
pub fn note_line(guidance: &TaskGuidance, language: Language) -> Option<String> {
    let label = match language {
        Language::En => "advice note: ",
        Language::Zh => "建议说明：",
    };
    guidance.note.as_ref().map(|note| format!("\n| {label}{note}"))
}

/// The advice paragraph after a wake's task facts: one line per task with guidance, in
/// our words; empty when no task has any.
pub fn advice_paragraph(language: Language, tasks: &[super::InboxTask]) -> String {
    let advised: Vec<_> = tasks.iter().filter_map(|t| t.guidance.as_ref().map(|g| (t, g))).collect();
    if advised.is_empty() {
        return String::new();
    }
    let mut out = match language {
        Language::En => "\nParent guidance (advice from the configured model, not evidence; the task facts above decide):".to_owned(),
        Language::Zh => "\n父任务建议（来自配置的模型，仅供参考，不是证据；以上任务事实为准）：".to_owned(),
    };
    for (task, guidance) in advised {
        let sep = if language == Language::Zh { "：" } else { ": " };
        out.push_str(&format!("\n- {}{sep}{}", task.task_id, guidance.advice(language)));
    }
    out
}

/// A HUD line: the task and its guidance's kind (the JS renderer words it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct GuidanceLine {
    /// The task.
    pub task_id: String,
    /// One of [`KINDS`].
    pub kind: String,
    /// The model's note (shown as quoted text, never as our words).
    pub note: Option<String>,
}

/// The HUD's guidance lines of a scope's pending tasks.
pub fn hud_lines(tasks: &[super::InboxTask]) -> Vec<GuidanceLine> {
    tasks
        .iter()
        .filter_map(|t| {
            t.guidance.as_ref().map(|g| GuidanceLine { task_id: t.task_id.clone(), kind: g.kind.clone(), note: g.note.clone() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_advice_in_both_languages() {
        for kind in KINDS {
            let guidance = TaskGuidance { kind: kind.to_owned(), note: None };
            let (en, zh) = (guidance.advice(Language::En), guidance.advice(Language::Zh));
            assert!(!en.is_empty() && !zh.is_empty() && en != zh, "{kind}");
        }
        let task = super::super::InboxTask {
            task_id: "t1".into(),
            state: "completed".into(),
            pane_id: "w1:p1".into(),
            prompt_preview: "x".into(),
            result: None,
            guidance: Some(TaskGuidance { kind: "needs_human".into(), note: Some("ask".into()) }),
        };
        assert_eq!(
            advice_paragraph(Language::Zh, &[task]),
            "\n父任务建议（来自配置的模型，仅供参考，不是证据；以上任务事实为准）：\n- t1：需要由人查看"
        );
    }
}

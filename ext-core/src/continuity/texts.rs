//! Every text the continuity machine writes: ids and marker lines, task facts of a wake,
//! Check Herdr summaries, and the HUD's refusals in the UI language (English or Chinese).
//!
//! Invariants: every text a chat receives is bounded ([`TASK_RESULT_MAX_CHARS`],
//! [`CHECK_HERDR_MAX_CHARS`]); a marker line carries no whitespace or `]`; every refusal
//! says what happened and what to do.

use super::*;

/// How many lines of a pane Check Herdr reads.
pub const CHECK_HERDR_LINES: u32 = 40;

/// How many characters of Check Herdr's summary go into the composer.
pub const CHECK_HERDR_MAX_CHARS: usize = 6_000;

/// How many characters of one task's result go into a wake (the inbox's pane tail, cut).
pub const TASK_RESULT_MAX_CHARS: usize = 300;

/// The stable id a chat passes to `herdr_prompt` so its tasks come back to it (I1, I3):
/// `chatgpt:project:<g-p-id>` for a Project, `<site>:conv:<id>` for a conversation.
pub fn browser_session_ref(scope: &Scope) -> String {
    match scope {
        Scope::Project { project_id } => format!("chatgpt:project:{project_id}"),
        Scope::Conversation {
            site,
            conversation_id,
        } => format!("{}:conv:{conversation_id}", site.as_str()),
    }
}

/// The delivery id of an inbox wake: `inbox:<ws>#<first task id>`, stable across worker
/// restarts. A task id the page's marker could not carry (whitespace, `]`) or that makes the
/// id longer than [`crate::limits::MAX_ID_CHARS`] is replaced by its FNV-1a hash (`h<hex>`).
pub fn inbox_delivery_id(workspace_id: &str, first_task: &str) -> String {
    let plain = format!("inbox:{workspace_id}#{first_task}");
    let marker_safe = !first_task.is_empty() && !first_task.chars().any(|c| c.is_whitespace() || c == ']');
    if marker_safe && crate::limits::within(&plain, crate::limits::MAX_ID_CHARS) {
        return plain;
    }
    let hash = first_task.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("inbox:{workspace_id}#h{hash:016x}")
}

/// The marker line that ends every delivered message; the page confirms a delivery by
/// finding it in a new user turn.
pub fn marker_line(delivery_id: &str) -> String {
    format!("[herdr-continuity {delivery_id}]")
}

/// The task-facts paragraph of a wake (I2): what each terminal task of this chat did.
pub fn task_facts(language: Language, tasks: &[InboxTask], inbox_missing: bool) -> String {
    if inbox_missing {
        return match language {
            Language::En => "\n(The companion has no parent inbox: task results are not included. Update the companion.)".to_owned(),
            Language::Zh => "\n（companion 没有父收件箱：不包含任务结果。请更新 companion。）".to_owned(),
        };
    }
    if tasks.is_empty() {
        return String::new();
    }
    let mut out = match language {
        Language::En => format!("\nTerminal tasks of this chat ({}):", tasks.len()),
        Language::Zh => format!("\n此会话已结束的任务（{}）：", tasks.len()),
    };
    for task in tasks {
        let result = task.result.as_deref().unwrap_or_default();
        let (status, output) = result.split_once('\n').unwrap_or((result, ""));
        let status = bounded(&one_line(status), 120);
        out.push_str(&format!("\n- {} [{}] pane {}: {}", task.task_id, task.state, task.pane_id, bounded(&one_line(&task.prompt_preview), 120)));
        if !status.is_empty() {
            out.push_str(&format!(" → {status}"));
        }
        // Each output line on a line of its own (the page inserts them as paragraphs),
        // quoted with "| " (no leading spaces: a composer turns them into NBSPs).
        for line in last_lines(output, TASK_RESULT_MAX_CHARS) {
            out.push_str(&format!("\n| {line}"));
        }
    }
    out
}

/// `text` with every whitespace run (newlines included) turned into one space.
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last non-empty lines of `text` (trimmed) whose characters add up to at most
/// `max_chars`; a last line longer than that is cut at its start (`…` marks the cut).
pub fn last_lines(text: &str, max_chars: usize) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0;
    for line in text.lines().rev().map(str::trim).filter(|l| !l.is_empty()) {
        let len = line.chars().count();
        if used + len <= max_chars {
            used += len;
            kept.push(line.to_owned());
            continue;
        }
        if kept.is_empty() {
            let tail: String = line.chars().skip(len - max_chars.saturating_sub(1)).collect();
            kept.push(format!("…{tail}"));
        }
        break;
    }
    kept.reverse();
    kept
}

/// The Check Herdr text: one block per pane, bounded in total.
pub fn check_herdr_summary(workspace_id: &str, panes: &[PaneInfo], texts: &VecMap<String, String>) -> String {
    let mut out = format!("[Herdr check] Workspace {workspace_id}: {} pane(s).", panes.len());
    for pane in panes {
        let agent = pane.agent.as_deref().unwrap_or("no agent");
        out.push_str(&format!("\n## {} ({agent}, {})", pane.pane_id, pane.agent_status));
        if let Some(text) = texts.get(&pane.pane_id) {
            out.push('\n');
            out.push_str(text.trim_end());
        }
    }
    bounded(&out, CHECK_HERDR_MAX_CHARS)
}

/// At most `max` characters; a cut text ends with `…`.
pub(super) fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

impl Continuity {
    /// The English or Chinese text, by the UI language.
    pub(super) fn say(&self, en: String, zh: String) -> String {
        match self.language {
            Language::En => en,
            Language::Zh => zh,
        }
    }

    /// Why a *manual* Continue was not sent: unlike an automatic wake, nothing follows by
    /// itself, so the text says to press Continue again.
    pub(super) fn manual_refusal_text(&self, reason: WakeWithheld) -> String {
        let (en, zh) = match reason {
            WakeWithheld::HumanDraft => (
                "Not sent: the composer has your unsent text. Send or clear it, then press Continue again.",
                "未发送：输入框里有你尚未发送的文字。请先发送或清空，然后再按“继续”。",
            ),
            WakeWithheld::PageGenerating => (
                "Not sent: a reply is still being written or a permission card is waiting. Press Continue again when the page is idle.",
                "未发送：回复仍在生成，或有权限卡片等待处理。页面空闲后请再按“继续”。",
            ),
            WakeWithheld::UnconfirmedDelivery => (
                "Not sent: an earlier message is still being confirmed. Press Continue again in a moment.",
                "未发送：上一条消息仍在确认中。请稍后再按“继续”。",
            ),
            WakeWithheld::NoComposer => (
                "Not sent: this page has no composer. Open the conversation, then press Continue again.",
                "未发送：这个页面没有输入框。请打开会话后再按“继续”。",
            ),
            other => return self.withheld_text(other),
        };
        self.say(en.to_owned(), zh.to_owned())
    }

    pub(super) fn locked_text(&self, locked: crate::auto_gate::ActionLocked) -> String {
        self.say(locked.message().to_owned(), locked.message_zh().to_owned())
    }

    pub(super) fn withheld_text(&self, reason: WakeWithheld) -> String {
        match self.language {
            Language::En => reason.message().to_owned(),
            Language::Zh => reason.message_zh().to_owned(),
        }
    }
}

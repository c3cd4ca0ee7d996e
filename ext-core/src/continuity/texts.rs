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

impl Continuity {
    /// Why a queue change was refused and what to do (Q6), in the UI language.
    pub(super) fn queue_refusal_text(&self, refusal: &crate::queue::QueueRefusal) -> String {
        use crate::queue::{QueueRefusal as R, MAX_CONVERSATIONS, MAX_ITEMS, MAX_MERGED_CHARS};
        let (en, zh) = match refusal {
            R::NoConversation => (
                "Not queued: this page is not a conversation yet. Open or start a chat, then queue again.".to_owned(),
                "未加入队列：这个页面还不是一个会话。请打开或开始一个对话后再试。".to_owned(),
            ),
            R::EmptyText => (
                "Nothing to queue: type the message in the composer first, then press Queue.".to_owned(),
                "没有可排队的内容：请先在输入框中输入消息，再按“排队”。".to_owned(),
            ),
            R::TooManyItems { count } => (
                format!("Not queued: {count} of {MAX_ITEMS} messages are already waiting. Wait until they are sent, or clear the queue (right-click Queue)."),
                format!("未加入队列：已有 {count}/{MAX_ITEMS} 条消息在等待。请等它们发出，或右键“排队”清空队列。"),
            ),
            R::TooLong { merged_chars } => (
                format!("Not queued: the queued text would be {merged_chars} characters, more than {MAX_MERGED_CHARS}. Shorten it, or wait until the queue is sent. Your text stays in the composer."),
                format!("未加入队列：排队文字将达到 {merged_chars} 个字符，超过 {MAX_MERGED_CHARS}。请缩短，或等队列发出。你的文字仍在输入框中。"),
            ),
            R::TooManyConversations => (
                format!("Not queued: queues of {MAX_CONVERSATIONS} conversations are stored. Clear the queue of a conversation you no longer use."),
                format!("未加入队列：已保存 {MAX_CONVERSATIONS} 个会话的队列。请清空不再使用的会话的队列。"),
            ),
            R::BadId => (
                "Not queued: the entry had a bad id. Reload the page and queue again.".to_owned(),
                "未加入队列：条目 id 无效。请刷新页面后重试。".to_owned(),
            ),
            R::StorageUnreadable { detail } => (
                format!("The queue could not be read or saved ({detail}); nothing was changed and your text stays in the composer. Try again; if it keeps failing, reload the extension."),
                format!("无法读取或保存队列（{detail}）；没有做任何更改，你的文字仍在输入框中。请重试；若一直失败，请重新加载扩展。"),
            ),
        };
        self.say(en, zh)
    }

    /// The HUD's queue line for a state of [`super::QueueView`].
    pub(super) fn queue_line(&self, state: &str, count: usize, chars: usize) -> String {
        match state {
            "unreadable" => self.say(
                "Queue: the stored queue cannot be read; nothing is sent from it and nothing is overwritten.".to_owned(),
                "队列：无法读取已保存的队列；不会从中发送，也不会覆盖它。".to_owned(),
            ),
            "undelivered" => self.say(
                format!("Queue: {count} message(s) not confirmed. Press Queue with an empty composer to send them again."),
                format!("队列：{count} 条消息未确认。输入框为空时按“排队”可重新发送。"),
            ),
            "sending" => self.say(format!("Queue: sending {count} message(s)…"), format!("队列：正在发送 {count} 条消息…")),
            "waiting" => self.say(
                format!("Queue: {count} message(s), {chars} characters, sent when the reply ends."),
                format!("队列：{count} 条消息，{chars} 个字符，回复结束后发出。"),
            ),
            _ => self.say("Queue: empty.".to_owned(), "队列：空。".to_owned()),
        }
    }

    /// What the user is told about the queue.
    pub(super) fn queue_note_text(&self, note: &super::queue::QueueNote) -> String {
        use super::queue::QueueNote as N;
        let (en, zh) = match note {
            N::Queued => ("Queued. It is sent as your next message when the reply ends.", "已排队。回复结束后会作为你的下一条消息发出。"),
            N::Cleared => ("The queue of this conversation is cleared.", "已清空这个会话的队列。"),
            N::Expired => ("Queued messages older than 7 days were removed.", "超过 7 天的排队消息已被移除。"),
            N::Undelivered => (
                "Herdr Continuity could not tell whether your queued messages reached this chat, so it will not send them again by itself. If they are not in the thread, press Queue with an empty composer to send them again.",
                "Herdr Continuity 无法确认排队的消息是否已发到这个对话，因此不会自动重发。如果对话里没有它们，请在输入框为空时按“排队”重新发送。",
            ),
        };
        self.say(en.to_owned(), zh.to_owned())
    }
}

/// What follows a verdict in the HUD's judge line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JudgeTail {
    /// Nothing (the HUD button's answer).
    None,
    /// Semantic Auto does not continue (done, uncertain, an error).
    Stops,
    /// A continue was sent: the `n`th of at most `max` in a row.
    Sent { n: u32, max: u32 },
    /// A continue was due but the page was not free.
    NotFree,
    /// A continue was due but Auto went off or the chat was unbound meanwhile.
    AutoOff,
}

/// The turn-end judge's texts (HUD judge button, semantic Auto, its continue message),
/// written as templates with `$1`… filled in once ([`Continuity::fill`]): one fill per
/// text instead of an English and a Chinese `format!` each (smaller wasm).
impl Continuity {
    /// The template of the UI language with `$1`…`$9` replaced by `args`.
    pub(super) fn fill(&self, en: &str, zh: &str, args: &[&str]) -> String {
        let template = if self.language == Language::Zh { zh } else { en };
        let mut out = String::with_capacity(template.len() + args.iter().map(|a| a.len()).sum::<usize>());
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            let arg = chars.peek().and_then(|d| d.to_digit(10)).filter(|d| *d >= 1).and_then(|d| args.get(d as usize - 1));
            match (c, arg) {
                ('$', Some(arg)) => {
                    out.push_str(arg);
                    chars.next();
                }
                _ => out.push(c),
            }
        }
        out
    }

    /// `Judge (<source>): <verdict> — <reason>` and what followed.
    pub(super) fn judge_line_text(&self, verdict: crate::semantic_auto::Verdict, source: &str, reason: &str, tail: JudgeTail) -> String {
        use crate::semantic_auto::Verdict::*;
        let word = match (self.language, verdict) {
            (Language::En, Continue) => "continue",
            (Language::En, Done) => "done",
            (Language::En, Uncertain) => "not sure",
            (Language::Zh, Continue) => "继续",
            (Language::Zh, Done) => "完成",
            (Language::Zh, Uncertain) => "不确定",
        };
        let (en, zh) = match tail {
            JudgeTail::None => ("", ""),
            JudgeTail::Stops => (". Auto does not continue this reply (it fails closed).", "。Auto 不会继续这条回复（不确定即停止）。"),
            JudgeTail::Sent { .. } => (". A continue was sent ($1 of at most $2 in a row).", "。已发送继续消息（连续第 $1 次，最多 $2 次）。"),
            JudgeTail::NotFree => (
                ". Nothing was sent: the page is not free (a reply, a draft or another message of the extension).",
                "。没有发送：页面正忙（回复、草稿或扩展的另一条消息）。",
            ),
            JudgeTail::AutoOff => (". Nothing was sent: Auto is off or the chat is not bound any more.", "。没有发送：Auto 已关闭或对话已解除绑定。"),
        };
        let (n, max) = match tail {
            JudgeTail::Sent { n, max } => (n.to_string(), max.to_string()),
            _ => (String::new(), String::new()),
        };
        let mut text = self.fill("Judge ($1): $2 — $3", "判断（$1）：$2 — $3", &[source, word, reason]);
        text.push_str(&self.fill(en, zh, &[&n, &max]));
        text
    }

    /// The HUD button's answer: verdict, source, reason, and the J7 priors as advice.
    pub(super) fn judge_answer_text(&self, answer: &JudgeAnswer) -> String {
        let mut text = self.judge_line_text(answer.verdict, &answer.source, &answer.reason, JudgeTail::None);
        if !answer.priors.is_empty() {
            let mut priors = String::new();
            for (name, percent) in &answer.priors {
                if !priors.is_empty() {
                    priors.push_str(", ");
                }
                priors.push_str(name);
                priors.push(' ');
                priors.push_str(&percent.to_string());
                priors.push('%');
            }
            text.push_str(&self.fill(". Advice only (goal priors): $1", "。仅供参考（目标先验）：$1", &[&priors]));
        }
        text
    }

    /// Why semantic Auto did not ask about a reply; `None` when there is nothing to say
    /// (Auto off, judge use not "in Auto", not ChatGPT, busy).
    pub(super) fn semantic_withheld_text(&self, why: crate::semantic_auto::SemanticWithheld) -> Option<String> {
        use crate::semantic_auto::SemanticWithheld::*;
        let (en, zh) = match why {
            ModeOff | AutoOff | NotChatGpt | Busy => return None,
            QueueFirst => ("Your queued messages go first; the judge was not asked about this reply.", "你排队的消息优先；没有就这条回复询问判断服务。"),
            StreakLimit => (
                "Auto stopped continuing: it reached the most automatic continues in a row without a human turn or Herdr activity (options page). Write in the chat to go on.",
                "Auto 已停止继续：在没有人工回复或 Herdr 活动的情况下已达到连续自动继续的上限（见选项页）。请在对话中回复以继续。",
            ),
            JudgedBefore => ("This reply was judged already; it is not judged again.", "这条回复已经判断过，不会再次判断。"),
            ShortReply => ("The reply is too short to hold pending work; the judge was not asked.", "回复太短，不可能包含未完成的工作；没有询问判断服务。"),
        };
        Some(self.fill(en, zh, &[]))
    }

    /// The continue message semantic Auto types: which judge decided and why.
    pub(super) fn judge_continue_text(&self, source: &str, reason: &str, n: u32, max: u32) -> String {
        self.fill(
            "[Herdr] Continue: your last reply announced a next step of your own that is not done yet. The turn-end judge ($1) decided: $2. Go on with that step now; if it needs me or is already done, say so and stop. (Automatic continue $3 of at most $4 in a row.)",
            "[Herdr] 继续：你上一条回复宣布了自己的下一步，但还没有做。回合结束判断（$1）的结论：$2。请现在继续这一步；如果它需要我或已经完成，请说明并停止。（连续自动继续第 $3 次，最多 $4 次。）",
            &[source, reason, &n.to_string(), &max.to_string()],
        )
    }
}

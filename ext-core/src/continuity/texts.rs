//! Every text the continuity machine writes: ids and marker lines, task facts of a wake,
//! Check Herdr summaries and the judge's continue (these go into the chat, in the UI
//! language); and [`Say`], the `_locales` message key and substitutions of every HUD text
//! (refusals, notes, the queue and judge lines): the core writes no HUD sentence itself.
//!
//! Invariants: every text a chat receives is bounded ([`TASK_RESULT_MAX_CHARS`],
//! [`CHECK_HERDR_MAX_CHARS`]); a marker line carries no whitespace or `]`; every key the
//! core names exists in English and Chinese with the substitutions it sends, and every
//! refusal's message says what happened and what to do (tests/it/locales.rs).

use super::*;
use crate::json_read::WriteJson;

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
        Scope::Project { project_id } => crate::text::concat(&["chatgpt:project:", project_id]),
        Scope::Conversation { site, conversation_id } => crate::text::concat(&[site.as_str(), ":conv:", conversation_id]),
    }
}

/// The delivery id of an inbox wake: `inbox:<ws>#<first task id>`, stable across worker
/// restarts. A task id the page's marker could not carry (whitespace, `]`) or that makes the
/// id longer than [`crate::limits::MAX_ID_CHARS`] is replaced by its FNV-1a hash (`h<hex>`).
pub fn inbox_delivery_id(workspace_id: &str, first_task: &str) -> String {
    let plain = crate::text::concat(&["inbox:", workspace_id, "#", first_task]);
    let marker_safe = !first_task.is_empty() && !first_task.chars().any(|c| c.is_whitespace() || c == ']');
    if marker_safe && crate::limits::within(&plain, crate::limits::MAX_ID_CHARS) {
        return plain;
    }
    let hash = first_task.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("inbox:{workspace_id}#h{hash:016x}")
}

/// The marker line that ends every delivered message: `[herdr-continuity <delivery id>
/// ref=<session ref>]`. The page confirms a delivery by finding its id in a new user turn;
/// the planner takes the chat's `browser_session_ref` for `herdr_prompt` from `ref=`. Only a
/// handoff seed into a conversation that has no id yet carries no ref
/// (`[herdr-continuity <delivery id>]`). A ref the marker could not carry (empty,
/// whitespace, `]`) gives `None`: the message is not typed (fail closed).
pub fn marker_line(delivery_id: &str, session_ref: Option<&str>) -> Option<String> {
    match session_ref {
        None => Some(crate::text::concat(&["[herdr-continuity ", delivery_id, "]"])),
        Some(r) if r.is_empty() || r.chars().any(|c| c.is_whitespace() || c == ']') => None,
        Some(r) => Some(crate::text::concat(&["[herdr-continuity ", delivery_id, " ref=", r, "]"])),
    }
}

/// `payload` inside the data fence of `protocol::fence` (its nonce `nonce`), after the
/// sentence in `language` that says the fenced text is data, not instructions.
pub fn fenced(language: Language, kind: &str, payload: &str, nonce: &continuity_protocol::fence::Nonce) -> String {
    let language = match language {
        Language::En => continuity_protocol::fence::FenceLanguage::En,
        Language::Zh => continuity_protocol::fence::FenceLanguage::Zh,
    };
    continuity_protocol::fence::fence_in(language, kind, payload, nonce)
}

/// The task-facts paragraph of a wake (I2): what each terminal task of this chat did, its
/// lines (ids, state, prompt, status, the output's last lines) inside one data fence
/// ([`fenced`], kind `agent_output`, nonce `nonce`): the status and output are the agents'.
pub fn task_facts(language: Language, tasks: &[InboxTask], inbox_missing: bool, nonce: &continuity_protocol::fence::Nonce) -> String {
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
        Language::En => format!("\nTerminal tasks of this chat ({}):\n", tasks.len()),
        Language::Zh => format!("\n此会话已结束的任务（{}）：\n", tasks.len()),
    };
    let mut facts = String::new();
    for task in tasks {
        let result = task.result.as_deref().unwrap_or_default();
        let (status, output) = result.split_once('\n').unwrap_or((result, ""));
        let status = bounded(&one_line(status), 120);
        if !facts.is_empty() {
            facts.push('\n');
        }
        facts.push_str(&format!(
            "- {} [{}] pane {}: {}",
            task.task_id,
            task.state,
            task.pane_id,
            bounded(&one_line(&task.prompt_preview), 120)
        ));
        if !status.is_empty() {
            facts.push_str(&format!(" → {status}"));
        }
        // Each output line on a line of its own (the page inserts them as paragraphs),
        // quoted with "| " (no leading spaces: a composer turns them into NBSPs).
        for line in last_lines(output, TASK_RESULT_MAX_CHARS) {
            facts.push_str(&format!("\n| {line}"));
        }
        // A model's guidance note is data like the output: inside the fence.
        if let Some(note) = task.guidance.as_ref().and_then(|g| super::guidance::note_line(g, language)) {
            facts.push_str(&note);
        }
    }
    out.push_str(&fenced(language, "agent_output", &facts, nonce));
    out.push_str(&super::guidance::advice_paragraph(language, tasks));
    out
}

/// `text` with every whitespace run (newlines included) turned into one space.
pub(super) fn one_line(text: &str) -> String {
    crate::text::one_line(text)
}

/// The last non-empty lines of `text` (trimmed) whose characters add up to at most
/// `max_chars`; a last line longer than that is cut at its start (`…` marks the cut).
pub fn last_lines(text: &str, max_chars: usize) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0;
    for line in text.lines().rev().map(str::trim).filter(|l| !l.is_empty()) {
        let len = crate::text::char_count(line);
        if used + len <= max_chars {
            used += len;
            kept.push(line.to_owned());
            continue;
        }
        if kept.is_empty() {
            let tail = crate::text::chars_from(line, len - max_chars.saturating_sub(1));
            kept.push(format!("…{tail}"));
        }
        break;
    }
    kept.reverse();
    kept
}

/// The Check Herdr text: a header line, then one block per pane (its id, agent, status and
/// the pane's text) inside one data fence ([`fenced`], kind `agent_output`), bounded in
/// total (the pane blocks are cut, never the fence's closing line).
pub fn check_herdr_summary(
    language: Language,
    workspace_id: &str,
    panes: &[PaneInfo],
    texts: &VecMap<String, String>,
    nonce: &continuity_protocol::fence::Nonce,
) -> String {
    let header = format!("[Herdr check] Workspace {workspace_id}: {} pane(s).\n", panes.len());
    let mut blocks = String::new();
    for pane in panes {
        let agent = pane.agent.as_deref().unwrap_or("no agent");
        if !blocks.is_empty() {
            blocks.push('\n');
        }
        blocks.push_str(&format!("## {} ({agent}, {})", pane.pane_id, pane.agent_status));
        if let Some(text) = texts.get(&pane.pane_id) {
            blocks.push('\n');
            blocks.push_str(text.trim_end());
        }
    }
    let budget = CHECK_HERDR_MAX_CHARS.saturating_sub(crate::text::char_count(&header) + continuity_protocol::fence::OVERHEAD_CHARS);
    let mut out = header;
    out.push_str(&fenced(language, "agent_output", &bounded(&blocks, budget), nonce));
    out
}

/// At most `max` characters; a cut text ends with `…`.
pub(super) fn bounded(text: &str, max: usize) -> String {
    if crate::text::char_count(text) <= max {
        return text.to_owned();
    }
    let mut cut = crate::text::first_chars(text, max.saturating_sub(1)).to_owned();
    cut.push('…');
    cut
}

/// A text of the HUD: a `_locales` message key and its `$1`… substitutions. The page
/// renders it with `chrome.i18n.getMessage(key, args)` in the browser's language (the same
/// choice as [`Continuity::language`]); the core writes no HUD sentence of its own, so
/// neither language's texts weigh on the wasm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct Say {
    /// The message key (`extension/_locales/*/messages.json`).
    pub key: String,
    /// Its substitutions, in order.
    pub args: Vec<String>,
}

impl Say {
    /// The message `key` with `args`.
    pub fn new(key: &str, args: Vec<String>) -> Self {
        Say { key: key.to_owned(), args }
    }

    /// The message `<prefix>_<code>` (one per variant of a reason enum).
    pub fn coded(prefix: &str, code: &str, args: Vec<String>) -> Self {
        Say { key: crate::text::concat(&[prefix, "_", code]), args }
    }
}

/// Why a *manual* Continue was not sent: unlike an automatic wake, nothing follows by
/// itself, so these four say to press Continue again; every other reason says what its
/// `withheld_<code>` text says.
pub const MANUAL_REFUSALS: [WakeWithheld; 4] =
    [WakeWithheld::HumanDraft, WakeWithheld::PageGenerating, WakeWithheld::UnconfirmedDelivery, WakeWithheld::NoComposer];

/// The `_locales` key of a queue refusal, with its substitutions (Q6).
pub fn queue_refusal_say(refusal: &crate::queue::QueueRefusal) -> Say {
    use crate::queue::{QueueRefusal as R, MAX_CONVERSATIONS, MAX_ITEMS, MAX_MERGED_CHARS};
    let (code, args) = match refusal {
        R::NoConversation => ("no_conversation", vec![]),
        R::EmptyText => ("empty_text", vec![]),
        R::TooManyItems { count } => ("too_many_items", vec![count.to_string(), MAX_ITEMS.to_string()]),
        R::TooLong { merged_chars } => ("too_long", vec![merged_chars.to_string(), MAX_MERGED_CHARS.to_string()]),
        R::TooManyConversations => ("too_many_conversations", vec![MAX_CONVERSATIONS.to_string()]),
        R::BadId => ("bad_id", vec![]),
        R::StorageUnreadable { detail } => ("storage_unreadable", vec![detail.clone()]),
        R::RecordUnreadable { detail } => ("record_unreadable", vec![detail.clone()]),
        R::QueueChanged => ("queue_changed", vec![]),
        R::AsideFailed { detail } => ("aside_failed", vec![detail.clone()]),
    };
    Say::coded("queueRefused", code, args)
}

impl Continuity {
    /// A notice to the page of `tab`.
    pub(super) fn notice(&mut self, tab: TabId, say: Say, tone: NoticeTone) {
        self.emit(ContinuityOutput::Notice { tab, say, tone });
    }

    /// Queues `output` for [`Continuity::poll`] (out of line: `VecDeque::push_back` was
    /// inlined at each of the ~50 places that decide something).
    #[inline(never)]
    pub(super) fn emit(&mut self, output: ContinuityOutput) {
        self.outputs.push_back(output);
    }

    /// Queues a [`ContinuityOutput::Persist`] (the most frequent output, one call).
    #[inline(never)]
    pub(super) fn persist(&mut self) {
        self.emit(ContinuityOutput::Persist);
    }

    /// Why a *manual* Continue was not sent ([`MANUAL_REFUSALS`]).
    pub(super) fn manual_refusal(reason: WakeWithheld) -> Say {
        let prefix = if MANUAL_REFUSALS.contains(&reason) { "manualRefused" } else { "withheld" };
        Say::coded(prefix, reason.wire_name(), vec![])
    }
}

/// What the user is told about the queue: `queueNote_<code>`.
pub(super) fn queue_note_say(note: &super::queue::QueueNote) -> Say {
    use super::queue::QueueNote as N;
    let code = match note {
        N::Queued => "queued",
        N::Cleared => "cleared",
        N::Expired => "expired",
        N::Undelivered => "undelivered",
        N::Resending => "resending",
        N::ClearedAside => return Say::coded("queueNote", "cleared_aside", vec![crate::queue::ASIDE_KEY.to_owned()]),
        N::ClearedForced(detail) => return Say::coded("queueNote", "cleared_forced", vec![detail.clone()]),
    };
    Say::coded("queueNote", code, vec![])
}

/// What follows a verdict in the HUD's judge line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeTail {
    /// Nothing (the HUD button's answer).
    None,
    /// Semantic Auto does not continue (done, uncertain, an error).
    Stops,
    /// A continue was sent: the `n`th of at most `max` in a row.
    Sent {
        /// The streak so far.
        n: u32,
        /// Its bound (M7).
        max: u32,
    },
    /// A continue was due but the page was not free.
    NotFree,
    /// A continue was due but Auto went off or the chat was unbound meanwhile.
    AutoOff,
}

impl JudgeTail {
    /// The `_locales` key of the judge line with this tail.
    pub fn key(self) -> &'static str {
        match self {
            JudgeTail::None => "judgeLine",
            JudgeTail::Stops => "judgeLine_stops",
            JudgeTail::Sent { .. } => "judgeLine_sent",
            JudgeTail::NotFree => "judgeLine_not_free",
            JudgeTail::AutoOff => "judgeLine_auto_off",
        }
    }
}

/// The turn-end judge's texts (HUD judge button, semantic Auto, its continue message); the
/// continue goes into the chat, so it is written here as a template with `$1`… filled in
/// once ([`Continuity::fill`]).
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
    pub(super) fn judge_line(&self, verdict: crate::semantic_auto::Verdict, source: &str, reason: &str, tail: JudgeTail) -> Say {
        let mut args = vec![source.to_owned(), self.verdict_word(verdict).to_owned(), reason.to_owned()];
        if let JudgeTail::Sent { n, max } = tail {
            args.push(n.to_string());
            args.push(max.to_string());
        }
        Say::new(tail.key(), args)
    }

    /// The verdict in the UI language (a substitution of the judge line).
    fn verdict_word(&self, verdict: crate::semantic_auto::Verdict) -> &'static str {
        use crate::semantic_auto::Verdict::*;
        match (self.language, verdict) {
            (Language::En, Continue) => "continue",
            (Language::En, Done) => "done",
            (Language::En, Uncertain) => "not sure",
            (Language::Zh, Continue) => "继续",
            (Language::Zh, Done) => "完成",
            (Language::Zh, Uncertain) => "不确定",
        }
    }

    /// The HUD button's answer: verdict, source, reason, and the J7 priors as advice.
    pub(super) fn judge_answer(&self, answer: &JudgeAnswer) -> Say {
        let mut say = self.judge_line(answer.verdict, &answer.source, &answer.reason, JudgeTail::None);
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
            say.key.push_str("_priors");
            say.args.push(priors);
        }
        say
    }

    /// The continue message semantic Auto types: which judge decided and why.
    /// The judge's reason is a model's output: it goes inside a data fence (`nonce`).
    pub(super) fn judge_continue_text(
        &self,
        source: &str,
        reason: &str,
        n: u32,
        max: u32,
        nonce: &continuity_protocol::fence::Nonce,
    ) -> String {
        let reason = fenced(self.language, "agent_output", reason, nonce);
        self.fill(
            "[Herdr] Continue: your last reply announced a next step of your own that is not done yet. The turn-end judge ($1) decided to continue; its reason follows. Go on with that step now; if it needs me or is already done, say so and stop. (Automatic continue $3 of at most $4 in a row.)\n$2",
            "[Herdr] 继续：你上一条回复宣布了自己的下一步，但还没有做。回合结束判断（$1）决定继续，理由见下。请现在继续这一步；如果它需要我或已经完成，请说明并停止。（连续自动继续第 $3 次，最多 $4 次。）\n$2",
            &[source, &reason, &n.to_string(), &max.to_string()],
        )
    }
}

/// Why semantic Auto did not ask about a reply: `semanticWithheld_<code>`; `None` when there
/// is nothing to say (Auto off, judge use not "in Auto", not ChatGPT, busy).
pub(super) fn semantic_withheld_say(why: crate::semantic_auto::SemanticWithheld) -> Option<Say> {
    use crate::semantic_auto::SemanticWithheld::*;
    match why {
        ModeOff | AutoOff | NotChatGpt | Busy => None,
        UserStopped => Some(Say::new("hudUserStopped", vec![])),
        QueueFirst | StreakLimit | JudgedBefore | ShortReply => Some(Say::coded("semanticWithheld", why.wire_name(), vec![])),
    }
}

/// Why a wake (or a manual action) is held back: `withheld_<code>`.
pub fn withheld_say(reason: WakeWithheld) -> Say {
    Say::coded("withheld", reason.wire_name(), vec![])
}

/// Why a HUD control is locked: `locked_<code>`.
pub fn locked_say(locked: crate::auto_gate::ActionLocked) -> Say {
    Say::coded("locked", locked.wire_name(), vec![])
}

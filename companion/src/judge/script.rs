//! The bounded mechanical script: the last stage of the turn-end judge (SPEC J2, J3), so a
//! user with no provider still gets basic Auto. English and Chinese.
//!
//! It answers one narrow question — does the reply's end announce a step the assistant
//! itself is about to do? — and fails closed: anything it cannot read as that is `done`.
//! A false continue is the error users notice (an automatic message nobody wanted), a
//! missed one costs a click on Continue.
//!
//! How it reads a reply (only its last [`TAIL_CHARS`] characters):
//! 1. Code blocks, quoted text ("…", “…”, 「…」, `…`) and courtesies ("thanks for your
//!    patience", 感谢耐心等待) are dropped: a quoted "next I will run the tests" is someone
//!    else's sentence.
//! 2. A reply that ends with a question is `done` (it asks the user).
//! 3. The last sentence that announces a step of the assistant's own is found: first
//!    person and future or now ("I'll", "let me", "I'm writing", 我会, 我来, 我正在, 我这就;
//!    我把… / 我就… only without the perfective 了 or 已), a pending obligation ("I still
//!    need to", 还需要, 仍需, 还没写), a "Next:" line whose content is the assistant's
//!    ("Next: I'll …", 下一步：我 …), or a progress marker ("doing this now", "in progress",
//!    进行中, ⏳), or a clause that starts with a gerund and ends in "now" / "next". A
//!    sentence does not count when it is conditional on something else (once, when, if,
//!    until, 等它, 之后, 如果), reports what was said (said, 说), speaks to the user (you,
//!    你 — "say the word and I'll…"), or announces no work ("I'll leave it", 保持现状).
//!    None: `done`.
//! 4. **Stop signs** in that sentence or after it make the reply `done` — a stop sign
//!    before it describes what was, not what is next: it addresses the user (let me know,
//!    if you want, you can, please, 告诉我, 如果你, 需要你 …); it offers optional extras (I
//!    can also, happy to, 我还可以 …); it is blocked on the user (blocked, unable to, until
//!    you, 无法继续, 在那之前 …); it waits on an agent, a build or CI (waiting for, once it,
//!    will wake, 等待, 完成后, 唤醒 …); or it says nothing is left (nothing left, no
//!    remaining work, 没有剩余, 就到这里 …).
//! 5. Otherwise: `continue`.
//!
//! The phrase lists are ours, written for this project; `companion/tests/fixtures/
//! judge-corpus.jsonl` measures them (`npm run bench`).

/// Characters of the reply's end that are read.
pub const TAIL_CHARS: usize = 3_000;

/// The script's verdict: continue only on an explicit pending step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptVerdict {
    /// Whether the reply announces a step of the assistant's own.
    pub pending: bool,
    /// Why, in one line (quotes the deciding sentence or names the stop sign).
    pub reason: String,
}

/// Stop signs: (phrase, what it shows). Matched on the lower-cased, unquoted tail.
const STOP_SIGNS: &[(&str, &str)] = &[
    // Addressed to the user.
    ("let me know", "asks the user to reply"),
    ("tell me", "asks the user to reply"),
    ("if you ", "leaves the choice to the user"),
    ("if you'd", "leaves the choice to the user"),
    ("would you", "asks the user"),
    ("do you want", "asks the user"),
    ("want me to", "asks the user"),
    ("your call", "leaves the choice to the user"),
    ("for you", "gives the user the next steps"),
    ("you'll need", "gives the user the next steps"),
    ("you will need", "gives the user the next steps"),
    ("you need to", "gives the user the next steps"),
    ("you can ", "gives the user the next steps"),
    ("you'll get", "tells the user what comes next"),
    ("please", "asks the user to act"),
    ("your side", "gives the user the next steps"),
    ("your machine", "gives the user the next steps"),
    ("when you", "waits for the user"),
    ("anything else", "asks the user"),
    ("say the word", "waits for the user's word"),
    ("just say", "waits for the user's word"),
    ("ping me", "waits for the user's word"),
    ("go-ahead", "waits for the user's word"),
    ("i need you", "needs the user"),
    ("i need your", "needs the user"),
    // Optional offers.
    ("i can also", "offers optional extras"),
    ("i could also", "offers optional extras"),
    ("happy to", "offers optional extras"),
    ("optionally", "offers optional extras"),
    ("if it helps", "offers optional extras"),
    ("if that becomes", "offers optional extras"),
    // Blocked on the user.
    ("blocked", "is blocked"),
    ("can't continue", "is blocked"),
    ("cannot continue", "is blocked"),
    ("can't proceed", "is blocked"),
    ("cannot proceed", "is blocked"),
    ("unable to", "is blocked"),
    ("i've stopped", "has stopped"),
    ("i have stopped", "has stopped"),
    ("stopped here", "has stopped"),
    ("until you", "waits for the user"),
    ("until then", "waits for something else"),
    ("need a decision", "needs the user's decision"),
    ("only you", "needs the user"),
    ("waiting for you", "waits for the user"),
    ("approve", "needs the user's approval"),
    // Waiting on an agent, a build or CI.
    ("waiting on", "waits for something else"),
    ("waiting for", "waits for something else"),
    ("wait for", "waits for something else"),
    ("once it", "waits for something else"),
    ("once they", "waits for something else"),
    ("once ci", "waits for something else"),
    ("when it finishes", "waits for something else"),
    ("when it completes", "waits for something else"),
    ("when they report", "waits for something else"),
    ("when the agent", "waits for an agent"),
    ("when the pane", "waits for an agent"),
    ("report back", "waits for an agent"),
    ("will wake", "waits for the settle wake"),
    ("wake message", "waits for the settle wake"),
    ("the wake will", "waits for the settle wake"),
    ("still in progress", "waits for something else"),
    ("still running", "waits for something else"),
    ("will take a while", "waits for something else"),
    ("ci is running", "waits for CI"),
    // Nothing left.
    ("nothing else is left", "says nothing is left"),
    ("nothing else to", "says nothing is left"),
    ("nothing else left", "says nothing is left"),
    ("nothing left", "says nothing is left"),
    ("nothing more to", "says nothing is left"),
    ("no remaining", "says nothing is left"),
    ("no further", "says nothing is left"),
    ("decided not to", "says nothing is left"),
    ("that's everything", "says nothing is left"),
    ("that's all", "says nothing is left"),
    ("the task is complete", "says the task is complete"),
    ("all done", "says the task is complete"),
    // 对用户说的。
    ("告诉我", "asks the user to reply"),
    ("如果你", "leaves the choice to the user"),
    ("如有需要", "leaves the choice to the user"),
    ("需要的话", "leaves the choice to the user"),
    ("要不要", "asks the user"),
    ("是否需要", "asks the user"),
    ("你想", "asks the user"),
    ("请你", "asks the user to act"),
    ("请到", "asks the user to act"),
    ("请在", "asks the user to act"),
    ("请安装", "asks the user to act"),
    ("请告诉", "asks the user to reply"),
    ("请确认", "asks the user to act"),
    ("需要你", "needs the user"),
    ("你可以", "gives the user the next steps"),
    ("你来", "gives the user the next steps"),
    ("你自己", "gives the user the next steps"),
    ("你那边", "gives the user the next steps"),
    ("你的机器", "gives the user the next steps"),
    ("你会收到", "tells the user what comes next"),
    ("等你", "waits for the user"),
    ("一句话", "waits for the user's word"),
    ("说一声", "waits for the user's word"),
    ("替你", "needs the user"),
    // 可选的提议。
    ("我也可以", "offers optional extras"),
    ("我还可以", "offers optional extras"),
    ("也可以再", "offers optional extras"),
    ("如果有帮助", "offers optional extras"),
    // 被用户阻塞。
    ("被阻塞", "is blocked"),
    ("阻塞了", "is blocked"),
    ("无法继续", "is blocked"),
    ("没法继续", "is blocked"),
    ("不能继续", "is blocked"),
    ("先停", "has stopped"),
    ("停在这里", "has stopped"),
    ("只有你", "needs the user"),
    ("在那之前", "waits for something else"),
    ("批准", "needs the user's approval"),
    // 等待 agent、构建或 CI。
    ("等待", "waits for something else"),
    ("在等", "waits for something else"),
    ("等它", "waits for something else"),
    ("完成后", "waits for something else"),
    ("结束时", "waits for something else"),
    ("跑完之前", "waits for something else"),
    ("跑完后", "waits for something else"),
    ("跑完再", "waits for something else"),
    ("回报后", "waits for an agent"),
    ("还在跑", "waits for something else"),
    ("唤醒", "waits for the settle wake"),
    ("一段时间", "waits for something else"),
    // 没有剩余工作。
    ("没有剩余", "says nothing is left"),
    ("没有别的", "says nothing is left"),
    ("不继续", "says nothing is left"),
    ("就到这里", "says nothing is left"),
    ("任务完成", "says the task is complete"),
    ("全部完成", "says the task is complete"),
];

/// Courtesy phrases that say nothing about the work (dropped before reading).
const COURTESIES: &[&str] = &[
    "thanks for your patience",
    "thank you for your patience",
    "thanks for waiting",
    "感谢耐心等待",
    "感谢你的耐心",
    "谢谢耐心等待",
    "谢谢等待",
];

/// English openings of the assistant's own next step (at a word start).
const EN_OWN_STEP: &[&str] = &[
    "i'll ",
    "i will ",
    "i'm going to ",
    "i am going to ",
    "let me ",
    "i still need to ",
    "i still have to ",
    "i need to ",
    "i have to ",
    "moving on to ",
    "i'm now ",
    "my next step",
    "next thing i",
];

/// English progress markers.
const EN_PROGRESS: &[&str] = &["doing that now", "doing this now", "working on it", "starting now", "in progress", "⏳"];

/// "-ing" words after "I'm" that are not work.
const EN_NOT_WORK: &[&str] = &["waiting", "hoping", "thinking", "assuming", "guessing", "wondering", "going", "missing"];

/// First-person phrases that announce no work.
const EN_NOT_A_STEP: &[&str] = &[
    "i'll leave",
    "i will leave",
    "i'll keep it",
    "i'll stop",
    "i'll skip",
    "i'll wait",
    "i'll hold",
    "i'll pause",
    "i won't",
    "i will not",
    "i'll not",
];

/// Chinese phrases that announce no work.
const ZH_NOT_A_STEP: &[&str] = &["保持现状", "先不", "不再", "不打算", "暂不"];

/// English words that make a sentence conditional on something else.
const EN_CONDITIONAL: &[&str] = &["once ", "when ", "if ", "until ", "as soon as", "whenever "];

/// English words that report what was said rather than say it.
const EN_REPORTED: &[&str] = &["said", "earlier", "says", "wrote"];

/// English "Next:" labels.
const EN_LABELS: &[&str] = &["next:", "next step:", "next steps:", "next up:", "next action:", "next,", "now,", "then:"];

/// Chinese first-person openings: 我 followed by one of these.
const ZH_AFTER_I: &[&str] = &["会", "将", "要", "来", "再", "接着", "继续", "这就", "马上", "现在", "正", "先", "去"];

/// Chinese pending obligations.
const ZH_PENDING: &[&str] =
    &["还需要", "仍需", "还要", "还缺", "尚需", "还没写", "还没做", "还没完成", "还没验证", "还没看", "还没跑", "还没接", "尚未", "仍未"];

/// Chinese progress markers.
const ZH_PROGRESS: &[&str] = &["正在做", "正在进行", "进行中", "现在开始", "这就去", "⏳"];

/// Chinese "next" words; the content after them must be the assistant's.
const ZH_NEXT: &[&str] = &["接下来", "下一步"];

/// What may follow a Chinese "next" word for it to be the assistant's own step.
const ZH_NEXT_OWN: &[&str] = &["我", "要", "先", "就", "会", "将", "来"];

/// Chinese words that make a sentence conditional on something else.
const ZH_CONDITIONAL: &[&str] = &["等它", "等他", "等到", "之后", "以后", "如果", "一旦", "后我"];

/// Chinese words that report what was said.
const ZH_REPORTED: &[&str] = &["说", "写着", "提到"];

/// Judges `text`, the assistant's reply.
pub fn judge(text: &str) -> ScriptVerdict {
    let tail = crate::providers::tail_chars(text, TAIL_CHARS);
    let plain = unquoted(tail);
    let mut lower = normalise(&plain);
    for courtesy in COURTESIES {
        lower = lower.replace(courtesy, " ");
    }
    let sentences = sentences(&lower);
    if let Some(last) = sentences.last() {
        if last.ends_with('?') || last.ends_with('？') {
            return done("the reply ends with a question to the user");
        }
    }
    // The closing decides: the last sentence that announces an own step, and everything
    // after it, must be free of stop signs; a stop sign before it describes what was.
    let Some((at, why)) = sentences.iter().enumerate().rev().find_map(|(at, s)| own_step(s).map(|why| (at, why))) else {
        return done("no step of the assistant's own is announced");
    };
    for sentence in &sentences[at..] {
        if let Some((phrase, shows)) = STOP_SIGNS.iter().find(|(phrase, _)| contains_at_word(sentence, phrase)) {
            return done(&format!("the reply {shows} (\"{}\")", phrase.trim()));
        }
    }
    ScriptVerdict { pending: true, reason: format!("the reply announces its own next step ({why}): \"{}\"", clip(&sentences[at], 100)) }
}

fn done(why: &str) -> ScriptVerdict {
    ScriptVerdict { pending: false, reason: format!("{why}; the script fails closed: done") }
}

/// Why `sentence` announces the assistant's own next step, if it does.
fn own_step(sentence: &str) -> Option<&'static str> {
    let en_blocked =
        EN_CONDITIONAL.iter().any(|w| contains_at_word(sentence, w)) || EN_REPORTED.iter().any(|w| contains_at_word(sentence, w));
    // "After this" (这之后, 此后) is the assistant's own order of work, not a wait.
    let zh_plain = sentence.replace("这之后", "").replace("此后", "");
    let zh_blocked = ZH_CONDITIONAL.iter().any(|w| zh_plain.contains(w)) || ZH_REPORTED.iter().any(|w| sentence.contains(w));
    // A step that waits for the user's word, or is addressed to them, is not the
    // assistant's own ("say the word and I'll…", 你一句话我就…).
    let second_person = ["you", "your", "you'll", "you've", "you're"].iter().any(|w| contains_at_word(sentence, w))
        || sentence.contains('你')
        || sentence.contains('您');
    // First person, but not work: leaving things as they are, stopping, waiting.
    let not_work = EN_NOT_A_STEP.iter().any(|w| contains_at_word(sentence, w)) || ZH_NOT_A_STEP.iter().any(|w| sentence.contains(w));
    if en_blocked || zh_blocked || second_person || not_work {
        return None;
    }
    let body = strip_list_marker(sentence);
    for label in EN_LABELS {
        if let Some(rest) = body.strip_prefix(label) {
            return en_own_content(rest.trim_start()).then_some("a \"next\" line of its own");
        }
    }
    if EN_OWN_STEP.iter().any(|w| contains_at_word(sentence, w)) {
        return Some("first person, next or now");
    }
    if progressive_first_person(sentence) {
        return Some("first person, in progress");
    }
    if EN_PROGRESS.iter().any(|w| sentence.contains(w)) {
        return Some("a progress marker");
    }
    let end = sentence.trim_end_matches(['.', '!', ')']);
    if starts_with_ing(body) && (end.ends_with(" now") || end.ends_with(" next")) {
        return Some("doing it now");
    }
    if body.starts_with("going to ") {
        return Some("first person, next or now");
    }
    for next in ZH_NEXT {
        for (at, _) in sentence.match_indices(next) {
            let before = &sentence[..at];
            let after = sentence[at + next.len()..].trim_start_matches([':', '：', ' ', '—', '-', '*']);
            let after = after.strip_prefix("是").unwrap_or(after);
            if before.ends_with('我') || ZH_NEXT_OWN.iter().any(|w| after.starts_with(w)) {
                return Some("下一步 of its own");
            }
        }
    }
    for (at, _) in sentence.match_indices('我') {
        let after = &sentence[at + '我'.len_utf8()..];
        if ZH_AFTER_I.iter().any(|w| after.starts_with(w)) {
            return Some("first person, next or now");
        }
    }
    // 我把…/我就… announce an action unless the perfective 了 says it is already done.
    if (sentence.contains("我把") || sentence.contains("我就")) && !sentence.contains('了') && !sentence.contains('已') {
        return Some("first person, an action to do");
    }
    if ZH_PENDING.iter().any(|w| sentence.contains(w)) {
        return Some("a pending obligation");
    }
    if ZH_PROGRESS.iter().any(|w| sentence.contains(w)) {
        return Some("a progress marker");
    }
    None
}

/// Whether the content of a "Next:" line is the assistant's: first person, a gerund, or
/// marked as being done now.
fn en_own_content(rest: &str) -> bool {
    ["i ", "i'll", "i'm", "i will", "let me", "we'll"].iter().any(|w| rest.starts_with(w))
        || starts_with_ing(rest)
        || EN_PROGRESS.iter().any(|w| rest.contains(w))
        || rest.trim_end_matches(['.', ')']).ends_with(" now")
}

/// "i'm <word>ing" / "i am <word>ing" with a work verb.
fn progressive_first_person(sentence: &str) -> bool {
    ["i'm ", "i am "].iter().any(|opening| {
        sentence.match_indices(opening).any(|(at, _)| {
            at_word_start(sentence, at) && {
                let word: String = sentence[at + opening.len()..].chars().take_while(|c| c.is_ascii_alphabetic() || *c == '-').collect();
                word.len() > 4 && word.ends_with("ing") && !EN_NOT_WORK.contains(&word.as_str())
            }
        })
    })
}

fn starts_with_ing(text: &str) -> bool {
    let word: String = text.chars().take_while(|c| c.is_ascii_alphabetic() || *c == '-').collect();
    word.len() > 4 && word.ends_with("ing") && !EN_NOT_WORK.contains(&word.as_str())
}

/// Drops list bullets, numbers, check boxes and emphasis at a sentence's start.
fn strip_list_marker(sentence: &str) -> &str {
    let mut rest = sentence.trim_start();
    loop {
        let before = rest;
        rest = rest.trim_start_matches(['-', '*', '•', '#', '>', ' ', '\t']);
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && rest[digits..].starts_with(['.', ')']) {
            rest = &rest[digits + 1..];
        }
        for box_ in ["[x]", "[ ]", "[todo]", "[done]"] {
            if let Some(after) = rest.strip_prefix(box_) {
                rest = after;
            }
        }
        if rest == before {
            return rest;
        }
    }
}

/// Whether `phrase` occurs in `text` as whole words (an ASCII phrase: a word starts where
/// it starts and, when it ends in a letter, ends where it ends — "for you" is not in "for
/// your"), or anywhere (a phrase in another script).
fn contains_at_word(text: &str, phrase: &str) -> bool {
    if !phrase.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return text.contains(phrase);
    }
    let open_end = !phrase.ends_with(|c: char| c.is_alphanumeric());
    text.match_indices(phrase).any(|(at, _)| {
        at_word_start(text, at) && (open_end || text[at + phrase.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '\''))
    })
}

fn at_word_start(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric() && c != '\'')
}

/// Lower case, one kind of apostrophe, no emphasis marks (`**Next**:` reads `next:`).
fn normalise(text: &str) -> String {
    text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'").replace('*', "")
}

/// `text` without fenced code blocks and without quoted spans (kept short: a stray quote
/// must not swallow the rest of the reply).
fn unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            out.push_str(&drop_quoted(line));
            out.push('\n');
        }
    }
    out
}

/// One line without its quoted spans: ASCII double quotes and backticks in pairs, and the
/// curly and corner quotes, each span at most 200 characters.
fn drop_quoted(line: &str) -> String {
    const PAIRS: [(char, char); 5] = [('"', '"'), ('`', '`'), ('“', '”'), ('「', '」'), ('『', '』')];
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        let open = chars[i];
        if let Some(&(_, close)) = PAIRS.iter().find(|(o, _)| *o == open) {
            if let Some(len) = chars[i + 1..].iter().take(200).position(|c| *c == close) {
                out.push(' ');
                i += len + 2;
                continue;
            }
        }
        out.push(open);
        i += 1;
    }
    out
}

/// Sentences: lines split after `。！？；` and after `.!?;` that end a sentence (followed by
/// a space or the line's end, so `config.rs` stays one word). Empty pieces are dropped.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut current = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            current.push(c);
            // A dash starts a new clause too ("… is red — fixing it now").
            let ends = matches!(c, '。' | '！' | '？' | '；' | '—' | '–')
                || (matches!(c, '.' | '!' | '?' | ';') && chars.peek().is_none_or(|n| n.is_whitespace()));
            if ends {
                push_sentence(&mut out, &current);
                current.clear();
            }
        }
        push_sentence(&mut out, &current);
    }
    out
}

fn push_sentence(out: &mut Vec<String>, sentence: &str) {
    let trimmed = sentence.trim();
    if trimmed.chars().any(char::is_alphanumeric) {
        out.push(trimmed.to_owned());
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_text_and_code_are_not_read() {
        assert_eq!(drop_quoted(r#"it printed "next I will run" and `let me` there"#), "it printed   and   there");
        assert_eq!(drop_quoted("a stray \" quote stays"), "a stray \" quote stays");
        assert_eq!(unquoted("a\n```\nI'll run it\n```\nb"), "a\nb\n");
    }

    #[test]
    fn sentences_split_at_ends_but_not_inside_file_names() {
        assert_eq!(sentences("edit config.rs now. then test! 好的。再说"), ["edit config.rs now.", "then test!", "好的。", "再说"]);
        assert_eq!(sentences("one test is red — fixing it now"), ["one test is red —", "fixing it now"]);
    }

    /// One reply per rule of the module doc, with what the script says about it.
    #[test]
    fn each_rule_reads_as_documented() {
        let replies = [
            "Schema migrated. I'll wire the HUD text next.",
            "Schema migrated. I'll wire the HUD text next. Let me know if the wording should change.",
            "Schema migrated and the HUD text is wired. Should I also update the screenshots?",
            "The HUD waits for the page to be idle. I'll wire the text now.",
            "I'll wire the HUD text once the agent in w1:p2 settles.",
            "Say the word and I'll wire the HUD text too.",
            "The plan said \"next I will wire the HUD\"; that is done and committed.",
            "- [x] schema\n- [ ] HUD text\nNext: wiring the HUD text (in progress)",
            "Next: review the diff and merge it when you are happy with it.",
            "schema 已迁移。接下来我会接 HUD 的文案。",
            "schema 已迁移，HUD 文案也接好了。需要的话我还可以更新截图。",
            "我已经把 HUD 文案接好了，测试也通过。",
        ];
        let printed: Vec<String> = replies
            .iter()
            .map(|reply| {
                let verdict = judge(reply);
                format!("{} | {}", if verdict.pending { "continue" } else { "done    " }, verdict.reason)
            })
            .collect();
        expect_test::expect![[r#"
            continue | the reply announces its own next step (first person, next or now): "i'll wire the hud text next."
            done     | the reply asks the user to reply ("let me know"); the script fails closed: done
            done     | the reply ends with a question to the user; the script fails closed: done
            continue | the reply announces its own next step (first person, next or now): "i'll wire the text now."
            done     | no step of the assistant's own is announced; the script fails closed: done
            done     | the reply waits for the user's word ("say the word"); the script fails closed: done
            done     | no step of the assistant's own is announced; the script fails closed: done
            continue | the reply announces its own next step (a "next" line of its own): "next: wiring the hud text (in progress)"
            done     | no step of the assistant's own is announced; the script fails closed: done
            continue | the reply announces its own next step (下一步 of its own): "接下来我会接 hud 的文案。"
            done     | no step of the assistant's own is announced; the script fails closed: done
            done     | no step of the assistant's own is announced; the script fails closed: done"#]]
        .assert_eq(&printed.join("\n"));
    }

    #[test]
    fn list_markers_are_dropped() {
        assert_eq!(strip_list_marker("- [x] done"), "done");
        assert_eq!(strip_list_marker("3. next: fix it"), "next: fix it");
        assert_eq!(strip_list_marker(&normalise("- **Next**: I'm")), "next: i'm");
    }
}

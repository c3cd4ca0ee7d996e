//! An OpenAI-compatible chat completion asked for a verdict (`openai-chat` routes).
//!
//! The route's `url` is the API base: `…/v1` gets `/chat/completions` appended, a URL that
//! already ends in `/chat/completions` is used as it is, anything else gets
//! `/v1/chat/completions`. The model is told to answer one JSON object
//! `{"verdict": "continue" | "done" | "unsure", "reason": "…"}`; the first `{…}` of the
//! reply's content that is a JSON object (of at most 8 KiB, among its first 32 `{…}`) is
//! read, so a model that wraps it in prose or a code fence still counts, but a reply with
//! no such object, or another verdict word, is garbage. Reading is linear in the reply.

use std::time::Duration;

use serde_json::{json, Value};

use super::{post_json, tail_chars, ProviderError, Turn, MAX_ASSISTANT_CHARS, MAX_USER_CHARS};
use crate::config::Route;

/// Characters of the model's reason kept.
pub const MAX_REASON_CHARS: usize = 300;

/// What the model is asked to do.
const SYSTEM_PROMPT: &str = "You review the final message of one turn in a chat where an assistant plans software \
work and directs coding agents. Decide whether the assistant stopped before a step it said it would do itself next.\n\
Answer \"continue\" only when the message announces or is in the middle of a concrete next step of the assistant's \
own that needs nothing from anyone else.\n\
Answer \"done\" when the work is finished, when the remaining steps are for the user, when the assistant only offers \
optional extras, asks the user something, needs the user's decision, credentials or approval, or waits for an \
agent, a build or CI.\n\
Answer \"unsure\" when you cannot tell.\n\
Reply with one JSON object and nothing else: {\"verdict\": \"continue\" | \"done\" | \"unsure\", \"reason\": \"<one short sentence>\"}";

/// The model's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatVerdict {
    /// Work the assistant means to do is left.
    Continue,
    /// The turn is over.
    Done,
    /// The model could not tell.
    Unsure,
}

/// A chat route's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatAnswer {
    /// The verdict.
    pub verdict: ChatVerdict,
    /// The model's one-line reason (≤ [`MAX_REASON_CHARS`]).
    pub reason: String,
}

/// The completions URL for a route's base `url`.
pub fn endpoint(url: &str) -> String {
    let base = url.trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_owned()
    } else if base.ends_with("/v1") {
        format!("{base}/chat/completions")
    } else {
        format!("{base}/v1/chat/completions")
    }
}

/// The request body for `turn`.
pub fn request_body(route: &Route, turn: Turn<'_>) -> Value {
    let content = format!(
        "User message:\n{}\n\nAssistant's final message:\n{}",
        tail_chars(turn.user_text, MAX_USER_CHARS),
        tail_chars(turn.assistant_text, MAX_ASSISTANT_CHARS)
    );
    json!({
        "model": route.model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": content},
        ],
    })
}

/// Asks `route` about `turn`.
pub async fn ask(client: &reqwest::Client, route: &Route, turn: Turn<'_>, timeout: Duration) -> Result<ChatAnswer, ProviderError> {
    let answer = post_json(client, route, &endpoint(&route.url), &request_body(route, turn), timeout).await?;
    read_answer(&answer)
}

/// Reads `choices[0].message.content` and the verdict object in it.
pub fn read_answer(answer: &Value) -> Result<ChatAnswer, ProviderError> {
    let content = answer
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::Garbage("no `choices[0].message.content`".to_owned()))?;
    let object = first_object(content).ok_or_else(|| ProviderError::Garbage("no JSON verdict object in the reply".to_owned()))?;
    let verdict = match object.get("verdict").and_then(Value::as_str).map(str::trim).map(str::to_ascii_lowercase).as_deref() {
        Some("continue") => ChatVerdict::Continue,
        Some("done") => ChatVerdict::Done,
        Some("unsure") | Some("uncertain") => ChatVerdict::Unsure,
        other => return Err(ProviderError::Garbage(format!("verdict {other:?} is not continue, done or unsure"))),
    };
    let reason: String = object.get("reason").and_then(Value::as_str).unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ");
    Ok(ChatAnswer { verdict, reason: reason.chars().take(MAX_REASON_CHARS).collect() })
}

/// Longest `{…}` tried as the verdict: the object is one word and one short sentence, so a
/// longer span is prose or code, and parsing it would only cost time.
const MAX_VERDICT_BYTES: usize = 8 * 1024;

/// Most spans parsed in one reply: with [`MAX_VERDICT_BYTES`] this bounds the parsing to
/// 256 KiB (one answer's size), whatever the reply holds.
const MAX_PARSES: usize = 32;

/// The first `{…}` in `text` (by where it starts) that parses as a JSON object.
///
/// Linear in `text` (review 42 F1): the candidates are found in two single passes — one
/// that counts braces only (a brace quoted in prose does not hide the object after it),
/// one that skips braces inside JSON strings (a `}` in the reason does not cut the
/// object) — and at most [`MAX_PARSES`] of them, each at most [`MAX_VERDICT_BYTES`], are
/// parsed. Restarting a scan at every `{` instead cost n²/2 steps on unbalanced braces,
/// synchronously on one of the runtime's two async workers.
fn first_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let mut spans = first_spans(text, false);
    spans.extend(first_spans(text, true));
    spans.sort_unstable();
    spans.dedup();
    spans.into_iter().take(MAX_PARSES).find_map(|(start, end)| match serde_json::from_str::<Value>(&text[start..end]) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    })
}

/// The [`MAX_PARSES`] balanced `{…}` of `text` that start first, each at most
/// [`MAX_VERDICT_BYTES`], as byte ranges, found in one pass: each `}` closes the latest open
/// `{`. With `strings`, a `"` inside an open `{` starts a JSON string (with `\` escapes)
/// whose braces do not count; outside any `{` a quote is prose and starts nothing. Only
/// the first few are kept (a max-heap on the start), so a reply of many small `{…}` costs
/// no more memory or sorting than a short one.
fn first_spans(text: &str, strings: bool) -> Vec<(usize, usize)> {
    let mut open = Vec::new();
    let mut first = std::collections::BinaryHeap::with_capacity(MAX_PARSES + 1);
    let mut in_strings = crate::json_text::Strings::default();
    for (at, byte) in text.bytes().enumerate() {
        if in_strings.skip(byte) {
            continue;
        }
        match byte {
            b'"' if strings && !open.is_empty() => in_strings.open(),
            b'{' => open.push(at),
            b'}' => {
                let Some(start) = open.pop() else { continue };
                let later = first.len() == MAX_PARSES && first.peek().is_some_and(|&(latest, _)| latest < start);
                if at + 1 - start <= MAX_VERDICT_BYTES && !later {
                    first.push((start, at + 1));
                    if first.len() > MAX_PARSES {
                        first.pop();
                    }
                }
            }
            _ => {}
        }
    }
    first.into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(content: &str) -> Value {
        json!({"choices": [{"message": {"role": "assistant", "content": content}}]})
    }

    #[test]
    fn the_verdict_object_is_found_and_checked() {
        let read = |content: &str| read_answer(&reply(content)).map(|a| a.verdict);
        assert_eq!(read(r#"{"verdict":"continue","reason":"says next I will run the tests"}"#), Ok(ChatVerdict::Continue));
        assert_eq!(read("Sure.\n```json\n{\"verdict\": \"DONE\", \"reason\": \"finished\"}\n```"), Ok(ChatVerdict::Done));
        assert_eq!(read(r#"{"verdict":"unsure"}"#), Ok(ChatVerdict::Unsure));
        assert!(read(r#"{"verdict":"maybe"}"#).is_err());
        assert!(read("continue").is_err(), "a bare word is not the documented answer");
        assert!(read_answer(&json!({"error": "overloaded"})).is_err());
    }

    /// The verdict is found after prose, inside prose braces and with braces in its strings,
    /// however much prose comes first.
    #[test]
    fn the_verdict_object_is_found_among_prose_and_braces() {
        let read = |content: &str| read_answer(&reply(content)).map(|a| (a.verdict, a.reason));
        let done = |reason: &str| Ok((ChatVerdict::Done, reason.to_owned()));
        assert_eq!(read(r#"Plan: {not json} then {"verdict":"done","reason":"r"}"#), done("r"));
        assert_eq!(read(r#"I think {maybe. {"verdict":"done","reason":"r"}"#), done("r"), "an unclosed prose brace");
        assert_eq!(read(r#"He typed "{" then {"verdict":"done","reason":"r"}"#), done("r"), "a quoted prose brace");
        assert_eq!(read(r#"{"verdict":"done","reason":"the } and { in a string"}"#), done("the } and { in a string"));
        let after_prose = format!("{}\n{{\"verdict\":\"done\",\"reason\":\"r\"}}", "so much prose. ".repeat(10_000));
        assert_eq!(read(&after_prose), done("r"), "a verdict after 150 KB of prose");
    }

    /// Review 42 F1: the verdict finder restarted a scan to the end of the reply at every
    /// `{`, so a reply of unbalanced braces (up to MAX_ANSWER_BYTES, 256 KiB) cost n²/2
    /// steps — about 17 minutes in a debug build — synchronously on one of the runtime's
    /// two async workers. One pass reads each of these in tens of milliseconds in a debug
    /// build on a loaded machine; the bound (20 s, in a thread so the old code fails instead
    /// of hanging the suite) is no speed target: it separates the two by orders of magnitude
    /// either way, so a loaded test machine cannot make it fail.
    #[test]
    fn a_reply_of_hostile_braces_is_read_in_linear_time() {
        let n = super::super::MAX_ANSWER_BYTES;
        let hostile = [
            "{".repeat(n),
            r#"{"a":"#.repeat(n / 5),
            format!("{}{}", "{".repeat(n / 2), "}".repeat(n / 2)),
            "{x}".repeat(n / 3),
            r#"{"a":"{"#.repeat(n / 7),
        ];
        for content in hostile {
            let (done, finished) = std::sync::mpsc::channel();
            let head: String = content.chars().take(12).collect();
            std::thread::spawn(move || {
                let _ = done.send(read_answer(&reply(&content)).is_err());
            });
            let outcome = finished.recv_timeout(std::time::Duration::from_secs(20));
            assert_eq!(outcome, Ok(true), "256 KiB starting {head:?} was not refused within 20 s");
        }
    }

    #[test]
    fn the_endpoint_follows_the_base() {
        assert_eq!(endpoint("https://api.example.test/v1"), "https://api.example.test/v1/chat/completions");
        assert_eq!(endpoint("https://api.example.test/"), "https://api.example.test/v1/chat/completions");
        assert_eq!(endpoint("http://127.0.0.1:8/v1/chat/completions"), "http://127.0.0.1:8/v1/chat/completions");
    }
}

//! An OpenAI-compatible chat completion asked for a verdict (`openai-chat` routes).
//!
//! The route's `url` is the API base: `…/v1` gets `/chat/completions` appended, a URL that
//! already ends in `/chat/completions` is used as it is, anything else gets
//! `/v1/chat/completions`. The model is told to answer one JSON object
//! `{"verdict": "continue" | "done" | "unsure", "reason": "…"}`; the first `{…}` of the
//! reply's content is read, so a model that wraps it in prose or a code fence still counts,
//! but a reply with no such object, or another verdict word, is garbage.

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

/// The first balanced `{…}` in `text` that parses as a JSON object.
fn first_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    text.match_indices('{').find_map(|(start, _)| {
        let mut depth = 0usize;
        for (offset, ch) in text[start..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return match serde_json::from_str::<Value>(&text[start..start + offset + 1]) {
                            Ok(Value::Object(map)) => Some(map),
                            _ => None,
                        };
                    }
                }
                _ => {}
            }
        }
        None
    })
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

    #[test]
    fn the_endpoint_follows_the_base() {
        assert_eq!(endpoint("https://api.example.test/v1"), "https://api.example.test/v1/chat/completions");
        assert_eq!(endpoint("https://api.example.test/"), "https://api.example.test/v1/chat/completions");
        assert_eq!(endpoint("http://127.0.0.1:8/v1/chat/completions"), "http://127.0.0.1:8/v1/chat/completions");
    }
}

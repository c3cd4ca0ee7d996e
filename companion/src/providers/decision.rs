//! Typed evaluation, TypeSafe System One style: `POST <url>/systemone` with the turn as
//! `state` and one yes/no question whose answer is a probability (`noul`) in [0, 1].
//!
//! `decision-vercel` routes send the same request and read the same answer; only the
//! address differs: the route's `url` is the endpoint itself (a deployed function's full
//! address, such as `https://….vercel.app/api/systemone`), nothing is appended. The
//! product document names the protocol as typed evaluation and defines no other wire.
//!
//! Request: `{model, state: {user_request, assistant_latest_response}, questions:
//! {has_unfinished_work: {type: "noul", instructions, criteria: {true, false}}, …}}`;
//! answer: `{answers: {has_unfinished_work: {noul: p}, …}}`. With goal priors on, the five
//! priors of SPEC J7 are asked in the same request and read the same way (a prior that is
//! missing stays `None`; one that is present but not a probability spoils the answer).

use std::time::Duration;

use continuity_protocol::GoalPriors;
use serde_json::{json, Map, Value};

use super::{post_json, tail_chars, ProviderError, Turn, MAX_ASSISTANT_CHARS, MAX_USER_CHARS};
use crate::config::{Route, RouteProtocol};

/// The question every decision call asks.
pub const QUESTION: &str = "has_unfinished_work";

/// What the question means, for the evaluator.
const INSTRUCTIONS: &str = "The state is the last turn of a chat in which an assistant directs coding agents. \
Decide whether the assistant's latest response stops before a step that the assistant itself announced it would do \
next, without needing anything from the user or from a running job.";

/// When the answer is yes.
const CRITERIA_TRUE: &str = "The response says the assistant is about to do, or is in the middle of, a concrete \
next step of its own (for example: next I will run the tests; still need to update the docs, doing it now).";

/// When the answer is no.
const CRITERIA_FALSE: &str = "The work is finished; or the next steps are for the user; or the assistant only \
offers optional extras, asks a question, waits for the user's decision, credentials or approval, or waits for an \
agent, a build or CI to finish.";

/// The five goal-mode priors and what each asks.
const PRIORS: [(&str, &str); 5] = [
    ("can_continue", "The assistant can go on with the task by itself right now."),
    ("needs_human", "A human has to act, approve or decide before the work can go on."),
    ("waiting_external", "The work waits for something outside the chat: a coding agent, a build, CI, a deploy."),
    ("task_completed", "Everything the user asked for in this task is done."),
    ("needs_handoff", "The conversation should move to a fresh chat (too long, or the assistant says so)."),
];

/// A decision route's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecisionAnswer {
    /// The probability that the reply left work the assistant means to do.
    pub unfinished: f64,
    /// The goal-mode priors, when they were asked and answered.
    pub priors: Option<GoalPriors>,
}

/// `<url>/systemone` (one slash between them).
pub fn endpoint(url: &str) -> String {
    format!("{}/systemone", url.trim_end_matches('/'))
}

/// Where `route`'s request goes: [`endpoint`] for `decision`, the url as written for
/// `decision-vercel`.
pub fn endpoint_of(route: &Route) -> String {
    match route.protocol {
        RouteProtocol::DecisionVercel => route.url.clone(),
        RouteProtocol::Decision | RouteProtocol::OpenaiChat => endpoint(&route.url),
    }
}

/// The request body for `turn`.
pub fn request_body(route: &Route, turn: Turn<'_>, goal_priors: bool) -> Value {
    let mut questions = Map::new();
    questions.insert(
        QUESTION.to_owned(),
        json!({"type": "noul", "instructions": INSTRUCTIONS, "criteria": {"true": CRITERIA_TRUE, "false": CRITERIA_FALSE}}),
    );
    if goal_priors {
        for (name, instructions) in PRIORS {
            questions.insert(name.to_owned(), json!({"type": "noul", "instructions": instructions}));
        }
    }
    json!({
        "model": route.model,
        "state": {
            "user_request": tail_chars(turn.user_text, MAX_USER_CHARS),
            "assistant_latest_response": tail_chars(turn.assistant_text, MAX_ASSISTANT_CHARS),
        },
        "questions": questions,
    })
}

/// Asks `route` about `turn`.
pub async fn ask(
    client: &reqwest::Client,
    route: &Route,
    turn: Turn<'_>,
    goal_priors: bool,
    timeout: Duration,
) -> Result<DecisionAnswer, ProviderError> {
    let answer = post_json(client, route, &endpoint_of(route), &request_body(route, turn, goal_priors), timeout).await?;
    read_answer(&answer, goal_priors)
}

/// Reads `{answers: {…}}`.
pub fn read_answer(answer: &Value, goal_priors: bool) -> Result<DecisionAnswer, ProviderError> {
    let answers = answer.get("answers").ok_or_else(|| ProviderError::Garbage("no `answers`".to_owned()))?;
    let unfinished = probability(answers, QUESTION)?.ok_or_else(|| ProviderError::Garbage(format!("no `answers.{QUESTION}.noul`")))?;
    let priors = if goal_priors {
        let [can_continue, needs_human, waiting_external, task_completed, needs_handoff] = [
            probability(answers, PRIORS[0].0)?,
            probability(answers, PRIORS[1].0)?,
            probability(answers, PRIORS[2].0)?,
            probability(answers, PRIORS[3].0)?,
            probability(answers, PRIORS[4].0)?,
        ];
        let priors = GoalPriors { can_continue, needs_human, waiting_external, task_completed, needs_handoff };
        (priors != GoalPriors::default()).then_some(priors)
    } else {
        None
    };
    Ok(DecisionAnswer { unfinished, priors })
}

/// `answers[name].noul` (or a bare number): `None` when absent, an error when it is not
/// a probability.
fn probability(answers: &Value, name: &str) -> Result<Option<f64>, ProviderError> {
    let Some(entry) = answers.get(name) else { return Ok(None) };
    let value = entry.get("noul").unwrap_or(entry);
    match value.as_f64() {
        Some(p) if (0.0..=1.0).contains(&p) => Ok(Some(p)),
        _ => Err(ProviderError::Garbage(format!("`answers.{name}` is {value}, not a probability in [0, 1]"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly() {
        let read = |text: &str, priors: bool| read_answer(&serde_json::from_str(text).expect("json"), priors);
        assert_eq!(read(r#"{"answers":{"has_unfinished_work":{"noul":0.9}}}"#, false).map(|a| a.unfinished), Ok(0.9));
        assert_eq!(read(r#"{"answers":{"has_unfinished_work":0.2}}"#, false).map(|a| a.unfinished), Ok(0.2));
        assert!(read(r#"{"answers":{"has_unfinished_work":{"noul":1.5}}}"#, false).is_err());
        assert!(read(r#"{"answers":{"has_unfinished_work":{"noul":"high"}}}"#, false).is_err());
        assert!(read(r#"{"answers":{}}"#, false).is_err());
        assert!(read(r#"{"result":0.9}"#, false).is_err());
        let with = read(r#"{"answers":{"has_unfinished_work":{"noul":0.5},"needs_human":{"noul":0.8}}}"#, true).expect("ok");
        assert_eq!(with.priors.and_then(|p| p.needs_human), Some(0.8));
        assert_eq!(with.priors.and_then(|p| p.can_continue), None);
        let without = read(r#"{"answers":{"has_unfinished_work":{"noul":0.5},"needs_human":{"noul":0.8}}}"#, false).expect("ok");
        assert_eq!(without.priors, None, "priors are read only when asked");
    }

    #[test]
    fn the_endpoint_joins_one_slash() {
        assert_eq!(endpoint("https://example.test/v1/"), "https://example.test/v1/systemone");
        assert_eq!(endpoint("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1/systemone");
        let route = |protocol| Route {
            name: "r".to_owned(),
            protocol,
            url: "https://jev.example.vercel.app/api/jev".to_owned(),
            model: "m".to_owned(),
            api_key: String::new(),
        };
        assert_eq!(endpoint_of(&route(RouteProtocol::DecisionVercel)), "https://jev.example.vercel.app/api/jev");
        assert_eq!(endpoint_of(&route(RouteProtocol::Decision)), "https://jev.example.vercel.app/api/jev/systemone");
    }
}

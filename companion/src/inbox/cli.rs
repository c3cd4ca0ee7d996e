//! `herdr-companion task …`: a plain runtime-socket client that stands in for the MCP
//! downlink's `herdr_prompt` in e2e tests and the demo (SPEC I1).
//!
//! `task dispatch --session-ref R --workspace W --pane P [--turn T] [--home DIR] TEXT`
//! sends `task.dispatch`; `task list --session-ref R [--home DIR]` sends `task.list`.
//! Both print the response's `result` as JSON on stdout; a refusal is an error whose
//! message is the runtime's (which says what to do).

use crate::protocol::Method;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use thiserror::Error;

use crate::paths::CompanionHome;

/// Usage of the `task` subcommand.
pub const USAGE: &str = "  herdr-companion task dispatch --session-ref R --workspace W --pane P [--turn T] [--home DIR] TEXT
  herdr-companion task list --session-ref R [--home DIR]";

/// How long the CLI waits for the runtime's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);

/// Why `task …` failed.
#[derive(Debug, Error)]
pub enum TaskCliError {
    /// The command line is wrong.
    #[error("{0}\nusage:\n{USAGE}")]
    Usage(String),
    /// No companion home could be found.
    #[error(transparent)]
    NoHome(#[from] crate::paths::NoHome),
    /// The runtime socket could not be used.
    #[error("cannot talk to the companion runtime at {socket}: {source}; start it with `herdr-companion runtime` (the browser's host also starts it)")]
    Unreachable {
        /// The socket tried.
        socket: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The runtime answered with an error.
    #[error("the runtime refused {method}: {code}: {message}")]
    Refused {
        /// The method sent.
        method: &'static str,
        /// The runtime's error code.
        code: String,
        /// The runtime's message.
        message: String,
    },
}

/// Parsed `task` arguments.
#[derive(Debug, Default, PartialEq)]
struct TaskArgs {
    session_ref: Option<String>,
    workspace: Option<String>,
    pane: Option<String>,
    turn: Option<String>,
    home: Option<PathBuf>,
    text: Option<String>,
}

fn parse(args: &[String], allowed: &[&str], wants_text: bool) -> Result<TaskArgs, TaskCliError> {
    let mut parsed = TaskArgs::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg.starts_with("--") {
            if !allowed.contains(&arg.as_str()) {
                return Err(TaskCliError::Usage(format!("unexpected flag `{arg}`")));
            }
            let value = iter.next().cloned().ok_or_else(|| TaskCliError::Usage(format!("{arg} needs a value")))?;
            let slot = match arg.as_str() {
                "--session-ref" => &mut parsed.session_ref,
                "--workspace" => &mut parsed.workspace,
                "--pane" => &mut parsed.pane,
                "--turn" => &mut parsed.turn,
                _ => {
                    parsed.home = Some(PathBuf::from(value));
                    continue;
                }
            };
            *slot = Some(value);
        } else if wants_text && parsed.text.is_none() {
            parsed.text = Some(arg.clone());
        } else {
            return Err(TaskCliError::Usage(format!("unexpected argument `{arg}` (quote the prompt as one argument)")));
        }
    }
    Ok(parsed)
}

fn require(value: Option<String>, what: &str) -> Result<String, TaskCliError> {
    value.ok_or_else(|| TaskCliError::Usage(format!("{what} is required")))
}

/// Runs `herdr-companion task ARGS`; prints the result and returns the exit code.
pub fn run(args: &[String]) -> Result<i32, TaskCliError> {
    let Some((sub, rest)) = args.split_first() else {
        return Err(TaskCliError::Usage("task needs a subcommand: dispatch or list".to_owned()));
    };
    let (method, home, params) = match sub.as_str() {
        "dispatch" => {
            let a = parse(rest, &["--session-ref", "--workspace", "--pane", "--turn", "--home"], true)?;
            let params = json!({
                "browser_session_ref": require(a.session_ref, "--session-ref")?,
                "workspace_id": require(a.workspace, "--workspace")?,
                "pane_id": require(a.pane, "--pane")?,
                "turn_id": a.turn,
                "prompt": require(a.text, "the prompt TEXT")?,
            });
            (Method::TaskDispatch, a.home, params)
        }
        "list" => {
            let a = parse(rest, &["--session-ref", "--home"], false)?;
            (Method::TaskList, a.home, json!({"browser_session_ref": require(a.session_ref, "--session-ref")?}))
        }
        other => return Err(TaskCliError::Usage(format!("unknown task subcommand `{other}`"))),
    };
    let socket = CompanionHome::resolve(home)?.socket_path();
    let result = call(&socket, method, params)?;
    println!("{result}");
    Ok(0)
}

/// Sends one request and returns its `result`, skipping events.
fn call(socket: &std::path::Path, method: Method, params: Value) -> Result<Value, TaskCliError> {
    let unreachable = |source| TaskCliError::Unreachable { socket: socket.to_path_buf(), source };
    let mut stream = UnixStream::connect(socket).map_err(unreachable)?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(unreachable)?;
    let id = "cli-1";
    let line = json!({"id": id, "method": method, "params": params});
    stream.write_all(format!("{line}\n").as_bytes()).map_err(unreachable)?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut answer = String::new();
        if reader.read_line(&mut answer).map_err(unreachable)? == 0 {
            return Err(unreachable(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the runtime closed the connection before answering",
            )));
        }
        let Ok(value) = serde_json::from_str::<Value>(&answer) else { continue };
        if value.get("id").and_then(Value::as_str) != Some(id) {
            continue;
        }
        if let Some(error) = value.get("error") {
            let text = |k: &str| error.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            return Err(TaskCliError::Refused { method: method.as_str(), code: text("code"), message: text("message") });
        }
        return Ok(value.get("result").cloned().unwrap_or(Value::Null));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dispatch_arguments_parse_and_mistakes_are_explained() {
        let parsed =
            parse(&args(&["--session-ref", "R", "--pane", "w1:p1", "do it", "--turn", "t"]), &["--session-ref", "--pane", "--turn"], true)
                .expect("parses");
        assert_eq!((parsed.session_ref.as_deref(), parsed.text.as_deref(), parsed.turn.as_deref()), (Some("R"), Some("do it"), Some("t")));
        let err = parse(&args(&["a", "b"]), &[], true).expect_err("two texts");
        assert!(err.to_string().contains("quote the prompt"), "{err}");
        let err = run(&args(&["list"])).expect_err("no ref");
        assert!(err.to_string().starts_with("--session-ref is required"), "{err}");
    }
}

//! The Native Messaging host (`herdr-companion host ORIGIN`, SPEC N1/N2).
//!
//! The host is a thin relay: browser frames → socket lines, socket lines → browser
//! frames. It adds only `host_error` events. It starts a runtime when none answers
//! (detached, in its own session, never waited on: Chrome SIGKILLs the host 2 s after the
//! port closes and the runtime must survive that). A runtime it starts that refuses to
//! start (a `state.db` from a newer herdr-companion) is seen exiting while the host waits
//! for its socket; its reason from runtime.log goes to the extension as a
//! `runtime_refused_to_start` host error, which the extension does not retry on its own.
//!
//! Invariants:
//! - Nothing is written to stdout unless the caller origin is exactly
//!   [`EXTENSION_ORIGIN`].
//! - A bad frame (oversize, not JSON, not an object) costs one `host_error`; the host
//!   keeps running. Only end of stdin or the runtime closing ends the host.
//! - Every frame written is at most [`crate::framing::MAX_OUTGOING_FRAME`] bytes.

use serde_json::Value;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

use crate::framing::{encode_frame, Decoded, FrameDecoder, MAX_INCOMING_FRAME};
use crate::paths::CompanionHome;
use crate::protocol::{self, HostErrorCode, EXTENSION_ORIGIN};

/// Environment variable that, set to `0`, stops the host from starting a runtime.
pub const AUTOSTART_ENV: &str = "HERDR_COMPANION_AUTOSTART";

/// How long the host waits for a runtime it started.
const RUNTIME_START_WAIT: Duration = Duration::from_secs(3);

/// Why the host stopped abnormally.
#[derive(Debug, Error)]
pub enum HostError {
    /// The caller is not our extension.
    #[error("refusing caller origin {origin:?}: this host only serves {EXTENSION_ORIGIN}; reinstall the host manifest with `herdr-companion install` and load the official extension")]
    WrongOrigin {
        /// The origin received (argv[1]), or "(none)".
        origin: String,
    },
    /// No runtime could be reached.
    #[error("{0}")]
    RuntimeUnreachable(String),
    /// The home could not be found.
    #[error(transparent)]
    NoHome(#[from] crate::paths::NoHome),
}

/// Checks the caller origin passed by the browser as argv[1].
pub fn origin_allowed(origin: Option<&str>) -> bool {
    origin == Some(EXTENSION_ORIGIN)
}

/// Runs the host on stdin/stdout. Returns only on failure to start; a started relay ends
/// the process itself.
pub fn run(origin: Option<String>) -> Result<(), HostError> {
    if !origin_allowed(origin.as_deref()) {
        return Err(HostError::WrongOrigin { origin: origin.unwrap_or_else(|| "(none)".to_owned()) });
    }
    let home = CompanionHome::resolve(None)?;
    let stdout = Arc::new(Mutex::new(io::stdout()));
    let stream = match connect_or_start_runtime(&home) {
        Ok(stream) => stream,
        Err(error) => {
            let code = match error {
                StartError::Unreachable(_) => HostErrorCode::RuntimeUnreachable,
                StartError::Refused(_) => HostErrorCode::RuntimeRefusedToStart,
            };
            let message = error.to_string();
            write_message(&stdout, &protocol::host_error(code, &message, None));
            return Err(HostError::RuntimeUnreachable(message));
        }
    };
    let from_runtime = match stream.try_clone() {
        Ok(s) => s,
        Err(e) => {
            let message = format!("cannot use the runtime connection: {e}; reopen the extension");
            write_message(&stdout, &protocol::host_error(HostErrorCode::RuntimeUnreachable, &message, None));
            return Err(HostError::RuntimeUnreachable(message));
        }
    };
    let stdout_for_runtime = stdout.clone();
    std::thread::spawn(move || {
        relay_runtime_to_browser(from_runtime, &stdout_for_runtime);
        // The runtime went away: end the host; the extension reconnects.
        std::process::exit(0);
    });
    relay_browser_to_runtime(io::stdin().lock(), stream, &stdout);
    std::process::exit(0);
}

/// Why [`connect_or_start_runtime`] has no runtime to offer.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// No runtime answers and none came up (or none may be started): worth retrying.
    #[error("{0}")]
    Unreachable(String),
    /// The runtime this host started refused to start and said why in runtime.log:
    /// retrying cannot help until the user acts on that reason.
    #[error("the companion runtime refused to start: {0}")]
    Refused(String),
}

/// Connects to the runtime, starting one if needed and allowed (the host, and `mcp` at its
/// start).
pub fn connect_or_start_runtime(home: &CompanionHome) -> Result<UnixStream, StartError> {
    let socket = home.socket_path();
    if let Ok(stream) = UnixStream::connect(&socket) {
        return Ok(stream);
    }
    if std::env::var(AUTOSTART_ENV).as_deref() == Ok("0") {
        return Err(StartError::Unreachable(format!(
            "no companion runtime is listening on {} and {AUTOSTART_ENV}=0 forbids starting one; start it with `herdr-companion runtime`",
            socket.display()
        )));
    }
    // Only what the runtime we start writes to runtime.log is read back (see below).
    let log_start = std::fs::metadata(home.log_path()).map(|m| m.len()).unwrap_or(0);
    let mut child = match spawn_detached_runtime(home) {
        Ok(child) => Some(child),
        Err(e) => {
            return Err(StartError::Unreachable(format!(
                "could not start the companion runtime ({e}); run `herdr-companion runtime` by hand and check `herdr-companion doctor`"
            )))
        }
    };
    let deadline = Instant::now() + RUNTIME_START_WAIT;
    loop {
        if let Ok(stream) = UnixStream::connect(&socket) {
            return Ok(stream);
        }
        // A runtime that refused to start (a state.db from a newer herdr-companion) says
        // why in runtime.log; waiting longer would not help. Any other early exit (e.g. it
        // lost the start race to another runtime) waits for the socket as before.
        if let Some(Ok(Some(_))) = child.as_mut().map(std::process::Child::try_wait) {
            child = None;
            if let Some(reason) = refusal_since(&home.log_path(), log_start) {
                return Err(StartError::Refused(reason));
            }
        }
        if Instant::now() >= deadline {
            return Err(StartError::Unreachable(format!(
                "the companion runtime did not come up on {} within {}s; see {} and run `herdr-companion doctor`",
                socket.display(),
                RUNTIME_START_WAIT.as_secs(),
                home.log_path().display()
            )));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The reason in the last line that runtime.log at `path` gained after byte `from` whose
/// message starts with [`crate::log::REFUSED_TO_START`], if any. Only the message's start
/// counts: the marker inside logged text (Herdr's version, a judge's reason) is not the
/// runtime refusing (review 42 F5).
fn refusal_since(path: &Path, from: u64) -> Option<String> {
    use std::io::Seek;
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(io::SeekFrom::Start(from)).ok()?;
    let mut text = String::new();
    file.take(1 << 20).read_to_string(&mut text).ok()?;
    text.lines()
        .rev()
        .find_map(|line| crate::log::message_of(line)?.strip_prefix(crate::log::REFUSED_TO_START))
        .map(|reason| reason.trim().to_owned())
}

/// Starts `herdr-companion runtime` in its own session with no ties to this process.
/// The child is only polled with `try_wait` while the host waits for the socket, never
/// waited on.
fn spawn_detached_runtime(home: &CompanionHome) -> io::Result<std::process::Child> {
    let exe = std::env::current_exe()?;
    let mut command = Command::new(exe);
    command.arg("runtime").arg("--home").arg(home.root()).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    // The child is deliberately never waited on (see the module doc).
    command.spawn()
}

/// Writes one message as a frame; an oversize message becomes a `response_too_large`
/// `host_error` naming the request id it replaces.
fn write_message(stdout: &Mutex<io::Stdout>, message: &Value) {
    write_line(stdout, protocol::to_line(message).as_bytes());
}

fn write_line(stdout: &Mutex<io::Stdout>, line: &[u8]) {
    let frame = match encode_frame(line) {
        Ok(frame) => frame,
        Err(too_large) => {
            let id = serde_json::from_slice::<Value>(line).ok().and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
            let message = format!(
                "the runtime's answer was {} bytes, over the 1 MiB browser limit, and was dropped; ask for less (e.g. a smaller page of results)",
                too_large.len
            );
            let replacement = protocol::host_error(HostErrorCode::ResponseTooLarge, &message, id.as_deref());
            match encode_frame(protocol::to_line(&replacement).as_bytes()) {
                Ok(frame) => frame,
                Err(_) => return,
            }
        }
    };
    let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
    // A closed stdout means the browser is gone; the stdin side will end the process.
    let _ = out.write_all(&frame).and_then(|_| out.flush());
}

/// Copies runtime lines to the browser until the runtime closes the connection.
fn relay_runtime_to_browser(stream: UnixStream, stdout: &Mutex<io::Stdout>) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if !line.is_empty() {
            write_line(stdout, &line);
        }
    }
}

/// What to do with one decoded browser frame.
#[derive(Debug, PartialEq)]
pub enum FrameVerdict {
    /// Relay this single line to the runtime.
    Relay(String),
    /// Answer the browser with this `host_error`.
    Reject(Value),
}

/// Validates one decoder outcome (pure; the host's whole decision logic).
pub fn judge_frame(decoded: Decoded) -> FrameVerdict {
    match decoded {
        Decoded::TooLarge { declared_len } => FrameVerdict::Reject(protocol::host_error(
            HostErrorCode::FrameTooLarge,
            &format!("a message of {declared_len} bytes exceeds the host's 1 MiB limit and was dropped; send smaller messages"),
            None,
        )),
        Decoded::Frame(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(value @ Value::Object(_)) => FrameVerdict::Relay(protocol::to_line(&value)),
            Ok(_) => FrameVerdict::Reject(protocol::host_error(
                HostErrorCode::BadFrame,
                "a message was valid JSON but not an object and was dropped; send {\"id\",\"method\",\"params\"} objects",
                None,
            )),
            Err(e) => FrameVerdict::Reject(protocol::host_error(
                HostErrorCode::BadFrame,
                &format!("a message was not valid UTF-8 JSON ({e}) and was dropped; send JSON objects"),
                None,
            )),
        },
    }
}

/// Copies browser frames to the runtime until stdin ends.
fn relay_browser_to_runtime(mut stdin: impl Read, mut runtime: UnixStream, stdout: &Mutex<io::Stdout>) {
    let mut decoder = FrameDecoder::new(MAX_INCOMING_FRAME);
    let mut buf = vec![0u8; 64 * 1024];
    let mut decoded = Vec::new();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        decoder.push(&buf[..n], &mut decoded);
        for outcome in decoded.drain(..) {
            match judge_frame(outcome) {
                FrameVerdict::Relay(mut line) => {
                    line.push('\n');
                    if runtime.write_all(line.as_bytes()).is_err() {
                        return;
                    }
                }
                FrameVerdict::Reject(event) => write_message(stdout, &event),
            }
        }
    }
    if let Err(truncated) = decoder.finish() {
        let message = format!("the browser closed the port mid-message ({truncated}); nothing was relayed for it");
        write_message(stdout, &protocol::host_error(HostErrorCode::BadFrame, &message, None));
    }
    let _ = runtime.shutdown(std::net::Shutdown::Write);
}

/// Returns true when a path is an executable file (used by the doctor).
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    /// Review 42 F5: the host took the text after "runtime refused to start:" anywhere in
    /// any new runtime.log line as its runtime's refusal, and told the extension (which
    /// then stops retrying). Herdr's version and event names and the judge model's reason
    /// are logged, so they could forge it. Now only a line whose message starts with the
    /// marker counts, and a logged text cannot start a line of its own.
    #[test]
    fn the_refusal_marker_inside_logged_text_is_not_a_refusal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runtime.log");
        let log = crate::log::RuntimeLog::open(&path);
        log.line(format_args!("runtime 0.1.0 started, pid 42"));
        let from = std::fs::metadata(&path).map(|m| m.len()).expect("log");
        let forged = "9.9 runtime refused to start: evil";
        log.line(format_args!("herdr sync: connected to Herdr {forged} (protocol 1)"));
        let own_line = "9.9\n2026-01-01T00:00:00.000000Z  INFO runtime refused to start: evil";
        log.line(format_args!("herdr sync: connected to Herdr {own_line} (protocol 1)"));
        assert_eq!(refusal_since(&path, from), None, "{}", std::fs::read_to_string(&path).unwrap_or_default());

        log.line(format_args!("{} state.db was written by a newer herdr-companion", crate::log::REFUSED_TO_START));
        assert_eq!(refusal_since(&path, from).as_deref(), Some("state.db was written by a newer herdr-companion"));
    }

    #[test]
    fn only_the_exact_extension_origin_is_allowed() {
        assert!(origin_allowed(Some("chrome-extension://gencedhnagpaccnkbgpcipafjlankiop/")));
        for bad in [
            None,
            Some(""),
            Some("chrome-extension://gencedhnagpaccnkbgpcipafjlankiop"),
            Some("chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"),
            Some("chrome-extension://gencedhnagpaccnkbgpcipafjlankiop/x"),
        ] {
            assert!(!origin_allowed(bad), "{bad:?}");
        }
    }

    #[test]
    fn frames_are_judged_relay_or_host_error() {
        let verdicts: Vec<String> = [
            Decoded::Frame(br#"{ "id":"1",  "method":"ping" }"#.to_vec()),
            Decoded::Frame(b"[1]".to_vec()),
            Decoded::Frame(b"{oops".to_vec()),
            Decoded::TooLarge { declared_len: 2_000_000 },
        ]
        .into_iter()
        .map(|d| match judge_frame(d) {
            FrameVerdict::Relay(line) => format!("relay {line}"),
            FrameVerdict::Reject(event) => format!("reject {event}"),
        })
        .collect();
        expect![[r#"
            relay {"id":"1","method":"ping"}
            reject {"data":{"code":"bad_frame","message":"a message was valid JSON but not an object and was dropped; send {\"id\",\"method\",\"params\"} objects"},"event":"host_error"}
            reject {"data":{"code":"bad_frame","message":"a message was not valid UTF-8 JSON (key must be a string at line 1 column 2) and was dropped; send JSON objects"},"event":"host_error"}
            reject {"data":{"code":"frame_too_large","message":"a message of 2000000 bytes exceeds the host's 1 MiB limit and was dropped; send smaller messages"},"event":"host_error"}"#]]
        .assert_eq(&verdicts.join("\n"));
    }
}

//! `herdr-companion doctor`: checks every link of the chain and says how to fix each
//! broken one.
//!
//! Output: one line per check, `ok    <what>` or `FAIL  <what>` followed by an indented
//! `fix:` line. The exit status is 1 when any check failed.

use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::herdr::{self, HerdrState, HerdrStatus, SocketSources};
use crate::install::{check_manifest, Target};
use crate::paths::CompanionHome;
use crate::protocol::PROTOCOL_VERSION;

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked, with the detail found.
    pub what: String,
    /// `None` when it passed; otherwise what to do.
    pub fix: Option<String>,
}

impl Check {
    fn ok(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            fix: None,
        }
    }
    fn fail(what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Renders the report.
pub fn render(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        match &check.fix {
            None => {
                let _ = writeln!(out, "ok    {}", check.what);
            }
            Some(fix) => {
                let _ = writeln!(out, "FAIL  {}\n      fix: {fix}", check.what);
            }
        }
    }
    out
}

/// Runs every check.
pub fn run_checks(
    target: &Target,
    home: &CompanionHome,
    herdr_session: Option<String>,
) -> Vec<Check> {
    let mut checks = Vec::new();
    let flags = install_flags(target);
    match target.manifest_path() {
        Err(e) => checks.push(Check::fail("host manifest location", e.to_string())),
        Ok(path) => match std::fs::read_to_string(&path) {
            Err(_) => checks.push(Check::fail(
                format!("host manifest {} is missing", path.display()),
                format!("run `herdr-companion install {flags}`"),
            )),
            Ok(text) => {
                let problems = check_manifest(&text);
                if problems.is_empty() {
                    checks.push(Check::ok(format!("host manifest {}", path.display())));
                } else {
                    checks.push(Check::fail(
                        format!("host manifest {}: {}", path.display(), problems.join("; ")),
                        format!("rerun `herdr-companion install {flags}`"),
                    ));
                }
            }
        },
    }
    for (label, dir) in [
        ("companion home", home.root().to_path_buf()),
        ("run directory", home.run_dir()),
    ] {
        match std::fs::metadata(&dir) {
            Ok(m) if m.permissions().mode() & 0o777 == 0o700 => {
                checks.push(Check::ok(format!("{label} {} is private (0700)", dir.display())))
            }
            Ok(m) => checks.push(Check::fail(
                format!("{label} {} has mode {:o}, not 0700", dir.display(), m.permissions().mode() & 0o777),
                format!("run `chmod 700 {}`", dir.display()),
            )),
            Err(_) => checks.push(Check::fail(
                format!("{label} {} does not exist", dir.display()),
                "start the runtime once (`herdr-companion runtime`, or open the extension) to create it",
            )),
        }
    }
    let socket = home.socket_path();
    let socket_ok = match std::fs::metadata(&socket) {
        Ok(m) if m.permissions().mode() & 0o777 == 0o600 => {
            checks.push(Check::ok(format!(
                "runtime socket {} (0600)",
                socket.display()
            )));
            true
        }
        Ok(m) => {
            checks.push(Check::fail(
                format!(
                    "runtime socket {} has mode {:o}, not 0600",
                    socket.display(),
                    m.permissions().mode() & 0o777
                ),
                "stop the runtime and start it again; it recreates the socket with mode 0600",
            ));
            true
        }
        Err(_) => {
            checks.push(Check::fail(
                format!("runtime socket {} does not exist", socket.display()),
                "start the runtime with `herdr-companion runtime` (the extension's host also starts it)",
            ));
            false
        }
    };
    let mut herdr_from_runtime = None;
    if socket_ok {
        match runtime_hello(&socket) {
            Ok(result) => {
                checks.push(Check::ok(format!(
                    "runtime {} answers hello (protocol {})",
                    result["runtime_version"].as_str().unwrap_or("?"),
                    result["protocol"]
                )));
                herdr_from_runtime = serde_json::from_value::<Value>(result["herdr"].clone()).ok();
            }
            Err(e) => checks.push(Check::fail(
                format!("runtime does not answer hello: {e}"),
                "restart it: stop the process holding run/runtime.lock, then `herdr-companion runtime`",
            )),
        }
    }
    checks.push(herdr_check(herdr_from_runtime, herdr_session));
    checks
}

fn install_flags(target: &Target) -> String {
    let browser = match target.browser {
        crate::install::Browser::Chrome => "chrome",
        crate::install::Browser::Chromium => "chromium",
        crate::install::Browser::Edge => "edge",
        crate::install::Browser::Brave => "brave",
    };
    let mut flags = format!("--browser {browser}");
    if let Some(dir) = &target.user_data_dir {
        let _ = write!(flags, " --user-data-dir {}", dir.display());
    } else if target.system {
        flags.push_str(" --system");
    }
    flags
}

fn runtime_hello(socket: &std::path::Path) -> Result<Value, String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| e.to_string())?;
    let timeout = Some(Duration::from_secs(3));
    stream
        .set_read_timeout(timeout)
        .map_err(|e| e.to_string())?;
    let request = json!({"id": "doctor", "method": "hello", "params": {"protocol": PROTOCOL_VERSION, "extension_version": "doctor"}});
    stream
        .write_all(format!("{request}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    // Skip events until our response arrives.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the runtime closed the connection".to_owned());
        }
        let value: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        if value["id"] == "doctor" {
            return match value.get("result") {
                Some(result) => Ok(result.clone()),
                None => Err(format!("error answer {}", value["error"])),
            };
        }
    }
}

fn herdr_check(from_runtime: Option<Value>, herdr_session: Option<String>) -> Check {
    let status: HerdrStatus = match from_runtime.and_then(|v| parse_status(&v)) {
        Some(status) => status,
        None => {
            let socket = herdr::discover_socket(&SocketSources::from_env(herdr_session));
            let outcome = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(herdr::ping(&socket, Duration::from_secs(2))),
                Err(e) => {
                    return Check::fail(format!("cannot check Herdr: {e}"), "rerun the doctor")
                }
            };
            HerdrStatus::from_ping(&socket, &outcome)
        }
    };
    if status.state == HerdrState::Connected {
        Check::ok(format!(
            "Herdr {} (protocol {}) at {}",
            status.version.as_deref().unwrap_or("?"),
            status.protocol.unwrap_or(0),
            status.socket
        ))
    } else {
        Check::fail(
            format!("Herdr at {}: {}", status.socket, describe_state(status.state)),
            status
                .detail
                .unwrap_or_else(|| "check that `herdr server` runs".to_owned()),
        )
    }
}

/// A user's words for a Herdr connection state.
fn describe_state(state: HerdrState) -> &'static str {
    match state {
        HerdrState::Connected => "connected",
        HerdrState::NotRunning => "not running",
        HerdrState::UnsupportedProtocol => "unsupported protocol",
        HerdrState::PermissionDenied => "permission denied",
        HerdrState::Error => "not usable",
    }
}

/// Reads the runtime's `herdr` object back into a status.
fn parse_status(value: &Value) -> Option<HerdrStatus> {
    let state = match value.get("state")?.as_str()? {
        "connected" => HerdrState::Connected,
        "not_running" => HerdrState::NotRunning,
        "unsupported_protocol" => HerdrState::UnsupportedProtocol,
        "permission_denied" => HerdrState::PermissionDenied,
        _ => HerdrState::Error,
    };
    Some(HerdrStatus {
        state,
        protocol: value.get("protocol").and_then(Value::as_u64),
        version: value
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_owned),
        socket: value.get("socket")?.as_str()?.to_owned(),
        detail: value
            .get("detail")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

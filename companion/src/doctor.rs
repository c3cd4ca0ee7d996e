//! `herdr-companion doctor`: checks every link of the chain and says how to fix each
//! broken one.
//!
//! Output: one line per check, `ok    <what>` or `FAIL  <what>` followed by an indented
//! `fix:` line. The exit status is 1 when any check failed.
//!
//! The wording names the browser and the operating system ([`Os`]) the manifest is for, and
//! the fixes are the commands for that system (`sudo` for a machine-wide manifest; the
//! socket-path limit, which is shorter on macOS, whose default home is also longer).

use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::config::{config_path, Capability, Config};
use crate::herdr::{self, HerdrState, HerdrStatus, SocketSources};
use crate::install::{check_manifest, Target};
use crate::paths::{CompanionHome, Os};
use crate::protocol::{Method, PROTOCOL_VERSION};
use std::path::Path;

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
        Self { what: what.into(), fix: None }
    }
    fn fail(what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { what: what.into(), fix: Some(fix.into()) }
    }
}

/// `config.json`: absent (the judge runs on its script alone), private and valid (how many
/// routes of each kind), or refused (with the fix the loader names).
fn config_check(home: &Path) -> Check {
    let path = config_path(home);
    match Config::load(home) {
        Ok(_) if !path.exists() => Check::ok(format!("config.json: none at {} (turn-end judge: script only)", path.display())),
        Ok(config) => Check::ok(format!(
            "config.json {} is private; turn-end judge routes: {} decision, {} chat{}",
            path.display(),
            config.judge.routes_of(Capability::Decision).count(),
            config.judge.routes_of(Capability::Chat).count(),
            if config.judge.global_pool.is_some() { ", then the global route pool's" } else { "" }
        )),
        Err(refused) => Check::fail(format!("config.json {} is refused", path.display()), refused.to_string()),
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
pub fn run_checks(target: &Target, home: &CompanionHome, herdr_session: Option<String>) -> Vec<Check> {
    let os = Os::current();
    let mut checks = Vec::new();
    match target.manifest_path() {
        Err(e) => checks.push(Check::fail("host manifest location", e.to_string())),
        Ok(path) => checks.push(manifest_check(os, target, &path, std::fs::read_to_string(&path).ok().as_deref())),
    }
    for (label, dir) in [("companion home", home.root().to_path_buf()), ("run directory", home.run_dir())] {
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
    checks.push(config_check(home.root()));
    let socket = home.socket_path();
    if let Some(check) = socket_path_length_check(os, &socket) {
        checks.push(check);
    }
    let socket_ok = match std::fs::metadata(&socket) {
        Ok(m) if m.permissions().mode() & 0o777 == 0o600 => {
            checks.push(Check::ok(format!("runtime socket {} (0600)", socket.display())));
            true
        }
        Ok(m) => {
            checks.push(Check::fail(
                format!("runtime socket {} has mode {:o}, not 0600", socket.display(), m.permissions().mode() & 0o777),
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
    // The git the running runtime finds (`Some(None)`: none), when it answers and says.
    let mut git_from_runtime: Option<Option<String>> = None;
    if socket_ok {
        match runtime_hello(&socket) {
            Ok(result) => {
                let last_hello = std::fs::read_to_string(home.root().join(crate::api::HELLO_FILE))
                    .ok()
                    .and_then(|text| serde_json::from_str::<Value>(&text).ok());
                checks.extend(agreement_checks(&result, last_hello.as_ref()));
                herdr_from_runtime = serde_json::from_value::<Value>(result["herdr"].clone()).ok();
                git_from_runtime = match result.get("git").and_then(|git| git.get("version")) {
                    Some(Value::String(found)) => Some(Some(found.clone())),
                    Some(Value::Null) => Some(None),
                    _ => None,
                };
            }
            Err(e) => checks.push(Check::fail(
                format!("runtime does not answer hello: {e}"),
                "restart it: stop the process holding run/runtime.lock, then `herdr-companion runtime`",
            )),
        }
    }
    checks.push(herdr_check(herdr_from_runtime, herdr_session));
    checks.push(match git_from_runtime {
        Some(found) => git_check(found.as_deref(), "the runtime's PATH"),
        // No runtime answered (or an older one): the git this shell finds.
        None => git_check(crate::gitcmd::installed_version().as_deref(), "this shell's PATH"),
    });
    checks.extend(storage_checks(&home.root().join("state.db")));
    checks.extend(downlink_checks(home));
    checks
}

/// The schema version of `state.db` against this runtime's (`crate::schema`), then (unless
/// the file is newer, when its version's FAIL is the only line) the sizes per store and
/// their retention limits, read only (issue 26 "Retention"); no `state.db` yet is no failure.
pub fn storage_checks(path: &Path) -> Vec<Check> {
    if !path.exists() {
        return vec![Check::ok(format!("storage: no {} yet (nothing stored)", path.display()))];
    }
    // A running runtime may hold the write lock for a moment: wait up to 2 s for it.
    let read = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|conn| conn.busy_timeout(std::time::Duration::from_secs(2)).map(|()| conn))
        .map_err(crate::db::DbError::from)
        .and_then(|conn| {
            // The version first: a newer file's tables may not be the ones `describe`
            // counts, and its FAIL (with its fix) must not turn into "cannot read".
            let version = crate::schema::version(&conn)?;
            if version > crate::schema::STATE_DB.current() {
                return Ok((version, Vec::new()));
            }
            Ok((version, crate::retention::describe(&conn)?))
        });
    match read {
        Ok((version, lines)) => std::iter::once(schema_check(path, version)).chain(lines.into_iter().map(Check::ok)).collect(),
        Err(error) => vec![Check::fail(
            format!("storage: cannot read {}: {error}", path.display()),
            "stop the runtime, check the file's permissions (0600, yours), then start it again",
        )],
    }
}

/// `state.db`'s schema version `found` against the one this runtime writes.
fn schema_check(path: &Path, found: i64) -> Check {
    let current = crate::schema::STATE_DB.current();
    let file = path.display();
    if found > current {
        return Check::fail(
            format!("storage: {file} has schema version {found}, newer than this herdr-companion {} knows (up to {current}); the runtime refuses to open it", env!("CARGO_PKG_VERSION")),
            format!("install the newer herdr-companion that wrote it again (re-run its installer); or, to start over with this version, stop the runtime and move {file} aside"),
        );
    }
    if found < current {
        return Check::ok(format!(
            "storage: {file} has schema version {found}; the runtime brings it to {current} at its next start, keeping every row"
        ));
    }
    Check::ok(format!("storage: {file} has schema version {current} (current)"))
}

/// Version agreement (N4): the running runtime against this `herdr-companion` (an older
/// runtime still running after an update, or a manifest that starts an older binary), and
/// the newest extension hello the runtime kept ([`crate::api::HELLO_FILE`]) — each naming
/// the side to update.
pub fn agreement_checks(runtime: &Value, last_hello: Option<&Value>) -> Vec<Check> {
    let mut checks = Vec::new();
    let version = runtime["runtime_version"].as_str().unwrap_or("?");
    let protocol = runtime["protocol"].as_u64();
    let capabilities = runtime["capabilities"].as_array().map(Vec::len);
    match (protocol, capabilities) {
        (Some(PROTOCOL_VERSION), Some(count)) => checks.push(Check::ok(format!(
            "runtime {version} answers hello (protocol {PROTOCOL_VERSION}, {count} capabilities)"
        ))),
        (protocol, _) => checks.push(Check::fail(
            format!(
                "runtime {version} answers hello with protocol {}{}; this herdr-companion {} speaks protocol {PROTOCOL_VERSION}",
                protocol.map_or_else(|| "?".to_owned(), |p| p.to_string()),
                if capabilities.is_none() { " and no capabilities (older than protocol 2)" } else { "" },
                env!("CARGO_PKG_VERSION")
            ),
            "stop the running runtime (the process holding run/runtime.lock), then run herdr-companion install again so the browser starts this one",
        )),
    }
    match last_hello {
        None => checks.push(Check::ok("extension: no hello from the extension yet (open a ChatGPT tab to connect it)")),
        Some(hello) => {
            let extension = hello["extension_version"].as_str().unwrap_or("?");
            let their = hello["protocol"].as_u64().map_or_else(|| "?".to_owned(), |p| p.to_string());
            match (hello["compatible"].as_bool(), hello["mismatch"].as_str()) {
                (Some(true), _) => {
                    checks.push(Check::ok(format!("extension {extension} (protocol {their}) agrees with the runtime at its last hello")))
                }
                (_, mismatch) => {
                    let older_extension = hello["protocol"].as_u64().is_some_and(|p| p < PROTOCOL_VERSION);
                    checks.push(Check::fail(
                        format!(
                            "extension {extension} (protocol {their}) does not match the runtime: {}",
                            mismatch.unwrap_or("no reason kept")
                        ),
                        if older_extension {
                            "update the extension (chrome://extensions → Update, or load the newer build), then press Retry in its HUD"
                        } else {
                            "run herdr-companion install again with the newer companion, then press Retry in the extension's HUD"
                        },
                    ));
                }
            }
        }
    }
    checks
}

/// The command that (re)writes the manifest for `target`, as the user types it on `os`.
fn install_command(target: &Target) -> String {
    let sudo = if target.system && target.user_data_dir.is_none() { "sudo " } else { "" };
    format!("{sudo}herdr-companion install {}", target.flags())
}

/// Checks the manifest at `path` (`text` is its content, `None` when it cannot be read).
fn manifest_check(os: Os, target: &Target, path: &Path, text: Option<&str>) -> Check {
    let whose = match (&target.user_data_dir, target.system) {
        (Some(_), _) => format!("{} profile", target.browser.display_name()),
        (None, true) => format!("{} for every user on {}", target.browser.display_name(), os.display_name()),
        (None, false) => format!("{} on {}", target.browser.display_name(), os.display_name()),
    };
    match text {
        None => Check::fail(
            format!("host manifest {} is missing ({whose} reads it there)", path.display()),
            format!("run `{}`", install_command(target)),
        ),
        Some(text) => {
            let problems = check_manifest(text);
            if problems.is_empty() {
                Check::ok(format!("host manifest {} ({whose})", path.display()))
            } else {
                Check::fail(
                    format!("host manifest {}: {}", path.display(), problems.join("; ")),
                    format!("rerun `{}`", install_command(target)),
                )
            }
        }
    }
}

/// A socket path longer than `os` allows cannot be bound; `None` when it fits.
fn socket_path_length_check(os: Os, socket: &Path) -> Option<Check> {
    let len = socket.as_os_str().len();
    let max = os.max_socket_path_len();
    (len > max).then(|| {
        Check::fail(
            format!(
                "runtime socket path {} is {len} bytes; {} allows at most {max}",
                socket.display(),
                os.display_name()
            ),
            "set HERDR_CONTINUITY_HOME to a shorter private directory (for example ~/.herdr-continuity), then rerun `herdr-companion install` so the browser's host uses it too",
        )
    })
}

fn runtime_hello(socket: &std::path::Path) -> Result<Value, String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| e.to_string())?;
    let timeout = Some(Duration::from_secs(3));
    stream.set_read_timeout(timeout).map_err(|e| e.to_string())?;
    let request = json!({"id": "doctor", "method": Method::Hello, "params": {"protocol": PROTOCOL_VERSION, "extension_version": "doctor"}});
    stream.write_all(format!("{request}\n").as_bytes()).map_err(|e| e.to_string())?;
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
            let outcome = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt.block_on(herdr::ping(&socket, Duration::from_secs(2))),
                Err(e) => return Check::fail(format!("cannot check Herdr: {e}"), "rerun the doctor"),
            };
            herdr::monitor::status_from_ping(&socket, &outcome)
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
            status.detail.unwrap_or_else(|| "check that `herdr server` runs".to_owned()),
        )
    }
}

/// Git on the PATH `on` for the `git version` output `found`: `herdr_git` and the write
/// tools' Git check refuse a git older than `crate::gitcmd::MIN_GIT`.
fn git_check(found: Option<&str>, on: &str) -> Check {
    let (major, minor) = crate::gitcmd::MIN_GIT;
    // One line, however long or odd the version text is.
    let shown = |found: &str| found.trim().chars().take(100).map(|c| if c.is_control() { ' ' } else { c }).collect::<String>();
    match (found, crate::gitcmd::version_refusal(found)) {
        // Git is optional: without it only herdr_git and the write tools' Git check are not
        // there (a write then needs confirm_dirty), so its absence is said, not failed.
        (None, _) => {
            Check::ok(format!("git: not found on {on} (herdr_git is unavailable until Git {major}.{minor} or newer is installed there)"))
        }
        (Some(found), None) => Check::ok(format!("{} on {on} (herdr_git needs {major}.{minor} or newer)", shown(found))),
        (Some(found), Some(why)) => Check::fail(format!("{} on {on} is too old for herdr_git", shown(found)), why),
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
    let state = value.get("state")?.as_str().and_then(|s| HerdrState::parse(s).ok()).unwrap_or(HerdrState::Error);
    Some(HerdrStatus {
        state,
        protocol: value.get("protocol").and_then(Value::as_u64),
        version: value.get("version").and_then(Value::as_str).map(str::to_owned),
        socket: value.get("socket")?.as_str()?.to_owned(),
        detail: value.get("detail").and_then(Value::as_str).map(str::to_owned),
    })
}

/// The port the README and the doctor's command lines use for `mcp --http`.
pub const SUGGESTED_MCP_PORT: u16 = 8787;

/// The two ways ChatGPT reaches `herdr-companion mcp` (README "Connecting ChatGPT"), as far
/// as this machine shows them. Fails only what is set up and broken: the bearer header file
/// for `tunnel-client` (present but not private, or not matching `config.json`'s token) and
/// the OAuth store of the own-tunnel way (present but not private). Never reads a secret
/// into its output: it compares the header file with the token and says only whether they
/// match.
pub fn downlink_checks(home: &CompanionHome) -> Vec<Check> {
    let mut checks = Vec::new();
    let header = home.root().join(crate::mcp::config::AUTHORIZATION_FILE);
    if let Ok(meta) = std::fs::metadata(&header) {
        let mode = meta.permissions().mode() & 0o777;
        let rewrite = format!("run `herdr-companion mcp --http 127.0.0.1:{SUGGESTED_MCP_PORT}` once (stop it with Ctrl-C); it rewrites the file from config.json with mode 0600");
        if mode != 0o600 {
            checks.push(Check::fail(
                format!("{} has mode {mode:o}, not 0600: it holds the MCP bearer token", header.display()),
                format!("run `chmod 600 {}`, or {rewrite}", header.display()),
            ));
        } else {
            let token = configured_mcp_token(home.root());
            let matches = token.as_deref().is_some_and(|token| {
                std::fs::read_to_string(&header).ok().as_deref() == Some(crate::mcp::config::authorization_value(token).as_str())
            });
            if matches {
                checks.push(Check::ok(format!(
                    "{} holds the bearer header for tunnel-client --mcp.extra-headers (0600; the token is not shown)",
                    header.display()
                )));
            } else {
                checks.push(Check::fail(
                    format!(
                        "{} does not hold the bearer of config.json's mcp.token: tunnel-client would be refused (401)",
                        header.display()
                    ),
                    rewrite,
                ));
            }
        }
    }
    if let Some(served) = crate::mcp::served::read(home) {
        checks.push(http_check(home, &served));
    }
    let store = home.root().join(OAUTH_STORE);
    if let Ok(meta) = std::fs::metadata(&store) {
        let mode = meta.permissions().mode() & 0o777;
        if mode == 0o600 {
            checks.push(Check::ok(format!("OAuth store {} is private (0600)", store.display())));
        } else {
            checks.push(Check::fail(
                format!("OAuth store {} has mode {mode:o}, not 0600", store.display()),
                format!("run `chmod 600 {}`", store.display()),
            ));
        }
    }
    checks
}

/// A running `mcp --http` (its record in the run directory) answers on its address and
/// refuses a request without a token (401): proof that it is this server, with its bearer
/// check, and that `tunnel-client` or a tunnel can reach it. A server with `--public-url`
/// answers only its public `Host` (403 else), so it is probed as the tunnel forwards:
/// with that host and under the URL's path prefix.
fn http_check(home: &CompanionHome, served: &crate::mcp::served::Served) -> Check {
    let record = home.run_dir().join(crate::mcp::served::RECORD_FILE);
    let flags = served.public_url.as_deref().map_or_else(String::new, |url| format!(" --public-url {}", shell_word(url)));
    let start = format!("start it again (`herdr-companion mcp --http {}{flags}`) if a tunnel forwards to it", served.address);
    if !process_runs(served.pid) {
        return Check::fail(
            format!("mcp --http (pid {}, {}) no longer runs; it stopped without removing {}", served.pid, served.address, record.display()),
            format!("{start}; otherwise remove {}", record.display()),
        );
    }
    let (host, path, public) = match served.public_url.as_deref().map(crate::mcp::oauth::PublicUrl::parse) {
        None => (served.address.to_string(), crate::mcp::http::MCP_PATH.to_owned(), None),
        Some(Ok(public)) => {
            (public.authority().to_owned(), format!("{}{}", public.prefix(), crate::mcp::http::MCP_PATH), Some(public.resource()))
        }
        Some(Err(e)) => {
            return Check::fail(
                format!("{} names a public URL the server cannot have used: {e}", record.display()),
                format!("stop pid {} and {start}", served.pid),
            )
        }
    };
    let url = format!("http://{}{path}", served.address);
    let behind = public.as_deref().map_or_else(String::new, |resource| format!(" as {resource} (Host {host})"));
    match probe_without_token(served.address, &host, &path) {
        Ok(401) => {
            Check::ok(format!("mcp --http (pid {}) answers at {url}{behind} and refuses a request without a token (401)", served.pid))
        }
        Ok(status) => Check::fail(
            format!("{url} answers {status} to a request without a token{behind}, not 401"),
            format!("another program may hold that port, or it serves another --public-url: stop it, then {start}"),
        ),
        Err(e) => Check::fail(
            format!("mcp --http (pid {}) does not answer at {url}: {e}", served.pid),
            format!("stop pid {} and {start}", served.pid),
        ),
    }
}

/// Whether a process with `pid` exists (signal 0 delivers nothing; EPERM means it exists).
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: kill with signal 0 only checks that the process exists; it has no effect.
    let status = unsafe { libc::kill(pid, 0) };
    status == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The HTTP status of a POST to `path` at `address` with `Host: host` and without
/// `Authorization` (within a few seconds).
fn probe_without_token(address: std::net::SocketAddr, host: &str, path: &str) -> std::io::Result<u16> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(3)))?;
    stream.set_write_timeout(Some(Duration::from_secs(3)))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    );
    stream.write_all(request.as_bytes())?;
    let mut head = [0u8; 32];
    let read = stream.read(&mut head)?;
    let text = String::from_utf8_lossy(&head[..read]);
    text.split(' ').nth(1).and_then(|code| code.parse().ok()).ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {text:?}")))
}

/// The OAuth store `mcp --http --public-url` keeps in the companion home.
const OAUTH_STORE: &str = "oauth.db";

/// `config.json`'s `mcp.token`, when there is one.
fn configured_mcp_token(home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config_path(home)).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value.pointer("/mcp/token").and_then(Value::as_str).map(str::to_owned)
}

/// Where `name` is found on `path` (the `PATH` value) as an executable file.
fn find_on_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// `text` as one shell word (single quotes when it holds anything but plain characters).
fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@=,".contains(c)) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// How to connect ChatGPT from this machine, with its paths: whether `tunnel-client` is on
/// `path`, the exact `tunnel-client run` lines for its stdio and HTTP-forward bindings
/// (`exe` is this binary), and the state of the own-tunnel way. Information only; what can
/// fail is in [`downlink_checks`]. Names the header file (`file:` form), never the token.
pub fn connecting_chatgpt(home: &CompanionHome, exe: &Path, path: Option<&std::ffi::OsStr>) -> String {
    let mut out = String::new();
    let root = home.root();
    let companion = format!("{} mcp --home {}", shell_word(&exe.display().to_string()), shell_word(&root.display().to_string()));
    let header = root.join(crate::mcp::config::AUTHORIZATION_FILE);
    let _ = writeln!(out, "info  connecting ChatGPT (README \"Connecting ChatGPT\"):");
    match find_on_path("tunnel-client", path) {
        Some(found) => {
            let _ = writeln!(out, "        Secure MCP Tunnel: tunnel-client is {}", found.display());
        }
        None => {
            let _ = writeln!(out, "        Secure MCP Tunnel: tunnel-client is not on PATH; install it (`brew install openai/tools/tunnel-client`, or the download on https://platform.openai.com/settings/organization/tunnels), or use your own HTTPS tunnel");
        }
    }
    let _ = writeln!(
        out,
        "        with a tunnel id and a runtime API key from platform.openai.com (export CONTROL_PLANE_API_KEY=<runtime key>):"
    );
    let _ =
        writeln!(out, "        stdio: tunnel-client run --control-plane.tunnel-id <TUNNEL_ID> --mcp.command {}", shell_word(&companion));
    let _ = writeln!(out, "        HTTP:  {companion} --http 127.0.0.1:{SUGGESTED_MCP_PORT}");
    let _ = writeln!(
        out,
        "               tunnel-client run --control-plane.tunnel-id <TUNNEL_ID> --mcp.server-url http://127.0.0.1:{SUGGESTED_MCP_PORT}/mcp --mcp.extra-headers {}",
        shell_word(&format!("Authorization: file:{}", header.display()))
    );
    if !header.exists() {
        let _ = writeln!(out, "               ({} is written by the first `mcp --http`)", header.display());
    }
    if let Some(public) = crate::mcp::served::read(home).and_then(|served| served.public_url) {
        let resource = crate::mcp::oauth::PublicUrl::parse(&public).map_or_else(|_| format!("{public}/mcp"), |p| p.resource());
        let _ = writeln!(
            out,
            "        own HTTPS tunnel: mcp --http serves the public URL {public}; in ChatGPT the MCP server URL is {resource} with OAuth"
        );
    }
    let store = root.join(OAUTH_STORE);
    if store.exists() {
        let _ = writeln!(out, "        own HTTPS tunnel: OAuth store {} in use; `herdr-companion oauth clients` lists who may connect, `herdr-companion oauth pending` the sign-ins waiting for your approval", store.display());
    } else {
        let _ = writeln!(out, "        own HTTPS tunnel: not used yet (no {}); run `{companion} --http 127.0.0.1:{SUGGESTED_MCP_PORT} --public-url https://<your tunnel's host>` behind cloudflared or Tailscale Funnel", store.display());
    }
    out
}

/// What the extension last reported about a chat page (`diagnostics.report`, kept in
/// `diagnostics.json` in the companion home): a few lines for the doctor's report, or
/// why there is nothing to show.
pub fn page_diagnostics(home: &CompanionHome) -> String {
    let path = home.root().join(crate::api::diagnostics::DIAGNOSTICS_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return "info  no page diagnostics yet: open a chat page with the extension and the side panel's \"What the extension sees\" fills in\n".to_owned();
    };
    let Ok(stored) = serde_json::from_str::<Value>(&text) else {
        return format!("info  {} is not readable JSON; it is replaced by the next report\n", path.display());
    };
    render_page_diagnostics(&stored)
}

/// The lines of one stored report (`{stored_at, diagnostics}`).
pub fn render_page_diagnostics(stored: &Value) -> String {
    let d = &stored["diagnostics"];
    let mut out = String::new();
    let site = d["site"].as_str().unwrap_or("unknown site");
    let when =
        stored["stored_at"].as_u64().map_or_else(|| "at an unknown time".to_owned(), |ms| format!("at {ms} ms since the Unix epoch"));
    let _ = writeln!(out, "info  last page diagnostics ({site}, reported {when}):");
    match d["generation"].as_str() {
        Some(generation) => {
            let _ = writeln!(out, "        layout: {generation}");
        }
        None => {
            let _ = writeln!(
                out,
                "        layout: none recognised — nothing is typed into that page; copy the side panel's diagnostics into a bug report"
            );
        }
    }
    if let Some(facts) = d["facts"].as_object() {
        let missing: Vec<&str> = facts.iter().filter(|(_, v)| v.is_null()).map(|(k, _)| k.as_str()).collect();
        let _ = writeln!(
            out,
            "        facts: {} matched, {} without a match{}",
            facts.len() - missing.len(),
            missing.len(),
            if missing.is_empty() { String::new() } else { format!(" ({})", missing.join(", ")) }
        );
    }
    // Facts a fallback probe serves (the profile's first probes no longer match there):
    // what a profile override should fix first.
    if let Some(usage) = d["usage"].as_object() {
        let fallbacks: Vec<String> = usage
            .iter()
            .filter(|(_, u)| u["fallback"].as_bool() == Some(true))
            .map(|(fact, u)| format!("{fact} (entry {}, {}×)", u["entry"].as_u64().unwrap_or(0), u["count"].as_u64().unwrap_or(0)))
            .collect();
        if !fallbacks.is_empty() {
            let _ = writeln!(out, "        warning: served by a fallback probe: {} — the earlier probes of their chains no longer match; a profile override can fix it", fallbacks.join(", "));
        }
    }
    // Where each missing needed fact was looked for: names and counts, never page text.
    if let Some(missing) = d["missing"].as_object() {
        let top = |map: &Value| -> String {
            let Some(map) = map.as_object() else { return "none".to_owned() };
            let mut entries: Vec<(&String, u64)> = map.iter().map(|(name, n)| (name, n.as_u64().unwrap_or(0))).collect();
            entries.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            let shown: Vec<String> = entries.iter().take(6).map(|(name, n)| format!("{name} {n}")).collect();
            if shown.is_empty() {
                "none".to_owned()
            } else {
                shown.join(", ")
            }
        };
        for (fact, summary) in missing {
            let _ = writeln!(
                out,
                "        missing {fact}: looked at {} element(s); tags {}; roles {}; data-* {}",
                summary["elements"].as_u64().unwrap_or(0),
                top(&summary["tags"]),
                top(&summary["roles"]),
                top(&summary["data_attrs"])
            );
        }
    }
    let csp = &d["csp"];
    let _ = writeln!(
        out,
        "        csp: meta policy {}, {} violation(s) seen",
        if csp["meta"].as_bool().unwrap_or(false) { "present" } else { "absent" },
        csp["violations"].as_u64().unwrap_or(0)
    );
    if let Some(deliveries) = d["deliveries"].as_array().filter(|l| !l.is_empty()) {
        let outcomes: Vec<String> = deliveries
            .iter()
            .map(|x| {
                format!("{} {}", x["outcome"].as_str().unwrap_or("?"), x["reason"].as_str().map(|r| format!("({r})")).unwrap_or_default())
                    .trim()
                    .to_owned()
            })
            .collect();
        let _ = writeln!(out, "        last deliveries: {}", outcomes.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::Browser;
    use std::path::PathBuf;

    fn target(browser: Browser, user_data_dir: Option<&str>, system: bool) -> Target {
        Target { browser, user_data_dir: user_data_dir.map(PathBuf::from), system }
    }

    /// Issue 26 Found 8 (N4): the doctor names a mixed install and the side to update.
    /// Failed before: an older runtime passed as "answers hello" and the extension's side
    /// was not checked at all.
    #[test]
    fn agreement_checks_name_the_older_side() {
        let current = serde_json::json!({"runtime_version": "0.2.0", "protocol": PROTOCOL_VERSION, "capabilities": ["hello"]});
        let old_runtime = serde_json::json!({"runtime_version": "0.1.0", "protocol": 1});
        let agreed = serde_json::json!({"extension_version": "0.2.0", "protocol": PROTOCOL_VERSION, "compatible": true});
        let old_extension = serde_json::json!({"extension_version": "0.1.0", "protocol": 1, "compatible": false, "mismatch": "the extension speaks protocol 1 and this companion (0.2.0) protocol 2; update the extension"});
        let newer_extension = serde_json::json!({"extension_version": "0.3.0", "protocol": 3, "compatible": false, "mismatch": "the extension speaks protocol 3"});
        let text = |runtime: &Value, hello: Option<&Value>| render(&agreement_checks(runtime, hello));
        let fine = text(&current, Some(&agreed));
        assert!(!fine.contains("FAIL") && fine.contains("1 capabilities") && fine.contains("agrees with the runtime"), "{fine}");
        let runtime_old = text(&old_runtime, None);
        assert!(runtime_old.contains("FAIL  runtime 0.1.0 answers hello with protocol 1 and no capabilities"), "{runtime_old}");
        assert!(
            runtime_old.contains("run herdr-companion install again") && runtime_old.contains("no hello from the extension yet"),
            "{runtime_old}"
        );
        let extension_old = text(&current, Some(&old_extension));
        assert!(
            extension_old.contains("FAIL  extension 0.1.0 (protocol 1)") && extension_old.contains("fix: update the extension"),
            "{extension_old}"
        );
        let extension_new = text(&current, Some(&newer_extension));
        assert!(extension_new.contains("fix: run herdr-companion install again"), "{extension_new}");
    }

    #[test]
    fn a_missing_manifest_names_the_browser_and_system_and_the_command_to_run() {
        let path = Path::new("/Library/Google/Chrome/NativeMessagingHosts/dev.herdr.continuity.json");
        let system = manifest_check(Os::MacOs, &target(Browser::Chrome, None, true), path, None);
        expect_test::expect![[r#"
            FAIL  host manifest /Library/Google/Chrome/NativeMessagingHosts/dev.herdr.continuity.json is missing (Google Chrome for every user on macOS reads it there)
                  fix: run `sudo herdr-companion install --browser chrome --system`
        "#]]
        .assert_eq(&render(&[system]));
        let path = Path::new("/home/ada/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts/dev.herdr.continuity.json");
        let user = manifest_check(Os::Linux, &target(Browser::Brave, None, false), path, None);
        expect_test::expect![[r#"
            FAIL  host manifest /home/ada/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts/dev.herdr.continuity.json is missing (Brave on Linux reads it there)
                  fix: run `herdr-companion install --browser brave`
        "#]]
        .assert_eq(&render(&[user]));
        let profile =
            manifest_check(Os::MacOs, &target(Browser::Edge, Some("/p"), true), Path::new("/p/NativeMessagingHosts/x.json"), Some("{}"));
        let report = render(&[profile]);
        assert!(report.contains("fix: rerun `herdr-companion install --browser edge --user-data-dir /p`"), "{report}");
    }

    /// Issue 24: the doctor gives the exact tunnel-client command lines with this machine's
    /// paths, names the header file in its `file:` form and never prints the token.
    #[test]
    fn connecting_chatgpt_gives_the_tunnel_client_lines_with_this_machines_paths_and_no_token() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CompanionHome::at(dir.path().join("home"));
        let exe = Path::new("/opt/herdr/bin/herdr-companion");
        let empty_path = dir.path().join("empty-bin");
        std::fs::create_dir_all(&empty_path).expect("dir");
        let before = connecting_chatgpt(&home, exe, Some(empty_path.as_os_str())).replace(&dir.path().display().to_string(), "TMP");
        expect_test::expect![[r#"
            info  connecting ChatGPT (README "Connecting ChatGPT"):
                    Secure MCP Tunnel: tunnel-client is not on PATH; install it (`brew install openai/tools/tunnel-client`, or the download on https://platform.openai.com/settings/organization/tunnels), or use your own HTTPS tunnel
                    with a tunnel id and a runtime API key from platform.openai.com (export CONTROL_PLANE_API_KEY=<runtime key>):
                    stdio: tunnel-client run --control-plane.tunnel-id <TUNNEL_ID> --mcp.command '/opt/herdr/bin/herdr-companion mcp --home TMP/home'
                    HTTP:  /opt/herdr/bin/herdr-companion mcp --home TMP/home --http 127.0.0.1:8787
                           tunnel-client run --control-plane.tunnel-id <TUNNEL_ID> --mcp.server-url http://127.0.0.1:8787/mcp --mcp.extra-headers 'Authorization: file:TMP/home/mcp-authorization'
                           (TMP/home/mcp-authorization is written by the first `mcp --http`)
                    own HTTPS tunnel: not used yet (no TMP/home/oauth.db); run `/opt/herdr/bin/herdr-companion mcp --home TMP/home --http 127.0.0.1:8787 --public-url https://<your tunnel's host>` behind cloudflared or Tailscale Funnel
        "#]]
        .assert_eq(&before);
        assert!(downlink_checks(&home).is_empty(), "nothing set up, nothing failed");

        // Set up: the token (and its header file), tunnel-client on PATH, the OAuth store.
        let token = crate::mcp::config::mcp_token(&home).expect("token").token;
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("dir");
        std::fs::write(bin.join("tunnel-client"), "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(bin.join("tunnel-client"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let store = home.root().join("oauth.db");
        std::fs::write(&store, "").expect("write");
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let after = connecting_chatgpt(&home, exe, Some(bin.as_os_str())).replace(&dir.path().display().to_string(), "TMP");
        assert!(after.contains("Secure MCP Tunnel: tunnel-client is TMP/bin/tunnel-client"), "{after}");
        assert!(after.contains("own HTTPS tunnel: OAuth store TMP/home/oauth.db in use; `herdr-companion oauth clients`"), "{after}");
        assert!(!after.contains("is written by the first"), "{after}");
        let checks = render(&downlink_checks(&home)).replace(&dir.path().display().to_string(), "TMP");
        expect_test::expect![[r#"
            ok    TMP/home/mcp-authorization holds the bearer header for tunnel-client --mcp.extra-headers (0600; the token is not shown)
            ok    OAuth store TMP/home/oauth.db is private (0600)
        "#]]
        .assert_eq(&checks);
        assert!(!after.contains(&token) && !checks.contains(&token), "the token is never printed");

        // Broken: a stale or readable header file, a readable OAuth store — each fails with its fix.
        let header = home.root().join("mcp-authorization");
        std::fs::write(&header, "Bearer stale\n").expect("write");
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let stale = render(&downlink_checks(&home)).replace(&dir.path().display().to_string(), "TMP");
        expect_test::expect![[r#"
            FAIL  TMP/home/mcp-authorization does not hold the bearer of config.json's mcp.token: tunnel-client would be refused (401)
                  fix: run `herdr-companion mcp --http 127.0.0.1:8787` once (stop it with Ctrl-C); it rewrites the file from config.json with mode 0600
            FAIL  OAuth store TMP/home/oauth.db has mode 644, not 0600
                  fix: run `chmod 600 TMP/home/oauth.db`
        "#]]
        .assert_eq(&stale);
        std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let readable = render(&downlink_checks(&home));
        assert!(readable.contains("has mode 640, not 0600: it holds the MCP bearer token") && readable.contains("chmod 600"), "{readable}");
        assert!(!readable.contains(&token) && !stale.contains(&token));
    }

    /// A server that answers `status` to one request, on a free loopback port.
    fn one_answer(status: &'static str) -> std::net::SocketAddr {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                let mut buffer = [0u8; 512];
                let _ = stream.read(&mut buffer);
                let _ = stream.write_all(format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").as_bytes());
            }
        });
        address
    }

    #[test]
    fn a_recorded_mcp_http_server_must_answer_401_without_a_token() {
        use crate::mcp::served::Served;
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CompanionHome::at(dir.path().join("home"));
        let me = std::process::id();
        let ours = http_check(&home, &Served { address: one_answer("401 Unauthorized"), pid: me, public_url: None });
        assert!(ours.fix.is_none() && ours.what.contains("refuses a request without a token (401)"), "{ours:?}");
        let other = http_check(&home, &Served { address: one_answer("200 OK"), pid: me, public_url: None });
        assert!(other.what.contains("answers 200 to a request without a token, not 401"), "{other:?}");
        assert!(other.fix.as_deref().is_some_and(|f| f.contains("another program may hold that port")));
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address");
        let silent = http_check(&home, &Served { address: closed, pid: me, public_url: None });
        assert!(silent.what.contains("does not answer at") && silent.fix.is_some(), "{silent:?}");
        let mut gone = std::process::Command::new("true").spawn().expect("spawn true");
        let pid = gone.id();
        gone.wait().expect("wait");
        let stale = http_check(&home, &Served { address: closed, pid, public_url: None });
        assert!(stale.what.contains("no longer runs") && stale.fix.as_deref().is_some_and(|f| f.contains("mcp-http.json")), "{stale:?}");
    }

    #[test]
    fn a_path_with_spaces_is_one_shell_word_inside_the_mcp_command() {
        assert_eq!(shell_word("/usr/bin/x"), "/usr/bin/x");
        assert_eq!(shell_word("/Users/ada/Library/Application Support/h"), "'/Users/ada/Library/Application Support/h'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CompanionHome::at(dir.path().join("Application Support"));
        let out = connecting_chatgpt(&home, Path::new("/opt/h c/herdr-companion"), None);
        let root = dir.path().join("Application Support").display().to_string();
        let inner = format!("'/opt/h c/herdr-companion' mcp --home '{root}'");
        assert!(out.contains(&format!("--mcp.command {}", shell_word(&inner))), "{out}");
    }

    #[test]
    fn a_socket_path_too_long_for_macos_is_reported_before_the_runtime_fails_to_bind() {
        let long = PathBuf::from(format!("/Users/{}/Library/Application Support/herdr-continuity/run/companion.sock", "a".repeat(33)));
        assert!(long.as_os_str().len() > 103 && long.as_os_str().len() <= 107);
        assert_eq!(socket_path_length_check(Os::Linux, &long), None);
        let check = socket_path_length_check(Os::MacOs, &long).expect("too long on macOS");
        assert!(check.what.contains("macOS allows at most 103"), "{}", check.what);
        assert!(check.fix.as_deref().is_some_and(|f| f.contains("HERDR_CONTINUITY_HOME")));
    }

    /// Git41 H1: the doctor names a git older than 2.31 (which herdr_git refuses) and says
    /// to upgrade; a newer one passes, a missing one fails.
    #[test]
    fn the_doctor_fails_a_git_older_than_2_31_and_says_to_upgrade() {
        let old = git_check(Some("git version 2.30.2"), "the runtime's PATH");
        assert_eq!(old.fix.as_deref(), Some("herdr_git needs Git 2.31 or newer (found 2.30.2): upgrade Git"));
        assert!(old.what.contains("2.30.2"), "{old:?}");
        assert_eq!(git_check(Some("git version 2.39.5 (Apple Git-154)"), "the runtime's PATH").fix, None);
        let none = git_check(None, "the runtime's PATH");
        assert!(none.fix.is_none() && none.what.contains("Git 2.31 or newer"), "optional: said, not failed");
    }
}

//! Shared helpers: temporary homes, child processes, frame and line IO.
//!
//! Process safety (a hung or leaked child would stall CI):
//! - every child a test starts is owned by a guard that kills it (by its own pid) when
//!   dropped, also when an assertion panics: [`ChildGuard`], [`RuntimeProcess`],
//!   [`Standin`], [`DetachedRuntime`];
//! - every wait is bounded and panics with a message saying what did not happen; no
//!   blocking read is left without a timeout.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const ORIGIN: &str = "chrome-extension://gencedhnagpaccnkbgpcipafjlankiop/";

/// Longest wait for a child process to start or stop, or for one answer.
pub const PROCESS_WAIT: Duration = Duration::from_secs(15);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_herdr-companion")
}

/// Path of the `herdr-standin` binary (next to ours), built once if missing.
pub fn standin_bin() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = Path::new(bin()).with_file_name("herdr-standin");
        if !path.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let status = Command::new(cargo).args(["build", "-p", "herdr-standin"]).status().expect("run cargo build -p herdr-standin");
            assert!(status.success(), "cargo build -p herdr-standin failed");
        }
        path
    })
    .clone()
}

/// A child process killed (SIGKILL, by its own pid) and reaped when dropped.
pub struct ChildGuard {
    pub child: Child,
    what: String,
}

impl ChildGuard {
    pub fn spawn(command: &mut Command, what: &str) -> Self {
        let child = command.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        Self { child, what: what.to_owned() }
    }

    /// The exit status within `timeout`; panics (and kills the child) otherwise.
    pub fn wait_within(&mut self, timeout: Duration) -> ExitStatus {
        match wait_within(&mut self.child, timeout) {
            Some(status) => status,
            None => panic!("{} did not exit within {timeout:?}", self.what),
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        kill_and_reap(&mut self.child);
    }
}

fn kill_and_reap(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Waits for `child` at most `timeout`; `None` when it is still running.
pub fn wait_within(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => return None,
            Err(e) => panic!("cannot wait for a child process: {e}"),
        }
    }
}

/// Runs `command` to completion like [`Command::output`], but at most [`PROCESS_WAIT`];
/// a command still running then is killed and the test fails saying so.
pub fn output_within(command: &mut Command, what: &str) -> Output {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut guard = ChildGuard::spawn(command, what);
    let stdout = drain_in_background(guard.child.stdout.take());
    let stderr = drain_in_background(guard.child.stderr.take());
    let status = guard.wait_within(PROCESS_WAIT);
    let collect = |rx: mpsc::Receiver<Vec<u8>>| rx.recv_timeout(PROCESS_WAIT).unwrap_or_default();
    Output { status, stdout: collect(stdout), stderr: collect(stderr) }
}

fn drain_in_background(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        let _ = tx.send(bytes);
    });
    rx
}

/// A temporary companion home; `herdr_socket` points at nothing by default.
pub struct TestHome {
    pub dir: tempfile::TempDir,
    pub herdr_socket: PathBuf,
}

impl TestHome {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let herdr_socket = dir.path().join("no-herdr.sock");
        Self { dir, herdr_socket }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn socket(&self) -> PathBuf {
        self.home().join("run/companion.sock")
    }

    /// The runtime log (empty when it does not exist yet).
    pub fn runtime_log(&self) -> String {
        std::fs::read_to_string(self.home().join("runtime.log")).unwrap_or_default()
    }

    /// Where the runtimes this home starts write their stderr (a file, never a pipe
    /// nobody reads, which could block the runtime once full).
    fn runtime_stderr(&self) -> PathBuf {
        self.dir.path().join("runtime.stderr")
    }

    /// A command for the binary with this home's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(bin());
        command
            .args(args)
            .env("HERDR_CONTINUITY_HOME", self.home())
            .env("HERDR_SOCKET_PATH", &self.herdr_socket)
            .env_remove("HERDR_SESSION")
            .env("HERDR_COMPANION_AUTOSTART", "0");
        command
    }

    /// Starts `herdr-companion runtime` without waiting for it.
    pub fn spawn_runtime(&self) -> RuntimeProcess {
        let stderr = std::fs::OpenOptions::new().create(true).append(true).open(self.runtime_stderr()).expect("open runtime.stderr");
        let child = self.command(&["runtime"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr).spawn().expect("spawn runtime");
        RuntimeProcess { child, log: self.home().join("runtime.log"), stderr: self.runtime_stderr() }
    }

    /// Starts `herdr-companion runtime` and waits until its socket answers.
    pub fn start_runtime(&self) -> RuntimeProcess {
        self.start_runtime_with(&[])
    }

    /// [`Self::start_runtime`] with `vars` added to (or replacing) the runtime's environment.
    pub fn start_runtime_with(&self, vars: &[(&str, &std::ffi::OsStr)]) -> RuntimeProcess {
        let stderr = std::fs::OpenOptions::new().create(true).append(true).open(self.runtime_stderr()).expect("open runtime.stderr");
        let mut command = self.command(&["runtime"]);
        command.envs(vars.iter().copied()).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
        let child = command.spawn().expect("spawn runtime");
        let mut process = RuntimeProcess { child, log: self.home().join("runtime.log"), stderr: self.runtime_stderr() };
        let deadline = Instant::now() + PROCESS_WAIT;
        while UnixStream::connect(self.socket()).is_err() {
            if let Ok(Some(status)) = process.child.try_wait() {
                panic!("the runtime exited ({status}) before its socket came up\n{}", process.diagnostics());
            }
            assert!(
                Instant::now() < deadline,
                "runtime socket {} never came up within {PROCESS_WAIT:?}\n{}",
                self.socket().display(),
                process.diagnostics()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        process
    }
}

/// A runtime we started; killed (by its own pid) when dropped.
pub struct RuntimeProcess {
    pub child: Child,
    log: PathBuf,
    stderr: PathBuf,
}

impl RuntimeProcess {
    /// Sends SIGTERM and waits (bounded) for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal_and_wait(libc::SIGTERM)
    }

    /// Sends `signal` and waits at most [`PROCESS_WAIT`] for the exit; a runtime still
    /// running then is killed and the test fails with its log.
    pub fn signal_and_wait(&mut self, signal: i32) -> ExitStatus {
        send_signal(self.child.id(), signal);
        match wait_within(&mut self.child, PROCESS_WAIT) {
            Some(status) => status,
            None => {
                kill_and_reap(&mut self.child);
                panic!("the runtime was still running {PROCESS_WAIT:?} after signal {signal}\n{}", self.diagnostics());
            }
        }
    }

    /// The runtime's log and stderr, for failure messages.
    pub fn diagnostics(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| format!("({e})"));
        format!("--- runtime.log ---\n{}--- runtime stderr ---\n{}", read(&self.log), read(&self.stderr))
    }
}

impl Drop for RuntimeProcess {
    fn drop(&mut self) {
        kill_and_reap(&mut self.child);
    }
}

/// A runtime some other process started detached (the host's autostart): we only know
/// its pid from `runtime.log`. Killed with SIGKILL when dropped if still alive.
pub struct DetachedRuntime {
    pub pid: u32,
}

impl DetachedRuntime {
    /// The runtime whose start line is in `home`'s runtime.log.
    pub fn from_log(home: &TestHome) -> Self {
        let log = home.runtime_log();
        let pid = log
            .split(", pid ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|pid| pid.trim().parse().ok())
            .unwrap_or_else(|| panic!("no runtime pid in runtime.log:\n{log}"));
        Self { pid }
    }

    /// True while the process exists and is not a zombie.
    pub fn is_running(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            // Field 3 (after the parenthesised name) is the state; Z = exited, unreaped.
            Ok(stat) => {
                stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()).is_some_and(|state| state != "Z" && state != "X")
            }
            Err(_) => false,
        }
    }

    /// Waits at most [`PROCESS_WAIT`] for the process to end.
    pub fn wait_for_exit(&self) {
        let deadline = Instant::now() + PROCESS_WAIT;
        while self.is_running() {
            assert!(Instant::now() < deadline, "the detached runtime (pid {}) was still running after {PROCESS_WAIT:?}", self.pid);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for DetachedRuntime {
    fn drop(&mut self) {
        if self.is_running() {
            send_signal(self.pid, libc::SIGKILL);
        }
    }
}

pub fn send_signal(pid: u32, signal: i32) {
    // SAFETY: kill has no memory effects; the pid is a process this test started.
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

pub fn send_sigterm(pid: u32) {
    send_signal(pid, libc::SIGTERM);
}

/// A running `herdr-standin`; killed (by its own pid) when dropped.
pub struct Standin {
    /// Kills the stand-in when the test ends.
    _process: ChildGuard,
    pub socket: PathBuf,
}

impl Standin {
    /// Starts the stand-in on `socket` (optionally seeded) and waits for its `ready` line.
    pub fn start(socket: &Path, seed: Option<&Value>, extra: &[&str]) -> Standin {
        let mut command = Command::new(standin_bin());
        command.arg("--socket").arg(socket).args(extra).stdin(Stdio::null()).stdout(Stdio::piped());
        if let Some(seed) = seed {
            let seed_path = socket.with_extension("seed.json");
            std::fs::write(&seed_path, seed.to_string()).expect("write seed");
            command.arg("--seed").arg(seed_path);
        }
        let mut process = ChildGuard::spawn(&mut command, "herdr-standin");
        let stdout: ChildStdout = process.child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut ready = String::new();
            let _ = BufReader::new(stdout).read_line(&mut ready);
            let _ = tx.send(ready);
        });
        let ready = rx.recv_timeout(PROCESS_WAIT).unwrap_or_else(|_| panic!("herdr-standin did not say ready within {PROCESS_WAIT:?}"));
        assert!(ready.starts_with("ready "), "stand-in said {ready:?}");
        Standin { _process: process, socket: socket.to_path_buf() }
    }

    /// One request to the stand-in; panics unless it answers with a result.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let mut stream = UnixStream::connect(&self.socket).expect("connect stand-in");
        stream.set_read_timeout(Some(PROCESS_WAIT)).expect("timeout");
        let line = json!({"id": "t", "method": method, "params": params});
        stream.write_all(format!("{line}\n").as_bytes()).expect("write");
        let mut answer = String::new();
        BufReader::new(stream).read_line(&mut answer).unwrap_or_else(|e| panic!("stand-in did not answer {method}: {e}"));
        let value: Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("stand-in answered {method} with {answer:?}: {e}"));
        assert!(value.get("result").is_some(), "stand-in refused {method}: {value}");
        value
    }

    /// Reports agent `bot` in `pane` as `state` (a real agent's hook would).
    pub fn report(&self, pane: &str, state: &str) {
        self.call("pane.report_agent", json!({"pane_id": pane, "source": "custom:test", "agent": "bot", "state": state}));
    }
}

/// Every message the runtime sends is a message of `continuity_protocol` that serializes
/// back to the same JSON (so the typed crate and the runtime never drift apart).
pub fn assert_typed_message(value: &Value) {
    let typed = continuity_protocol::Message::from_value(value.clone())
        .unwrap_or_else(|e| panic!("the runtime sent a message the protocol crate does not type ({e}): {value}"));
    let back = typed.to_value().expect("a typed message serializes");
    assert_eq!(&back, value, "the protocol crate does not round-trip this runtime message");
}

/// A line-protocol client of the runtime; every message it reads is checked against the
/// protocol crate ([`assert_typed_message`]).
pub struct LineClient {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl LineClient {
    pub fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket).expect("connect runtime");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let writer = stream.try_clone().expect("clone");
        Self { reader: BufReader::new(stream), writer }
    }

    /// Sends a line; false when the runtime already closed the connection.
    pub fn try_send_raw(&mut self, line: &[u8]) -> bool {
        self.writer.write_all(line).is_ok() && self.writer.write_all(b"\n").is_ok()
    }

    pub fn send_raw(&mut self, line: &[u8]) {
        self.writer.write_all(line).expect("write");
        self.writer.write_all(b"\n").expect("write");
    }

    /// Sends a request and returns the response with the same id, skipping events.
    pub fn call(&mut self, id: &str, method: &str, params: Value) -> Value {
        let request = json!({"id": id, "method": method, "params": params});
        self.send_raw(request.to_string().as_bytes());
        self.response_for(id)
    }

    pub fn response_for(&mut self, id: &str) -> Value {
        loop {
            let value = self.next().expect("runtime closed the connection");
            if value.get("id").and_then(Value::as_str) == Some(id) {
                return value;
            }
        }
    }

    /// The next message, or `None` at EOF; panics after 10 s without one.
    pub fn next(&mut self) -> Option<Value> {
        let mut line = Vec::new();
        match self.reader.read_until(b'\n', &mut line) {
            Ok(0) => None,
            Ok(_) => {
                let value: Value = serde_json::from_slice(&line).expect("runtime sent JSON");
                assert_typed_message(&value);
                Some(value)
            }
            Err(e) => panic!("reading from runtime (10 s timeout): {e}"),
        }
    }
}

pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as u32).to_ne_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

/// Reads one Native Messaging frame; `None` at EOF.
pub fn read_frame(reader: &mut impl Read) -> Option<Value> {
    let mut len = [0u8; 4];
    if reader.read_exact(&mut len).is_err() {
        return None;
    }
    let mut body = vec![0u8; u32::from_ne_bytes(len) as usize];
    reader.read_exact(&mut body).expect("frame body");
    Some(serde_json::from_slice(&body).expect("host sent JSON"))
}

/// The frames a host writes to its stdout, read on a background thread so that every
/// wait for one is bounded.
pub struct FrameReader {
    frames: mpsc::Receiver<Value>,
}

impl FrameReader {
    pub fn new(stdout: ChildStdout) -> Self {
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = stdout;
            while let Some(frame) = read_frame(&mut stdout) {
                if tx.send(frame).is_err() {
                    return;
                }
            }
        });
        Self { frames }
    }

    /// The next frame; `None` once the host closed stdout. Panics after [`PROCESS_WAIT`].
    pub fn next(&mut self) -> Option<Value> {
        match self.frames.recv_timeout(PROCESS_WAIT) {
            Ok(frame) => Some(frame),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the host wrote no frame within {PROCESS_WAIT:?}")
            }
        }
    }

    /// Frames until one matches `pred` (skipping e.g. `herdr_state` events).
    pub fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let value = self.next().expect("host closed stdout before the expected frame");
            if pred(&value) {
                return value;
            }
        }
    }
}

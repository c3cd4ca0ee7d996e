//! Shared helpers: temporary homes, a runtime child process, frame and line IO.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ORIGIN: &str = "chrome-extension://gencedhnagpaccnkbgpcipafjlankiop/";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_herdr-companion")
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

    /// Starts `herdr-companion runtime` and waits until its socket answers.
    pub fn start_runtime(&self) -> RuntimeProcess {
        let child = self
            .command(&["runtime"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn runtime");
        let process = RuntimeProcess { child };
        wait_for_socket(&self.socket());
        process
    }
}

/// A runtime we started; killed (by its own pid) when dropped.
pub struct RuntimeProcess {
    pub child: Child,
}

impl RuntimeProcess {
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        send_sigterm(self.child.id());
        self.child.wait().expect("wait runtime")
    }
}

impl Drop for RuntimeProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn send_sigterm(pid: u32) {
    // SAFETY: kill has no memory effects; the pid is a process this test started.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
}

pub fn wait_for_socket(socket: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while UnixStream::connect(socket).is_err() {
        assert!(
            Instant::now() < deadline,
            "runtime socket {} never came up",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A line-protocol client of the runtime.
pub struct LineClient {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl LineClient {
    pub fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket).expect("connect runtime");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let writer = stream.try_clone().expect("clone");
        Self {
            reader: BufReader::new(stream),
            writer,
        }
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

    /// The next message, or `None` at EOF.
    pub fn next(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(serde_json::from_str(&line).expect("runtime sent JSON")),
            Err(e) => panic!("reading from runtime: {e}"),
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

/// Reads frames until one matches `pred` (skipping e.g. `herdr_state` events).
pub fn read_frame_until(reader: &mut impl Read, pred: impl Fn(&Value) -> bool) -> Value {
    loop {
        let value = read_frame(reader).expect("host closed stdout before the expected frame");
        if pred(&value) {
            return value;
        }
    }
}

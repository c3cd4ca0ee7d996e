//! `herdr_exec`: one command (an argv, no shell unless the caller sends `sh -c …` itself)
//! in a root, with a timeout of at most [`MAX_EXEC_TIMEOUT_MS`] and its output capped, and
//! the idempotency of non-idempotent writes.
//!
//! Invariants:
//! - The command runs in its own process group; at the timeout the whole group is killed
//!   (SIGKILL), so no grandchild outlives the call.
//! - Each of stdout and stderr keeps its first [`HEAD_BYTES`] and last [`TAIL_BYTES`]
//!   bytes; the result says how many bytes in between were left out.
//! - A `non_idempotent_write` needs an `idempotency_key`. The key is claimed in `state.db`
//!   (table `exec_runs`) BEFORE the command starts, and its result is stored when it ends:
//!   a retry with the same key (and the same command) returns the first result and never
//!   runs the command again; a key whose run was cut by a runtime stop answers
//!   "interrupted", also never run again; the same key for another command is refused.
//!   Keys are reclaimed by `crate::retention` (never within their 24-hour retry window).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::db::{off_worker, DbError, SharedConnection};

/// Longest timeout a call may ask for.
pub const MAX_EXEC_TIMEOUT_MS: u64 = 60_000;
/// The timeout when the call names none.
pub const DEFAULT_EXEC_TIMEOUT_MS: u64 = 30_000;
/// Bytes kept from the start of each stream.
pub const HEAD_BYTES: usize = 8 * 1024;
/// Bytes kept from the end of each stream.
pub const TAIL_BYTES: usize = 24 * 1024;
/// Most argv entries.
pub const MAX_ARGV: usize = 256;

/// What the caller says the command does (its own word; the bridge asks the user for every
/// exec whatever it says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Changes nothing.
    ReadOnly,
    /// Running it twice is the same as once.
    IdempotentWrite,
    /// Must run at most once per `idempotency_key`.
    NonIdempotentWrite,
}

impl Intent {
    /// The wire names.
    pub const NAMES: [&'static str; 3] = ["read_only", "idempotent_write", "non_idempotent_write"];

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "read_only" => Some(Intent::ReadOnly),
            "idempotent_write" => Some(Intent::IdempotentWrite),
            "non_idempotent_write" => Some(Intent::NonIdempotentWrite),
            _ => None,
        }
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Intent::ReadOnly => "read_only",
            Intent::IdempotentWrite => "idempotent_write",
            Intent::NonIdempotentWrite => "non_idempotent_write",
        }
    }
}

/// One stream's capped output.
#[derive(Debug, Default, Clone)]
pub struct Capped {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl Capped {
    /// Takes more bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        let (head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(head);
        self.tail.extend(rest);
        while self.tail.len() > TAIL_BYTES {
            self.tail.pop_front();
        }
    }

    /// The kept text (lossy UTF-8) with a marker where bytes were left out, and how many.
    pub fn text(&self) -> (String, u64) {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let omitted = self.total - kept;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if omitted > 0 {
            text.push_str(&format!("\n…[{omitted} bytes left out]…\n"));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, omitted)
    }
}

async fn drain(mut reader: impl AsyncRead + Unpin, into: Arc<Mutex<Capped>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => into.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(&buf[..n]),
        }
    }
}

/// Kills the process group `pgid` with `signal`.
pub fn kill_group(pgid: u32, signal: i32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        if pgid > 1 {
            // SAFETY: killpg only sends a signal to the group this runtime created.
            unsafe { libc::killpg(pgid, signal) };
        }
    }
}

/// The runtime's environment variables a command inherits (shared with every `git` run);
/// every other one (the SSH agent socket, `HERDR_*`, tokens) is withheld.
pub use crate::gitcmd::INHERITED_ENV;

/// A command ready to spawn in its own process group (stdin closed, output piped), with only
/// the [`INHERITED_ENV`] variables and `LC_*` of the runtime, that dies with the runtime
/// (`super::procs`). Spawn it from async code on the runtime's worker threads only (never
/// from `spawn_blocking` or `block_in_place`): the death signal follows the spawning thread.
pub fn command(argv: &[String], cwd: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&argv[0]);
    command.env_clear().envs(crate::gitcmd::inherited_env());
    command
        .args(&argv[1..])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    super::procs::die_with_the_runtime(&mut command);
    command
}

/// Runs `argv` in `cwd` for at most `timeout`; the result object of `herdr_exec`.
pub async fn run(argv: &[String], cwd: &Path, timeout: Duration) -> Value {
    let started = Instant::now();
    let mut child = match command(argv, cwd).spawn() {
        Ok(child) => child,
        Err(e) => {
            return json!({"exit_code": Value::Null, "timed_out": false, "spawn_error": format!("{} could not be started ({e}); check the program name (no shell runs unless you send [\"sh\",\"-c\",\"…\"])", argv[0]), "stdout": "", "stderr": "", "duration_ms": 0});
        }
    };
    let pgid = child.id().unwrap_or(0);
    let (out, err) = (Arc::new(Mutex::new(Capped::default())), Arc::new(Mutex::new(Capped::default())));
    let readers = (
        child.stdout.take().map(|s| tokio::spawn(drain(s, out.clone()))),
        child.stderr.take().map(|s| tokio::spawn(drain(s, err.clone()))),
    );
    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            kill_group(pgid, libc::SIGKILL);
            (child.wait().await.ok(), true)
        }
    };
    // The group is gone or finished; what is left of its pipes ends soon (a daemon that
    // kept them open is cut off after a short grace).
    kill_group(pgid, libc::SIGKILL);
    for reader in [readers.0, readers.1].into_iter().flatten() {
        let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
    }
    let lock = |c: &Arc<Mutex<Capped>>| c.lock().unwrap_or_else(std::sync::PoisonError::into_inner).text();
    let ((stdout, stdout_omitted), (stderr, stderr_omitted)) = (lock(&out), lock(&err));
    use std::os::unix::process::ExitStatusExt;
    json!({
        "exit_code": status.and_then(|s| s.code()),
        "signal": status.and_then(|s| s.signal()),
        "timed_out": timed_out,
        "stdout": stdout,
        "stdout_omitted_bytes": stdout_omitted,
        "stderr": stderr,
        "stderr_omitted_bytes": stderr_omitted,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// What the idempotency table says of a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// Claimed now: run the command.
    Claimed,
    /// Run before: its stored result.
    Done(Value),
    /// Claimed before, never finished: running now in this runtime, or cut by a stop.
    Unfinished {
        /// True when the claim is from an earlier runtime start (it was interrupted).
        interrupted: bool,
    },
    /// The key was used for another command.
    OtherCommand(String),
}

/// The `exec_runs` table: idempotency keys and their results.
#[derive(Debug)]
pub struct ExecRuns {
    conn: SharedConnection,
    boot_id: String,
}

impl ExecRuns {
    /// Opens `state.db` at `path` on a connection of its own (tests; the runtime shares
    /// the write tools' connection, see [`ExecRuns::on`]).
    pub fn open(path: &Path, boot_id: &str) -> Result<Self, DbError> {
        Ok(Self::on(crate::db::open_shared(path)?, boot_id))
    }

    /// The runs on `conn`, a connection to `state.db` at the current schema, for the
    /// runtime start `boot_id`.
    pub fn on(conn: SharedConnection, boot_id: &str) -> Self {
        Self { conn, boot_id: boot_id.to_owned() }
    }

    /// Claims `key` for `fingerprint` (or says why not).
    pub async fn claim(&self, key: String, fingerprint: String, now: i64) -> Result<Claim, DbError> {
        let (conn, boot) = (self.conn.clone(), self.boot_id.clone());
        off_worker(move || {
            let mut conn = conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let row: Option<(String, String, Option<String>)> = tx
                .query_row("SELECT fingerprint, boot_id, result FROM exec_runs WHERE key = ?1", params![key], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            let claim = match row {
                None => {
                    tx.execute(
                        "INSERT INTO exec_runs (key, fingerprint, boot_id, started_at) VALUES (?1, ?2, ?3, ?4)",
                        params![key, fingerprint, boot, now],
                    )?;
                    Claim::Claimed
                }
                Some((stored, _, _)) if stored != fingerprint => Claim::OtherCommand(stored),
                Some((_, _, Some(result))) => Claim::Done(serde_json::from_str(&result)?),
                Some((_, claimed_by, None)) => Claim::Unfinished { interrupted: claimed_by != boot },
            };
            tx.commit()?;
            Ok(claim)
        })
        .await
    }

    /// Stores the result of the run of `key`.
    pub async fn finish(&self, key: String, result: &Value) -> Result<(), DbError> {
        let conn = self.conn.clone();
        let text = result.to_string();
        off_worker(move || {
            let conn = conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            conn.execute("UPDATE exec_runs SET result = ?2 WHERE key = ?1", params![key, text])?;
            Ok(())
        })
        .await
    }
}

/// A fingerprint of a command: its argv and working directory.
pub fn fingerprint(argv: &[String], cwd: &Path) -> String {
    let parts: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).chain(std::iter::once(cwd.as_os_str().as_encoded_bytes())).collect();
    format!("{:016x}", crate::bridge::machine::fnv1a(&parts))
}

/// The argv of a call: a non-empty array of non-empty strings (no NUL).
pub fn argv_of(value: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(Value::Array(items)) = value else {
        return Err("command must be an array of strings, the program and its arguments, e.g. [\"cargo\",\"test\"]; for a shell line send [\"sh\",\"-c\",\"…\"]".to_owned());
    };
    if items.is_empty() || items.len() > MAX_ARGV {
        return Err(format!("command must hold 1 to {MAX_ARGV} strings; it holds {}", items.len()));
    }
    let argv: Option<Vec<String>> = items.iter().map(|v| v.as_str().filter(|s| !s.contains('\0')).map(str::to_owned)).collect();
    match argv {
        Some(argv) if !argv[0].trim().is_empty() => Ok(argv),
        _ => Err("command must be an array of strings without NUL, the first naming the program".to_owned()),
    }
}

/// The working directory, for a caller-shown path.
pub fn shown(path: &Path) -> String {
    PathBuf::from(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_output_keeps_head_and_tail_and_counts_the_rest() {
        let mut capped = Capped::default();
        capped.push(&vec![b'a'; HEAD_BYTES]);
        capped.push(&vec![b'b'; 1000]);
        capped.push(&vec![b'c'; TAIL_BYTES]);
        let (text, omitted) = capped.text();
        assert_eq!(omitted, 1000);
        assert!(text.starts_with('a') && text.ends_with('c') && text.contains("[1000 bytes left out]"));
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let argv: Vec<String> = ["sh", "-c", "sleep 30 & echo started; wait"].iter().map(|s| (*s).to_owned()).collect();
        let result = run(&argv, dir.path(), Duration::from_millis(300)).await;
        assert_eq!(result["timed_out"], true);
        assert!(result["stdout"].as_str().is_some_and(|s| s.contains("started")));
        assert!(result["duration_ms"].as_u64().is_some_and(|ms| ms < 5_000), "{result}");
    }

    #[tokio::test]
    async fn a_command_sees_only_the_allowlisted_environment() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::env::set_var("HERDR_TOOLSFIX_SECRET", "hunter2");
        std::env::set_var("SSH_AUTH_SOCK_TOOLSFIX", "/tmp/agent");
        let argv: Vec<String> = ["env"].iter().map(|s| (*s).to_owned()).collect();
        let result = run(&argv, dir.path(), Duration::from_secs(10)).await;
        let out = result["stdout"].as_str().unwrap_or_default().to_owned();
        assert!(out.contains("PATH="), "{result}");
        assert!(!out.contains("hunter2") && !out.contains("SSH_AUTH_SOCK"), "{out}");
    }
}

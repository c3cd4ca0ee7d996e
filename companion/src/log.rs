//! `runtime.log`: the runtime's `tracing` events, one line each, in a size-capped file.
//!
//! Each [`RuntimeLog`] owns a `tracing` dispatcher whose `fmt` subscriber writes plain
//! lines (`2026-12-01T08:42:08.123456Z  INFO <message>`) through a [`CappedFile`]. The
//! runtime also makes it the process's global dispatcher
//! ([`RuntimeLog::install_as_global_default`]), so `tracing::info!` and friends anywhere in
//! the runtime land in the same file.
//!
//! Invariants:
//! - the log never grows past its cap: before a line would take `runtime.log` over
//!   [`LOG_CAP_BYTES`], the file is renamed to `runtime.log.1` (replacing the one before)
//!   and a new `runtime.log` is started, so at most two files of at most the cap each
//!   exist (a single line longer than the cap gets a file of its own), and a line is
//!   never split between them. The one exception: a [`RuntimeLog::try_line`] that finds
//!   the lock held appends without counting (only while force-stopping);
//! - logging never fails the runtime: if the file cannot be opened or written, lines go
//!   to stderr instead ([`RuntimeLog::line`]) or are dropped ([`RuntimeLog::try_line`]);
//! - [`RuntimeLog::try_line`] never waits for a lock;
//! - one message is one line: a line break in a message is written as `\n` / `\r`, so no
//!   logged text (Herdr's, a model's) can start a line of its own, and a line's message is
//!   what follows its own timestamp and level ([`message_of`]).

use std::fmt::Arguments;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use tracing::Dispatch;
use tracing_subscriber::fmt::MakeWriter;

/// Size at which `runtime.log` is rotated to `runtime.log.1` (1 MiB).
pub const LOG_CAP_BYTES: u64 = 1024 * 1024;

/// How the line that says why a runtime did not start begins (written by
/// `crate::runtime`; the host that started that runtime shows the rest, `crate::host`).
pub const REFUSED_TO_START: &str = "runtime refused to start:";

/// The message of one `runtime.log` line: what follows its timestamp and level, or `None`
/// when the line does not have that shape. A marker such as [`REFUSED_TO_START`] is matched
/// at the start of this, never anywhere in a line (review 42 F5: logged text from Herdr or
/// a judge model could carry it).
pub fn message_of(line: &str) -> Option<&str> {
    let (stamp, rest) = line.split_once(' ')?;
    if !(stamp.ends_with('Z') && stamp.as_bytes().get(10) == Some(&b'T')) {
        return None;
    }
    let (level, message) = rest.trim_start().split_once(' ')?;
    ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level).then_some(message)
}

/// `message` on one line: its line breaks written as `\n` / `\r`.
fn one_line(message: Arguments<'_>) -> std::borrow::Cow<'static, str> {
    let text = message.to_string();
    if text.contains(['\n', '\r']) {
        text.replace('\n', "\\n").replace('\r', "\\r").into()
    } else {
        text.into()
    }
}

/// An append-only file that rotates to `<path>.1` before it would exceed its cap.
#[derive(Debug)]
pub struct CappedFile {
    /// The live log file.
    path: PathBuf,
    /// The open file, or `None` when it could not be opened (then writes fail).
    file: Option<File>,
    /// Bytes in the live file.
    len: u64,
    /// The most bytes the live file may hold.
    cap: u64,
}

impl CappedFile {
    /// Opens (appends to) `path`, rotating at `cap` bytes. A file that cannot be opened
    /// now is opened by the first write that finds it possible.
    pub fn open(path: &Path, cap: u64) -> Self {
        let mut file = Self { path: path.to_path_buf(), file: None, len: 0, cap };
        let _ = file.reopen();
        file
    }

    /// `<path>.1`: where the previous log goes on rotation.
    pub fn rotated_path(path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".1");
        PathBuf::from(name)
    }

    /// Moves the live file to `<path>.1` and starts an empty one. When the rename fails
    /// the live file stays open (the next line tries again).
    fn rotate(&mut self) -> io::Result<()> {
        fs::rename(&self.path, Self::rotated_path(&self.path))?;
        // The open handle now points at `<path>.1`; whatever happens next, stop using it.
        self.file = None;
        self.len = 0;
        self.reopen()
    }

    /// Opens (creates) the live file again after it could not be opened or was rotated.
    fn reopen(&mut self) -> io::Result<()> {
        let file = OpenOptions::new().create(true).append(true).open(&self.path)?;
        self.len = file.metadata().map_or(0, |m| m.len());
        self.file = Some(file);
        Ok(())
    }
}

impl Write for CappedFile {
    /// Writes all of `buf` (one formatted line) to one file: rotates first when it would
    /// not fit. A line longer than the cap is written alone into a fresh file.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let add = buf.len() as u64;
        if self.file.is_none() {
            self.reopen()?;
        }
        if self.len > 0 && self.len.saturating_add(add) > self.cap {
            self.rotate()?;
        }
        let file = self.file.as_mut().ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the log file is not open"))?;
        file.write_all(buf)?;
        self.len = self.len.saturating_add(add);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// How a dispatcher reaches the shared [`CappedFile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Waits for the lock; falls back to stderr when the file cannot be written.
    Wait,
    /// Never waits: when the lock is held, appends through a fresh handle (no rotation);
    /// when the file cannot be written, drops the line.
    Never,
}

/// The `MakeWriter` of one dispatcher: the shared file plus how to reach it.
#[derive(Debug, Clone)]
struct SharedLog {
    /// The log file all of this runtime's dispatchers write to.
    file: Arc<Mutex<CappedFile>>,
    /// The live log's path (for [`Access::Never`]'s fresh handle).
    path: PathBuf,
    /// Waiting or not.
    access: Access,
}

/// One line's writer, handed out per event by [`SharedLog`].
enum LineWriter<'a> {
    /// The lock is held: write through the capped file.
    Locked(MutexGuard<'a, CappedFile>, Access),
    /// The lock was busy ([`Access::Never`]): append through a fresh handle.
    Fresh(&'a Path),
}

impl Write for LineWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Locked(file, access) => match file.write(buf) {
                Ok(n) => Ok(n),
                Err(_) if *access == Access::Wait => {
                    // No stderr for Access::Never: stderr may be a full pipe nobody reads.
                    io::stderr().write_all(buf)?;
                    Ok(buf.len())
                }
                Err(_) => Ok(buf.len()),
            },
            Self::Fresh(path) => {
                let _ = OpenOptions::new().append(true).open(path).and_then(|mut f| f.write_all(buf));
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for SharedLog {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        match self.access {
            Access::Wait => LineWriter::Locked(self.file.lock().unwrap_or_else(|p| p.into_inner()), self.access),
            Access::Never => match self.file.try_lock() {
                Ok(guard) => LineWriter::Locked(guard, self.access),
                Err(TryLockError::Poisoned(p)) => LineWriter::Locked(p.into_inner(), self.access),
                Err(TryLockError::WouldBlock) => LineWriter::Fresh(&self.path),
            },
        }
    }
}

/// The runtime log: `tracing` into a size-capped `runtime.log`.
#[derive(Debug, Clone)]
pub struct RuntimeLog {
    /// Events sent here wait for the file lock ([`RuntimeLog::line`], and the global
    /// dispatcher once installed).
    dispatch: Dispatch,
    /// Events sent here never wait ([`RuntimeLog::try_line`]).
    urgent: Dispatch,
}

impl RuntimeLog {
    /// Opens (appends to) the log at `path`, rotating at [`LOG_CAP_BYTES`].
    pub fn open(path: &Path) -> Self {
        Self::with_cap(path, LOG_CAP_BYTES)
    }

    /// Opens the log at `path`, rotating at `cap` bytes.
    pub fn with_cap(path: &Path, cap: u64) -> Self {
        let file = Arc::new(Mutex::new(CappedFile::open(path, cap)));
        let dispatch_to = |access| {
            let writer = SharedLog { file: file.clone(), path: path.to_path_buf(), access };
            Dispatch::new(tracing_subscriber::fmt().with_writer(writer).with_target(false).with_max_level(tracing::Level::INFO).finish())
        };
        Self { dispatch: dispatch_to(Access::Wait), urgent: dispatch_to(Access::Never) }
    }

    /// Makes this log the process's global `tracing` dispatcher; returns false when one
    /// was already set (the first one stays).
    pub fn install_as_global_default(&self) -> bool {
        tracing::dispatcher::set_global_default(self.dispatch.clone()).is_ok()
    }

    /// Writes one `INFO` line.
    pub fn line(&self, message: Arguments<'_>) {
        let message = one_line(message);
        tracing::dispatcher::with_default(&self.dispatch, || tracing::info!("{message}"));
    }

    /// Like [`RuntimeLog::line`] but never waits: when another thread holds the log lock,
    /// the line goes to the file through a fresh handle; when the file cannot be written
    /// the line is dropped (used while force-stopping, when a stuck thread may hold the
    /// lock or stderr may be a full pipe nobody reads).
    pub fn try_line(&self, message: Arguments<'_>) {
        let message = one_line(message);
        tracing::dispatcher::with_default(&self.urgent, || tracing::warn!("{message}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap_or_default()
    }

    fn assert_last_line(path: &Path, suffix: &str) {
        let text = read(path);
        assert!(text.ends_with(&format!("{suffix}\n")), "{text}");
    }

    #[test]
    fn lines_are_tracing_events_with_a_timestamp_and_level() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runtime.log");
        let log = RuntimeLog::open(&path);
        log.line(format_args!("runtime {} started, pid {}", "0.1.0", 42));
        log.try_line(format_args!("runtime forced to exit"));
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with(" INFO runtime 0.1.0 started, pid 42"), "{text}");
        assert!(lines[1].ends_with(" WARN runtime forced to exit"), "{text}");
        // RFC 3339 UTC timestamp first, e.g. 2026-12-01T08:42:08.123456Z.
        let stamp = lines[0].split(' ').next().unwrap_or("");
        assert!(stamp.len() >= 20 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T', "{stamp}");
    }

    /// The cap: rotation to `runtime.log.1` keeps one old file, neither file exceeds the
    /// cap, no line is split or lost between the two newest files.
    #[test]
    fn the_log_rotates_at_its_cap_and_keeps_one_old_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runtime.log");
        let cap = 2_000;
        let log = RuntimeLog::with_cap(&path, cap);
        for i in 0..200 {
            log.line(format_args!("line {i:04} {}", "x".repeat(20)));
        }
        let rotated = CappedFile::rotated_path(&path);
        assert_eq!(rotated, dir.path().join("runtime.log.1"));
        let (live, old) = (read(&path), read(&rotated));
        assert!(live.len() as u64 <= cap, "runtime.log is {} bytes", live.len());
        assert!(old.len() as u64 > cap / 2 && old.len() as u64 <= cap, "runtime.log.1 is {} bytes", old.len());
        let mut files: Vec<_> = fs::read_dir(dir.path()).expect("dir").map(|e| e.expect("entry").file_name()).collect();
        files.sort();
        assert_eq!(files, ["runtime.log", "runtime.log.1"]);
        // The newest line is in the live file; the two files hold consecutive whole lines.
        assert!(live.trim_end().ends_with(&format!("line 0199 {}", "x".repeat(20))), "{live}");
        let numbers: Vec<u32> = old
            .lines()
            .chain(live.lines())
            .map(|l| {
                let rest = l.split(" INFO line ").nth(1).unwrap_or_else(|| panic!("split line: {l}"));
                rest[..4].parse().unwrap_or_else(|_| panic!("number in {l}"))
            })
            .collect();
        assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
        assert_eq!(numbers.last(), Some(&199));
        assert!(numbers[0] > 0, "the oldest lines were dropped with the second rotation");
    }

    #[test]
    fn a_reopened_log_counts_what_is_already_there() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runtime.log");
        fs::write(&path, "x".repeat(990) + "\n").expect("seed");
        RuntimeLog::with_cap(&path, 1_000).line(format_args!("after restart"));
        assert_eq!(read(&CappedFile::rotated_path(&path)).len(), 991);
        assert_last_line(&path, " INFO after restart");
    }

    #[test]
    fn a_log_that_cannot_be_opened_yet_is_opened_by_a_later_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("later/runtime.log");
        let log = RuntimeLog::open(&path);
        log.line(format_args!("to stderr: the directory is missing"));
        assert!(!path.exists());
        fs::create_dir(dir.path().join("later")).expect("mkdir");
        log.line(format_args!("to the file"));
        assert_last_line(&path, " INFO to the file");
    }

    #[test]
    fn try_line_does_not_wait_for_a_held_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("runtime.log");
        let log = RuntimeLog::open(&path);
        let writer =
            SharedLog { file: Arc::new(Mutex::new(CappedFile::open(&path, LOG_CAP_BYTES))), path: path.clone(), access: Access::Never };
        let _held = writer.file.lock().expect("lock");
        // The shared file is locked here; a fresh handle still writes the line.
        let mut line = writer.make_writer();
        assert!(matches!(line, LineWriter::Fresh(_)));
        line.write_all(b"through a fresh handle\n").expect("write");
        drop(line);
        log.try_line(format_args!("and through the log"));
        let text = read(&path);
        assert!(text.contains("through a fresh handle\n"), "{text}");
        assert!(text.contains("and through the log"), "{text}");
    }
}

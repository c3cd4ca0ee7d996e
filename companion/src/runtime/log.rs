//! `runtime.log`: one timestamped line per notable runtime event.
//!
//! Logging never fails the runtime: if the file cannot be opened or written, lines go
//! to stderr instead.

use std::fmt::Arguments;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Append-only runtime log.
#[derive(Debug)]
pub struct RuntimeLog {
    /// The open log file, or `None` when it could not be opened.
    file: Mutex<Option<File>>,
    /// Where the log lives (for [`RuntimeLog::try_line`]'s fresh handle).
    path: PathBuf,
}

impl RuntimeLog {
    /// Opens (appends to) the log at `path`.
    pub fn open(path: &Path) -> Self {
        let file = OpenOptions::new().create(true).append(true).open(path).ok();
        Self {
            file: Mutex::new(file),
            path: path.to_path_buf(),
        }
    }

    /// Writes one line prefixed with milliseconds since the Unix epoch.
    pub fn line(&self, message: Arguments<'_>) {
        let text = stamped(message);
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let written = guard
            .as_mut()
            .map(|f| f.write_all(text.as_bytes()).is_ok())
            .unwrap_or(false);
        if !written {
            eprint!("{text}");
        }
    }

    /// Like [`RuntimeLog::line`] but never waits: when another thread holds the log lock,
    /// the line goes to the file through a fresh handle; when the file cannot be written
    /// the line is dropped (used while force-stopping, when a stuck thread may hold the
    /// lock or stderr may be a full pipe nobody reads).
    pub fn try_line(&self, message: Arguments<'_>) {
        let text = stamped(message);
        // No stderr fallback here: stderr may be a full pipe nobody reads.
        match self.file.try_lock() {
            Ok(mut guard) => {
                if let Some(file) = guard.as_mut() {
                    let _ = file.write_all(text.as_bytes());
                }
            }
            Err(_) => {
                let _ = OpenOptions::new()
                    .append(true)
                    .open(&self.path)
                    .and_then(|mut f| f.write_all(text.as_bytes()));
            }
        }
    }
}

fn stamped(message: Arguments<'_>) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("{now} {message}\n")
}

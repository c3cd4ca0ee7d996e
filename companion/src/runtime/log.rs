//! `runtime.log`: one timestamped line per notable runtime event.
//!
//! Logging never fails the runtime: if the file cannot be opened or written, lines go
//! to stderr instead.

use std::fmt::Arguments;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Append-only runtime log.
#[derive(Debug)]
pub struct RuntimeLog {
    /// The open log file, or `None` when it could not be opened.
    file: Mutex<Option<File>>,
}

impl RuntimeLog {
    /// Opens (appends to) the log at `path`.
    pub fn open(path: &Path) -> Self {
        let file = OpenOptions::new().create(true).append(true).open(path).ok();
        Self {
            file: Mutex::new(file),
        }
    }

    /// Writes one line prefixed with milliseconds since the Unix epoch.
    pub fn line(&self, message: Arguments<'_>) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let text = format!("{now} {message}\n");
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let written = guard
            .as_mut()
            .map(|f| f.write_all(text.as_bytes()).is_ok())
            .unwrap_or(false);
        if !written {
            eprint!("{text}");
        }
    }
}

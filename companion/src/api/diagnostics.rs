//! `diagnostics.report`: the extension's latest "what the extension sees" of a chat page —
//! the layout generation it detected, which selector matched each fact, the CSP as
//! observed, the last delivery outcomes; selectors, ids and counts, never page content
//! (issue 9). The runtime keeps only the newest report, in `diagnostics.json` (0600) in
//! the companion home, so `herdr-companion doctor` can print it.
//!
//! Invariants: at most [`MAX_DIAGNOSTICS_BYTES`] are stored; a report must be a JSON object;
//! the file is replaced whole (written beside it, then renamed), never half-written.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::clock::unix_millis;
use crate::protocol::{ErrorCode, MethodError, Request};
use continuity_protocol::limits::MAX_DIAGNOSTICS_BYTES;

/// The file name in the companion home.
pub const DIAGNOSTICS_FILE: &str = "diagnostics.json";

/// Stores `request.params.diagnostics` in `home/diagnostics.json`.
pub async fn handle(home: &Path, request: &Request) -> Result<Value, MethodError> {
    let Some(diagnostics) = request.params.get("diagnostics").filter(|d| d.is_object()) else {
        return Err((ErrorCode::BadRequest, "diagnostics.report needs params.diagnostics, the page_diagnostics object".to_owned()));
    };
    let stored_at = unix_millis();
    let text = json!({ "stored_at": stored_at, "diagnostics": diagnostics }).to_string();
    if text.len() > MAX_DIAGNOSTICS_BYTES + 64 {
        return Err((
            ErrorCode::BadRequest,
            format!("diagnostics.report is {} bytes; at most {MAX_DIAGNOSTICS_BYTES} are kept", text.len()),
        ));
    }
    let path = home.join(DIAGNOSTICS_FILE);
    let written = tokio::task::spawn_blocking(move || write_private(&path, &text)).await;
    match written {
        Ok(Ok(())) => Ok(json!({ "type": "diagnostics_stored", "stored_at": stored_at })),
        Ok(Err(error)) => Err((
            ErrorCode::NotReady,
            format!("could not store the diagnostics in the companion home: {error}; check its permissions with herdr-companion doctor"),
        )),
        Err(error) => Err((ErrorCode::NotReady, format!("could not store the diagnostics: {error}"))),
    }
}

/// Writes `text` to a 0600 file beside `path`, then renames it over `path`.
pub(crate) fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    // A temp file of its own per write: two writes at once never share one.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let partial: PathBuf = path.with_extension(format!("json.{}.{unique}.partial", std::process::id()));
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&partial)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&partial, path)
}

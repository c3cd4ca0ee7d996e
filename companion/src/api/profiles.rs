//! `profiles.get`: the site profile files a user dropped into the companion home
//! (`<home>/profiles/<site>.json`, one per known site), served as text for the extension to
//! validate (ext-core `sites::file`; the companion never interprets them).
//!
//! Invariants: only the three known sites' files are read ([`PROFILE_SITES`]); a file is
//! read only when it is a regular file, not a symbolic link (opened with `O_NOFOLLOW`, then
//! checked on the open handle), in a `profiles` directory that is not a link either, of at
//! most [`MAX_PROFILE_FILE_BYTES`], UTF-8 and free of control characters but tab, newline and return (escaped, they would grow the answer past the host cap); a file that fails one of these is answered
//! with its `problem` (saying what to do) instead of its text, and the call itself never
//! fails for one file; an absent file is not listed.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::UNIX_EPOCH;

use continuity_protocol::limits::{MAX_PROFILE_FILE_BYTES, PROFILE_SITES};
use continuity_protocol::ProfileFile;
use serde_json::{json, Value};

use crate::protocol::{ErrorCode, MethodError};

/// The directory in the companion home.
pub const PROFILES_DIR: &str = "profiles";

/// Answers `profiles.get`.
pub async fn handle(home: &Path) -> Result<Value, MethodError> {
    let home = home.to_owned();
    let files = tokio::task::spawn_blocking(move || read_all(&home))
        .await
        .map_err(|error| (ErrorCode::NotReady, format!("could not read the profile files: {error}")))?;
    Ok(json!({ "type": "profiles", "profiles": files }))
}

/// Every known site's file in `home/profiles`.
pub fn read_all(home: &Path) -> Vec<ProfileFile> {
    let dir = home.join(PROFILES_DIR);
    let dir_is_link = std::fs::symlink_metadata(&dir).is_ok_and(|meta| meta.file_type().is_symlink());
    let mut files = Vec::new();
    for site in PROFILE_SITES {
        let path = dir.join(format!("{site}.json"));
        let problem = |problem: String| ProfileFile { site: site.to_owned(), text: None, modified_ms: None, problem: Some(problem) };
        if dir_is_link {
            if std::fs::symlink_metadata(&path).is_ok() {
                files.push(problem("profiles/ is a symbolic link: make it a directory of the companion home".to_owned()));
            }
            continue;
        }
        match read_one(&path) {
            Ok(Some((text, modified_ms))) => {
                files.push(ProfileFile { site: site.to_owned(), text: Some(text), modified_ms: Some(modified_ms), problem: None });
            }
            Ok(None) => {}
            Err(why) => files.push(problem(format!("profiles/{site}.json {why}"))),
        }
    }
    files
}

/// The text and modification time of one file; `None` when there is none.
fn read_one(path: &Path) -> Result<Option<(String, u64)>, String> {
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("could not be read ({error}): check its permissions")),
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err("is a symbolic link: copy the profile into the file itself".to_owned());
        }
        Ok(_) => {}
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| format!("could not be opened ({error}): it must be a regular file, not a link"))?;
    let meta = file.metadata().map_err(|error| format!("could not be read ({error})"))?;
    if !meta.is_file() {
        return Err("is not a regular file: put the profile JSON in a plain file".to_owned());
    }
    if meta.len() > MAX_PROFILE_FILE_BYTES as u64 {
        return Err(format!(
            "has {} bytes, at most {MAX_PROFILE_FILE_BYTES} are read: keep only the selector and label tables",
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_PROFILE_FILE_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|error| format!("could not be read ({error})"))?;
    if bytes.len() > MAX_PROFILE_FILE_BYTES {
        return Err(format!("has more than {MAX_PROFILE_FILE_BYTES} bytes: keep only the selector and label tables"));
    }
    let text = String::from_utf8(bytes).map_err(|_| "is not UTF-8 text: save it as UTF-8 JSON".to_owned())?;
    // A profile never needs a control character other than tab, newline and return; escaped
    // as `\u00XX` they would grow the answer sixfold, past the host's 1 MiB cap with three
    // files, and the whole answer would be dropped.
    if text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) {
        return Err("holds a control character: save it as plain JSON text".to_owned());
    }
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
    Ok(Some((text, modified_ms)))
}

//! `herdr-companion judge classify [--script-only] [--home DIR]`: the turn-end judge over
//! JSON lines, through the same chain as `judge.turn_end` (so anyone can check it on
//! their own replies, and the bench measures the script on the corpus with it).
//!
//! Input: one JSON object per line, `{"id": …, "text": "<assistant reply>"}`, optionally
//! `"user_text"`; `id` is a string or a number and is echoed. Blank lines are skipped.
//! Output: one line per input line, `{"id", "verdict", "source", "reason"}`, or for a line
//! that cannot be judged `{"line": N, "id": … | null, "error": "<what is wrong>"}`. A bad
//! line never stops the run.
//!
//! Without `--script-only` the providers of `config.json` are used; a refused
//! `config.json` stops the run before any line is read (nothing would be judged as
//! configured).

use std::io::{self, BufRead, Write};
use std::path::PathBuf;

use serde_json::{json, Value};
use thiserror::Error;

use super::{JudgeService, Stages};
use crate::config::{Config, ConfigError};

/// The longest input line read (a reply and its user message fit easily).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// What a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Classified {
    /// Lines judged.
    pub judged: usize,
    /// Lines refused with an error line.
    pub refused: usize,
}

/// Why a run could not start or go on.
#[derive(Debug, Error)]
pub enum ClassifyError {
    /// `config.json` was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The judge could not start.
    #[error(transparent)]
    Client(#[from] super::ClientError),
    /// Reading stdin or writing stdout failed.
    #[error("judge classify: {0}")]
    Io(#[from] io::Error),
}

/// Classifies every line of `input` into `output`.
pub fn run(home: PathBuf, stages: Stages, mut input: impl BufRead, mut output: impl Write) -> Result<Classified, ClassifyError> {
    if stages == Stages::All {
        Config::load(&home)?;
    }
    let service = JudgeService::new(home, None)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut done = Classified::default();
    let mut buffer = Vec::new();
    let mut number = 0usize;
    loop {
        buffer.clear();
        let read = io::Read::take(input.by_ref(), MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buffer)?;
        if read == 0 {
            break;
        }
        number += 1;
        let over = buffer.len() > MAX_LINE_BYTES && !buffer.ends_with(b"\n");
        if over {
            // Skip the rest of this line.
            let mut rest = Vec::new();
            input.read_until(b'\n', &mut rest)?;
        }
        let line = if over { Err(format!("is longer than {MAX_LINE_BYTES} bytes")) } else { read_line(&buffer) };
        let answer = match line {
            Ok(None) => continue,
            Ok(Some(item)) => match runtime.block_on(service.turn_end(&item.user_text, &item.text, "judge classify", stages)) {
                Ok(verdict) => {
                    done.judged += 1;
                    json!({"id": item.id, "verdict": verdict.verdict, "source": verdict.source, "reason": verdict.reason})
                }
                Err(error) => return Err(error.into()),
            },
            Err(why) => {
                done.refused += 1;
                let id = serde_json::from_slice::<Value>(&buffer).ok().and_then(|v| v.get("id").cloned()).unwrap_or(Value::Null);
                json!({"line": number, "id": id, "error": format!("line {number} {why}; send {{\"id\": \"…\", \"text\": \"<assistant reply>\"}} (optionally \"user_text\")")})
            }
        };
        writeln!(output, "{answer}")?;
    }
    output.flush()?;
    Ok(done)
}

/// One input item.
struct Item {
    id: Value,
    text: String,
    user_text: String,
}

/// `Ok(None)` for a blank line; `Err` says what is wrong with the line.
fn read_line(bytes: &[u8]) -> Result<Option<Item>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "is not UTF-8".to_owned())?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("is not JSON ({e})"))?;
    let Value::Object(mut object) = value else { return Err("is not a JSON object".to_owned()) };
    let id = match object.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => return Err("has an id that is neither a string nor a number".to_owned()),
        None => return Err("has no \"id\"".to_owned()),
    };
    let text = match object.remove("text") {
        Some(Value::String(text)) => text,
        Some(_) => return Err("has a \"text\" that is not a string".to_owned()),
        None => return Err("has no \"text\"".to_owned()),
    };
    let user_text = match object.remove("user_text") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(user_text)) => user_text,
        Some(_) => return Err("has a \"user_text\" that is not a string".to_owned()),
    };
    Ok(Some(Item { id, text, user_text }))
}

//! The HUD's Handoff on the wire (docs/PROTOCOL.md "Handoff package", SPEC X4): the two
//! runtime calls a transfer makes, the package read from `handoff_prepared` with every field
//! within `continuity_protocol::handoff`'s caps (the new tab is `worker.js`'s `herdrTabs`).
//!
//! Only conversions: a package over a cap, or whose three copies of the message are not
//! the same bytes, is `None` (the core then fails the transfer, X5), never cut or guessed.

use continuity_protocol::handoff::{
    MAX_HANDOFF_CONTINUITY_ID_CHARS, MAX_HANDOFF_ID_CHARS, MAX_HANDOFF_MESSAGE_CHARS, MAX_HANDOFF_SOURCE_URL_CHARS,
};
use ext_core::handoff::Package;
use ext_core::limits;
use serde_json::Value;

/// A string field within `max_chars` (never cut: over the cap is `None`).
fn capped(value: &Value, path: &[&str], max_chars: usize) -> Option<String> {
    let mut at = value;
    for key in path {
        at = at.get(*key)?;
    }
    at.as_str().filter(|s| !s.is_empty() && limits::within(s, max_chars)).map(str::to_owned)
}

/// The package of a `handoff_prepared` result (X4): `handoff.message`,
/// `automatic_delivery.params.message` and `manual_delivery.copy_prompt` must be one string.
pub fn package(result: &Value) -> Option<Package> {
    let message = capped(result, &["automatic_delivery", "params", "message"], MAX_HANDOFF_MESSAGE_CHARS)?;
    let copy_prompt = capped(result, &["manual_delivery", "copy_prompt"], MAX_HANDOFF_MESSAGE_CHARS)?;
    let inner = capped(result, &["handoff", "message"], MAX_HANDOFF_MESSAGE_CHARS)?;
    if inner != message {
        return None;
    }
    Some(Package {
        transfer_id: capped(result, &["handoff", "handoff_id"], MAX_HANDOFF_ID_CHARS)?,
        continuity_id: capped(result, &["handoff", "continuity_id"], MAX_HANDOFF_CONTINUITY_ID_CHARS)?,
        source_url: capped(result, &["handoff", "source_url"], MAX_HANDOFF_SOURCE_URL_CHARS)?,
        message,
        copy_prompt,
    })
}

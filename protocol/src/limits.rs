//! The sizes docs/PROTOCOL.md fixes for ids and method inputs, and the id checks built on
//! them. Lengths count characters (Unicode scalar values) unless the name says bytes.

/// Longest request id (`1..=64` characters).
pub const MAX_REQUEST_ID_CHARS: usize = 64;
/// Longest `log_id` (`1..=64` characters; the runtime makes 32 hex characters).
pub const MAX_LOG_ID_CHARS: usize = 64;
/// Longest `browser_session_ref`, workspace, pane, turn or task id of the inbox methods.
pub const MAX_REF_CHARS: usize = 256;
/// Most chats in one `chats.report`.
pub const MAX_REPORTED_CHATS: usize = 64;
/// Longest value of an MCP client `_meta` key the runtime keeps (`openai/session`,
/// `openai/subject`); a longer one is cut to this many characters.
pub const MAX_CLIENT_META_CHARS: usize = 256;
/// Largest `task.dispatch` prompt, in bytes (64 KiB).
pub const MAX_PROMPT_BYTES: usize = 64 * 1024;
/// Most task ids in one `inbox.ack`.
pub const MAX_ACK_IDS: usize = 100;
/// Most items one `inbox.pending` answer carries (`more` says whether there are others).
pub const MAX_PENDING: usize = 50;
/// Most tasks one `task.list` answer carries (newest first).
pub const MAX_LIST: usize = 100;
/// Most rows `herdr.pane_read` returns.
pub const MAX_READ_LINES: u64 = 200;
/// Rows `herdr.pane_read` returns without `lines`.
pub const DEFAULT_READ_LINES: u64 = 80;
/// Most characters `herdr.pane_read` returns (the tail is kept).
pub const MAX_READ_CHARS: usize = 64 * 1024;

/// Most tool rounds (batches that reached their results message) the JSON bridge runs per
/// (conversation, human turn).
pub const MAX_ROUNDS_PER_HUMAN_TURN: u64 = 6;
/// Most characters of a pending call's args JSON shown for approval (`args_preview`).
pub const MAX_ARGS_PREVIEW_CHARS: usize = 160;
/// Most characters of a pending call's decoded text shown for approval (`detail`).
pub const MAX_PENDING_DETAIL_CHARS: usize = 2_000;

/// True for a string of 1 to `max` characters.
pub fn within(text: &str, max: usize) -> bool {
    !text.is_empty() && text.chars().count() <= max
}

/// True for a valid request id.
pub fn is_request_id(id: &str) -> bool {
    within(id, MAX_REQUEST_ID_CHARS)
}

/// True for a valid `log_id`.
pub fn is_log_id(id: &str) -> bool {
    within(id, MAX_LOG_ID_CHARS)
}

/// True for a valid `browser_session_ref` or inbox id.
pub fn is_ref(id: &str) -> bool {
    within(id, MAX_REF_CHARS)
}

/// Largest `diagnostics.report` payload (the JSON of `params.diagnostics`): the page
/// message it comes from is capped at 16 KiB.
pub const MAX_DIAGNOSTICS_BYTES: usize = 16 * 1024;

/// Largest site profile file `profiles.get` reads (`<home>/profiles/<site>.json`); the
/// extension reads no larger profile either.
pub const MAX_PROFILE_FILE_BYTES: usize = 64 * 1024;

/// The sites whose profile files `profiles.get` serves (the extension's built-in sites).
pub const PROFILE_SITES: [&str; 3] = ["chatgpt", "zai", "deepseek"];

/// The `retention.limits` names, in the options page's order (the fields of
/// [`crate::RetentionLimits`]).
pub const RETENTION_LIMITS: [&str; 4] = ["journal_turns", "work_memory_turns", "bridge_result_days", "inbox_days"];

/// The `retention.sizes[].store` names, in the options page's order.
pub const RETENTION_STORES: [&str; 4] = ["journal", "work_memory", "bridge_results", "inbox"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_one_to_max_characters_not_bytes() {
        assert!(!is_request_id(""));
        assert!(is_request_id(&"é".repeat(64)), "64 two-byte characters are 64 characters");
        assert!(!is_request_id(&"x".repeat(65)));
        assert!(is_ref(&"r".repeat(256)) && !is_ref(&"r".repeat(257)));
        assert!(is_log_id("5f0c9a7e2b1d4c3a8e6f0b2d4a6c8e01"));
    }

    #[test]
    fn retention_limits_name_every_field_of_retention_limits() {
        let limits = crate::RetentionLimits { journal_turns: 1, work_memory_turns: 2, bridge_result_days: 3, inbox_days: 4 };
        let value = serde_json::to_value(limits).unwrap_or_default();
        let mut names: Vec<&str> = value.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        let mut expected = RETENTION_LIMITS.to_vec();
        names.sort_unstable();
        expected.sort_unstable();
        assert_eq!(names, expected);
    }
}

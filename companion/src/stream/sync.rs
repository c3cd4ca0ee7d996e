//! Keeps the runtime's catalog in step with Herdr: resync from `session.snapshot`, one
//! lifecycle subscription, one `pane.agent_status_changed` subscription for all known
//! panes (Herdr has no wildcard), and a bounded output poll for working panes.
//!
//! Driver loop: connect (ping + protocol check) → subscribe lifecycle → subscribe statuses
//! → resync → read both streams. Any lifecycle event triggers a resync and, when the pane
//! set changed, a fresh status subscription (opened before the old one is dropped, then a
//! resync closes the window between them). Losing either connection ends the session; the
//! loop reconnects with backoff and resyncs, so a transition that happened meanwhile is
//! produced exactly once by the catalog diff (SPEC P9).
//!
//! Invariant: a malformed, oversized or unknown line from Herdr is logged and skipped; it
//! never ends a subscription.

use continuity_protocol::herdr::{HerdrMethod, HerdrSubscription};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedReadHalf;
use tokio::net::UnixStream;

use super::EventHub;
use crate::herdr::{ping, request, HerdrError};
use crate::log::RuntimeLog;

/// Longest Herdr event line accepted; longer lines are skipped.
pub const MAX_EVENT_LINE: usize = 1024 * 1024;
/// Timeout for one Herdr request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// First reconnect delay; doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(200);
/// Longest reconnect delay.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How often working panes' output is checked.
const OUTPUT_POLL: Duration = Duration::from_secs(2);
/// Rows read per output check.
const OUTPUT_LINES: u32 = 60;
/// Longest output tail sent in `agent_output`.
const OUTPUT_TAIL_CHARS: usize = 2000;

/// The lifecycle kinds the runtime subscribes to.
const LIFECYCLE: &[HerdrSubscription] = &[
    HerdrSubscription::WorkspaceCreated,
    HerdrSubscription::WorkspaceUpdated,
    HerdrSubscription::WorkspaceRenamed,
    HerdrSubscription::WorkspaceClosed,
    HerdrSubscription::TabCreated,
    HerdrSubscription::TabClosed,
    HerdrSubscription::PaneCreated,
    HerdrSubscription::PaneUpdated,
    HerdrSubscription::PaneClosed,
    HerdrSubscription::PaneExited,
    HerdrSubscription::PaneAgentDetected,
];

/// One open `events.subscribe` connection.
struct Subscription {
    /// Its read side (the write side stays open inside `_write`).
    lines: BufReader<OwnedReadHalf>,
    /// Kept so the connection stays open.
    _write: tokio::net::unix::OwnedWriteHalf,
}

/// Why a sync session ended.
#[derive(Debug, thiserror::Error)]
enum SessionEnd {
    /// A request failed.
    #[error(transparent)]
    Herdr(#[from] HerdrError),
    /// A subscription connection closed or failed.
    #[error("Herdr closed the event subscription ({0}); reconnecting")]
    Closed(String),
    /// The event log could not be written.
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
}

async fn open_subscription(socket: &Path, subscriptions: Vec<Value>) -> Result<Subscription, SessionEnd> {
    let closed = |e: std::io::Error| SessionEnd::Closed(e.to_string());
    let stream = tokio::time::timeout(REQUEST_TIMEOUT, UnixStream::connect(socket))
        .await
        .map_err(|_| SessionEnd::Closed("connect timed out".into()))?
        .map_err(closed)?;
    let (read, mut write) = stream.into_split();
    let line = json!({"id": "hc-sub", "method": HerdrMethod::EventsSubscribe, "params": {"subscriptions": subscriptions}});
    write.write_all(format!("{line}\n").as_bytes()).await.map_err(closed)?;
    let mut lines = BufReader::new(read);
    let ack = tokio::time::timeout(REQUEST_TIMEOUT, read_capped_line(&mut lines, MAX_EVENT_LINE))
        .await
        .map_err(|_| SessionEnd::Closed("no subscription ack".into()))?
        .map_err(closed)?;
    let ack: Value = ack
        .and_then(|l| l.ok())
        .and_then(|l| serde_json::from_str(&l).ok())
        .ok_or_else(|| SessionEnd::Closed("no subscription ack".into()))?;
    if ack.pointer("/result/type").and_then(Value::as_str) != Some("subscription_started") {
        return Err(SessionEnd::Closed(format!("subscription refused: {ack}")));
    }
    Ok(Subscription { lines, _write: write })
}

/// Reads one line; `Ok(None)` at EOF, `Ok(Some(Err(len)))` for a skipped oversized line.
async fn read_capped_line<R: AsyncBufRead + Unpin>(reader: &mut R, cap: usize) -> std::io::Result<Option<Result<String, usize>>> {
    let mut line = Vec::new();
    let mut skipped = 0usize;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(None);
        }
        let (used, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (chunk.len(), false),
        };
        let content = &chunk[..if end { used - 1 } else { used }];
        if skipped > 0 || line.len() + content.len() > cap {
            skipped += line.len() + content.len();
            line.clear();
        } else {
            line.extend_from_slice(content);
        }
        reader.consume(used);
        if end {
            return Ok(Some(if skipped > 0 { Err(skipped) } else { Ok(String::from_utf8_lossy(&line).into_owned()) }));
        }
    }
}

/// Parses one subscription line into `(event name, data)`, or says why it was skipped.
pub fn parse_event_line(line: &str) -> Result<(String, Value), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let name = value.get("event").and_then(Value::as_str).ok_or("no `event` name")?;
    let data = value.get("data").cloned().filter(Value::is_object).ok_or("no `data` object")?;
    Ok((name.to_owned(), data))
}

/// Strips what changes without meaning (ANSI escapes, spinner glyphs, clock times,
/// whitespace runs) so that `agent_output` is sent only for real new output.
pub fn output_fingerprint(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ params final-byte; other escapes: drop ESC and one char.
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
            continue;
        }
        let spinner = ('\u{2800}'..='\u{28ff}').contains(&c) || "◐◓◑◒⣾⣽⣻⢿⡿⣟⣯⣷|/-\\".contains(c);
        if spinner {
            continue;
        }
        out.push(c);
    }
    // Clock times (12:34 or 12:34:56) become `#`.
    let bytes: Vec<char> = out.chars().collect();
    let mut normalised = String::with_capacity(out.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = |at: usize| bytes.get(at).is_some_and(char::is_ascii_digit);
        if digits(i) && bytes.get(i + 1).is_some_and(|c| *c == ':') && digits(i + 2) && digits(i + 3) {
            normalised.push('#');
            i += 4;
            while bytes.get(i) == Some(&':') && digits(i + 1) && digits(i + 2) {
                i += 3;
            }
            continue;
        }
        if digits(i) && digits(i + 1) && bytes.get(i + 2) == Some(&':') && digits(i + 3) && digits(i + 4) {
            normalised.push('#');
            i += 5;
            while bytes.get(i) == Some(&':') && digits(i + 1) && digits(i + 2) {
                i += 3;
            }
            continue;
        }
        normalised.push(bytes[i]);
        i += 1;
    }
    normalised.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last output fingerprint of each working pane, so only changed output is published.
///
/// Kept to the panes the catalog still has (review 42 F6): it lives as long as the runtime,
/// and each entry holds up to [`OUTPUT_LINES`] rows of text, so a runtime that sees many
/// short-lived panes (or a Herdr that names panes anew) grew it without bound.
#[derive(Debug, Default)]
struct Fingerprints(std::collections::HashMap<String, String>);

impl Fingerprints {
    /// Records `fingerprint` for `pane`; false when it is empty or the one recorded.
    fn changed(&mut self, pane: &str, fingerprint: String) -> bool {
        if fingerprint.is_empty() || self.0.get(pane) == Some(&fingerprint) {
            return false;
        }
        self.0.insert(pane.to_owned(), fingerprint);
        true
    }

    /// Forgets every pane not in `panes` (the catalog's, after a resync).
    fn keep_only(&mut self, panes: &[String]) {
        let present: std::collections::HashSet<&str> = panes.iter().map(String::as_str).collect();
        self.0.retain(|pane, _| present.contains(pane.as_str()));
    }
}

/// Runs the sync loop forever (spawn it).
pub async fn run_sync(socket: PathBuf, hub: Arc<EventHub>, log: Arc<RuntimeLog>) {
    let mut backoff = MIN_BACKOFF;
    let mut fingerprints = Fingerprints::default();
    loop {
        let started = tokio::time::Instant::now();
        let end = session(&socket, &hub, &log, &mut fingerprints).await;
        // Herdr's error messages are in `end`: logged escaped, as all of Herdr's text.
        log.line(format_args!("herdr sync: {}", end.to_string().escape_debug()));
        if started.elapsed() > Duration::from_secs(10) {
            backoff = MIN_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Brings the catalog in step with Herdr's snapshot and returns its pane ids; the output
/// fingerprints of panes that are gone are dropped with them.
async fn resync(socket: &Path, hub: &Arc<EventHub>, log: &RuntimeLog, fingerprints: &mut Fingerprints) -> Result<Vec<String>, SessionEnd> {
    let snapshot = request(socket, HerdrMethod::SessionSnapshot, json!({}), REQUEST_TIMEOUT).await?;
    let panes = hub
        .update_catalog(move |catalog| match catalog.apply_snapshot(&snapshot) {
            Ok(events) => (events, Ok(catalog.pane_ids())),
            Err(e) => (Vec::new(), Err(e)),
        })
        .await?;
    let panes = panes.unwrap_or_else(|e| {
        log.line(format_args!("herdr sync: {e}"));
        hub.catalog().pane_ids()
    });
    fingerprints.keep_only(&panes);
    Ok(panes)
}

async fn status_subscription(socket: &Path, panes: &[String]) -> Result<Option<Subscription>, SessionEnd> {
    if panes.is_empty() {
        return Ok(None);
    }
    let subs = panes.iter().map(|p| json!({"type": HerdrSubscription::PaneAgentStatusChanged, "pane_id": p})).collect();
    open_subscription(socket, subs).await.map(Some)
}

async fn next_line(sub: &mut Option<Subscription>) -> std::io::Result<Option<Result<String, usize>>> {
    match sub {
        Some(s) => read_capped_line(&mut s.lines, MAX_EVENT_LINE).await,
        None => std::future::pending().await,
    }
}

async fn session(socket: &Path, hub: &Arc<EventHub>, log: &RuntimeLog, fingerprints: &mut Fingerprints) -> SessionEnd {
    match session_inner(socket, hub, log, fingerprints).await {
        Ok(never) => match never {},
        Err(end) => end,
    }
}

async fn session_inner(
    socket: &Path,
    hub: &Arc<EventHub>,
    log: &RuntimeLog,
    fingerprints: &mut Fingerprints,
) -> Result<std::convert::Infallible, SessionEnd> {
    let pong = ping(socket, REQUEST_TIMEOUT).await?;
    log.line(format_args!("herdr sync: connected to Herdr {:?} (protocol {})", pong.version, pong.protocol));
    let lifecycle = LIFECYCLE.iter().map(|k| json!({"type": k})).collect();
    let mut lifecycle = open_subscription(socket, lifecycle).await?;
    let mut panes = resync(socket, hub, log, fingerprints).await?;
    let mut statuses = status_subscription(socket, &panes).await?;
    // Close the window between the snapshot and the status subscription.
    panes = resync(socket, hub, log, fingerprints).await?;
    let mut poll = tokio::time::interval(OUTPUT_POLL);
    loop {
        tokio::select! {
            line = read_capped_line(&mut lifecycle.lines, MAX_EVENT_LINE) => {
                match line.map_err(|e| SessionEnd::Closed(e.to_string()))? {
                    None => return Err(SessionEnd::Closed("lifecycle stream ended".into())),
                    Some(Err(len)) => log.line(format_args!("herdr sync: skipped an oversized lifecycle line ({len} bytes)")),
                    Some(Ok(text)) => match parse_event_line(&text) {
                        Err(why) => log.line(format_args!("herdr sync: skipped a lifecycle line: {why}")),
                        Ok((name, _)) => {
                            let _ = name;
                            let now = resync(socket, hub, log, fingerprints).await?;
                            if now != panes {
                                let fresh = status_subscription(socket, &now).await?;
                                statuses = fresh;
                                panes = resync(socket, hub, log, fingerprints).await?;
                            }
                        }
                    },
                }
            }
            line = next_line(&mut statuses) => {
                match line.map_err(|e| SessionEnd::Closed(e.to_string()))? {
                    None => return Err(SessionEnd::Closed("status stream ended".into())),
                    Some(Err(len)) => log.line(format_args!("herdr sync: skipped an oversized status line ({len} bytes)")),
                    Some(Ok(text)) => match parse_event_line(&text) {
                        Ok((name, data)) if name == HerdrSubscription::PaneAgentStatusChanged.event_name() => {
                            hub.update_catalog(move |catalog| (catalog.apply_status(&data), ())).await?;
                        }
                        Ok((name, _)) => log.line(format_args!("herdr sync: skipped an unknown event {name:?}")),
                        Err(why) => log.line(format_args!("herdr sync: skipped a status line: {why}")),
                    },
                }
            }
            _ = poll.tick() => {
                for pane_id in hub.catalog().working_panes() {
                    let params = json!({"pane_id": pane_id, "source": "recent", "lines": OUTPUT_LINES});
                    let Ok(result) = request(socket, HerdrMethod::PaneRead, params, REQUEST_TIMEOUT).await else { continue };
                    let text = result.pointer("/read/text").and_then(Value::as_str).unwrap_or("");
                    if !fingerprints.changed(&pane_id, output_fingerprint(text)) {
                        continue;
                    }
                    let tail: String = {
                        let chars: Vec<char> = text.trim_end().chars().collect();
                        chars[chars.len().saturating_sub(OUTPUT_TAIL_CHARS)..].iter().collect()
                    };
                    let catalog = hub.catalog();
                    let pane = catalog.panes.get(&pane_id);
                    let mut data = serde_json::Map::new();
                    data.insert("pane_id".to_owned(), json!(pane_id));
                    data.insert("workspace_id".to_owned(), json!(pane.map(|p| p.workspace_id.clone())));
                    data.insert("agent".to_owned(), json!(pane.and_then(|p| p.agent.clone())));
                    data.insert("tail".to_owned(), json!(tail));
                    hub.publish_output(&pane_id, data);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_ignores_ansi_spinners_and_clock_times() {
        let a = output_fingerprint("\u{1b}[32m⠋ building\u{1b}[0m 12:01:05  step 3");
        let b = output_fingerprint("⠙ building 12:01:09 step 3\n");
        assert_eq!(a, b);
        assert_ne!(a, output_fingerprint("⠙ building 12:01:09 step 4"));
    }

    /// A stand-in Herdr that answers every `session.snapshot` with one workspace holding
    /// the panes in `panes` at that moment.
    async fn snapshot_herdr(listener: tokio::net::UnixListener, panes: Arc<std::sync::Mutex<Vec<&'static str>>>) {
        while let Ok((stream, _)) = listener.accept().await {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            let _ = reader.read_line(&mut line).await;
            let id = serde_json::from_str::<Value>(&line).ok().and_then(|v| v["id"].as_str().map(str::to_owned));
            let listed: Vec<Value> =
                panes.lock().expect("panes").iter().map(|p| json!({"pane_id": p, "workspace_id": "w1", "tab_id": "t1"})).collect();
            let snapshot = json!({"workspaces": [{"workspace_id": "w1", "label": "w", "number": 1}], "panes": listed});
            let answer = json!({"id": id, "result": {"snapshot": snapshot}});
            let _ = reader.get_mut().write_all(format!("{answer}\n").as_bytes()).await;
        }
    }

    /// Review 42 F6: the output fingerprints lived as long as the runtime and were never
    /// pruned, so every pane ever seen working kept up to 60 rows of text. Now a resync
    /// drops the fingerprints of panes that are gone and keeps the others (their repeated
    /// output is still not published again).
    #[tokio::test]
    async fn a_resync_forgets_the_fingerprints_of_panes_that_are_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("herdr.sock");
        let panes = Arc::new(std::sync::Mutex::new(vec!["p1", "p2"]));
        tokio::spawn(snapshot_herdr(tokio::net::UnixListener::bind(&socket).expect("bind"), Arc::clone(&panes)));
        let hub = EventHub::open(&dir.path().join("state.db"), "boot".to_owned()).expect("hub");
        let log = RuntimeLog::open(&dir.path().join("runtime.log"));
        let mut fingerprints = Fingerprints::default();
        assert_eq!(resync(&socket, &hub, &log, &mut fingerprints).await.expect("resync"), ["p1", "p2"]);
        assert!(fingerprints.changed("p1", "building".to_owned()) && fingerprints.changed("p2", "testing".to_owned()));

        *panes.lock().expect("panes") = vec!["p2"];
        assert_eq!(resync(&socket, &hub, &log, &mut fingerprints).await.expect("resync"), ["p2"]);
        assert_eq!(fingerprints.0.keys().collect::<Vec<_>>(), ["p2"], "p1 is gone, so is its fingerprint");
        assert!(!fingerprints.changed("p2", "testing".to_owned()), "a kept pane's repeated output is not new");
    }

    #[tokio::test]
    async fn oversized_lines_are_skipped_and_reading_continues() {
        let input = format!("{}\n{{\"event\":\"x\",\"data\":{{}}}}\n", "y".repeat(50));
        let mut reader = BufReader::with_capacity(7, input.as_bytes());
        assert_eq!(read_capped_line(&mut reader, 20).await.expect("io"), Some(Err(50)));
        let next = read_capped_line(&mut reader, 40).await.expect("io").expect("line").expect("fits");
        assert_eq!(parse_event_line(&next).expect("parses").0, "x");
        assert_eq!(read_capped_line(&mut reader, 40).await.expect("io"), None);
    }
}

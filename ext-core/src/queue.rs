//! The Queue's durable book: what the user already said they want next, per conversation
//! (SPEC Q1–Q8, Q10). The user saves the composer's text while the assistant is still
//! answering; when the turn ends the queued items go out, merged, as the next user message.
//!
//! This module is the book only — items, limits, batches and their stored form. When a
//! batch is sent is the continuity composition's call (through the delivery ledger), and
//! reading or writing `chrome.storage.local` is the shell's.
//!
//! Driver contract (the shell, for every change): read the stored record, [`QueueBook::parse`]
//! it, apply one change ([`QueueBook::add`], [`QueueBook::remove`], [`QueueBook::clear`],
//! [`QueueBook::expire`]) and write [`QueueBook::to_json`] back. A read that failed or a
//! record that does not parse is never replaced: the change is refused with
//! [`QueueRefusal::StorageUnreadable`] (a failed read once emptied a user's queue in a
//! comparable tool). Changes to one book are serialised by the caller.
//!
//! Invariants (tests in `tests/it/queue.rs`, property tests there):
//! - Items keep insertion order; a batch merges them in that order with one blank line (Q3).
//! - Nothing is truncated or dropped silently: an add over a limit is refused whole with a
//!   [`QueueRefusal`] that says what to do (Q6); items leave only by [`QueueBook::remove`]
//!   (a confirmed batch, Q5), [`QueueBook::clear`] (the user, Q7) or
//!   [`QueueBook::expire`] (older than [`MAX_AGE_MS`]), and each of these returns what left.
//! - A batch's id depends only on its conversation and item ids, so the same items give the
//!   same batch after a worker restart, and removing a confirmed batch removes exactly its
//!   items, even if more were queued meanwhile.
//! - The queue never names a Herdr method and never touches a binding (Q10): it holds text.

use serde_json::{Map, Value};

use crate::json_object;
use crate::vec_map::VecMap;
use crate::Millis;

/// The `chrome.storage.local` key of the book. A new format gets a new key and version.
pub const STORE_KEY: &str = "herdrContinuityQueueV1";
/// The `chrome.storage.local` key unreadable records are kept under when the user clears
/// the queue ([`aside_with`]: every record kept, never one replaced).
pub const ASIDE_KEY: &str = "herdrContinuityQueueV1Aside";
/// Most records kept aside; one more Clear's keep-aside is refused (nothing replaced).
pub const MAX_ASIDE_RECORDS: usize = 5;
/// The stored record's version.
pub const STORE_VERSION: u64 = 1;
/// Most items one conversation may queue.
pub const MAX_ITEMS: usize = 20;
/// Longest merged batch (item texts plus the blank lines between them), in characters.
pub const MAX_MERGED_CHARS: usize = 24_000;
/// How long an item is kept: 7 days.
pub const MAX_AGE_MS: Millis = 7 * 24 * 60 * 60 * 1_000;
/// Longest conversation key or item id the book accepts.
pub const MAX_KEY_CHARS: usize = 256;
/// Most conversations one book holds; a new one beyond it is refused.
pub const MAX_CONVERSATIONS: usize = 200;

/// The separator between merged items (Q3).
const SEPARATOR: &str = "\n\n";

/// One queued message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueItem {
    /// Unique within the book (the shell draws it, e.g. `q:<uuid>`).
    pub id: String,
    /// The text, CRLF turned into LF and trimmed; never empty.
    pub text: String,
    /// When it was queued.
    pub created_at: Millis,
}

/// What one conversation's queue looks like, for the HUD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStatus {
    /// Items queued.
    pub count: usize,
    /// Characters of the merged batch.
    pub merged_chars: usize,
    /// When the oldest item was queued.
    pub oldest_at: Option<Millis>,
}

/// The next user message made of a conversation's queued items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// `qb:<hash of the conversation and the item ids>`.
    pub id: String,
    /// The items it carries, in order.
    pub item_ids: Vec<String>,
    /// Their texts joined with one blank line.
    pub text: String,
}

/// Why a change was refused. Each says what the user can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueRefusal {
    /// The page is not a conversation the queue can belong to.
    NoConversation,
    /// The composer held nothing but whitespace.
    EmptyText,
    /// The queue already holds [`MAX_ITEMS`].
    TooManyItems {
        /// Items queued now.
        count: usize,
    },
    /// The merged batch would exceed [`MAX_MERGED_CHARS`].
    TooLong {
        /// Merged characters with the new item.
        merged_chars: usize,
    },
    /// The book already holds [`MAX_CONVERSATIONS`] other conversations.
    TooManyConversations,
    /// An id or key is empty or longer than [`MAX_KEY_CHARS`], or an id is already used.
    BadId,
    /// The stored record could not be read; nothing was changed or written.
    StorageUnreadable {
        /// What went wrong, for the HUD.
        detail: String,
    },
    /// The storage was read but the record in it is not a readable book; nothing was
    /// changed or written. The user's Clear keeps it aside under [`ASIDE_KEY`] and starts an
    /// empty book (the continuity loop's Clear; nothing here writes).
    RecordUnreadable {
        /// What is wrong with it, for the HUD.
        detail: String,
    },
    /// The user's Clear confirmed a question about an unreadable record or a failed read,
    /// and the queue read now is readable: its messages were not what the user was asked
    /// about, so nothing was cleared; the HUD asks again.
    QueueChanged,
    /// The user's Clear could not keep the unreadable record aside; nothing was written
    /// over it. The next Clear tries again and, failing again, deletes it without a copy.
    AsideFailed {
        /// The storage error, for the HUD.
        detail: String,
    },
}

impl std::fmt::Display for QueueRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoConversation => f.write_str("this page is not a conversation: open a chat to queue a message"),
            Self::EmptyText => f.write_str("the composer is empty: type the message to queue first"),
            Self::TooManyItems { count } => {
                write!(f, "the queue is full ({count} of {MAX_ITEMS} items): wait for it to be sent or clear it")
            }
            Self::TooLong { merged_chars } => write!(
                f,
                "queued text would be {merged_chars} characters, more than {MAX_MERGED_CHARS}: shorten it or wait for the queue to be sent"
            ),
            Self::TooManyConversations => {
                write!(f, "queues of {MAX_CONVERSATIONS} conversations are stored: clear one first")
            }
            Self::BadId => f.write_str("the queue entry has a bad id: reload the page and try again"),
            Self::StorageUnreadable { detail } => {
                write!(f, "the stored queue could not be read ({detail}); nothing was changed: try again")
            }
            Self::RecordUnreadable { detail } => {
                write!(f, "the stored queue is not readable ({detail}); nothing was changed: clear the queue to keep it aside and start an empty one")
            }
            Self::QueueChanged => {
                f.write_str("the queue changed since you were asked: nothing was cleared; ask again to clear its messages")
            }
            Self::AsideFailed { detail } => write!(
                f,
                "the unreadable queue could not be kept aside ({detail}); nothing was overwritten: clear again to retry (if it fails again, the record is deleted without a copy)"
            ),
        }
    }
}

/// Every conversation's queue, as stored under [`STORE_KEY`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueBook {
    conversations: VecMap<String, Vec<QueueItem>>,
}

/// CRLF and lone CR become LF; surrounding whitespace goes. One pass over the chars, not
/// `replace("\r\n", …)`: a `&str` pattern brings std's substring searcher into the wasm.
pub fn normalize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            chars.next_if_eq(&'\n');
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out.trim().to_owned()
}

/// Characters of `texts` merged with [`SEPARATOR`].
fn merged_len<'a>(texts: impl Iterator<Item = &'a str>) -> usize {
    let (mut chars, mut n) = (0usize, 0usize);
    for text in texts {
        chars += crate::text::char_count(text);
        n += 1;
    }
    chars + SEPARATOR.len() * n.saturating_sub(1)
}

/// FNV-1a, 64 bit: a stable, dependency-free hash for batch ids.
fn fnv1a(parts: &[&str]) -> u64 {
    parts.iter().fold(FNV_START, |hash, part| fnv_feed(fnv_feed(hash, part.as_bytes()), b"\n"))
}

/// FNV-1a's offset basis.
const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over `bytes`, from `hash`.
fn fnv_feed(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn valid_key(key: &str) -> bool {
    !key.is_empty() && crate::limits::within(key, MAX_KEY_CHARS)
}

/// The set-aside records (as stored under [`ASIDE_KEY`], parsed; `None`: none) with
/// `record` added, kept at `now`: `{"version":1,"records":[{"kept_at","record"}]}`, oldest
/// first. A copy kept by an earlier release (the record alone) stays, as the first with no
/// `kept_at`. `Err` (nothing is replaced): [`MAX_ASIDE_RECORDS`] are kept already, or the
/// record nests so deep that the list holding it could not be read back
/// ([`ASIDE_RECORD_MAX_DEPTH`]).
pub fn aside_with(stored: Option<Value>, record: Value, now: Millis) -> Result<Value, String> {
    if nests_deeper_than(&record, ASIDE_RECORD_MAX_DEPTH) {
        return Err(format!(
            "the unreadable queue record nests deeper than {ASIDE_RECORD_MAX_DEPTH} levels, so no list could hold it and be read again; it is not kept aside"
        ));
    }
    let mut records = aside_list(stored);
    if records.len() >= MAX_ASIDE_RECORDS {
        return Err(format!(
            "{MAX_ASIDE_RECORDS} unreadable queue records are already kept aside under {ASIDE_KEY}; none is replaced: remove one in the side panel (Queue records kept aside)"
        ));
    }
    records.push(json_object!("kept_at": now, "record": record));
    Ok(json_object!("version": 1u64, "records": records))
}

/// How deep a record kept aside may nest: the list holds it three levels down (the list, its
/// `records`, the entry), and the whole list must cross back within
/// [`crate::limits::MAX_JSON_DEPTH`] (a deeper one made the list unreadable, and then read as
/// one copy an earlier release kept: review38 L5).
pub const ASIDE_RECORD_MAX_DEPTH: u32 = crate::limits::MAX_JSON_DEPTH - 3;

/// Whether `value` holds a value more than `levels` levels below it.
fn nests_deeper_than(value: &Value, levels: u32) -> bool {
    let deeper = |item: &Value| levels == 0 || nests_deeper_than(item, levels - 1);
    match value {
        Value::Array(items) => items.iter().any(deeper),
        Value::Object(map) => map.values().any(deeper),
        _ => false,
    }
}

/// The set-aside list's entries (`{"kept_at","record"}`), oldest first: a stored
/// version-1 list's, none for `None` or `null`, or a copy kept by an earlier release (any
/// other value) as the one entry with no `kept_at`.
fn aside_list(stored: Option<Value>) -> Vec<Value> {
    match stored {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(list))
            if list.get("version").and_then(Value::as_u64) == Some(1) && list.get("records").is_some_and(Value::is_array) =>
        {
            list.get("records").and_then(Value::as_array).cloned().unwrap_or_default()
        }
        Some(older) => vec![json_object!("kept_at": Value::Null, "record": older)],
    }
}

/// One record kept aside, as the side panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AsideRecord {
    /// `qa:<FNV-1a of kept_at and the value>`: names the record in a removal, so a list
    /// changed meanwhile never loses another record.
    pub id: String,
    /// When it was kept aside (`None`: a copy an earlier release kept).
    pub kept_at: Option<Millis>,
    /// The value as it was stored (the queue stores JSON text: a string). Data only: never
    /// rendered as markup.
    pub record: Value,
}

impl AsideRecord {
    /// The stored text, when the value is text (it is, as the queue stores it).
    pub fn text(&self) -> Option<&str> {
        self.record.as_str()
    }
}

/// The id of an entry ([`AsideRecord::id`]): its `kept_at` and its value, walked (no JSON
/// text is made: serde_json's writer stays out of the wasm).
fn aside_id(entry: &Value) -> String {
    fn walk(hash: u64, value: &Value) -> u64 {
        match value {
            Value::Null => fnv_feed(hash, b"n"),
            Value::Bool(flag) => fnv_feed(hash, if *flag { b"t" } else { b"f" }),
            Value::Number(n) => {
                let bits = n.as_u64().or_else(|| n.as_i64().map(|i| i as u64)).or_else(|| n.as_f64().map(f64::to_bits));
                fnv_feed(fnv_feed(hash, b"#"), &bits.unwrap_or_default().to_le_bytes())
            }
            Value::String(text) => fnv_feed(fnv_feed(fnv_feed(hash, b"\""), &text.len().to_le_bytes()), text.as_bytes()),
            Value::Array(items) => fnv_feed(items.iter().fold(fnv_feed(hash, b"["), walk), b"]"),
            Value::Object(fields) => {
                let inner = fields.iter().fold(fnv_feed(hash, b"{"), |hash, (key, field)| {
                    walk(fnv_feed(fnv_feed(hash, &key.len().to_le_bytes()), key.as_bytes()), field)
                });
                fnv_feed(inner, b"}")
            }
        }
    }
    let kept = entry.get("kept_at").unwrap_or(&Value::Null);
    let record = entry.get("record").unwrap_or(&Value::Null);
    format!("qa:{:016x}", walk(walk(FNV_START, kept), record))
}

/// The records kept aside (as stored under [`ASIDE_KEY`], parsed), oldest first.
pub fn aside_records(stored: Option<Value>) -> Vec<AsideRecord> {
    aside_list(stored)
        .into_iter()
        .map(|mut entry| {
            let id = aside_id(&entry);
            let kept_at = entry.get("kept_at").and_then(Value::as_u64);
            let record = entry.get_mut("record").map(Value::take).unwrap_or_default();
            AsideRecord { id, kept_at, record }
        })
        .collect()
}

/// The set-aside records without the one named `id` (the first, when two are the same), in
/// the stored form; `Err` when none is named so (the list changed: nothing is removed).
pub fn aside_without(stored: Option<Value>, id: &str) -> Result<Value, String> {
    let mut records = aside_list(stored);
    let at = records.iter().position(|entry| aside_id(entry) == id);
    let at = at.ok_or_else(|| "that record is no longer kept aside".to_owned())?;
    records.remove(at);
    Ok(json_object!("version": 1u64, "records": records))
}

impl QueueBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the stored record: `None` (never written) is an empty book. Anything that is
    /// not a version-[`STORE_VERSION`] record of well-formed items is refused whole, so the
    /// caller never writes over data it could not read.
    pub fn parse(stored: Option<&str>) -> Result<Self, QueueRefusal> {
        let bad = || QueueRefusal::StorageUnreadable { detail: "not JSON".to_owned() };
        match stored {
            None => Ok(Self::new()),
            Some(raw) => Self::read(Some(&serde_json::from_str(raw).map_err(|_| bad())?)),
        }
    }

    /// [`Self::parse`] of a record already parsed into JSON (the shell parses the stored
    /// text with the browser's `JSON.parse`).
    pub fn read(stored: Option<&Value>) -> Result<Self, QueueRefusal> {
        let Some(value) = stored else { return Ok(Self::new()) };
        let bad = |detail: &str| QueueRefusal::StorageUnreadable { detail: detail.to_owned() };
        if !value.is_object() {
            return Err(bad("not a queue record"));
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(STORE_VERSION) => {}
            Some(_) => return Err(bad("written by a newer version")),
            None => return Err(bad("no version")),
        }
        let conversations = value.get("conversations").and_then(Value::as_object).ok_or_else(|| bad("no conversations"))?;
        let mut book = Self::new();
        let mut ids = crate::vec_map::VecSet::new();
        for (key, items) in conversations {
            if !valid_key(key) {
                return Err(bad("a bad conversation key"));
            }
            let items = items.as_array().ok_or_else(|| bad("a conversation that is not a list"))?;
            let mut queue = Vec::with_capacity(items.len());
            for item in items {
                let text = item.get("text").and_then(Value::as_str).ok_or_else(|| bad("an item without text"))?;
                let id = item.get("id").and_then(Value::as_str).ok_or_else(|| bad("an item without id"))?;
                let created_at = item.get("created_at").and_then(Value::as_u64).ok_or_else(|| bad("an item without time"))?;
                if !valid_key(id) || !ids.insert(id.to_owned()) {
                    return Err(bad("a bad or repeated item id"));
                }
                queue.push(QueueItem { id: id.to_owned(), text: text.to_owned(), created_at });
            }
            if !queue.is_empty() {
                book.conversations.insert(key.clone(), queue);
            }
        }
        Ok(book)
    }

    /// The stored record's text.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// The stored record.
    pub fn to_value(&self) -> Value {
        let mut conversations = Map::new();
        for (key, items) in self.conversations.iter() {
            let items: Vec<Value> = items.iter().map(|i| json_object!("id": i.id, "text": i.text, "created_at": i.created_at)).collect();
            conversations.insert(key.clone(), Value::Array(items));
        }
        json_object!("version": STORE_VERSION, "conversations": Value::Object(conversations))
    }

    /// The items of `conversation`, in order.
    pub fn items(&self, conversation: &str) -> &[QueueItem] {
        self.conversations.get(conversation).map_or(&[], Vec::as_slice)
    }

    /// Conversations with queued items.
    pub fn conversations(&self) -> impl Iterator<Item = &str> {
        self.conversations.keys().map(String::as_str)
    }

    /// The HUD's figures for `conversation`.
    pub fn status(&self, conversation: &str) -> QueueStatus {
        let items = self.items(conversation);
        QueueStatus {
            count: items.len(),
            merged_chars: merged_len(items.iter().map(|i| i.text.as_str())),
            oldest_at: items.iter().map(|i| i.created_at).min(),
        }
    }

    /// Queues `text` (normalized) as item `id` of `conversation` (Q1), or refuses it whole
    /// (Q6). Returns the new status.
    pub fn add(&mut self, conversation: &str, id: &str, text: &str, now: Millis) -> Result<QueueStatus, QueueRefusal> {
        if conversation.is_empty() {
            return Err(QueueRefusal::NoConversation);
        }
        if !valid_key(conversation) || !valid_key(id) || self.conversations.values().flatten().any(|i| i.id == id) {
            return Err(QueueRefusal::BadId);
        }
        let text = normalize_text(text);
        if text.is_empty() {
            return Err(QueueRefusal::EmptyText);
        }
        let items = self.items(conversation);
        if items.is_empty() && self.conversations.len() >= MAX_CONVERSATIONS {
            return Err(QueueRefusal::TooManyConversations);
        }
        if items.len() >= MAX_ITEMS {
            return Err(QueueRefusal::TooManyItems { count: items.len() });
        }
        let merged_chars = merged_len(items.iter().map(|i| i.text.as_str()).chain(std::iter::once(text.as_str())));
        if merged_chars > MAX_MERGED_CHARS {
            return Err(QueueRefusal::TooLong { merged_chars });
        }
        self.conversations.entry(conversation.to_owned()).or_default().push(QueueItem { id: id.to_owned(), text, created_at: now });
        Ok(self.status(conversation))
    }

    /// Every queued item of `conversation` as one message (Q2, Q3); `None` when nothing is
    /// queued.
    pub fn batch(&self, conversation: &str) -> Option<Batch> {
        let items = self.items(conversation);
        if items.is_empty() {
            return None;
        }
        let item_ids: Vec<String> = items.iter().map(|i| i.id.clone()).collect();
        let mut parts: Vec<&str> = vec![conversation];
        parts.extend(item_ids.iter().map(String::as_str));
        let mut text = String::new();
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                text.push_str(SEPARATOR);
            }
            text.push_str(&item.text);
        }
        Some(Batch { id: format!("qb:{:016x}", fnv1a(&parts)), item_ids, text })
    }

    /// Removes the items `ids` of `conversation` (a confirmed batch, Q5) and returns how many
    /// left. Items queued after the batch stay, in order.
    pub fn remove(&mut self, conversation: &str, ids: &[String]) -> usize {
        let Some(items) = self.conversations.get_mut(conversation) else { return 0 };
        let before = items.len();
        items.retain(|i| !ids.contains(&i.id));
        let removed = before - items.len();
        if items.is_empty() {
            self.conversations.remove(conversation);
        }
        removed
    }

    /// Moves the items of `from` except `keep` to the end of `to`'s queue, in order (a
    /// handoff's cut-over, Q9); returns how many moved. Nothing is refused: the items were
    /// accepted once, and a handoff must not drop them.
    pub fn move_items(&mut self, from: &str, to: &str, keep: &[String]) -> usize {
        if from == to || !valid_key(to) {
            return 0;
        }
        let Some(items) = self.conversations.get_mut(from) else { return 0 };
        // A loop, not `partition`: one adapter less in the wasm.
        let mut moved = Vec::new();
        for item in std::mem::take(items) {
            if keep.contains(&item.id) {
                items.push(item);
            } else {
                moved.push(item);
            }
        }
        if items.is_empty() {
            self.conversations.remove(from);
        }
        let count = moved.len();
        if count > 0 {
            self.conversations.entry(to.to_owned()).or_default().extend(moved);
        }
        count
    }

    /// Empties `conversation`'s queue (Q7) and returns what it held.
    pub fn clear(&mut self, conversation: &str) -> Vec<QueueItem> {
        self.conversations.remove(conversation).unwrap_or_default()
    }

    /// Removes items queued more than [`MAX_AGE_MS`] before `now` and returns them with
    /// their conversation, so the caller can say so.
    pub fn expire(&mut self, now: Millis) -> Vec<(String, QueueItem)> {
        let mut gone = Vec::new();
        self.conversations.retain(|key, items| {
            items.retain(|item| {
                let keep = now.saturating_sub(item.created_at) <= MAX_AGE_MS;
                if !keep {
                    gone.push((key.clone(), item.clone()));
                }
                keep
            });
            !items.is_empty()
        });
        gone
    }
}

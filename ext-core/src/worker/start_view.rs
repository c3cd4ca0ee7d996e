//! The start view: what a page is shown while a restarted worker's wasm compiles.
//!
//! Purpose: a worker that Chrome stopped starts again when a page reconnects, and the core's
//! first view of that page waits for the wasm (~20 ms of a cold start). The core keeps, under
//! [`START_VIEW_KEY`], the exact `hud` message a worker restored from the stored state posts
//! at that page's connect, for the [`START_VIEW_PAGES`] page URLs seen last; `worker.js` reads
//! it with the start's other keys and posts the entry of the connecting port's `sender.url`
//! as it is, before the wasm is up. The live view the restored core posts at the connect
//! replaces it.
//!
//! Invariants:
//! - The message is built by the code that builds the live one ([`super::pages::page_hud`])
//!   from what a restore has: a link that has not started (`companionStarting`) and no page
//!   facts (the snapshot keeps none; pages report again), so no binding, Auto, delivery or
//!   other continuity state is in it, and no state of this life can make it disagree with
//!   the snapshot (`tests/it/start_view.rs`, and the property world's restarts, compare it
//!   with what a restored worker posts).
//! - It is marked `"provisional": true`; it carries no site profile (the profile in force
//!   can change outside the snapshot: the live connect posts it first).
//! - The record names the extension version that wrote it; `worker.js` posts nothing from a
//!   record of another version, an unreadable one, or for a URL it does not list.
//! - Bounded: [`START_VIEW_PAGES`] URLs of allowed page origins, each within
//!   `limits::MAX_URL_CHARS`; written only when it changed, with the snapshot's debounced
//!   write. A new worker life starts from the stored record's URLs when it names this
//!   version (`WorkerInput::StartView`), so its first write keeps the pages that did not
//!   reconnect.
//!
//! Driver contract: part of [`Worker::handle`]; the output is a `StorageWrite` (token 0).

use serde_json::{Map, Value};

use super::pages::page_hud;
use super::{Worker, WorkerOutput};
use crate::companion_link::CompanionLink;
use crate::json_object;
use crate::json_read::WriteJson;
use crate::limits::{url_under_origin, within, ALLOWED_PAGE_ORIGINS, MAX_URL_CHARS};

/// The `chrome.storage.local` key of the start view record (in `START_LOCAL_KEYS`).
pub const START_VIEW_KEY: &str = "herdrContinuityStartViewV1";
/// How many page URLs the record holds (the ones seen last).
pub const START_VIEW_PAGES: usize = 8;

/// The `hud` message a worker just restored posts to a page at its connect: its link has
/// not started and its continuity machine has no page facts (so no continuity view).
pub fn start_view(extension_version: &str) -> Value {
    let link_view = CompanionLink::new(extension_version).hud();
    let mut message = page_hud(&link_view, link_view.write_json(), Some(None));
    if let Some(message) = message.as_object_mut() {
        message.insert("provisional".to_owned(), Value::Bool(true));
    }
    message
}

/// A page URL the record may hold: of an allowed page origin, within `MAX_URL_CHARS`.
fn start_view_allowed(url: &str) -> bool {
    within(url, MAX_URL_CHARS) && ALLOWED_PAGE_ORIGINS.iter().any(|origin| url_under_origin(url, origin))
}

impl Worker {
    /// A page of `url` connected or reported: a URL the record does not hold yet becomes its
    /// newest (the oldest goes past [`START_VIEW_PAGES`]), written with the next snapshot
    /// write (one per [`super::PERSIST_DEBOUNCE_MS`] burst, however many pages report).
    pub(super) fn start_view_seen(&mut self, url: &str) {
        if !start_view_allowed(url) || self.start_urls.iter().any(|seen| seen == url) {
            return;
        }
        self.start_urls.insert(0, url.to_owned());
        self.start_urls.truncate(START_VIEW_PAGES);
        self.start_dirty = true;
        self.persist_at.get_or_insert(self.now.saturating_add(super::PERSIST_DEBOUNCE_MS));
    }

    /// The record the start read (review 37 L7): when it names this version, its page URLs
    /// are kept after the ones seen this life (allowed, bounded as any seen), so this life's
    /// first write does not drop the pages that did not reconnect. Nothing is written for
    /// them alone. The stored order is not kept (the record is a JSON object).
    pub(super) fn start_view_stored(&mut self, record: Option<&Value>) {
        let Some(record) = record.filter(|r| r["version"].as_str() == Some(self.version.as_str())) else { return };
        let Some(pages) = record["pages"].as_object() else { return };
        for url in pages.keys() {
            if self.start_urls.len() >= START_VIEW_PAGES {
                break;
            }
            if start_view_allowed(url) && !self.start_urls.contains(url) {
                self.start_urls.push(url.clone());
            }
        }
    }

    /// The record, when it changed since it was last written.
    pub(super) fn start_view_write(&mut self) {
        if !std::mem::take(&mut self.start_dirty) {
            return;
        }
        let view = start_view(&self.version);
        let mut pages = Map::new();
        for url in &self.start_urls {
            pages.insert(url.clone(), view.clone());
        }
        let value = json_object!("version": self.version, "pages": Value::Object(pages));
        self.outputs.push_back(WorkerOutput::StorageWrite { token: 0, key: START_VIEW_KEY, value });
    }
}

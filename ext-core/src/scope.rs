//! Page classification and scopes: what a web chat URL is, and what a binding or an Auto
//! setting belongs to (SPEC B2, B3, B5, B6).
//!
//! A ChatGPT Project is keyed by its stable `project_id` (`g-p-<32 hex>`, the human slug
//! after it is normalised away), so it is bindable on the Project home page before any
//! conversation exists (B2). The concrete `/c/<id>` open inside a Project is only the
//! delivery target (`active_conv_key`, B3). Plain ChatGPT chats, z.ai and DeepSeek bind per
//! conversation (B6).
//!
//! Invariants:
//! - [`classify_url`] is total: every string maps to exactly one [`PageKind`]; anything not
//!   recognised is [`PageKind::Unsupported`] with a displayable reason, never a guess.
//! - Ids are normalised (lower-case hex, slug dropped), so two URLs of the same Project or
//!   conversation always give equal [`Scope`]s and equal [`Scope::key`]s.
//! - Only [`PageKind::ProjectChat`] and [`PageKind::Chat`] have a composer target; root and
//!   Project home pages offer scope controls only (B5).

use serde::Serialize;
use serde_json::Value;

use crate::json_read::{unknown_variant, Fields, Object, ReadError, ReadJson, WriteJson};

/// A web chat site the extension supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "lowercase")]
pub enum Site {
    /// chatgpt.com (and the legacy chat.openai.com host).
    #[default]
    ChatGpt,
    /// chat.z.ai.
    Zai,
    /// chat.deepseek.com.
    DeepSeek,
}

impl Site {
    /// Stable lower-case name used in storage keys and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Site::ChatGpt => "chatgpt",
            Site::Zai => "zai",
            Site::DeepSeek => "deepseek",
        }
    }
}

/// What a binding or an Auto setting belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scope {
    /// A ChatGPT Project, keyed by its stable id (B2).
    Project {
        /// Normalised `g-p-<32 lower-case hex>` id, without the slug.
        project_id: String,
    },
    /// One conversation outside a ChatGPT Project (B6).
    Conversation {
        /// The site the conversation lives on.
        site: Site,
        /// The site's conversation id, normalised.
        conversation_id: String,
    },
}

impl Scope {
    /// Stable string key for storage maps: `project:<id>` or `<site>:<conversation id>`.
    pub fn key(&self) -> String {
        match self {
            Scope::Project { project_id } => crate::text::concat(&["project:", project_id]),
            Scope::Conversation { site, conversation_id } => crate::text::concat(&[site.as_str(), ":", conversation_id]),
        }
    }

    /// The scope whose [`Scope::key`] is `key` (`None` for any other string).
    pub fn from_key(key: &str) -> Option<Scope> {
        let (head, id) = key.split_once(':')?;
        if id.is_empty() {
            return None;
        }
        let site = match head {
            "project" => return Some(Scope::Project { project_id: id.to_owned() }),
            "chatgpt" => Site::ChatGpt,
            "zai" => Site::Zai,
            "deepseek" => Site::DeepSeek,
            _ => return None,
        };
        Some(Scope::Conversation { site, conversation_id: id.to_owned() })
    }
}

/// A concrete conversation: where progress and continue messages are delivered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, ReadJson, WriteJson)]
pub struct ConversationRef {
    /// The site the conversation lives on.
    pub site: Site,
    /// The site's conversation id, normalised.
    pub conversation_id: String,
}

/// Why a page cannot be bound or driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum UnsupportedPage {
    /// The string is not an http(s) URL.
    NotAUrl,
    /// The host is not one of the supported chat sites.
    UnknownSite,
    /// A ChatGPT temporary chat: it has no conversation id to bind to.
    TemporaryChat,
    /// A z.ai / DeepSeek page without a conversation yet (their start page).
    NoConversationYet,
    /// A path on a supported site that is not a chat (settings, library, GPT store, …).
    NotAChatPage,
}

/// What kind of page a tab shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PageKind {
    /// The ChatGPT root page (`/`): a new chat without an id yet; bindings made here stay
    /// pending for the tab (B4).
    Root,
    /// A ChatGPT Project home page (`/g/g-p-…/project`): bindable, no composer target (B2, B5).
    ProjectHome {
        /// Normalised Project id.
        project_id: String,
    },
    /// A conversation inside a ChatGPT Project (`/g/g-p-…/c/<uuid>`).
    ProjectChat {
        /// Normalised Project id.
        project_id: String,
        /// The concrete conversation: the Project's delivery target when open (B3).
        conversation_id: String,
    },
    /// A conversation outside a Project: plain ChatGPT, z.ai or DeepSeek (B6).
    Chat {
        /// The site.
        site: Site,
        /// Normalised conversation id.
        conversation_id: String,
    },
    /// Anything else, with the reason.
    Unsupported {
        /// Why the page is not supported.
        reason: UnsupportedPage,
    },
}

impl PageKind {
    /// The scope a binding made on this page belongs to; `None` on the root page (pending
    /// per tab) and unsupported pages.
    pub fn scope(&self) -> Option<Scope> {
        match self {
            PageKind::ProjectHome { project_id } | PageKind::ProjectChat { project_id, .. } => {
                Some(Scope::Project { project_id: project_id.clone() })
            }
            PageKind::Chat { site, conversation_id } => Some(Scope::Conversation { site: *site, conversation_id: conversation_id.clone() }),
            PageKind::Root | PageKind::Unsupported { .. } => None,
        }
    }

    /// The concrete conversation open on this page, if any.
    pub fn conversation(&self) -> Option<ConversationRef> {
        match self {
            PageKind::ProjectChat { conversation_id, .. } => {
                Some(ConversationRef { site: Site::ChatGpt, conversation_id: conversation_id.clone() })
            }
            PageKind::Chat { site, conversation_id } => Some(ConversationRef { site: *site, conversation_id: conversation_id.clone() }),
            _ => None,
        }
    }

    /// Whether page-level actions that need a composer (continue, Check Herdr, LLM judge,
    /// recovery, rollover, handoff) exist here (B5).
    pub fn has_composer_target(&self) -> bool {
        self.conversation().is_some()
    }
}

/// Classifies a page URL. Total: unknown shapes are [`PageKind::Unsupported`].
pub fn classify_url(url: &str) -> PageKind {
    let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) else {
        return unsupported(UnsupportedPage::NotAUrl);
    };
    let (host_and_path, query) = split_query(rest);
    // `split_at_checked`, not indexing: nothing here can panic (and the wasm carries no
    // slicing-panic message for it).
    let (host, path) = host_and_path.find('/').and_then(|slash| host_and_path.split_at_checked(slash)).unwrap_or((host_and_path, "/"));
    let host = host.to_ascii_lowercase();
    let host = host.split(':').next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match host {
        "chatgpt.com" | "www.chatgpt.com" | "chat.openai.com" => classify_chatgpt(&segments, query),
        "chat.z.ai" => match segments.as_slice() {
            [] => unsupported(UnsupportedPage::NoConversationYet),
            ["c", id] => generic_chat(Site::Zai, id),
            _ => unsupported(UnsupportedPage::NotAChatPage),
        },
        "chat.deepseek.com" => match segments.as_slice() {
            [] => unsupported(UnsupportedPage::NoConversationYet),
            ["a", "chat", "s", id] => generic_chat(Site::DeepSeek, id),
            _ => unsupported(UnsupportedPage::NotAChatPage),
        },
        _ => unsupported(UnsupportedPage::UnknownSite),
    }
}

fn classify_chatgpt(segments: &[&str], query: &str) -> PageKind {
    // A temporary chat keeps nothing and has no id to bind: whatever page it opens from
    // (the root, a Project, a GPT), nothing binds or journals it.
    if query.split('&').any(|pair| pair == "temporary-chat=true") {
        return unsupported(UnsupportedPage::TemporaryChat);
    }
    match segments {
        [] => PageKind::Root,
        ["c", id] => match normalise_uuid(id) {
            Some(conversation_id) => PageKind::Chat { site: Site::ChatGpt, conversation_id },
            None => unsupported(UnsupportedPage::NotAChatPage),
        },
        ["g", gizmo, "project"] => match project_id_of(gizmo) {
            Some(project_id) => PageKind::ProjectHome { project_id },
            None => unsupported(UnsupportedPage::NotAChatPage),
        },
        ["g", gizmo, "c", id] => match (project_id_of(gizmo), normalise_uuid(id)) {
            (Some(project_id), Some(conversation_id)) => PageKind::ProjectChat { project_id, conversation_id },
            // A custom GPT's conversation is a plain conversation scope.
            (None, Some(conversation_id)) => PageKind::Chat { site: Site::ChatGpt, conversation_id },
            _ => unsupported(UnsupportedPage::NotAChatPage),
        },
        _ => unsupported(UnsupportedPage::NotAChatPage),
    }
}

fn unsupported(reason: UnsupportedPage) -> PageKind {
    PageKind::Unsupported { reason }
}

fn split_query(rest: &str) -> (&str, &str) {
    let without_fragment = rest.split('#').next().unwrap_or_default();
    without_fragment.split_once('?').unwrap_or((without_fragment, ""))
}

/// `g-p-<32 hex>[-slug]` → `g-p-<32 lower-case hex>`.
fn project_id_of(gizmo: &str) -> Option<String> {
    let lower = gizmo.to_ascii_lowercase();
    let hex = lower.strip_prefix("g-p-")?;
    let id_part = hex.get(..32)?;
    if !id_part.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    match hex.as_bytes().get(32) {
        None | Some(b'-') => Some(crate::text::concat(&["g-p-", id_part])),
        Some(_) => None,
    }
}

/// A ChatGPT conversation id: a UUID (8-4-4-4-12 hex), normalised to lower case.
fn normalise_uuid(id: &str) -> Option<String> {
    let bytes = id.as_bytes();
    if bytes.len() != 36 {
        return None;
    }
    let well_formed = bytes.iter().enumerate().all(|(i, b)| match i {
        8 | 13 | 18 | 23 => *b == b'-',
        _ => b.is_ascii_hexdigit(),
    });
    well_formed.then(|| id.to_ascii_lowercase())
}

/// z.ai / DeepSeek ids are opaque: accept 1..=128 of `[A-Za-z0-9_-]`, unchanged.
fn generic_chat(site: Site, id: &str) -> PageKind {
    let valid = !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        PageKind::Chat {
            site,
            // Opaque ids may be case-sensitive: keep them exactly as the site wrote them.
            conversation_id: id.to_string(),
        }
    } else {
        unsupported(UnsupportedPage::NotAChatPage)
    }
}

// Readers and writers of the persisted shapes (crate::json_read; the same shape serde writes).

impl ReadJson for Scope {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        match f.tag("kind")? {
            "project" => Ok(Scope::Project { project_id: f.get("project_id")? }),
            "conversation" => Ok(Scope::Conversation { site: f.get("site")?, conversation_id: f.get("conversation_id")? }),
            _ => Err(unknown_variant("a known Scope kind")),
        }
    }
}

impl WriteJson for Scope {
    fn write_json(&self) -> Value {
        match self {
            Scope::Project { project_id } => Object::tagged("kind", "project").with("project_id", project_id),
            Scope::Conversation { site, conversation_id } => {
                Object::tagged("kind", "conversation").with("site", site).with("conversation_id", conversation_id)
            }
        }
        .done()
    }
}

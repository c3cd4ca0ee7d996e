//! JSON ⇄ core types: the messages of `docs/PROTOCOL.md` (native port) and of the
//! extension-internal page ports ("Extension-internal ports" in the same file).
//!
//! Only conversions live here: a message that does not have the documented shape is a
//! [`WireError`] and is dropped by the driver (logged), never guessed at.

use continuity_protocol::{ErrorCode, EventName, HerdrState, HostErrorCode, Method, ResultType};
use ext_core::companion_link::{HerdrConnection, HerdrStatus, Request, RuntimeMessage};
use ext_core::continuity::{CallError, ContinuityInput};
use ext_core::hud::{ActionId, StatusLine};
use ext_core::json_object;
use ext_core::json_read::{Fields, ReadError, ReadJson, WriteJson};
use ext_core::limits::{self, MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_MARKERS, MAX_PAGE_FIELDS, MAX_URL_CHARS};
use ext_core::vec_map::VecMap;
use serde::Serialize;
use serde_json::Value;

use crate::continuity_wire::{self, CALL_ID_PREFIX};
use ext_core::worker::PAGE_CALL_ID_PREFIX;

/// A message that does not match the protocol.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    /// Not a JSON object of one of the three shapes (request, response, event).
    #[error("the companion sent a message of unknown shape: {0}; update the companion or the extension so both speak herdr-continuity/1")]
    UnknownShape(String),
    /// A known shape with missing or mistyped fields.
    #[error(
        "the companion sent a malformed `{what}` message: {detail}; update the companion or the extension so both speak herdr-continuity/1"
    )]
    Malformed {
        /// Which message.
        what: String,
        /// serde's explanation.
        detail: String,
    },
    /// A page message of unknown shape.
    #[error("a page sent an unknown message: {0}")]
    UnknownPageMessage(String),
    /// A page message over a size cap or of the wrong shape (`ext_core::limits`); dropped.
    #[error("herdr-continuity: dropped a page message: {0}")]
    PageMessageRejected(String),
}

fn malformed(what: &str, error: ReadError) -> WireError {
    WireError::Malformed { what: what.to_owned(), detail: error.to_string() }
}

/// Runtime text shown in the HUD, clipped (`ext_core::limits`).
fn short(text: String) -> String {
    limits::clip(text, limits::MAX_RUNTIME_SHORT_CHARS)
}

/// One message of the native port, read once into what it is for (docs/PROTOCOL.md
/// "Messages"): names and codes are the protocol crate's enums, never compared as strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound<'a> {
    /// For the companion link: answers to its `hello` / `ping`, Herdr and host state.
    Link(RuntimeMessage),
    /// The response to a continuity call (an id with [`CALL_ID_PREFIX`]): its wire id and
    /// what it carries. The result object is read against the call it answers
    /// ([`crate::continuity_wire::answer`]), the only reader of it.
    CallAnswer {
        /// The request's wire id.
        id: &'a str,
        /// The `result` object, or the error the runtime answered.
        outcome: Result<&'a Value, CallError>,
    },
    /// The answer to an extension page's call (an id with [`PAGE_CALL_ID_PREFIX`]): its
    /// wire id and the `result` object or the error, handed to the page as they are.
    PageCallAnswer {
        /// The request's wire id.
        id: &'a str,
        /// The `result` object, or the error the runtime answered.
        outcome: Result<&'a Value, CallError>,
    },
    /// A stream or inbox event for the continuity machine.
    Continuity(ContinuityInput),
    /// A protocol message nothing in the extension uses (a result type or an event the
    /// link and the continuity machine do not read).
    Unused,
}

/// Reads one message received on the native port.
pub fn inbound(value: &Value) -> Result<Inbound<'_>, WireError> {
    let unknown = || WireError::UnknownShape(crate::js::stringify(value));
    let message = Fields::of(value).map_err(|_| unknown())?;
    if let Some(event) = value.get("event") {
        let data = value.get("data").unwrap_or(&Value::Null);
        return match event.as_str().map(EventName::parse) {
            Some(Ok(EventName::HerdrState)) => Ok(Inbound::Link(RuntimeMessage::HerdrState(herdr_status(&data["herdr"])?))),
            Some(Ok(EventName::HostError)) => {
                let data = Fields::of(data).map_err(|e| malformed("host_error", e))?;
                let code = data.get::<String>("code").map_err(|e| malformed("host_error", e))?;
                let code =
                    HostErrorCode::parse(&code).map_err(|e| WireError::Malformed { what: "host_error".into(), detail: e.to_string() })?;
                let message = data.get::<String>("message").map_err(|e| malformed("host_error", e))?;
                Ok(Inbound::Link(RuntimeMessage::HostError { code, message: short(message) }))
            }
            Some(name) => Ok(continuity_wire::event_input(name.ok(), data).map_or(Inbound::Unused, Inbound::Continuity)),
            None => Err(unknown()),
        };
    }
    let id = message.get::<String>("id").map_err(|_| unknown())?;
    let id_str = value.get("id").and_then(Value::as_str).unwrap_or_default();
    let for_continuity = id.starts_with(CALL_ID_PREFIX);
    if id.starts_with(PAGE_CALL_ID_PREFIX) {
        let outcome = match value.get("error") {
            Some(error) => Err(error_body(error)),
            None => Ok(value.get("result").ok_or_else(unknown)?),
        };
        return Ok(Inbound::PageCallAnswer { id: id_str, outcome });
    }
    if let Some(error) = value.get("error") {
        let error = error_body(error);
        return Ok(match for_continuity {
            true => Inbound::CallAnswer { id: id_str, outcome: Err(error) },
            false => Inbound::Link(RuntimeMessage::ErrorAnswer { id, code: error.code, message: error.message }),
        });
    }
    let result = value.get("result").ok_or_else(unknown)?;
    if for_continuity {
        return Ok(Inbound::CallAnswer { id: id_str, outcome: Ok(result) });
    }
    let fields = Fields::of(result).map_err(|e| malformed("result", e))?;
    let kind = fields.get::<String>("type").map_err(|_| unknown())?;
    match ResultType::parse(&kind) {
        Ok(ResultType::Hello) => {
            let read = |e| malformed("hello", e);
            Ok(Inbound::Link(RuntimeMessage::HelloAnswer {
                id,
                runtime_version: short(fields.get("runtime_version").map_err(read)?),
                protocol: fields.get("protocol").map_err(read)?,
                compatible: fields.get("compatible").map_err(read)?,
                capabilities: capability_names(&result["capabilities"])?,
                herdr: herdr_status(&result["herdr"])?,
            }))
        }
        Ok(ResultType::Pong) => Ok(Inbound::Link(RuntimeMessage::Pong { id })),
        Ok(ResultType::HerdrStatus) => Ok(Inbound::Link(RuntimeMessage::HerdrState(herdr_status(&result["herdr"])?))),
        Ok(_) => Ok(Inbound::Unused),
        Err(_) => Err(unknown()),
    }
}

/// The `capabilities` of a hello answer: `None` when absent (a runtime older than protocol
/// 2); a present value must be a list of at most 512 names of at most 64 characters.
fn capability_names(value: &Value) -> Result<Option<Vec<String>>, WireError> {
    let refuse = |detail: &str| WireError::Malformed { what: "hello".into(), detail: detail.into() };
    match value {
        Value::Null => Ok(None),
        Value::Array(names) if names.len() <= 512 => names
            .iter()
            .map(|name| match name.as_str() {
                Some(name) if name.chars().count() <= 64 => Ok(name.to_owned()),
                _ => Err(refuse("capabilities must be names of at most 64 characters")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Err(refuse("capabilities must be a list of at most 512 names")),
    }
}

/// `{"code", "message"}` of an error response; a code the protocol does not list reads as
/// [`ErrorCode::Error`] and a missing message as the error's JSON, so nothing the runtime
/// said is dropped.
pub fn error_body(error: &Value) -> CallError {
    let code = error.get("code").and_then(Value::as_str).and_then(|code| ErrorCode::parse(code).ok());
    let message = match error.get("message").and_then(Value::as_str) {
        Some(message) => message.to_owned(),
        None => crate::js::stringify(error),
    };
    CallError { code: code.unwrap_or(ErrorCode::Error), message: short(message) }
}

/// The `herdr` object as the link's status (a `protocol` over `u32` is unknown).
fn herdr_status(herdr: &Value) -> Result<HerdrStatus, WireError> {
    let read = |e| malformed("herdr", e);
    let fields = Fields::of(herdr).map_err(read)?;
    let state = fields.get::<String>("state").map_err(read)?;
    let state = match HerdrState::parse(&state) {
        Ok(HerdrState::Connected) => HerdrConnection::Connected,
        Ok(HerdrState::NotRunning) => HerdrConnection::NotRunning,
        Ok(HerdrState::UnsupportedProtocol) => HerdrConnection::UnsupportedProtocol,
        Ok(HerdrState::PermissionDenied) => HerdrConnection::PermissionDenied,
        Ok(HerdrState::Error) => HerdrConnection::Error,
        Err(e) => return Err(WireError::Malformed { what: "herdr".into(), detail: e.to_string() }),
    };
    Ok(HerdrStatus {
        state,
        protocol: fields.get("protocol").map_err(read)?,
        version: fields.get::<Option<String>>("version").map_err(read)?.map(short),
        socket: short(fields.or_default("socket").map_err(read)?),
        detail: fields.get::<Option<String>>("detail").map_err(read)?.map(short),
    })
}

/// The JSON posted on the native port for a request.
pub fn request_json(request: &Request) -> Value {
    match request {
        Request::Hello { id, extension_version, protocol, requires } => json_object!(
            "id": id,
            "method": Method::Hello.as_str(),
            "params": json_object!("extension_version": extension_version, "protocol": protocol, "requires": requires),
        ),
        Request::Ping { id } => json_object!("id": id, "method": Method::Ping.as_str(), "params": json_object!()),
    }
}

/// A message from a page or panel port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageMessage {
    /// `{"type":"page_facts","url":…}` — what page the content script runs in.
    PageFacts {
        /// `location.href`.
        url: String,
    },
    /// `{"type":"action","action":"retry_companion"|"round_trip_test"}` — a HUD button.
    Action(ActionId),
}

/// A stream event's name and data (for a watching side panel, `ext_core::worker::calls`),
/// only of an event [`inbound`] read (`read`): one it refused, or could not read within
/// `ext_core::limits` (an id over its cap: `Unused`), is relayed to no page either. `None`
/// for anything else or an event name the protocol does not know.
pub fn stream_event(value: &Value, read: &Result<Inbound<'_>, WireError>) -> Option<(EventName, Value)> {
    if !matches!(read, Ok(Inbound::Continuity(_))) {
        return None;
    }
    let name = EventName::parse(value.get("event")?.as_str()?).ok()?;
    Some((name, value.get("data").cloned().unwrap_or(Value::Null)))
}

/// Checks a page or panel message against `ext_core::limits` before anything reads it: a
/// flat JSON object of at most [`MAX_PAGE_FIELDS`] fields with a string `type`; `url` at most
/// [`MAX_URL_CHARS`], `label` at most [`MAX_LABEL_CHARS`], every other string (ids, markers,
/// scope keys, action names) at most [`MAX_ID_CHARS`]; only `markers` may be a list (of at
/// most [`MAX_MARKERS`] strings); no nested objects (but in `permission_cards`, which
/// `ext_core::permission_card::PageCards::read` checks whole); a `page_facts`'
/// `unresolved` / `unresolved_why` as `ext_core::continuity::Unresolved::read_page_facts`
/// reads them. A page shapes these through its DOM, so anything else is rejected whole.
pub fn check_page_message(value: &Value) -> Result<(), WireError> {
    let reject = |why: String| Err(WireError::PageMessageRejected(why));
    let Some(object) = value.as_object() else {
        return reject("not a JSON object".into());
    };
    if object.len() > MAX_PAGE_FIELDS {
        return reject(format!("{} fields (at most {MAX_PAGE_FIELDS})", object.len()));
    }
    if !object.get("type").is_some_and(Value::is_string) {
        return reject("no string `type`".into());
    }
    // Nested by design: `PageCards::read` checks it whole against its own caps.
    if object.get("type").and_then(Value::as_str) == Some("permission_cards") {
        return Ok(());
    }
    let queue_add = object.get("type").and_then(Value::as_str) == Some("queue_add");
    let turn_ended = object.get("type").and_then(Value::as_str) == Some("turn_ended");
    let goal_set = object.get("action").and_then(Value::as_str) == Some("goal_set");
    // A `companion_call`'s `params` are checked by the worker, which answers the refusal.
    let companion_call = object.get("type").and_then(Value::as_str) == Some("companion_call");
    let string_cap = |key: &str| match key {
        "url" => MAX_URL_CHARS,
        "label" => MAX_LABEL_CHARS,
        "text" if queue_add => limits::MAX_QUEUE_TEXT_CHARS,
        "text" if goal_set => ext_core::goal_supervisor::GOAL_MAX_CHARS,
        "user_text" | "assistant_text" if turn_ended => limits::MAX_TURN_TEXT_CHARS,
        "user_text" => limits::MAX_TURN_USER_CHARS,
        "assistant_text" => limits::MAX_TURN_ASSISTANT_CHARS,
        _ => MAX_ID_CHARS,
    };
    for (key, field) in object {
        if !limits::within(key, MAX_ID_CHARS) {
            return reject("a field name is too long".into());
        }
        if companion_call && key == "params" {
            continue;
        }
        match field {
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
            Value::String(text) => {
                let cap = string_cap(key);
                if !limits::within(text, cap) {
                    return reject(format!("`{key}` is longer than {cap} characters"));
                }
            }
            Value::Array(items) if key == "markers" => {
                if items.len() > MAX_MARKERS {
                    return reject(format!("{} markers (at most {MAX_MARKERS})", items.len()));
                }
                if !items.iter().all(|m| m.as_str().is_some_and(|m| limits::within(m, MAX_ID_CHARS))) {
                    return reject(format!("a marker is not a string of at most {MAX_ID_CHARS} characters"));
                }
            }
            Value::Array(items) if key == "human_apps" => {
                if items.len() > limits::MAX_APP_MENTIONS {
                    return reject(format!("{} App pills in `human_apps` (at most {})", items.len(), limits::MAX_APP_MENTIONS));
                }
                let pill = |item: &Value| {
                    item.as_object().is_some_and(|o| {
                        o.len() == 3
                            && ["keyword", "name", "path"]
                                .iter()
                                .all(|k| o.get(*k).and_then(Value::as_str).is_some_and(|s| limits::within(s, MAX_ID_CHARS)))
                    })
                };
                if !items.iter().all(pill) {
                    return reject(format!(
                        "a `human_apps` entry is not {{keyword, name, path}} strings of at most {MAX_ID_CHARS} characters"
                    ));
                }
            }
            Value::Array(_) | Value::Object(_) => return reject(format!("`{key}` has the wrong shape")),
        }
    }
    if object.get("type").and_then(Value::as_str) == Some("page_facts") {
        ext_core::continuity::Unresolved::read_page_facts(value).map_err(WireError::PageMessageRejected)?;
    }
    Ok(())
}

/// The CSP as a content script observed it (`page_diagnostics.csp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(deny_unknown_fields)]
pub struct ObservedCsp {
    /// Whether the page has a `<meta http-equiv=Content-Security-Policy>`.
    pub meta: bool,
    /// How many `securitypolicyviolation` events the content script saw.
    pub violations: u64,
    /// The distinct directives those events named.
    pub directives: Vec<String>,
}

/// One delivery outcome a page reported (`page_diagnostics.deliveries`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(deny_unknown_fields)]
pub struct DeliveryOutcomeSeen {
    /// The delivery id.
    pub id: String,
    /// `submitted`, `not_submitted` or `unconfirmed`.
    pub outcome: String,
    /// Why it was not submitted.
    pub reason: Option<String>,
}

/// Which entry of a fact's fallback chain served it (`page_diagnostics.usage`): counts
/// only, no page content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(deny_unknown_fields)]
pub struct FactUsage {
    /// The winning probe's index in the fact's chain (0 is the first probe).
    pub entry: u64,
    /// The generations that list that probe (the profile's `gens`).
    pub gens: Vec<String>,
    /// Whether that probe is a fallback: not the first probe of its fact in any generation
    /// that lists it.
    pub fallback: bool,
    /// How many fact recomputes since the page loaded it won.
    pub count: u64,
}

/// Where the adapter looked for a needed fact it did not find (`page_diagnostics.missing`):
/// the shape of that region, names and counts only — never text or attribute values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(deny_unknown_fields)]
pub struct StructureSummary {
    /// How many elements were walked (at most `limits::MAX_STRUCTURE_ELEMENTS`).
    pub elements: u64,
    /// Tag name → how many of the walked elements have it.
    pub tags: VecMap<String, u64>,
    /// `role` attribute → count.
    pub roles: VecMap<String, u64>,
    /// `data-*` attribute name → how many walked elements carry it.
    pub data_attrs: VecMap<String, u64>,
}

/// `{"type":"page_diagnostics",…}`: what the page adapter sees ("What the extension sees"
/// in the side panel). The only page message with nested values; no page content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(deny_unknown_fields)]
pub struct PageDiagnostics {
    /// Always `page_diagnostics`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The content script's start id (`page_facts.page_load`).
    pub page_load: String,
    /// The profile's site, `null` before the page had one.
    pub site: Option<String>,
    /// The generation the adapter uses, `null` when none matched.
    pub generation: Option<String>,
    /// Every generation whose detection rule holds (more than one means the rules drifted).
    pub matching: Vec<String>,
    /// Fact name → the probe that matched (described) or `null`.
    pub facts: VecMap<String, Option<String>>,
    /// Fact name → the chain entry that served it last and how often (absent: never found).
    #[serde(default)]
    pub usage: VecMap<String, FactUsage>,
    /// Needed fact that is missing → the structure of the region where it was looked for.
    #[serde(default)]
    pub missing: VecMap<String, StructureSummary>,
    /// The CSP as observed.
    pub csp: ObservedCsp,
    /// The newest delivery outcomes of this page, oldest first.
    pub deliveries: Vec<DeliveryOutcomeSeen>,
}

/// Parses a `page_diagnostics` message, checking it against the caps of
/// `ext_core::limits` (it is exempt from [`check_page_message`]'s flatness only): at most
/// `MAX_DIAGNOSTIC_FACTS` facts named by at most `MAX_DIAGNOSTIC_NAME_CHARS` characters with
/// descriptions of at most `MAX_SELECTOR_CHARS`; lists of at most `MAX_DIAGNOSTIC_ITEMS`;
/// names at most `MAX_DIAGNOSTIC_NAME_CHARS`, ids and reasons at most [`MAX_ID_CHARS`];
/// `usage` for at most `MAX_DIAGNOSTIC_FACTS` facts, each naming at most
/// `MAX_DIAGNOSTIC_GENS` generations and an entry up to `MAX_DIAGNOSTIC_ENTRY`; `missing`
/// for at most `MAX_DIAGNOSTIC_MISSING` facts, each summary's maps at most
/// `MAX_STRUCTURE_KEYS` names, every count at most `MAX_STRUCTURE_ELEMENTS`. (`usage` and
/// `missing` may be absent: read as empty.)
pub fn page_diagnostics(value: &Value) -> Result<PageDiagnostics, WireError> {
    use limits::{
        MAX_DIAGNOSTIC_ENTRY, MAX_DIAGNOSTIC_FACTS, MAX_DIAGNOSTIC_GENS, MAX_DIAGNOSTIC_ITEMS, MAX_DIAGNOSTIC_MISSING,
        MAX_DIAGNOSTIC_NAME_CHARS, MAX_SELECTOR_CHARS, MAX_STRUCTURE_ELEMENTS, MAX_STRUCTURE_KEYS,
    };
    let reject = |why: &str| Err(WireError::PageMessageRejected(format!("page_diagnostics: {why}")));
    let diagnostics = PageDiagnostics::read_json(value).map_err(|e| WireError::PageMessageRejected(format!("page_diagnostics: {e}")))?;
    let name = |text: &str| limits::within(text, MAX_DIAGNOSTIC_NAME_CHARS);
    let names = |list: &[String]| list.len() <= MAX_DIAGNOSTIC_ITEMS && list.iter().all(|n| name(n));
    if diagnostics.kind != "page_diagnostics" || !limits::within(&diagnostics.page_load, MAX_ID_CHARS) {
        return reject("wrong type or page_load");
    }
    if !diagnostics.site.iter().chain(&diagnostics.generation).all(|n| name(n)) || !names(&diagnostics.matching) {
        return reject("a site or generation name is too long");
    }
    if diagnostics.facts.len() > MAX_DIAGNOSTIC_FACTS
        || !diagnostics
            .facts
            .iter()
            .all(|(fact, probe)| name(fact) && probe.as_deref().is_none_or(|p| limits::within(p, MAX_SELECTOR_CHARS)))
    {
        return reject("too many facts or a fact too long");
    }
    if diagnostics.usage.len() > MAX_DIAGNOSTIC_FACTS
        || !diagnostics.usage.iter().all(|(fact, usage)| {
            name(fact)
                && usage.entry <= MAX_DIAGNOSTIC_ENTRY
                && usage.gens.len() <= MAX_DIAGNOSTIC_GENS
                && usage.gens.iter().all(|g| name(g))
        })
    {
        return reject("`usage`: too many facts, a name too long or an entry out of range");
    }
    let counts = |map: &VecMap<String, u64>| {
        map.len() <= MAX_STRUCTURE_KEYS && map.iter().all(|(key, n)| !key.is_empty() && name(key) && *n <= MAX_STRUCTURE_ELEMENTS)
    };
    if diagnostics.missing.len() > MAX_DIAGNOSTIC_MISSING
        || !diagnostics.missing.iter().all(|(fact, summary)| {
            name(fact)
                && summary.elements <= MAX_STRUCTURE_ELEMENTS
                && counts(&summary.tags)
                && counts(&summary.roles)
                && counts(&summary.data_attrs)
        })
    {
        return reject("`missing`: too many facts, or a summary over its caps (names, keys or counts)");
    }
    if !names(&diagnostics.csp.directives) {
        return reject("too many or too long CSP directives");
    }
    if diagnostics.deliveries.len() > MAX_DIAGNOSTIC_ITEMS
        || !diagnostics.deliveries.iter().all(|d| {
            limits::within(&d.id, MAX_ID_CHARS) && name(&d.outcome) && d.reason.as_deref().is_none_or(|r| limits::within(r, MAX_ID_CHARS))
        })
    {
        return reject("too many or too long delivery outcomes");
    }
    Ok(diagnostics)
}

/// Parses one message received on a page or panel port.
pub fn page_message(value: &Value) -> Result<PageMessage, WireError> {
    let unknown = || WireError::UnknownPageMessage(crate::js::stringify(value));
    match value.get("type").and_then(Value::as_str) {
        Some("page_facts") => Ok(PageMessage::PageFacts { url: value.get("url").and_then(Value::as_str).ok_or_else(unknown)?.to_owned() }),
        Some("action") => {
            value.get("action").and_then(Value::as_str).and_then(ActionId::from_wire).map(PageMessage::Action).ok_or_else(unknown)
        }
        _ => Err(unknown()),
    }
}

/// `{"type":"round_trip_result","ok":…,"ms":…,"status":…}` sent to the page that asked.
pub fn round_trip_json(ms: Option<f64>, status: &StatusLine) -> Value {
    json_object!("type": "round_trip_result", "ok": ms.is_some(), "ms": ms, "status": status.write_json())
}

//! The one router from runtime methods to the services that serve them.
//!
//! [`Router`] is built after the services (the event stream and the parent inbox) and owns
//! them; nothing is set on it later. Each method family has its own file — [`stream`]
//! (`events.subscribe`, `herdr.*` views), [`inbox`] (`task.*`, `inbox.*`), [`judge`]
//! (`judge.turn_end`), [`goal`] (`goal.set`, `goal.evidence`: Goal mode's evidence), [`journal`] (`continuity.*`, the Continuity Journal, and its
//! handoff package `herdr_mcp.browser_handoff.prepare`), [`tools`]
//! (the planner tool registry, `tools.*`; its workstation reads in [`workstation`]), [`bridge`] (the JSON bridge, `bridge.*`),
//! [`profiles`] (`profiles.get`, the site profile files of the companion home) and
//! [`attribution`] (`chats.report`, and which chat an MCP caller's `herdr_prompt` is for) — and the
//! link methods (`hello`, `ping`, `herdr.status`) are answered here. To add a family, add
//! its service to [`Services`], a file here, and its arms in [`Router::route`].
//!
//! Invariants:
//! - Every method of [`Method`] has exactly one arm; the match is exhaustive, so a new
//!   protocol method does not compile until it is routed (or refused as `unknown_method`).
//! - A service that failed to open answers `not_ready` for its methods; the others work.
//! - The router does no connection work: reading lines, limits, timeouts and the reply
//!   itself are the runtime's (`crate::runtime`).

pub mod attribution;
pub mod bridge;
pub mod diagnostics;
pub mod goal;
pub mod inbox;
pub mod journal;
pub mod judge;
pub mod profiles;
pub mod retention;
pub mod stream;
pub mod tools;
pub mod workstation;
pub mod write_tools;

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::clock::unix_millis;
use crate::herdr::HerdrStatus;
use crate::log::RuntimeLog;
use crate::outbox::ClientHandle;
use crate::protocol::{ErrorCode, Method, MethodError, Request, CAPABILITIES, PROTOCOL_VERSION};

/// The services the router serves, built (and started) before it.
#[derive(Debug)]
pub struct Services {
    /// Latest Herdr connection status.
    pub herdr_status: watch::Receiver<HerdrStatus>,
    /// This runtime start (changes on every start).
    pub boot_id: String,
    /// The runtime log.
    pub log: Arc<RuntimeLog>,
    /// The event log and Herdr catalog; `None` when `state.db` could not be opened.
    pub events: Option<Arc<crate::stream::EventHub>>,
    /// The parent inbox; `None` when it could not be opened.
    pub inbox: Option<Arc<crate::inbox::Inbox>>,
    /// The companion home (where `diagnostics.report` keeps the newest report).
    pub home: std::path::PathBuf,
    /// The turn-end judge; `None` when its HTTP client could not start.
    pub judge: Option<Arc<crate::judge::JudgeService>>,
    /// The Continuity Journal; `None` when it could not be opened.
    pub journal: Option<Arc<crate::journal::Journal>>,
    /// Storage limits and reclaiming (`retention.*`); `None` when it could not be opened.
    pub retention: Option<Arc<crate::retention::Retention>>,
    /// Work Memory (`work_memory.*` through `herdr_call`); `None` when it could not open.
    pub work_memory: Option<Arc<crate::work_memory::WorkMemory>>,
    /// The JSON bridge; `None` when its tables in `state.db` could not be opened.
    pub bridge: Option<Arc<crate::bridge::BridgeService>>,
    /// Which chat a ref-less `herdr_prompt` is for: the extension's chat reports and the
    /// ChatGPT session pairings.
    pub attribution: Arc<attribution::Attribution>,
    /// The write and exec tools' tables (audit log, idempotency keys, exec sessions);
    /// `None` when they could not be opened.
    pub write_tools: Option<Arc<crate::tools::write::WriteTools>>,
}

/// Routes validated requests to the services.
#[derive(Debug)]
pub struct Router {
    /// Latest Herdr connection status.
    herdr_status: watch::Receiver<HerdrStatus>,
    /// This runtime start.
    boot_id: String,
    /// The runtime log.
    log: Arc<RuntimeLog>,
    /// The event stream service.
    events: Option<Arc<crate::stream::EventHub>>,
    /// The parent inbox service.
    inbox: Option<Arc<crate::inbox::Inbox>>,
    /// The companion home.
    home: std::path::PathBuf,
    /// The turn-end judge.
    judge: Option<Arc<crate::judge::JudgeService>>,
    /// The Continuity Journal.
    journal: Option<Arc<crate::journal::Journal>>,
    /// Storage limits.
    retention: Option<Arc<crate::retention::Retention>>,
    /// Work Memory.
    work_memory: Option<Arc<crate::work_memory::WorkMemory>>,
    /// The JSON bridge.
    bridge: Option<Arc<crate::bridge::BridgeService>>,
    /// Attribution of dispatches to chats.
    attribution: Arc<attribution::Attribution>,
    /// The write and exec tools.
    write_tools: Option<Arc<crate::tools::write::WriteTools>>,
    /// The registered project roots (`state.db`'s `roots`): the write tools' store, or
    /// opened at the first workstation tool call ([`workstation`]). One handle for every
    /// tool.
    roots: std::sync::OnceLock<Arc<crate::tools::roots::RootStore>>,
}

impl Router {
    /// A router that owns `services`.
    pub fn new(services: Services) -> Self {
        let Services {
            herdr_status,
            boot_id,
            log,
            events,
            inbox,
            home,
            judge,
            journal,
            retention,
            work_memory,
            bridge,
            attribution,
            write_tools,
        } = services;
        let roots = std::sync::OnceLock::new();
        if let Some(tools) = &write_tools {
            // The read and the write tools share the one roots store.
            let _ = roots.set(Arc::clone(&tools.roots));
        }
        Self {
            herdr_status,
            boot_id,
            log,
            events,
            inbox,
            home,
            judge,
            journal,
            retention,
            work_memory,
            bridge,
            attribution,
            write_tools,
            roots,
        }
    }

    /// The current Herdr status.
    pub fn herdr(&self) -> HerdrStatus {
        self.herdr_status.borrow().clone()
    }

    /// Why Herdr cannot serve a request right now, as a method error (`None` when
    /// connected); shared by every method that needs Herdr.
    fn herdr_not_ready(&self) -> Option<MethodError> {
        let herdr = self.herdr();
        let code = herdr.state.not_ready_code()?;
        Some((code, herdr.detail.unwrap_or_default()))
    }

    /// Runs one validated request for `client` (which a subscription keeps, to push its
    /// events later) and returns its result object or its error.
    pub async fn route(&self, request: &Request, client: &ClientHandle) -> Result<Value, MethodError> {
        match request.method {
            Method::Hello => {
                let mut answer = self.hello(request)?;
                // The doctor's hello also carries the git this runtime finds on its PATH
                // (`version` null: none): the runtime may have another PATH than the doctor's shell
                // (a browser started it), and herdr_git refuses a git too old. A worker's
                // hello does not: the browser has no use for the workstation's tools.
                let doctor = request.params.get("extension_version").and_then(Value::as_str) == Some(DOCTOR_VERSION);
                if doctor && answer["compatible"] == true {
                    // Bounded: a git that does not answer leaves `git` out (the doctor then
                    // judges its own), never the hello unanswered.
                    let asked = tokio::task::spawn_blocking(crate::gitcmd::installed_version);
                    if let Ok(Ok(found)) = tokio::time::timeout(std::time::Duration::from_secs(2), asked).await {
                        answer["git"] = json!({ "version": found });
                    }
                }
                Ok(answer)
            }
            Method::Ping => Ok(json!({ "type": "pong", "server_time": unix_millis() })),
            Method::HerdrStatus => Ok(json!({ "type": "herdr_status", "herdr": self.herdr() })),
            Method::EventsSubscribe | Method::HerdrWorkspaces | Method::HerdrPanes | Method::HerdrAgents | Method::HerdrPaneRead => {
                stream::handle(self, request, client).await
            }
            Method::TaskDispatch | Method::TaskList | Method::InboxPending | Method::InboxAck | Method::InboxCounts => {
                inbox::handle(self, request).await
            }
            Method::DiagnosticsReport => diagnostics::handle(&self.home, request).await,
            Method::JudgeTurnEnd => judge::handle(self, request).await,
            Method::GoalSet | Method::GoalEvidence => goal::handle(self, request).await,
            Method::ToolsList | Method::ToolsCall => tools::handle(self, request).await,
            Method::ContinuityAppend
            | Method::ContinuityResolve
            | Method::ContinuitySearch
            | Method::ContinuityResume
            | Method::ContinuityList
            | Method::BrowserHandoffPrepare => journal::handle(self, request.method, &request.params).await,
            Method::BridgePrompt | Method::BridgeReply | Method::BridgeDelivered | Method::BridgeDecide => {
                bridge::handle(self, request).await
            }
            Method::ChatsReport => attribution::handle(&self.attribution, request),
            Method::ProfilesGet => profiles::handle(&self.home).await,
            Method::ToolsAudit => write_tools::audit_page(self, &request.params).await,
            Method::RetentionGet | Method::RetentionSet => retention::handle(self, request).await,
        }
    }

    fn hello(&self, request: &Request) -> Result<Value, MethodError> {
        let Some(protocol) = request.params.get("protocol").and_then(Value::as_u64) else {
            return Err((
                ErrorCode::BadRequest,
                format!("hello needs params.protocol (an integer); send {{\"protocol\":{PROTOCOL_VERSION},\"extension_version\":\"…\"}}"),
            ));
        };
        let requires: Vec<&str> = match request.params.get("requires") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) if names.len() <= 256 => {
                let mut strings = Vec::with_capacity(names.len());
                for name in names {
                    match name.as_str() {
                        Some(name) if name.chars().count() <= 128 => strings.push(name),
                        _ => {
                            return Err((
                                ErrorCode::BadRequest,
                                "hello params.requires must hold capability names, strings of at most 128 characters (like \"continuity.resume\")".to_owned(),
                            ))
                        }
                    }
                }
                strings
            }
            Some(_) => {
                return Err((ErrorCode::BadRequest, "hello params.requires must be a list of at most 256 capability names".to_owned()))
            }
        };
        if std::env::var_os(TEST_OLD_HELLO).is_some_and(|value| value == "1") {
            // Test-only stand-in: the answer a runtime of protocol 1 gave (no capabilities).
            return Ok(json!({
                "type": "hello",
                "runtime_version": "0.1.0",
                "protocol": 1,
                "compatible": protocol == 1,
                "boot_id": self.boot_id,
                "herdr": self.herdr(),
            }));
        }
        let agreement = HelloAgreement::of(protocol, &requires);
        let extension = request.params.get("extension_version").and_then(Value::as_str).unwrap_or("unknown");
        if let Some(why) = agreement.mismatch() {
            let shown: String = extension.chars().take(64).flat_map(char::escape_debug).collect();
            self.log.line(format_args!("hello: extension {shown} does not match this runtime: {why}"));
        }
        // Only the hello of a worker (it carries `requires`) or a mismatch is kept: the options
        // page's and side panel's own hellos would otherwise hide a worker's mismatch from doctor.
        let carries_requires = request.params.get("requires").is_some_and(Value::is_array);
        if extension != DOCTOR_VERSION && (carries_requires || !agreement.compatible()) {
            self.remember_hello(extension, &agreement);
        }
        let mut answer = json!({
            "type": "hello",
            "runtime_version": env!("CARGO_PKG_VERSION"),
            "protocol": PROTOCOL_VERSION,
            "compatible": agreement.compatible(),
            "capabilities": CAPABILITIES,
            "boot_id": self.boot_id,
            "herdr": self.herdr(),
        });
        if !agreement.missing.is_empty() {
            answer["missing"] = json!(agreement.missing);
        }
        Ok(answer)
    }
}

/// Test-only: when this variable is `1` in the runtime's environment, `hello` answers as a
/// runtime of protocol 1 did (no `capabilities`), so an end-to-end test shows the mismatch
/// with a real browser and a real companion (`e2e/specs/version-agreement.spec.mjs`).
pub const TEST_OLD_HELLO: &str = "HERDR_CONTINUITY_TEST_OLD_HELLO";

/// The `extension_version` `herdr-companion doctor` sends; its hello is not remembered.
pub const DOCTOR_VERSION: &str = "doctor";

/// The file in the companion home that keeps the newest worker (or mismatching) hello and how it agreed.
pub const HELLO_FILE: &str = "hello.json";

impl Router {
    /// Keeps the newest worker (or mismatching) hello in [`HELLO_FILE`] (0600) for `herdr-companion doctor`;
    /// a failure is logged, the hello is answered anyway.
    fn remember_hello(&self, extension: &str, agreement: &HelloAgreement) {
        let text = json!({
            "at": unix_millis(),
            "extension_version": extension.chars().take(64).collect::<String>(),
            "protocol": agreement.extension_protocol,
            "compatible": agreement.compatible(),
            "mismatch": agreement.mismatch(),
        })
        .to_string();
        let path = self.home.join(HELLO_FILE);
        let log = self.log.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(error) = diagnostics::write_private(&path, &text) {
                log.line(format_args!("hello: could not keep the extension's hello in {}: {error}", path.display()));
            }
        });
    }
}

/// The runtime's side of the `hello` agreement: the extension's protocol integer and the
/// capabilities it needs against this runtime's [`PROTOCOL_VERSION`] and [`CAPABILITIES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloAgreement {
    /// The extension's protocol integer.
    pub extension_protocol: u64,
    /// The names the extension needs that this runtime does not serve.
    pub missing: Vec<String>,
}

impl HelloAgreement {
    /// Compares what an extension sent in `hello`.
    pub fn of(extension_protocol: u64, requires: &[&str]) -> Self {
        let missing = requires.iter().filter(|name| !CAPABILITIES.contains(name)).map(|name| (*name).to_owned()).collect();
        Self { extension_protocol, missing }
    }

    /// Whether the two sides work together.
    pub fn compatible(&self) -> bool {
        self.extension_protocol == PROTOCOL_VERSION && self.missing.is_empty()
    }

    /// Why not, naming the side to update (`None` when compatible).
    pub fn mismatch(&self) -> Option<String> {
        let runtime = env!("CARGO_PKG_VERSION");
        if self.extension_protocol < PROTOCOL_VERSION {
            Some(format!(
                "the extension speaks protocol {} and this companion ({runtime}) protocol {PROTOCOL_VERSION}; update the extension",
                self.extension_protocol
            ))
        } else if self.extension_protocol > PROTOCOL_VERSION || !self.missing.is_empty() {
            // At most 8 names of at most 64 characters each, escaped: this goes to the log.
            let mut lacking = String::new();
            for (index, name) in self.missing.iter().take(8).enumerate() {
                lacking.push_str(if index == 0 { " and lacks " } else { ", " });
                lacking.extend(name.chars().take(64).flat_map(char::escape_debug));
            }
            if self.missing.len() > 8 {
                lacking.push_str(&format!(" and {} more", self.missing.len() - 8));
            }
            Some(format!(
                "the extension speaks protocol {} and this companion ({runtime}) protocol {PROTOCOL_VERSION}{lacking}; stop this runtime (the process holding run/runtime.lock), then run herdr-companion install again with the newer companion",
                self.extension_protocol
            ))
        } else {
            None
        }
    }
}

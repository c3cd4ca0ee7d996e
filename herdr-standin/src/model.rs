//! The in-memory Herdr session the stand-in serves: workspaces → tabs → panes → agents.
//!
//! Sans-IO: [`Session::handle_line`] takes one request line and returns what to write back
//! (one response line), which events to publish, and whether the connection becomes a
//! subscription. The socket loop in `main.rs` only moves bytes.
//!
//! Invariants (all from `../shared/herdr/transcript.md`):
//! - Ids: workspaces `wN` (global counter), tabs `wN:tM` and panes `wN:pK` (per-workspace
//!   counters); ids are never reused.
//! - `done` is derived, never reported: `idle` on a pane that is unseen (its workspace is
//!   not focused or its tab is not the active tab) becomes `done`.
//! - `state_change_seq` is one global counter, bumped once per actual status change; the
//!   agent carries the value of its last change.
//! - A `pane.agent_status_changed` event is published only when the status changes.
//! - The first report of an agent on a pane publishes `pane_agent_detected`; a release
//!   publishes `unknown` then `pane_agent_detected {final_status, released:true}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::wire::*;
use continuity_protocol::herdr::{HerdrErrorCode, HerdrMethod, HerdrSubscription, HERDR_SCHEMA_METHODS};

/// A pane's screen height when its workspace has one tab (no tab bar).
const SCREEN_ROWS_SINGLE_TAB: u32 = 40;
/// The tab area as the recorded 120x40 client drew it.
const AREA_X: u32 = 26;
/// Width of the tab area.
const AREA_WIDTH: u32 = 94;

/// One event as Herdr streams it: `{"data":{…},"event":"<name>"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Event name (`workspace_created`, `pane.agent_status_changed`, …).
    pub name: String,
    /// Event payload (keys sorted on the wire).
    pub data: Value,
}

impl Event {
    /// The wire line (no trailing newline).
    pub fn to_line(&self) -> String {
        json!({"data": self.data, "event": self.name}).to_string()
    }
}

/// What one subscription connection asked for.
#[derive(Debug, Clone)]
pub struct SubscriptionFilter {
    /// The subscriptions, as sent.
    pub subscriptions: Vec<Subscription>,
}

impl SubscriptionFilter {
    /// Whether `event` goes to this subscriber.
    pub fn wants(&self, event: &Event) -> bool {
        self.subscriptions.iter().any(|sub| {
            if sub.kind == HerdrSubscription::PaneAgentStatusChanged {
                if event.name != HerdrSubscription::PaneAgentStatusChanged.event_name() {
                    return false;
                }
                let same_pane = event.data.get("pane_id").and_then(Value::as_str) == sub.pane_id.as_deref();
                let status_ok = match sub.agent_status {
                    None => true,
                    Some(wanted) => event.data.get("agent_status") == serde_json::to_value(wanted).ok().as_ref(),
                };
                same_pane && status_ok
            } else {
                sub.kind.replace('.', "_") == event.name
            }
        })
    }
}

/// The outcome of one request line.
#[derive(Debug, Default)]
pub struct Reply {
    /// The response line to write (no newline).
    pub response: String,
    /// Events to publish to matching subscribers, in order.
    pub events: Vec<Event>,
    /// `Some` when the connection stays open as a subscription.
    pub subscribe: Option<SubscriptionFilter>,
    /// Events sent on the new subscription only, right after the ack (current statuses).
    pub initial_events: Vec<Event>,
    /// Stand-in control: raw lines to write to every open subscription.
    pub inject_lines: Vec<String>,
}

/// A workspace.
#[derive(Debug, Clone)]
struct Workspace {
    /// Id.
    id: String,
    /// Label.
    label: String,
    /// Tab ids in order.
    tabs: Vec<String>,
    /// Active tab.
    active_tab: String,
    /// Next tab number for ids.
    next_tab: u32,
    /// Next pane number for ids.
    next_pane: u32,
}

/// A tab.
#[derive(Debug, Clone)]
struct Tab {
    /// Id.
    id: String,
    /// Owner.
    workspace_id: String,
    /// Label.
    label: String,
    /// Pane ids in layout order.
    panes: Vec<String>,
    /// The tab's focused pane.
    focused_pane: String,
}

/// A pane.
#[derive(Debug, Clone)]
struct Pane {
    /// Id.
    id: String,
    /// Terminal id.
    terminal_id: String,
    /// Owner workspace.
    workspace_id: String,
    /// Owner tab.
    tab_id: String,
    /// Working directory.
    cwd: String,
    /// Agent name.
    agent: Option<String>,
    /// Status.
    status: AgentStatus,
    /// Global counter value at the last status change.
    state_change_seq: u64,
    /// Finished output lines.
    lines: Vec<String>,
    /// The line being typed.
    current: String,
}

/// A seed: workspaces to create at start-up (ids follow creation order).
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
pub struct Seed {
    /// Workspaces in order; the first is focused.
    pub workspaces: Vec<SeedWorkspace>,
}

/// A seeded workspace.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct SeedWorkspace {
    /// Label.
    pub label: String,
    /// Working directory.
    #[serde(default = "default_cwd")]
    pub cwd: String,
    /// Tabs in order; the first is active. Empty means one tab with one pane.
    #[serde(default)]
    pub tabs: Vec<SeedTab>,
}

/// A seeded tab.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct SeedTab {
    /// Label.
    #[serde(default)]
    pub label: Option<String>,
    /// Panes in order (at least one is created).
    #[serde(default)]
    pub panes: Vec<SeedPane>,
}

/// A seeded pane.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
pub struct SeedPane {
    /// Agent name.
    #[serde(default)]
    pub agent: Option<String>,
    /// Reported state (derivation to `done` applies).
    #[serde(default)]
    pub state: Option<String>,
    /// Initial output.
    #[serde(default)]
    pub output: Option<String>,
}

fn default_cwd() -> String {
    "/home/user".to_owned()
}

/// A request-level failure, turned into an error line.
struct Failure {
    /// Id to answer with (`""` for deserialization errors).
    id: String,
    /// Error code.
    code: HerdrErrorCode,
    /// Message.
    message: String,
}

/// The whole served session.
#[derive(Debug)]
pub struct Session {
    /// Protocol number `ping` reports.
    protocol: u32,
    /// Workspaces in order.
    workspaces: Vec<Workspace>,
    /// Tabs by id.
    tabs: BTreeMap<String, Tab>,
    /// Panes by id.
    panes: BTreeMap<String, Pane>,
    /// Focused workspace.
    focused_workspace: Option<String>,
    /// Next workspace number for ids.
    next_workspace: u32,
    /// Next terminal id suffix.
    next_terminal: u64,
    /// Global status-change counter.
    state_change_seq: u64,
}

impl Session {
    /// An empty session reporting `protocol` in `ping`.
    pub fn new(protocol: u32) -> Self {
        Self {
            protocol,
            workspaces: Vec::new(),
            tabs: BTreeMap::new(),
            panes: BTreeMap::new(),
            focused_workspace: None,
            next_workspace: 1,
            next_terminal: 0x0066_17e7_f6eb_7961,
            state_change_seq: 0,
        }
    }

    /// Creates the seeded workspaces (no events: nobody is subscribed yet).
    pub fn apply_seed(&mut self, seed: &Seed) -> Result<(), String> {
        for (index, ws) in seed.workspaces.iter().enumerate() {
            let (workspace_id, tab_id, first_pane, _) = self.create_workspace(Some(ws.label.clone()), Some(ws.cwd.clone()), index == 0);
            let tabs: Vec<SeedTab> =
                if ws.tabs.is_empty() { vec![SeedTab { label: None, panes: vec![SeedPane::default()] }] } else { ws.tabs.clone() };
            for (tab_index, tab) in tabs.iter().enumerate() {
                let (tab_id, root) = if tab_index == 0 {
                    if let (Some(label), Some(t)) = (&tab.label, self.tabs.get_mut(&tab_id)) {
                        t.label = label.clone();
                    }
                    (tab_id.clone(), first_pane.clone())
                } else {
                    let (tab, root, _) =
                        self.create_tab(&workspace_id, tab.label.clone(), Some(ws.cwd.clone()), false).map_err(|f| f.message)?;
                    (tab, root)
                };
                let wanted = tab.panes.len().max(1);
                let mut pane_ids = vec![root.clone()];
                for _ in 1..wanted {
                    let (pane, _) = self.split(&root, "right", false, None).map_err(|f| f.message)?;
                    pane_ids.push(pane);
                }
                let _ = tab_id;
                for (pane_id, seed_pane) in pane_ids.iter().zip(tab.panes.iter()) {
                    if let Some(output) = &seed_pane.output {
                        self.type_into(pane_id, output, &["enter".to_owned()]);
                    }
                    if let Some(agent) = &seed_pane.agent {
                        let state = match seed_pane.state.as_deref().unwrap_or("unknown") {
                            "idle" => PaneAgentState::Idle,
                            "working" => PaneAgentState::Working,
                            "blocked" => PaneAgentState::Blocked,
                            "unknown" => PaneAgentState::Unknown,
                            other => {
                                return Err(format!(
                                    "seed: pane state `{other}` is not one of idle, working, \
                                     blocked, unknown"
                                ))
                            }
                        };
                        self.report(pane_id, agent, state).map_err(|f| f.message)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Handles one request line (without its newline).
    pub fn handle_line(&mut self, line: &str) -> Reply {
        match self.dispatch(line) {
            Ok(reply) => reply,
            Err(f) => Reply { response: error_line(&f.id, f.code, &f.message), ..Reply::default() },
        }
    }

    fn dispatch(&mut self, line: &str) -> Result<Reply, Failure> {
        let invalid = |message: String| Failure {
            id: String::new(),
            code: HerdrErrorCode::InvalidRequest,
            message: format!("invalid request: {message} at line 1 column {}", line.len()),
        };
        let request: Value = serde_json::from_str(line).map_err(|e| Failure {
            id: String::new(),
            code: HerdrErrorCode::InvalidRequest,
            message: format!("invalid request: {e}"),
        })?;
        let id = match request.get("id").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => return Err(invalid("missing field `id`".to_owned())),
        };
        let Some(method) = request.get("method").and_then(Value::as_str) else {
            return Err(invalid("missing field `method`".to_owned()));
        };
        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        fn parse<T: serde::de::DeserializeOwned>(params: &Value, invalid: &dyn Fn(String) -> Failure) -> Result<T, Failure> {
            serde_json::from_value(params.clone()).map_err(|e| invalid(e.to_string()))
        }
        let done = |(result, events): (String, Vec<Event>)| Reply { response: result_line(&id, &result), events, ..Reply::default() };
        let with_id = |mut f: Failure| {
            if f.id == "\u{0}" {
                f.id = id.clone();
            }
            f
        };
        let ok = || OrderedObject::new().field("type", "ok").finish();
        let method = match HerdrMethod::parse(method) {
            Ok(method) => method,
            Err(_) if HERDR_SCHEMA_METHODS.contains(&method) => {
                return Err(Failure {
                    id,
                    code: HerdrErrorCode::NotImplemented,
                    message: format!("herdr-standin does not implement `{method}`; use a real Herdr 0.8.2 for it"),
                })
            }
            Err(_) => {
                let list = HERDR_SCHEMA_METHODS.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
                return Err(invalid(format!("unknown variant `{method}`, expected one of {list}")));
            }
        };
        let reply = match method {
            HerdrMethod::Ping => done((
                OrderedObject::new()
                    .field("type", "pong")
                    .field("version", "0.8.2")
                    .field("protocol", &self.protocol)
                    .field("capabilities", &CapabilitiesInfo { live_handoff: true, detached_server_daemon: true })
                    .finish(),
                vec![],
            )),
            HerdrMethod::WorkspaceList => {
                done((OrderedObject::new().field("type", "workspace_list").field("workspaces", &self.workspace_infos()).finish(), vec![]))
            }
            HerdrMethod::WorkspaceCreate => {
                let p: WorkspaceCreateParams = parse(&params, &invalid)?;
                let (ws, tab, pane, events) = self.create_workspace(p.label, p.cwd, p.focus);
                done((
                    OrderedObject::new()
                        .field("type", "workspace_created")
                        .field("workspace", &self.workspace_info(&ws))
                        .field("tab", &self.tab_info(&tab))
                        .field("root_pane", &self.pane_info(&pane))
                        .finish(),
                    events,
                ))
            }
            HerdrMethod::WorkspaceClose => {
                let p: WorkspaceTarget = parse(&params, &invalid)?;
                let events = self.close_workspace(&p.workspace_id).map_err(with_id)?;
                done((ok(), events))
            }
            HerdrMethod::TabCreate => {
                let p: TabCreateParams = parse(&params, &invalid)?;
                let workspace_id = p.workspace_id.or_else(|| self.focused_workspace.clone()).unwrap_or_default();
                let (tab, pane, events) = self.create_tab(&workspace_id, p.label, p.cwd, p.focus).map_err(with_id)?;
                done((
                    OrderedObject::new()
                        .field("type", "tab_created")
                        .field("tab", &self.tab_info(&tab))
                        .field("root_pane", &self.pane_info(&pane))
                        .finish(),
                    events,
                ))
            }
            HerdrMethod::TabList => {
                let p: WorkspaceFilter = parse(&params, &invalid)?;
                let tabs: Vec<TabInfo> =
                    self.ordered_tabs().into_iter().filter(|t| p.workspace_id.as_ref().is_none_or(|w| &t.workspace_id == w)).collect();
                done((OrderedObject::new().field("type", "tab_list").field("tabs", &tabs).finish(), vec![]))
            }
            HerdrMethod::PaneSplit => {
                let p: PaneSplitParams = parse(&params, &invalid)?;
                let target = p.target_pane_id.unwrap_or_default();
                let (pane, events) = self.split(&target, &p.direction, p.focus, p.cwd).map_err(with_id)?;
                done((OrderedObject::new().field("type", "pane_info").field("pane", &self.pane_info(&pane)).finish(), events))
            }
            HerdrMethod::PaneClose => {
                let p: PaneTarget = parse(&params, &invalid)?;
                let events = self.close_pane(&p.pane_id).map_err(with_id)?;
                done((ok(), events))
            }
            HerdrMethod::PaneList => {
                let p: WorkspaceFilter = parse(&params, &invalid)?;
                let panes: Vec<PaneInfo> = self
                    .ordered_panes()
                    .into_iter()
                    .filter(|pane| p.workspace_id.as_ref().is_none_or(|w| &pane.workspace_id == w))
                    .collect();
                done((OrderedObject::new().field("type", "pane_list").field("panes", &panes).finish(), vec![]))
            }
            HerdrMethod::AgentList => {
                done((OrderedObject::new().field("type", "agent_list").field("agents", &self.agent_infos()).finish(), vec![]))
            }
            HerdrMethod::AgentGet => {
                let p: AgentTarget = parse(&params, &invalid)?;
                let agent = self.agent_infos().into_iter().find(|a| a.pane_id == p.target);
                let Some(agent) = agent else {
                    return Err(Failure {
                        id,
                        code: HerdrErrorCode::AgentNotFound,
                        message: format!("agent target {} not found", p.target),
                    });
                };
                done((OrderedObject::new().field("type", "agent_info").field("agent", &agent).finish(), vec![]))
            }
            HerdrMethod::SessionSnapshot => done((self.snapshot(), vec![])),
            HerdrMethod::PaneRead => {
                let p: PaneReadParams = parse(&params, &invalid)?;
                let read = self.read(&p).map_err(with_id)?;
                done((OrderedObject::new().field("type", "pane_read").field("read", &read).finish(), vec![]))
            }
            HerdrMethod::PaneSendInput | HerdrMethod::PaneSendText | HerdrMethod::PaneSendKeys => {
                let p: PaneSendInputParams = parse(&params, &invalid)?;
                self.pane(&p.pane_id).map_err(with_id)?;
                self.type_into(&p.pane_id, &p.text, &p.keys);
                done((ok(), vec![]))
            }
            HerdrMethod::PaneReportAgent => {
                let p: PaneReportAgentParams = parse(&params, &invalid)?;
                let _ = (&p.source, &p.message);
                let events = self.report(&p.pane_id, &p.agent, p.state).map_err(with_id)?;
                done((ok(), events))
            }
            HerdrMethod::PaneReleaseAgent => {
                let p: PaneReleaseAgentParams = parse(&params, &invalid)?;
                let _ = (&p.source, &p.agent);
                let events = self.release(&p.pane_id).map_err(with_id)?;
                done((ok(), events))
            }
            HerdrMethod::EventsSubscribe => {
                let p: EventsSubscribeParams = parse(&params, &invalid)?;
                let mut initial_events = Vec::new();
                for sub in &p.subscriptions {
                    let per_pane = HerdrSubscription::parse(&sub.kind).is_ok_and(HerdrSubscription::is_per_pane);
                    if !per_pane {
                        continue;
                    }
                    let Some(pane_id) = &sub.pane_id else {
                        return Err(invalid("missing field `pane_id`".to_owned()));
                    };
                    let pane = self.pane(pane_id).map_err(with_id)?;
                    // The current status goes first (REFERENCE.md §1) when there is one.
                    if sub.kind == HerdrSubscription::PaneAgentStatusChanged && pane.agent.is_some() {
                        let event = status_event(pane);
                        let filter = SubscriptionFilter { subscriptions: vec![sub.clone()] };
                        if filter.wants(&event) {
                            initial_events.push(event);
                        }
                    }
                }
                Reply {
                    response: result_line(&id, &OrderedObject::new().field("type", "subscription_started").finish()),
                    subscribe: Some(SubscriptionFilter { subscriptions: p.subscriptions }),
                    initial_events,
                    ..Reply::default()
                }
            }
            HerdrMethod::AgentPrompt => {
                // Transcript §6/§10: blocked → agent_blocked; no agent or not settled →
                // agent_not_ready; unknown target → agent_not_found. Idle/done agents take
                // the prompt (typed into the pane); tests then drive the status with
                // `pane.report_agent`, as a real agent's hooks would.
                let p: AgentPromptParams = parse(&params, &invalid)?;
                let refuse = |code: HerdrErrorCode, message: String| Failure { id: id.clone(), code, message };
                let Some(pane) = self.panes.get(&p.target) else {
                    return Err(refuse(HerdrErrorCode::AgentNotFound, format!("agent target {} not found", p.target)));
                };
                if p.wait.as_ref().is_some_and(|w| !w.is_null()) {
                    return Err(refuse(
                        HerdrErrorCode::NotImplemented,
                        "herdr-standin does not implement `agent.prompt` with `wait`; use a real Herdr 0.8.2 for it".to_owned(),
                    ));
                }
                match (pane.agent.is_some(), pane.status) {
                    (true, AgentStatus::Blocked) => {
                        return Err(refuse(
                            HerdrErrorCode::AgentBlocked,
                            format!("agent {} is blocked and requires interactive input", p.target),
                        ))
                    }
                    (true, AgentStatus::Idle | AgentStatus::Done) => {}
                    _ => return Err(refuse(HerdrErrorCode::AgentNotReady, format!("agent {} is not an active named agent", p.target))),
                }
                self.type_into(&p.target, &p.text, &["enter".to_owned()]);
                let agent = self.agent_infos().into_iter().find(|a| a.pane_id == p.target);
                done((OrderedObject::new().field("type", "agent_prompted").field("agent", &agent).finish(), vec![]))
            }
            HerdrMethod::StandinInjectLines => {
                let p: InjectLinesParams = parse(&params, &invalid)?;
                let mut lines = p.lines;
                if let Some(bytes) = p.oversized_bytes {
                    let padding = "x".repeat(bytes.saturating_sub(60));
                    lines.push(format!("{{\"event\":\"pane.agent_status_changed\",\"data\":{{\"pad\":\"{padding}\"}}}}"));
                }
                Reply { response: result_line(&id, &ok()), inject_lines: lines, ..Reply::default() }
            }
        };
        Ok(reply)
    }

    // ----- queries -------------------------------------------------------------------

    fn pane(&self, pane_id: &str) -> Result<&Pane, Failure> {
        self.panes.get(pane_id).ok_or_else(|| Failure {
            id: "\u{0}".to_owned(),
            code: HerdrErrorCode::PaneNotFound,
            message: format!("pane {pane_id} not found"),
        })
    }

    fn workspace_index(&self, workspace_id: &str) -> Result<usize, Failure> {
        self.workspaces.iter().position(|w| w.id == workspace_id).ok_or_else(|| Failure {
            id: "\u{0}".to_owned(),
            code: HerdrErrorCode::WorkspaceNotFound,
            message: format!("workspace {workspace_id} not found"),
        })
    }

    fn unseen(&self, pane: &Pane) -> bool {
        let workspace_focused = self.focused_workspace.as_deref() == Some(&pane.workspace_id);
        let tab_active = self.workspaces.iter().any(|w| w.id == pane.workspace_id && w.active_tab == pane.tab_id);
        !(workspace_focused && tab_active)
    }

    fn pane_focused(&self, pane: &Pane) -> bool {
        let tab_active = self.workspaces.iter().any(|w| w.id == pane.workspace_id && w.active_tab == pane.tab_id);
        tab_active && self.tabs.get(&pane.tab_id).is_some_and(|t| t.focused_pane == pane.id)
    }

    fn viewport_rows(&self, workspace_id: &str) -> u32 {
        let tab_count = self.workspaces.iter().find(|w| w.id == workspace_id).map_or(1, |w| w.tabs.len());
        if tab_count > 1 {
            SCREEN_ROWS_SINGLE_TAB - 1
        } else {
            SCREEN_ROWS_SINGLE_TAB
        }
    }

    fn aggregate<'a>(panes: impl Iterator<Item = &'a Pane>) -> AgentStatus {
        panes.map(|p| p.status).max_by_key(|s| s.attention_rank()).unwrap_or(AgentStatus::Unknown)
    }

    fn workspace_info(&self, workspace_id: &str) -> Option<WorkspaceInfo> {
        let (index, ws) = self.workspaces.iter().enumerate().find(|(_, w)| w.id == workspace_id)?;
        let panes = self.panes.values().filter(|p| p.workspace_id == ws.id);
        Some(WorkspaceInfo {
            workspace_id: ws.id.clone(),
            number: index as u32 + 1,
            label: ws.label.clone(),
            focused: self.focused_workspace.as_deref() == Some(&ws.id),
            pane_count: self.panes.values().filter(|p| p.workspace_id == ws.id).count() as u32,
            tab_count: ws.tabs.len() as u32,
            active_tab_id: ws.active_tab.clone(),
            agent_status: Self::aggregate(panes),
        })
    }

    fn workspace_infos(&self) -> Vec<WorkspaceInfo> {
        self.workspaces.iter().filter_map(|w| self.workspace_info(&w.id)).collect()
    }

    fn tab_info(&self, tab_id: &str) -> Option<TabInfo> {
        let tab = self.tabs.get(tab_id)?;
        let ws = self.workspaces.iter().find(|w| w.id == tab.workspace_id)?;
        let number = ws.tabs.iter().position(|t| t == tab_id).unwrap_or(0) as u32 + 1;
        Some(TabInfo {
            tab_id: tab.id.clone(),
            workspace_id: tab.workspace_id.clone(),
            number,
            label: tab.label.clone(),
            focused: ws.active_tab == tab.id,
            pane_count: tab.panes.len() as u32,
            agent_status: Self::aggregate(tab.panes.iter().filter_map(|p| self.panes.get(p))),
        })
    }

    fn ordered_tabs(&self) -> Vec<TabInfo> {
        self.workspaces.iter().flat_map(|w| w.tabs.iter()).filter_map(|t| self.tab_info(t)).collect()
    }

    fn pane_info(&self, pane_id: &str) -> Option<PaneInfo> {
        let pane = self.panes.get(pane_id)?;
        Some(PaneInfo {
            pane_id: pane.id.clone(),
            terminal_id: pane.terminal_id.clone(),
            workspace_id: pane.workspace_id.clone(),
            tab_id: pane.tab_id.clone(),
            focused: self.pane_focused(pane),
            cwd: pane.cwd.clone(),
            foreground_cwd: pane.cwd.clone(),
            agent: pane.agent.clone(),
            agent_status: pane.status,
            scroll: ScrollInfo { offset_from_bottom: 0, max_offset_from_bottom: 0, viewport_rows: self.viewport_rows(&pane.workspace_id) },
            revision: 0,
        })
    }

    fn ordered_pane_ids(&self) -> Vec<String> {
        self.workspaces.iter().flat_map(|w| w.tabs.iter()).filter_map(|t| self.tabs.get(t)).flat_map(|t| t.panes.iter().cloned()).collect()
    }

    fn ordered_panes(&self) -> Vec<PaneInfo> {
        self.ordered_pane_ids().iter().filter_map(|p| self.pane_info(p)).collect()
    }

    fn agent_infos(&self) -> Vec<AgentInfo> {
        self.ordered_pane_ids()
            .iter()
            .filter_map(|id| self.panes.get(id))
            .filter_map(|pane| {
                Some(AgentInfo {
                    terminal_id: pane.terminal_id.clone(),
                    agent: pane.agent.clone()?,
                    agent_status: pane.status,
                    workspace_id: pane.workspace_id.clone(),
                    tab_id: pane.tab_id.clone(),
                    pane_id: pane.id.clone(),
                    focused: self.pane_focused(pane),
                    state_change_seq: pane.state_change_seq,
                    cwd: pane.cwd.clone(),
                    foreground_cwd: pane.cwd.clone(),
                    revision: 0,
                })
            })
            .collect()
    }

    fn layout(&self, tab_id: &str) -> Option<LayoutInfo> {
        let tab = self.tabs.get(tab_id)?;
        let rows = self.viewport_rows(&tab.workspace_id);
        let area = Rect { x: AREA_X, y: SCREEN_ROWS_SINGLE_TAB - rows, width: AREA_WIDTH, height: rows };
        let count = tab.panes.len().max(1) as u32;
        let width = AREA_WIDTH / count;
        let panes = tab
            .panes
            .iter()
            .enumerate()
            .map(|(i, p)| LayoutPane {
                pane_id: p.clone(),
                focused: *p == tab.focused_pane,
                rect: Rect { x: AREA_X + width * i as u32, y: area.y, width, height: rows },
            })
            .collect();
        let splits = (1..count)
            .map(|i| LayoutSplit {
                id: if i == 1 { "split_0_root".to_owned() } else { format!("split_{}", i - 1) },
                direction: "right".to_owned(),
                ratio: 1.0 / f64::from(count - i + 1),
                rect: Rect { x: AREA_X + width * (i - 1), y: area.y, width: AREA_WIDTH - width * (i - 1), height: rows },
            })
            .collect();
        Some(LayoutInfo {
            workspace_id: tab.workspace_id.clone(),
            tab_id: tab.id.clone(),
            zoomed: false,
            area,
            focused_pane_id: tab.focused_pane.clone(),
            panes,
            splits,
        })
    }

    fn snapshot(&self) -> String {
        let focused_ws = self.focused_workspace.clone();
        let focused_tab = focused_ws.as_ref().and_then(|w| self.workspaces.iter().find(|x| &x.id == w)).map(|w| w.active_tab.clone());
        let focused_pane = focused_tab.as_ref().and_then(|t| self.tabs.get(t)).map(|t| t.focused_pane.clone());
        let layouts: Vec<LayoutInfo> = self.workspaces.iter().flat_map(|w| w.tabs.iter()).filter_map(|t| self.layout(t)).collect();
        let snapshot = OrderedObject::new()
            .field("version", "0.8.2")
            .field("protocol", &self.protocol)
            .field("focused_workspace_id", &focused_ws)
            .field("focused_tab_id", &focused_tab)
            .field("focused_pane_id", &focused_pane)
            .field("workspaces", &self.workspace_infos())
            .field("tabs", &self.ordered_tabs())
            .field("panes", &self.ordered_panes())
            .field("layouts", &layouts)
            .field("agents", &self.agent_infos())
            .finish();
        OrderedObject::new().field("type", "session_snapshot").raw("snapshot", &snapshot).finish()
    }

    fn read(&self, p: &PaneReadParams) -> Result<ReadInfo, Failure> {
        let pane = self.pane(&p.pane_id)?;
        let rows_on_screen = self.viewport_rows(&pane.workspace_id) as usize;
        let mut rows: Vec<&str> = pane.lines.iter().map(String::as_str).collect();
        rows.push(pane.current.as_str());
        // Like Herdr, a short screen is padded with blank rows, so `lines` below the
        // screen height can count only blanks (the `""` + truncated gotcha).
        while rows.len() < rows_on_screen {
            rows.push("");
        }
        // `visible` is the screen (the last screen-height rows), read from its top;
        // `recent*` count `lines` rows up from the bottom of screen + scrollback.
        let (mut picked, truncated): (Vec<&str>, bool) = if p.source == ReadSource::Visible {
            let screen = &rows[rows.len().saturating_sub(rows_on_screen)..];
            let take = p.lines.map_or(screen.len(), |n| (n as usize).min(screen.len()));
            (screen[..take].to_vec(), false)
        } else {
            let window = p.lines.map_or(rows.len(), |n| n as usize);
            (rows[rows.len().saturating_sub(window)..].to_vec(), window < rows.len())
        };
        while picked.last().is_some_and(|r| r.is_empty()) {
            picked.pop();
        }
        let separator = if p.format == ReadFormat::Ansi { "\r\n" } else { "\n" };
        let mut text = picked.join(separator);
        if p.source == ReadSource::Recent && !text.is_empty() {
            text.push('\n');
        }
        Ok(ReadInfo {
            pane_id: pane.id.clone(),
            workspace_id: pane.workspace_id.clone(),
            tab_id: pane.tab_id.clone(),
            source: p.source,
            format: p.format,
            text,
            revision: 0,
            truncated,
        })
    }

    // ----- mutations -----------------------------------------------------------------

    fn new_pane(&mut self, workspace_id: &str, tab_id: &str, cwd: String) -> String {
        let number = self.workspaces.iter_mut().find(|w| w.id == workspace_id).map_or(0, |w| {
            w.next_pane += 1;
            w.next_pane
        });
        let id = format!("{workspace_id}:p{number}");
        self.next_terminal += 0x1_0000 + 0x1c1;
        let pane = Pane {
            id: id.clone(),
            terminal_id: format!("term_{:014x}", self.next_terminal),
            workspace_id: workspace_id.to_owned(),
            tab_id: tab_id.to_owned(),
            cwd,
            agent: None,
            status: AgentStatus::Unknown,
            state_change_seq: 0,
            lines: Vec::new(),
            current: String::new(),
        };
        self.panes.insert(id.clone(), pane);
        id
    }

    fn pane_event(&self, name: &str, pane_id: &str) -> Event {
        let pane = serde_json::to_value(self.pane_info(pane_id)).unwrap_or(Value::Null);
        Event { name: name.to_owned(), data: json!({"type": name, "pane": pane}) }
    }

    fn layout_event(&self, tab_id: &str) -> Event {
        let layout = serde_json::to_value(self.layout(tab_id)).unwrap_or(Value::Null);
        Event { name: "layout_updated".to_owned(), data: json!({"type": "layout_updated", "layout": layout}) }
    }

    fn create_workspace(&mut self, label: Option<String>, cwd: Option<String>, focus: bool) -> (String, String, String, Vec<Event>) {
        let workspace_id = format!("w{}", self.next_workspace);
        self.next_workspace += 1;
        let tab_id = format!("{workspace_id}:t1");
        let cwd = cwd.unwrap_or_else(default_cwd);
        self.workspaces.push(Workspace {
            id: workspace_id.clone(),
            label: label.unwrap_or_else(|| (self.workspaces.len() + 1).to_string()),
            tabs: vec![tab_id.clone()],
            active_tab: tab_id.clone(),
            next_tab: 1,
            next_pane: 0,
        });
        let pane_id = self.new_pane(&workspace_id, &tab_id, cwd);
        self.tabs.insert(
            tab_id.clone(),
            Tab {
                id: tab_id.clone(),
                workspace_id: workspace_id.clone(),
                label: "1".to_owned(),
                panes: vec![pane_id.clone()],
                focused_pane: pane_id.clone(),
            },
        );
        if focus || self.focused_workspace.is_none() {
            self.focused_workspace = Some(workspace_id.clone());
        }
        let ws = serde_json::to_value(self.workspace_info(&workspace_id)).unwrap_or(Value::Null);
        let tab = serde_json::to_value(self.tab_info(&tab_id)).unwrap_or(Value::Null);
        let mut events = vec![Event { name: "workspace_created".to_owned(), data: json!({"type": "workspace_created", "workspace": ws}) }];
        if focus {
            events.push(Event {
                name: "workspace_focused".to_owned(),
                data: json!({"type": "workspace_focused", "workspace_id": workspace_id}),
            });
        }
        events.push(Event { name: "tab_created".to_owned(), data: json!({"type": "tab_created", "tab": tab}) });
        if focus {
            events.push(Event {
                name: "tab_focused".to_owned(),
                data: json!({"type": "tab_focused", "tab_id": tab_id, "workspace_id": workspace_id}),
            });
        }
        events.push(self.pane_event("pane_created", &pane_id));
        if focus {
            events.push(Event {
                name: "pane_focused".to_owned(),
                data: json!({"type": "pane_focused", "pane_id": pane_id, "workspace_id": workspace_id}),
            });
        }
        events.push(self.layout_event(&tab_id));
        (workspace_id, tab_id, pane_id, events)
    }

    fn create_tab(
        &mut self,
        workspace_id: &str,
        label: Option<String>,
        cwd: Option<String>,
        focus: bool,
    ) -> Result<(String, String, Vec<Event>), Failure> {
        let index = self.workspace_index(workspace_id)?;
        let ws = &mut self.workspaces[index];
        ws.next_tab += 1;
        let tab_id = format!("{workspace_id}:t{}", ws.next_tab);
        ws.tabs.push(tab_id.clone());
        let number = ws.tabs.len();
        if focus {
            ws.active_tab = tab_id.clone();
        }
        let pane_id = self.new_pane(workspace_id, &tab_id, cwd.unwrap_or_else(default_cwd));
        self.tabs.insert(
            tab_id.clone(),
            Tab {
                id: tab_id.clone(),
                workspace_id: workspace_id.to_owned(),
                label: label.unwrap_or_else(|| number.to_string()),
                panes: vec![pane_id.clone()],
                focused_pane: pane_id.clone(),
            },
        );
        let tab = serde_json::to_value(self.tab_info(&tab_id)).unwrap_or(Value::Null);
        let events = vec![
            Event { name: "tab_created".to_owned(), data: json!({"type": "tab_created", "tab": tab}) },
            self.pane_event("pane_created", &pane_id),
            self.layout_event(&tab_id),
        ];
        Ok((tab_id, pane_id, events))
    }

    fn split(&mut self, target: &str, direction: &str, focus: bool, cwd: Option<String>) -> Result<(String, Vec<Event>), Failure> {
        let target = self.pane(target)?.clone();
        let pane_id = self.new_pane(&target.workspace_id, &target.tab_id, cwd.unwrap_or(target.cwd.clone()));
        let _ = direction;
        if let Some(tab) = self.tabs.get_mut(&target.tab_id) {
            let at = tab.panes.iter().position(|p| *p == target.id).map_or(tab.panes.len(), |i| i + 1);
            tab.panes.insert(at, pane_id.clone());
            if focus {
                tab.focused_pane = pane_id.clone();
            }
        }
        let events = vec![self.pane_event("pane_created", &pane_id), self.layout_event(&target.tab_id)];
        Ok((pane_id, events))
    }

    fn close_pane(&mut self, pane_id: &str) -> Result<Vec<Event>, Failure> {
        let pane = self.pane(pane_id)?.clone();
        let mut events = vec![Event {
            name: "pane_closed".to_owned(),
            data: json!({"type": "pane_closed", "pane_id": pane.id, "workspace_id": pane.workspace_id}),
        }];
        self.panes.remove(pane_id);
        let tab_now_empty = match self.tabs.get_mut(&pane.tab_id) {
            Some(tab) => {
                tab.panes.retain(|p| p != pane_id);
                if tab.focused_pane == pane_id {
                    tab.focused_pane = tab.panes.first().cloned().unwrap_or_default();
                }
                tab.panes.is_empty()
            }
            None => false,
        };
        if !tab_now_empty {
            events.push(self.layout_event(&pane.tab_id));
            return Ok(events);
        }
        self.tabs.remove(&pane.tab_id);
        events.push(Event {
            name: "tab_closed".to_owned(),
            data: json!({"type": "tab_closed", "tab_id": pane.tab_id, "workspace_id": pane.workspace_id}),
        });
        let index = self.workspace_index(&pane.workspace_id)?;
        let ws = &mut self.workspaces[index];
        ws.tabs.retain(|t| *t != pane.tab_id);
        if ws.tabs.is_empty() {
            self.workspaces.remove(index);
            if self.focused_workspace.as_deref() == Some(&pane.workspace_id) {
                self.focused_workspace = self.workspaces.first().map(|w| w.id.clone());
            }
            events.push(Event {
                name: "workspace_closed".to_owned(),
                data: json!({"type": "workspace_closed", "workspace": null, "workspace_id": pane.workspace_id}),
            });
        } else if ws.active_tab == pane.tab_id {
            ws.active_tab = ws.tabs[0].clone();
        }
        Ok(events)
    }

    fn close_workspace(&mut self, workspace_id: &str) -> Result<Vec<Event>, Failure> {
        let index = self.workspace_index(workspace_id)?;
        let pane_ids: Vec<String> =
            self.workspaces[index].tabs.iter().filter_map(|t| self.tabs.get(t)).flat_map(|t| t.panes.clone()).collect();
        let mut events = Vec::new();
        for pane_id in pane_ids {
            events.extend(self.close_pane(&pane_id)?.into_iter().filter(|e| e.name != "layout_updated"));
        }
        Ok(events)
    }

    fn type_into(&mut self, pane_id: &str, text: &str, keys: &[String]) {
        let Some(pane) = self.panes.get_mut(pane_id) else { return };
        let mut parts = text.split('\n');
        if let Some(first) = parts.next() {
            pane.current.push_str(first);
        }
        for part in parts {
            pane.lines.push(std::mem::take(&mut pane.current));
            pane.current.push_str(part);
        }
        for key in keys {
            if key == "enter" {
                pane.lines.push(std::mem::take(&mut pane.current));
            }
        }
    }

    fn set_status(&mut self, pane_id: &str, status: AgentStatus) -> Option<Event> {
        let pane = self.panes.get(pane_id)?;
        if pane.status == status {
            return None;
        }
        self.state_change_seq += 1;
        let seq = self.state_change_seq;
        let pane = self.panes.get_mut(pane_id)?;
        pane.status = status;
        pane.state_change_seq = seq;
        Some(status_event(pane))
    }

    fn report(&mut self, pane_id: &str, agent: &str, state: PaneAgentState) -> Result<Vec<Event>, Failure> {
        let pane = self.pane(pane_id)?.clone();
        let mut events = Vec::new();
        if pane.agent.as_deref() != Some(agent) {
            if let Some(p) = self.panes.get_mut(pane_id) {
                p.agent = Some(agent.to_owned());
            }
            events.push(Event {
                name: "pane_agent_detected".to_owned(),
                data: json!({"type": "pane_agent_detected", "agent": agent,
                    "pane_id": pane.id, "workspace_id": pane.workspace_id}),
            });
        }
        let status = match state {
            PaneAgentState::Idle if self.unseen(&pane) => AgentStatus::Done,
            PaneAgentState::Idle => AgentStatus::Idle,
            PaneAgentState::Working => AgentStatus::Working,
            PaneAgentState::Blocked => AgentStatus::Blocked,
            PaneAgentState::Unknown => AgentStatus::Unknown,
        };
        events.extend(self.set_status(pane_id, status));
        Ok(events)
    }

    fn release(&mut self, pane_id: &str) -> Result<Vec<Event>, Failure> {
        let pane = self.pane(pane_id)?.clone();
        let mut events: Vec<Event> = self.set_status(pane_id, AgentStatus::Unknown).into_iter().collect();
        if let Some(agent) = pane.agent {
            events.push(Event {
                name: "pane_agent_detected".to_owned(),
                data: json!({"type": "pane_agent_detected", "agent": agent, "final_status": "unknown",
                    "pane_id": pane.id, "released": true, "workspace_id": pane.workspace_id}),
            });
        }
        if let Some(p) = self.panes.get_mut(pane_id) {
            p.agent = None;
        }
        Ok(events)
    }
}

/// `ping`'s capabilities.
#[derive(Debug, Serialize)]
struct CapabilitiesInfo {
    /// Live handoff supported.
    live_handoff: bool,
    /// Detached daemon supported.
    detached_server_daemon: bool,
}

fn status_event(pane: &Pane) -> Event {
    Event {
        name: HerdrSubscription::PaneAgentStatusChanged.event_name(),
        data: json!({"agent": pane.agent, "agent_status": pane.status,
            "pane_id": pane.id, "workspace_id": pane.workspace_id}),
    }
}

//! Herdr 0.8.2's own socket protocol (protocol 20), as far as the companion calls it and
//! `herdr-standin` serves it (`../shared/herdr/transcript.md`, REFERENCE.md §1). Herdr's
//! envelopes are the same three shapes; only the names differ, and they are listed here so
//! that neither side compares them as strings.

use crate::names::wire_names;

wire_names! {
    /// A Herdr method the companion calls or the stand-in serves.
    pub enum HerdrMethod {
        /// Server version, protocol and capabilities.
        Ping = "ping",
        /// The whole session: workspaces, tabs, panes, layouts, agents.
        SessionSnapshot = "session.snapshot",
        /// List workspaces.
        WorkspaceList = "workspace.list",
        /// Create a workspace.
        WorkspaceCreate = "workspace.create",
        /// Close a workspace.
        WorkspaceClose = "workspace.close",
        /// Create a tab.
        TabCreate = "tab.create",
        /// List tabs.
        TabList = "tab.list",
        /// Split a pane.
        PaneSplit = "pane.split",
        /// Close a pane.
        PaneClose = "pane.close",
        /// List panes.
        PaneList = "pane.list",
        /// List agents.
        AgentList = "agent.list",
        /// One agent.
        AgentGet = "agent.get",
        /// Read a pane's text.
        PaneRead = "pane.read",
        /// Type text and keys into a pane.
        PaneSendInput = "pane.send_input",
        /// Type text into a pane.
        PaneSendText = "pane.send_text",
        /// Press keys in a pane.
        PaneSendKeys = "pane.send_keys",
        /// A hook reports an agent's state.
        PaneReportAgent = "pane.report_agent",
        /// A hook releases a pane's agent.
        PaneReleaseAgent = "pane.release_agent",
        /// Subscribe to events (the connection stays open).
        EventsSubscribe = "events.subscribe",
        /// Send a prompt to an agent.
        AgentPrompt = "agent.prompt",
        /// Stand-in only: write raw lines to every open subscription (tests of junk input).
        StandinInjectLines = "standin.inject_lines",
    }
}

/// Every method name Herdr 0.8.2 (protocol 20) knows, in the order of its schema; the
/// stand-in's "unknown variant" error lists them like Herdr does, and answers the ones it
/// does not implement with `not_implemented`.
pub const HERDR_SCHEMA_METHODS: &[&str] = &[
    "ping",
    "server.stop",
    "server.live_handoff",
    "server.reload_config",
    "server.agent_manifests",
    "server.reload_agent_manifests",
    "notification.show",
    "client.window_title.set",
    "client.window_title.clear",
    "session.snapshot",
    "workspace.create",
    "workspace.list",
    "workspace.get",
    "workspace.focus",
    "workspace.rename",
    "workspace.move",
    "workspace.move_block",
    "workspace.report_metadata",
    "workspace.close",
    "worktree.list",
    "worktree.create",
    "worktree.open",
    "worktree.remove",
    "tab.create",
    "tab.list",
    "tab.get",
    "tab.focus",
    "tab.rename",
    "tab.move",
    "tab.close",
    "agent.list",
    "agent.get",
    "agent.read",
    "agent.explain",
    "agent.send_keys",
    "agent.rename",
    "agent.view.set",
    "agent.view.clear",
    "agent.focus",
    "agent.start",
    "agent.prompt",
    "agent.wait",
    "pane.split",
    "pane.swap",
    "pane.move",
    "pane.zoom",
    "pane.layout",
    "pane.process_info",
    "layout.export",
    "layout.apply",
    "layout.set_split_ratio",
    "pane.neighbor",
    "pane.edges",
    "pane.focus_direction",
    "pane.resize",
    "pane.list",
    "pane.current",
    "pane.get",
    "pane.focus",
    "pane.input.set",
    "pane.rename",
    "pane.send_text",
    "pane.send_keys",
    "pane.send_input",
    "pane.read",
    "pane.graphics.set",
    "pane.graphics.clear",
    "pane.graphics.info",
    "pane.report_agent",
    "pane.report_agent_session",
    "pane.report_metadata",
    "pane.clear_agent_authority",
    "pane.release_agent",
    "pane.close",
    "popup.close",
    "events.subscribe",
    "events.wait",
    "pane.wait_for_output",
    "integration.install",
    "integration.uninstall",
    "plugin.link",
    "plugin.list",
    "plugin.unlink",
    "plugin.enable",
    "plugin.disable",
    "plugin.action.list",
    "plugin.action.invoke",
    "plugin.log.list",
    "plugin.pane.open",
    "plugin.pane.focus",
    "plugin.pane.close",
];

wire_names! {
    /// A Herdr error code.
    pub enum HerdrErrorCode {
        /// The request did not deserialize (answered with `"id":""`).
        InvalidRequest = "invalid_request",
        /// Stand-in only: a schema method it does not implement.
        NotImplemented = "not_implemented",
        /// No agent at that target.
        AgentNotFound = "agent_not_found",
        /// No such pane.
        PaneNotFound = "pane_not_found",
        /// No such workspace.
        WorkspaceNotFound = "workspace_not_found",
        /// Not found (generic).
        NotFound = "not_found",
        /// The agent waits for interactive input.
        AgentBlocked = "agent_blocked",
        /// The agent is busy or not a recognised agent.
        AgentNotReady = "agent_not_ready",
    }
}

wire_names! {
    /// A Herdr subscription kind (`events.subscribe {subscriptions:[{type}]}`).
    pub enum HerdrSubscription {
        /// A workspace was created.
        WorkspaceCreated = "workspace.created",
        /// A workspace changed.
        WorkspaceUpdated = "workspace.updated",
        /// A workspace was renamed.
        WorkspaceRenamed = "workspace.renamed",
        /// A workspace was closed.
        WorkspaceClosed = "workspace.closed",
        /// A tab was created.
        TabCreated = "tab.created",
        /// A tab was closed.
        TabClosed = "tab.closed",
        /// A pane was created.
        PaneCreated = "pane.created",
        /// A pane changed.
        PaneUpdated = "pane.updated",
        /// A pane was closed.
        PaneClosed = "pane.closed",
        /// A pane's process exited.
        PaneExited = "pane.exited",
        /// An agent was detected (or released) on a pane.
        PaneAgentDetected = "pane.agent_detected",
        /// Per pane (`pane_id` required): its agent status changed.
        PaneAgentStatusChanged = "pane.agent_status_changed",
        /// Per pane (`pane_id` required): its output matched.
        PaneOutputMatched = "pane.output_matched",
    }
}

impl HerdrSubscription {
    /// True for the kinds that need a `pane_id`.
    pub const fn is_per_pane(self) -> bool {
        matches!(self, HerdrSubscription::PaneAgentStatusChanged | HerdrSubscription::PaneOutputMatched)
    }

    /// The name of the events this kind delivers: the per-pane status event keeps its
    /// dotted name; every other kind's event is the kind with `.` replaced by `_`.
    pub fn event_name(self) -> String {
        match self {
            HerdrSubscription::PaneAgentStatusChanged => self.as_str().to_owned(),
            other => other.as_str().replace('.', "_"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_herdr_method_but_the_stand_in_control_is_in_herdrs_schema() {
        for method in HerdrMethod::ALL {
            let in_schema = HERDR_SCHEMA_METHODS.contains(&method.as_str());
            assert_eq!(in_schema, *method != HerdrMethod::StandinInjectLines, "{method}");
        }
    }

    #[test]
    fn subscription_kinds_name_their_events_as_herdr_does() {
        assert_eq!(HerdrSubscription::PaneAgentStatusChanged.event_name(), "pane.agent_status_changed");
        assert_eq!(HerdrSubscription::WorkspaceCreated.event_name(), "workspace_created");
        assert!(HerdrSubscription::PaneOutputMatched.is_per_pane());
        assert!(!HerdrSubscription::PaneClosed.is_per_pane());
        assert_eq!(HerdrErrorCode::parse("agent_blocked"), Ok(HerdrErrorCode::AgentBlocked));
        assert!(HerdrErrorCode::parse("weird").is_err());
    }
}

//! The handoff package's wire types (docs/PROTOCOL.md "Handoff package", SPEC X4, X5, X11):
//! the params of `herdr_mcp.browser_handoff.prepare` and the parts of its answer.
//!
//! The method keeps herdr-mcp's name, params and result fields (HERDR-MCP-FACTS §1.4), so a
//! planner or an extension that knows herdr-mcp's package reads this one unchanged; the
//! result adds the runtime protocol's `type`. The params refuse unknown keys.
//!
//! Invariants: the package carries one message, and `handoff.message`,
//! `automatic_delivery.params.message` and `manual_delivery.copy_prompt` are the same bytes
//! (X4); the seed block it ends with is [`SEED_BLOCK_START`] … [`SEED_BLOCK_END`], never a
//! `HERDR_HANDOFF_V1` packet ([`LEGACY_PACKET_MARKER`], read for restore only, X11).

use serde::{Deserialize, Serialize};

use crate::names::wire_names;

/// Longest `continuity_id`, in characters.
pub const MAX_HANDOFF_CONTINUITY_ID_CHARS: usize = 160;
/// Longest `source_url`, in characters.
pub const MAX_HANDOFF_SOURCE_URL_CHARS: usize = 2048;
/// Longest `objective`, in characters.
pub const MAX_HANDOFF_OBJECTIVE_CHARS: usize = 1024;
/// Longest `work_chain_id`, in characters.
pub const MAX_HANDOFF_WORK_CHAIN_ID_CHARS: usize = 128;
/// Longest `handoff_id`, in characters.
pub const MAX_HANDOFF_ID_CHARS: usize = 96;
/// Longest message the package carries, in characters (every param and every seed fact at
/// its cap fits).
pub const MAX_HANDOFF_MESSAGE_CHARS: usize = 20_000;
/// Most queued messages `browser_handoff.prepare` takes (`queue`), and the seed lists.
pub const MAX_HANDOFF_QUEUE_ITEMS: usize = 5;
/// Most characters of one queued message the seed quotes (a longer one is cut, marked `…`).
pub const SEED_QUEUE_ITEM_CHARS: usize = 200;
/// Most characters of the goal (the chain's first user turn) the seed quotes.
pub const SEED_GOAL_CHARS: usize = 800;
/// How many of the chain's newest turns the seed quotes.
pub const SEED_NEWEST_TURNS: usize = 4;
/// Most characters of one newest turn the seed quotes.
pub const SEED_TURN_CHARS: usize = 400;
/// Most panes of the workspace the seed lists (with their agent, status, cwd and Git).
pub const SEED_PANES: usize = 6;
/// Most open inbox tasks the seed lists (the oldest first; the count names the rest).
pub const SEED_TASKS: usize = 10;
/// Most characters of a task's prompt preview the seed quotes.
pub const SEED_TASK_PREVIEW_CHARS: usize = 120;

/// The seed block's opening marker: `[HERDR_CONTINUITY_REF id=<handoff_id> continuity_id=<id>]`.
pub const SEED_BLOCK_START: &str = "[HERDR_CONTINUITY_REF";
/// The seed block's closing marker.
pub const SEED_BLOCK_END: &str = "[END_HERDR_CONTINUITY_REF]";
/// herdr-mcp's legacy packet marker: read to restore old transfers, never written (X11).
pub const LEGACY_PACKET_MARKER: &str = "HERDR_HANDOFF_V1";
/// The start of the extension's delivery marker line (`[herdr-continuity <delivery id>]`,
/// docs/PROTOCOL.md): a seed that carried one in its text could confirm another delivery.
pub const DELIVERY_MARKER_START: &str = "[herdr-continuity ";

wire_names! {
    /// The chat service a handoff targets.
    pub enum HandoffProvider {
        /// chatgpt.com (a new conversation in the source's Project, or outside any).
        Chatgpt = "chatgpt",
        /// chat.z.ai (a new conversation; the extension moves its binding, X10).
        Zai = "zai",
        /// chat.deepseek.com (journaled; the extension offers no automatic handoff there:
        /// the package's Copy Prompt is the way).
        Deepseek = "deepseek",
    }
}

wire_names! {
    /// The method a browser controller runs to deliver the seed automatically.
    pub enum HandoffDeliveryMethod {
        /// herdr-mcp's browser session method: open a new chat and submit the message.
        BrowserSessionCreate = "herdr_mcp.browser_session.create",
    }
}

/// Params of `herdr_mcp.browser_handoff.prepare`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoffPrepareParams {
    /// The journal chain to carry on (it must exist, C2).
    pub continuity_id: String,
    /// The source conversation's full ChatGPT URL.
    pub source_url: String,
    /// What the new conversation is for, in the user's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// The Work Memory chain the work belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_chain_id: Option<String>,
    /// The transfer's id; absent = derived from the other params (a retry gets the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_id: Option<String>,
    /// The source chat's bound workspace: the seed lists its panes, agents and Git state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// The source chat's inbox ref: the seed lists its open tasks (never another ref's, I3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_session_ref: Option<String>,
    /// The source's unsent queued messages, oldest first (≤ [`MAX_HANDOFF_QUEUE_ITEMS`]);
    /// they move to the new conversation at the cut-over (Q9).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue: Vec<String>,
}

/// A registered browser session the seed could be delivered through (herdr-mcp's shape;
/// this companion keeps no such registry, so it answers `null`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRoute {
    /// The session.
    pub session_ref: String,
    /// Its chat service.
    pub provider: HandoffProvider,
    /// The browser endpoint.
    pub endpoint_ref: Option<String>,
    /// The signed-in account.
    pub account_ref: Option<String>,
    /// The Project or space.
    pub space_ref: Option<String>,
    /// What a person calls it.
    pub display_label: Option<String>,
    /// The session generation a delivery must still find.
    pub expected_generation: Option<u64>,
}

/// Where the new conversation opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffTarget {
    /// The chat service.
    pub provider: HandoffProvider,
    /// The source's ChatGPT Project (`g-p-<32 hex>`), `null` outside a Project.
    pub project_id: Option<String>,
}

/// The transfer itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffPackage {
    /// The transfer's id (also in the seed block).
    pub handoff_id: String,
    /// The chain the new conversation continues.
    pub continuity_id: String,
    /// The source conversation's URL, exactly as given.
    pub source_url: String,
    /// The seed message.
    pub message: String,
    /// The Work Memory chain, if one was given.
    pub work_chain_id: Option<String>,
    /// Where the new conversation opens.
    pub target_context: HandoffTarget,
}

/// The params of [`HandoffDeliveryMethod::BrowserSessionCreate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCreateParams {
    /// The source conversation's URL.
    pub source_url: String,
    /// The seed message (the same bytes as `handoff.message`).
    pub message: String,
    /// The Work Memory chain, if one was given.
    pub work_chain_id: Option<String>,
}

/// How a browser controller delivers the seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutomaticDelivery {
    /// The method to run.
    pub method: HandoffDeliveryMethod,
    /// Its params.
    pub params: SessionCreateParams,
}

/// What a person pastes when the browser cannot be driven (Copy Prompt, X8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManualDelivery {
    /// The seed message (the same bytes as `handoff.message`).
    pub copy_prompt: String,
}

/// The delivery rules the package comes with (fixed; herdr-mcp's values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffSafety {
    /// How often a delivery refused before anything ran may be retried (1).
    pub pre_delivery_retry_limit: u64,
    /// A retry only when nothing shows the first attempt ran (true).
    pub retry_requires_no_execution_evidence: bool,
    /// A retry keeps the first attempt's idempotency key (true).
    pub preserve_mutation_idempotency_key: bool,
    /// A refused message is never reworded and resent (false).
    pub rewrite_rejected_payload: bool,
}

impl HandoffSafety {
    /// The rules every package carries.
    pub const FIXED: HandoffSafety = HandoffSafety {
        pre_delivery_retry_limit: 1,
        retry_requires_no_execution_evidence: true,
        preserve_mutation_idempotency_key: true,
        rewrite_rejected_payload: false,
    };
}

/// The answer of `herdr_mcp.browser_handoff.prepare` (`handoff_prepared`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedHandoff {
    /// Always true (herdr-mcp's planners read it).
    pub ok: bool,
    /// The registered browser session to deliver through; `null` here (no registry).
    pub source_route: Option<SourceRoute>,
    /// Why `source_route` is `null`, and what delivers the seed instead.
    pub source_route_error: Option<String>,
    /// The transfer.
    pub handoff: HandoffPackage,
    /// How a browser controller delivers `handoff.message`.
    pub automatic_delivery: AutomaticDelivery,
    /// What a person pastes instead (Copy Prompt): the same bytes.
    pub manual_delivery: ManualDelivery,
    /// The delivery rules.
    pub safety: HandoffSafety,
}

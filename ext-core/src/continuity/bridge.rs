//! The JSON bridge's thin part in the worker (SPEC O2, O3, M6): when a reply of a bound
//! z.ai / DeepSeek conversation ends, its text goes to the runtime's `bridge.reply`, and a
//! results message it answers goes into the chat through the [`DeliveryLedger`]
//! ([`DeliveryKind::BridgeResults`], subject = the runtime's stable delivery id) — at once
//! with Auto on into a free page, else after the HUD's Send tool results (which asks the
//! runtime again with the page's last reply: it answers from its record, nothing runs
//! twice). The delivery shows in the HUD as every delivery does (in flight, confirmed).
//! Detection, execution, the caps and the record of what ran are the runtime's
//! (`companion/src/bridge`), not this machine's (O3).
//!
//! Invariants:
//! - Only z.ai and DeepSeek chats, only bound ones; ChatGPT has a real MCP connector.
//! - A results message whose marker the page already shows, or that is on its way, is
//!   never typed again (the ledger allows one delivery per scope).
//! - The HUD offers Insert JSON tool prompt on those chats; the text is the runtime's
//!   `bridge.prompt`, which `worker.js` relays to the page (no decision there, and no
//!   wasm for a static text).
//! - The worker keeps no bridge state: a replay of a reply (the Send button, a reply
//!   reported again) asks the runtime again, which answers from its record; what is on
//!   the page and in the ledger decides that nothing is typed twice.

use super::*;
use crate::scope::Site;

/// A results message as the runtime answered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeResults {
    /// The stable delivery id (`bridge:<hex>`).
    pub delivery_id: String,
    /// The message.
    pub text: String,
}

impl Continuity {
    /// The scope of `tab` when it is a bound z.ai / DeepSeek chat.
    pub(super) fn bridge_scope(&self, tab: TabId) -> Option<Scope> {
        self.scope_of_tab(tab)
            .filter(|s| matches!(s, Scope::Conversation { site: Site::Zai | Site::DeepSeek, .. }) && self.bindings.binding_for(s).is_some())
    }

    /// A reply of `tab` ended (or the user pressed Send tool results, `pressed`, with the
    /// page's last reply): a bridge chat's reply goes to `bridge.reply`, the chat named by
    /// its `browser_session_ref`. A replay is cheap: the runtime answers it from its record
    /// without running anything again.
    pub(super) fn bridge_turn_ended(&mut self, tab: TabId, message_id: Option<String>, text: &str, pressed: bool) {
        let Some(scope) = self.bridge_scope(tab) else { return };
        let call = RuntimeCall::BridgeReply { conversation: browser_session_ref(&scope), message_id: message_id.unwrap_or_default(), text: text.to_owned() };
        self.call(Purpose::Bridge { tab, pressed }, call);
    }

    /// The runtime's answer to `bridge.reply`: results go out with Auto on (or after Send)
    /// into a free page; otherwise they wait for the HUD's Send tool results.
    pub(super) fn bridge_answered(&mut self, now: Millis, tab: TabId, pressed: bool, result: Result<RuntimeAnswer, CallError>) {
        let Ok(RuntimeAnswer::Bridge { results: Some(results) }) = result else { return };
        // Already in the thread: never typed twice (one on its way holds its scope: the
        // ledger refuses a second delivery there).
        let subject = results.delivery_id.as_str();
        let seen = self.pages.get(&tab).is_some_and(|r| r.markers.iter().any(|id| id.strip_prefix(subject).is_some_and(|rest| rest.starts_with('/'))));
        let Some(scope) = self.bridge_scope(tab).filter(|s| !seen && (pressed || self.auto.state(s) == AutoState::On)) else { return };
        if self.pages.get(&tab).is_some_and(queue::is_idle_for_queue) {
            // Refused only while another delivery of the scope is on its way: Send later.
            if let Ok(id) = self.post_delivery(now, &scope.key(), tab, DeliveryKind::BridgeResults, &results.delivery_id, &results.text, Vec::new()) {
                self.activity_sent(&scope.key(), DeliveryKind::BridgeResults, if pressed { "send_pressed" } else { "auto_on" }, &id);
            }
        }
    }
}

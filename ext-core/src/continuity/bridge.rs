//! The JSON bridge's thin part in the worker (SPEC O2, O3, M6): when a reply of a bound
//! z.ai / DeepSeek conversation ends, its text goes to the runtime's `bridge.reply`, and a
//! results message it answers goes into the chat through the [`DeliveryLedger`]
//! ([`DeliveryKind::BridgeResults`], subject = the runtime's stable delivery id) — at once
//! with Auto on into a free page, else after the HUD's Send button (which asks the runtime
//! again with the page's last reply: the runtime answers from its record, nothing runs
//! twice, so the worker holds no results itself). Detection, execution, the caps and the
//! record of what ran are the runtime's (`companion/src/bridge`), not this machine's (O3).
//!
//! Invariants:
//! - Only z.ai and DeepSeek chats, only bound ones; ChatGPT has a real MCP connector.
//! - A results message whose id the runtime marks delivered, or whose marker the page
//!   already shows, is never typed again; one in flight is never posted twice (the ledger
//!   allows one delivery per scope).
//! - A confirmed results message is reported with `bridge.delivered`, so a replay of its
//!   reply (a reload, a worker restart) never sends it again.

use super::*;
use crate::scope::Site;

/// The bridge's state in the composition (not persisted: the runtime keeps the record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct BridgeFlow {
    /// The HUD state per conversation: `ready` (results wait for Send), `sent`, `failed`
    /// (the runtime did not run the calls). The HUD shows the locale text `hudBridge_<state>`.
    states: VecMap<String, String>,
}

/// A results message as the runtime answered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeResults {
    /// The stable delivery id (`bridge:<hex>`).
    pub delivery_id: String,
    /// The message.
    pub text: String,
    /// `bridge.delivered` confirmed it before.
    pub delivered: bool,
}

impl Continuity {
    /// The conversation of `tab` when it is a bound z.ai / DeepSeek chat.
    fn bridge_chat(&self, tab: TabId) -> Option<(String, Scope)> {
        let report = self.pages.get(&tab)?;
        let page = classify_url(&report.url);
        let site = page.conversation()?.site;
        let scope = page.scope().filter(|s| site != Site::ChatGpt && self.bindings.binding_for(s).is_some())?;
        Some((queue::conversation_key(report)?, scope))
    }

    /// A reply of `tab` ended (or the user pressed Send results, `pressed`, with the
    /// page's last reply): a bridge chat's reply goes to `bridge.reply`. A replay is cheap:
    /// the runtime answers it from its record without running anything again.
    pub(super) fn bridge_turn_ended(&mut self, tab: TabId, message_id: Option<String>, text: &str, pressed: bool) {
        let Some((conversation, _)) = self.bridge_chat(tab) else { return };
        let call = RuntimeCall::BridgeReply { conversation: conversation.clone(), message_id: message_id.unwrap_or_default(), text: text.to_owned() };
        self.call(Purpose::Bridge { tab, conversation, pressed }, call);
    }

    /// The runtime's answer to `bridge.reply`: results go out with Auto on (or after Send)
    /// into a free page; otherwise the HUD offers Send.
    pub(super) fn bridge_answered(&mut self, now: Millis, tab: TabId, conversation: String, pressed: bool, result: Result<RuntimeAnswer, CallError>) {
        let results = match result {
            Ok(RuntimeAnswer::Bridge { results: Some(results) }) => results,
            Ok(_) => return,
            Err(_) => {
                self.bridge.states.insert(conversation, "failed".to_owned());
                return;
            }
        };
        // Already in the thread, or on its way: never typed twice.
        let ours = |id: &String| id.split('/').next() == Some(results.delivery_id.as_str());
        let seen = self.pages.get(&tab).is_some_and(|r| r.markers.iter().any(ours)) || self.ledger.active().any(|d| ours(&d.id));
        let Some((_, scope)) = self.bridge_chat(tab).filter(|_| !results.delivered && !seen) else { return };
        let go = pressed || self.auto.state(&scope) == AutoState::On;
        let free = self.pages.get(&tab).is_some_and(queue::is_idle_for_queue);
        let sent = go && free && self.post_delivery(now, &scope.key(), tab, DeliveryKind::BridgeResults, &results.delivery_id, &results.text, Vec::new()).is_ok();
        self.bridge.states.insert(conversation, if sent { "sent" } else { "ready" }.to_owned());
    }

    /// HUD: put the protocol prompt into the composer.
    pub(super) fn bridge_prompt(&mut self, tab: TabId) {
        if let Some((_, scope)) = self.bridge_chat(tab) {
            self.call(Purpose::BridgePrompt { tab }, RuntimeCall::BridgePrompt { session_ref: browser_session_ref(&scope) });
        }
    }

    /// How a results message ended: a confirmed one is reported to the runtime.
    pub(super) fn bridge_resolved(&mut self, delivery: &Delivery, resolution: &Resolution) {
        if *resolution == Resolution::Confirmed {
            let delivery_id = delivery.id.split('/').next().unwrap_or_default().to_owned();
            self.call(Purpose::BridgeDelivered, RuntimeCall::BridgeDelivered { delivery_id });
        }
    }

    /// The bridge's HUD state for `tab` (`None` off a bound z.ai / DeepSeek chat; `""`
    /// before anything happened).
    pub(super) fn bridge_state(&self, tab: TabId) -> Option<String> {
        let (conversation, _) = self.bridge_chat(tab)?;
        Some(self.bridge.states.get(&conversation).cloned().unwrap_or_default())
    }
}

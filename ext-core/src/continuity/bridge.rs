//! The JSON bridge's thin part in the worker (SPEC O2, O3, M6, M7; issue 23): when a reply
//! of a bound z.ai / DeepSeek conversation ends, its text goes to the runtime's
//! `bridge.reply` with the chat's caller identity (its bound workspace), its Auto and its
//! newest human turn. The runtime detects the calls, refuses what the chat may not reach,
//! and answers one of:
//! - `approval`: calls wait for the user. The HUD shows an approval card (tool, method,
//!   target, the start of the arguments, a "changes things" tag) with Run / Skip per call;
//!   a press there (a trusted click only: the content script drops untrusted events) is a
//!   [`ContinuityInput::BridgeDecide`] → `bridge.decide`, recorded by the runtime before
//!   it answers. When no call of the batch waits any more, the page's last reply goes to
//!   `bridge.reply` again (as Send tool results does) and its results come back.
//! - `results`: the results message goes into the chat through the [`DeliveryLedger`]
//!   ([`DeliveryKind::BridgeResults`], subject = the runtime's stable delivery id) — at
//!   once with Auto on into a free page, after a Run / Skip press, else after the HUD's
//!   Send tool results (which asks the runtime again with the page's last reply: it
//!   answers from its record, nothing runs twice).
//! - `round_limit`: the chat ran its limit of tool rounds since the user's last message;
//!   the HUD says so and that a new message of the user's starts a new allowance.
//!
//! Every step is in the Activity timeline (`bridge_call`): calls awaiting approval, a run
//! approved, a call skipped, a call the runtime refused, the round limit reached, results
//! sent and how they ended.
//! Detection, classification, scoping, execution, the round count and the record of what
//! ran are the runtime's (`companion/src/bridge`), not this machine's (O3).
//!
//! Invariants:
//! - Only z.ai and DeepSeek chats, only bound ones; ChatGPT has a real MCP connector.
//! - Nothing here approves a call: only a [`ContinuityInput::BridgeDecide`] (the HUD's Run,
//!   a trusted click) sends `run`, for a call of the card the runtime asked about.
//! - A results message whose marker the page already shows, or that is on its way, is
//!   never typed again (the ledger allows one delivery per scope).
//! - The HUD offers Insert JSON tool prompt on those chats; its text is the runtime's
//!   `bridge.prompt`, asked over the worker's one companion connection (like every call
//!   here) and put into the composer without sending.
//! - Results owed to a chat are never lost and typed once ([`BridgeBook`], persisted): a
//!   reply whose results must go (Auto on and not stopped, or Send tool results / a Run) is
//!   recorded when it is asked of the runtime and kept until the ledger confirms its results
//!   in the thread. An answer that never came (the runtime restarted, the link dropped) is
//!   asked again at the next connect; results held by a cooldown, a busy page or another
//!   delivery of the chat are offered again at each page report and cooldown end; after a
//!   worker restart the runtime is asked again (it answers from its record: nothing runs
//!   twice; the results' text is not stored here). A confirmed delivery is reported
//!   (`bridge.delivered`); results the page shows or the runtime calls delivered are never
//!   typed again; a delivery that certainly did not land is offered again, an abandoned one
//!   is not (the HUD says so; Send tool results asks again). An entry whose results are on
//!   their way is never replaced (a newer reply of the chat waits behind it; the same reply
//!   read again, by its page id, is the same entry), and an answer is credited only to the
//!   entry whose ask it answers.
//! - The approval card and the last reply live in memory per tab; after a worker restart
//!   Send tool results asks the runtime again (the same batch waits, nothing runs twice).
//! - The human turn: the id of the page's last user turn that is not a message of ours (its
//!   page id, else `text:` and a hash of its text). The page reports it with its facts
//!   (`last_human_turn_id`, looked up back through the thread's user turns), so a worker
//!   restart during an Auto loop derives the same turn and its round count goes on; when
//!   the page shows none it is the one remembered per scope, else `""` (rounds are counted
//!   together, never reset).

use super::*;
use crate::json_read::WriteJson;
use crate::scope::Site;

/// A results message as the runtime answered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeResults {
    /// The stable delivery id (`bridge:<hex>`).
    pub delivery_id: String,
    /// The message.
    pub text: String,
    /// The runtime says it is in its chat already (`bridge.delivered`): never typed again.
    pub delivered: bool,
}

/// One call of a batch that waits for the user (`bridge_reply.pending[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct PendingCall {
    /// 1-based position in the batch.
    pub call: u32,
    /// The tool (`herdr_call`, `herdr_prompt`, …).
    pub tool: String,
    /// `herdr_call`'s method or a local method name.
    pub method: Option<String>,
    /// The pane / workspace / conversation the call acts on.
    pub target: Option<String>,
    /// The first characters of the arguments' JSON.
    pub args_preview: String,
    /// The call types, prompts or writes (not read-only).
    pub mutating: bool,
    /// What the call would type, send or write, decoded (the runtime sends at most 2 000
    /// characters), when it has such text.
    pub detail: Option<String>,
    /// Characters of that text left out of `detail`.
    pub detail_more: u32,
}

/// Tool rounds of the chat's current human turn (`bridge_reply.rounds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
pub struct BridgeRounds {
    /// Rounds that reached their results message.
    pub used: u32,
    /// The bound (M7).
    pub limit: u32,
}

/// What `bridge.reply` answered (`bridge_reply.state`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BridgeOutcome {
    /// `results`: the message to send.
    Results(BridgeResults),
    /// `approval`: calls of batch `batch_id` wait for the user; nothing of it has run.
    Approval {
        /// The batch id (`bridge:<16 hex>`).
        batch_id: String,
        /// The calls that wait.
        pending: Vec<PendingCall>,
    },
    /// `round_limit`: the chat ran its limit of tool rounds since the user's last message.
    RoundLimit,
    /// `nothing` / `streaming` / a state this extension does not know: nothing to do.
    Nothing,
}

/// The user's decision on one pending call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum BridgeDecision {
    /// Run it.
    Run,
    /// Do not run it (the runtime answers it `skipped`).
    Skip,
}

impl BridgeDecision {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Skip => "skip",
        }
    }
}

/// A pending call as the HUD's approval card shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct BridgeCardCall {
    /// The call.
    pub call: PendingCall,
    /// A decision on it is on its way to the runtime (its buttons are disabled).
    pub deciding: bool,
    /// The key of its tag: `hudBridgeMutating` (it changes things) or `hudBridgeReadOnly`.
    pub tag: &'static str,
    /// How much of its detail is left out (`hudBridgeDetailMore`), when some is.
    pub more: Option<Say>,
}

/// A Run / Skip button of the approval card: the decision it sends, its label's key and
/// its accessible name's key (`$1` the call, `$2` the tool and method).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct BridgeButton {
    /// `run | skip` (`bridge_decide.decision`).
    pub decision: &'static str,
    /// Message key of its label.
    pub label: &'static str,
    /// Message key of its accessible name.
    pub aria: &'static str,
}

/// The card's buttons under each call, in order.
pub const BRIDGE_BUTTONS: [BridgeButton; 2] = [
    BridgeButton { decision: "run", label: "bridgeRun", aria: "bridgeRunLabel" },
    BridgeButton { decision: "skip", label: "bridgeSkip", aria: "bridgeSkipLabel" },
];

/// The HUD's JSON bridge part of a bound z.ai / DeepSeek chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct BridgeView {
    /// The batch whose calls wait, if any.
    pub batch_id: Option<String>,
    /// Its calls that wait for Run / Skip.
    pub pending: Vec<BridgeCardCall>,
    /// The chat ran its limit of tool rounds since the user's last message.
    pub round_limit: bool,
    /// Tool rounds of the current human turn, as the runtime last answered.
    pub rounds: Option<BridgeRounds>,
    /// Message key of the card's accessible name.
    pub card_label: &'static str,
    /// Message key of a call's target line (`$1` the target).
    pub target_key: &'static str,
    /// The buttons under each call ([`BRIDGE_BUTTONS`]).
    pub buttons: Vec<BridgeButton>,
}

/// The page's last reply as sent to `bridge.reply` (asked again after the last decision).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct LastReply {
    message_id: String,
    text: String,
    human_turn: String,
}

/// What one tab's bridge chat shows (not persisted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct BridgeTab {
    /// The chat it is about (a tab that moved to another chat starts afresh).
    scope_key: String,
    /// The page's last reply.
    last: Option<LastReply>,
    /// The batch waiting for the user and its calls.
    batch_id: Option<String>,
    pending: Vec<PendingCall>,
    /// Calls whose decision is on its way.
    deciding: VecSet<u32>,
    /// The results whose refusals are in the Activity timeline (once per batch).
    recorded_results: Option<String>,
    /// The round limit of the current human turn was reached.
    round_limit: bool,
    rounds: Option<BridgeRounds>,
    /// Calls the user decided on (batch id, call): not "ran with Auto on".
    decided: Vec<(String, u32)>,
}

/// A reply whose results are owed to its chat (see the module doc), one per chat (more
/// while results of the chat are on their way).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub(crate) struct OwedReply {
    /// The chat's scope key.
    key: String,
    /// The chat's `browser_session_ref` (`bridge.reply`'s `conversation`).
    conversation: String,
    /// The tab it was seen in (any tab showing the chat will do).
    tab: TabId,
    /// The reply as it went to `bridge.reply`.
    message_id: String,
    text: String,
    human_turn: String,
    /// The user asked for it (Send tool results, a Run): typed even with Auto off or in a
    /// cooldown.
    pressed: bool,
    /// The results' id once the runtime answered.
    #[serde(default)]
    delivery_id: Option<String>,
    /// The ledger's delivery of them, once posted.
    #[serde(default)]
    delivery: Option<String>,
    /// The results message (not persisted: the runtime answers it again).
    #[serde(skip)]
    results: Option<String>,
    /// The `bridge.reply` for it that is out (its ask number: only that answer is its).
    #[serde(skip)]
    asking: Option<u64>,
}

/// The persisted part of the bridge: the replies whose results are owed to their chats.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct BridgeBook {
    /// One per chat (more while results of the chat are on their way), oldest first.
    #[serde(default)]
    owed: Vec<OwedReply>,
}

/// The composition's bridge state: per tab, the newest human turn per scope, and the
/// results owed (persisted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct BridgeFlow {
    tabs: VecMap<TabId, BridgeTab>,
    human_turns: VecMap<String, String>,
    pub(super) book: BridgeBook,
    /// The last `bridge.reply` ask's number (per worker life).
    asks: u64,
}

/// Most calls of one results message recorded in the Activity timeline (a reply runs at
/// most 24 calls).
const MAX_REFUSALS_RECORDED: usize = 24;

/// How one call of a results message ended, as the Activity timeline records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ResultCall {
    /// `"error":"refused"`.
    Refused,
    /// `"ok":true`: it ran (its tool, and no method: the line does not carry one).
    Ran { tool: String, method: Option<String> },
}

/// The refused and the run calls of a results message, in order: its per-call lines
/// (docs/PROTOCOL.md "Results message") are JSON objects with sorted keys, so a refusal's
/// line begins `{"call":<n>,"error":"refused"`, a run call's `{"call":<n>,"ok":true,` and
/// ends `,"tool":"<name>"}` (`tool` is the last key). Read without a JSON parser (a second
/// one in the wasm cost 8 KB of gzip for this); a line of any other shape is not counted.
pub(super) fn result_calls(text: &str) -> Vec<(u32, ResultCall)> {
    const HEAD: &[u8] = b"{\"call\":";
    const REFUSED: &[u8] = b",\"error\":\"refused\"";
    const OK: &[u8] = b",\"ok\":true,";
    const TOOL: &str = ",\"tool\":\"";
    text.lines()
        .filter_map(|line| {
            let rest = line.as_bytes().strip_prefix(HEAD)?;
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let (number, after) = (rest.get(..digits)?, rest.get(digits..)?);
            if digits == 0 || digits > 9 {
                return None;
            }
            let call = number.iter().try_fold(0_u32, |n, d| n.checked_mul(10)?.checked_add(u32::from(d.wrapping_sub(b'0'))))?;
            if after.starts_with(REFUSED) {
                return Some((call, ResultCall::Refused));
            }
            if !after.starts_with(OK) {
                return None;
            }
            let name = line.strip_suffix("\"}")?;
            let tool = name.get(crate::text::rfind_str(name, TOOL)? + TOOL.len()..)?;
            let plain = !tool.is_empty() && tool.len() <= 64 && tool.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
            plain.then(|| (call, ResultCall::Ran { tool: tool.to_owned(), method: None }))
        })
        .take(MAX_REFUSALS_RECORDED)
        .collect()
}

/// The end of the cut line content-turns.js's `journalText` puts where it left a long turn's
/// middle out (a turn over 64 KiB keeps its start and its end around it).
const CUT_LINE_END: &str = " characters left out by herdr-continuity …]";

/// What of a reply the bridge reads: all of it, or, when the page left its middle out, only
/// what comes before the cut line. A fence opened in the missing middle would make a fenced
/// call line after it look live, so the rest is not read (fail closed; a reply that forges
/// the line only hides its own later calls).
fn bridge_text(text: &str) -> &str {
    // The cut line holds no line break: the last one before its end starts it.
    match crate::text::find_str(text, CUT_LINE_END) {
        Some(at) => {
            let end = text.get(..at).and_then(|head| head.rfind('\n')).unwrap_or(0);
            text.get(..end).unwrap_or_default()
        }
        None => text,
    }
}

/// `text:` and a 64-bit FNV-1a hash of a user turn's text (a page that shows no id).
fn text_turn_id(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("text:{hash:016x}")
}

impl Continuity {
    /// The scope of `tab` when it is a bound z.ai / DeepSeek chat.
    pub(super) fn bridge_scope(&self, tab: TabId) -> Option<Scope> {
        self.scope_of_tab(tab)
            .filter(|s| matches!(s, Scope::Conversation { site: Site::Zai | Site::DeepSeek, .. }) && self.bindings.binding_for(s).is_some())
    }

    /// A reply of `tab` ended (or the user pressed Send tool results, `pressed`, with the
    /// page's last turn): a bridge chat's reply goes to `bridge.reply` with the chat's
    /// identity, Auto and human turn. A replay is cheap: the runtime answers it from its
    /// record without running anything again.
    pub(super) fn bridge_turn_ended(&mut self, tab: TabId, turn: BridgeTurn<'_>) {
        let Some(scope) = self.bridge_scope(tab) else { return };
        let key = scope.key();
        // The human turn as the page shows it (its newest user turn without a marker of
        // ours: it survives a worker restart); else the user turn is the human's unless it
        // carries a marker of ours, by its delivery id (a results message, a wake): then the human turn is the
        // one remembered before it.
        if let Some(id) = self.pages.get(&tab).and_then(|p| p.last_human_turn_id.clone()) {
            self.bridge.human_turns.insert(key.clone(), id);
        } else if turn.user_marker.is_none_or(|m| !super::semantic::delivery_id_shaped(m))
            && !(turn.user_text.is_empty() && turn.user_message_id.is_none())
        {
            let id = turn.user_message_id.clone().unwrap_or_else(|| text_turn_id(turn.user_text));
            self.bridge.human_turns.insert(key.clone(), id);
        }
        let human_turn = self.bridge.human_turns.get(&key).cloned().unwrap_or_default();
        let last =
            LastReply { message_id: turn.message_id.unwrap_or_default(), text: bridge_text(turn.assistant_text).to_owned(), human_turn };
        let state = self.bridge.tabs.entry(tab).or_default();
        if state.scope_key != key {
            *state = BridgeTab { scope_key: key, ..BridgeTab::default() };
        }
        state.last = Some(last.clone());
        self.bridge_ask(tab, &scope, last, turn.pressed);
    }

    /// `bridge.reply` for `last` of `tab`'s chat.
    fn bridge_ask(&mut self, tab: TabId, scope: &Scope, last: LastReply, pressed: bool) {
        let Some(workspace_id) = self.bindings.binding_for(scope).map(|b| b.workspace_id.clone()) else { return };
        // A reply the user stopped runs nothing on its own: its calls wait for the card.
        let auto = self.auto.state(scope) == AutoState::On && !self.user_stopped(tab);
        self.bridge.asks += 1;
        let ask = self.bridge.asks;
        if auto || pressed {
            self.bridge_owe(tab, scope, &last, pressed, ask);
        }
        let call = RuntimeCall::BridgeReply {
            conversation: browser_session_ref(scope),
            message_id: last.message_id,
            text: last.text,
            workspace_id,
            auto,
            human_turn: last.human_turn,
        };
        self.call(Purpose::Bridge { tab, pressed, conversation: browser_session_ref(scope), ask }, call);
    }

    /// Records that the results of `last` are owed to the chat `key` (a newer reply replaces
    /// an older one whose results are not on their way; the same reply again, by its page id
    /// when it has one (a re-read may render its text a little differently), keeps what is
    /// known of it).
    fn bridge_owe(&mut self, tab: TabId, scope: &Scope, last: &LastReply, pressed: bool, ask: u64) {
        let (key, conversation) = (scope.key(), browser_session_ref(scope));
        let owed = &mut self.bridge.book.owed;
        let same = |o: &OwedReply| o.key == key && o.message_id == last.message_id && (!last.message_id.is_empty() || o.text == last.text);
        if let Some(o) = owed.iter_mut().find(|o| same(o)) {
            o.tab = tab;
            o.pressed |= pressed;
            o.asking = Some(ask);
            if o.delivery.is_none() {
                o.text.clone_from(&last.text);
            }
        } else {
            // Results on their way stay until the ledger resolves them (a delivery that
            // certainly did not land is offered again, one that is abandoned is not).
            owed.retain(|o| o.key != key || o.delivery.is_some());
            owed.push(OwedReply {
                key,
                conversation,
                tab,
                message_id: last.message_id.clone(),
                text: last.text.clone(),
                human_turn: last.human_turn.clone(),
                pressed,
                asking: Some(ask),
                ..OwedReply::default()
            });
        }
        self.persist();
    }

    /// The runtime answered (or did not) ask `ask` of an owed reply: an answer
    /// that never came is asked again at the next connect (a refusal is not: Send tool
    /// results asks again); results are kept to be typed (the return: `true`), anything else
    /// owes nothing; an answer to another ask (a reply not owed) is not this one's.
    fn bridge_owed_answered(&mut self, ask: u64, result: &Result<RuntimeAnswer, CallError>) -> bool {
        let owed = &mut self.bridge.book.owed;
        let Some(at) = owed.iter().position(|o| o.asking == Some(ask)) else { return false };
        owed[at].asking = None;
        match result {
            Err(error) if matches!(error.code, ErrorCode::Offline | ErrorCode::Timeout | ErrorCode::NotReady) => return false,
            Ok(RuntimeAnswer::Bridge { outcome: BridgeOutcome::Results(results), .. }) if results.delivered => {
                owed.remove(at);
            }
            // Results on their way are the ledger's until it resolves them, whatever a
            // re-read of their reply answers.
            _ if owed[at].delivery.is_some() => return false,
            // Results another entry of the chat has on their way (the same reply read again
            // as another): they owe nothing more.
            Ok(RuntimeAnswer::Bridge { outcome: BridgeOutcome::Results(results), .. })
                if owed
                    .iter()
                    .any(|o| o.key == owed[at].key && o.delivery.is_some() && o.delivery_id.as_ref() == Some(&results.delivery_id)) =>
            {
                owed.remove(at);
            }
            Ok(RuntimeAnswer::Bridge { outcome: BridgeOutcome::Results(results), .. }) => {
                owed[at].delivery_id = Some(results.delivery_id.clone());
                owed[at].results = Some(results.text.clone());
                return true;
            }
            _ => {
                owed.remove(at);
            }
        }
        self.persist();
        false
    }

    /// Offers every owed result that can go now, once: to a tab showing its chat, outside a
    /// cooldown (unless pressed), into an idle page, with Auto still on (unless pressed);
    /// results the page shows already are done. Asks the runtime again for an owed reply
    /// with no results in hand (after a restart, or an answer that never came).
    pub(super) fn bridge_offer(&mut self, now: Millis) {
        let mut keys: Vec<String> = Vec::new();
        for o in &self.bridge.book.owed {
            if !keys.contains(&o.key) {
                keys.push(o.key.clone());
            }
        }
        // An entry whose results are on their way is the ledger's until it resolves them;
        // a chat's other entry (a newer reply) waits behind it.
        let waiting = |x: &OwedReply, key: &str| x.key == key && x.delivery.is_none();
        for key in keys {
            let Some(o) = self.bridge.book.owed.iter().find(|o| waiting(o, &key)).cloned() else { continue };
            if o.asking.is_some() {
                continue;
            }
            let tab = if self.bridge_scope(o.tab).is_some_and(|s| s.key() == key) {
                Some(o.tab)
            } else {
                self.pages.keys().copied().find(|t| self.bridge_scope(*t).is_some_and(|s| s.key() == key))
            };
            let (Some(tab), Some(scope)) = (tab, tab.and_then(|t| self.bridge_scope(t))) else { continue };
            let auto = self.auto.state(&scope) == AutoState::On && !self.user_stopped(tab);
            if !o.pressed && !auto {
                // Auto went off (or the user stopped the reply): the results wait for Send tool results.
                self.bridge.book.owed.retain(|x| !waiting(x, &key));
                self.persist();
                continue;
            }
            if let Some(id) = &o.delivery_id {
                let seen = self
                    .pages
                    .get(&tab)
                    .is_some_and(|r| r.markers.iter().any(|m| m.strip_prefix(id.as_str()).is_some_and(|rest| rest.starts_with('/'))));
                if seen {
                    self.bridge.book.owed.retain(|x| !waiting(x, &key) || x.delivery_id.as_ref() != Some(id));
                    self.persist();
                    self.call(Purpose::BridgeDelivered, RuntimeCall::BridgeDelivered { delivery_id: id.clone() });
                    continue;
                }
            }
            let (Some(id), Some(text)) = (o.delivery_id.clone(), o.results.clone()) else {
                if self.link_up {
                    let last = LastReply { message_id: o.message_id, text: o.text, human_turn: o.human_turn };
                    self.bridge_ask(tab, &scope, last, o.pressed);
                }
                continue;
            };
            if (!o.pressed && self.rate_block_tab(tab).is_some()) || !self.pages.get(&tab).is_some_and(queue::is_idle_for_queue) {
                continue;
            }
            // Refused only while another delivery of the chat is on its way: offered again.
            let kind = DeliveryKind::BridgeResults;
            if let Ok(delivery) = self.post_delivery_as(now, &key, tab, kind, &id, &text, Vec::new(), o.pressed, None) {
                if let Some(x) = self.bridge.book.owed.iter_mut().find(|x| waiting(x, &key)) {
                    x.delivery = Some(delivery.clone());
                }
                self.persist();
                self.activity_sent(&key, kind, if o.pressed { "send_pressed" } else { "auto_on" }, &delivery);
            }
        }
    }

    /// The ledger resolved a results delivery: confirmed, it is done (and the runtime told);
    /// certainly not typed, it is offered again; abandoned (no evidence either way), it is
    /// not typed again on its own.
    pub(super) fn bridge_resolved(&mut self, delivery: &Delivery, resolution: &Resolution) {
        let subject = delivery.id.split('/').next().unwrap_or_default().to_owned();
        let at = self.bridge.book.owed.iter().position(|o| o.delivery.as_deref() == Some(delivery.id.as_str()));
        match (at, resolution) {
            (Some(at), r) if r.retryable() => self.bridge.book.owed[at].delivery = None,
            (Some(at), _) => {
                self.bridge.book.owed.remove(at);
            }
            (None, _) => {}
        }
        self.persist();
        if *resolution == Resolution::Confirmed {
            self.call(Purpose::BridgeDelivered, RuntimeCall::BridgeDelivered { delivery_id: subject });
        }
    }

    /// The persisted book, restored.
    pub(super) fn bridge_restore(&mut self, book: BridgeBook) {
        self.bridge.book = book;
    }

    /// The runtime's answer to `bridge.reply`: an approval card, the round limit, or
    /// results — which go out with Auto on (or after a press) into a free page; otherwise
    /// they wait for the HUD's Send tool results.
    pub(super) fn bridge_answered(
        &mut self,
        now: Millis,
        tab: TabId,
        pressed: bool,
        conversation: &str,
        ask: u64,
        result: Result<RuntimeAnswer, CallError>,
    ) {
        let stored = self.bridge_owed_answered(ask, &result);
        let Ok(RuntimeAnswer::Bridge { outcome, rounds }) = result else { return };
        // The tab still shows the chat that was asked about (not one it moved to since) and
        // its state is known. Owed results go all the same: after a worker restart (no tab
        // state) or to another tab showing the chat, nothing else offers them until the
        // next page report, which an idle chat never sends.
        let shown = self.bridge_scope(tab).filter(|s| browser_session_ref(s) == conversation);
        let key = shown.as_ref().map(Scope::key).unwrap_or_default();
        let (Some(scope), Some(state)) = (shown, self.bridge.tabs.get_mut(&tab).filter(|t| t.scope_key == key)) else {
            if stored {
                self.bridge_offer(now);
            }
            return;
        };
        if rounds.is_some() {
            state.rounds = rounds;
        }
        let results = match outcome {
            BridgeOutcome::Approval { batch_id, pending } => {
                let new = state.batch_id.as_deref() != Some(batch_id.as_str());
                if new {
                    state.deciding = VecSet::default();
                }
                state.round_limit = false;
                state.batch_id = Some(batch_id.clone());
                state.pending = pending;
                if new {
                    self.record_activity(
                        &key,
                        ActivityKind::BridgeCall,
                        ActivityOutcome::Withheld,
                        ActivityReason::Code("awaiting_approval"),
                        Some(&batch_id),
                    );
                }
                return;
            }
            BridgeOutcome::RoundLimit => {
                let new = !state.round_limit;
                state.round_limit = true;
                state.batch_id = None;
                state.pending.clear();
                if new {
                    self.record_activity(
                        &key,
                        ActivityKind::BridgeCall,
                        ActivityOutcome::Withheld,
                        ActivityReason::Code("round_limit"),
                        None,
                    );
                }
                return;
            }
            BridgeOutcome::Nothing => {
                state.round_limit = false;
                return;
            }
            BridgeOutcome::Results(results) => results,
        };
        state.round_limit = false;
        // The card's batch has its results: nothing of it waits any more.
        if state.batch_id.as_deref() == Some(results.delivery_id.as_str()) {
            state.batch_id = None;
            state.pending.clear();
            state.deciding = VecSet::default();
        }
        // What the runtime refused (another workspace, another chat's ref or chain): in the
        // timeline once per batch, as the results message says it to the chat.
        // Calls the runtime ran on its own (read-only, Auto on: no decision of the user's
        // named them) likewise, one entry each.
        if state.recorded_results.as_deref() != Some(results.delivery_id.as_str()) {
            state.recorded_results = Some(results.delivery_id.clone());
            let decided = std::mem::take(&mut state.decided);
            let auto_on = self.auto.state(&scope) == AutoState::On;
            for (call, kind) in result_calls(&results.text) {
                let id = crate::text::concat(&[&results.delivery_id, "#", &call.to_string()]);
                match kind {
                    ResultCall::Refused => {
                        self.record_activity(
                            &key,
                            ActivityKind::BridgeCall,
                            ActivityOutcome::Withheld,
                            ActivityReason::Code("call_refused"),
                            Some(&id),
                        );
                    }
                    ResultCall::Ran { tool, method } if auto_on && !decided.contains(&(results.delivery_id.clone(), call)) => {
                        let what = match method {
                            Some(method) => crate::text::concat(&[&tool, " · ", &method]),
                            None => tool,
                        };
                        let (kind, outcome, reason) =
                            (ActivityKind::BridgeCall, ActivityOutcome::Sent, ActivityReason::Code("auto_ran_read_only"));
                        self.record_activity_with_tool(&key, kind, outcome, reason, Some(&id), Some(&what));
                    }
                    ResultCall::Ran { .. } => {}
                }
            }
        }
        // Owed results go now if they can, else at the next page report, cooldown end or
        // connect; results nobody asked for wait for Send tool results.
        let _ = pressed;
        self.bridge_offer(now);
    }

    /// The HUD's Run / Skip on call `call` of batch `batch_id` (a trusted click): only for
    /// a call of the card the runtime asked about, one decision at a time per call.
    pub(super) fn bridge_decide(&mut self, tab: TabId, batch_id: &str, call: u32, decision: BridgeDecision) {
        let Some(scope) = self.bridge_scope(tab) else { return };
        let Some(state) = self.bridge.tabs.get_mut(&tab).filter(|t| t.scope_key == scope.key()) else { return };
        if state.batch_id.as_deref() != Some(batch_id) || !state.pending.iter().any(|p| p.call == call) || state.deciding.contains(&call) {
            return;
        }
        state.deciding.insert(call);
        let conversation = browser_session_ref(&scope);
        self.call(
            Purpose::BridgeDecide { tab, batch_id: batch_id.to_owned(), call, decision },
            RuntimeCall::BridgeDecide { conversation, batch_id: batch_id.to_owned(), index: call, decision },
        );
    }

    /// The runtime's answer to `bridge.decide`: the call leaves the card; when none of the
    /// batch waits any more, the page's last reply is asked again for the results.
    pub(super) fn bridge_decided(
        &mut self,
        tab: TabId,
        batch_id: &str,
        call: u32,
        decision: BridgeDecision,
        result: Result<RuntimeAnswer, CallError>,
    ) {
        let key = self.bridge_scope(tab).map(|s| s.key());
        let Some(state) = self.bridge.tabs.get_mut(&tab) else { return };
        state.deciding.remove(&call);
        let pending = match result {
            Ok(RuntimeAnswer::BridgeDecided { pending }) => pending,
            Ok(_) => return,
            Err(error) => {
                let say = Say::new("bridgeDecideFailed", vec![call.to_string(), error.message]);
                return self.notice(tab, say, NoticeTone::Bad);
            }
        };
        if state.batch_id.as_deref() == Some(batch_id) {
            state.pending.retain(|p| p.call != call);
        }
        if decision == BridgeDecision::Run && state.decided.len() < MAX_REFUSALS_RECORDED {
            state.decided.push((batch_id.to_owned(), call));
        }
        let (reason, outcome) = match decision {
            BridgeDecision::Run => ("run_approved", ActivityOutcome::Sent),
            BridgeDecision::Skip => ("call_skipped", ActivityOutcome::Withheld),
        };
        let id = crate::text::concat(&[batch_id, "#", &call.to_string()]);
        let ask = (pending == 0 && key.as_deref() == Some(state.scope_key.as_str())).then(|| state.last.clone()).flatten();
        if let Some(key) = &key {
            self.record_activity(key, ActivityKind::BridgeCall, outcome, ActivityReason::Code(reason), Some(&id));
        }
        if let (Some(last), Some(scope)) = (ask, self.bridge_scope(tab)) {
            self.bridge_ask(tab, &scope, last, true);
        }
    }

    /// The HUD's Insert JSON tool prompt: the runtime's `bridge.prompt` for this chat, put
    /// into the composer without sending.
    pub(super) fn bridge_prompt(&mut self, tab: TabId) {
        let Some(scope) = self.bridge_scope(tab) else { return };
        self.call(Purpose::BridgePrompt { tab }, RuntimeCall::BridgePrompt { session_ref: browser_session_ref(&scope) });
    }

    /// The runtime's prompt text (or why there is none).
    pub(super) fn bridge_prompt_answered(&mut self, tab: TabId, result: Result<RuntimeAnswer, CallError>) {
        match result {
            Ok(RuntimeAnswer::BridgePrompt { text }) => self.emit(ContinuityOutput::Insert { tab, text }),
            Ok(_) => self.notice(tab, Say::new("noticeBridgePromptFailed", vec![]), NoticeTone::Bad),
            Err(error) => self.notice(tab, Say::new("bridgePromptFailed", vec![error.message]), NoticeTone::Bad),
        }
    }

    /// The HUD's bridge part of `tab` (a bound z.ai / DeepSeek chat with something to show).
    pub(super) fn bridge_view(&self, tab: TabId) -> Option<BridgeView> {
        let key = self.bridge_scope(tab)?.key();
        let state = self.bridge.tabs.get(&tab).filter(|t| t.scope_key == key)?;
        if state.batch_id.is_none() && !state.round_limit && state.rounds.is_none() {
            return None;
        }
        Some(BridgeView {
            batch_id: state.batch_id.clone(),
            pending: state
                .pending
                .iter()
                .map(|call| BridgeCardCall {
                    call: call.clone(),
                    deciding: state.deciding.contains(&call.call),
                    tag: if call.mutating { "hudBridgeMutating" } else { "hudBridgeReadOnly" },
                    more: (call.detail.is_some() && call.detail_more > 0)
                        .then(|| Say::new("hudBridgeDetailMore", vec![call.detail_more.to_string()])),
                })
                .collect(),
            round_limit: state.round_limit,
            rounds: state.rounds,
            card_label: "hudBridgeApprovalLabel",
            target_key: "hudBridgeTarget",
            buttons: BRIDGE_BUTTONS.to_vec(),
        })
    }

    /// The page of `tab` is gone: its card goes (a new page asks again when its reply ends
    /// or Send tool results is pressed).
    pub(super) fn bridge_page_gone(&mut self, tab: TabId) {
        self.bridge.tabs.remove(&tab);
    }
}

/// An ended turn as the bridge reads it.
pub(super) struct BridgeTurn<'a> {
    pub(super) user_text: &'a str,
    pub(super) user_marker: Option<&'a str>,
    pub(super) user_message_id: Option<String>,
    pub(super) message_id: Option<String>,
    pub(super) assistant_text: &'a str,
    pub(super) pressed: bool,
}

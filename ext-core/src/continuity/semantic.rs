//! Semantic Auto in the continuity loop (SPEC J1–J3, M6, M7, Q2, O4): when a ChatGPT
//! reply ends, the page reports the turn's text ([`ContinuityInput::TurnEnded`]); the
//! conversation's [`SemanticAuto`] decides whether to ask the runtime's `judge.turn_end`,
//! and a `continue` verdict becomes one continue message through the [`DeliveryLedger`]
//! ([`DeliveryKind::JudgeContinue`]) that names the judge and its reason.
//!
//! Invariants:
//! - Nothing is asked unless the judge use is "in Auto", Auto is on for the page's scope,
//!   the scope is bound (M7), the page is ChatGPT (M6), and nothing is queued, on its way
//!   or unsent for the conversation (the user's next turn goes first, Q2).
//! - A reply is judged once (its fingerprint is kept in the snapshot); only `continue`
//!   continues; `done`, an uncertain verdict and a failed call stop (fail closed), and the
//!   HUD says why.
//! - A user turn that carries our marker (a wake, a continue) is not a human turn, so our
//!   own continues count towards the bound: at most `max_continues` in a row without a
//!   human turn or an event of the bound workspace (M7); and its text is never sent to the
//!   judge as the user's request (the judge gets `""`), so our "go on" is not read as work.
//! - A user turn is ours only by the delivery id in its marker line
//!   ([`texts::marker_line`], an id shaped as the ledger makes them). Its text is never
//!   compared: a human message that reads exactly like our continue, or one that quotes a
//!   marker-like line without a delivery id, is the human's.
//! - A reply the user stopped (`user_stop`, the page's trusted Stop activation) is never
//!   continued, however its text reads; the conversation's machine stays stopped until a
//!   human turn newer than the stopped one, and the HUD says so (`hudUserStopped`).
//! - A human turn supersedes what is not yet typed: a judge call for an older reply and a
//!   continue held for its App are dropped, each with an Activity entry.
//! - A continue is typed only into an idle page of the same conversation (composer there,
//!   nothing streaming, no draft, layout known); otherwise nothing is sent and the HUD
//!   says why.

use super::texts::JudgeTail;
use super::*;
use crate::scope::Site;
use crate::semantic_auto::{EndedTurn, JudgeMode, JudgeSettings, SemanticAuto, SemanticInput, SemanticOutput, Verdict};

/// The judge's reason is cut to this many characters in a continue message and the HUD.
pub const SEMANTIC_REASON_MAX_CHARS: usize = 300;

/// Semantic Auto's state in the composition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SemanticFlow {
    /// One machine per conversation key (`<site>:<conversation id>`); persisted.
    pub(super) autos: VecMap<String, SemanticAuto>,
    /// The options page's settings in force.
    pub(super) settings: JudgeSettings,
    /// What was wrong with the stored settings, if anything (the defaults are used).
    problem: Option<&'static str>,
    /// The HUD's last line per conversation (not persisted).
    pub(super) notes: VecMap<String, Say>,
    /// Continues that carry an App (not persisted): kept back because the App could not
    /// ride on them (`delivery: None`; typed once attaching works, dropped by a human turn),
    /// or on their way (`Some(id)`; one the page answers `app_not_attached` is held again,
    /// not dropped). A plain `Vec`: a few at most.
    held: Vec<HeldContinue>,
    /// Goal mode per scope key (J7; not persisted: the runtime holds the goal).
    pub(super) goals: VecMap<String, super::goal::GoalSlot>,
}

/// A judge continue that carries an App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HeldContinue {
    conversation: String,
    /// Its delivery while it is on its way.
    delivery: Option<String>,
    tab: TabId,
    subject: String,
    source: String,
    reason: String,
}

impl SemanticFlow {
    /// The flow of a restored snapshot.
    pub(super) fn with_autos(autos: VecMap<String, SemanticAuto>) -> Self {
        Self { autos, ..Self::default() }
    }
}

pub(super) use continuity_protocol::marker::delivery_id_shaped;

/// Whether the last user turn was the human's: no marker of ours (decided by the delivery
/// id in the marker line, never by the text), or the marker of a queued batch (the user's
/// own text, Q2). A wake or a continue of ours is not.
fn human_turn(user_marker: Option<&str>) -> bool {
    user_marker.is_none_or(|marker| marker.starts_with("qb:") || !delivery_id_shaped(marker))
}

impl Continuity {
    /// The page's reply ended: the turn goes to the conversation's semantic Auto.
    pub(super) fn turn_ended(&mut self, now: Millis, tab: TabId, user_text: String, assistant_text: String, user_marker: Option<&str>) {
        let Some(report) = self.pages.get(&tab) else { return };
        let Some(conversation) = queue::conversation_key(report) else { return };
        let chatgpt = classify_url(&report.url).conversation().is_some_and(|c| c.site == Site::ChatGpt);
        // Our own message (a continue, a wake) is never shown to the judge as the user's
        // request: "go on" would read as work asked for.
        let user_text = if human_turn(user_marker) { user_text } else { String::new() };
        // A ChatGPT scope with a goal: Goal mode takes the turn (semantic Auto does not see
        // it). Other sites continue through the JSON bridge (M6).
        if chatgpt && self.goal_turn_ended(now, tab, &conversation, &user_text, &assistant_text) {
            return;
        }
        self.semantic_turn_ended(now, tab, conversation, user_text, assistant_text);
    }

    /// An ended turn goes to the conversation's semantic Auto (also one Goal mode gave back:
    /// its evidence said nothing of the goal's work, see `goal.rs`). `user_text` is empty
    /// when the turn was not the human's.
    pub(super) fn semantic_turn_ended(&mut self, now: Millis, tab: TabId, conversation: String, user_text: String, assistant_text: String) {
        let Some(report) = self.pages.get(&tab) else { return };
        let page = classify_url(&report.url);
        let chatgpt = page.conversation().is_some_and(|c| c.site == Site::ChatGpt);
        let scope = page.scope();
        let auto_on = scope.as_ref().is_some_and(|s| self.auto.state(s) == AutoState::On);
        let bound = scope.as_ref().is_some_and(|s| self.bindings.binding_for(s).is_some());
        let queue_waiting = self.queue_holds(&conversation);
        let settings = self.semantic.settings;
        self.semantic.autos.entry(conversation.clone()).or_insert_with(|| SemanticAuto::new(settings.mode, settings.max_continues));
        if settings.mode == JudgeMode::InAuto && auto_on && chatgpt && !bound {
            self.semantic.notes.insert(conversation.clone(), Say::new("semanticNotBound", vec![]));
            self.semantic_drain(now, &conversation, tab);
            return;
        }
        let turn = EndedTurn { user_text, assistant_text };
        if let Some(machine) = self.semantic.autos.get_mut(&conversation) {
            machine.handle(SemanticInput::TurnEnded { turn, auto_on, chatgpt, queue_waiting });
        }
        self.persist();
        self.semantic_drain(now, &conversation, tab);
    }

    /// A reply of `tab` ended after the user turn `user_marker` names (before the JSON
    /// bridge and the judge hear of it): a human turn newer than a stopped one starts a new
    /// decision (the Stop ends, a judge call for an older reply and a continue held for its
    /// App are dropped). The reply to the stopped user turn itself ends that turn, whoever
    /// wrote it, and changes nothing.
    pub(super) fn semantic_user_turn(&mut self, now: Millis, tab: TabId, user_marker: Option<&str>) {
        let Some(report) = self.pages.get(&tab) else { return };
        let Some(conversation) = queue::conversation_key(report) else { return };
        if !human_turn(user_marker) {
            return;
        }
        let (user_turns, user_turn_id) = (report.user_turns, report.last_user_turn_id.clone());
        let settings = self.semantic.settings;
        let machine =
            self.semantic.autos.entry(conversation.clone()).or_insert_with(|| SemanticAuto::new(settings.mode, settings.max_continues));
        if machine.stopped().is_some_and(|at| !at.is_older_than(user_turns, user_turn_id.as_deref())) {
            return;
        }
        machine.handle(SemanticInput::HumanTurn);
        // A new decision: the HUD no longer says the user stopped the reply (whatever the
        // judge says of this turn, or does not).
        if self.semantic.notes.get(&conversation).is_some_and(|say| say.key == "hudUserStopped") {
            self.semantic.notes.remove(&conversation);
        }
        // The user spoke: a continue still waiting for its App is not theirs to get; it
        // did not land (the machine may judge again).
        let before = self.semantic.held.len();
        self.semantic.held.retain(|h| h.delivery.is_some() || h.conversation != conversation);
        if self.semantic.held.len() < before {
            machine.handle(SemanticInput::ContinueResolved { confirmed: false });
            self.judge_activity(tab, ActivityOutcome::Withheld, "superseded_by_human", None);
        }
        self.goal_fact(now, tab, crate::goal_supervisor::GoalInput::HumanTurn);
        self.semantic_drain(now, &conversation, tab);
    }

    /// `user_stop` of the page load `page_load`: the user pressed the page's Stop (a
    /// trusted activation of its Stop control, not ours). One from an older load of the tab
    /// is not this page's and is dropped. The page also says so with the turn's end
    /// (`turn_ended.user_stopped`), which pins the Stop to the turn it belongs to when this
    /// message came before the worker heard of that turn, or was lost in a worker restart.
    pub(super) fn user_stop(&mut self, now: Millis, tab: TabId, page_load: &str) {
        if self.pages.get(&tab).is_some_and(|r| !r.page_load.is_empty() && r.page_load != page_load) {
            return;
        }
        self.stop_current_turn(now, tab);
    }

    /// The user stopped the reply streaming (or just ended) in `tab`: it is theirs to end.
    /// It is never continued automatically, a judge call out for the conversation is
    /// dropped, and a continue held for its App is dropped; until a newer human turn nothing
    /// is asked.
    pub(super) fn stop_current_turn(&mut self, now: Millis, tab: TabId) {
        let Some(report) = self.pages.get(&tab) else { return };
        let Some(conversation) = queue::conversation_key(report) else { return };
        let at = crate::semantic_auto::StoppedTurn { user_turns: report.user_turns, user_turn_id: report.last_user_turn_id.clone() };
        let settings = self.semantic.settings;
        let machine =
            self.semantic.autos.entry(conversation.clone()).or_insert_with(|| SemanticAuto::new(settings.mode, settings.max_continues));
        machine.handle(SemanticInput::UserStopped { at });
        let before = self.semantic.held.len();
        self.semantic.held.retain(|h| h.delivery.is_some() || h.conversation != conversation);
        if self.semantic.held.len() < before {
            machine.handle(SemanticInput::ContinueResolved { confirmed: false });
            self.judge_activity(tab, ActivityOutcome::Withheld, "user_stopped", None);
        }
        // The HUD says so where the judge would have continued (Auto on, the judge in Auto),
        // not in every chat the user stops.
        if settings.mode == JudgeMode::InAuto && self.scope_of_tab(tab).is_some_and(|s| self.auto.state(&s) == AutoState::On) {
            self.semantic.notes.insert(conversation.clone(), Say::new("hudUserStopped", vec![]));
        }
        self.goal_fact(now, tab, crate::goal_supervisor::GoalInput::UserStopped);
        self.persist();
        self.semantic_drain(now, &conversation, tab);
    }

    /// Whether the user stopped the last reply of `tab`'s conversation and no human turn
    /// came since (the JSON bridge's results then wait for the HUD's Send tool results).
    pub(super) fn user_stopped(&self, tab: TabId) -> bool {
        let conversation = self.pages.get(&tab).and_then(queue::conversation_key);
        conversation.and_then(|c| self.semantic.autos.get(&c)).is_some_and(|m| m.stopped().is_some())
    }

    /// The judge answered (or the call failed: fail closed, as uncertain).
    pub(super) fn semantic_answered(
        &mut self,
        now: Millis,
        conversation: &str,
        fingerprint: String,
        tab: TabId,
        result: Result<RuntimeAnswer, CallError>,
    ) {
        let (verdict, source, reason) = match result {
            Ok(RuntimeAnswer::Verdict(answer)) => (answer.verdict, answer.source, answer.reason),
            Ok(_) => (Verdict::Uncertain, "error".to_owned(), "the companion gave no verdict".to_owned()),
            Err(error) => (Verdict::Uncertain, "error".to_owned(), error.message),
        };
        let reason = crate::limits::clip(reason, SEMANTIC_REASON_MAX_CHARS);
        let Some(machine) = self.semantic.autos.get_mut(conversation) else { return };
        machine.handle(SemanticInput::Verdict { fingerprint, verdict, source, reason });
        self.persist();
        self.semantic_drain(now, conversation, tab);
    }

    /// Carries out what the conversation's machine decided.
    fn semantic_drain(&mut self, now: Millis, conversation: &str, tab: TabId) {
        while let Some(output) = self.semantic.autos.get_mut(conversation).and_then(SemanticAuto::poll) {
            let note = match output {
                SemanticOutput::Judge { fingerprint, user_text, assistant_text } => {
                    let session_ref = self.scope_of_tab(tab).map(|s| browser_session_ref(&s)).unwrap_or_default();
                    let purpose = Purpose::SemanticJudge { conversation: conversation.to_owned(), fingerprint, tab };
                    self.call(purpose, RuntimeCall::JudgeTurnEnd { user_text, assistant_text, conversation: session_ref });
                    None
                }
                // A continue's line is written when it is sent (or not).
                SemanticOutput::Decided { verdict: Verdict::Continue, .. } => None,
                SemanticOutput::Decided { verdict, source, reason } => Some(self.judge_line(verdict, &source, &reason, JudgeTail::Stops)),
                SemanticOutput::Continue { subject, source, reason } => {
                    self.semantic_continue(now, conversation, tab, &subject, &source, &reason)
                }
                // The HUD says why the judge was not asked (or its continue held to the
                // bound); the timeline records what happened to a `continue` verdict below.
                SemanticOutput::Withheld(why) => {
                    if why == crate::semantic_auto::SemanticWithheld::UserStopped {
                        self.judge_activity(tab, ActivityOutcome::Withheld, "user_stopped", None);
                    }
                    // The queue held it back because it cannot be used, not for queued turns.
                    match self.queue_trouble().filter(|_| why == crate::semantic_auto::SemanticWithheld::QueueFirst) {
                        Some(trouble) => Some(Say::coded("semanticWithheld", trouble.code(), vec![])),
                        None => texts::semantic_withheld_say(why),
                    }
                }
                // The judge call for an older reply is dropped: never typed after the human.
                SemanticOutput::Superseded { fingerprint, by_stop } => {
                    let reason = if by_stop { "user_stopped" } else { "superseded_by_human" };
                    let subject = crate::text::concat(&["judge:", &fingerprint]);
                    self.judge_activity(tab, ActivityOutcome::Withheld, reason, Some(&subject));
                    by_stop.then(|| Say::new("hudUserStopped", vec![]))
                }
            };
            if let Some(text) = note {
                self.semantic.notes.insert(conversation.to_owned(), text);
            }
        }
    }

    /// Types the continue into the page, if it is free; the HUD line when it is not.
    fn semantic_continue(&mut self, now: Millis, conversation: &str, tab: TabId, subject: &str, source: &str, reason: &str) -> Option<Say> {
        if self.semantic.autos.get(conversation).is_some_and(|m| m.stopped().is_some()) {
            // The user stopped the reply: their decision, never continued.
            if let Some(machine) = self.semantic.autos.get_mut(conversation) {
                machine.handle(SemanticInput::ContinueResolved { confirmed: false });
            }
            self.judge_activity(tab, ActivityOutcome::Withheld, "user_stopped", Some(subject));
            return Some(Say::new("hudUserStopped", vec![]));
        }
        let scope = self.scope_of_tab(tab);
        let still_on = scope.as_ref().is_some_and(|s| self.auto.state(s) == AutoState::On && self.bindings.binding_for(s).is_some());
        if !still_on {
            // Auto was switched off (or the chat unbound) while the judge was thinking.
            if let Some(machine) = self.semantic.autos.get_mut(conversation) {
                machine.handle(SemanticInput::ContinueResolved { confirmed: false });
            }
            self.judge_activity(tab, ActivityOutcome::Withheld, "auto_off", Some(subject));
            return Some(self.judge_line(Verdict::Continue, source, reason, JudgeTail::AutoOff));
        }
        if self.queue_holds(conversation) {
            // The user queued their next turn while the judge was thinking: it goes first
            // (or the stored queue cannot be read, and that is the reason said).
            if let Some(machine) = self.semantic.autos.get_mut(conversation) {
                machine.handle(SemanticInput::ContinueResolved { confirmed: false });
            }
            if let Some(trouble) = self.queue_trouble() {
                self.judge_activity(tab, ActivityOutcome::Withheld, trouble.code(), Some(subject));
                return Some(Say::coded("semanticWithheld", trouble.code(), vec![]));
            }
            self.judge_activity(tab, ActivityOutcome::Withheld, "queue_first", Some(subject));
            return texts::semantic_withheld_say(crate::semantic_auto::SemanticWithheld::QueueFirst);
        }
        if let Some(why) = scope.as_ref().and_then(|s| self.app_block(&s.key())).or_else(|| self.rate_block_tab(tab)) {
            // Never without the chat's App: it waits, and goes once attaching works.
            self.semantic.held.retain(|h| h.delivery.is_some() || h.conversation != conversation);
            let held = HeldContinue {
                conversation: conversation.to_owned(),
                delivery: None,
                tab,
                subject: subject.to_owned(),
                source: source.to_owned(),
                reason: reason.to_owned(),
            };
            self.semantic.held.push(held);
            if let Some(scope) = &scope {
                self.record_activity(
                    &scope.key(),
                    ActivityKind::JudgeContinue,
                    ActivityOutcome::Withheld,
                    ActivityReason::Withheld(why),
                    Some(subject),
                );
            }
            return Some(withheld_say(why));
        }
        let free =
            self.pages.get(&tab).filter(|r| queue::is_idle_for_queue(r) && queue::conversation_key(r).as_deref() == Some(conversation));
        let streak = self.semantic.autos.get(conversation).map_or(0, SemanticAuto::streak);
        let max = self.semantic.autos.get(conversation).map_or(0, SemanticAuto::max_continues);
        let nonce = self.fence_nonce(&self.ledger.next_id(subject));
        let body = self.judge_continue_text(source, reason, streak, max, &nonce);
        let posted = match (free.is_some(), scope) {
            (true, Some(scope)) => self.post_delivery(now, &scope.key(), tab, DeliveryKind::JudgeContinue, subject, &body, Vec::new()).ok(),
            _ => None,
        };
        if let Some(id) = posted {
            if self.ledger.active().any(|d| d.id == id && d.app.is_some()) {
                let held = HeldContinue {
                    conversation: conversation.to_owned(),
                    delivery: Some(id.clone()),
                    tab,
                    subject: subject.to_owned(),
                    source: source.to_owned(),
                    reason: reason.to_owned(),
                };
                self.semantic.held.push(held);
            }
            self.judge_activity(tab, ActivityOutcome::Sent, "verdict_continue", Some(&id));
            return Some(self.judge_line(Verdict::Continue, source, reason, JudgeTail::Sent { n: streak, max }));
        }
        self.judge_activity(tab, ActivityOutcome::Withheld, "page_busy", Some(subject));
        if let Some(machine) = self.semantic.autos.get_mut(conversation) {
            machine.handle(SemanticInput::ContinueResolved { confirmed: false });
        }
        Some(self.judge_line(Verdict::Continue, source, reason, JudgeTail::NotFree))
    }

    /// Types the continues kept back for their App whose scope is no longer held.
    pub(super) fn semantic_retry_held(&mut self, now: Millis) {
        let waiting = std::mem::take(&mut self.semantic.held);
        let (ready, kept): (Vec<HeldContinue>, Vec<HeldContinue>) = waiting.into_iter().partition(|h| {
            h.delivery.is_none()
                && self.rate_block_tab(h.tab).is_none()
                && self.scope_of_tab(h.tab).is_some_and(|s| self.app_block(&s.key()).is_none())
        });
        self.semantic.held = kept;
        for held in ready {
            if let Some(note) = self.semantic_continue(now, &held.conversation, held.tab, &held.subject, &held.source, &held.reason) {
                self.semantic.notes.insert(held.conversation, note);
            }
        }
    }

    /// A judge continue's entry in the Activity timeline of `tab`'s scope.
    fn judge_activity(&mut self, tab: TabId, outcome: ActivityOutcome, reason: &'static str, id: Option<&str>) {
        if let Some(scope) = self.scope_of_tab(tab) {
            self.record_activity(&scope.key(), ActivityKind::JudgeContinue, outcome, ActivityReason::Code(reason), id);
        }
    }

    /// How a continue's delivery ended.
    pub(super) fn semantic_resolved(&mut self, delivery: &Delivery, resolution: &Resolution) {
        if self.goal_resolved(delivery, resolution) {
            return;
        }
        let sent = self.semantic.held.iter().position(|h| h.delivery.as_deref() == Some(delivery.id.as_str()));
        let sent = sent.map(|at| self.semantic.held.remove(at));
        if let (true, Some(held)) = (resolution.app_not_attached(), sent) {
            // Its App could not be attached: it waits for the hold to end, still owed.
            self.semantic.held.push(HeldContinue { delivery: None, ..held });
            return;
        }
        let Some(conversation) = delivery.conversation.as_ref().map(|c| crate::text::concat(&[c.site.as_str(), ":", &c.conversation_id]))
        else {
            return;
        };
        if let Some(machine) = self.semantic.autos.get_mut(&conversation) {
            // Only a continue that certainly did not land leaves the bound (M7, fail closed).
            machine.handle(SemanticInput::ContinueResolved { confirmed: !resolution.retryable() });
            self.persist();
        }
    }

    /// An event of `workspace_id` starts a new run for the conversations bound to it (M7).
    pub(super) fn semantic_herdr_activity(&mut self, workspace_id: &str) {
        let conversations: Vec<String> = self
            .pages
            .values()
            .filter(|r| {
                classify_url(&r.url).scope().and_then(|s| self.bindings.binding_for(&s)).is_some_and(|b| b.workspace_id == workspace_id)
            })
            .filter_map(queue::conversation_key)
            .collect();
        for conversation in conversations {
            if let Some(machine) = self.semantic.autos.get_mut(&conversation) {
                machine.handle(SemanticInput::HerdrActivity);
            }
        }
    }

    /// The options page's judge settings (O4), validated here.
    pub(super) fn judge_settings(&mut self, stored: Option<Result<&serde_json::Value, &()>>) {
        let (settings, problem) = JudgeSettings::read(stored);
        self.semantic.settings = settings;
        self.semantic.problem = problem;
        for machine in self.semantic.autos.values_mut() {
            machine.configure(settings);
        }
        self.persist();
    }

    /// The judge settings in force.
    pub fn judge_settings_in_force(&self) -> JudgeSettings {
        self.semantic.settings
    }

    /// After a restore: judge calls of the old worker are never answered.
    pub(super) fn semantic_restored(&mut self) {
        // A continue the old worker held for its App (not persisted) is gone: it did not
        // land. One in the ledger is resolved by its delivery, as always.
        let in_ledger: Vec<String> = self
            .ledger
            .active()
            .filter(|d| d.kind == DeliveryKind::JudgeContinue)
            .filter_map(|d| d.conversation.as_ref().map(|c| crate::text::concat(&[c.site.as_str(), ":", &c.conversation_id])))
            .collect();
        for (conversation, machine) in self.semantic.autos.iter_mut() {
            machine.restored();
            if machine.continuing() && !in_ledger.contains(conversation) {
                machine.handle(SemanticInput::ContinueResolved { confirmed: false });
            }
        }
    }

    /// The HUD line of `tab`'s conversation.
    pub(super) fn semantic_line(&self, tab: TabId) -> Option<Say> {
        let conversation = self.pages.get(&tab).and_then(queue::conversation_key)?;
        self.goal_line(tab)
            .or_else(|| self.semantic.notes.get(&conversation).cloned())
            .or_else(|| self.semantic.problem.map(|problem| Say::coded("judgeSettingsBad", problem, vec![])))
    }
}

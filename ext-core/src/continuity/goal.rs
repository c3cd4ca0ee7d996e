//! Goal mode in the continuity loop (SPEC J7): the HUD's "Goal" sets the scope's goal
//! through the runtime (`goal.set`); while a goal is set, an ended turn of the scope's
//! ChatGPT chat (M6) goes to the scope's [`GoalSupervisor`] instead of semantic Auto, which asks the
//! runtime's `goal.evidence` and the judge's priors and decides; a continue is one
//! [`DeliveryKind::JudgeContinue`] through the ledger (subject `goal:<scope>#<turn>`) that
//! names the open TODO items, and the HUD line names the evidence or guard that decided
//! (`goalWhy_<code>`, the priors as advice).
//!
//! Invariants:
//! - The supervisor gets only facts: the page's ended turns, the runtime's answers, the
//!   user's Stop and human turns, its own continue's resolution; nothing is fed to semantic
//!   Auto on its behalf. A turn Goal mode decides is not shown to semantic Auto, except when
//!   the evidence says nothing of the goal's work (no TODO item yet, no goal, no evidence):
//!   then semantic Auto decides that turn as with no goal.
//! - A continue is typed only while Auto is still on, the scope bound, nothing queued, the
//!   App and the account's pace allow it, and the page is idle in the same conversation;
//!   otherwise it is resolved as not landed and the HUD says why.
//! - Priors never decide: a failed or absent judge answers "no priors", and the judge is not
//!   asked when its use is off.

use super::*;
use crate::goal_supervisor::{GoalAction, GoalCounts, GoalDecision, GoalInput, GoalOutput, GoalSupervisor, GoalWhy, Priors};
use crate::semantic_auto::JudgeMode;

/// One scope's Goal mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct GoalSlot {
    machine: GoalSupervisor,
    /// The tab and conversation of the last ended turn, and its texts (for the priors).
    tab: TabId,
    conversation: String,
    user_text: String,
    assistant_text: String,
    /// The HUD's line.
    note: Option<Say>,
    /// The ended turn whose `goal.evidence` probe (no goal known here) is out, by number.
    probing: Option<u64>,
    probes: u64,
    /// The conversation the goal belongs to (see [`GoalCounts::conversation`]).
    home: Option<String>,
    /// The goal the user cleared here: a runtime that did not store the clear still holds
    /// it, and it is not taken back from there.
    dismissed: Option<String>,
}

impl Continuity {
    /// HUD: the goal typed in our UI goes to the runtime (it is the goal's truth). An empty
    /// one clears the goal here at once, whatever the runtime answers: a runtime that cannot
    /// store the clear must not hold the scope in Goal mode.
    pub(super) fn goal_set_pressed(&mut self, tab: TabId, text: String) {
        let Some(scope) = self.scope_of_tab(tab) else { return };
        let goal = crate::limits::clip(text.trim().to_owned(), crate::goal_supervisor::GOAL_MAX_CHARS);
        let key = scope.key();
        let clear = goal.is_empty();
        let home = self.pages.get(&tab).and_then(queue::conversation_key);
        let slot = self.semantic.goals.entry(key.clone()).or_default();
        slot.dismissed = None;
        if clear {
            slot.dismissed = slot.machine.goal().map(str::to_owned);
            slot.machine.handle(self.now, GoalInput::GoalCleared);
            slot.note = Some(Say::new("goalCleared", vec![]));
            self.persist();
        }
        self.call(Purpose::GoalSet { key, clear, home }, RuntimeCall::GoalSet { session_ref: browser_session_ref(&scope), goal });
    }

    /// `goal.set` answered for the scope `key` it was asked for: its supervisor learns the
    /// goal (or that it is cleared). A failed clear stays a clear here, and says so.
    pub(super) fn goal_set_answered(&mut self, key: &str, clear: bool, home: Option<String>, result: Result<RuntimeAnswer, CallError>) {
        let slot = self.semantic.goals.entry(key.to_owned()).or_default();
        match result {
            Ok(RuntimeAnswer::GoalEvidence(evidence)) => match evidence.goal {
                Some(goal) if !clear => {
                    slot.machine.handle(self.now, GoalInput::GoalSet { text: goal.clone() });
                    slot.home = home;
                    slot.note = Some(Say::new("goalSet", vec![goal]));
                }
                _ => {
                    slot.machine.handle(self.now, GoalInput::GoalCleared);
                    slot.note = Some(Say::new("goalCleared", vec![]));
                }
            },
            Ok(_) if clear => slot.note = Some(Say::new("goalClearUnstored", vec!["the companion gave no goal".to_owned()])),
            Err(error) if clear => slot.note = Some(Say::new("goalClearUnstored", vec![crate::limits::clip(error.message, 200)])),
            Ok(_) => slot.note = Some(Say::new("goalSetFailed", vec!["the companion gave no goal".to_owned()])),
            Err(error) => slot.note = Some(Say::new("goalSetFailed", vec![crate::limits::clip(error.message, 200)])),
        }
        self.persist();
    }

    /// A reply of `tab` ended: Goal mode takes it when the scope has a goal (`true`).
    pub(super) fn goal_turn_ended(&mut self, now: Millis, tab: TabId, conversation: &str, user_text: &str, assistant_text: &str) -> bool {
        let Some(scope) = self.scope_of_tab(tab) else { return false };
        let key = scope.key();
        let auto_on = self.auto.state(&scope) == AutoState::On && self.bindings.binding_for(&scope).is_some();
        // The user's Stop as semantic Auto keeps it (saved, and pinned to the stopped turn):
        // it holds for Goal mode too, also when the supervisor's own flag was lost.
        let stopped = self.user_stopped(tab);
        let known = self.semantic.goals.get(&key).is_some_and(|slot| slot.machine.goal().is_some());
        if !known && (!auto_on || stopped) {
            return false;
        }
        // A Project's goal is one chat's: another chat of the Project is semantic Auto's.
        if known && self.semantic.goals.get(&key).and_then(|slot| slot.home.as_deref()).is_some_and(|home| home != conversation) {
            return false;
        }
        let queue_waiting = self.queue_holds(conversation);
        let slot = self.semantic.goals.entry(key.clone()).or_default();
        slot.tab = tab;
        slot.conversation = conversation.to_owned();
        slot.user_text = user_text.to_owned();
        slot.assistant_text = assistant_text.to_owned();
        slot.probing = None;
        if !known {
            // No goal known here: the planner may have set one (`work_memory.goal`). One
            // `goal.evidence` asks; the turn waits for it (see `goal_probe_answered`).
            slot.probes += 1;
            let turn = slot.probes;
            slot.probing = Some(turn);
            let workspace_id = self.bindings.binding_for(&scope).map(|b| b.workspace_id.clone()).unwrap_or_default();
            self.call(
                Purpose::GoalProbe { key, turn },
                RuntimeCall::GoalEvidence { session_ref: browser_session_ref(&scope), workspace_id },
            );
            return true;
        }
        if let Some(slot) = self.semantic.goals.get_mut(&key) {
            if stopped && !slot.machine.stopped() {
                slot.machine.handle(now, GoalInput::UserStopped);
            }
            slot.machine.handle(now, GoalInput::TurnEnded { auto_on, queue_waiting });
        }
        self.goal_drain(now, &key);
        true
    }

    /// The probe of an ended turn (no goal known here) answered: a goal the runtime holds
    /// (the planner's) is taken and Goal mode decides the turn; no goal, an error or an
    /// answer of another shape leaves the turn to semantic Auto (no goal is made up). An
    /// answer for an older turn, or after the human wrote, is dropped.
    pub(super) fn goal_probe_answered(&mut self, now: Millis, key: &str, turn: u64, result: Result<RuntimeAnswer, CallError>) {
        let Some(slot) = self.semantic.goals.get_mut(key) else { return };
        if slot.probing != Some(turn) {
            return;
        }
        slot.probing = None;
        let goal = match result {
            Ok(RuntimeAnswer::GoalEvidence(evidence)) => {
                evidence.goal.map(|g| crate::limits::clip(g.trim().to_owned(), crate::goal_supervisor::GOAL_MAX_CHARS))
            }
            _ => None,
        };
        let slot = slot.clone();
        match goal.filter(|g| !g.is_empty() && slot.dismissed.as_deref() != Some(g.as_str())) {
            Some(goal) => {
                if let Some(held) = self.semantic.goals.get_mut(key) {
                    held.machine.handle(now, GoalInput::GoalSet { text: goal.clone() });
                    held.home = Some(slot.conversation.clone());
                    held.note = Some(Say::new("goalAdopted", vec![goal]));
                }
                self.persist();
                let current = self.pages.get(&slot.tab).and_then(queue::conversation_key);
                if current.as_deref() == Some(slot.conversation.as_str()) {
                    self.goal_turn_ended(now, slot.tab, &slot.conversation, &slot.user_text, &slot.assistant_text);
                }
            }
            None => self.goal_give_back(now, key, &slot, None),
        }
    }

    /// A fact of `tab` for its scope's supervisor (a human turn, the user's Stop).
    pub(super) fn goal_fact(&mut self, now: Millis, tab: TabId, input: GoalInput) {
        let Some(key) = self.scope_of_tab(tab).map(|s| s.key()) else { return };
        if let Some(slot) = self.semantic.goals.get_mut(&key) {
            // The human wrote (or stopped): a probe for the turn before is not theirs.
            slot.probing = None;
            slot.machine.handle(now, input);
            self.goal_drain(now, &key);
        }
    }

    /// `goal.evidence` answered (an error, or an answer of another shape, is no evidence).
    pub(super) fn goal_evidence_answered(&mut self, now: Millis, key: &str, turn: u64, result: Result<RuntimeAnswer, CallError>) {
        let evidence = match result {
            Ok(RuntimeAnswer::GoalEvidence(evidence)) => Ok(evidence),
            Ok(_) => Err("the companion gave no goal evidence".to_owned()),
            Err(error) => Err(crate::limits::clip(error.message, 200)),
        };
        if let Some(slot) = self.semantic.goals.get_mut(key) {
            // The runtime's goal is the truth (the planner may have changed it): the continue
            // fences that text, and the HUD names it.
            // A rewording does not lift the bound on rounds.
            if let Ok(Some(goal)) = evidence.as_ref().map(|e| e.goal.as_deref()) {
                slot.machine.reword(goal);
            }
            slot.machine.handle(now, GoalInput::Evidence { turn, evidence });
            self.goal_drain(now, key);
            // The runtime may have cleared the goal.
            self.persist();
        }
    }

    /// The judge answered for the priors (advice only: a failure is no priors).
    pub(super) fn goal_priors_answered(&mut self, now: Millis, key: &str, turn: u64, result: Result<RuntimeAnswer, CallError>) {
        let priors = match result {
            Ok(RuntimeAnswer::Verdict(answer)) if !answer.priors.is_empty() => Some(Priors(answer.priors)),
            _ => None,
        };
        if let Some(slot) = self.semantic.goals.get_mut(key) {
            slot.machine.handle(now, GoalInput::Priors { turn, priors });
            self.goal_drain(now, key);
        }
    }

    /// The earliest supervisor deadline.
    pub(super) fn goal_deadline(&self) -> Option<Millis> {
        self.semantic.goals.values().filter_map(|slot| slot.machine.next_deadline()).min()
    }

    /// Ticks the supervisors whose deadline passed.
    pub(super) fn goal_tick(&mut self, now: Millis) {
        let due: Vec<String> = self
            .semantic
            .goals
            .iter()
            .filter(|(_, s)| s.machine.next_deadline().is_some_and(|at| at <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            if let Some(slot) = self.semantic.goals.get_mut(&key) {
                slot.machine.handle(now, GoalInput::Tick);
            }
            self.goal_drain(now, &key);
        }
    }

    /// Whether `delivery` is a goal continue; if so, its supervisor hears how it ended.
    pub(super) fn goal_resolved(&mut self, delivery: &Delivery, resolution: &Resolution) -> bool {
        let Some(rest) = delivery.id.strip_prefix("goal:") else { return false };
        let key = rest.rsplit_once('#').map_or(rest, |(key, _)| key);
        if let Some(slot) = self.semantic.goals.get_mut(key) {
            slot.machine.handle(self.now, GoalInput::ContinueResolved { confirmed: !resolution.retryable() });
        }
        true
    }

    /// The goals in force per scope key (persisted).
    pub(super) fn goal_texts(&self) -> VecMap<String, String> {
        let mut out = VecMap::default();
        for (key, slot) in self.semantic.goals.iter() {
            if let Some(goal) = slot.machine.goal() {
                out.insert(key.clone(), goal.to_owned());
            }
        }
        out
    }

    /// The rounds, last continue and Stop per scope with a goal (persisted).
    pub(super) fn goal_counts(&self) -> VecMap<String, GoalCounts> {
        let mut out = VecMap::default();
        for (key, slot) in self.semantic.goals.iter() {
            if slot.machine.goal().is_some() {
                out.insert(key.clone(), GoalCounts { conversation: slot.home.clone(), ..slot.machine.counts() });
            }
        }
        out
    }

    /// After a restore: each scope's supervisor knows its goal, its rounds, its last
    /// continue and the user's Stop again.
    pub(super) fn restore_goals(&mut self, goals: VecMap<String, String>, counts: VecMap<String, GoalCounts>, now: Millis) {
        for (key, goal) in goals.iter() {
            let slot = self.semantic.goals.entry(key.clone()).or_default();
            slot.machine.handle(now, GoalInput::GoalSet { text: goal.clone() });
            if let Some(saved) = counts.get(key) {
                slot.machine.restore_counts(saved);
                slot.home = saved.conversation.clone();
            }
        }
    }

    /// The HUD line of `tab`'s scope while it has a goal (or just said something about it).
    pub(super) fn goal_line(&self, tab: TabId) -> Option<Say> {
        let key = self.scope_of_tab(tab)?.key();
        self.semantic.goals.get(&key)?.note.clone()
    }

    /// Carries out what the scope's supervisor decided.
    fn goal_drain(&mut self, now: Millis, key: &str) {
        while let Some(output) = self.semantic.goals.get_mut(key).and_then(|s| s.machine.poll()) {
            let Some(slot) = self.semantic.goals.get(key).cloned() else { return };
            match output {
                GoalOutput::FetchEvidence { turn } => {
                    let scope = self.scope_of_tab(slot.tab);
                    let workspace_id =
                        scope.as_ref().and_then(|s| self.bindings.binding_for(s)).map(|b| b.workspace_id.clone()).unwrap_or_default();
                    let session_ref = scope.as_ref().map(browser_session_ref).unwrap_or_default();
                    self.call(Purpose::GoalEvidence { key: key.to_owned(), turn }, RuntimeCall::GoalEvidence { session_ref, workspace_id });
                }
                GoalOutput::AskPriors { turn } => {
                    if self.semantic.settings.mode == JudgeMode::Off {
                        if let Some(slot) = self.semantic.goals.get_mut(key) {
                            slot.machine.handle(now, GoalInput::Priors { turn, priors: None });
                        }
                        continue;
                    }
                    let conversation = self.scope_of_tab(slot.tab).map(|s| browser_session_ref(&s)).unwrap_or_default();
                    let call = RuntimeCall::JudgeTurnEnd {
                        user_text: slot.user_text.clone(),
                        assistant_text: slot.assistant_text.clone(),
                        conversation,
                    };
                    self.call(Purpose::GoalPriors { key: key.to_owned(), turn }, call);
                }
                GoalOutput::Decided(decision) => {
                    let mut note = Some(goal_say(&decision));
                    if let Some(trouble) = self.queue_trouble().filter(|_| decision.why == GoalWhy::QueueFirst) {
                        // The queue held it back because it cannot be used.
                        note = note.map(|say| Say::coded("goalWhy", trouble.code(), say.args));
                    }
                    if decision.action == GoalAction::Continue {
                        if let Some(withheld) = self.goal_continue(now, key, &slot, &decision) {
                            note = Some(withheld);
                        }
                    }
                    if gives_back(&decision.why) {
                        self.goal_give_back(now, key, &slot, note);
                        continue;
                    }
                    if let Some(slot) = self.semantic.goals.get_mut(key) {
                        slot.note = note;
                    }
                }
            }
        }
    }

    /// Goal mode's evidence said nothing of the goal's work: the turn goes to semantic Auto
    /// as if no goal were set (its judge decides, and its line replaces Goal mode's), while
    /// the page still shows that turn as the conversation's last.
    fn goal_give_back(&mut self, now: Millis, key: &str, slot: &GoalSlot, note: Option<Say>) {
        if let Some(slot) = self.semantic.goals.get_mut(key) {
            slot.note = None;
        }
        if let Some(note) = note {
            self.semantic.notes.insert(slot.conversation.clone(), note);
        }
        let current = self.pages.get(&slot.tab).and_then(queue::conversation_key);
        if current.as_deref() == Some(slot.conversation.as_str()) {
            self.semantic_turn_ended(now, slot.tab, slot.conversation.clone(), slot.user_text.clone(), slot.assistant_text.clone());
        }
    }

    /// Types the goal continue, if the guards and the page allow it now; else why not.
    fn goal_continue(&mut self, now: Millis, key: &str, slot: &GoalSlot, decision: &GoalDecision) -> Option<Say> {
        let scope = self.scope_of_tab(slot.tab).filter(|s| s.key() == key);
        let still_on = scope.as_ref().is_some_and(|s| self.auto.state(s) == AutoState::On && self.bindings.binding_for(s).is_some());
        let why = if !still_on {
            Some(Say::coded("goalWhy", "auto_off", vec!["—".to_owned()]))
        } else if self.user_stopped(slot.tab) {
            Some(Say::coded("goalWhy", "user_stopped", vec!["—".to_owned()]))
        } else if self.queue_holds(&slot.conversation) {
            let code = self.queue_trouble().map_or("queue_first", |trouble| trouble.code());
            Some(Say::coded("goalWhy", code, vec!["—".to_owned()]))
        } else {
            scope.as_ref().and_then(|s| self.app_block(&s.key())).or_else(|| self.rate_block_tab(slot.tab)).map(withheld_say)
        };
        let free = self
            .pages
            .get(&slot.tab)
            .is_some_and(|r| queue::is_idle_for_queue(r) && queue::conversation_key(r).as_deref() == Some(slot.conversation.as_str()));
        let posted = match (why.is_none() && free, scope) {
            (true, Some(scope)) => {
                let subject = crate::text::concat(&["goal:", key, "#", &decision.turn.to_string()]);
                let nonce = self.fence_nonce(&self.ledger.next_id(&subject));
                let goal = slot.machine.goal().unwrap_or_default().to_owned();
                let body = self.goal_continue_text(&goal, decision, slot.machine.rounds(), &nonce);
                self.post_delivery(now, &scope.key(), slot.tab, DeliveryKind::JudgeContinue, &subject, &body, Vec::new()).ok()
            }
            _ => None,
        };
        if posted.is_some() {
            return None;
        }
        if let Some(slot) = self.semantic.goals.get_mut(key) {
            slot.machine.handle(now, GoalInput::ContinueResolved { confirmed: false });
        }
        Some(why.unwrap_or_else(|| Say::new("goalPageBusy", vec![])))
    }

    /// The goal continue: the goal (fenced: the user's or the planner's text), the
    /// evidence that decided, and how to mark items done.
    fn goal_continue_text(&self, goal: &str, decision: &GoalDecision, round: u32, nonce: &continuity_protocol::fence::Nonce) -> String {
        let goal = texts::fenced(self.language, "goal", goal, nonce);
        let args = decision.why.args();
        let (open, done) = (args.first().cloned().unwrap_or_default(), args.get(1).cloned().unwrap_or_default());
        self.fill(
            "[Herdr] Goal mode: the goal below still has $2 open TODO items ($3 done) in Work Memory. Go on with the next open item now; mark items done with work_memory.goal as you finish them. If it needs me, say so and stop. (Goal continue $4.)\n$1",
            "[Herdr] 目标模式：下面的目标在 Work Memory 中还有 $2 个未完成的 TODO 项（已完成 $3 个）。请现在继续下一个未完成项；完成后用 work_memory.goal 把它标记为完成。如果需要我，请说明并停止。（第 $4 次目标继续。）\n$1",
            &[&goal, &open, &done, &round.to_string()],
        )
    }
}

/// Whether the decision leaves the turn to semantic Auto: the evidence says nothing of the
/// goal's work (no TODO item yet, no goal, or no evidence). Every TODO item done, a blocked
/// workspace, running tasks and the guards stay final.
fn gives_back(why: &GoalWhy) -> bool {
    matches!(why, GoalWhy::NothingOpen | GoalWhy::NoGoal | GoalWhy::EvidenceUnavailable { .. })
}

/// The HUD line of a decision: `goalWhy_<code>` with its args, the last one the priors as
/// advice (`—` when the judge gave none).
fn goal_say(decision: &GoalDecision) -> Say {
    let mut args = decision.why.args();
    let advice = decision.priors.line();
    args.push(if advice.is_empty() { "—".to_owned() } else { advice });
    Say::coded("goalWhy", decision.why.code(), args)
}

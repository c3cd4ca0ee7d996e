//! The HUD's manual actions (M4): Continue (through the delivery ledger, like every other
//! message), Check Herdr (live pane state into the composer, not sent) and the LLM judge
//! (the runtime's semantic service; the extension holds no provider, J4).
//!
//! Check Herdr's runs are [`crate::check_herdr::CheckHerdr`]'s: this file hands it the
//! press and the answers, and turns its outputs into calls, notices and the insert.
//!
//! Invariants: a manual Continue is refused, with the reason, while a delivery is in
//! flight, while the page generates or holds a human draft, or when its layout is unknown.

use super::*;
use crate::check_herdr::{CheckInput, CheckOutput, CheckRefusal};

impl Continuity {
    pub(super) fn manual_continue(&mut self, now: Millis, tab: TabId) {
        let page = self.page_kind(tab);
        let refuse = |this: &mut Self, say: Say| this.notice(tab, say, NoticeTone::Bad);
        if let Err(locked) = self.auto.hud_action(&page, HudAction::Continue) {
            return refuse(self, locked_say(locked));
        }
        let Some(scope) = page.scope() else { return };
        let Some(binding) = self.bindings.binding_for(&scope).cloned() else {
            return refuse(self, withheld_say(WakeWithheld::NotBound));
        };
        let report = self.pages.get(&tab).cloned().unwrap_or_default();
        let blocker = if self.in_flight(&scope.key()).is_some() || report.composer_marker.is_some() {
            Some(WakeWithheld::UnconfirmedDelivery)
        } else if report.generating || report.permission_card {
            Some(WakeWithheld::PageGenerating)
        } else if report.draft {
            Some(WakeWithheld::HumanDraft)
        } else if !report.composer {
            Some(WakeWithheld::NoComposer)
        } else if report.unresolved.is_some() {
            Some(WakeWithheld::FactUnresolved)
        } else {
            None
        };
        if let Some(reason) = blocker {
            return refuse(self, Self::manual_refusal(reason));
        }
        // Never without the chat's App: the HUD's line says why (ambiguous, or not attached).
        if let Some(reason) = self.app_block(&scope.key()) {
            return refuse(self, withheld_say(reason));
        }
        let (label, id) = (binding.label.as_str(), binding.workspace_id.as_str());
        let body = match self.language {
            Language::En => crate::text::concat(&["[Herdr] Continue with workspace ", label, " (", id, "). This is a manual nudge, not evidence that anything succeeded. Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop."]),
            Language::Zh => crate::text::concat(&["[Herdr] 继续 workspace ", label, "（", id, "）。这是手动提醒，不代表任何工作已成功。请重新读取实时 Herdr/Git 状态，检查 Agent 输出、diff 和测试，再决定继续、返工、合并还是停止。"]),
        };
        let subject = crate::text::concat(&["continue:", &binding.workspace_id]);
        if self.post_delivery(now, &scope.key(), tab, DeliveryKind::Continue, &subject, &body, Vec::new()).is_err() {
            refuse(self, Self::manual_refusal(WakeWithheld::FactUnresolved));
        }
    }

    /// A manual Continue the page did not send — its own last look found what the worker's
    /// facts did not show yet (a draft typed a moment before the press, a reply started), or
    /// a reload lost it — is dropped, never retried; the HUD says why and to press again. An
    /// App that could not be attached and an abandoned delivery have their own notices.
    pub(super) fn continue_not_sent(&mut self, delivery: &Delivery, resolution: &Resolution) {
        let say = match resolution {
            Resolution::NotSent { .. } if resolution.app_not_attached() => return,
            Resolution::NotSent { reason } => match reason.as_str() {
                "human_draft" => Self::manual_refusal(WakeWithheld::HumanDraft),
                "busy" => Self::manual_refusal(WakeWithheld::PageGenerating),
                "no_composer" => Self::manual_refusal(WakeWithheld::NoComposer),
                "fact_unresolved" | "unknown_layout" => Self::manual_refusal(WakeWithheld::FactUnresolved),
                _ => Say::new("manualNotSent", vec![]),
            },
            Resolution::Lost => Say::new("manualNotSent", vec![]),
            Resolution::Confirmed | Resolution::Abandoned => return,
        };
        self.notice(delivery.tab, say, NoticeTone::Bad);
    }

    /// The HUD's Check Herdr: the machine hears the press with the action's lock and the
    /// chat's binding as they are.
    pub(super) fn check_herdr(&mut self, now: Millis, tab: TabId) {
        let page = self.page_kind(tab);
        let locked = self.auto.hud_action(&page, HudAction::CheckHerdr).err();
        let workspace_id = page.scope().and_then(|s| self.bindings.binding_for(&s)).map(|b| b.workspace_id.clone());
        self.check_input(now, CheckInput::Pressed { tab, locked, workspace_id });
    }

    /// Feeds [`crate::check_herdr::CheckHerdr`] and carries out what it decides.
    pub(super) fn check_input(&mut self, now: Millis, input: CheckInput) {
        self.check.handle(now, input);
        while let Some(output) = self.check.poll() {
            match output {
                CheckOutput::Refused { tab, why: CheckRefusal::Locked(locked) } => self.notice(tab, locked_say(locked), NoticeTone::Bad),
                CheckOutput::Refused { tab, why: CheckRefusal::NotBound } => {
                    self.notice(tab, withheld_say(WakeWithheld::NotBound), NoticeTone::Bad)
                }
                CheckOutput::ReadPanes { tab, run, workspace_id } => {
                    self.call(Purpose::CheckPanes { tab, run }, RuntimeCall::Panes { workspace_id });
                }
                CheckOutput::ReadPane { tab, run, pane_id } => {
                    let call = RuntimeCall::PaneRead { pane_id: pane_id.clone(), lines: CHECK_HERDR_LINES };
                    self.call(Purpose::CheckRead { tab, run, pane_id }, call);
                }
                CheckOutput::Failed { tab, message } => self.notice(tab, Say::new("checkHerdrFailed", vec![message]), NoticeTone::Bad),
                CheckOutput::Summary { tab, seq, workspace_id, panes, texts } => {
                    // Inserted, not delivered: no delivery id, so the run's number stands in.
                    let nonce = self.fence_nonce(&format!("check:{tab}:{seq}"));
                    let text = check_herdr_summary(self.language, &workspace_id, &panes, &texts, &nonce);
                    self.emit(ContinuityOutput::Insert { tab, text });
                }
            }
        }
    }

    pub(super) fn llm_judge(&mut self, tab: TabId, user_text: String, assistant_text: String) {
        let page = self.page_kind(tab);
        // No button offers it elsewhere (views): a request from another site asks nothing.
        if !super::views::judged_site(&page) {
            return;
        }
        if let Err(locked) = self.auto.hud_action(&page, HudAction::LlmJudge) {
            return self.notice(tab, locked_say(locked), NoticeTone::Bad);
        }
        let Some(scope) = page.scope() else { return };
        if self.semantic.settings.mode == crate::semantic_auto::JudgeMode::Off {
            return self.notice(tab, Say::new("judgeOff", vec![]), NoticeTone::Bad);
        }
        // The same chain as semantic Auto; the answer is shown, never acted on.
        self.call(
            Purpose::Judge { tab },
            RuntimeCall::JudgeTurnEnd { user_text, assistant_text, conversation: browser_session_ref(&scope) },
        );
    }
}

impl Continuity {
    /// `herdr.panes` answered for a Check Herdr run.
    pub(super) fn check_panes_answered(&mut self, now: Millis, tab: TabId, run: u64, result: Result<RuntimeAnswer, CallError>) {
        let panes = match result {
            Ok(RuntimeAnswer::Panes { panes }) => Ok(panes),
            Err(error) => Err(error.message),
            Ok(_) => Err("the companion answered herdr.panes with an unexpected result".to_owned()),
        };
        self.check_input(now, CheckInput::Panes { tab, run, panes });
    }

    /// One pane's text for a Check Herdr run.
    pub(super) fn check_read_answered(
        &mut self,
        now: Millis,
        tab: TabId,
        run: u64,
        pane_id: String,
        result: Result<RuntimeAnswer, CallError>,
    ) {
        let text = match result {
            Ok(RuntimeAnswer::PaneText { pane_id, text }) => Some((pane_id, text)),
            _ => None,
        };
        self.check_input(now, CheckInput::PaneText { tab, run, pane_id, text });
    }

    /// The judge's verdict for the HUD button (J4: only the runtime's semantic service
    /// judges): verdict, source, reason and the J7 priors as advice.
    pub(super) fn judge_answered(&mut self, tab: TabId, result: Result<RuntimeAnswer, CallError>) {
        let (say, tone) = match result {
            Ok(RuntimeAnswer::Verdict(answer)) => (self.judge_answer(&answer), NoticeTone::Info),
            Ok(_) => (Say::new("judgeNoVerdict", vec![]), NoticeTone::Bad),
            Err(error) if error.code == ErrorCode::UnknownMethod => {
                (Say::new("judgeUnavailable", vec![error.message.trim_end_matches('.').to_owned()]), NoticeTone::Bad)
            }
            Err(error) => (Say::new("judgeFailed", vec![error.message]), NoticeTone::Bad),
        };
        self.notice(tab, say, tone);
    }
}

//! The HUD's manual actions (M4): Continue (through the delivery ledger, like every other
//! message), Check Herdr (live pane state into the composer, not sent) and the LLM judge
//! (the runtime's semantic service; the extension holds no provider, J4).
//!
//! Invariants: a manual Continue is refused, with the reason, while a delivery is in
//! flight, while the page generates or holds a human draft, or when its layout is unknown.

use super::*;

impl Continuity {
    pub(super) fn manual_continue(&mut self, now: Millis, tab: TabId) {
        let page = self.page_kind(tab);
        let refuse = |this: &mut Self, text: String| {
            this.outputs.push_back(ContinuityOutput::Notice { tab, text, tone: NoticeTone::Bad });
        };
        if let Err(locked) = self.auto.hud_action(&page, HudAction::Continue) {
            return refuse(self, self.locked_text(locked));
        }
        let Some(scope) = page.scope() else { return };
        let Some(binding) = self.bindings.binding_for(&scope).cloned() else {
            return refuse(self, self.withheld_text(WakeWithheld::NotBound));
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
        } else if report.generation.is_none() {
            Some(WakeWithheld::UnknownLayout)
        } else {
            None
        };
        if let Some(reason) = blocker {
            return refuse(self, self.manual_refusal_text(reason));
        }
        let body = match self.language {
            Language::En => format!("[Herdr] Continue with workspace {} ({}). This is a manual nudge, not evidence that anything succeeded. Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop.", binding.label, binding.workspace_id),
            Language::Zh => format!("[Herdr] 继续 workspace {}（{}）。这是手动提醒，不代表任何工作已成功。请重新读取实时 Herdr/Git 状态，检查 Agent 输出、diff 和测试，再决定继续、返工、合并还是停止。", binding.label, binding.workspace_id),
        };
        let subject = format!("continue:{}", binding.workspace_id);
        if self.post_delivery(now, &scope.key(), tab, DeliveryKind::Continue, &subject, &body, Vec::new()).is_err() {
            refuse(self, self.manual_refusal_text(WakeWithheld::UnknownLayout));
        }
    }

    pub(super) fn check_herdr(&mut self, tab: TabId) {
        let page = self.page_kind(tab);
        if let Err(locked) = self.auto.hud_action(&page, HudAction::CheckHerdr) {
            self.outputs.push_back(ContinuityOutput::Notice { tab, text: self.locked_text(locked), tone: NoticeTone::Bad });
            return;
        }
        let Some(binding) = page.scope().and_then(|s| self.bindings.binding_for(&s).cloned()) else {
            self.outputs.push_back(ContinuityOutput::Notice { tab, text: self.withheld_text(WakeWithheld::NotBound), tone: NoticeTone::Bad });
            return;
        };
        self.checks.insert(tab, CheckRun { workspace_id: binding.workspace_id.clone(), ..CheckRun::default() });
        self.call(Purpose::CheckPanes { tab }, RuntimeCall::Panes { workspace_id: binding.workspace_id });
    }

    pub(super) fn finish_check(&mut self, tab: TabId) {
        let done = self.checks.get(&tab).is_some_and(|run| run.waiting.is_empty());
        if !done {
            return;
        }
        let Some(run) = self.checks.remove(&tab) else { return };
        let text = check_herdr_summary(&run.workspace_id, &run.panes, &run.texts);
        self.outputs.push_back(ContinuityOutput::Insert { tab, text });
    }

    pub(super) fn llm_judge(&mut self, tab: TabId, user_text: String, assistant_text: String) {
        let page = self.page_kind(tab);
        // No button offers it elsewhere (views): a request from another site asks nothing.
        if !super::views::judged_site(&page) {
            return;
        }
        if let Err(locked) = self.auto.hud_action(&page, HudAction::LlmJudge) {
            self.outputs.push_back(ContinuityOutput::Notice { tab, text: self.locked_text(locked), tone: NoticeTone::Bad });
            return;
        }
        let Some(scope) = page.scope() else { return };
        if self.semantic.settings.mode == crate::semantic_auto::JudgeMode::Off {
            let text = self.fill("The judge is off (options page, \"Turn-end judge\"); nothing was asked.", "判断服务已关闭（选项页“回合结束判断”）；没有询问。", &[]);
            self.outputs.push_back(ContinuityOutput::Notice { tab, text, tone: NoticeTone::Bad });
            return;
        }
        // The same chain as semantic Auto; the answer is shown, never acted on.
        self.call(Purpose::Judge { tab }, RuntimeCall::JudgeTurnEnd { user_text, assistant_text, conversation: browser_session_ref(&scope) });
    }
}

impl Continuity {
    /// `herdr.panes` for a Check Herdr run: read each agent pane (at most 8), or say why not.
    pub(super) fn check_panes_answered(&mut self, tab: TabId, result: Result<RuntimeAnswer, CallError>) {
        let panes = match result {
            Ok(RuntimeAnswer::Panes { panes }) => panes,
            other => return self.check_failed(tab, other),
        };
        let reads: Vec<PaneInfo> = panes.clone();
        if let Some(run) = self.checks.get_mut(&tab) {
            run.panes = panes;
        } else {
            return;
        }
        for pane in reads.iter().filter(|p| p.agent.is_some()).take(8) {
            let id = self.call(
                Purpose::CheckRead { tab },
                RuntimeCall::PaneRead { pane_id: pane.pane_id.clone(), lines: CHECK_HERDR_LINES },
            );
            if let Some(run) = self.checks.get_mut(&tab) {
                if self.calls.contains_key(&id) {
                    run.waiting.insert(id);
                }
            }
        }
        self.finish_check(tab);
    }

    fn check_failed(&mut self, tab: TabId, result: Result<RuntimeAnswer, CallError>) {
        self.checks.remove(&tab);
        let message = match result {
            Err(error) => error.message,
            Ok(_) => "the companion answered herdr.panes with an unexpected result".to_owned(),
        };
        let text = self.say(
            format!("Check Herdr failed: {message}. Check the companion line above, then try again."),
            format!("提取 Herdr 状态失败：{message}。请查看上方的 companion 状态，然后重试。"),
        );
        self.outputs.push_back(ContinuityOutput::Notice { tab, text, tone: NoticeTone::Bad });
    }

    /// One pane's text for a Check Herdr run.
    pub(super) fn check_read_answered(&mut self, tab: TabId, result: Result<RuntimeAnswer, CallError>) {
        if let Some(run) = self.checks.get_mut(&tab) {
            run.waiting.retain(|id| self.calls.contains_key(id));
            if let Ok(RuntimeAnswer::PaneText { pane_id, text }) = result {
                run.texts.insert(pane_id, text);
            }
        }
        self.finish_check(tab);
    }

    /// The judge's verdict for the HUD button (J4: only the runtime's semantic service
    /// judges): verdict, source, reason and the J7 priors as advice.
    pub(super) fn judge_answered(&mut self, tab: TabId, result: Result<RuntimeAnswer, CallError>) {
        let (text, tone) = match result {
            Ok(RuntimeAnswer::Verdict(answer)) => (self.judge_answer_text(&answer), NoticeTone::Info),
            Ok(_) => (self.fill("Judge: the companion gave no verdict.", "判断：companion 没有给出结论。", &[]), NoticeTone::Bad),
            Err(error) if error.code == ErrorCode::UnknownMethod => (
                self.fill(
                    "The judge is not available: this companion has no turn-end judge (it answered: $1). Nothing was sent; use Continue or Check Herdr instead.",
                    "判断不可用：这个 companion 没有回合结束判断服务（它的回答：$1）。没有发送任何内容；请改用“继续”或“提取 Herdr 状态”。",
                    &[error.message.trim_end_matches('.')],
                ),
                NoticeTone::Bad,
            ),
            Err(error) => (self.fill("Judge failed: $1", "判断失败：$1", &[&error.message]), NoticeTone::Bad),
        };
        self.outputs.push_back(ContinuityOutput::Notice { tab, text, tone });
    }
}

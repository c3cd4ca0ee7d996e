// Content script: the HUD's lines, rendered from the view the worker sends — the
// continuity part, the JSON bridge's approval card, permission-card, recovery and
// page-health lines. Keys, substitutions and tones come from the view.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const TO_WORKER = globalThis.herdrContracts.messages.page_to_worker; // extension/contracts.js
  const { text, onTrusted, host, continuity, status, hooks, para, fmtTime, factUnresolvedText, goalUi, pressRefused,
    handoffButton, setChildren, keptButton } = hc;

  // The continuity part of the view (ext-core hud ContinuityView): lines, data-* hooks for
  // tests, and buttons whose locks the worker decided.
  const renderContinuity = (view) => {
    const c = view.continuity;
    const state = {
      binding: c?.binding?.workspace_id ?? '',
      activeTarget: c?.active_target ?? '',
      auto: c?.auto ?? 'off',
      scopeState: c?.scope_state ?? 'idle',
      wakeCount: String(c?.wake_count ?? 0),
      progressCount: String(c?.progress_count ?? 0),
      withheld: c?.withheld?.code ?? '',
      tasks: c?.tasks ? `${c.tasks.running}/${c.tasks.unacked}` : '',
      layout: c?.layout ?? '',
      unresolved: c?.unresolved ? `${c.unresolved.fact}:${c.unresolved.why}` : '',
      deliveryState: c?.delivery_state ?? '',
      recoveryState: c?.recovery?.state ?? '',
      recoveryReason: c?.recovery?.reason ?? '',
      recoveryProbes: String(c?.recovery?.probes ?? 0),
      recoveryReloadsLeft: c?.recovery ? String(c.recovery.reloads_left) : '',
      cardState: c?.card?.state ?? '',
      cardCode: c?.card?.code ?? '',
      cardTool: c?.card?.tool ?? '',
      journal: c?.journal?.key ?? '',
      pressureLevel: c?.pressure?.level ?? '',
      pressureTokens: c?.pressure ? String(c.pressure.tokens) : '',
      pressureMessages: c?.pressure ? String(c.pressure.messages) : '',
      rollover: c?.rollover ?? '',
      handoffStep: c?.handoff?.step ?? '',
      handoffButton: c?.handoff?.button ?? '',
      // The chat's learned App (its keyword), `ambiguous`, or '' (plain messages).
      app: c?.app?.keyword ?? (c?.app_ambiguous ? 'ambiguous' : ''),
      // The account's rate-limit cooldown end (epoch ms), or ''.
      cooldownUntil: c?.cooldown_until ? String(c.cooldown_until) : '',
    };
    Object.assign(hooks.dataset, state);
    if (!c?.bridge) Object.assign(hooks.dataset, { bridgePending: '0', bridgeRoundLimit: 'no' });
    healthView(c?.health ?? null);
    if (!c) { continuity.replaceChildren(); return []; }
    const out = [];
    if (c.binding) out.push(para('binding', 'hudBound', [c.binding.label, c.binding.workspace_id]));
    else if (c.pending_binding) out.push(para('binding', 'hudPendingBinding', [c.pending_binding.label, c.pending_binding.workspace_id]));
    else out.push(para('binding', 'hudNotBound', []));
    if (c.page_kind === 'project_chat' || c.page_kind === 'project_home') {
      out.push(c.active_target ? para('target', 'hudActiveTarget', [`/c/${c.active_target}`]) : para('target', 'hudNoActiveTarget', []));
    }
    if (c.app) out.push(para('app', 'hudApp', [c.app.name]));
    if (c.session_ref) {
      // Inside the closed root only (the page cannot read it): the line and its `data-ref`.
      const p = para('session', 'hudSessionRef', [c.session_ref]);
      p.dataset.ref = c.session_ref;
      out.push(p);
    }
    // Fail closed, visibly: a page whose needed fact is missing or ambiguous gets nothing
    // typed into it (ext-core); the line names the fact.
    if (c.unresolved) {
      const p = para('layout', 'hudFactUnresolved', [], 'withheld');
      p.textContent = factUnresolvedText(c.unresolved.fact, c.unresolved.why);
      p.dataset.fact = c.unresolved.fact;
      p.dataset.why = c.unresolved.why;
      out.push(p);
    }
    if (c.delivery_state === 'uncertain') out.push(para('delivery', 'hudDeliveryUncertain', [], 'withheld'));
    out.push(para('auto', c.auto_line, []));
    if (c.auto_note) out.push(para('auto-note', `withheld_${c.auto_note}`, [], 'withheld'));
    if (c.binding) {
      out.push(c.scope_state === 'working'
        ? para('scope', 'hudScopeWorking', [String(c.working_panes)])
        : para('scope', c.scope_state === 'settled' ? 'hudScopeSettled' : 'hudScopeIdle', []));
      if (c.inbox_missing) out.push(para('tasks', 'hudInboxMissing', []));
      else if (c.tasks) out.push(para('tasks', 'hudTasks', [String(c.tasks.running), String(c.tasks.unacked), String(c.tasks.acked)]));
      // Parent guidance (I5): advice in our words; the model's note shown as quoted data.
      for (const g of c.guidance ?? []) {
        const p = para('guidance', `hudGuidance_${g.kind}`, [g.task_id]);
        if (g.note) p.textContent += ` ${text('hudGuidanceNote', [g.note])}`;
        p.dataset.task = g.task_id;
        p.dataset.kind = g.kind;
        out.push(p);
      }
      out.push(c.last_wake
        ? para('last-wake', 'hudLastWake', [c.last_wake.kind, fmtTime(c.last_wake.at), String(c.wake_count)])
        : para('last-wake', 'hudNoWakeYet', []));
      if (c.withheld) { const p = para('withheld', `withheld_${c.withheld.code}`, [], 'withheld'); p.dataset.code = c.withheld.code; out.push(p); }
      else out.push(para('withheld', 'hudNothingWithheld', []));
    }
    // Semantic Auto and the judge (J1–J3, M7): the worker's last word on this chat.
    if (c.judge) out.push(para('judge', c.judge.key, c.judge.args, 'judge'));
    // ChatGPT rate-limits the account: automatic messages wait until (local HH:MM).
    if (c.cooldown_until) {
      const until = new Date(c.cooldown_until).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
      out.push(para('cooldown', 'hudCooldownUntil', [until], 'withheld'));
    }
    if (c.recovery) out.push(recoveryLine(c.recovery));
    if (c.health) out.push(...healthLines(c.health));
    if (c.card) out.push(cardLine(c.card));
    // The Continuity Journal (C1) and the context pressure (R1).
    if (c.journal) {
      const fine = c.journal.key === 'journalRecorded' || c.journal.key === 'journalNothingYet';
      out.push(para('journal', c.journal.key, c.journal.args, fine ? '' : 'withheld'));
    }
    if (c.pressure) {
      const { tokens, messages, level } = c.pressure;
      const p = para('pressure', 'hudPressure', [String(Math.round(tokens / 1000)), String(messages), text(`pressureLevel_${level}`)],
        ['recommend', 'auto', 'high_risk'].includes(level) ? 'withheld' : '');
      p.dataset.level = level;
      out.push(p);
    }
    // Automatic rollover (R2), once the pressure is at the auto level: started, or what
    // holds it back.
    if (c.rollover) {
      const p = para('rollover', `hudRollover_${c.rollover}`, [], c.rollover === 'started' ? '' : 'withheld');
      p.dataset.state = c.rollover;
      out.push(p);
    }
    // The Queue (Q1–Q8): the worker's line and the first characters of each item.
    if (c.queue && c.queue.state !== 'empty') {
      const figures = [String(c.queue.count), String(c.queue.merged_chars)];
      const p = para('queue', `queueLine_${c.queue.state}`, figures, c.queue.state === 'waiting' || c.queue.state === 'sending' ? '' : 'withheld');
      p.dataset.state = c.queue.state;
      out.push(p);
      const list = document.createElement('ol');
      list.dataset.line = 'queue-items';
      list.replaceChildren(...c.queue.previews.map((preview) => {
        const li = document.createElement('li');
        li.textContent = preview;
        return li;
      }));
      out.push(list);
    }
    // The HUD's Handoff (X1–X8): the worker's line; the button it names.
    if (c.handoff?.line) {
      const bad = ['failed', 'seed_uncertain', 'copy_prompt'].includes(c.handoff.step);
      const p = para('handoff', c.handoff.line.key, c.handoff.line.args, bad ? 'withheld' : '');
      p.dataset.step = c.handoff.step;
      out.push(p);
    }
    // The JSON bridge's card waits for the user: first, so it shows without scrolling.
    // The approval card is kept while it shows the same calls (a press on Run or Skip must
    // survive a view that arrives mid-click, as the action buttons do).
    if (c.bridge) {
      const key = JSON.stringify(c.bridge);
      if (hc.keptCard.key !== key) hc.keptCard = { key, nodes: bridgeLines(c.bridge) };
      hooks.dataset.bridgePending = String(c.bridge.pending.length);
      hooks.dataset.bridgeRoundLimit = c.bridge.round_limit ? 'yes' : 'no';
      out.unshift(...hc.keptCard.nodes);
    } else hc.keptCard = { key: '', nodes: [] };
    setChildren(continuity, out);
    return [...c.actions.map((action) => {
      const label = action.id === 'toggle_auto' ? (c.auto === 'off' ? 'actionAutoTurnOn' : 'actionAutoTurnOff') : `action_${action.id}`;
      // The judge button carries the page's last turn (read now, once per press); Send tool
      // results sends the ended turn again, marked as pressed (docs/PROTOCOL.md).
      const button = keptButton(action.id, text(label), () => {
        if (action.id === 'bridge_send') return hc.postPress(() => ({ type: TO_WORKER.turn_ended, ...hc.endedTurn(true), pressed: true }));
        const turn = action.id === 'llm_judge' ? hc.endedTurn() : null;
        hc.postPress(() => ({ type: TO_WORKER.action, action: action.id, ...(turn && { user_text: turn.user_text, assistant_text: turn.assistant_text }) }));
      });
      if (action.locked) {
        button.disabled = true;
        button.dataset.locked = action.locked.code;
        button.title = text(`locked_${action.locked.code}`);
      }
      return button;
    }), ...handoffButton(c.handoff), ...goalUi(c)];
  };

  // ---- The JSON bridge's approval card (issue 23; ext-core continuity/bridge): the calls
  // of a z.ai / DeepSeek reply that wait for the user — tool, method, target, the start of
  // the arguments, a "changes things" tag — each with Run and Skip, and the round-limit
  // line. Only a trusted press acts (a real click, or Enter / Space on the focused button):
  // an event a page script dispatches or `element.click()` has `isTrusted === false` and
  // is dropped here, so the page can never approve a call. Each press sends one
  // `bridge_decide`; the worker decides nothing without it.
  const bridgeLines = (bridge) => {
    hooks.dataset.bridgePending = String(bridge.pending.length);
    hooks.dataset.bridgeRoundLimit = bridge.round_limit ? 'yes' : 'no';
    const out = [];
    if (bridge.round_limit) {
      out.push(para('bridge-round-limit', 'hudBridgeRoundLimit',
        [String(bridge.rounds?.used ?? ''), String(bridge.rounds?.limit ?? '')], 'withheld'));
    } else if (bridge.rounds && bridge.rounds.used > 0) {
      out.push(para('bridge-rounds', 'hudBridgeRounds', [String(bridge.rounds.used), String(bridge.rounds.limit)]));
    }
    if (!bridge.batch_id || bridge.pending.length === 0) return out;
    const card = document.createElement('section');
    card.className = 'bridge-card';
    card.dataset.line = 'bridge-approval';
    card.dataset.batch = bridge.batch_id;
    card.setAttribute('aria-label', text('hudBridgeApprovalLabel'));
    const head = para('bridge-approval-head', 'hudBridgeApproval', [String(bridge.pending.length)], 'withheld');
    const list = document.createElement('ol');
    list.replaceChildren(...bridge.pending.map(({ call: p, deciding }) => {
      const li = document.createElement('li');
      li.dataset.call = String(p.call);
      li.dataset.tool = p.tool;
      li.dataset.mutating = p.mutating ? 'yes' : 'no';
      const what = document.createElement('p');
      what.className = 'bridge-what';
      what.textContent = p.method ? `${p.tool} · ${p.method}` : p.tool;
      const tag = document.createElement('span');
      tag.className = p.mutating ? 'bridge-tag mutating' : 'bridge-tag';
      tag.textContent = text(p.mutating ? 'hudBridgeMutating' : 'hudBridgeReadOnly');
      what.append(' ', tag);
      li.append(what);
      if (p.target) li.append(para('bridge-target', 'hudBridgeTarget', [p.target]));
      // What the call would type / send, decoded, whole up to the runtime's 2 000
      // characters, in a box that scrolls (never cut silently), and how much is left out.
      if (p.detail != null) {
        const detail = document.createElement('pre');
        detail.className = 'bridge-detail';
        detail.dataset.line = 'bridge-detail';
        detail.tabIndex = 0;
        detail.textContent = p.detail;
        li.append(detail);
        if (p.detail_more > 0) li.append(para('bridge-more', 'hudBridgeDetailMore', [String(p.detail_more)], 'bridge-more'));
      }
      const args = document.createElement('code');
      args.className = 'bridge-args';
      args.tabIndex = 0;
      args.textContent = p.args_preview;
      li.append(args);
      const buttons = document.createElement('div');
      for (const decision of ['run', 'skip']) {
        const button = document.createElement('button');
        button.type = 'button';
        button.dataset.action = `bridge_${decision}:${p.call}`;
        button.textContent = text(decision === 'run' ? 'bridgeRun' : 'bridgeSkip');
        button.setAttribute('aria-label', text(decision === 'run' ? 'bridgeRunLabel' : 'bridgeSkipLabel',
          [String(p.call), p.method ? `${p.tool} ${p.method}` : p.tool]));
        button.disabled = Boolean(deciding);
        onTrusted(button, 'click', (event) => {
          const refused = pressRefused(button, event);
          if (refused) { hc.showNotice(text(refused), 'bad'); status.dataset.key = refused; return; }
          hc.postPress(() => ({ type: TO_WORKER.bridge_decide, batch_id: bridge.batch_id, call: p.call, decision }));
        });
        buttons.append(button);
      }
      li.append(buttons);
      return li;
    }));
    card.append(head, list);
    out.push(card);
    return out;
  };
  // The HUD's permission-card line (ext-core continuity::CardLine).
  const cardLine = (c) => {
    const time = c.at === null ? '' : fmtTime(c.at);
    const keys = { accepted: c.tool ? 'hudCardAccepted' : 'hudCardAcceptedUnnamed', accepted_before: 'hudCardAcceptedBefore', gone: 'hudCardGone' };
    const key = keys[c.state] ?? `card_refused_${c.code}`;
    const p = para('card', key, [c.connector, time, c.tool ?? ''], c.state.startsWith('accepted') ? '' : 'withheld');
    p.dataset.state = c.state;
    p.dataset.tool = c.tool ?? '';
    return p;
  };

  // The HUD's recovery line (ext-core continuity::RecoveryLine) with test hooks.
  const recoveryLine = (r) => {
    const reason = r.reason ? text(`recoveryReason_${r.reason}`) : '';
    const p = para('recovery', 'hudRecovery', [text(`recoveryState_${r.state}`), reason, String(r.retries_left), String(r.reloads_left), String(r.probes)],
      ['needs_user', 'rollover', 'cooling'].includes(r.state) ? 'withheld' : '');
    p.dataset.state = r.state;
    p.dataset.reasoning = String(hc.pageReasoning);
    // The model shows a thinking placeholder: the stall allowance is the long one (ext-core
    // stale_view REASONING_STALL_MS), so say so rather than read as plainly "synced".
    if (hc.pageReasoning) p.textContent += ` ${text('hudRecoveryReasoning')}`;
    return p;
  };
  // The health part of the view (ext-core continuity::HealthLine): test hooks, the meters'
  // switch, and the HUD's health line (level, last decision, reason).
  const healthView = (h) => {
    hc.healthWatch(Boolean(h));
    Object.assign(host.dataset, {
      healthLevel: h?.level ?? '',
      healthDecision: h?.decision ?? '',
      healthReason: h?.reason ?? '',
      healthSpikes: String(h?.spikes ?? 0),
    });
  };
  const healthLines = (h) => {
    const reason = h.reason ? text(`healthReason_${h.reason}`) : '';
    const figures = [text(`healthLevel_${h.level}`), text(`healthDecision_${h.decision}`), reason, String(h.spikes), String(h.long_tasks)];
    const line = para('health', 'hudHealth', figures, h.level === 'high' || h.decision === 'withheld' ? 'withheld' : '');
    line.dataset.level = h.level;
    return h.settings_problem ? [line, para('health-settings', 'healthSettingsInvalid', [h.settings_problem], 'withheld')] : [line];
  };
  Object.assign(hc, { renderContinuity });
})();

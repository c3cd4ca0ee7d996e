// Content script: a thin adapter, never wasm (the page's CSP decides whether wasm may
// compile here, and chatgpt.com's CSP is not ours). It
//   (a) mounts the HUD in a closed shadow root on <herdr-continuity-hud>, a child of
//       document.documentElement (outside React's tree), once per page even if injected
//       twice;
//   (b) connects a `page` port to the service worker and reports page facts;
//   (c) renders the view models the worker sends (text via chrome.i18n.getMessage with
//       the keys and substitutions the worker chose);
//   (d) sends button presses back as actions.
// It contains no product decisions. Message shapes: docs/PROTOCOL.md,
// "Extension-internal ports".
(() => {
  const GUARD = Symbol.for('herdr-continuity.hud');
  if (globalThis[GUARD] || document.querySelector('herdr-continuity-hud')) return;
  globalThis[GUARD] = true;

  // Placement (HUD must never cover ChatGPT's composer or send button): fixed top-right,
  // below ChatGPT's header. Collapsed by default to a one-line status pill (a real
  // <button aria-expanded>; Enter/Space/click toggle, Esc collapses). The expanded panel
  // is bounded (max-height, scrolls) so it ends well above the composer.
  const CSS = `
    :host { all: initial; position: fixed; contain: layout style; top: 64px; right: 12px; z-index: 2147483647;
      font: 12px/1.4 system-ui, sans-serif; color: #1d1d1f; }
    .pill { display: inline-flex; align-items: center; gap: 6px; max-width: 320px;
      float: right; margin: 0; padding: 3px 10px 3px 8px; border: 1px solid #d0d7de;
      border-radius: 999px; background: #fff; box-shadow: 0 1px 4px rgba(0,0,0,.12);
      font: inherit; color: inherit; cursor: pointer; white-space: nowrap; }
    .pill .summary { overflow: hidden; text-overflow: ellipsis; }
    .dot { flex: none; width: 8px; height: 8px; border-radius: 50%; background: #999; }
    .dot.tone-good { background: #1a7f37; } .dot.tone-pending { background: #9a6700; }
    .dot.tone-warning { background: #bc4c00; } .dot.tone-bad { background: #cf222e; }
    .hud { clear: both; position: relative; top: 4px; background: #fff;
      border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 10px; width: 320px;
      max-height: min(520px, calc(100vh - 220px)); overflow-y: auto;
      box-shadow: 0 2px 8px rgba(0,0,0,.15); }
    .hud.collapsed { display: none; }
    .line { margin: 2px 0; padding-left: 6px; border-left: 3px solid #999; }
    .line.tone-good { border-color: #1a7f37; } .line.tone-pending { border-color: #9a6700; }
    .line.tone-warning { border-color: #bc4c00; } .line.tone-bad { border-color: #cf222e; }
    .hud button { font: inherit; margin: 4px 4px 0 0; padding: 2px 8px; cursor: pointer; }
    button:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
    .status { clear: both; float: right; max-width: 300px; margin: 4px 0 0; padding: 3px 8px;
      background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
    .status:empty { display: none; }
    .continuity:empty { display: none; }
    .continuity { margin-top: 6px; padding-top: 6px; border-top: 1px solid #d0d7de; }
    .continuity p { margin: 2px 0; }
    .withheld { color: #9a6700; }
    .hud button[disabled] { cursor: not-allowed; opacity: .6; }
    .bridge-card { margin: 4px 0; padding: 4px 6px; border: 1px solid #bc4c00; border-radius: 6px; }
    .bridge-card ol { margin: 2px 0; padding-left: 18px; }
    .bridge-card li { margin: 4px 0; }
    .bridge-what { font-weight: 600; }
    .bridge-tag { font-weight: normal; white-space: nowrap; padding: 0 4px; border-radius: 4px; background: #eaeef2; }
    .bridge-tag.mutating { background: #ffebe9; color: #a40e26; }
    .bridge-args, .bridge-detail { display: block; white-space: pre-wrap; word-break: break-all; max-height: 4.5em; overflow: auto;
      font: 11px/1.4 ui-monospace, monospace; background: #f6f8fa; padding: 2px 4px; margin: 2px 0; }
    .bridge-detail { max-height: 12em; border-left: 3px solid #bc4c00; }
    .bridge-more { font-style: italic; }`;

  const text = (key, substitutions) => chrome.i18n.getMessage(key, substitutions) || key;
  // Trusted UI (issue 23): the page's own scripts must not drive or read our controls.
  // - Every own-UI root is a closed shadow root; `root` is our only reference to it (the
  //   page's `host.shadowRoot` is null), and nothing on the host or elsewhere in the light
  //   DOM carries the session ref or the copy prompt.
  // - `onTrusted(el, type, fn)` is how every control listens: `fn` runs only for an event
  //   the browser made from real input (`isTrusted`); a page's dispatchEvent or el.click()
  //   does nothing. Keyboard use stays: Enter / Space on a focused button is a trusted click.
  const onTrusted = (el, type, fn, options) => el.addEventListener(type, (event) => { if (event.isTrusted) fn(event); }, options);
  const host = document.createElement('herdr-continuity-hud');
  const root = host.attachShadow({ mode: 'closed' });
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS);
  root.adoptedStyleSheets = [sheet];
  // The pill: one line summary with a tone; toggles the panel.
  const toggle = document.createElement('button');
  toggle.type = 'button';
  toggle.className = 'pill';
  toggle.dataset.hudToggle = '';
  toggle.setAttribute('aria-expanded', 'false');
  toggle.setAttribute('aria-controls', 'herdr-continuity-panel');
  const dot = document.createElement('span');
  dot.className = 'dot';
  dot.setAttribute('aria-hidden', 'true');
  const summary = document.createElement('span');
  summary.className = 'summary';
  summary.textContent = `${text('pillBrand')} · …`;
  toggle.title = text('hudShowDetails');
  toggle.append(dot, summary);
  const panel = document.createElement('section');
  panel.className = 'hud collapsed';
  panel.id = 'herdr-continuity-panel';
  panel.setAttribute('aria-label', chrome.i18n.getMessage('hudLabel'));
  const lines = document.createElement('div');
  const continuity = document.createElement('div');
  continuity.className = 'continuity';
  const actions = document.createElement('div');
  const status = document.createElement('p');
  status.className = 'status';
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  panel.append(lines, continuity, actions);
  // What the HUD shows (Auto, the binding, a card waiting, …) as data-* hooks for tests:
  // inside the closed root, never on the host, so the page cannot tell that a card is up
  // (and time a click-jack for it).
  const hooks = document.createElement('div');
  hooks.hidden = true;
  hooks.dataset.hudState = '';
  root.append(toggle, panel, status, hooks);
  hooks.dataset.expanded = 'false';
  document.documentElement.append(host);

  const setExpanded = (expanded) => {
    panel.classList.toggle('collapsed', !expanded);
    toggle.setAttribute('aria-expanded', String(expanded));
    hooks.dataset.expanded = String(expanded);
    toggle.title = text(expanded ? 'hudHideDetails' : 'hudShowDetails');
    notePlaces();
  };
  onTrusted(toggle, 'click', () => setExpanded(toggle.getAttribute('aria-expanded') !== 'true'));
  onTrusted(root, 'keydown', (event) => {
    if (event.key !== 'Escape' || toggle.getAttribute('aria-expanded') !== 'true') return;
    event.stopPropagation();
    setExpanded(false);
    toggle.focus();
  });

  let port = null;
  let account = null; // the session's account id, once read (see accountOf)
  let roundTripStartedAt = 0;

  const para = (name, key, substitutions, className = '') => {
    const p = document.createElement('p');
    p.dataset.line = name;
    p.dataset.key = key;
    if (className) p.className = className;
    p.textContent = text(key, substitutions);
    return p;
  };
  const fmtTime = (ms) => new Date(ms).toLocaleTimeString();
  // "Page fact “composer” is missing · messages held back" (why: missing | ambiguous).
  const factUnresolvedText = (fact, why) => text('hudFactUnresolved', [fact, text(`factWhy_${why}`)]);

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
    out.push(para('auto', c.auto === 'on' ? 'hudAutoOn' : 'hudAutoOff', []));
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
      if (keptCard.key !== key) keptCard = { key, nodes: bridgeLines(c.bridge) };
      hooks.dataset.bridgePending = String(c.bridge.pending.length);
      hooks.dataset.bridgeRoundLimit = c.bridge.round_limit ? 'yes' : 'no';
      out.unshift(...keptCard.nodes);
    } else keptCard = { key: '', nodes: [] };
    setChildren(continuity, out);
    return [...c.actions.map((action) => {
      const label = action.id === 'toggle_auto' ? (c.auto === 'off' ? 'actionAutoTurnOn' : 'actionAutoTurnOff') : `action_${action.id}`;
      // The judge button carries the page's last turn (read now, once per press); Send tool
      // results sends the ended turn again, marked as pressed (docs/PROTOCOL.md).
      const button = keptButton(action.id, text(label), () => {
        if (action.id === 'bridge_send') return postPress(() => ({ type: 'turn_ended', ...endedTurn(true), pressed: true }));
        const turn = action.id === 'llm_judge' ? endedTurn() : null;
        postPress(() => ({ type: 'action', action: action.id, ...(turn && { user_text: turn.user_text, assistant_text: turn.assistant_text }) }));
      });
      if (action.locked) {
        button.disabled = true;
        button.dataset.locked = action.locked.code;
        button.title = text(`locked_${action.locked.code}`);
      }
      return button;
    }), ...handoffButton(c.handoff), ...goalUi(c)];
  };

  // Goal mode (SPEC J7): "Goal" opens a small form of our own (inside the closed root) to
  // type the chat's goal; Set sends it to the worker (`goal_set`, empty clears), which asks
  // the runtime. The worker's line (the judge line) says what Goal mode decided and why.
  // Only trusted presses act; keys typed here do not reach the page's shortcuts.
  let goalOpen = false;
  const goalForm = document.createElement('span');
  goalForm.className = 'goal-form';
  goalForm.dataset.line = 'goal-form';
  const goalInput = document.createElement('input');
  goalInput.type = 'text';
  goalInput.maxLength = 500;
  goalInput.dataset.goal = 'input';
  const goalSave = document.createElement('button');
  goalSave.type = 'button';
  goalSave.dataset.goal = 'save';
  const goalCancel = document.createElement('button');
  goalCancel.type = 'button';
  goalCancel.dataset.goal = 'cancel';
  goalForm.append(goalInput, goalSave, goalCancel);
  for (const type of ['keydown', 'keyup', 'keypress', 'input']) goalForm.addEventListener(type, (event) => event.stopPropagation());
  // Closing the form gives the focus back to the Goal button when the form had it (Enter,
  // Escape, Set, Cancel), not to the page's body.
  const closeGoal = () => {
    const hadFocus = goalForm.contains(goalForm.getRootNode()?.activeElement ?? null);
    goalOpen = false;
    goalForm.remove();
    const button = keptButtons.get('goal');
    button?.setAttribute('aria-expanded', 'false');
    if (hadFocus && button?.isConnected) button.focus();
  };
  const sendGoal = () => {
    const goal = goalInput.value.trim();
    closeGoal();
    postPress(() => ({ type: 'action', action: 'goal_set', text: goal }));
  };
  onTrusted(goalSave, 'click', sendGoal);
  onTrusted(goalCancel, 'click', closeGoal);
  onTrusted(goalInput, 'keydown', (event) => {
    if (event.key === 'Enter' && !event.isComposing) { event.preventDefault(); sendGoal(); }
    if (event.key === 'Escape') closeGoal();
  });
  // Goal mode acts on ChatGPT chats only (the other sites continue through the JSON
  // bridge), so the form is offered there only.
  const goalUi = (c) => {
    if (!c?.binding || profile?.site !== 'chatgpt') { closeGoal(); return []; }
    goalInput.placeholder = text('hudGoalPlaceholder');
    goalInput.setAttribute('aria-label', text('hudGoalPlaceholder'));
    goalSave.textContent = text('hudGoalSave');
    goalCancel.textContent = text('hudGoalCancel');
    const button = keptButton('goal', text('hudGoal'), () => {
      if (goalOpen) return closeGoal();
      goalOpen = true;
      button.setAttribute('aria-expanded', 'true');
      button.after(goalForm);
      goalInput.focus();
    });
    button.title = text('hudGoalTitle');
    button.setAttribute('aria-expanded', String(goalOpen));
    return goalOpen ? [button, goalForm] : [button];
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
          if (refused) { showNotice(text(refused), 'bad'); status.dataset.key = refused; return; }
          postPress(() => ({ type: 'bridge_decide', batch_id: bridge.batch_id, call: p.call, decision }));
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

  // ---- Click-jacking (issue 23): our host sits in the page's DOM, so the page can restyle
  // it or move it under the pointer just before a click. A Run / Skip press counts only
  // when its button has stood still, where it is now, for PRESS_SETTLE_MS (a card that
  // just appeared, was re-rendered elsewhere or moved with its host waits), it is a single
  // click (a double-click's second press is dropped), and the HUD is shown as we style
  // it: visible, opaque, not transformed, filtered or clipped, on top where the pointer is.
  const PRESS_SETTLE_MS = 600;
  const placed = new Map(); // button's data-action → { at: its place, since: when it got there }
  // A button's place: the host's corner in the viewport (the page can move the host) and
  // the button's place inside the panel's content (a re-render can move it; the user's
  // scrolling of the panel does not count).
  const placeOf = (el) => {
    const h = host.getBoundingClientRect();
    const p = panel.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    return [h.right, h.top, r.x - p.x, r.y - p.y + panel.scrollTop, r.width, r.height].map(Math.round).join(',');
  };
  const notePlaces = () => {
    const seen = new Set();
    for (const button of root.querySelectorAll('.bridge-card button[data-action]')) {
      const id = button.dataset.action;
      const at = placeOf(button);
      seen.add(id);
      if (placed.get(id)?.at !== at) placed.set(id, { at, since: performance.now() });
    }
    for (const id of [...placed.keys()]) if (!seen.has(id)) placed.delete(id);
  };
  // While a card is up its buttons' places are looked at often: a host the page moves
  // keeps its presses waiting until it has stood still for PRESS_SETTLE_MS.
  setInterval(() => { if (placed.size) notePlaces(); }, 150);
  // The host as we style it; anything the page changed there that can hide, shrink, move
  // or disguise it refuses the press.
  const hiddenByPage = (button) => {
    const style = getComputedStyle(host);
    if (style.display === 'none' || style.visibility !== 'visible' || Number(style.opacity) < 0.95) return true;
    if (style.position !== 'fixed' || style.clipPath !== 'none' || style.filter !== 'none' || style.mixBlendMode !== 'normal') return true;
    if ([style.transform, style.scale, style.rotate, style.translate].some((v) => v && v !== 'none')) return true;
    if (style.zoom && Number(style.zoom) !== 1) return true;
    return button.checkVisibility?.({ opacityProperty: true, visibilityProperty: true, contentVisibilityAuto: true }) === false;
  };
  const pressRefused = (button, event) => {
    if (event.detail > 1) return 'noticeBridgePressTooSoon';
    const now = performance.now();
    const at = placeOf(button);
    const record = placed.get(button.dataset.action);
    if (!record || record.at !== at) {
      placed.set(button.dataset.action, { at, since: now });
      return 'noticeBridgePressTooSoon';
    }
    if (now - record.since < PRESS_SETTLE_MS) return 'noticeBridgePressTooSoon';
    if (hiddenByPage(button)) return 'noticeBridgePressHidden';
    // A pointer press: what is on top at the pointer is our host (no page overlay).
    if (event.detail > 0 && document.elementFromPoint(event.clientX, event.clientY) !== host) return 'noticeBridgePressHidden';
    return null;
  };

  // The Handoff button the worker named: Handoff / Resume handoff go to the worker; Copy
  // Prompt writes the package's copy_prompt (the worker's bytes, unchanged) to the clipboard.
  const handoffButton = (handoff) => {
    if (!handoff || handoff.button === 'none') return [];
    const id = handoff.button === 'resume' ? 'handoff_resume' : handoff.button;
    const button = keptButton(id, text(`action_${id}`), () => {
      if (id !== 'copy_prompt') return postPress(() => ({ type: 'action', action: id }));
      const prompt = handoff.copy_prompt ?? '';
      // What was copied stays inside the closed root (never on the host): a test hook.
      button.dataset.copied = prompt;
      navigator.clipboard.writeText(prompt).then(
        () => { host.dataset.copied = 'yes'; showNotice(text('hudPromptCopied'), 'info'); },
        () => { host.dataset.copied = 'no'; showNotice(text('hudPromptNotCopied'), 'bad'); },
      );
    });
    return [button];
  };

  // The HUD's action buttons are kept across views: one element per action id, its label,
  // lock and press updated in place. A click is a press and a release, and Chrome dispatches
  // none when the pressed element left the tree in between; rebuilt on every view (frequent
  // on a loaded machine), a button pressed as a view arrived did nothing and said nothing.
  const keptButtons = new Map(); // data-action → button
  let keptCard = { key: '', nodes: [] }; // the bridge card's nodes and the view they show
  // Makes `nodes` the element children of `parent`, leaving each one already in its place
  // untouched (a node moved or re-inserted is removed first, which cancels a click on it).
  const setChildren = (parent, nodes) => {
    nodes.forEach((node, i) => { if (parent.children[i] !== node) parent.insertBefore(node, parent.children[i] ?? null); });
    while (parent.children.length > nodes.length) parent.lastElementChild.remove();
  };
  const presses = new WeakMap(); // button → what its press does now
  const keptButton = (id, label, press) => {
    let button = keptButtons.get(id);
    if (!button) {
      button = document.createElement('button');
      button.type = 'button';
      button.dataset.action = id;
      onTrusted(button, 'click', (event) => presses.get(button)?.(event));
      keptButtons.set(id, button);
    }
    presses.set(button, press);
    if (button.textContent !== label) button.textContent = label;
    button.disabled = false;
    delete button.dataset.locked;
    delete button.dataset.copied;
    button.removeAttribute('title');
    return button;
  };

  const render = (view) => {
    // A view may change which button exists; keep keyboard focus on the same action.
    const focused = root.activeElement?.dataset?.action ?? null;
    lines.replaceChildren(...[['companion', view.companion], ['herdr', view.herdr]].map(([name, line]) => {
      const p = document.createElement('p');
      p.className = `line tone-${line.tone}`;
      p.dataset.line = name;
      p.dataset.key = line.key;
      p.textContent = text(line.key, line.substitutions);
      return p;
    }));
    const buttons = [...view.actions.map((action) => keptButton(action.id, text(action.label), () => {
      roundTripStartedAt = performance.now();
      postPress(() => ({ type: 'action', action: action.id }));
    })), ...renderContinuity(view)];
    setChildren(actions, buttons);
    for (const id of keptButtons.keys()) if (!buttons.some((button) => button.dataset.action === id)) keptButtons.delete(id);
    host.dataset.companion = view.companion.key;
    host.dataset.herdr = view.herdr.key;
    renderSummary(view);
    queueUi?.render(view.continuity?.queue ?? null);
    notePlaces();
    if (focused) root.querySelector(`button[data-action="${focused}"]`)?.focus();
  };

  // The collapsed pill: the view's state as one short line and the worst tone. Pure
  // presentation of what the worker decided (no decisions here).
  const TONE_RANK = { good: 0, pending: 1, warning: 2, bad: 3 };
  const renderSummary = (view) => {
    const c = view.continuity;
    const parts = [text('pillBrand')];
    let tone = 'good';
    const worse = (t) => { if (TONE_RANK[t] > TONE_RANK[tone]) tone = t; };
    if (view.companion.tone !== 'good') {
      parts.push(text('pillCompanionDown'));
      worse(view.companion.tone);
    } else if (view.herdr.tone !== 'good') {
      parts.push(text('pillHerdrDown'));
      worse(view.herdr.tone);
    } else if (!c) {
      parts.push(text('pillConnected'));
    }
    if (c) {
      if (c.binding) parts.push(c.binding.label || c.binding.workspace_id);
      else { parts.push(text('pillNotBound')); worse('pending'); }
      parts.push(text(c.auto === 'on' ? 'pillAutoOn' : c.auto === 'not_allowed' ? 'pillAutoNotAllowed' : 'pillAutoOff'));
      if (c.binding) {
        if (c.scope_state === 'working') { parts.push(text('pillWorking', [String(c.working_panes)])); worse('pending'); }
        else parts.push(text(c.scope_state === 'settled' ? 'pillSettled' : 'pillIdle'));
      }
      if (c.unresolved) { parts.push(text(c.unresolved.why === 'ambiguous' ? 'pillFactAmbiguous' : 'pillFactMissing', [c.unresolved.fact])); worse('warning'); }
      if (c.withheld) { parts.push(text('pillHeld')); worse('warning'); }
      // Tool calls waiting for Run / Skip: the collapsed HUD says so.
      if (c.bridge?.pending?.length) { parts.push(text('pillBridgeApproval', [String(c.bridge.pending.length)])); worse('warning'); }
    }
    summary.textContent = parts.join(' · ');
    dot.className = `dot tone-${tone}`;
    hooks.dataset.summaryTone = tone;
    toggle.title = text(toggle.getAttribute('aria-expanded') === 'true' ? 'hudHideDetails' : 'hudShowDetails');
  };

  // ---- The site profile (ext-core `sites` flat profile, docs/PROTOCOL.md "Site profiles
  // and page diagnostics"). The worker sends it on connect: per fact one chain of probes
  // merged across every known layout generation of the site. Each fact resolves through
  // its own chain (the first probe that finds something wins), so a page that mixes the
  // markup of two generations works as long as every fact it needs resolves. Until a
  // profile arrives, and while a needed fact is missing or ambiguous (`unresolved`), the
  // adapter types and clicks nothing. Which generation's detection rule holds is only a
  // label (`generation`: its id, "mixed", or null). Everything site-specific (selectors,
  // labels, icon paths) is in the profile; this script only knows how to evaluate a probe
  // (ext-core sites::Probe).
  const pageLoad = crypto.randomUUID();
  let profile = null;
  const labelSets = new WeakMap(); // a profile's labels → Map(label key → lower-cased labels)
  const labelsOf = (view, key) => {
    let sets = labelSets.get(view.labels);
    if (!sets) {
      sets = new Map(view.labels.map((set) => [set.key, [...set.en, ...set.zh].map((l) => l.toLowerCase())]));
      labelSets.set(view.labels, sets);
    }
    return sets.get(key) ?? [];
  };
  // A selector the browser rejects (a profile newer than this Chrome) matches nothing.
  const queryAll = (scope, css) => { try { return [...scope.querySelectorAll(css)]; } catch { return []; } };
  const matches = (el, css) => { try { return el.matches(css); } catch { return false; } };
  const closest = (el, css) => { try { return el?.closest(css) ?? null; } catch { return null; } };
  const exists = (css) => { try { return document.querySelector(css) !== null; } catch { return false; } };
  const ruleHolds = (rule) => rule.all.every(exists) && (rule.any.length === 0 || rule.any.some(exists)) && !rule.none.some(exists);
  // The diagnostic label's generation: the first whose detection rule holds.
  const detect = () => profile?.generations.find((gen) => ruleHolds(gen.detect)) ?? null;
  // Detection costs a document-wide query per marker (one that is absent scans the whole
  // DOM), so its answer is kept while the page keeps its shape: same URL, the same
  // composer still in the document, the same turn list with as many units. Streaming into
  // the last turn changes none of these.
  let detected = null;
  const shapeNow = () => {
    const list = turnCache.list;
    const same = detected && detected.profile === profile && detected.href === location.href &&
      detected.composerHit?.el.isConnected && detected.list === list && (!list || (list.isConnected && list.childElementCount === detected.units));
    if (same) return detected;
    detected = { profile, gen: detect(), href: location.href, composerHit: find(profile, 'composer', {}, true), list, units: list?.childElementCount, fresh: true };
    return detected;
  };
  // The composer is found with the shape (the thread layout's composer sits after the
  // turns, so a document query for it walks the whole thread). Kept while it is in the
  // document, was the only match, and still matches the chain's first probe; a fallback or
  // `unique` probe is looked up again, since an earlier probe, or a second match, may
  // have appeared since. `list` holds every element the winning probe found (more than
  // one: ambiguous).
  const composerNow = () => {
    const hit = detected.composerHit;
    const kept = detected.fresh || (hit && hit.list.length === 1 && hit.probe === profile.facts.composer[0] && !hit.probe.unique &&
      matches(hit.el, hit.probe.css) && passes(profile, hit.probe, hit.el));
    if (!kept) detected.composerHit = find(profile, 'composer', {}, true);
    detected.fresh = false;
    return detected.composerHit;
  };
  // A control's whole label: aria-label, else title, else its text (textContent: no layout).
  const labelOf = (el) => (el.getAttribute('aria-label') || el.getAttribute('title') || el.textContent || '').trim().toLowerCase();
  const hasLabel = (view, el, key) => labelsOf(view, key).includes(labelOf(el));
  const hasText = (view, el, key) => {
    const content = (el.textContent || '').toLowerCase();
    return labelsOf(view, key).some((phrase) => content.includes(phrase));
  };
  const hasIcon = (el, prefix) => queryAll(el, 'path').some((path) => (path.getAttribute('d') || '').startsWith(prefix));
  const besideLabel = (view, el, key) => {
    for (let node = el, i = 0; node && i <= 3; node = node.parentElement, i++) {
      if (queryAll(node, 'button').some((button) => button !== el && hasLabel(view, button, key))) return true;
    }
    return false;
  };
  // Dictation, voice and read-aloud controls are never Send or Stop (sites::Generation::never).
  const neverControl = (view, el) => {
    if (view.never.some((css) => matches(el, css))) return true;
    const names = `${el.getAttribute('aria-label') || ''} ${el.getAttribute('title') || ''} ${el.getAttribute('data-testid') || ''}`.toLowerCase();
    return labelsOf(view, 'not_stop_words').some((word) => names.includes(word));
  };
  const passes = (view, probe, el) =>
    (!probe.label || hasLabel(view, el, probe.label)) &&
    (!probe.text || hasText(view, el, probe.text)) &&
    (!probe.icon || hasIcon(el, probe.icon)) &&
    (!probe.beside || besideLabel(view, el, probe.beside));
  const selfAndInside = (el, css) => (el ? [...(matches(el, css) ? [el] : []), ...queryAll(el, css)] : []);
  // The first element a filterless probe finds, in the same order as `candidates` (one
  // querySelector per scope element instead of collecting every match).
  const firstOf = (probe, ctx) => {
    const first = (el) => (el ? (matches(el, probe.css) ? el : (() => { try { return el.querySelector(probe.css); } catch { return null; } })()) : null);
    switch (probe.scope) {
      case 'doc': try { return document.querySelector(probe.css); } catch { return null; }
      case 'root': return ctx.root && ctx.root !== document ? (() => { try { return ctx.root.querySelector(probe.css); } catch { return null; } })() : null;
      case 'tail': for (const unit of ctx.tail) { const el = first(unit); if (el) return el; } return null;
      case 'last': return first(ctx.last);
      default: return undefined;
    }
  };
  const filtered = (probe) => probe.label || probe.text || probe.icon || probe.beside || probe.unique;
  // The candidates of one probe in its scope (sites::Scope), filtered; with `all` false only
  // the first is needed.
  const candidates = (view, probe, ctx, all = true) => {
    if (!all && !ctx.controls && !filtered(probe)) {
      const el = firstOf(probe, ctx);
      if (el !== undefined) return el ? [el] : [];
    }
    let found;
    switch (probe.scope) {
      case 'doc': found = queryAll(document, probe.css); break;
      case 'root': found = ctx.root ? queryAll(ctx.root, probe.css) : []; break;
      case 'closest': { const up = closest(ctx.from?.parentElement, probe.css); found = up ? [up] : []; break; }
      case 'tail': found = ctx.tail.flatMap((unit) => selfAndInside(unit, probe.css)); break;
      case 'last': found = selfAndInside(ctx.last, probe.css); break;
      case 'message': {
        const el = ctx.message;
        const own = el ? selfAndInside(el, probe.css)[0] ?? closest(el, probe.css) : null;
        found = own ? [own] : [];
        break;
      }
      default: found = [];
    }
    found = found.filter((el) => passes(view, probe, el));
    if (ctx.controls) found = found.filter((el) => !neverControl(view, el));
    if (probe.unique && found.length !== 1) return [];
    return found;
  };
  // Fallbacks counted (diagnostics `usage`): per fact, the probe that won last and how many
  // recomputes each probe won since load — at most once per recompute (`usagePass`, one per
  // observe()), reset when a new profile arrives. Counts only.
  const usage = new Map(); // fact → { probe, wins: Map(probe → recomputes won), pass }
  let usagePass = 0;
  let usageProfile = null;
  const won = (fact, probe) => {
    if (usageProfile !== profile) { usage.clear(); usageProfile = profile; }
    let u = usage.get(fact);
    if (!u) { u = { probe, wins: new Map(), pass: -1 }; usage.set(fact, u); }
    if (u.pass === usagePass && u.probe === probe) return;
    u.pass = usagePass;
    u.probe = probe;
    u.wins.set(probe, (u.wins.get(probe) ?? 0) + 1);
  };
  // The first probe of a fact that finds something wins: { el, list, probe } or null
  // (`list` holds every match only when `all` is asked for).
  const find = (view, fact, ctx = {}, all = false) => {
    for (const probe of view.facts[fact]) {
      const list = candidates(view, probe, ctx, all);
      if (list.length) { won(fact, probe); return { el: list[0], list, probe }; }
    }
    return null;
  };
  // Whether a fact holds, for the facts that are only true or false on every recompute
  // (Stop, permission card): the document-wide probes go into one selector, so the fact
  // costs one document scan however many probes it has; each element found is then held
  // against the probes' filters.
  // Order does not matter for a yes / no answer, so the cheap scopes go first: the
  // composer's root (where Stop's test ids live) and the other scoped probes; the document
  // is scanned only when they found nothing.
  // Compiled once per chain (a profile's fact chain; views of one profile share them).
  const compiledPresence = new WeakMap(); // chain → { doc, css, rest } or null
  const presenceOf = (view, fact) => {
    const chain = view.facts[fact];
    if (compiledPresence.has(chain)) return compiledPresence.get(chain);
    const doc = chain.filter((probe) => probe.scope === 'doc' && !probe.unique);
    const css = doc.map((probe) => probe.css).join(', ');
    const valid = css !== '' && (() => { try { document.createDocumentFragment().querySelector(css); return true; } catch { return false; } })();
    const compiled = valid ? { doc, css, rest: chain.filter((probe) => !doc.includes(probe)) } : null;
    compiledPresence.set(chain, compiled);
    return compiled;
  };
  const present = (view, fact, ctx) => {
    const compiled = presenceOf(view, fact);
    if (!compiled) return Boolean(find(view, fact, ctx));
    const { doc, css, rest } = compiled;
    const holds = (found) => {
      for (const el of found) {
        if (ctx.controls && neverControl(view, el)) continue;
        if (doc.some((probe) => matches(el, probe.css) && passes(view, probe, el))) return true;
      }
      return false;
    };
    if (rest.some((probe) => candidates(view, probe, ctx).length > 0)) return true;
    if (ctx.root && ctx.root !== document && holds(ctx.root.querySelectorAll(css))) return true;
    return holds(document.querySelectorAll(css));
  };
  const isStop = (view, el) => view.facts.stop.some((probe) => matches(el, probe.css) && passes(view, probe, el)) && !neverControl(view, el);
  const isDisabled = (view, el) => el.disabled === true || view.disabled.some((css) => matches(el, css));
  const describe = (probe) => {
    if (!probe) return null;
    const filters = ['label', 'text', 'icon', 'attr', 'beside'].filter((key) => probe[key]).map((key) => `${key}=${probe[key]}`);
    if (probe.unique) filters.push('unique');
    return [probe.css, ...filters].join(' ').slice(0, 256);
  };

  // ---- Page facts (facts only; the worker decides). Coalesced: a mutation only schedules
  // one recompute (≤ 1 per 100 ms); an unchanged result is not sent.
  // Cost invariants (REFERENCE.md §2: "a full DOM scan on every streamed token"; measured by
  // e2e/bench/content-cost.mjs): the observer callback is O(1) per batch; a recompute reads
  // no layout (textContent, never innerText) and, once the turn list is known, touches only
  // the composer's form and the last TAIL_TURNS units of the turn list, plus one
  // document-wide query of user messages when the turn list itself changed (a turn added
  // or removed; streaming into the last turn does not change it), and the document-wide
  // probes of Stop and the permission card when their scoped look found nothing. A
  // recompute whose mutations were all text inside the streaming reply evaluates nothing
  // (the quiet path, below), and while a reply streams its text makes no mutation record
  // at all (the streaming watch). Old turns are virtualized away by the sites anyway.
  // Our marker line: `[herdr-continuity <delivery id> ref=<session ref>]` (the ref is left
  // out only on a handoff seed into a chat without an id yet); group 1 is the delivery id.
  const MARKER = /\[herdr-continuity ([^\]\s]+)(?: ref=[^\]\s]+)?\]/g;
  // A message's own marker (docs/PROTOCOL.md "Fenced data"): our marker line ends every
  // message we type, after any data fence, so only the LAST marker of the text counts, and
  // only when the nearest fence delimiter before it is a closing one (or there is none): a
  // marker inside `<<<HC_DATA …>>>` … `<<<END_HC_DATA …>>>` is relayed agent/tool text and
  // never ours. null when the text has no such marker.
  const FENCE_DELIMITER = /<<<(END_)?HC_DATA [^\n]*?>>>/g;
  const ownMarker = (text) => {
    const last = [...text.matchAll(MARKER)].pop();
    if (!last) return null;
    const before = [...text.slice(0, last.index).matchAll(FENCE_DELIMITER)].pop();
    return before && !before[1] ? null : last[1];
  };
  const hasMarker = (text, id) => ownMarker(text) === id;
  // A delivery id as the worker's ledger makes them (`<subject>/<epoch>.<life>.<n>`, ext-core
  // continuity/semantic `delivery_id_shaped`): a user turn is ours only by such an id in its
  // own marker line, never by its text; a marker-like line without one is the human's.
  const DELIVERY_ID = /^.+\/[A-Za-z0-9]+\.\d+\.\d+$/;
  const oursByMarker = (text) => {
    const id = ownMarker(text);
    return id !== null && DELIVERY_ID.test(id);
  };
  const TAIL_TURNS = 12;
  // Markers are read from this many of the newest user turns (facts(), the streaming watch).
  const MARKER_USER_TURNS = 5;
  // The turn list: the element whose children are the turns or their wrappers (a profile
  // `turn_list` probe, else the nearest common ancestor of the first and last turn, so
  // turns wrapped in their own `section` / `div` still share one list). Kept while it is
  // in the document and the profile is the same; with fewer than two turns nothing is kept.
  let turnCache = { profile: null, list: null, probe: null, listProbe: null };
  let userTurns = { shape: null, list: [], probe: null };
  const commonAncestor = (a, b) => {
    for (let node = a.parentElement; node; node = node.parentElement) if (node.contains(b)) return node;
    return null;
  };
  const turnsNow = () => {
    if (turnCache.profile === profile && turnCache.list?.isConnected && turnCache.list.firstElementChild) {
      return { ...turnCache, tail: tailOf(turnCache.list) };
    }
    turnCache = { profile: null, list: null, probe: null, listProbe: null };
    const turns = find(profile, 'turn', {}, true);
    if (!turns) return { list: null, tail: [], probe: null, listProbe: null };
    const first = turns.list[0];
    const last = turns.list[turns.list.length - 1];
    const listed = find(profile, 'turn_list', { from: first });
    const byProbe = listed && listed.el.contains(last) ? listed.el : null;
    const list = byProbe ?? (first === last ? null : commonAncestor(first, last));
    if (!list) return { list: null, tail: [first], probe: turns.probe, listProbe: null };
    turnCache = { profile, list, probe: turns.probe, listProbe: byProbe ? listed.probe : null };
    return { ...turnCache, tail: tailOf(list) };
  };
  const tailOf = (list) => {
    const tail = [];
    for (let unit = list.lastElementChild; unit && tail.length < TAIL_TURNS; unit = unit.previousElementSibling) tail.unshift(unit);
    return tail;
  };
  // The user messages, queried document-wide again only when the turn list's shape
  // changed, a cached one left the document, or no list is known (a short chat).
  const usersNow = (list) => {
    const shape = list && [profile, list, list.childElementCount, list.firstElementChild, list.lastElementChild];
    const same = shape && userTurns.shape && shape.every((part, i) => part === userTurns.shape[i]) &&
      userTurns.list.slice(-MARKER_USER_TURNS).every((turn) => turn.isConnected);
    if (!same) {
      const users = find(profile, 'user', {}, true);
      userTurns = { shape, list: users?.list ?? [], probe: users?.probe ?? null };
    }
    return userTurns;
  };
  // The turn generation: the generations of the probe that found the turns (narrowed to
  // the diagnostic label's when it is one of them: a classic page's turns found by a probe
  // classic shares with section are classic turns), else the label's, else every
  // generation. A reply streams, is complete and has its
  // body by that generation's probes only (TURN_FACTS), so a thread turn never "completes"
  // by a classic copy button, and it counts as streaming until complete when any of them
  // says so (`pending_until_complete`). A view is the profile with those chains cut to
  // the turn generation, one object per profile and generation set (the caches below are
  // keyed by it).
  const TURN_FACTS = ['streaming', 'complete', 'assistant_body'];
  const views = new WeakMap(); // profile → Map(generation ids → view)
  const gensOf = (probe) => (Array.isArray(probe?.gens) && probe.gens.length ? probe.gens : null);
  const viewOf = (gens) => {
    let byGens = views.get(profile);
    if (!byGens) { byGens = new Map(); views.set(profile, byGens); }
    const key = gens.join(' ');
    let view = byGens.get(key);
    if (!view) {
      const facts = { ...profile.facts };
      for (const fact of TURN_FACTS) facts[fact] = profile.facts[fact].filter((probe) => (gensOf(probe) ?? gens).some((id) => gens.includes(id)));
      const pending = profile.generations.some((gen) => gens.includes(gen.id) && gen.pending_until_complete);
      view = { ...profile, facts, gens, pending_until_complete: pending };
      byGens.set(key, view);
    }
    return view;
  };
  // The last assistant message (searched in the tail, else in the document) and the scope
  // `last` probes look in: its turn when that turn holds no user message, else itself.
  const lastAssistant = (view, tail, turnProbe) => {
    for (const probe of view.facts.assistant) {
      let el = null;
      for (let i = tail.length - 1; i >= 0 && !el; i--) el = selfAndInside(tail[i], probe.css).pop() ?? null;
      if (!tail.length) el = queryAll(document, probe.css).pop() ?? null;
      if (!el) continue;
      const turn = turnProbe ? closest(el, turnProbe.css) : null;
      const userInside = turn && view.facts.user.some((user) => { try { return turn.querySelector(user.css) !== null; } catch { return false; } });
      return { el, probe, scope: turn && !userInside ? turn : el };
    }
    return null;
  };
  const composerText = (el) => (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT' ? el.value : el.textContent) || '';
  const squash = (value) => value.replace(/\s+/g, '');
  const typed = new Map(); // delivery id → text this page life typed (never typed twice)
  // Everything the adapter found, for facts, diagnostics and commands; `unresolved` / `why`:
  // the first needed fact that does not resolve (docs/PROTOCOL.md "page_facts"), in this
  // order: composer (none, or its probe finds more than one), root (none up from the
  // composer), send (its probe finds more than one control that is not Stop), stop (more
  // than one), user (turns but no user or assistant message). Message ids are not gated on:
  // recorded real pages show user turns without them (a delivery is confirmed by its marker).
  // While it is not null nothing is typed or clicked.
  const observe = () => {
    if (!profile) return { view: null, label: null, unresolved: 'profile', why: 'missing' };
    const shape = shapeNow();
    const composerHit = composerNow();
    let unresolved = null;
    let why = null;
    const fail = (fact, reason) => {
      if (unresolved === null) { unresolved = fact; why = reason; }
    };
    if (!composerHit) fail('composer', 'missing');
    else if (composerHit.list.length > 1) fail('composer', 'ambiguous');
    const composer = unresolved === null ? composerHit.el : null;
    const rootHit = composer ? find(profile, 'root', { from: composer }) : null;
    if (composer && !rootHit) fail('root', 'missing');
    const root = rootHit?.el ?? null;
    const turns = turnsNow();
    const users = usersNow(turns.list);
    const labelled = shape.gen ? [shape.gen.id] : null;
    const turnGens = gensOf(turns.probe);
    const view = viewOf((turnGens && labelled && turnGens.includes(labelled[0]) ? labelled : turnGens) ?? labelled ?? profile.generations.map((gen) => gen.id));
    const last = lastAssistant(view, turns.tail, turns.probe);
    const ctx = { root, tail: turns.tail, last: last?.scope ?? null, controls: true };
    const sendHit = root ? find(view, 'send', ctx, true) : null;
    const sends = sendHit ? sendHit.list.filter((el) => !isStop(view, el)) : [];
    if (sends.length > 1) fail('send', 'ambiguous');
    const stop = present(view, 'stop', ctx);
    if (stop && (find(view, 'stop', ctx, true)?.list.length ?? 0) > 1) fail('stop', 'ambiguous');
    ctx.controls = false;
    if (turns.tail.length && !users.list.length && !last) fail('user', 'missing');
    const streaming = find(view, 'streaming', ctx);
    const complete = last ? find(view, 'complete', ctx) : null;
    const label = shape.gen?.id ?? (composer ? 'mixed' : null);
    return {
      view, label, unresolved, why, composerHit, composer, rootHit, root, turns, users, last, ctx,
      send: sends.length === 1 ? sends[0] : null, stop, streaming, complete,
    };
  };
  const generatingIn = (seen) => Boolean(seen.stop || seen.streaming ||
    (seen.view.pending_until_complete && seen.last && !seen.complete));
  // The Send control, only while it is the one control the send chain found that is not
  // Stop (a flipping submit button that shows Stop is never Send) and it is enabled.
  const sendControl = (seen) => (seen.send && !isDisabled(seen.view, seen.send) ? seen.send : null);
  // The composer when its chain finds exactly one, for removing our own text and for the
  // Queue button (which need no other fact).
  const soleComposer = () => {
    const hit = profile ? find(profile, 'composer', {}, true) : null;
    return hit?.list.length === 1 ? hit.el : null;
  };
  const messageId = (view, el) => {
    const hit = el ? find(view, 'message_id', { message: el }) : null;
    const value = hit ? hit.el.getAttribute(hit.probe.attr) : null;
    return value ? value.trim().split(/\s+/)[0] : null;
  };

  // ---- The ended turn (semantic Auto and the judge button, docs/PROTOCOL.md
  // "turn_ended"): the last user turn's text without our marker lines and the last reply's
  // text, each bounded (keeping the tail). Read only when a reply has ended (a full
  // recompute saw generating go false) or the judge button is pressed, never per mutation;
  // innerText (one layout read) keeps the reply's line structure for the judge.
  const TURN_USER_MAX = 6000; // ext-core limits::MAX_TURN_USER_CHARS
  const TURN_ASSISTANT_MAX = 12000; // ext-core limits::MAX_TURN_ASSISTANT_CHARS
  const MARKER_LINE = /^.*\[herdr-continuity [^\]\s]+(?: ref=[^\]\s]+)?\].*$/gm;
  const tailChars = (value, max) => {
    const chars = Array.from(value);
    return chars.length > max ? chars.slice(-max).join('') : value;
  };
  const readText = (el) => (el ? (el.innerText ?? el.textContent ?? '') : '').trim();
  // A reply as the JSON bridge must read it (issue 23: call lines inside Markdown code
  // fences are not calls). z.ai and DeepSeek render a fenced block as <pre><code>, and
  // innerText drops its ``` lines: each <pre>'s text is put back between ``` lines, found
  // in order in the reply's text (inline code stays as it is).
  const readReplyText = (el) => {
    const whole = readText(el);
    const blocks = el ? [...el.querySelectorAll('pre')].filter((pre) => !pre.parentElement?.closest('pre')) : [];
    if (!blocks.length) return whole;
    let out = '';
    let at = 0;
    for (const pre of blocks) {
      const code = (pre.innerText ?? pre.textContent ?? '').replace(/\n+$/, '');
      const found = code ? whole.indexOf(code, at) : -1;
      if (found < 0) continue;
      const before = whole.slice(at, found);
      out += `${before}${before === '' || before.endsWith('\n') ? '' : '\n'}\`\`\`\n${code}\n\`\`\`\n`;
      at = found + code.length;
      if (whole[at] === '\n') at += 1;
    }
    return (out + whole.slice(at)).trim();
  };
  // The journal's copy of a turn (C1: at most 64 KiB of UTF-8, ext-core
  // continuity::MAX_JOURNAL_TEXT_BYTES): a longer turn keeps its start and its end around
  // a line that says how much was left out (the judge reads the end; the JSON bridge reads
  // only what comes before that line, ext-core continuity/bridge `bridge_text`).
  const JOURNAL_TEXT_BYTES = 64 * 1024;
  const utf8 = new TextEncoder();
  const bytesCut = (value, max, fromEnd) => {
    const bytes = utf8.encode(value);
    const part = fromEnd ? bytes.subarray(bytes.length - max) : bytes.subarray(0, max);
    return new TextDecoder().decode(part).replace(fromEnd ? /^\uFFFD+/ : /\uFFFD+$/, '');
  };
  const journalText = (value) => {
    if (value.length * 3 <= JOURNAL_TEXT_BYTES || utf8.encode(value).length <= JOURNAL_TEXT_BYTES) return value;
    const half = (JOURNAL_TEXT_BYTES >> 1) - 128;
    const head = bytesCut(value, half, false);
    const tail = bytesCut(value, half, true);
    return `${head}\n[… ${value.length - head.length - tail.length} characters left out by herdr-continuity …]\n${tail}`;
  };
  // `full` (a reply ended: the journal's copy, docs/PROTOCOL.md "turn_ended") or bounded
  // (the judge button).
  const endedTurn = (full = false) => {
    const seen = observe();
    if (!seen.view) return { user_text: '', assistant_text: '', user_marker: null };
    const users = seen.users.list;
    const raw = readText(users[users.length - 1] ?? null);
    const marker = ownMarker(raw);
    const body = seen.last ? (find(seen.view, 'assistant_body', seen.ctx)?.el ?? seen.last.el) : null;
    const userText = raw.replace(MARKER_LINE, '').trim();
    const replyText = readReplyText(body);
    return {
      user_text: full ? journalText(userText) : tailChars(userText, TURN_USER_MAX),
      assistant_text: full ? journalText(replyText) : tailChars(replyText, TURN_ASSISTANT_MAX),
      user_marker: marker && marker.length <= 256 ? marker : null,
      // The reply's own id (the JSON bridge keys its calls by it, O2; the journal, C1).
      message_id: seen.last ? messageId(seen.view, seen.last.el) : null,
      user_message_id: users.length ? messageId(seen.view, users[users.length - 1]) : null,
    };
  };
  // FNV-1a, 64 bits, of the text's UTF-8 (as ext-core continuity/bridge text_turn_id).
  const textTurnId = (value) => {
    let hash = 0xcbf29ce484222325n;
    for (const byte of utf8.encode(value)) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
    return `text:${hash.toString(16).padStart(16, '0')}`;
  };
  // The newest user turn that carries no marker of ours (a results message, a wake are
  // ours): the human's, from which the runtime counts tool rounds (M7) — its page id, else
  // `text:` and the hash of its text. A page fact, read from the thread every time, so a
  // worker restart in an Auto loop still knows it. A sent turn does not change: each is
  // read once.
  const humanTurns = new WeakMap(); // user turn element → its id, or '' when it is ours
  // The newest human user turn: `{ id, el }`, or null.
  const humanTurn = (view, users) => {
    for (let i = users.length - 1; i >= 0 && i >= users.length - 64; i -= 1) {
      let id = humanTurns.get(users[i]);
      if (id === undefined) {
        const raw = readText(users[i]);
        const mid = messageId(view, users[i]);
        const value = tailChars(raw.replace(MARKER_LINE, '').trim(), TURN_USER_MAX);
        id = oursByMarker(raw) ? '' : (mid && mid.length <= 256 ? mid : (value ? textTurnId(value) : ''));
        humanTurns.set(users[i], id);
      }
      if (id) return { id, el: users[i] };
    }
    return null;
  };
  let wasGenerating = false;
  const sendTurnEnded = () => {
    port?.postMessage({ type: 'turn_ended', ...endedTurn(true) });
    sendThreadFacts(true);
  };

  // ---- The user's own Stop (docs/PROTOCOL.md "user_stop"): a trusted activation (a
  // pointer press or click; Enter / Space on a focused button is a trusted click too) of the
  // element the profile's `stop` fact resolves to. Our own clicks are `element.click()`,
  // never trusted, and never on Stop. The worker marks the streaming reply as stopped by the
  // user: it is never continued automatically. Read only on a trusted click, never per
  // mutation.
  const onUserStop = (event) => {
    if (!event.isTrusted || !(event.target instanceof Element)) return;
    const seen = observe();
    if (!seen.view || !seen.stop) return;
    for (let el = event.target; el && el !== document.documentElement; el = el.parentElement) {
      if (isStop(seen.view, el)) {
        postPress(() => ({ type: 'user_stop', page_load: pageLoad }));
        return;
      }
    }
  };
  document.addEventListener('pointerdown', onUserStop, true);
  document.addEventListener('click', onUserStop, true);

  // ---- The visible thread, for context pressure (R1, docs/PROTOCOL.md "thread_facts"):
  // how many turns, their characters (CJK apart) and the highest absolute turn index the
  // profile's `turn_index_attr` gives. Read once per page (URL) while no reply streams and
  // again when a reply ended — never per mutation.
  // ext-core context_pressure::is_cjk's ranges (a test checks they are the same).
  const CJK = /[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u{20000}-\u{2fa1f}]/gu;
  let threadShape = '';
  const turnChars = new WeakMap(); // turn element → [characters, CJK characters]
  const sendThreadFacts = (force) => {
    if (!force && location.href === threadShape) return;
    const seen = observe();
    if (!seen.view) return;
    threadShape = location.href;
    const turns = find(seen.view, 'turn', {}, true)?.list ?? [];
    let chars = 0;
    let cjk = 0;
    // A finished turn's text does not change: each is read once (the newest two again,
    // since a reply may still be growing there), so a long thread costs O(new turns).
    turns.forEach((turn, i) => {
      let counted = i < turns.length - 2 ? turnChars.get(turn) : undefined;
      if (!counted) {
        const value = turn.textContent || '';
        counted = [value.length, value.match(CJK)?.length ?? 0];
        turnChars.set(turn, counted);
      }
      chars += counted[0];
      cjk += counted[1];
    });
    const attr = profile?.turn_index_attr;
    const index = attr && turns.length ? /(\d+)$/.exec(turns[turns.length - 1].getAttribute(attr) ?? '') : null;
    const highest = index ? Number(index[1]) : null;
    port?.postMessage({ type: 'thread_facts', turns: turns.length, latin_chars: chars - cjk, cjk_chars: cjk,
      highest_turn: highest !== null && Number.isSafeInteger(highest) && highest < 2 ** 31 ? highest : null });
  };

  // ---- The Herdr App (docs/PROTOCOL.md "The Herdr App"; ext-core sites::AppMentions):
  // the pills of the Apps a message carries, read in user turns (`human_apps`) and in the
  // composer (the read-back before sending). A pill is `{keyword, name, path}`; fields are
  // capped as ext-core reads them, and a pill without a keyword or name is not an App.
  const APP_KEYWORD_MAX = 64;
  const APP_NAME_MAX = 256;
  const APP_PATH_MAX = 256; // ext-core limits: each field at most 256 characters
  const APPS_MAX = 8;
  const appMentions = () => profile?.app_mentions ?? null;
  const pillElements = (scope) => {
    const apps = appMentions();
    if (!apps || !scope) return [];
    const out = [];
    for (const pill of apps.pills) {
      for (const el of queryAll(scope, pill.css)) if (!out.some((seen) => seen.el === el)) out.push({ el, pill });
    }
    return out;
  };
  const readPill = ({ el, pill }) => {
    const attr = (name) => (name ? (el.getAttribute(name) ?? '').trim() : '');
    const name = pill.name_attr ? attr(pill.name_attr) : (el.textContent || '').trim().replace(/^@/, '').trim();
    const keyword = pill.keyword_attr ? attr(pill.keyword_attr) : name.toLowerCase();
    const path = attr(pill.path_attr);
    if (!keyword || !name || keyword.length > APP_KEYWORD_MAX || name.length > APP_NAME_MAX || path.length > APP_PATH_MAX) return null;
    return { keyword, name, path };
  };
  const appsIn = (scope) => pillElements(scope).map(readPill).filter(Boolean).slice(0, APPS_MAX);
  // A pill is the App asked for when its keyword (case aside) is the App's, and its name
  // and path are the App's where both sides have one.
  const sameApp = (found, app) => Boolean(found) && found.keyword.toLowerCase() === String(app.keyword).toLowerCase() &&
    (!found.name || !app.name || found.name.toLowerCase() === String(app.name).toLowerCase()) &&
    (!found.path || !app.path || found.path === app.path);
  // The composer's text without its pills (what the adapter typed after the pill).
  const plainText = (composer) => {
    const pills = pillElements(composer).map(({ el }) => el);
    if (!pills.length) return composerText(composer);
    const copy = composer.cloneNode(true);
    for (const el of pillElements(copy).map(({ el: pill }) => pill)) el.remove();
    return composerText(copy);
  };
  // Whether the composer holds only what an App attempt typed. The composer was empty when
  // the attempt began (deliver requires it), so App pills are ours (a wrong one the picker
  // put there too), and so is text made only of pieces of `@<keyword>` (a mention typed in
  // part, perhaps more than once: `@her@herdr`) followed by nothing or by a part of our
  // message (typed after the pill).
  const attemptIsOurs = (composer, app) => {
    if (!composer) return false;
    let rest = squash(plainText(composer)).toLowerCase();
    const mention = squash(`@${app.keyword}`).toLowerCase();
    for (;;) {
      let n = 0;
      while (n < mention.length && n < rest.length && rest[n] === mention[n]) n += 1;
      if (n === 0) break;
      rest = rest.slice(n);
    }
    const message = delivering !== null ? squash(typed.get(delivering.id) ?? '').toLowerCase() : '';
    return rest === '' || (message !== '' && message.includes(rest));
  };

  let delivering = null;
  let lastGenerating = false;
  let lastFacts = '';
  let lastGeneration;
  let lastUnresolved;
  const facts = () => {
    usagePass += 1;
    const seen = observe();
    tally(seen);
    quiet = quietZoneOf(seen);
    if (seen.view) sendRecoveryFacts(seen);
    lastGeneration = seen.label;
    lastUnresolved = seen.unresolved;
    const base = {
      type: 'page_facts', url: location.href, generation: seen.label, page_load: pageLoad,
      unresolved: seen.unresolved, unresolved_why: seen.why, account,
    };
    if (!seen.view) {
      return { ...base, composer: false, draft: false, composer_marker: null, generating: false, permission_card: false,
        user_turns: 0, last_user_turn_id: null, last_human_turn_id: null, human_apps: [], markers: [], delivering: delivering?.id ?? null };
    }
    const users = seen.users.list;
    const human = humanTurn(seen.view, users);
    const markers = [];
    for (const turn of users.slice(-MARKER_USER_TURNS)) {
      const own = ownMarker(turn.textContent || '');
      if (own !== null) markers.push(own);
    }
    const text = seen.composer ? composerText(seen.composer) : '';
    const composerOwn = ownMarker(text);
    const composerMarker = composerOwn !== null && composerOwn.length <= 256 ? composerOwn : null;
    // Text this page typed and did not send is not a draft; anything else in the composer
    // is. After a reload the typed text is unknown: the marker line alone says it is ours.
    // The App pill in front of it is ours too, and so is an App being attached right now.
    const ours = (composerMarker !== null && (!typed.has(composerMarker) || squash(plainText(seen.composer)) === squash(typed.get(composerMarker)))) ||
      (delivering?.app !== undefined && attemptIsOurs(seen.composer, delivering.app));
    return {
      ...base,
      composer: Boolean(seen.composer),
      draft: text.trim() !== '' && !ours,
      composer_marker: composerMarker,
      // A missed Stop or streaming cue would let a message be typed into a busy page.
      generating: generatingIn(seen),
      permission_card: sendCards(seen, present(seen.view, 'permission_card', seen.ctx)),
      user_turns: users.length,
      last_user_turn_id: users.length ? messageId(seen.view, users[users.length - 1]) : null,
      last_human_turn_id: human?.id ?? null,
      human_apps: human ? appsIn(human.el) : [],
      // The worker rejects a page_facts over its caps (ext-core limits.rs: MAX_MARKERS 16,
      // MAX_ID_CHARS 256), so a page full of marker-like text must not silence the facts:
      // send only the newest markers that fit.
      markers: markers.filter((m) => m.length <= 256).slice(-16),
      delivering: delivering?.id ?? null,
    };
  };
  // ---- The quiet path. While a reply streams, almost every mutation is text added to the
  // reply's body, and no page fact reads that text (markers are read in user turns, the
  // draft in the composer; streaming and completion cues are attributes and elements). So
  // a recompute whose mutations all lie inside that body, and added no element any probe
  // could match, has the facts it had, and is answered without evaluating them. The body
  // qualifies ("quiet zone") only when nothing in it matches a probe of a page fact, no
  // element around it is read for its text (composer, user message, label or text probes),
  // and the generation's selectors depend on no sibling or descendant structure (`:has`,
  // `:nth-…`, `+`, `~`), which added text could change elsewhere. Anything else — an
  // attribute change, a mutation outside the body, a new URL, input, a command — makes
  // the next recompute a full one.
  const STRUCTURAL = /:has\(|:nth-|:first-|:last-|:only-|:empty|[+~](?!=)/;
  const PAGE_FACTS = ['composer', 'root', 'stop', 'turn_list', 'turn', 'user', 'assistant', 'message_id',
    'assistant_body', 'streaming', 'complete', 'permission_card'];
  const compiledQuiet = new WeakMap(); // view → { inside, around } selector lists, or null
  const quietSelectorsOf = (view) => {
    if (compiledQuiet.has(view)) return compiledQuiet.get(view);
    const probes = PAGE_FACTS.flatMap((fact) => view.facts[fact]);
    const markers = view.generations.flatMap((gen) => [...gen.detect.all, ...gen.detect.any, ...gen.detect.none]);
    const inside = ['button', ...markers, ...view.never, ...probes.map((probe) => probe.css)];
    const around = [...view.facts.composer, ...view.facts.user, ...probes.filter((probe) => probe.label || probe.text || probe.beside)].map((probe) => probe.css);
    let compiled = null;
    if (!inside.some((css) => STRUCTURAL.test(css))) {
      compiled = { inside: [...new Set(inside)].join(', '), around: [...new Set(around)].join(', ') || ':not(*)' };
      try { document.createDocumentFragment().querySelector(`${compiled.inside}, ${compiled.around}`); } catch { compiled = null; }
    }
    compiledQuiet.set(view, compiled);
    return compiled;
  };
  let quiet = null; // { zone, css, href, profile } from the last full recompute
  const quietZoneOf = (seen) => {
    if (!seen.view || !seen.last) return null;
    const selectors = quietSelectorsOf(seen.view);
    const zone = selectors ? find(seen.view, 'assistant_body', seen.ctx)?.el : null;
    if (!zone || zone.querySelector(selectors.inside) || zone.closest(selectors.around)) return null;
    return { zone, css: selectors.inside, href: location.href, profile };
  };
  // Runs in the recompute (never in the observer callback): O(records since the last one).
  // While the observer leaves the zone's content out (the streaming watch, below), an
  // element added or changed deep inside the zone makes no record, so the zone is looked
  // at again instead (a query bounded by the reply's body).
  const onlyQuietText = (batches) => {
    if (!quiet || quiet.profile !== profile || quiet.href !== location.href || !quiet.zone.isConnected) return false;
    const { zone, css } = quiet;
    if (watchedZone === zone && zone.querySelector(css)) return false;
    for (const records of batches) {
      for (const record of records) {
        if (record.type === 'attributes' || !zone.contains(record.target)) return false;
        for (const node of record.addedNodes) {
          if (node.nodeType === Node.ELEMENT_NODE && (node.matches(css) || node.querySelector(css))) return false;
        }
      }
    }
    return true;
  };
  // Mutation batches since the last recompute, kept (not read) by the observer callback;
  // past QUIET_RECORDS_MAX records the next recompute is a full one anyway.
  const QUIET_RECORDS_MAX = 256;
  let pending = [];
  let pendingRecords = 0;
  let dirty = true;

  // Debug counters for e2e/bench (content script cost): data-* on our host, which the
  // observer below does not watch (its attributeFilter), so writing them causes no recompute.
  // They are written on each full recompute and whenever the page asks (a
  // `herdr-continuity:counters` event on the host, which runs this listener synchronously),
  // not on each quiet recompute: an attribute write there would cost more than the
  // recompute itself.
  let factsComputed = 0;
  let factsSkipped = 0;
  let factsSent = 0;
  let factsMs = 0;
  const publishCounters = () => {
    host.dataset.factsComputed = String(factsComputed);
    host.dataset.factsSkipped = String(factsSkipped);
    host.dataset.factsMs = factsMs.toFixed(3);
  };
  host.addEventListener('herdr-continuity:counters', publishCounters);
  const sendFacts = (force = false) => {
    const startedAt = performance.now();
    const batches = pending;
    const full = force || dirty;
    pending = [];
    pendingRecords = 0;
    dirty = false;
    factsComputed += 1;
    if (!full && onlyQuietText(batches)) {
      factsSkipped += 1;
      factsMs += performance.now() - startedAt;
      // The streaming watch sees no text or element added inside the zone: look again.
      if (watchedZone) scheduleRecheck();
      return;
    }
    const before = lastGeneration;
    const beforeUnresolved = lastUnresolved;
    const current = facts();
    const json = JSON.stringify(current);
    // A reply ended: its turn is reported once, after the facts that say so.
    const ended = wasGenerating && !current.generating && current.unresolved !== 'profile';
    wasGenerating = current.generating;
    watchFor(current);
    lastGenerating = current.generating;
    if (diagnosticsDeferred && !lastGenerating) {
      diagnosticsDeferred = false;
      scheduleDiagnostics();
    }
    factsMs += performance.now() - startedAt;
    publishCounters();
    host.dataset.generation = current.generation ?? '';
    if (profile && before !== undefined && (current.generation !== before || current.unresolved !== beforeUnresolved)) sendDiagnostics(true);
    if (!force && json === lastFacts) {
      if (ended) sendTurnEnded();
      return;
    }
    lastFacts = json;
    port?.postMessage(current);
    host.dataset.factsSent = String(++factsSent);
    if (ended) sendTurnEnded();
    else if (!current.generating && current.unresolved !== 'profile') sendThreadFacts(false);
    scheduleDiagnostics();
  };
  // One recompute timer: `soon` (≤ 100 ms after a mutation or an input) or `recheck` (the
  // streaming watch's next look into the zone, after the profile's streaming_recheck_ms);
  // a mutation brings a pending recheck forward.
  let scheduled = null; // null | { kind: 'soon' | 'recheck', timer }
  const scheduleAfter = (kind, ms) => {
    // setTimeout, not requestAnimationFrame: rAF is paused in background tabs, and a bound
    // chat usually is one.
    scheduled = { kind, timer: setTimeout(() => { scheduled = null; sendFacts(); }, ms) };
  };
  const scheduleRecompute = () => {
    if (scheduled?.kind === 'soon') return;
    if (scheduled) clearTimeout(scheduled.timer);
    scheduleAfter('soon', 100);
  };
  const scheduleRecheck = () => {
    if (!scheduled) scheduleAfter('recheck', profile?.streaming_recheck_ms ?? 100);
  };
  // Anything but the observer (input, navigation, a command) makes the next recompute full.
  const scheduleFacts = () => {
    dirty = true;
    scheduleRecompute();
  };
  // O(1) per batch, records unread here (the recompute reads them for the quiet path): the
  // HUD's shadow tree is invisible to this observer, and our host's own data-* writes are
  // outside attributeFilter, so no batch is ours alone (and an extra recompute would be
  // coalesced and, unchanged, not sent). The attributes watched are the ones the profile's
  // selectors name, plus the label, class, disabled and icon-path attributes the probe
  // filters read.
  const onRecords = (records) => {
    meters.callbacks += 1;
    if (!dirty) {
      pendingRecords += records.length;
      if (pendingRecords > QUIET_RECORDS_MAX) { dirty = true; pending = []; } else pending.push(records);
    }
    scheduleRecompute();
  };
  const observer = new MutationObserver(onRecords);
  // A press is read against the page as the user saw it when pressing: mutations not yet
  // turned into facts are, first (and a reply that ended, into its `turn_ended`), so the
  // worker hears them before the press, on the same port, in that order. Without it a
  // reply that ended < 100 ms before "Journal this chat" was journaled as if it came after.
  const flushFacts = () => {
    if (observer.takeRecords().length) dirty = true;
    if (!scheduled && !dirty) return;
    if (scheduled) clearTimeout(scheduled.timer);
    scheduled = null;
    sendFacts();
  };
  // Posts what a press says (`make()` reads the page after the flush).
  const postPress = (make) => {
    flushFacts();
    port?.postMessage(make());
  };
  let watched = null; // { whole, shallow, own } observe() options for the profile's attributes
  const watch = () => {
    const names = new Set(['class', 'aria-label', 'title', 'disabled', 'aria-disabled', 'aria-busy', 'd']);
    for (const probes of Object.values(profile?.facts ?? {})) {
      for (const probe of probes) {
        for (const m of probe.css.matchAll(/\[([a-zA-Z0-9_-]+)/g)) names.add(m[1]);
        if (probe.attr) names.add(probe.attr);
      }
    }
    const attributeFilter = [...names];
    watched = {
      whole: { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter },
      shallow: { childList: true, attributes: true, attributeFilter },
      own: { attributes: true, attributeFilter },
    };
    watchWhole();
  };
  // ---- The streaming watch. While a reply streams into a quiet zone, nearly every
  // mutation is a token of its text, and a document-wide observer pays for each one (a
  // record, a callback, a timer) only for the quiet path to set it aside. So while the
  // last full recompute saw the page generating into a quiet zone, the observer watches
  // around the zone but not its content: the zone for its own attributes, each ancestor of
  // it for its attributes and children (not deeper), and the other children of those
  // ancestors with their whole subtrees (of the ones before the zone's branch, only the
  // nearest: WATCH_BEFORE, below). Every change the facts read outside the zone still
  // makes a record, as do the zone's own attributes (classic's streaming cue, thread's final id); what
  // does not (text, elements added or changed in the zone) is looked at by a recompute
  // that comes every profile `streaming_recheck_ms` while the watch lasts (onlyQuietText).
  // A full recompute that finds the page no longer generating, or no quiet zone, goes
  // back to watching the whole document.
  let watchedZone = null; // the zone whose content the observer leaves out, or null
  const rewatch = (observe) => {
    // Records of our own synchronous work (none are expected) are not lost by disconnect().
    if (observer.takeRecords().length) dirty = true;
    observer.disconnect();
    observe();
    if (dirty) scheduleRecompute();
  };
  const watchWhole = () => rewatch(() => {
    watchedZone = null;
    watchedNodes = { zone: null, ancestors: [], siblings: [] };
    observer.observe(document.documentElement, watched.whole);
  });
  // The nodes the watch registered on: the zone, its ancestors, and the siblings it
  // watches whole. When a later full recompute finds the same nodes, the registrations
  // stand as they are (comparing is cheaper than registering them again).
  let watchedNodes = { zone: null, ancestors: [], siblings: [] };
  // Of an ancestor's other children, the watch takes every one after the zone's branch and
  // only the WATCH_BEFORE nearest before it: in a long chat those are the turn list's old
  // turns, hundreds of subtrees that no page fact reads (markers come from the last
  // MARKER_USER_TURNS user turns, the rest from the tail and the composer). The turn list
  // itself is still watched for added and removed children, so a turn that appears or
  // leaves makes a record; a change deep inside an older turn waits for the next full
  // recompute (at the latest when the reply ends).
  const WATCH_BEFORE = 2 * MARKER_USER_TURNS + 2;
  const nodesAround = (zone) => {
    const ancestors = [];
    const siblings = [];
    for (let node = zone; node !== document.documentElement; node = node.parentElement) {
      const parent = node.parentElement;
      ancestors.push(parent);
      let before = 0;
      for (let other = node.previousSibling; other && before < WATCH_BEFORE; other = other.previousSibling) {
        siblings.push(other);
        if (other.nodeType === Node.ELEMENT_NODE) before += 1;
      }
      for (let other = node.nextSibling; other; other = other.nextSibling) siblings.push(other);
    }
    return { zone, ancestors, siblings };
  };
  const sameNodes = (a, b) => a.length === b.length && a.every((node, i) => node === b[i]);
  const watchAround = (zone) => {
    const nodes = nodesAround(zone);
    if (watchedZone === zone && sameNodes(nodes.ancestors, watchedNodes.ancestors) && sameNodes(nodes.siblings, watchedNodes.siblings)) {
      scheduleRecheck();
      return;
    }
    rewatch(() => {
      watchedZone = zone;
      watchedNodes = nodes;
      observer.observe(zone, watched.own);
      for (const node of nodes.ancestors) observer.observe(node, watched.shallow);
      for (const node of nodes.siblings) observer.observe(node, watched.whole);
      scheduleRecheck();
    });
  };
  const watchFor = (current) => {
    const zone = current.generating && quiet && quiet.zone.getRootNode() === document ? quiet.zone : null;
    // Re-registered after every full recompute: it may have followed a new sibling.
    if (zone) watchAround(zone);
    else if (watchedZone) watchWhole();
  };
  watch();
  document.addEventListener('input', scheduleFacts, true);
  addEventListener('popstate', scheduleFacts);

  // ---- Diagnostics ("What the extension sees"): the generation, per fact the probe that
  // matched, the CSP as a content script can observe it (violation events; whether a
  // <meta> policy exists — response headers are out of reach) and the last delivery
  // outcomes. No page content: selectors, ids and counts only.
  const csp = { violations: 0, directives: [] };
  document.addEventListener('securitypolicyviolation', (event) => {
    csp.violations += 1;
    const directive = String(event.effectiveDirective || event.violatedDirective || '').slice(0, 64);
    if (directive && !csp.directives.includes(directive) && csp.directives.length < 8) csp.directives.push(directive);
    scheduleDiagnostics();
  }, true);
  const recentOutcomes = [];
  // The winners a full recompute knows without a find() (a kept composer, the last reply
  // found probe by probe), counted like find()'s.
  function tally(seen) {
    if (!seen?.view) return;
    const hits = { composer: seen.composerHit, root: seen.rootHit, turn: seen.turns, user: seen.users, assistant: seen.last,
      streaming: seen.streaming, complete: seen.complete };
    for (const [fact, hit] of Object.entries(hits)) if (hit?.probe) won(fact, hit.probe);
    if (seen.turns?.listProbe) won('turn_list', seen.turns.listProbe);
  }
  // `usage`: per fact the chain entry that won last, the generations listing it, whether
  // the fact is served by a fallback, and how many recomputes that entry won. Served by a
  // fallback = the winner is a fallback probe (the profile's flag) and no primary probe of
  // the chain (one that leads some generation) finds the fact now: the primaries stopped
  // matching, which is what drift looks like. (A chain merged across generations may list
  // one generation's generic fallback before another's primary; winning that way while
  // the primary still matches is no drift.)
  const usageReport = (primaryFinds) => {
    const out = {};
    for (const [fact, { probe, wins }] of usage) {
      // The index in the profile's whole chain (a turn-generation view holds the same probes).
      const entry = profile?.facts?.[fact]?.indexOf(probe) ?? -1;
      if (entry < 0) continue;
      out[fact] = {
        entry,
        gens: (Array.isArray(probe.gens) ? probe.gens : []).filter((g) => typeof g === 'string' && g.length <= 64).slice(0, 16),
        fallback: probe.fallback === true && !primaryFinds(fact),
        count: wins.get(probe) ?? 0,
      };
    }
    return out;
  };
  // `missing`: the shape of the region where a needed fact was looked for — tag names,
  // ARIA roles and data-* attribute NAMES with counts, breadth first over at most 200
  // elements from the region's top (our own HUD left out). Never text, never an attribute
  // value (a role is kept only as a plain ARIA token); each map keeps its 16 most frequent.
  const STRUCTURE_ELEMENTS = 200; // ext-core limits::MAX_STRUCTURE_ELEMENTS
  const STRUCTURE_KEYS = 16; // ext-core limits::MAX_STRUCTURE_KEYS
  const STRUCTURE_NAME = /^[a-z][a-z0-9_.:-]{0,63}$/;
  const structureOf = (region) => {
    const maps = { tags: new Map(), roles: new Map(), data_attrs: new Map() };
    const bump = (map, name) => { if (STRUCTURE_NAME.test(name)) map.set(name, (map.get(name) ?? 0) + 1); };
    const queue = region && region !== host ? [region] : [];
    for (let i = 0; i < queue.length; i++) {
      const el = queue[i];
      bump(maps.tags, el.localName);
      const role = (el.getAttribute('role') || '').trim().toLowerCase();
      if (role) bump(maps.roles, role);
      for (const name of el.getAttributeNames()) if (name.startsWith('data-')) bump(maps.data_attrs, name);
      for (let child = el.firstElementChild; child && queue.length < STRUCTURE_ELEMENTS; child = child.nextElementSibling) {
        if (child !== host) queue.push(child);
      }
    }
    const top = (map) => Object.fromEntries([...map].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, STRUCTURE_KEYS));
    return { elements: queue.length, tags: top(maps.tags), roles: top(maps.roles), data_attrs: top(maps.data_attrs) };
  };
  const upward = (el, levels) => {
    let node = el;
    for (let i = 0; i < levels && node?.parentElement && node.parentElement !== document.body; i++) node = node.parentElement;
    return node;
  };
  // The needed facts that are missing (docs/PROTOCOL.md "page_diagnostics"), each with the
  // region it was looked for in: composer → <main> (else <body>); root → three levels
  // above the composer; user → the turns' list. (Message ids are not a needed fact.)
  const missingReport = (seen, hits) => {
    if (!profile) return {};
    const top = document.querySelector('main') ?? document.body;
    const out = {};
    if (!hits.composer) out.composer = structureOf(top);
    else if (seen.composer && !hits.root) out.root = structureOf(upward(seen.composer, 3));
    // As the adapter's own `unresolved` (observe()), every missing one rather than the first.
    const turns = seen.turns;
    if (turns?.tail?.length && !seen.users?.list.length && !seen.last) out.user = structureOf(turns.list ?? turns.tail[0].parentElement ?? top);
    if (seen.unresolved && seen.why === 'missing' && !(seen.unresolved in out) && Object.keys(out).length < 6) {
      out[seen.unresolved] = structureOf(top);
    }
    return out;
  };
  const diagnostics = () => {
    usagePass += 1;
    const seen = observe();
    tally(seen);
    const out = {};
    let hits = {};
    if (seen.view) {
      hits = {
        composer: seen.composerHit,
        root: seen.rootHit,
        send: find(seen.view, 'send', { ...seen.ctx, controls: true }),
        stop: find(seen.view, 'stop', { ...seen.ctx, controls: true }),
        turn_list: seen.turns.list ? { probe: seen.turns.listProbe } : null,
        turn: seen.turns.probe ? { probe: seen.turns.probe } : null,
        user: seen.users.probe ? { probe: seen.users.probe } : null,
        assistant: seen.last ? { probe: seen.last.probe } : null,
        message_id: (() => {
          const el = seen.users.list[seen.users.list.length - 1];
          return el ? find(seen.view, 'message_id', { message: el }) : null;
        })(),
        assistant_body: seen.last ? find(seen.view, 'assistant_body', seen.ctx) : null,
        streaming: seen.streaming,
        complete: seen.complete,
      };
      for (const fact of Object.keys(seen.view.facts)) {
        const hit = fact in hits ? hits[fact] : find(seen.view, fact, seen.ctx);
        out[fact] = hit ? (fact === 'turn_list' && !hit.probe ? '(common ancestor of the turns)' : describe(hit.probe)) : null;
      }
    }
    // Whether a primary probe of the fact's chain finds it, where the adapter looks for it.
    const primaryFinds = (fact) => {
      const chain = seen.view?.facts[fact] ?? [];
      const lastUser = seen.users?.list[seen.users.list.length - 1];
      const where = {
        root: seen.composer ? { from: seen.composer } : null,
        turn_list: seen.turns?.tail[0] ? { from: seen.turns.tail[0] } : null,
        send: { ...seen.ctx, controls: true },
        stop: { ...seen.ctx, controls: true },
        message_id: lastUser ? { message: lastUser } : null,
      };
      const ctx = fact in where ? where[fact] : (seen.ctx ?? {});
      return Boolean(ctx) && chain.some((probe) => probe.fallback === false && candidates(seen.view, probe, ctx, false).length > 0);
    };
    return {
      type: 'page_diagnostics',
      page_load: pageLoad,
      site: profile?.site ?? null,
      generation: seen.label,
      matching: (profile?.generations ?? []).filter((gen) => ruleHolds(gen.detect)).map((gen) => gen.id),
      facts: out,
      usage: usageReport(primaryFinds),
      missing: missingReport(seen, hits),
      csp: { meta: exists('meta[http-equiv="Content-Security-Policy" i]'), violations: csp.violations, directives: [...csp.directives] },
      deliveries: recentOutcomes.slice(-5),
    };
  };
  // The worker refuses a page message over 16 KiB (ext-core limits::MAX_PAGE_MESSAGE_BYTES),
  // and the whole report with it: the parts that grow with the page or a profile shrink
  // until it fits — the missing facts' summaries keep fewer of their most frequent names,
  // then `usage` names fewer generations (entry, fallback and count always stay).
  const DIAGNOSTICS_BYTES = 15 * 1024;
  const fitted = (report) => {
    const cutSummaries = (keep) => () => {
      for (const summary of Object.values(report.missing)) {
        for (const map of ['tags', 'roles', 'data_attrs']) summary[map] = Object.fromEntries(Object.entries(summary[map]).slice(0, keep));
      }
    };
    const cutGens = (keep) => () => { for (const u of Object.values(report.usage)) u.gens = u.gens.slice(0, keep); };
    for (const cut of [cutSummaries(8), cutSummaries(4), cutSummaries(0), cutGens(1), cutGens(0)]) {
      if (utf8.encode(JSON.stringify(report)).length <= DIAGNOSTICS_BYTES) break;
      cut();
    }
    return report;
  };
  let lastDiagnostics = '';
  let diagnosticsSent = 0;
  const sendDiagnostics = (force = false) => {
    const current = fitted(diagnostics());
    const json = JSON.stringify(current);
    if (!force && json === lastDiagnostics) return;
    lastDiagnostics = json;
    port?.postMessage(current);
    host.dataset.diagnosticsSent = String(++diagnosticsSent);
  };
  // At most one diagnostics pass per 2 s: it evaluates every fact, not only the cheap ones.
  // While a reply streams it waits for the reply to end (the streaming page is where the
  // content script's cost is measured; a generation change and a delivery outcome are
  // still reported at once).
  let diagnosticsScheduled = false;
  let diagnosticsDeferred = false;
  const scheduleDiagnostics = () => {
    if (diagnosticsScheduled || !profile) return;
    diagnosticsScheduled = true;
    setTimeout(() => {
      diagnosticsScheduled = false;
      if (lastGenerating) diagnosticsDeferred = true;
      else sendDiagnostics();
    }, 2000);
  };

  // ---- Delivery (docs/PROTOCOL.md "One delivery path"): type like a user, click Send
  // (re-checked to be Send and not Stop right before the click), report what was done.
  // Whether it landed is the worker's call, from the markers in later page_facts. The
  // only waits here are plumbing around one DOM action, each ≤ 2 s.
  const PLUMBING_WAIT_MS = 2000;
  const reports = new Map(); // id → delivery_report, kept until the worker says delivery_seen
  const report = (id, outcome, reason = null, detail = null) => {
    const message = { type: 'delivery_report', id, outcome, reason, ...(detail && { detail }) };
    // A message withheld because its App could not be attached was never sent and nothing of
    // it is left in the composer: the worker's retry with the same id may type it.
    if (reason === 'app_not_attached') typed.delete(id);
    reports.set(id, message);
    recentOutcomes.push({ id, outcome, reason, ...(detail && { detail }) });
    if (recentOutcomes.length > 5) recentOutcomes.shift();
    if (delivering?.id === id) delivering = null;
    port?.postMessage(message);
    scheduleFacts();
    sendDiagnostics();
  };
  const selectContents = (composer) => {
    composer.focus();
    if (composer.tagName === 'TEXTAREA' || composer.tagName === 'INPUT') { composer.select(); return; }
    getSelection().selectAllChildren(composer);
  };
  // Removes the composer's text through the editor (select it all, delete), and only when
  // it is ours: it carries `id`'s marker, or all of it is a part of what we typed.
  const removeOurs = (id) => {
    const composer = soleComposer();
    if (!composer) return false;
    const text = composerText(composer);
    const mine = hasMarker(text, id) ||
      (typed.has(id) && squash(text) !== '' && squash(typed.get(id)).includes(squash(text)));
    if (!mine) return false;
    selectContents(composer);
    document.execCommand('delete');
    scheduleFacts();
    return true;
  };
  const typeInto = (composer, value) => {
    composer.focus();
    if (composer.tagName === 'TEXTAREA' || composer.tagName === 'INPUT') {
      composer.setSelectionRange(composer.value.length, composer.value.length);
      document.execCommand('insertText', false, value);
      return composerText(composer).includes(value.split('\n').pop());
    }
    const selection = getSelection();
    selection.selectAllChildren(composer);
    selection.collapseToEnd();
    if (!document.execCommand('insertText', false, value)) {
      const data = new DataTransfer();
      data.setData('text/plain', value);
      composer.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }
    return composerText(composer).includes(value.split('\n').pop());
  };
  // The conversation a URL shows (its path): a delivery decided for one page is typed
  // only while the page still shows it.
  const conversationPath = (url) => { try { return new URL(url, location.href).pathname.replace(/\/+$/, ''); } catch { return null; } };
  const deliver = ({ id, text: value, url, page_load: load, app = null }) => {
    // Never type one id twice in a page life; a repeated command gets the same answer.
    if (reports.has(id)) { port?.postMessage(reports.get(id)); return; }
    if (delivering?.id === id || typed.has(id)) return;
    if (delivering) return report(id, 'not_submitted', 'busy');
    // Decided for another page load or another conversation than the page shows now (the
    // user moved on while the worker wrote its state): nothing is typed; the worker
    // offers it again where it belongs.
    if ((load && load !== pageLoad) || (url && conversationPath(url) !== conversationPath(location.href))) {
      return report(id, 'not_submitted', 'other_conversation');
    }
    // A fresh look for the composer (the cached one is kept only while it was the one match;
    // a second, e.g. an inline edit box, may have appeared since): typing needs exactly one.
    if (detected) detected.composerHit = null;
    const seen = observe();
    // A needed fact missing or ambiguous (or no profile yet): nothing is typed (a page that
    // is generating says so first: the worker offers it again later either way).
    if (seen.view && generatingIn(seen)) return report(id, 'not_submitted', 'busy');
    if (seen.unresolved !== null) return report(id, 'not_submitted', 'fact_unresolved');
    // The worker decided on facts up to 100 ms old: if the human started typing since,
    // refuse rather than send their draft along with ours (the worker retries later).
    if (composerText(seen.composer).trim() !== '' || pillElements(seen.composer).length) return report(id, 'not_submitted', 'human_draft');
    delivering = app ? { id, app } : { id };
    typed.set(id, value);
    if (!app) return typeAndSend(id, seen.composer, value, null);
    attachApp(app).then((detail) => {
      if (delivering?.id !== id) return;
      if (detail) {
        removeAttempt(id, app);
        return report(id, 'not_submitted', 'app_not_attached', detail);
      }
      if (detected) detected.composerHit = null;
      const now = observe();
      // A needed fact may have stopped resolving while the App was chosen: nothing is typed.
      if (now.unresolved !== null) {
        removeAttempt(id, app);
        return report(id, 'not_submitted', 'fact_unresolved');
      }
      if (!now.composer) {
        removeAttempt(id, app);
        return report(id, 'not_submitted', 'app_not_attached', 'pill_not_read_back');
      }
      typeAndSend(id, now.composer, value, app);
    }, () => {
      removeAttempt(id, app);
      report(id, 'not_submitted', 'app_not_attached', 'pill_not_read_back');
    });
  };
  // Types `value` (after the App's pill when there is one) and clicks Send.
  const typeAndSend = (id, composer, value, app) => {
    const spaced = app && !/\s$/.test(composerText(composer)) ? ` ${value}` : value;
    if (!typeInto(composer, spaced)) {
      if (app) removeAttempt(id, app); else removeOurs(id);
      return report(id, 'not_submitted', 'insert_failed');
    }
    // The send control enables itself on the input event; give the page a moment. It is
    // looked up again on every try, and clicked only while it is Send (not Stop, not
    // disabled): a flipping submit button that shows Stop is never clicked. A message that
    // must carry an App is sent only while the composer holds exactly its pill and our text.
    const startedAt = Date.now();
    const trySend = () => {
      const now = observe();
      if (app && !(pillHolds(now.composer, app) && squash(plainText(now.composer)) === squash(value))) {
        removeAttempt(id, app);
        return report(id, 'not_submitted', 'app_not_attached', 'pill_not_read_back');
      }
      const send = now.unresolved === null ? sendControl(now) : null;
      if (send) {
        send.click();
        const clickedAt = Date.now();
        const settle = () => {
          const composer = observe().composer;
          if (!composer || !hasMarker(composerText(composer), id)) return report(id, 'submitted');
          if (Date.now() - clickedAt >= PLUMBING_WAIT_MS) return report(id, 'unconfirmed');
          setTimeout(settle, 100);
        };
        return settle();
      }
      if (Date.now() - startedAt >= PLUMBING_WAIT_MS) {
        if (app) removeAttempt(id, app); else removeOurs(id);
        // A fact that stopped resolving after typing (a second Send appeared) says so.
        return report(id, 'not_submitted', now.unresolved === null ? 'send_button_missing' : 'fact_unresolved');
      }
      setTimeout(trySend, 50);
    };
    trySend();
  };

  // ---- Attaching the App (docs/PROTOCOL.md "The Herdr App"): ChatGPT opens its App picker
  // only for trusted key presses, so `@<keyword>` is typed by the worker (`trusted_type`,
  // chrome.debugger's Input domain, when the user allowed it on the options page); without
  // that permission (and only then), by the editor (which the picker may ignore). Then the
  // App's option is chosen by a pointer press on it (`pointerPress`; never a key: an Enter that came
  // after the picker closed would send a stray `@<keyword>`) and its pill is read back in the
  // composer: exactly one pill, this App's, and no `@<keyword>` text left. Every wait is
  // bounded by the profile's `wait_ms`. Resolves with null (attached) or the detail of why
  // not: no_permission | picker_not_opened | option_missing | pill_not_read_back.
  // The worker request is bounded (a late answer is awaited once more, so late keys land
  // before the cleanup), so the whole attach (the request, the picker's and the pill's
  // waits) and the send stay within the worker's TYPING_DEADLINE_MS (15 s).
  const TRUSTED_TYPE_WAIT_MS = 3000;
  const askWorker = (message) => new Promise((resolve) => {
    let answered;
    const late = new Promise((r) => { answered = r; });
    const timer = setTimeout(() => resolve({ ok: false, error: 'timeout', late }), TRUSTED_TYPE_WAIT_MS);
    const done = (answer) => {
      clearTimeout(timer);
      answered();
      resolve(answer && typeof answer === 'object' ? answer : { ok: false, error: 'no_answer' });
    };
    try {
      const sent = chrome.runtime.sendMessage?.(message);
      if (sent && typeof sent.then === 'function') sent.then(done, (error) => done({ ok: false, error: String(error?.message ?? error) }));
      else done({ ok: false, error: 'no_worker' });
    } catch (error) {
      done({ ok: false, error: String(error?.message ?? error) });
    }
  });
  const sleepMs = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  // A menu item or option pressed as a mouse does it: pointerdown, mousedown, pointerup,
  // mouseup, click at its centre. ChatGPT's Radix menus act on pointerdown and a bare
  // click() does nothing there (field notes 2026-10-10). Each event goes only while the
  // element is still in the page: one that chose may close the menu, and what lies under a
  // pointer then is not pressed.
  const pointerPress = (el) => {
    const box = el.getBoundingClientRect();
    const at = { bubbles: true, cancelable: true, composed: true, button: 0, clientX: box.x + box.width / 2, clientY: box.y + box.height / 2 };
    const pointer = { ...at, pointerId: 1, pointerType: 'mouse', isPrimary: true };
    const steps = [
      () => new PointerEvent('pointerdown', { ...pointer, buttons: 1 }),
      () => new MouseEvent('mousedown', { ...at, buttons: 1, detail: 1 }),
      () => new PointerEvent('pointerup', pointer),
      () => new MouseEvent('mouseup', { ...at, detail: 1 }),
      () => new MouseEvent('click', { ...at, detail: 1 }),
    ];
    for (const step of steps) if (el.isConnected) el.dispatchEvent(step());
  };
  const caretToEnd = (composer) => {
    composer.focus();
    if (composer.tagName === 'TEXTAREA' || composer.tagName === 'INPUT') {
      composer.setSelectionRange(composer.value.length, composer.value.length);
      return;
    }
    const selection = getSelection();
    selection.selectAllChildren(composer);
    selection.collapseToEnd();
  };
  const visible = (el) => el.isConnected && (el.checkVisibility?.() ?? true);
  // The open pickers: listboxes the profile's picker probes find (root probes in the
  // composer's form) that are visible.
  const pickersNow = (apps) => {
    const seen = observe();
    const found = [];
    for (const probe of apps.picker) {
      const scope = probe.scope === 'root' ? seen.root : document;
      for (const el of scope ? queryAll(scope, probe.css) : []) if (visible(el) && !found.includes(el)) found.push(el);
    }
    return found;
  };
  const optionText = (el) => (el.textContent || '').trim().replace(/^@/, '').split('\n')[0].trim().toLowerCase();
  const optionFor = (apps, picker, app) => queryAll(picker, apps.option).find((el) => visible(el) &&
    ((el.getAttribute(apps.option_keyword_attr) ?? '').toLowerCase() === String(app.keyword).toLowerCase() ||
      (app.name && optionText(el) === String(app.name).toLowerCase())));
  // Exactly one pill in the composer, and it is this App's. (Its text is checked by the
  // caller: no `@<keyword>` left at read-back, exactly our message once typed — a message
  // may itself contain `@<keyword>`.)
  const pillHolds = (composer, app) => {
    const pills = composer ? pillElements(composer).map(readPill) : [];
    return pills.length === 1 && sameApp(pills[0], app);
  };
  const attachApp = async (app) => {
    const apps = appMentions();
    const keyword = typeof app?.keyword === 'string' ? app.keyword : '';
    if (!apps || !keyword || keyword.length > APP_KEYWORD_MAX || /[\s\u0000-\u001f\u007f]/.test(keyword)) return 'picker_not_opened';
    const composer = observe().composer;
    if (!composer) return 'picker_not_opened';
    const before = new Set(pickersNow(apps));
    const mention = `@${keyword}`;
    caretToEnd(composer);
    const typedBy = await askWorker({ type: 'trusted_type', text: mention });
    const trusted = typedBy.ok === true;
    if (!trusted && typedBy.error !== 'no_permission') {
      // The worker failed (timeout, debugger_failed, …) perhaps after typing part of the
      // mention, or is still typing: no second mention on top of it. A late answer is awaited
      // (bounded) so its keys land before the caller's cleanup removes them.
      if (typedBy.late) await Promise.race([typedBy.late, sleepMs(TRUSTED_TYPE_WAIT_MS)]);
      return 'picker_not_opened';
    }
    if (!trusted) {
      // Trusted typing is not allowed: the editor's insertion, checked; a picker that opens
      // only for trusted keys stays closed and that is the answer.
      const now = observe().composer;
      if (!now) return 'picker_not_opened';
      caretToEnd(now);
      document.execCommand('insertText', false, mention);
    }
    const failed = trusted ? 'picker_not_opened' : 'no_permission';
    const deadline = Date.now() + apps.wait_ms;
    let picker = null;
    let option = null;
    while (Date.now() < deadline) {
      picker = pickersNow(apps).find((el) => !before.has(el)) ?? null;
      option = picker ? optionFor(apps, picker, app) : null;
      if (option) break;
      await sleepMs(50);
    }
    if (!picker) return failed;
    if (!option || !visible(option)) return 'option_missing';
    pointerPress(option);
    const leftover = squash(mention).toLowerCase();
    const chosenBy = Date.now() + apps.wait_ms;
    while (Date.now() < chosenBy) {
      const now = observe().composer;
      if (pillHolds(now, app) && !squash(plainText(now)).toLowerCase().includes(leftover)) return null;
      await sleepMs(50);
    }
    return 'pill_not_read_back';
  };
  // Removes what an App attempt typed (the pill, the half-typed `@keyword`, our text after
  // the pill) — ChatGPT keeps a Project's draft on its server, so nothing may stay — and
  // only when the composer holds nothing else; closes a picker left open.
  const removeAttempt = (id, app) => {
    const composer = observe().composer;
    if (!composer) return false;
    const marked = hasMarker(composerText(composer), id);
    if (!marked && !attemptIsOurs(composer, app)) return false;
    if (composerText(composer) !== '' || pillElements(composer).length) {
      selectContents(composer);
      document.execCommand('delete');
    }
    composer.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', code: 'Escape', bubbles: true, cancelable: true }));
    scheduleFacts();
    return true;
  };
  const clearComposer = ({ id }) => {
    if (delivering?.id === id) return;
    removeOurs(id);
  };
  const insert = (value) => {
    if (detected) detected.composerHit = null; // a fresh look: typing needs exactly one composer
    const seen = observe();
    if (seen.unresolved !== null) {
      showNotice(seen.unresolved === 'composer' && seen.why === 'missing' ? text('noticeNoComposer') : factUnresolvedText(seen.unresolved, seen.why), 'bad');
      return;
    }
    typeInto(seen.composer, value);
  };
  const showNotice = (value, tone) => {
    status.textContent = value;
    status.dataset.key = 'notice';
    status.dataset.tone = tone;
  };
  // The worker could not read its stored state at start (worker.js strict start): said in
  // the status line until the worker reports it could (`error: null`).
  const startProblem = (error) => {
    if (typeof error === 'string' && error) {
      showNotice(text('startProblem', [error]), 'bad');
      status.dataset.key = 'startProblem';
      host.dataset.startProblem = 'yes';
    } else if (status.dataset.key === 'startProblem') {
      status.textContent = '';
      delete status.dataset.key;
      delete host.dataset.startProblem;
    }
  };
  const setProfile = (next) => {
    // The flat profile (ext-core sites::flat, schema 1): its chains, labels and generations.
    profile = next && next.schema === 1 && next.facts && typeof next.facts === 'object' && Array.isArray(next.generations) &&
      Array.isArray(next.labels) && Array.isArray(next.never) && Array.isArray(next.disabled) ? next : null;
    quiet = null;
    turnCache = { profile: null, list: null, probe: null, listProbe: null };
    userTurns = { shape: null, list: [], probe: null };
    watch();
    sendFacts(true);
    // Always answered with diagnostics, also on a page that matches no generation.
    sendDiagnostics(true);
  };

  // ---- Recovery (docs/PROTOCOL.md "Recovery"): the facts the worker's recovery planner
  // reads (the last assistant message, a user turn waiting, a send-timeout card, a
  // rate-limit notice), the snapshot probe it asks for and the two page actions it may
  // order. Whether and when is decided there; this only reads and carries out. The
  // session's access token lives in this closure only: never stored, never posted.
  let lastRecovery = '';
  let pageReasoning = false; // the last recovery_facts said "reasoning": the long stall allowance is in use
  let accessToken = null;
  // The signed-in account's id from the session JSON (`user.id`, else `account.id`; `account`
  // is declared at the top, page_facts carries it): the worker paces backend reads per account.
  const accountOf = (session) => [session?.user?.id, session?.account?.id]
    .find((id) => typeof id === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(id)) ?? null;
  // `Retry-After` in ms: delta-seconds or an HTTP date; null when absent or unreadable.
  // `Retry-After`: delay-seconds (a fraction too, rounded up), or an HTTP date, which always
  // names its month (V8's Date.parse reads "600.5" as the year 600: a cooldown of 0).
  // Anything else is no header: the core's back-off step applies.
  const retryAfterMs = (value) => {
    if (typeof value !== 'string' || value.trim() === '') return null;
    if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value.trim()) * 1000);
    if (!/[A-Za-z]{3}/.test(value)) return null;
    const at = Date.parse(value);
    return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
  };
  let probing = false;
  const PROBE_TIMEOUT_MS = 10000; // plumbing around one request, like PLUMBING_WAIT_MS
  // FNV-1a of the body's tail with its length: changes when the text does.
  const signatureOf = (value) => {
    let hash = 0x811c9dc5;
    for (let i = Math.max(0, value.length - 512); i < value.length; i++) hash = Math.imul(hash ^ value.charCodeAt(i), 0x01000193) >>> 0;
    return `${value.length}:${hash.toString(36)}`;
  };
  // A card's text: a probe that matched its button reads the card around it.
  const showsLabel = (view, key, el) => {
    const card = el?.tagName === 'BUTTON' ? el.parentElement : el;
    const value = (card?.textContent || '').toLowerCase();
    return labelsOf(view, key).some((label) => value.includes(label));
  };
  // The snapshot comparison's lengths: normalised text on both sides (plain-text.js).
  const { plainLength, markdownPlain } = globalThis[Symbol.for('herdr-continuity.plain-text')];
  const REASONING_TURN_MAX_CHARS = 40; // a thinking placeholder, not a reply that mentions thinking
  // The assistant turn's whole text is a `reasoning` label ("Thinking", "Thinking…",
  // "Pro thinking 12s"), never a reply that merely contains the word.
  const isReasoningPlaceholder = (view, el) => {
    const content = (el.textContent || '').trim().toLowerCase();
    return content.length > 0 && content.length <= REASONING_TURN_MAX_CHARS
      && labelsOf(view, 'reasoning').some((label) => content.startsWith(label));
  };
  const recoveryFacts = (seen) => {
    const last = seen.last;
    const body = last ? (find(seen.view, 'assistant_body', seen.ctx)?.el ?? last.el) : null;
    const bodyText = body?.textContent ?? '';
    const users = seen.users.list;
    const lastUser = users[users.length - 1] ?? null;
    const generating = generatingIn(seen);
    // Error cards and notices are looked for only while nothing streams.
    const error = generating ? null : find(seen.view, 'thread_error', seen.ctx);
    const sendTimeout = Boolean(error && showsLabel(seen.view, 'send_timeout', error.el));
    const userWaiting = Boolean(lastUser && (!last || lastUser.compareDocumentPosition(last.el) & Node.DOCUMENT_POSITION_PRECEDING));
    // The delivery id of our own marker line in the waiting user turn (the last marker outside
    // any data fence): the worker may send that message of ours again when the server proves
    // it never got it (never a human's turn).
    const waitingMarker = userWaiting ? (ownMarker(lastUser.textContent || '') ?? null) : null;
    return {
      type: 'recovery_facts',
      page_load: pageLoad,
      assistant: Boolean(last),
      assistant_id: last ? messageId(seen.view, last.el) : null,
      assistant_len: plainLength(bodyText),
      assistant_streaming: Boolean(seen.streaming) || Boolean(generating && last && !seen.complete),
      signature: signatureOf(bodyText),
      user_waiting: userWaiting,
      waiting_marker: waitingMarker,
      send_timeout: sendTimeout,
      retry_offered: sendTimeout && present(seen.view, 'retry', seen.ctx),
      rate_limited: !generating && present(seen.view, 'rate_limit', seen.ctx),
      // SITES-2026 §1.4: while Stop is shown, a short assistant turn that names the model
      // thinking (the profile's `reasoning` labels) is progress, not a stall.
      // Only the reply being written counts (no user turn waits after it), and only when
      // its whole text is the placeholder: equal to, or starting with, a label.
      reasoning: Boolean(generating && last && !userWaiting && isReasoningPlaceholder(seen.view, last.el)),
    };
  };
  const sendRecoveryFacts = (seen) => {
    const current = recoveryFacts(seen);
    const json = JSON.stringify(current);
    if (json === lastRecovery) return;
    lastRecovery = json;
    pageReasoning = current.reasoning;
    port?.postMessage(current);
  };
  // One GET from the page's origin (cookies included), bounded in time; the body is read
  // here and never leaves this script.
  const getJson = async (path, headers) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), PROBE_TIMEOUT_MS);
    try {
      const response = await fetch(path, { headers, credentials: 'include', cache: 'no-store', signal: controller.signal });
      const status = response.status;
      if (status === 429) return { status, failure: 'http_429', retry_after_ms: retryAfterMs(response.headers.get('retry-after')) };
      if (!response.ok) return { status, failure: [401, 403].includes(status) ? `http_${status}` : status >= 500 ? 'http_5xx' : 'http_4xx' };
      try { return { status, body: await response.json() }; } catch { return { status, failure: controller.signal.aborted ? 'timeout' : 'odd_shape' }; }
    } catch {
      return { failure: controller.signal.aborted ? 'timeout' : 'network' };
    } finally {
      clearTimeout(timer);
    }
  };
  // The snapshot's current node, summarised (REFERENCE §3); anything else is odd.
  const summarize = (body) => {
    const message = typeof body?.current_node === 'string' ? body.mapping?.[body.current_node]?.message : null;
    const role = message?.author?.role;
    if (!message || typeof message.id !== 'string' || message.id === '' || typeof role !== 'string') return { failure: 'odd_shape' };
    const parts = Array.isArray(message.content?.parts) ? message.content.parts : [];
    return {
      node_id: message.id.slice(0, 256),
      role: role === 'user' || role === 'assistant' ? role : 'other',
      text_len: plainLength(markdownPlain(parts.filter((part) => typeof part === 'string').join('\n'))),
      finished: message.end_turn === true || message.status === 'finished_successfully',
      update_time: Number.isFinite(message.update_time) ? message.update_time : null,
    };
  };
  const snapshotProbe = async (conversationId) => {
    const answer = (fields) => port?.postMessage({ type: 'snapshot_result', page_load: pageLoad, ...fields });
    if (probing) return;
    if (typeof conversationId !== 'string' || !/^[0-9A-Za-z-]{1,64}$/.test(conversationId)) { answer({ failure: 'odd_shape' }); return; }
    probing = true;
    try {
      if (!accessToken) {
        const session = await getJson('/api/auth/session', {});
        if (session.failure) { answer({ failure: session.failure, retry_after_ms: session.retry_after_ms ?? null }); return; }
        accessToken = typeof session.body?.accessToken === 'string' && session.body.accessToken !== '' ? session.body.accessToken : null;
        // Rides on the next page_facts (a report of its own would be a fresh look at a page
        // the planner is judging: it goes with the next change the page shows).
        account = accountOf(session.body);
        if (!accessToken) { answer({ failure: 'no_token' }); return; }
      }
      const snapshot = await getJson(`/backend-api/conversation/${conversationId}`, { authorization: `Bearer ${accessToken}` });
      if (snapshot.status === 401) accessToken = null;
      answer(snapshot.failure ? { failure: snapshot.failure, retry_after_ms: snapshot.retry_after_ms ?? null } : summarize(snapshot.body));
    } finally {
      probing = false;
    }
  };
  // ChatGPT's own Retry, only beside a send-timeout card and only while it is enabled.
  const clickRetry = () => {
    const seen = observe();
    if (seen.unresolved !== null || generatingIn(seen)) return;
    const error = find(seen.view, 'thread_error', seen.ctx);
    if (!error || !showsLabel(seen.view, 'send_timeout', error.el)) return;
    const retry = find(seen.view, 'retry', seen.ctx)?.el;
    if (retry && !isDisabled(seen.view, retry)) retry.click();
    scheduleFacts();
  };
  // ---- Permission cards (docs/PROTOCOL.md "Permission cards", SPEC M5): what each card
  // in the last turns shows — its wording outside the buttons, each button's label and
  // state, a key — and the one click the worker may order. Read only while the profile's
  // `permission_card` fact holds. Whether a card is allowed is decided in the worker.
  const CARD_MAX = 4; // ext-core permission_card::MAX_CARDS
  const CARD_BUTTONS_MAX = 6; // MAX_CARD_BUTTONS (a card with more is sent with none)
  const CARD_WORDING_MAX = 512; // MAX_WORDING_CHARS
  const CARD_LABEL_MAX = 64; // MAX_BUTTON_LABEL_CHARS
  const CARD_BUTTON_KEYS = ['allow', 'deny', 'card_allow'];
  const CARD_SKIP = 'button, [role="button"], [role="menu"], [role="menuitem"], script, style';
  let lastCards = null; // the JSON last sent; null: nothing sent on this port
  const collapse = (value) => value.replace(/\s+/g, ' ').trim();
  // A card's text outside its buttons (and menus), in document order, bounded.
  const wordingOf = (card) => {
    const parts = [];
    let length = 0;
    const walker = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node && length < CARD_WORDING_MAX; node = walker.nextNode()) {
      if (closest(node.parentElement, CARD_SKIP)) continue;
      const part = collapse(node.nodeValue || '');
      if (part) { parts.push(part); length += part.length + 1; }
    }
    return parts.join(' ').slice(0, CARD_WORDING_MAX);
  };
  // Never past a message body, a message or a turn: the card's own box, not the reply.
  const messageBoundary = (view, node) => ['turn', 'user', 'assistant', 'assistant_body'].some((fact) =>
    view.facts[fact].some((probe) => matches(node, probe.css) || (() => { try { return node.querySelector(probe.css) !== null; } catch { return true; } })()));
  // The card of a labelled button: the nearest ancestor with wording of its own.
  const cardOf = (view, button) => {
    for (let node = button.parentElement, i = 0; node && i < 5; node = node.parentElement, i++) {
      if (messageBoundary(view, node)) return null;
      if (wordingOf(node) !== '') return node;
    }
    return null;
  };
  const cardButtonFacts = (view, el) => ({
    label: collapse(el.getAttribute('aria-label') || el.getAttribute('title') || el.textContent || '').slice(0, CARD_LABEL_MAX),
    enabled: !isDisabled(view, el) && el.getAttribute('aria-disabled') !== 'true',
    visible: !closest(el, '[hidden], [aria-hidden="true"]') && el.checkVisibility?.({ visibilityProperty: true }) !== false,
    opens_menu: (el.hasAttribute('aria-haspopup') && el.getAttribute('aria-haspopup') !== 'false') || el.hasAttribute('aria-expanded'),
  });
  // Every card in the last turns: { facts, buttons }. Its key is the id of the user message
  // it answers (stable across re-renders, reloads and a worker restart; this page load's id
  // when the message has none), its wording's signature and its place among the cards with
  // that wording there.
  const readCards = (seen) => {
    const view = seen.view;
    const scopes = seen.ctx.tail.length ? seen.ctx.tail : [document];
    const cards = [];
    for (const scope of scopes) {
      for (const button of queryAll(scope, 'button')) {
        if (!CARD_BUTTON_KEYS.some((key) => hasLabel(view, button, key))) continue;
        const card = cardOf(view, button);
        if (card && !cards.includes(card)) cards.push(card);
      }
    }
    const users = seen.users.list;
    const seenKeys = new Map();
    return cards.slice(0, CARD_MAX).map((card) => {
      const wording = wordingOf(card);
      const user = users.findLast((u) => u.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING);
      const stem = `${(user && messageId(view, user)) || pageLoad}`.slice(0, 128) + `#${signatureOf(wording)}`;
      const n = seenKeys.get(stem) ?? 0;
      seenKeys.set(stem, n + 1);
      const all = queryAll(card, 'button, [role="button"]');
      const buttons = all.length > CARD_BUTTONS_MAX ? [] : all;
      return { buttons, facts: { key: `${stem}.${n}`, wording, buttons: buttons.map((el) => cardButtonFacts(view, el)) } };
    });
  };
  // Sends the cards when they changed (none: only after some were sent); returns `shown`.
  const sendCards = (seen, shown) => {
    const cards = shown ? readCards(seen).map((card) => card.facts) : [];
    const json = JSON.stringify(cards);
    if (json !== lastCards && !(lastCards === null && cards.length === 0)) {
      lastCards = json;
      port?.postMessage({ type: 'permission_cards', page_load: pageLoad, url: location.href, cards });
      host.dataset.cardsSent = String(Number(host.dataset.cardsSent ?? 0) + 1);
    }
    return shown;
  };
  // `card_allow {key, index}`: click that card's button only if it is still there, enabled,
  // visible, not a menu and labelled Allow; else `card_gone` (nothing is clicked).
  const cardAllow = (message) => {
    const seen = observe();
    const card = seen.unresolved === null ? readCards(seen).find((c) => c.facts.key === message.key) : null;
    const el = card?.buttons[message.index];
    const facts = card?.facts.buttons[message.index];
    const usable = el && facts.enabled && facts.visible && !facts.opens_menu && hasLabel(seen.view, el, 'allow');
    if (usable) el.click();
    port?.postMessage({ type: 'card_result', key: String(message.key).slice(0, 256), outcome: usable ? 'clicked' : 'card_gone' });
    scheduleFacts();
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
    p.dataset.reasoning = String(pageReasoning);
    // The model shows a thinking placeholder: the stall allowance is the long one (ext-core
    // stale_view REASONING_STALL_MS), so say so rather than read as plainly "synced".
    if (pageReasoning) p.textContent += ` ${text('hudRecoveryReasoning')}`;
    return p;
  };

  // ---- Page health meters (SPEC H1, docs/PROTOCOL.md "Page health"). This only counts,
  // O(1) per event: the chat observer's callbacks (one increment in onRecords, no second
  // observer), the lateness of one 1 s timer (only while the page is visible: a hidden
  // tab's timers are throttled by the browser, which is no pressure of the page's), Long
  // Tasks where PerformanceObserver supports them, and the JS heap where Chromium exposes
  // performance.memory. Every HEALTH_SAMPLE_TICKS ticks it posts one health_sample. It
  // runs only while the worker's view has a health line (a watched ChatGPT conversation);
  // what the figures mean, and whether anything is done, is decided there.
  const HEALTH_TICK_MS = 1000;
  const HEALTH_SAMPLE_TICKS = 5;
  const meters = { callbacks: 0, driftMs: 0, longTaskMs: 0, longTasks: 0, ticks: 0, last: 0, timer: null, longTaskObserver: null, sent: 0, counted: 0 };
  const resetMeters = () => Object.assign(meters, { callbacks: 0, driftMs: 0, longTaskMs: 0, longTasks: 0, ticks: 0 });
  const healthTick = () => {
    const now = performance.now();
    const late = now - meters.last - HEALTH_TICK_MS;
    meters.last = now;
    if (!document.hidden && late > meters.driftMs) meters.driftMs = late;
    meters.ticks += 1;
    if (meters.ticks < HEALTH_SAMPLE_TICKS) return;
    const memory = performance.memory;
    port?.postMessage({
      type: 'health_sample',
      page_load: pageLoad,
      callbacks: meters.callbacks,
      drift_ms: Math.round(meters.driftMs),
      long_task_ms: Math.round(meters.longTaskMs),
      long_tasks: meters.longTasks,
      ...(memory && { heap_used: memory.usedJSHeapSize, heap_limit: memory.jsHeapSizeLimit }),
    });
    // For the bench: samples sent and callbacks counted (data-* is outside the observer's filter).
    meters.sent += 1;
    meters.counted += meters.callbacks;
    host.dataset.healthSamples = String(meters.sent);
    host.dataset.healthCallbacks = String(meters.counted);
    resetMeters();
  };
  const healthWatch = (on) => {
    if (on === (meters.timer !== null)) return;
    if (!on) {
      clearInterval(meters.timer);
      meters.timer = null;
      meters.longTaskObserver?.disconnect();
      meters.longTaskObserver = null;
      return;
    }
    resetMeters();
    meters.last = performance.now();
    meters.timer = setInterval(healthTick, HEALTH_TICK_MS);
    if (globalThis.PerformanceObserver?.supportedEntryTypes?.includes('longtask')) {
      meters.longTaskObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          meters.longTaskMs += entry.duration;
          meters.longTasks += 1;
        }
      });
      meters.longTaskObserver.observe({ type: 'longtask' });
    }
  };
  // The health part of the view (ext-core continuity::HealthLine): test hooks, the meters'
  // switch, and the HUD's health line (level, last decision, reason).
  const healthView = (h) => {
    healthWatch(Boolean(h));
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

  const onMessage = (message) => {
    if (message?.type === 'profile') setProfile(message.profile);
    if (message?.type === 'hud') render(message.view);
    if (message?.type === 'deliver') deliver(message);
    if (message?.type === 'clear_composer') clearComposer(message);
    if (message?.type === 'delivery_seen') reports.delete(message.id);
    if (message?.type === 'insert') insert(message.text);
    if (message?.type === 'notice') showNotice(text(message.key, message.args), message.tone);
    if (message?.type === 'queue_accepted') queueUi?.accepted(message.text);
    if (message?.type === 'snapshot_probe') snapshotProbe(message.conversation_id);
    if (message?.type === 'recovery_reload') location.reload();
    if (message?.type === 'recovery_retry') clickRetry();
    if (message?.type === 'card_allow') cardAllow(message);
    if (message?.type === 'start_problem') startProblem(message.error);
    if (message?.type === 'round_trip_result') {
      status.textContent = text(message.status.key, message.status.substitutions);
      status.dataset.key = message.status.key;
      if (message.ok) {
        // Worker-measured (worker → host → runtime → worker) and page-measured totals.
        host.dataset.roundtripMs = String(message.ms);
        host.dataset.pageRoundtripMs = String(performance.now() - roundTripStartedAt);
      }
    }
  };

  // The Queue button (queue-button.js, loaded before this script): our own element beside
  // the composer; it reads the composer this adapter found and posts through its port.
  const queueUi = globalThis[Symbol.for('herdr-continuity.queue-ui')]?.({
    text,
    onTrusted,
    post: (message) => port?.postMessage(message),
    composer: soleComposer,
    composerText,
    clearComposer: (el) => {
      selectContents(el);
      document.execCommand('delete');
      scheduleFacts();
    },
  }) ?? null;
  // The `queue-composer` keyboard command (chrome.commands), sent by our worker only.
  chrome.runtime.onMessage?.addListener((message, sender) => {
    if (sender.id === chrome.runtime.id && message?.type === 'queue_request') queueUi?.request();
  });

  // ---- Rate limits (docs/PROTOCOL.md "rate_limited", SPEC H7): a 429 of the site's
  // backend, whoever fetched it (the page's own app included), seen in Resource Timing
  // (`responseStatus`), tells the worker to cool the account down. Same-origin `/backend-api/`
  // and `/api/` entries only; one report per 10 s (a burst of failed requests is one event).
  const RATE_REPORT_GAP_MS = 10000; // ext-core rate_limit::COUNT_WINDOW_MS
  let lastRateReport = -Infinity;
  const backendUrl = (name) => {
    try {
      const url = new URL(name, location.href);
      return url.origin === location.origin && (url.pathname.startsWith('/backend-api/') || url.pathname.startsWith('/api/'));
    } catch { return false; }
  };
  if (globalThis.PerformanceObserver?.supportedEntryTypes?.includes('resource')) {
    new PerformanceObserver((list) => {
      const hit = list.getEntries().some((entry) => entry.responseStatus === 429 && backendUrl(entry.name));
      const now = performance.now();
      if (!hit || now - lastRateReport < RATE_REPORT_GAP_MS) return;
      lastRateReport = now;
      port?.postMessage({ type: 'rate_limited', page_load: pageLoad, source: 'resource_timing', retry_after_ms: null });
    }).observe({ type: 'resource', buffered: false });
  }

  // The worker may restart (MV3); reconnect the page port when it goes away. The
  // extension being reloaded or removed ends this script's context, which throws here.
  const connect = () => {
    try {
      port = chrome.runtime.connect({ name: 'page' });
    } catch {
      port = null;
      // chrome.i18n is gone with the extension context, hence the fixed English text.
      host.dataset.companion = 'extensionReloaded';
      status.textContent = 'Herdr Continuity was reloaded or updated: reload this page to reconnect.';
      return;
    }
    port.onMessage.addListener(onMessage);
    port.onDisconnect.addListener(() => {
      port = null;
      setTimeout(connect, 1000);
    });
    lastRecovery = '';
    lastCards = null;
    threadShape = '';
    sendFacts(true);
    // Reports the previous worker never acknowledged are told again (the worker ignores
    // ids it no longer waits for).
    for (const message of reports.values()) port.postMessage(message);
  };
  connect();
})();

// Content script: the HUD's lines and buttons, rendered from the view the worker sends
// (ext-core continuity::hud_lines): which lines show, their keys, substitutions, tones and
// hooks, the buttons' labels and locks all come from the view; this file decides none of
// them (ext-core tests/it/extension_shape.rs holds it to that). It builds the JSON bridge's
// approval card from the view's calls and carries out presses.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const TO_WORKER = globalThis.herdrContracts.messages.page_to_worker; // extension/contracts.js
  const { text, onTrusted, host, continuity, hooks, para, fmtTime, refusedPress, setChildren, keptButton } = hc;

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
    if (!c) { continuity.replaceChildren(); keptLines = new Map(); return hc.goalUi(null); }
    if (c.bridge) {
      hooks.dataset.bridgePending = String(c.bridge.pending.length);
      hooks.dataset.bridgeRoundLimit = c.bridge.round_limit ? 'yes' : 'no';
    }
    // The lines come as the core decided them (ext-core continuity::HudLine). A line that
    // did not change keeps its nodes, so the approval card's buttons stay in place under a
    // press while views arrive (a moved button loses its click).
    const kept = new Map();
    const out = [];
    for (const line of c.lines) {
      const id = line.part === BRIDGE_CARD ? `${JSON.stringify(line)}${JSON.stringify(c.bridge)}` : JSON.stringify(line);
      const nodes = (!kept.has(id) && keptLines.get(id)) || lineNodes(line, c.bridge);
      kept.set(id, nodes);
      out.push(...nodes);
    }
    keptLines = kept;
    setChildren(continuity, out);
    // The buttons as the core named them: label and tooltip keys, locks; a press sends
    // the action's command (PRESS: the few that carry more than their name).
    if (!c.actions.some((action) => action.id === GOAL)) hc.goalUi(null);
    return c.actions.flatMap((action) => {
      const button = keptButton(action.id, text(action.label), () => (PRESS[action.id] ?? sendAction)(action.id, button, c));
      if (action.title) button.title = text(action.title);
      if (action.locked) {
        button.disabled = true;
        button.dataset.locked = action.locked.code;
        button.title = text(action.locked.key);
      }
      return action.id === GOAL ? hc.goalUi(button) : [button];
    });
  };
  const GOAL = 'goal';
  const BRIDGE_CARD = 'bridge_card';
  let keptLines = new Map(); // a line's JSON → its nodes, from the last view
  const sendAction = (id) => hc.postPress(() => ({ type: TO_WORKER.action, action: id }));
  const PRESS = {
    // Send tool results sends the ended turn again, marked as pressed (docs/PROTOCOL.md).
    bridge_send: () => hc.postPress(() => ({ type: TO_WORKER.turn_ended, ...hc.endedTurn(true), pressed: true })),
    // The judge button carries the page's last turn, read now, once per press.
    llm_judge: (id) => {
      const turn = hc.endedTurn();
      hc.postPress(() => ({ type: TO_WORKER.action, action: id, ...(turn && { user_text: turn.user_text, assistant_text: turn.assistant_text }) }));
    },
    // Copy Prompt writes the package's copy_prompt (the worker's bytes, unchanged).
    copy_prompt: (id, button, c) => hc.copyPrompt(button, c.handoff?.copy_prompt ?? ''),
    goal: (id, button) => hc.toggleGoal(button),
  };
  // How a substitution is written (ext-core continuity::Arg): as is, another key's text,
  // a time of day in the user's locale.
  const ARG = {
    text: (v) => v,
    key: (v) => text(v),
    time: (v) => fmtTime(v),
    clock: (v) => new Date(v).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }),
  };
  // One line: a paragraph with its hooks, the note appended, its items listed under it,
  // or the approval card under its head.
  const lineNodes = (line, bridge) => {
    const p = para(line.line, line.key, line.args.map((arg) => ARG[arg.t](arg.v)), line.tone);
    for (const { name, value } of line.hooks) p.dataset[name] = value;
    if (line.more) p.textContent += ` ${text(line.more.key, line.more.args)}`;
    if (line.part === BRIDGE_CARD) return [bridgeCard(p, bridge)];
    if (!line.items.length) return [p];
    const list = document.createElement('ol');
    list.dataset.line = `${line.line}-items`;
    list.replaceChildren(...line.items.map((item) => {
      const li = document.createElement('li');
      li.textContent = item;
      return li;
    }));
    return [p, list];
  };

  // ---- The JSON bridge's approval card (issue 23; ext-core continuity/bridge): the calls
  // of a z.ai / DeepSeek reply that wait for the user — tool, method, target, the start of
  // the arguments, a "changes things" tag — each with Run and Skip, and the round-limit
  // line. Only a trusted press acts (a real click, or Enter / Space on the focused button):
  // an event a page script dispatches or `element.click()` has `isTrusted === false` and
  // is dropped here, so the page can never approve a call. Each press sends one
  // `bridge_decide`; the worker decides nothing without it.
  const bridgeCard = (head, bridge) => {
    const card = document.createElement('section');
    card.className = 'bridge-card';
    card.dataset.line = 'bridge-approval';
    card.dataset.batch = bridge.batch_id;
    card.setAttribute('aria-label', text(bridge.card_label));
    const list = document.createElement('ol');
    list.replaceChildren(...bridge.pending.map(({ call: p, deciding, tag: tagKey, more }) => {
      const li = document.createElement('li');
      li.dataset.call = String(p.call);
      li.dataset.tool = p.tool;
      li.dataset.mutating = p.mutating ? 'yes' : 'no';
      const what = document.createElement('p');
      what.className = 'bridge-what';
      what.textContent = p.method ? `${p.tool} · ${p.method}` : p.tool;
      const tag = document.createElement('span');
      tag.className = 'bridge-tag';
      tag.classList.toggle('mutating', p.mutating);
      tag.textContent = text(tagKey);
      what.append(' ', tag);
      li.append(what);
      if (p.target) li.append(para('bridge-target', bridge.target_key, [p.target]));
      // What the call would type / send, decoded, whole up to the runtime's 2 000
      // characters, in a box that scrolls (never cut silently), and how much is left out.
      if (p.detail != null) {
        const detail = document.createElement('pre');
        detail.className = 'bridge-detail';
        detail.dataset.line = 'bridge-detail';
        detail.tabIndex = 0;
        detail.textContent = p.detail;
        li.append(detail);
        if (more) li.append(para('bridge-more', more.key, more.args, 'bridge-more'));
      }
      const args = document.createElement('code');
      args.className = 'bridge-args';
      args.tabIndex = 0;
      args.textContent = p.args_preview;
      li.append(args);
      const buttons = document.createElement('div');
      for (const { decision, label, aria } of bridge.buttons) {
        const button = document.createElement('button');
        button.type = 'button';
        button.dataset.action = `bridge_${decision}:${p.call}`;
        button.textContent = text(label);
        button.setAttribute('aria-label', text(aria, [String(p.call), p.method ? `${p.tool} ${p.method}` : p.tool]));
        button.disabled = Boolean(deciding);
        onTrusted(button, 'click', (event) => {
          if (refusedPress(button, event)) return;
          hc.postPress(() => ({ type: TO_WORKER.bridge_decide, batch_id: bridge.batch_id, call: p.call, decision }));
        });
        buttons.append(button);
      }
      li.append(buttons);
      return li;
    }));
    card.append(head, list);
    return card;
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
  Object.assign(hc, { renderContinuity });
})();

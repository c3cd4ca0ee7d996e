// Content script: a thin adapter, never wasm (the page's CSP decides whether wasm may
// compile here, and chatgpt.com's CSP is not ours). It
//   (a) mounts the HUD in a shadow root on <herdr-continuity-hud>, a child of
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
    :host { all: initial; position: fixed; top: 64px; right: 12px; z-index: 2147483647;
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
    .hud button[disabled] { cursor: not-allowed; opacity: .6; }`;

  const text = (key, substitutions) => chrome.i18n.getMessage(key, substitutions) || key;
  const host = document.createElement('herdr-continuity-hud');
  const root = host.attachShadow({ mode: 'open' });
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
  root.append(toggle, panel, status);
  host.dataset.expanded = 'false';
  document.documentElement.append(host);

  const setExpanded = (expanded) => {
    panel.classList.toggle('collapsed', !expanded);
    toggle.setAttribute('aria-expanded', String(expanded));
    host.dataset.expanded = String(expanded);
    toggle.title = text(expanded ? 'hudHideDetails' : 'hudShowDetails');
  };
  toggle.addEventListener('click', () => setExpanded(toggle.getAttribute('aria-expanded') !== 'true'));
  root.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || toggle.getAttribute('aria-expanded') !== 'true') return;
    event.stopPropagation();
    setExpanded(false);
    toggle.focus();
  });

  let port = null;
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

  // The continuity part of the view (ext-core hud ContinuityView): lines, data-* hooks for
  // tests, and buttons whose locks the worker decided.
  const renderContinuity = (view) => {
    const c = view.continuity;
    const hooks = {
      binding: c?.binding?.workspace_id ?? '',
      activeTarget: c?.active_target ?? '',
      auto: c?.auto ?? 'off',
      scopeState: c?.scope_state ?? 'idle',
      wakeCount: String(c?.wake_count ?? 0),
      progressCount: String(c?.progress_count ?? 0),
      withheld: c?.withheld?.code ?? '',
      tasks: c?.tasks ? `${c.tasks.running}/${c.tasks.unacked}` : '',
      sessionRef: c?.session_ref ?? '',
    };
    Object.assign(host.dataset, hooks);
    if (!c) { continuity.replaceChildren(); return []; }
    const out = [];
    if (c.binding) out.push(para('binding', 'hudBound', [c.binding.label, c.binding.workspace_id]));
    else if (c.pending_binding) out.push(para('binding', 'hudPendingBinding', [c.pending_binding.label, c.pending_binding.workspace_id]));
    else out.push(para('binding', 'hudNotBound', []));
    if (c.page_kind === 'project_chat' || c.page_kind === 'project_home') {
      out.push(c.active_target ? para('target', 'hudActiveTarget', [`/c/${c.active_target}`]) : para('target', 'hudNoActiveTarget', []));
    }
    if (c.session_ref) out.push(para('session', 'hudSessionRef', [c.session_ref]));
    out.push(para('auto', c.auto === 'on' ? 'hudAutoOn' : 'hudAutoOff', []));
    if (c.auto_note) { const p = para('auto-note', 'hudAutoNote', [c.auto_note], 'withheld'); p.textContent = c.auto_note; out.push(p); }
    if (c.binding) {
      out.push(c.scope_state === 'working'
        ? para('scope', 'hudScopeWorking', [String(c.working_panes)])
        : para('scope', c.scope_state === 'settled' ? 'hudScopeSettled' : 'hudScopeIdle', []));
      if (c.inbox_missing) out.push(para('tasks', 'hudInboxMissing', []));
      else if (c.tasks) out.push(para('tasks', 'hudTasks', [String(c.tasks.running), String(c.tasks.unacked), String(c.tasks.acked)]));
      out.push(c.last_wake
        ? para('last-wake', 'hudLastWake', [c.last_wake.kind, fmtTime(c.last_wake.at), String(c.wake_count)])
        : para('last-wake', 'hudNoWakeYet', []));
      if (c.withheld) { const p = para('withheld', 'hudWithheld', [], 'withheld'); p.textContent = c.withheld.text; p.dataset.code = c.withheld.code; out.push(p); }
      else out.push(para('withheld', 'hudNothingWithheld', []));
    }
    continuity.replaceChildren(...out);
    return c.actions.map((action) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.dataset.action = action.id;
      const label = action.id === 'toggle_auto' ? (c.auto === 'off' ? 'actionAutoTurnOn' : 'actionAutoTurnOff') : `action_${action.id}`;
      button.textContent = text(label);
      if (action.locked) {
        button.disabled = true;
        button.dataset.locked = action.locked.code;
        button.title = action.locked.text;
      }
      button.addEventListener('click', () => port?.postMessage({ type: 'action', action: action.id }));
      return button;
    });
  };

  const render = (view) => {
    // Buttons are rebuilt on every view; keep keyboard focus on the same action.
    const focused = root.activeElement?.dataset?.action ?? null;
    lines.replaceChildren(...[['companion', view.companion], ['herdr', view.herdr]].map(([name, line]) => {
      const p = document.createElement('p');
      p.className = `line tone-${line.tone}`;
      p.dataset.line = name;
      p.dataset.key = line.key;
      p.textContent = text(line.key, line.substitutions);
      return p;
    }));
    actions.replaceChildren(...view.actions.map((action) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.dataset.action = action.id;
      button.textContent = text(action.label);
      button.addEventListener('click', () => {
        roundTripStartedAt = performance.now();
        port?.postMessage({ type: 'action', action: action.id });
      });
      return button;
    }), ...renderContinuity(view));
    host.dataset.companion = view.companion.key;
    host.dataset.herdr = view.herdr.key;
    renderSummary(view);
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
      if (c.withheld) { parts.push(text('pillHeld')); worse('warning'); }
    }
    summary.textContent = parts.join(' · ');
    dot.className = `dot tone-${tone}`;
    host.dataset.summaryTone = tone;
    toggle.title = text(toggle.getAttribute('aria-expanded') === 'true' ? 'hudHideDetails' : 'hudShowDetails');
  };

  // ---- Page facts (facts only; the worker decides). Coalesced: a mutation only schedules
  // one recompute (≤ 1 per 100 ms); an unchanged result is not sent.
  // Cost invariants (REFERENCE.md §2: "a full DOM scan on every streamed token"; measured by
  // e2e/bench/content-cost.mjs): the observer callback is O(1) per batch; a recompute reads
  // no layout (textContent, never innerText) and, once the turn list is known, touches only
  // the composer's form and the last TAIL_TURNS turns, plus one document-wide count of user
  // turns when the turn list itself changed (a turn added or removed; streaming into the
  // last turn does not change it). Old turns are virtualized away by ChatGPT anyway.
  const composerEl = () => {
    const byId = document.getElementById('prompt-textarea');
    if (byId) return byId;
    const candidates = [...document.querySelectorAll('div.ProseMirror[role="textbox"][contenteditable="true"]')]
      .filter((el) => el.offsetParent !== null);
    return candidates.length === 1 ? candidates[0] : null;
  };
  const MARKER = /\[herdr-continuity ([^\]\s]+)\]/g;
  const USER_TURN = '[data-message-author-role="user"]';
  const STOP_BUTTON = 'button[data-testid="stop-button"]';
  const STREAMING_TURN = '[data-is-streaming="true"], [data-message-author-role][aria-busy="true"], article[aria-busy="true"]';
  const PERMISSION_CARD = '[data-testid="tool-action-buttons"], [data-testid="tool-approval-card"], .tool-approval-card';
  const TAIL_TURNS = 12;
  // The element whose children are the turns (found from the first turn, kept while it is
  // in the document), and the user turns counted for its current shape.
  let turnList = null;
  let userTurns = { shape: null, list: [] };
  const findTurnList = () => {
    if (turnList?.isConnected && turnList.firstElementChild) return turnList;
    const first = document.querySelector('[data-message-author-role]');
    turnList = first?.closest('[data-testid^="conversation-turn-"], article')?.parentElement ?? null;
    return turnList;
  };
  // Same answer as document.querySelectorAll(USER_TURN), recounted only when the turn
  // list's shape changed or a cached user turn left the document.
  const userTurnsNow = (list) => {
    const shape = list && [list, list.childElementCount, list.firstElementChild, list.lastElementChild];
    const same = shape && userTurns.shape && shape.every((part, i) => part === userTurns.shape[i]) &&
      userTurns.list.slice(-5).every((turn) => turn.isConnected);
    if (!same) userTurns = { shape, list: [...document.querySelectorAll(USER_TURN)] };
    return userTurns.list;
  };
  // Whether `selector` matches in the last TAIL_TURNS turns (or in the whole document when
  // the turn list is unknown).
  const inTail = (list, selector) => {
    if (!list) return Boolean(document.querySelector(selector));
    let turn = list.lastElementChild;
    for (let i = 0; turn && i < TAIL_TURNS; i++, turn = turn.previousElementSibling) {
      if (turn.matches(selector) || turn.querySelector(selector)) return true;
    }
    return false;
  };
  let delivering = null;
  let lastFacts = '';
  const PAGE_LOAD = Math.random().toString(36).slice(2, 12);
  const facts = () => {
    const composer = composerEl();
    const list = findTurnList();
    const users = userTurnsNow(list);
    const markers = [];
    for (const turn of users.slice(-5)) {
      for (const m of (turn.textContent || '').matchAll(MARKER)) markers.push(m[1]);
    }
    // ChatGPT's Stop button lives in the composer's form; look there first. The safety facts
    // (Stop button, permission card) fall back to one document-wide query each: a missed
    // card or Stop button would let a wake be typed into a busy page, so they fail closed.
    const form = composer?.closest('form');
    const stop = form?.querySelector(STOP_BUTTON) || document.querySelector(STOP_BUTTON);
    return {
      type: 'page_facts',
      url: location.href,
      composer: Boolean(composer),
      // textContent, not innerText: same emptiness answer without forcing a layout.
      draft: Boolean(composer && composer.textContent.trim() !== ''),
      generating: Boolean(stop) || inTail(list, list ? STREAMING_TURN : `${STOP_BUTTON}, ${STREAMING_TURN}`),
      permission_card: Boolean(document.querySelector(PERMISSION_CARD)),
      user_turns: users.length,
      last_user_turn_id: users.length ? users[users.length - 1].getAttribute('data-message-id') : null,
      // The worker rejects a page_facts over its caps (ext-core limits.rs: MAX_MARKERS 16,
      // MAX_ID_CHARS 256), so a page full of marker-like text must not silence the facts:
      // send only the newest markers that fit.
      markers: markers.filter((m) => m.length <= 256).slice(-16),
      delivering: delivering?.id ?? null,
      // Interim until the profile-driven adapter: the classic layout is the only one known.
      generation: composer ? 'chatgpt.classic' : null,
      composer_marker: composer ? ([...(composer.textContent || '').matchAll(MARKER)].map((m) => m[1]).pop() ?? null) : null,
      page_load: PAGE_LOAD,
    };
  };
  // Debug counters for e2e/bench (content script cost): data-* on our host, which the
  // observer below does not watch (its attributeFilter), so writing them causes no recompute.
  let factsComputed = 0;
  let factsSent = 0;
  let factsMs = 0;
  const sendFacts = (force = false) => {
    const startedAt = performance.now();
    const current = facts();
    const json = JSON.stringify(current);
    factsMs += performance.now() - startedAt;
    host.dataset.factsComputed = String(++factsComputed);
    host.dataset.factsMs = factsMs.toFixed(3);
    if (!force && json === lastFacts) return;
    lastFacts = json;
    port?.postMessage(current);
    host.dataset.factsSent = String(++factsSent);
  };
  let factsScheduled = false;
  const scheduleFacts = () => {
    if (factsScheduled) return;
    factsScheduled = true;
    // setTimeout, not requestAnimationFrame: rAF is paused in background tabs, and a bound
    // chat usually is one.
    setTimeout(() => { factsScheduled = false; sendFacts(); }, 100);
  };
  // O(1) per batch, records unread: the HUD's shadow tree is invisible to this observer,
  // and our host's own data-* writes are outside attributeFilter, so no batch is ours alone
  // (and an extra recompute would be coalesced and, unchanged, not sent).
  new MutationObserver(scheduleFacts).observe(document.documentElement, { subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ['data-is-streaming', 'aria-busy', 'data-testid', 'disabled'] });
  document.addEventListener('input', scheduleFacts, true);
  addEventListener('popstate', scheduleFacts);

  // ---- Delivery: type like a user, submit, confirm by the marker in a new user turn.
  const results = new Map(); // id → result message, kept until the worker says delivery_seen
  const answer = (id, ok, reason) => {
    // Interim mapping onto the delivery_report contract (docs/PROTOCOL.md): the worker
    // confirms from the marker in page_facts.
    const outcome = ok ? 'submitted' : reason === 'not_confirmed' ? 'unconfirmed' : 'not_submitted';
    const message = { type: 'delivery_report', id, outcome, reason: ok ? null : reason };
    results.set(id, message);
    if (delivering?.id === id) delivering = null;
    port?.postMessage(message);
    scheduleFacts();
  };
  const typeInto = (composer, value) => {
    composer.focus();
    const selection = getSelection();
    selection.selectAllChildren(composer);
    selection.collapseToEnd();
    if (document.execCommand('insertText', false, value)) return true;
    const data = new DataTransfer();
    data.setData('text/plain', value);
    composer.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    return composer.innerText.includes(value.split('\n')[0]);
  };
  const deliver = ({ id, text: value }) => {
    if (results.has(id) || delivering?.id === id) return; // never type the same message twice
    const composer = composerEl();
    if (!composer) return answer(id, false, 'no_composer');
    // The worker decided on facts up to 100 ms old: if the human started typing since,
    // refuse rather than send their draft along with ours (fail closed; the worker retries
    // once the draft is gone).
    if (composer.textContent.trim() !== '') return answer(id, false, 'human_draft');
    const marker = `[herdr-continuity ${id}]`;
    delivering = { id };
    if (!typeInto(composer, value)) return answer(id, false, 'insert_failed');
    const click = () => {
      const send = document.querySelector('button[data-testid="send-button"], #composer-submit-button');
      if (!send || send.disabled) return false;
      send.click();
      return true;
    };
    // The send button enables itself on the input event; give the page a moment.
    let tries = 0;
    const trySend = () => {
      if (click()) return watch();
      if (++tries > 20) return answer(id, false, 'send_button_missing');
      setTimeout(trySend, 50);
    };
    const started = Date.now();
    const watch = () => {
      const confirmed = [...document.querySelectorAll('[data-message-author-role="user"]')]
        .slice(-5).some((turn) => (turn.textContent || '').includes(marker));
      if (confirmed) return answer(id, true, null);
      if (Date.now() - started > 10_000) return answer(id, false, 'not_confirmed');
      setTimeout(watch, 100);
    };
    trySend();
  };
  const insert = (value) => {
    const composer = composerEl();
    if (!composer) { showNotice(text('noticeNoComposer'), 'bad'); return; }
    typeInto(composer, value);
  };
  const showNotice = (value, tone) => {
    status.textContent = value;
    status.dataset.key = 'notice';
    status.dataset.tone = tone;
  };

  const onMessage = (message) => {
    if (message?.type === 'hud') render(message.view);
    if (message?.type === 'deliver') deliver(message);
    if (message?.type === 'delivery_seen') results.delete(message.id);
    if (message?.type === 'insert') insert(message.text);
    if (message?.type === 'notice') showNotice(message.text, message.tone);
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
    sendFacts(true);
    // Results the previous worker never acknowledged are told again (exactly-once on the
    // worker side: it ignores ids it no longer waits for).
    for (const message of results.values()) port.postMessage(message);
  };
  connect();
})();

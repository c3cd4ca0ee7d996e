// Content script (1 of 11, manifest order): a thin adapter, never wasm (the page's CSP
// decides whether wasm may compile here, and chatgpt.com's CSP is not ours). The content
// scripts together
//   (a) mount the HUD in a closed shadow root on <herdr-continuity-hud>, a child of
//       document.documentElement (outside React's tree), once per page even if injected
//       twice;
//   (b) connect a `page` port to the service worker and report page facts;
//   (c) render the view models the worker sends (text via chrome.i18n.getMessage with
//       the keys and substitutions the worker chose);
//   (d) send button presses back as actions.
// They contain no product decisions. Message shapes: docs/PROTOCOL.md,
// "Extension-internal ports".
//
// The files share one isolated world and one namespace object, `hc`
// (globalThis[Symbol.for('herdr-continuity.content')]): each file runs in its own closure,
// takes what earlier files put on `hc` and adds what later files use. content.js, the last,
// clears the global name, so only the files' closures hold the namespace.
//
// This file: the HUD's host, closed shadow root and styles, the pill and panel, Goal mode,
// the press-settle guard against click-jacking, the kept buttons and `render`.
(() => {
  const GUARD = Symbol.for('herdr-continuity.hud');
  const NAMESPACE = Symbol.for('herdr-continuity.content');
  if (globalThis[GUARD] || document.querySelector('herdr-continuity-hud')) {
    globalThis[NAMESPACE] = null; // the later files of this second injection do nothing
    return;
  }
  globalThis[GUARD] = true;
  const hc = (globalThis[NAMESPACE] = {});
  const { caps: CAPS, messages: { page_to_worker: TO_WORKER } } = globalThis.herdrContracts; // extension/contracts.js

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
    .actions { padding-bottom: 6px; margin-bottom: 4px; border-bottom: 1px solid #d0d7de; }
    .actions:empty { display: none; }
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
  actions.className = 'actions';
  const status = document.createElement('p');
  status.className = 'status';
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  // The buttons come first: the lines below them come and go as views arrive, and a button
  // that moved under the pointer as it was pressed was a press lost without a word (the
  // release lands beside it). A view that changes the lines no longer moves them.
  panel.append(actions, lines, continuity);
  // What the HUD shows (Auto, the binding, a card waiting, …) as data-* hooks for tests:
  // inside the closed root, never on the host, so the page cannot tell that a card is up
  // (and time a click-jack for it).
  const hooks = document.createElement('div');
  hooks.hidden = true;
  hooks.dataset.hudState = '';
  root.append(toggle, panel, status, hooks);
  hooks.dataset.expanded = 'false';
  document.documentElement.append(host);

  // What the browser last said of one of our elements' visibility (IntersectionObserver v2):
  // anything the page paints over any part of it (an overlay that lets clicks through,
  // `pointer-events: none`, which elementFromPoint skips; a top-layer popover), or an
  // opacity, transform or filter on it or above it, makes it not visible. Watched only while
  // a press may come (the HUD: while its panel, where every button but the pill is, is open;
  // the Queue button: while it is shown; its Clear question: while open), since the
  // occlusion test runs in the browser's rendering every 100 ms while watched. `seen` is
  // `null` until the first report, ~100 ms after `watch`. `since`: when it became visible
  // again after it was seen covered (a page that lifts its cover as the pointer comes, or at
  // the press, is read within 100 ms: a press counts only once it has been seen whole for
  // PRESS_SETTLE_MS), or -Infinity when the watch's first report found it whole. A report
  // about an element no longer watched (queued before `watch` changed) is dropped.
  // `report(seen)`: told of each change.
  const visibilityWatch = (report = () => {}) => {
    let seen = null; // { visible, since }
    let watched = null;
    const observer = new IntersectionObserver((entries) => {
      const entry = entries.findLast((one) => one.target === watched);
      if (!entry) return;
      const visible = entry.isIntersecting && entry.isVisible === true;
      const since = seen === null ? -Infinity : seen.visible ? seen.since : entry.time;
      seen = { visible, since: visible ? since : null };
      report(seen);
    }, { trackVisibility: true, delay: 100 });
    return {
      get seen() { return seen; },
      // `el`: what to watch now, or null.
      watch(el) {
        if (el === watched) return;
        seen = null;
        report(seen);
        if (watched) observer.unobserve(watched);
        watched = el;
        if (el) observer.observe(el);
      },
    };
  };
  const hudWatch = visibilityWatch();

  const setExpanded = (expanded) => {
    hudWatch.watch(expanded ? host : null);
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

  hc.port = null;
  hc.account = null; // the session's account id, once read (see accountOf)
  hc.roundTripStartedAt = 0;

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
  goalInput.maxLength = CAPS.goal_chars;
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
    hc.postPress(() => ({ type: TO_WORKER.action, action: 'goal_set', text: goal }));
  };
  onTrusted(goalSave, 'click', sendGoal);
  onTrusted(goalCancel, 'click', closeGoal);
  onTrusted(goalInput, 'keydown', (event) => {
    if (event.key === 'Enter' && !event.isComposing) { event.preventDefault(); sendGoal(); }
    if (event.key === 'Escape') closeGoal();
  });
  // The Goal button, when the view offers it (bound ChatGPT chats: ext-core decides), with
  // the form after it while open; `null` closes the form.
  const goalUi = (button) => {
    if (!button) { closeGoal(); return []; }
    goalInput.placeholder = text('hudGoalPlaceholder');
    goalInput.setAttribute('aria-label', text('hudGoalPlaceholder'));
    goalSave.textContent = text('hudGoalSave');
    goalCancel.textContent = text('hudGoalCancel');
    button.setAttribute('aria-expanded', String(goalOpen));
    return goalOpen ? [button, goalForm] : [button];
  };
  const toggleGoal = (button) => {
    if (goalOpen) return closeGoal();
    goalOpen = true;
    button.setAttribute('aria-expanded', 'true');
    button.after(goalForm);
    goalInput.focus();
  };

  // ---- Click-jacking (issue 23): our host sits in the page's DOM, so the page can restyle
  // it, paint over it or move it under the pointer just before a click. Every HUD press
  // counts only when the HUD is shown as we style it: visible, opaque, not transformed,
  // filtered or clipped, not painted over, on top where the pointer is. A Run / Skip press
  // also needs its button to have stood still, where it is now, for PRESS_SETTLE_MS (a
  // card that just appeared, was re-rendered elsewhere or moved with its host waits), and
  // to be a single click (a double-click's second press is dropped).
  const PRESS_SETTLE_MS = 600;
  // Keyed by the button itself, not its action: every batch's first Run is `bridge_run:1`,
  // and a newer batch's card drawn where the old one stood must wait again (review 42). A
  // card showing the same calls keeps its nodes (content-hud-lines.js), so its time.
  const placed = new Map(); // button → { at: its place, since: when it got there }
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
      const at = placeOf(button);
      seen.add(button);
      if (placed.get(button)?.at !== at) placed.set(button, { at, since: performance.now() });
    }
    for (const button of [...placed.keys()]) if (!seen.has(button)) placed.delete(button);
    watchPlaces();
  };
  // While a card is up its buttons' places are looked at often: a host the page moves
  // keeps its presses waiting until it has stood still for PRESS_SETTLE_MS. The timer runs
  // only then (a page with no card pays nothing per tick while a reply streams).
  let placesTimer = null;
  const watchPlaces = () => {
    if (placed.size && placesTimer === null) placesTimer = setInterval(notePlaces, 150);
    else if (!placed.size && placesTimer !== null) { clearInterval(placesTimer); placesTimer = null; }
  };
  // One of our hosts as we style it; anything the page changed there that can hide, shrink,
  // move or disguise it refuses the press.
  const hiddenByPage = (guarded, button) => {
    const style = getComputedStyle(guarded);
    if (style.display === 'none' || style.visibility !== 'visible' || Number(style.opacity) < 0.95) return true;
    if (style.position !== 'fixed' || style.clipPath !== 'none' || style.filter !== 'none' || style.mixBlendMode !== 'normal') return true;
    if ([style.transform, style.scale, style.rotate, style.translate].some((v) => v && v !== 'none')) return true;
    if (style.zoom && Number(style.zoom) !== 1) return true;
    return button.checkVisibility?.({ opacityProperty: true, visibilityProperty: true, contentVisibilityAuto: true }) === false;
  };
  // Any press on our UI (Auto, Check Herdr, Continue, the Queue button, …): refused when its
  // host is not shown as we style it, when the browser said it is painted over, or, for a
  // pointer press, when the host is not what is on top at the pointer.
  const seenWhole = (seen, event) => seen.visible && event.timeStamp - seen.since >= PRESS_SETTLE_MS;
  const coveredPress = (button, event, guarded = host, seen = hudWatch.seen) => hiddenByPage(guarded, button) ||
    (seen !== null && !seenWhole(seen, event)) ||
    (event.detail > 0 && document.elementFromPoint(event.clientX, event.clientY) !== guarded);
  const pressRefused = (button, event) => {
    if (event.detail > 1) return 'noticeBridgePressTooSoon';
    const now = performance.now();
    const at = placeOf(button);
    const record = placed.get(button);
    if (!record || record.at !== at) {
      placed.set(button, { at, since: now });
      watchPlaces();
      return 'noticeBridgePressTooSoon';
    }
    if (now - record.since < PRESS_SETTLE_MS) return 'noticeBridgePressTooSoon';
    // A card's press also needs the browser to have seen the HUD whole (the card stood
    // still for PRESS_SETTLE_MS, so it has reported).
    if (coveredPress(button, event) || hudWatch.seen === null) return 'noticeBridgePressHidden';
    return null;
  };

  // A refused press says why (a notice, and the status's key for tests); true when refused.
  const refuse = (why) => {
    if (why) { hc.showNotice(text(why), 'bad'); status.dataset.key = why; }
    return Boolean(why);
  };
  const refusedPress = (button, event) => refuse(pressRefused(button, event));
  // Any press but a card's: true when refused as covered (the HUD says why).
  const refusedCovered = (button, event) => refuse(coveredPress(button, event) ? 'noticeBridgePressHidden' : null);
  // The same guard for another element of ours (the Queue button, its Clear question) in
  // `guarded`, its host, with its own watch of `el`. It fails closed: a press before the
  // browser's first report on `el` is refused too (the watch does not depend on any event
  // the page could keep from us). `refusal(button, event)`: `notices.soon` while `el` has
  // not been seen whole for PRESS_SETTLE_MS (not reported yet, just shown or uncovered),
  // `notices.hidden` while it is hidden, covered or filtered, else null.
  // `el`'s `data-seen-since` (inside our closed root, so for tests only) says since when it
  // has been seen whole ("" while not).
  const pressGuard = (guarded, el, notices) => {
    const watch = visibilityWatch((seen) => { el.dataset.seenSince = seen?.visible ? String(seen.since) : ''; });
    return {
      watch: (on) => watch.watch(on ? el : null),
      refusal: (button, event) => {
        const seen = watch.seen;
        if (seen !== null && !seen.visible) return notices.hidden;
        if (seen === null || !seenWhole(seen, event)) return notices.soon;
        return coveredPress(button, event, guarded, seen) ? notices.hidden : null;
      },
    };
  };

  // Copy Prompt: the Handoff package's copy_prompt (the worker's bytes, unchanged) to the
  // clipboard.
  const copyPrompt = (button, prompt) => {
    // What was copied stays inside the closed root (never on the host): a test hook.
    button.dataset.copied = prompt;
    navigator.clipboard.writeText(prompt).then(
      () => { host.dataset.copied = 'yes'; hc.showNotice(text('hudPromptCopied'), 'info'); },
      () => { host.dataset.copied = 'no'; hc.showNotice(text('hudPromptNotCopied'), 'bad'); },
    );
  };

  // The HUD's action buttons are kept across views: one element per action id, its label,
  // lock and press updated in place. A click is a press and a release, and Chrome dispatches
  // none when the pressed element left the tree in between; rebuilt on every view (frequent
  // on a loaded machine), a button pressed as a view arrived did nothing and said nothing.
  const keptButtons = new Map(); // data-action → button
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
      onTrusted(button, 'click', (event) => {
        if (!refusedCovered(button, event)) presses.get(button)?.(event);
      });
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

  // `provisional`: the start view worker.js posted from storage while a restarted worker's
  // wasm compiles (docs/PROTOCOL.md "Start view"), rendered like any view; the host's
  // `data-start-view` says so until the core's live view replaces it (tests, the bench).
  const render = (view, provisional = false) => {
    // A view may change which button exists; keep keyboard focus on the same action, but
    // never move it onto another card's button: a repeated Enter would approve a call the
    // user has not read (review 42).
    const focusedButton = root.activeElement;
    const focused = focusedButton?.dataset?.action ?? null;
    const statusLines = [['companion', view.companion], ['herdr', view.herdr]];
    lines.replaceChildren(...statusLines.map(([name, line]) => {
      const p = document.createElement('p');
      p.className = `line tone-${line.tone}`;
      p.dataset.line = name;
      p.dataset.key = line.key;
      p.textContent = text(line.key, line.substitutions);
      return p;
    }));
    const buttons = [...view.actions.map((action) => keptButton(action.id, text(action.label), () => {
      hc.roundTripStartedAt = performance.now();
      hc.postPress(() => ({ type: TO_WORKER.action, action: action.id }));
    })), ...hc.renderContinuity(view)];
    setChildren(actions, buttons);
    for (const id of keptButtons.keys()) if (!buttons.some((button) => button.dataset.action === id)) keptButtons.delete(id);
    if (provisional) host.dataset.startView = '';
    else delete host.dataset.startView;
    host.dataset.companion = view.companion.key;
    host.dataset.herdr = view.herdr.key;
    renderSummary(view);
    hc.queueUi?.render(view.continuity?.queue ?? null);
    notePlaces();
    const again = focused ? root.querySelector(`button[data-action="${focused}"]`) : null;
    const onCard = (button) => [...root.querySelectorAll('.bridge-card')].some((card) => card.contains(button));
    if (again && (again === focusedButton || !onCard(again))) again.focus();
  };

  // The collapsed pill: the view's state as one short line and the worst tone, both the
  // core's (ext-core hud_pill): its parts' texts joined by " · " and the dot's tone.
  const renderSummary = (view) => {
    const pill = view.pill;
    // Every view the worker posts carries its pill; one without it leaves the pill as it was.
    if (!pill || !Array.isArray(pill.parts)) return;
    summary.textContent = pill.parts.map((part) => text(part.key, part.args)).join(' · ');
    dot.className = `dot tone-${pill.tone}`;
    hooks.dataset.summaryTone = pill.tone;
    toggle.title = text(toggle.getAttribute('aria-expanded') === 'true' ? 'hudHideDetails' : 'hudShowDetails');
  };
  Object.assign(hc, { text, onTrusted, host, continuity, status, hooks, para, fmtTime, factUnresolvedText, goalUi, toggleGoal,
    refusedPress, refuse, pressGuard, PRESS_SETTLE_MS, copyPrompt, setChildren, keptButton, render });
})();

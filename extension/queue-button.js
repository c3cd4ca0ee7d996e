// The Queue button (SPEC Q1, Q7, Q8): our own element in its own closed shadow root (the
// page cannot reach into it; `root` is our only reference), a child of
// document.documentElement (never inside ChatGPT's React tree), placed beside the
// composer from the composer's box. Loaded before content.js, which mounts it once with
// what it needs (the composer it found, the port). It decides nothing: the worker
// (ext-core `queue`, `continuity/queue`) says what is queued, what the HUD line and the
// clear question say, and when the composer may be emptied.
//
// - click / Enter / Space: queue the composer's text (`queue_add {text}`); with an empty
//   composer the worker retries an undelivered batch (Q8);
// - right-click / the context-menu key: ask (the worker's `clear` question key with its
//   count) and on yes clear this conversation's queue (`queue_clear {question}`, naming the
//   key of the question shown, Q7; an unreadable queue is kept aside and an empty one
//   starts; only the question that says so lets a failed keep-aside delete it);
// - the `queue-composer` command (chrome.commands) does what a click does.
(() => {
  const KEY = Symbol.for('herdr-continuity.queue-ui');
  if (globalThis[KEY]) return;
  // Message types shared with Rust (contracts.js, loaded first by the manifest).
  const TO_WORKER = globalThis.herdrContracts.messages.page_to_worker;

  const CSS = `
    :host { all: initial; position: fixed; contain: layout style; z-index: 2147483646; display: none;
      font: 12px/1.4 system-ui, sans-serif; color: #1d1d1f; }
    :host([data-placed]) { display: block; }
    button { font: inherit; cursor: pointer; border: 1px solid #d0d7de; border-radius: 999px;
      background: #fff; color: inherit; padding: 2px 10px; box-shadow: 0 1px 3px rgba(0,0,0,.12); }
    button:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
    .count { display: inline-block; min-width: 1.4em; margin-left: 4px; padding: 0 4px;
      border-radius: 999px; background: #0969da; color: #fff; text-align: center; }
    .count:empty { display: none; }
    .confirm { position: absolute; bottom: 100%; right: 0; margin-bottom: 6px; width: 260px;
      padding: 8px; background: #fff; border: 1px solid #d0d7de; border-radius: 8px;
      box-shadow: 0 2px 8px rgba(0,0,0,.15); }
    .confirm[hidden] { display: none; }
    .confirm p { margin: 0 0 6px; }
    .confirm button { margin-right: 6px; border-radius: 6px; box-shadow: none; }`;

  // A composer text longer than a page message may carry goes as its first CUT characters
  // and its whole length: the worker refuses it naming that length, and the message stays
  // under its cap (ext-core limits MAX_QUEUE_TEXT_CHARS, above the queue's own limit, so
  // every text the queue could take after trimming goes whole and the queue decides).
  // Characters, as the worker counts them.
  const CUT = globalThis.herdrContracts.caps.queue_text_chars;
  const fitted = (text) => {
    if (text.length <= CUT) return { text };
    const chars = Array.from(text);
    return chars.length <= CUT ? { text } : { text: chars.slice(0, CUT).join(''), whole_chars: chars.length };
  };

  globalThis[KEY] = (deps) => {
    // deps: { text(key, subs), onTrusted(el, type, fn), guard(host, el, notices) → press
    //         guard, refuse(key) → true when it said why a press was refused, settleMs (how
    //         long a press waits after the button appears or moves: the HUD's PRESS_SETTLE_MS),
    //         hud (the HUD's host, kept clear of), post(message), composer() → element | null,
    //         composerText(el) → string, clearComposer(el) }
    // Every control listens through content-hud.js's `onTrusted` (real input only: a page's
    // dispatchEvent or el.click() queues and clears nothing), and a press counts only when
    // the page has not faded, moved or painted over our host (content-hud.js `pressGuard`;
    // the HUD says why one was refused).
    const { onTrusted } = deps;
    const host = document.createElement('herdr-continuity-queue');
    const root = host.attachShadow({ mode: 'closed' });
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.action = 'queue';
    const label = document.createElement('span');
    label.textContent = deps.text('queueButton');
    const count = document.createElement('span');
    count.className = 'count';
    button.append(label, count);
    const confirm = document.createElement('div');
    confirm.className = 'confirm';
    confirm.hidden = true;
    confirm.setAttribute('role', 'alertdialog');
    const question = document.createElement('p');
    const yes = document.createElement('button');
    yes.type = 'button';
    yes.dataset.action = 'queue_clear_yes';
    yes.textContent = deps.text('queueClearYes');
    const no = document.createElement('button');
    no.type = 'button';
    no.dataset.action = 'queue_clear_no';
    no.textContent = deps.text('queueClearNo');
    confirm.append(question, yes, no);
    root.append(confirm, button);
    document.documentElement.append(host);

    let view = null;
    // The key of the clear question shown (the worker's `clear` when it was asked).
    let asked = null;
    const queueNow = () => {
      const el = deps.composer();
      deps.post({ type: TO_WORKER.queue_add, ...fitted(el ? deps.composerText(el) : '') });
    };
    // A press counts only on the button as we placed and show it (content-hud.js
    // `pressGuard`): the browser's look at the button, always (one small element), and at
    // the question while it is open, each press judged by its own element's; and the host
    // where `place` put it, for PRESS_SETTLE_MS (a page that moves our host under the
    // pointer, or a button that just moved, waits). The HUD says why a press was refused.
    const notices = { hidden: 'noticeQueuePressHidden', soon: 'noticeQueuePressTooSoon' };
    const buttonGuard = deps.guard(host, button, notices);
    const confirmGuard = deps.guard(host, confirm, notices);
    buttonGuard.watch(true);
    let placedAt = null; // { at: the host's right edge and top, since }
    const cornerOf = () => { const r = host.getBoundingClientRect(); return `${Math.round(r.right)},${Math.round(r.top)}`; };
    const moved = (event) => {
      if (placedAt === null || placedAt.at !== cornerOf()) return notices.hidden;
      return event.timeStamp - placedAt.since < deps.settleMs ? notices.soon : null;
    };
    // Refused as hidden when either says so (the likelier cause to name), else as too soon.
    const refused = (guard, el, event) => {
      const why = [moved(event), guard.refusal(el, event)];
      return deps.refuse(why.includes(notices.hidden) ? notices.hidden : why.find(Boolean) ?? null);
    };
    const closeConfirm = () => { confirm.hidden = true; confirmGuard.watch(false); button.focus(); };
    onTrusted(button, 'click', (event) => { if (!refused(buttonGuard, button, event)) queueNow(); });
    onTrusted(button, 'contextmenu', (event) => {
      event.preventDefault();
      asked = view?.clear ?? null;
      question.textContent = asked ? deps.text(asked, [String(view.count)]) : deps.text('queueClearQuestion');
      confirm.hidden = false;
      confirmGuard.watch(true);
      place();
      no.focus();
    });
    onTrusted(yes, 'click', (event) => {
      if (refused(confirmGuard, yes, event)) return;
      deps.post({ type: TO_WORKER.queue_clear, question: asked });
      closeConfirm();
    });
    onTrusted(no, 'click', closeConfirm);
    onTrusted(confirm, 'keydown', (event) => { if (event.key === 'Escape') closeConfirm(); });

    // Placement: just above the composer's right edge, re-measured only when the view
    // changes or the window resizes (no per-mutation work).
    let placedFor = null;
    const place = () => {
      const el = deps.composer();
      if (!el || !el.isConnected) { host.removeAttribute('data-placed'); placedFor = null; return; }
      const box = el.getBoundingClientRect();
      if (box.width === 0 && box.height === 0) { host.removeAttribute('data-placed'); return; }
      host.style.left = 'auto';
      host.style.right = `${Math.max(8, window.innerWidth - box.right)}px`;
      host.style.top = `${Math.max(8, box.top - 30)}px`;
      host.setAttribute('data-placed', '');
      placedFor = el;
      clearOfHud();
      const at = cornerOf();
      if (placedAt?.at === at) return;
      placedAt = { at, since: performance.now() };
      // Since when it stands where it is (inside our closed root, for tests only).
      button.dataset.placedSince = confirm.dataset.placedSince = String(placedAt.since);
    };
    // Never under our own HUD, nor the open question: the user could not see them whole,
    // and the browser counts the HUD as covering them (their presses would be refused).
    // Beside it instead, looked at again whenever the HUD changes size (opened, closed, a
    // longer view) or the question opens.
    const clearOfHud = () => {
      const hud = deps.hud?.getBoundingClientRect();
      if (!hud || hud.width === 0) return;
      const boxes = [host.getBoundingClientRect(), ...(confirm.hidden ? [] : [confirm.getBoundingClientRect()])];
      if (boxes.some((mine) => mine.left < hud.right && mine.right > hud.left && mine.top < hud.bottom && mine.bottom > hud.top)) {
        host.style.right = `${window.innerWidth - hud.left + 8}px`;
      }
    };
    window.addEventListener('resize', place, { passive: true });
    if (deps.hud) new ResizeObserver(() => { if (host.hasAttribute('data-placed')) place(); }).observe(deps.hud);

    return {
      // The worker's queue view (ContinuityView.queue), or null off a conversation.
      render(next) {
        view = next ?? null;
        host.dataset.queueState = view?.state ?? '';
        host.dataset.queueCount = String(view?.count ?? 0);
        count.textContent = view && view.count > 0 ? String(view.count) : '';
        button.title = view ? deps.text(`queueLine_${view.state}`, [String(view.count), String(view.merged_chars)]) : deps.text('queueButtonTitle');
        button.setAttribute('aria-label', `${deps.text('queueButton')}${view?.count ? ` (${view.count})` : ''}`);
        if (!view) { host.removeAttribute('data-placed'); return; }
        if (placedFor !== deps.composer() || !host.hasAttribute('data-placed')) place();
      },
      // The worker stored `text`: empty the composer only if it still holds exactly it.
      accepted(text) {
        const el = deps.composer();
        if (!el) return;
        const squash = (value) => value.replace(/\r\n?/g, '\n').trim();
        if (squash(deps.composerText(el)) === squash(text)) deps.clearComposer(el);
      },
      // The keyboard command.
      request: queueNow,
      place,
    };
  };
})();

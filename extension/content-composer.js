// Content script: composer actions — type like a user, click Send, attach the Herdr App
// pill, remove our own attempt, insert text, notices, and the site profile's arrival.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const { page_to_worker: TO_WORKER, runtime_to_worker: TO_RUNTIME } = globalThis.herdrContracts.messages; // extension/contracts.js
  const { text, host, status, factUnresolvedText, pageLoad, queryAll, hasMarker, composerText, squash, typed, observe,
    generatingIn, sendControl, soleComposer, APP_KEYWORD_MAX, appMentions, pillElements, readPill, sameApp,
    plainText, attemptIsOurs, sendFacts, scheduleFacts, watch, recentOutcomes, sendDiagnostics } = hc;

  // ---- Delivery (docs/PROTOCOL.md "One delivery path"): type like a user, click Send
  // (re-checked to be Send and not Stop right before the click), report what was done.
  // Whether it landed is the worker's call, from the markers in later page_facts. The
  // only waits here are plumbing around one DOM action, each ≤ 2 s.
  const PLUMBING_WAIT_MS = 2000;
  const reports = new Map(); // id → delivery_report, kept until the worker says delivery_seen
  const report = (id, outcome, reason = null, detail = null) => {
    const message = { type: TO_WORKER.delivery_report, id, outcome, reason, ...(detail && { detail }) };
    // A message withheld because its App could not be attached was never sent and nothing of
    // it is left in the composer: the worker's retry with the same id may type it.
    if (reason === 'app_not_attached') typed.delete(id);
    reports.set(id, message);
    recentOutcomes.push({ id, outcome, reason, ...(detail && { detail }) });
    if (recentOutcomes.length > 5) recentOutcomes.shift();
    if (hc.delivering?.id === id) hc.delivering = null;
    hc.port?.postMessage(message);
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
    if (reports.has(id)) { hc.port?.postMessage(reports.get(id)); return; }
    if (hc.delivering?.id === id || typed.has(id)) return;
    if (hc.delivering) return report(id, 'not_submitted', 'busy');
    // Decided for another page load or another conversation than the page shows now (the
    // user moved on while the worker wrote its state): nothing is typed; the worker
    // offers it again where it belongs.
    if ((load && load !== pageLoad) || (url && conversationPath(url) !== conversationPath(location.href))) {
      return report(id, 'not_submitted', 'other_conversation');
    }
    // A fresh look for the composer (the cached one is kept only while it was the one match;
    // a second, e.g. an inline edit box, may have appeared since): typing needs exactly one.
    if (hc.detected) hc.detected.composerHit = null;
    const seen = observe();
    // A needed fact missing or ambiguous (or no profile yet): nothing is typed (a page that
    // is generating says so first: the worker offers it again later either way).
    if (seen.view && generatingIn(seen)) return report(id, 'not_submitted', 'busy');
    if (seen.unresolved !== null) return report(id, 'not_submitted', 'fact_unresolved');
    // The worker decided on facts up to 100 ms old: if the human started typing since,
    // refuse rather than send their draft along with ours (the worker retries later).
    if (composerText(seen.composer).trim() !== '' || pillElements(seen.composer).length) return report(id, 'not_submitted', 'human_draft');
    hc.delivering = app ? { id, app } : { id };
    typed.set(id, value);
    if (!app) return typeAndSend(id, seen.composer, value, null);
    attachApp(app).then((detail) => {
      if (hc.delivering?.id !== id) return;
      if (detail) {
        removeAttempt(id, app);
        return report(id, 'not_submitted', 'app_not_attached', detail);
      }
      if (hc.detected) hc.detected.composerHit = null;
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
    const typedBy = await askWorker({ type: TO_RUNTIME.trusted_type, text: mention });
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
    if (hc.delivering?.id === id) return;
    removeOurs(id);
  };
  const insert = (value) => {
    if (hc.detected) hc.detected.composerHit = null; // a fresh look: typing needs exactly one composer
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
  // the status line until the worker reports it could (`error: null`). `failed`: the start
  // itself failed, for good in this worker life (`startFailed`: reload or reinstall).
  const startProblem = (error, failed) => {
    if (typeof error === 'string' && error) {
      const key = failed === true ? 'startFailed' : 'startProblem';
      showNotice(text(key, [error]), 'bad');
      status.dataset.key = key;
      host.dataset.startProblem = 'yes';
    } else if (status.dataset.key === 'startProblem' || status.dataset.key === 'startFailed') {
      status.textContent = '';
      delete status.dataset.key;
      delete host.dataset.startProblem;
    }
  };
  let profileWork = 0;
  const setProfile = (next) => {
    // The flat profile (ext-core sites::flat, schema 1): its chains, labels and generations.
    hc.profile = next && next.schema === 1 && next.facts && typeof next.facts === 'object' && Array.isArray(next.generations) &&
      Array.isArray(next.labels) && Array.isArray(next.never) && Array.isArray(next.disabled) ? next : null;
    hc.quiet = null;
    hc.turnCache = { profile: null, list: null, probe: null, listProbe: null };
    // The page's work for the profile (watch, facts, diagnostics) runs in a task of its own:
    // a (re)started worker posts the profile and the HUD view together, and the view is shown
    // first (docs/PROTOCOL.md "profile"). A newer profile meanwhile runs it once, for itself.
    clearTimeout(profileWork);
    profileWork = setTimeout(() => {
      watch();
      sendFacts(true);
      // Always answered with diagnostics, also on a page that matches no generation.
      sendDiagnostics(true);
    }, 0);
  };
  Object.assign(hc, { reports, selectContents, deliver, clearComposer, insert, showNotice, startProblem, setProfile });
})();

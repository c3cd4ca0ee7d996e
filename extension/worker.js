// Service worker loader (MV3, type: module). It only forwards Chrome events into the
// wasm shell (ext-shell); every decision is made in ext-core.
//
// Every listener is registered synchronously at top level (Chrome only delivers the
// events that woke the worker to listeners registered in the first turn), and each one
// awaits the wasm init promise before forwarding. Port messages are forwarded through
// the same promise, so their order is kept even while wasm is still compiling.
import './contracts.js';
import init, * as shell from './pkg/ext_shell.js';
import { recordActivity } from './activity-log.js';

// Start marks (User Timing; `npm run bench` reads them, e2e/bench/cold-start.mjs): this
// module evaluated, the wasm ready, the stored state read, the worker started, and the
// first page port's connect event, its start view posted and its handling. Once per worker
// life (a few entries).
performance.mark('herdr:script');
let firstPort = true;
// Names, keys and caps shared with Rust (generated from ext-core/src/contracts.rs).
const { ports: PORTS, messages: MESSAGES, settings: SETTINGS, start_keys: START_KEYS } = globalThis.herdrContracts;
const { progress_tick: TICK_KEY, progress_fallback: FALLBACK_KEY, allow_project_auto: ALLOW_PROJECT_AUTO_KEY } = SETTINGS.sync_keys;

// The Activity timeline: ext-shell hands each entry the core records to this global
// (set before the wasm starts) and activity-log.js stamps and stores it. A global rather
// than a wasm-bindgen JS import keeps the store a plain module the side panel imports too.
globalThis.herdrActivity = recordActivity;

// Strict start (issue 23): the start reads its stored state and settings here (a storage
// read in the wasm is a future of its own), at once, while the wasm compiles. A read that fails
// starts nothing — the wasm, the only writer of the state, starts only with what was read,
// so no persist can overwrite bindings, Auto, the delivery ledger, the journal outbox or
// transfers with an empty state. It is tried again with a growing delay (START_RETRY_MS,
// the last one repeated), and every page and side panel connected meanwhile is told why
// (`start_problem {error}`; `error: null` once the state is read). A start that fails
// itself (the wasm does not load, or `start_worker` refuses, e.g. without
// crypto.getRandomValues) is final for this worker life: `startFailed` keeps why, and every
// waiting port and every later one gets `start_problem {error, failed: true}` (fail closed,
// said why; the page shows `startFailed`, no retry text).
const START_RETRY_MS = [1000, 2000, 5000, 10000, 30000];
// chrome.storage.local and .sync answer content scripts by default, so a compromised chat
// renderer could turn on trusted typing, a binding or Auto there. Our content scripts never
// use them: both are kept to the extension's own pages and this worker, at every start (a
// browser without the setting says so in the worker's console).
for (const area of ['local', 'sync']) {
  const store = chrome.storage?.[area];
  const keep = typeof store?.setAccessLevel === 'function'
    ? Promise.resolve().then(() => store.setAccessLevel({ accessLevel: 'TRUSTED_CONTEXTS' }))
    : Promise.reject(new Error('this browser cannot restrict it (setAccessLevel is missing)'));
  keep.catch((error) => console.warn(`herdr-continuity: chrome.storage.${area} stays open to content scripts: ${error?.message ?? error}`));
}
const stored = (area, keys) => {
  const store = chrome.storage?.[area];
  if (typeof store?.get !== 'function') return Promise.reject(new Error(`chrome.storage.${area} is not available`));
  return store.get(keys).then((items) => {
    if (typeof items !== 'object' || items === null) throw new Error(`chrome.storage.${area} answered ${String(items)}`);
    return items;
  });
};
let startProblem = null; // why the last start read failed; null while none failed or once started
let started = false;
let startFailed = null; // why the start itself failed (final); null unless it did
const waitingPorts = new Set(); // ports connected before the start: told of a start problem
const tellStartProblem = (port) => {
  const message = startFailed === null ? { error: startProblem } : { error: startFailed, failed: true };
  try { port.postMessage({ type: MESSAGES.worker_to_page.start_problem, ...message }); } catch { waitingPorts.delete(port); }
};
const readStart = async (localKeys, syncKeys) => {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await Promise.all([stored('local', localKeys), stored('sync', syncKeys)]);
    } catch (error) {
      startProblem = error instanceof Error ? error.message : String(error ?? 'unknown error');
      const delay = START_RETRY_MS[Math.min(attempt, START_RETRY_MS.length - 1)];
      console.error(`herdr-continuity: the stored state could not be read (${startProblem}); nothing is saved until it is, next try in ${delay / 1000} s`);
      for (const port of waitingPorts) tellStartProblem(port);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
};
// chrome.storage.local for the wasm (ext-shell `js::storage_request`): a read (`text`
// undefined) or a write of `key`, answered through `js_answer` with `token` (a read with
// the items read, as they are: without `key` when nothing is stored) — a storage
// promise awaited in the wasm would be a future, kilobytes of it.
globalThis.herdrStorage = (token, key, text) => {
  Promise.resolve()
    .then(() => (text === undefined ? chrome.storage.local.get(key) : chrome.storage.local.set({ [key]: text }).then(() => undefined)))
    .then((value) => shell.js_answer(token, true, value), (error) => shell.js_answer(token, false, error));
};
// A handoff's new tab (the wasm asks after the snapshot naming it is written): answered
// through `js_answer` with `token` — the tab's id, or why Chrome opened none.
globalThis.herdrTabs = (token, url) => {
  Promise.resolve()
    .then(() => {
      if (typeof chrome.tabs?.create !== 'function') throw new Error('chrome.tabs is not available');
      return chrome.tabs.create({ url, active: true });
    })
    .then((tab) => shell.js_answer(token, true, tab?.id), (error) => shell.js_answer(token, false, error));
};
// Test seam (ARCHITECTURE.md "Test seams"): the e2e tests move the continuity machine's
// clock ahead instead of sleeping through its stall, pace and back-off timers. Only code in
// this worker can call it (Playwright's `worker.evaluate`); unused, the clock is Date.now().
globalThis.herdrTestClock = (ms) => { wake(); return ready.then(() => shell.advance_clock_for_test(ms)); };
// The start's read goes out with the wasm's compile, not after it: the keys are the core's
// (`herdrContracts.start_keys`, generated from ext-core `worker::START_LOCAL_KEYS` /
// `START_SYNC_KEYS`), and the start takes the items only once both are here.
const startRead = readStart(START_KEYS.local, START_KEYS.sync).then((items) => {
  performance.mark('herdr:state');
  return items;
});
// The wasm starts at the first event of this worker life that needs it (`wake`: `forward`,
// the options page's profile messages, the test clock), not before: a worker runs because
// an event woke it, and when that is a page's connect, the page is posted its start view
// first (below) — `start_worker` then holds the thread for ~10 ms, and a connect arriving
// meanwhile would wait behind it.
let wake;
const woken = new Promise((resolve) => { wake = resolve; });
const ready = init().then(async () => {
  performance.mark('herdr:wasm');
  const [local, sync] = await startRead;
  await woken;
  shell.start_worker(local, sync);
  performance.mark('herdr:started');
  started = true;
  if (startProblem !== null) {
    startProblem = null;
    for (const port of waitingPorts) tellStartProblem(port);
  }
  waitingPorts.clear();
});
ready.catch((error) => {
  console.error('herdr-continuity: the wasm shell failed to start:', error);
  startFailed = (error instanceof Error ? error.message : String(error ?? '')) || 'unknown error';
  for (const port of waitingPorts) tellStartProblem(port);
});

const forward = (fn) => {
  wake();
  return ready.then(fn).catch((error) => console.error('herdr-continuity:', error));
};

// The start view (issue 28; ext-core `worker::start_view`, docs/PROTOCOL.md "Start view"): a
// page port that connects before the worker started is posted, once the start read is in,
// the message the core stored for its `sender.url` under `start_keys.view`, as it is — the
// view the restored core will post at this connect, marked provisional. Nothing when the
// record is missing, unreadable, of another version or lists no such URL, or once the worker
// started (the live view is then on its way, and must not be overtaken).
const startView = (local, url) => {
  try {
    const record = JSON.parse(local[START_KEYS.view]);
    if (record?.version !== chrome.runtime.getManifest().version || typeof url !== 'string') return null;
    return Object.hasOwn(record.pages ?? {}, url) ? record.pages[url] : null;
  } catch {
    return null;
  }
};
const postStartView = (port, first) => startRead.then(([local]) => {
  const view = started || startFailed !== null ? null : startView(local, port.sender?.url);
  if (!view) return;
  try { port.postMessage(view); } catch { return; }
  if (first) performance.mark('herdr:start-view');
});

chrome.runtime.onConnect.addListener((port) => {
  if (port.name !== PORTS.page && port.name !== PORTS.panel) return;
  const first = firstPort;
  firstPort = false;
  if (!started) {
    waitingPorts.add(port);
    port.onDisconnect.addListener(() => waitingPorts.delete(port));
    if (startProblem !== null || startFailed !== null) tellStartProblem(port);
    if (port.name === PORTS.page) postStartView(port, first);
  }
  if (first) performance.mark('herdr:connect');
  forward(() => {
    shell.page_connected(port);
    if (first) performance.mark('herdr:page-connected');
  });
  port.onMessage.addListener((message) => forward(() => shell.page_message(port, message)));
  port.onDisconnect.addListener(() => forward(() => shell.page_disconnected(port)));
});

chrome.runtime.onInstalled.addListener(() => {
  chrome.alarms.create('companion-link', { periodInMinutes: 0.5 });
  chrome.sidePanel?.setPanelBehavior?.({ openPanelOnActionClick: true }).catch(() => {});
  forward(() => {});
});
chrome.runtime.onStartup.addListener(() => {
  chrome.alarms.create('companion-link', { periodInMinutes: 0.5 });
  forward(() => {});
});
// The Queue's keyboard shortcut: the tab's content script queues its composer text.
chrome.commands?.onCommand.addListener((command, tab) => {
  if (command === 'queue-composer' && tab?.id !== undefined) {
    chrome.tabs.sendMessage(tab.id, { type: MESSAGES.worker_to_tab.queue_request }).catch(() => {});
  }
});
// Trusted typing for the Herdr App (docs/PROTOCOL.md "trusted_type"; ARCHITECTURE.md
// "Trusted keys"). ChatGPT opens its App picker only for real key presses, so the page asks
// here for `@<keyword>` and this types it into the asking tab through chrome.debugger's
// Input domain: attach, key events, detach (the page picks the App's option by a click). It
// types only when the user turned trusted typing on (options page, `trustedTypingAllowed`
// in chrome.storage.local) and Chrome grants `debugger`; otherwise, and on any failure, it
// answers `{ok: false, error}` — never throws, never decides what is typed or when.
// Only our own content script in the top frame of a page of our host permissions may ask,
// and only for an `@` mention of a name (letters, digits, `.`, `_`, `-`: the keyword is
// learned from the page, which must not slip symbols or a direction override into trusted
// keys); the tab must still show
// such a page right before the debugger attaches (the keys go to its focused element).
const TRUSTED_TYPING_KEY = SETTINGS.trusted_typing_key;
const TRUSTED_MENTION = /^@[\p{L}\p{N}][\p{L}\p{N}._-]{0,63}$/u;
const allowedOrigin = (url) => {
  try {
    const origin = new URL(url).origin;
    return (chrome.runtime.getManifest().host_permissions ?? []).some((pattern) => pattern.startsWith(`${origin}/`));
  } catch {
    return false;
  }
};
const ourPage = (sender) => sender?.id === chrome.runtime.id && sender.frameId === 0 && typeof sender.tab?.id === 'number' &&
  allowedOrigin(sender.url);
const trustedTypingAllowed = async () => {
  const [consent, granted] = await Promise.all([
    chrome.storage.local.get(TRUSTED_TYPING_KEY).then((items) => items?.[TRUSTED_TYPING_KEY] === true, () => false),
    Promise.resolve(chrome.permissions?.contains?.({ permissions: ['debugger'] })).then(Boolean, () => false),
  ]);
  return consent && granted && typeof chrome.debugger?.attach === 'function';
};
const typingTabs = new Map(); // tab id → the promise of its last typing (one attach at a time)
// A typing waits for the tab's earlier one, meanwhile the tab may have navigated away: its
// URL is read again right before attaching, and a tab no longer on an allowed origin gets
// no keys (`{ok: false, error: 'not_a_page'}`).
const typeTrusted = async (tabId, message) => {
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  if (!allowedOrigin(tab?.url)) return false;
  const target = { tabId };
  await chrome.debugger.attach(target, '1.3');
  try {
    const send = (params) => chrome.debugger.sendCommand(target, 'Input.dispatchKeyEvent', params);
    for (const char of message.text) {
      await send({ type: 'keyDown', key: char, text: char, unmodifiedText: char });
      await send({ type: 'keyUp', key: char });
    }
  } finally {
    await chrome.debugger.detach(target).catch(() => {});
  }
  return true;
};
chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (message?.type !== MESSAGES.runtime_to_worker.trusted_type) return false;
  const answer = (async () => {
    if (!ourPage(sender)) return { ok: false, error: 'not_a_page' };
    const valid = message.key === undefined && typeof message.text === 'string' && TRUSTED_MENTION.test(message.text);
    if (!valid) return { ok: false, error: 'bad_request' };
    if (!(await trustedTypingAllowed())) return { ok: false, error: 'no_permission' };
    const tabId = sender.tab.id;
    const typed = (typingTabs.get(tabId) ?? Promise.resolve()).then(() => typeTrusted(tabId, message));
    typingTabs.set(tabId, typed.catch(() => {}));
    return (await typed) ? { ok: true } : { ok: false, error: 'not_a_page' };
  })().catch((error) => ({ ok: false, error: 'debugger_failed', message: String(error?.message ?? error).slice(0, 300) }));
  answer.then(sendResponse);
  return true;
});
// Site profile overrides (docs/PROTOCOL.md "Site profile files"): the options page imports,
// resets and reads the profile in force of a site through these messages; the wasm
// validates (ext-core) and says what to store, this file stores it under
// PROFILE_OVERRIDES_KEY (`{<site>: {text, imported_at}}`, read at start through the wasm's
// start keys) and hands the stored record back. Only this extension's options page may
// ask; one change at a time, so two imports never overwrite each other's record.
const PROFILE_OVERRIDES_KEY = SETTINGS.profile_overrides_key;
const { profile_import: PROFILE_IMPORT, profile_reset: PROFILE_RESET, profile_get: PROFILE_GET } = MESSAGES.runtime_to_worker;
const PROFILE_MESSAGES = new Set([PROFILE_IMPORT, PROFILE_RESET, PROFILE_GET]);
const optionsPage = (sender) => {
  if (sender?.id !== chrome.runtime.id || typeof sender.url !== 'string') return false;
  try {
    const url = new URL(sender.url);
    return `${url.origin}${url.pathname}` === chrome.runtime.getURL('options.html');
  } catch {
    return false;
  }
};
let profileChanges = Promise.resolve();
const storeProfiles = (answer) => {
  const run = profileChanges.then(async () => {
    const result = answer();
    if (result?.ok !== true) return result;
    const { store, ...rest } = result;
    await chrome.storage.local.set({ [PROFILE_OVERRIDES_KEY]: store });
    shell.profile_overrides_changed(store);
    return rest;
  });
  profileChanges = run.catch(() => {});
  return run;
};
chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (!PROFILE_MESSAGES.has(message?.type)) return false;
  const answer = (async () => {
    if (!optionsPage(sender)) return { ok: false, problem: 'refused: only the extension\'s options page may read or change site profiles' };
    if (typeof message.site !== 'string') return { ok: false, problem: `no site named: choose ${globalThis.herdrContracts.profiles.sites.join(', ')}` };
    wake();
    await ready.catch(() => {});
    if (!started) return { ok: false, problem: `the extension has not started: ${startFailed ?? startProblem ?? 'try again in a moment'}` };
    if (message.type === PROFILE_GET) return shell.profile_get(message.site);
    if (message.type === PROFILE_RESET) return storeProfiles(() => shell.profile_reset(message.site));
    if (typeof message.text !== 'string') return { ok: false, problem: 'the file is not text: choose a profile JSON file' };
    return storeProfiles(() => shell.profile_import(message.site, message.text));
  })().catch((error) => ({ ok: false, problem: `the profile could not be saved: ${String(error?.message ?? error).slice(0, 300)}` }));
  answer.then(sendResponse);
  return true;
});
chrome.alarms.onAlarm.addListener((alarm) => forward(() => shell.on_alarm(alarm.name)));
chrome.tabs.onRemoved.addListener((tabId) => forward(() => shell.tab_removed(tabId)));
chrome.tabs.onActivated.addListener((info) => forward(() => shell.tab_activated(info.tabId)));
chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'sync' && changes[ALLOW_PROJECT_AUTO_KEY]) {
    forward(() => shell.allow_project_auto_changed(Boolean(changes[ALLOW_PROJECT_AUTO_KEY].newValue)));
  }
  if (area === 'sync' && (changes[TICK_KEY] || changes[FALLBACK_KEY])) {
    // Both values, as the wasm reads them at start (a number, else the default; a failed
    // read is the defaults): the change carries only the one that changed.
    const number = (value) => (typeof value === 'number' ? value : undefined);
    chrome.storage.sync.get([TICK_KEY, FALLBACK_KEY]).catch(() => ({})).then((items) =>
      forward(() => shell.progress_settings_changed(number(items?.[TICK_KEY]), number(items?.[FALLBACK_KEY]))));
  }
  if (area === 'local' && changes[SETTINGS.judge.key]) {
    const text = changes[SETTINGS.judge.key].newValue;
    forward(() => shell.judge_settings_changed(typeof text === 'string' ? text : undefined));
  }
  if (area === 'local' && changes[PROFILE_OVERRIDES_KEY]) {
    const record = changes[PROFILE_OVERRIDES_KEY].newValue;
    forward(() => shell.profile_overrides_changed(record ?? null));
  }
  if (area === 'local' && changes[SETTINGS.recovery.key]) {
    const text = changes[SETTINGS.recovery.key].newValue;
    forward(() => shell.recovery_settings_changed(typeof text === 'string' ? text : undefined));
  }
});

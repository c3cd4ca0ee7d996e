// Service worker loader (MV3, type: module). It only forwards Chrome events into the
// wasm shell (ext-shell); every decision is made in ext-core.
//
// Every listener is registered synchronously at top level (Chrome only delivers the
// events that woke the worker to listeners registered in the first turn), and each one
// awaits the wasm init promise before forwarding. Port messages are forwarded through
// the same promise, so their order is kept even while wasm is still compiling.
import init, * as shell from './pkg/ext_shell.js';
import { recordActivity } from './activity-log.js';

// The Activity timeline: ext-shell hands each entry the core records to this global
// (set before the wasm starts) and activity-log.js stamps and stores it. A global rather
// than a wasm-bindgen JS import keeps the store a plain module the side panel imports too.
globalThis.herdrActivity = recordActivity;

// The start reads its stored state and settings here (the keys come from the wasm): a
// storage read in the wasm is a future of its own. A failed read is an empty object.
const stored = (area, keys) => Promise.resolve(chrome.storage?.[area]?.get(keys)).catch(() => ({})).then((items) => items ?? {});
// chrome.storage.local for the wasm (ext-shell `js::storage_request`): a read (`text`
// undefined) or a write of `key`, answered through `js_answer` with `token` — a storage
// promise awaited in the wasm would be a future, kilobytes of it.
globalThis.herdrStorage = (token, key, text) => {
  Promise.resolve()
    .then(() => (text === undefined ? chrome.storage.local.get(key).then((items) => items?.[key]) : chrome.storage.local.set({ [key]: text }).then(() => undefined)))
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
const ready = init().then(async () => {
  const [localKeys, syncKeys] = shell.start_keys();
  const [local, sync] = await Promise.all([stored('local', localKeys), stored('sync', syncKeys)]);
  shell.start_worker(local, sync);
});
ready.catch((error) => console.error('herdr-continuity: the wasm shell failed to start:', error));

const forward = (fn) => ready.then(fn).catch((error) => console.error('herdr-continuity:', error));

chrome.runtime.onConnect.addListener((port) => {
  if (port.name !== 'page' && port.name !== 'panel') return;
  forward(() => shell.page_connected(port));
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
    chrome.tabs.sendMessage(tab.id, { type: 'queue_request' }).catch(() => {});
  }
});
chrome.alarms.onAlarm.addListener((alarm) => forward(() => shell.on_alarm(alarm.name)));
chrome.tabs.onRemoved.addListener((tabId) => forward(() => shell.tab_removed(tabId)));
chrome.tabs.onActivated.addListener((info) => forward(() => shell.tab_activated(info.tabId)));
chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'sync' && changes.allowProjectAuto) {
    forward(() => shell.allow_project_auto_changed(Boolean(changes.allowProjectAuto.newValue)));
  }
  if (area === 'sync' && (changes.progressTickSec || changes.progressFallbackSec)) {
    // Both values, as the wasm reads them at start (a number, else the default; a failed
    // read is the defaults): the change carries only the one that changed.
    const number = (value) => (typeof value === 'number' ? value : undefined);
    chrome.storage.sync.get(['progressTickSec', 'progressFallbackSec']).catch(() => ({})).then((items) =>
      forward(() => shell.progress_settings_changed(number(items?.progressTickSec), number(items?.progressFallbackSec))));
  }
  if (area === 'local' && changes.herdrContinuityJudgeV1) {
    const text = changes.herdrContinuityJudgeV1.newValue;
    forward(() => shell.judge_settings_changed(typeof text === 'string' ? text : undefined));
  }
  if (area === 'local' && changes.herdrContinuityRecoveryV1) {
    const text = changes.herdrContinuityRecoveryV1.newValue;
    forward(() => shell.recovery_settings_changed(typeof text === 'string' ? text : undefined));
  }
});

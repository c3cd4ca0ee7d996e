// The side panel's "Workstation tool calls" section (issue 27; docs/PROTOCOL.md "Write and
// exec tools"): the newest rows of the companion's audit log of the write and exec tools —
// which tool, who called it (an MCP client or a z.ai / DeepSeek chat), where (root, path or
// command), how it ended, and when. The log lives in the companion's state.db, so this
// section opens its own native port like the live tree and the options page's storage
// limits: `hello`, then `tools.audit`, again on Refresh and every 10 seconds while the panel
// is open. It only displays; nothing here runs or decides a tool call.
import './contracts.js';
import { button, element, errorText, message } from './page-dom.js';

const { protocol: { host: HOST, version: PROTOCOL }, caps: { audit_rows: LIMIT } } = globalThis.herdrContracts;
const ANSWER_MS = 5_000;
const REFRESH_MS = 10_000;
const OUTCOMES = ['ok', 'failed', 'refused', 'replayed', 'interrupted'];

const object = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const string = (value) => typeof value === 'string';

/** A native port answering requests by id; `close()` ends it. */
function companionPort(onClosed) {
  const port = chrome.runtime.connectNative(HOST);
  const pending = new Map();
  let next = 1;
  let closed = null;
  port.onMessage.addListener((received) => {
    const waiting = object(received) ? pending.get(received.id) : undefined;
    if (!waiting) return;
    pending.delete(received.id);
    if (object(received.error)) waiting.reject(new Error(`${received.error.code}: ${received.error.message ?? ''}`));
    else if (object(received.result)) waiting.resolve(received.result);
    else waiting.reject(new Error(message('treeBadAnswer')));
  });
  port.onDisconnect.addListener(() => {
    closed = chrome.runtime.lastError?.message ?? message('treeDisconnected');
    for (const { reject } of pending.values()) reject(new Error(closed));
    pending.clear();
    onClosed();
  });
  return {
    request(method, params) {
      if (closed) return Promise.reject(new Error(closed));
      const id = `audit-${next++}`;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        setTimeout(() => {
          if (pending.delete(id)) reject(new Error(message('auditNoAnswer')));
        }, ANSWER_MS);
        port.postMessage({ id, method, params });
      });
    },
  };
}

/** One row: time, tool, outcome, caller, target, detail (the root on hover). */
function auditRow(entry) {
  const outcome = OUTCOMES.includes(entry.outcome) ? entry.outcome : 'failed';
  const caller = entry.caller === 'mcp'
    ? message('auditCallerMcp')
    : message('auditCallerChat', [String(entry.caller).replace(/^bridge:/, '')]);
  return element('li', '', {
    'data-audit-entry': '', 'data-tool': entry.tool, 'data-outcome': outcome, 'data-caller': entry.caller, title: entry.root,
  },
  element('time', 'activity-time', { datetime: new Date(entry.at).toISOString() }, new Date(entry.at).toLocaleTimeString()),
  element('code', 'audit-tool', {}, entry.tool),
  element('span', `activity-outcome outcome-${outcome}`, {}, message(`auditOutcome_${outcome}`)),
  element('span', 'audit-caller', {}, caller),
  element('code', 'audit-target', {}, entry.target),
  element('span', 'activity-reason', {}, entry.detail));
}

const validEntry = (entry) => object(entry) && Number.isFinite(entry.at) && ['tool', 'caller', 'root', 'target', 'outcome', 'detail'].every((key) => string(entry[key]));

/** The section; it fills itself once the companion answers (or says why it cannot). */
export function mountToolAudit(region) {
  const note = element('p', 'line', { 'data-audit-note': '', role: 'status' }, message('treeConnecting'));
  const rows = element('ol', 'activity audit', { 'data-audit': '' });
  let link = null;
  let ready = null;
  const connect = () => {
    link = companionPort(() => { link = null; ready = null; });
    ready = link.request('hello', { protocol: PROTOCOL, extension_version: chrome.runtime.getManifest().version }).then((hello) => {
      if (hello.compatible === false) throw new Error(message('treeIncompatible'));
      if (Array.isArray(hello.capabilities) && !hello.capabilities.includes('tools.audit')) throw new Error(message('auditOldCompanion'));
    });
    return ready;
  };
  let turn = 0;
  const refresh = async () => {
    const mine = ++turn;
    try {
      if (!link) connect();
      await ready;
      const answer = await link.request('tools.audit', { limit: LIMIT });
      if (mine !== turn) return;
      const entries = Array.isArray(answer.entries) ? answer.entries.filter(validEntry) : [];
      region.setAttribute('data-audit-state', 'ok');
      note.className = 'line';
      note.textContent = entries.length ? '' : message('auditEmpty');
      note.hidden = entries.length > 0;
      rows.replaceChildren(...entries.map(auditRow));
    } catch (error) {
      if (mine !== turn) return;
      region.setAttribute('data-audit-state', 'unavailable');
      note.hidden = false;
      note.className = 'line tone-bad';
      note.textContent = message('auditUnavailable', [errorText(error)]);
    }
  };
  const again = button(message('auditRefresh'), { 'data-audit-refresh': '' }, () => refresh());
  region.replaceChildren(element('h2', '', {}, message('auditTitle')), element('p', 'line', {}, message('auditNote')), again, note, rows);
  refresh();
  setInterval(() => { if (document.visibilityState === 'visible') refresh(); }, REFRESH_MS);
}

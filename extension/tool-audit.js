// The side panel's "Workstation tool calls" section (issue 27; docs/PROTOCOL.md "Write and
// exec tools"): the newest rows of the companion's audit log of the write and exec tools —
// which tool, who called it (an MCP client or a z.ai / DeepSeek chat), where (root, path or
// command), how it ended, and when. The log lives in the companion's state.db: this section
// calls `tools.audit` through the worker's one companion connection (companion-client.js),
// again on Refresh and every 10 seconds while the panel is open. It only displays; nothing
// here runs or decides a tool call.
import './contracts.js';
import { button, element, errorText, message } from './page-dom.js';

const { caps: { audit_rows: LIMIT }, companion_calls: { methods: METHODS } } = globalThis.herdrContracts;
const REFRESH_MS = 10_000;
const OUTCOMES = ['ok', 'failed', 'refused', 'replayed', 'interrupted'];

const object = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const string = (value) => typeof value === 'string';

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

/** The section; it fills itself once the companion answers (or says why it cannot).
 * `companion` is the side panel's CompanionClient. */
export function mountToolAudit(region, companion) {
  const note = element('p', 'line', { 'data-audit-note': '', role: 'status' }, message('treeConnecting'));
  const rows = element('ol', 'activity audit', { 'data-audit': '' });
  let turn = 0;
  const refresh = async () => {
    const mine = ++turn;
    try {
      const answer = await companion.call(METHODS.tools_audit, { limit: LIMIT });
      if (mine !== turn) return;
      const entries = Array.isArray(answer?.entries) ? answer.entries.filter(validEntry) : [];
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
  // Read as soon as (and each time) the worker is connected to the companion.
  companion.watch({ onState: (connected) => { if (connected) refresh(); } });
  setInterval(() => { if (document.visibilityState === 'visible') refresh(); }, REFRESH_MS);
}

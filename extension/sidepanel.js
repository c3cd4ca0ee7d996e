// The side panel (Control Center, SPEC O1): a renderer of the views the worker computes,
// the live Herdr tree with the Pinned Target (live-tree.js) and the queue's records kept
// aside (queue-aside.js).
// It connects a `panel` port, renders each view it receives — the HUD view (ext-core
// `hud::HudView`), the panel view (`continuity::PanelView`) and the tab's page diagnostics
// ("What the extension sees") — and posts the buttons' commands back. It decides nothing:
// every view comes whole from the worker (docs/PROTOCOL.md "panel ↔ worker"), and a
// message of a shape it does not know is refused visibly instead of rendered in part.
// The Activity timeline is read from its own stored record (activity-log.js), which the
// worker writes: what the extension did or held back, and why, for the panel's tab.
import './contracts.js';
import { button, element, errorText, message, startPage, statusRegion } from './page-dom.js';
import { mountLiveTree } from './live-tree.js';
import { mountToolAudit } from './tool-audit.js';
import { queueAsideView } from './queue-aside.js';
import { panelPort } from './companion-client.js';
import { ACTIVITY_KEY, clearActivity, loadActivity } from './activity-log.js';

// The port's name and message types (generated from Rust: protocol/src/port.rs).
const { messages: { panel_to_worker: TO_WORKER, worker_to_panel: FROM_WORKER } } = globalThis.herdrContracts;

// ---- The shapes the worker sends. Extra fields are allowed (the panel's HUD view may
// carry the continuity part the content script shows); a missing or mistyped one is not.
const string = (value) => typeof value === 'string';
const flag = (value) => typeof value === 'boolean';
const whole = (value) => Number.isInteger(value) && value >= 0;
const optional = (check) => (value) => value == null || check(value);
const list = (check) => (value) => Array.isArray(value) && value.every(check);
const object = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const record = (fields) => (value) => object(value) && Object.entries(fields).every(([name, check]) => check(value[name]));
const dictionary = (check) => (value) => object(value) && Object.values(value).every(check);

const STATUS_LINE = record({ key: string, substitutions: list(string), tone: string });
const HUD_VIEW = record({
  companion: STATUS_LINE,
  herdr: STATUS_LINE,
  actions: list(record({ id: string, label: string })),
});
const PANEL_VIEW = record({
  tab: optional(record({
    tab_id: whole, url: string, scope_key: optional(string), bound_to: optional(string), bindable: flag, reason: optional(string),
  })),
  catalog: list(record({ workspace_id: string, label: string })),
  catalog_error: optional(string),
  bindings: list(record({
    scope_key: string, session_ref: string, workspace_id: string, label: string, active_target: optional(string), in_catalog: flag,
  })),
});
const QUEUE_ASIDE = record({
  title: string, line: optional(STATUS_LINE), notice: optional(STATUS_LINE),
  records: list(record({ id: string, kept_at: optional(whole), line: STATUS_LINE, preview: optional(string), text: optional(string) })),
  copy: string, copied: string, copy_failed: string, remove: string, confirm: string, yes: string, no: string,
});
const PAGE_DIAGNOSTICS = record({
  site: optional(string),
  generation: optional(string),
  matching: list(string),
  facts: dictionary(optional(string)),
  usage: dictionary(record({ entry: whole, gens: list(string), fallback: flag, count: whole })),
  missing: dictionary(record({ elements: whole, tags: dictionary(whole), roles: dictionary(whole), data_attrs: dictionary(whole) })),
  csp: record({ meta: flag, violations: whole, directives: list(string) }),
  deliveries: list(record({ id: string, outcome: string, reason: optional(string) })),
});

// ---- Renderers: each returns the new content of its region.

/** The HUD view: the companion and Herdr lines with their tone, and its buttons. */
function hudView({ view }, post) {
  const lines = [['companion', view.companion], ['herdr', view.herdr]].map(([name, line]) =>
    element('p', `line tone-${line.tone}`, { 'data-line': name, 'data-key': line.key }, message(line.key, line.substitutions)));
  const actions = element('div', 'actions', {}, ...view.actions.map((action) =>
    button(message(action.label), { 'data-action': action.id }, () => post({ type: TO_WORKER.action, action: action.id }))));
  return [...lines, actions];
}

/** The answer to a round-trip test, in the status region. */
/**
 * The worker could not read its stored state at start (`start_problem {error}`): nothing is
 * saved until it can, and it tries again by itself; `error: null` once it could. With
 * `failed: true` the start itself failed, for good in this worker life (`startFailed`).
 */
function startProblemView({ error, failed }, _post, region) {
  region.toggleAttribute('data-start-problem', Boolean(error));
  const key = failed === true ? 'startFailed' : 'startProblem';
  return error ? [element('p', 'line tone-bad', { role: 'alert', 'data-key': key }, message(key, [error]))] : [];
}

function roundTrip({ status }, _post, region) {
  region.setAttribute('data-key', status.key);
  return [message(status.key, status.substitutions)];
}

/** The Control Center: the tab's scope, the catalog with Bind buttons, the bindings with Unbind (B1, O1). */
function panelView({ view }, post) {
  const { tab } = view;
  const nodes = [element('h2', '', {}, message('panelCurrentTab'))];
  if (tab) {
    let text = tab.scope_key != null ? message('panelScope', [tab.scope_key]) : tab.reason != null ? message(`unsupported_${tab.reason}`) : tab.url;
    if (tab.bound_to != null) text += ` ${message('panelBoundTo', [tab.bound_to])}`;
    nodes.push(element('p', `line tab-card${tab.bound_to != null ? ' tone-good' : ''}`, {
      'data-panel-tab': '', 'data-tab-id': String(tab.tab_id), 'data-scope-key': tab.scope_key ?? '', 'data-bound-to': tab.bound_to ?? '',
    }, text));
  } else {
    nodes.push(element('p', 'line', { 'data-panel-tab': '' }, message('panelNoTab')));
  }

  nodes.push(element('h2', '', {}, message('panelCatalog')));
  if (view.catalog_error != null) {
    nodes.push(element('p', 'line tone-bad', { 'data-catalog-error': '' }, message('panelCatalogError', [view.catalog_error])));
  }
  const bindTab = tab?.bindable ? tab.tab_id : null;
  const catalog = element('ul', 'catalog', { 'data-catalog': '' }, ...view.catalog.map(({ workspace_id, label }) => {
    const name = `${label} (${workspace_id})`;
    if (bindTab === null) return element('li', '', {}, name);
    return element('li', '', {}, button(message('panelBind', [name]), { 'data-bind': workspace_id },
      () => post({ type: TO_WORKER.bind, tab_id: bindTab, workspace_id, label })));
  }));
  if (view.catalog.length === 0) nodes.push(element('p', 'line', {}, message('panelCatalogEmpty')));
  nodes.push(catalog, button(message('panelRefresh'), { 'data-refresh': '' }, () => post({ type: TO_WORKER.panel_refresh })));

  nodes.push(element('h2', '', {}, message('panelBindings')));
  const bindings = element('ul', 'bindings', { 'data-bindings': '' }, ...view.bindings.map((binding) => {
    let text = `${binding.session_ref} → ${binding.label} (${binding.workspace_id})`;
    if (binding.active_target != null) text += ` /c/${binding.active_target}`;
    if (!binding.in_catalog) text += ` ${message('panelNotInCatalog')}`;
    return element('li', `binding${binding.in_catalog ? '' : ' tone-warning'}`, { 'data-binding-row': binding.scope_key, 'data-workspace': binding.workspace_id },
      element('span', 'binding-text', {}, text),
      button(message('panelUnbind'), { 'data-unbind': binding.scope_key }, () => post({ type: TO_WORKER.unbind, scope_key: binding.scope_key })));
  }));
  if (view.bindings.length === 0) nodes.push(element('p', 'line', {}, message('panelNoBindings')));
  nodes.push(bindings);
  return nodes;
}

const reasonSuffix = (reason) => (reason != null ? ` (${reason})` : '');
// A structural summary's map as `name count, …` (names and counts only).
const counted = (map) => Object.entries(map).map(([name, n]) => `${name} ${n}`).join(', ');
const usageText = (u) => `entry ${u.entry}${u.fallback ? ' (fallback)' : ''}, won ${u.count} recompute(s)${u.gens.length ? `, generations ${u.gens.join(', ')}` : ''}`;
const missingText = (m) =>
  `${m.elements} element(s) looked at; tags: ${counted(m.tags) || 'none'}; roles: ${counted(m.roles) || 'none'}; data-*: ${counted(m.data_attrs) || 'none'}`;

/**
 * The diagnostics as plain text for a bug report ("Copy diagnostics"): the facts the
 * panel shows, under fixed English field names so any maintainer can read them;
 * selectors, ids and counts only, never page content.
 */
function diagnosticsText(extensionVersion, diagnostics, factOrder) {
  const { csp } = diagnostics;
  const directives = csp.directives.length ? ` (${csp.directives.join(', ')})` : '';
  return [
    `herdr-continuity diagnostics (extension ${extensionVersion})`,
    `site: ${diagnostics.site ?? 'none'}`,
    `generation: ${diagnostics.generation ?? 'none'}`,
    `matching rules: ${diagnostics.matching.length ? diagnostics.matching.join(', ') : 'none'}`,
    ...factOrder.map((name) => `fact ${name}: ${diagnostics.facts[name] ?? 'none'}`),
    ...Object.entries(diagnostics.usage).map(([name, u]) => `${u.fallback ? 'FALLBACK ' : ''}usage ${name}: ${usageText(u)}`),
    ...Object.entries(diagnostics.missing).map(([name, m]) => `missing ${name}: ${missingText(m)}`),
    `csp: meta policy ${csp.meta ? 'present' : 'absent'}, ${csp.violations} violation(s)${directives}`,
    ...diagnostics.deliveries.map((d) => `delivery ${d.id}: ${d.outcome}${reasonSuffix(d.reason)}`),
    // The same counts as JSON, for whoever writes a profile override from this report.
    `json: ${JSON.stringify({ usage: diagnostics.usage, missing: diagnostics.missing })}`,
  ].join('\n');
}

/**
 * "What the extension sees" for the panel's tab: the layout generation, each fact with
 * the probe that matched (in the worker's `fact_order`; one served by a fallback entry of
 * its chain is a warning with how often), the structure where each missing needed fact
 * was looked for (names and counts only), the CSP as observed, the last
 * delivery outcomes, and a button copying diagnosticsText.
 */
function pageDiagnostics({ diagnostics, fact_order: factOrder }) {
  const nodes = [];
  if (diagnostics == null) {
    nodes.push(element('p', 'line', { 'data-diagnostics-missing': '' }, message('panelSeesNothing')));
    return nodes;
  }
  const { generation, csp } = diagnostics;
  nodes.push(generation != null
    ? element('p', 'line', { 'data-generation': generation }, message('panelGeneration', [generation]))
    : element('p', 'line tone-bad', { 'data-generation': '' }, message('panelGenerationUnknown')));
  const none = message('panelFactNone');
  nodes.push(element('ul', 'facts', { 'data-facts': '' }, ...factOrder.map((name) => {
    const probe = diagnostics.facts[name];
    const used = diagnostics.usage[name];
    const attributes = { 'data-fact': name, 'data-selector': probe ?? '' };
    if (used) Object.assign(attributes, { 'data-fallback': String(used.fallback), 'data-entry': String(used.entry), 'data-count': String(used.count) });
    if (!used?.fallback) return element('li', '', attributes, `${name}: ${probe ?? none}`);
    // A fallback that quietly became the main path: a warning with its count.
    return element('li', 'line tone-warning', { ...attributes, 'data-tone': 'warn' }, `${name}: ${probe ?? none} `,
      element('span', '', { 'data-fallback-warning': '' }, message('panelFactFallback', [String(used.entry), String(used.count)])));
  })));
  const missing = Object.entries(diagnostics.missing);
  if (missing.length) {
    nodes.push(element('h3', '', {}, message('panelMissingTitle')));
    nodes.push(element('ul', 'missing', { 'data-missing': '' }, ...missing.map(([name, m]) =>
      element('li', 'line tone-bad', { 'data-missing-fact': name, 'data-elements': String(m.elements) },
        message('panelMissing', [name, String(m.elements), counted(m.tags) || none, counted(m.roles) || none, counted(m.data_attrs) || none])))));
  }
  const meta = message(csp.meta ? 'panelCspMeta' : 'panelCspNoMeta');
  const violations = message('panelCspViolations', [String(csp.violations), csp.directives.join(', ')]);
  // A CSP violation is shown only here: a warning, so the diagnostics unfold for it.
  nodes.push(element('p', csp.violations > 0 ? 'line tone-warning' : 'line', { 'data-csp-meta': String(csp.meta), 'data-csp-violations': String(csp.violations) }, `${meta} ${violations}`));
  nodes.push(element('h3', '', {}, message('panelDeliveries')));
  if (diagnostics.deliveries.length === 0) nodes.push(element('p', 'line', {}, message('panelNoDeliveries')));
  nodes.push(element('ul', 'deliveries', { 'data-deliveries': '' }, ...diagnostics.deliveries.map((d) =>
    // Only `submitted` is a delivery that went out; any other outcome is a warning.
    element('li', d.outcome === 'submitted' ? '' : 'line tone-warning', { 'data-delivery': d.id, 'data-outcome': d.outcome }, `${d.id} → ${d.outcome}${reasonSuffix(d.reason)}`))));
  const copyStatus = element('p', '', { role: 'status', 'data-copy-status': '' });
  const text = diagnosticsText(chrome.runtime.getManifest().version, diagnostics, factOrder);
  const copy = button(message('panelCopyDiagnostics'), { 'data-copy-diagnostics': '' }, async () => {
    try {
      if (!navigator.clipboard) throw new Error('navigator.clipboard is not available');
      await navigator.clipboard.writeText(text);
      copyStatus.textContent = message('panelCopied');
    } catch (error) {
      copyStatus.textContent = message('panelCopyFailed', [errorText(error)]);
    }
  });
  nodes.push(copy, copyStatus);
  return nodes;
}

/** The text of one of the core's codes (`<prefix><code>` in _locales); the code itself when it has none. */
function codeText(prefix, code) {
  let text = '';
  try {
    text = chrome.i18n.getMessage(`${prefix}${code}`);
  } catch {
    // A code that is not a valid message name, or no chrome.i18n: the code shows.
  }
  return text || code;
}

/** Local time of day, HH:MM:SS. */
const clock = (t) => {
  const date = new Date(t);
  return [date.getHours(), date.getMinutes(), date.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
};

/**
 * One timeline row: when, what, how it went, why, the tool a permission card allowed and the
 * delivery id when there is one.
 */
function activityRow(entry, showScope) {
  const cells = [
    element('time', 'activity-time', { datetime: new Date(entry.t).toISOString() }, clock(entry.t)),
    element('span', 'activity-kind', {}, codeText('activityKind_', entry.kind)),
    element('span', `activity-outcome outcome-${entry.outcome}`, {}, codeText('activityOutcome_', entry.outcome)),
    element('span', 'activity-reason', {}, codeText('activityReason_', entry.reason)),
  ];
  if (entry.tool !== undefined) cells.push(element('span', 'activity-tool', {}, message('activityTool', [entry.tool])));
  if (entry.id !== undefined) cells.push(element('code', 'activity-id', {}, entry.id));
  if (showScope) cells.push(element('span', 'activity-scope', {}, entry.scope));
  return element('li', '', {
    'data-activity-entry': '', 'data-kind': entry.kind, 'data-outcome': entry.outcome, 'data-reason': entry.reason,
    'data-id': entry.id ?? '', 'data-tool': entry.tool ?? '', 'data-scope': entry.scope,
  }, ...cells);
}

/**
 * The Activity section: the timeline of the panel's tab's scope (or of every scope),
 * newest first, updated whenever the stored record changes. Its controls are built once
 * and only relabelled, so an update never takes the keyboard focus away.
 */
function mountActivity(region) {
  let scopeKey = null;
  let all = false;
  let shown = 0;
  const toggle = button(message('activityShowAll'), { 'data-activity-all': '', 'aria-pressed': 'false' }, () => {
    all = !all;
    refresh();
  });
  const note = element('p', 'line', { 'data-activity-note': '', role: 'status' });
  const clear = button(message('activityClear'), { 'data-activity-clear': '' }, () => clearActivity());
  clear.hidden = true;
  const rows = element('ol', 'activity', { 'data-activity': '' });
  region.append(element('h2', '', {}, message('activityTitle')), toggle, note, clear, rows);

  async function refresh() {
    const turn = ++shown;
    const read = await loadActivity().catch((error) => ({ ok: false, error: errorText(error) }));
    if (turn !== shown) return; // a newer refresh is on its way
    toggle.setAttribute('aria-pressed', String(all));
    toggle.textContent = message(all ? 'activityShowScope' : 'activityShowAll');
    clear.hidden = read.ok;
    region.setAttribute('data-activity-state', read.ok ? 'ok' : 'unreadable');
    if (!read.ok) {
      note.className = 'line tone-bad';
      note.textContent = message('activityUnreadable', [read.error]);
      rows.replaceChildren();
      return;
    }
    const { scopes } = read.record;
    const keys = all ? Object.keys(scopes) : [scopeKey].filter((key) => key != null && Object.hasOwn(scopes, key));
    const entries = keys.flatMap((key) => scopes[key].map((entry) => ({ ...entry, scope: key }))).sort((a, b) => b.t - a.t);
    note.className = 'line';
    note.textContent = entries.length ? '' : message(all || scopeKey != null ? 'activityEmpty' : 'activityNoScope');
    note.hidden = entries.length > 0;
    rows.replaceChildren(...entries.map((entry) => activityRow(entry, all)));
  }

  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'local' && Object.hasOwn(changes, ACTIVITY_KEY)) refresh();
  });
  refresh();
  return {
    /** The panel's tab now shows `key` (a scope key or null). */
    scope(key) {
      if (key === scopeKey) return;
      scopeKey = key;
      refresh();
    },
  };
}

/** `?tab=<id>` of the panel's URL (a panel opened for a given tab), else null. */
function tabFromLocation() {
  const tab = new URLSearchParams(location.search).get('tab');
  return tab !== null && /^\d+$/.test(tab) ? Number(tab) : null;
}

startPage((app) => {
  const regions = {
    start: element('section', 'start-problem'),
    hud: element('section', 'hud'),
    status: statusRegion('round-trip'),
    panel: element('section', 'control-center'),
    aside: element('section', 'queue-aside', { 'data-queue-aside': '', 'data-aside-count': '0' }),
    // Folded away: a `<details>` whose summary names it; the renderer fills its body.
    diagnostics: element('div', 'diagnostics-body'),
    live: element('section', 'live', { 'data-live': '' }),
    activity: element('section', 'activity-log', { 'data-activity-log': '' }),
    audit: element('section', 'tool-audit', { 'data-tool-audit': '' }),
  };
  const folded = element('details', '', {}, element('summary', '', {}, message('panelSees')), regions.diagnostics);
  const diagnostics = element('section', 'diagnostics', { 'data-diagnostics': '' }, folded);
  // A problem is not folded away: the diagnostics open by themselves when a warning or an
  // error appears in them (once per appearance, so the user can fold them again).
  let diagnosticsProblem = false;
  const unfoldOnProblem = () => {
    const problem = regions.diagnostics.querySelector('.tone-bad, .tone-warning') !== null;
    if (problem && !diagnosticsProblem) folded.open = true;
    diagnosticsProblem = problem;
  };
  app.append(regions.start, regions.hud, regions.status, regions.panel, regions.aside, regions.live, regions.activity, regions.audit, diagnostics);
  const activity = mountActivity(regions.activity);
  // The live Herdr tree, the Pinned Target and the tools' audit log read the companion
  // through this port (the worker's one companion connection, companion-client.js); it
  // connects again when the worker stops, and says hello for its tab on each connection.
  const { client: companion, post } = panelPort({
    onMessage: (received) => shown(received),
    onConnect: (send) => send({ type: TO_WORKER.panel_hello, tab_id: tabFromLocation() }),
  });
  mountLiveTree(regions.live, companion);
  mountToolAudit(regions.audit, companion);
  // Message type → its shape, the region it replaces and the renderer of that region.
  const RENDERERS = {
    [FROM_WORKER.hud]: { shape: record({ view: HUD_VIEW }), region: regions.hud, render: hudView },
    [FROM_WORKER.round_trip_result]: { shape: record({ status: STATUS_LINE }), region: regions.status, render: roundTrip },
    [FROM_WORKER.start_problem]: { shape: record({ error: optional(string), failed: optional(flag) }), region: regions.start, render: startProblemView },
    [FROM_WORKER.panel]: { shape: record({ view: PANEL_VIEW }), region: regions.panel, render: panelView },
    [FROM_WORKER.queue_aside]: { shape: record({ view: QUEUE_ASIDE }), region: regions.aside, render: queueAsideView },
    [FROM_WORKER.diagnostics]: {
      shape: record({ diagnostics: optional(PAGE_DIAGNOSTICS), fact_order: list(string) }),
      region: regions.diagnostics,
      render: pageDiagnostics,
    },
  };

  function shown(received) {
    const type = object(received) && string(received.type) ? received.type : '?';
    const renderer = Object.hasOwn(RENDERERS, type) ? RENDERERS[type] : null;
    const region = renderer?.region ?? regions.status;
    if (!renderer?.shape(received)) {
      console.warn(`herdr-continuity: the worker sent a ${type} message of unknown shape`, received);
      region.replaceChildren(element('p', 'line tone-bad', { 'data-unknown-shape': type }, message('panelUnknownShape', [type])));
      if (region === regions.diagnostics) unfoldOnProblem();
      return;
    }
    region.replaceChildren(...renderer.render(received, post, region));
    if (region === regions.diagnostics) unfoldOnProblem();
    if (type === FROM_WORKER.panel) activity.scope(received.view.tab?.scope_key ?? null);
  }
});

// The Control Center's live Herdr view (SPEC O1): the workspace → tab → pane → agent tree,
// the Pinned Target and its read-only actions. Display only: it changes nothing in Herdr,
// the chat or the continuity state. It reads the companion through the worker's one
// connection (companion-client.js; docs/PROTOCOL.md "Companion calls from the extension
// pages"): `companion_watch` brings the connection's state and the Herdr stream's events;
// on each connection it reads `herdr.workspaces`, `herdr.agents` and `herdr.panes`, and
// `herdr.pane_read` when the user asks for a pane's tail.
//
// Every message from the port is checked for the fields used (anything else is ignored);
// the pinned pane is kept in chrome.storage.local and is never followed by focus: it stays
// what the user chose, marked stale with the reason when its pane closes or another agent
// runs in it.
import './contracts.js';
import { button, element, errorText, message } from './page-dom.js';

const { settings, caps, companion_calls: { methods: METHODS } } = globalThis.herdrContracts;
export const PINNED_KEY = settings.pinned_key;
/** Lines the "Read last lines" action asks for. */
export const TAIL_LINES = caps.tail_lines;
/** Most items of one Herdr list the worker relays (the rest is counted as `cut`). */
const LIST_MAX = caps.runtime_list_items;
/** Shortest time between two reads of the lists that stream events ask for (ms). */
const RELOAD_GAP_MS = 1000;
/** After a read of the lists failed, how long until it is made again (ms). */
const LOAD_RETRY_MS = 5000;
/** Longest last-output line shown per pane, in characters. */
const LAST_LINE_MAX = 160;

const string = (value) => typeof value === 'string';
const object = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const optionalString = (value) => value == null || string(value);
const count = (value) => (Number.isInteger(value) && value > 0 ? value : 0);

/** The last non-blank line of a tail, clipped. */
function lastLine(tail) {
  const lines = tail.split('\n').map((line) => line.trimEnd()).filter((line) => line.trim() !== '');
  const line = lines.length ? lines[lines.length - 1] : '';
  return line.length > LAST_LINE_MAX ? `${line.slice(0, LAST_LINE_MAX - 1)}…` : line;
}

/** What the companion told us about Herdr: the lists as a read answered them, kept current
 * from the stream. */
export class HerdrModel {
  constructor() {
    this.workspaces = new Map(); // workspace_id → { workspace_id, label, number }
    this.panes = new Map(); // pane_id → { pane_id, workspace_id, tab_id, agent, status, cwd, last_line }
    this.hidden = { cut: 0, dropped: 0 }; // what the worker's relay did not show of the workspaces (and agents) read
    this.paneHidden = { cut: 0, dropped: 0 }; // and of the panes read
    this.eventsDropped = 0; // stream events the worker did not relay (out of their shape)
    // The tree shows what the worker's relay shows and counts what it cut; it knows how many
    // items were cut, not which. So the lists are read again when the stream adds an item
    // the tree has no place for and has not seen before (new, or one the relay cut: once
    // each, `overSeen`), or removes one while items are cut (a shown one's place is free,
    // or the count drops): the relay's answers say what is shown now and how many are not.
    this.reloadWanted = false;
    this.overSeen = new Set(); // ids the stream brought while their list was full
    this.closed = new Set(); // panes the stream said were removed (the pin's "closed")
  }

  /** True once after a stream event that wants the lists read again. */
  takeReload() {
    const wanted = this.reloadWanted;
    this.reloadWanted = false;
    return wanted;
  }

  /** The three lists as the relay answered a read, in place of what the tree held: each
   * pane keeps its last output line, and `keep` (the pinned pane) its entry when the panes
   * were cut and it is not among them. The agents only update the panes read (the panes'
   * list places them); the agents' cut is not counted, as their panes are the panes'. */
  loaded(workspaces, agents, panes, keep = null) {
    const before = this.panes;
    this.panes = new Map();
    this.workspaces.clear();
    this.hidden = { cut: count(workspaces?.cut), dropped: count(workspaces?.dropped) + count(agents?.dropped) };
    this.paneHidden = { cut: count(panes?.cut), dropped: count(panes?.dropped) };
    for (const ws of Array.isArray(workspaces?.workspaces) ? workspaces.workspaces : []) this.workspace(ws);
    for (const pane of Array.isArray(panes?.panes) ? panes.panes : []) this.pane(pane);
    for (const agent of Array.isArray(agents?.agents) ? agents.agents : []) if (this.panes.has(agent?.pane_id)) this.agentUpdate(agent);
    for (const pane of this.panes.values()) pane.last_line ||= before.get(pane.pane_id)?.last_line ?? '';
    if (keep !== null && before.has(keep) && !this.panes.has(keep) && this.paneHidden.cut > 0) {
      this.panes.set(keep, before.get(keep));
      this.paneHidden.cut -= 1; // one of the panes cut is the one kept
    }
    this.reloadWanted = false;
  }

  workspace(data) {
    if (!object(data) || !string(data.workspace_id)) return;
    if (this.overCap(this.workspaces, data.workspace_id)) return;
    const label = string(data.label) ? data.label : data.workspace_id;
    this.workspaces.set(data.workspace_id, { workspace_id: data.workspace_id, label, number: Number.isInteger(data.number) ? data.number : 0 });
  }

  /** True when `id` is new to `shown`, which already holds LIST_MAX: not shown, and counted
   * by the relay once the lists are read again (asked once per id). */
  overCap(shown, id) {
    if (shown.has(id) || shown.size < LIST_MAX) return false;
    if (!this.overSeen.has(id) && this.overSeen.size < 4 * LIST_MAX) {
      this.overSeen.add(id);
      this.reloadWanted = true;
    }
    return true;
  }

  /** A workspace or pane left Herdr: while any item is not shown, the lists are read
   * again, and every item over the cap may ask once more. */
  removed() {
    if (this.cut() === 0) return;
    this.reloadWanted = true;
    this.overSeen.clear();
  }

  /** Items of Herdr's lists not shown (the relay's cut in its last answers). */
  cut() {
    return this.hidden.cut + this.paneHidden.cut;
  }

  /** What the tree does not show: the relay's cut, and the panes it sent of a workspace it
   * cut (the lists are cut apart, so a pane may come without its workspace). */
  notShown() {
    let orphans = 0;
    for (const pane of this.panes.values()) if (!this.workspaces.has(pane.workspace_id)) orphans += 1;
    return this.cut() + orphans;
  }

  pane(data) {
    if (!object(data) || !string(data.pane_id) || !string(data.workspace_id)) return;
    if (this.overCap(this.panes, data.pane_id)) return;
    const before = this.panes.get(data.pane_id);
    this.closed.delete(data.pane_id);
    this.panes.set(data.pane_id, {
      pane_id: data.pane_id,
      workspace_id: data.workspace_id,
      tab_id: string(data.tab_id) ? data.tab_id : before?.tab_id ?? '',
      agent: optionalString(data.agent) ? data.agent ?? null : before?.agent ?? null,
      status: string(data.agent_status) ? data.agent_status : string(data.status) ? data.status : before?.status ?? 'unknown',
      cwd: string(data.cwd) ? data.cwd : before?.cwd ?? '',
      last_line: before?.last_line ?? '',
    });
  }

  /** A pane the stream removed. */
  paneGone(id) {
    if (this.closed.size >= 4 * LIST_MAX) this.closed.clear();
    this.closed.add(id);
    return this.panes.delete(id);
  }

  /** One stream event; true when the tree changed. A stream `hello` (the connection's
   * workspaces and agents, its cut counting both lists) is drawn, and the lists are read
   * for the counts. */
  apply(name, data) {
    if (!object(data)) return false;
    switch (name) {
      case 'hello':
        if (!Array.isArray(data.workspaces)) return false;
        this.workspaces.clear();
        for (const ws of data.workspaces) this.workspace(ws);
        if (Array.isArray(data.agents)) for (const agent of data.agents) if (this.panes.has(agent?.pane_id)) this.agentUpdate(agent);
        this.reloadWanted = true;
        return true;
      case 'workspace_upsert':
        this.workspace(data);
        return true;
      case 'workspace_removed':
        if (!string(data.workspace_id)) return false;
        this.workspaces.delete(data.workspace_id);
        for (const [id, pane] of this.panes) if (pane.workspace_id === data.workspace_id) this.paneGone(id);
        this.removed();
        return true;
      case 'pane_upsert':
        this.pane(data);
        return true;
      case 'pane_removed':
        if (!string(data.pane_id)) return false;
        this.removed();
        return this.paneGone(data.pane_id);
      case 'agent_working':
      case 'agent_settled':
        return this.agentUpdate(data);
      case 'agent_output': {
        const pane = string(data.pane_id) ? this.panes.get(data.pane_id) : null;
        if (!pane || !string(data.tail)) return false;
        pane.last_line = lastLine(data.tail);
        return true;
      }
      default:
        return false;
    }
  }

  agentUpdate(data) {
    if (!object(data) || !string(data.pane_id) || !string(data.workspace_id)) return false;
    const pane = this.panes.get(data.pane_id);
    if (!pane) {
      this.pane({ ...data, agent_status: data.status });
      return true;
    }
    if (optionalString(data.agent)) pane.agent = data.agent ?? null;
    if (string(data.status)) pane.status = data.status;
    if (string(data.cwd)) pane.cwd = data.cwd;
    return true;
  }

  /** Why the pinned pane is stale, or null when it is still what was pinned. A pane not
   * in the lists read while panes are cut may only be cut: it is not called closed then. */
  staleReason(pinned) {
    const pane = this.panes.get(pinned.pane_id);
    if (!pane) {
      return this.paneHidden.cut > 0 && !this.closed.has(pinned.pane_id) ? message('treePinnedNotListed', [String(LIST_MAX)]) : message('treePinnedClosed');
    }
    if ((pane.agent ?? null) !== (pinned.agent ?? null)) return message('treePinnedOtherAgent', [pane.agent ?? '—', pinned.agent ?? '—']);
    return null;
  }
}

/** The tree: workspaces (by Herdr's number) → tabs → panes, each pane with its Pin button;
 * first, what of Herdr's lists is not shown (cut at the worker's cap, or out of shape). */
function treeNodes(model, pinned, pin) {
  const dropped = model.hidden.dropped + model.paneHidden.dropped;
  const cut = model.notShown();
  const notes = [
    ...(cut ? [element('p', 'line tone-warning', { 'data-tree-cut': String(cut) }, message('treeCut', [String(cut), String(LIST_MAX)]))] : []),
    ...(dropped ? [element('p', 'line tone-warning', { 'data-tree-dropped': String(dropped) }, message('treeDropped', [String(dropped)]))] : []),
    ...(model.eventsDropped ? [element('p', 'line tone-warning', { 'data-tree-events-dropped': String(model.eventsDropped) }, message('treeEventsDropped', [String(model.eventsDropped)]))] : []),
  ];
  return [...notes, ...treeList(model, pinned, pin)];
}

function treeList(model, pinned, pin) {
  const workspaces = [...model.workspaces.values()].sort((a, b) => a.number - b.number || a.workspace_id.localeCompare(b.workspace_id));
  if (workspaces.length === 0) return [element('p', 'line', { 'data-tree-empty': '' }, message('treeEmpty'))];
  return [element('ul', 'tree', { 'data-tree': '', 'aria-label': message('treeTitle') }, ...workspaces.map((ws) => {
    const panes = [...model.panes.values()].filter((pane) => pane.workspace_id === ws.workspace_id);
    const tabs = [...new Set(panes.map((pane) => pane.tab_id))].sort();
    return element('li', '', { 'data-tree-workspace': ws.workspace_id },
      element('span', 'tree-label tree-workspace', {}, `${ws.label} (${ws.workspace_id})`),
      element('ul', '', {}, ...tabs.map((tab) => element('li', '', { 'data-tree-tab': tab },
        element('span', 'tree-label tree-tab', {}, message('treeTab', [tab || '—'])),
        element('ul', '', {}, ...panes.filter((pane) => pane.tab_id === tab).sort((a, b) => a.pane_id.localeCompare(b.pane_id)).map((pane) => {
          const isPinned = pinned?.pane_id === pane.pane_id;
          // One row per pane: a status dot (decorative; the status is also written out), the
          // agent, the pane id · status · cwd, and the last output line on one clipped line, so
          // streaming output never changes the row's height. The head is clipped in a narrow
          // panel: its title holds it in full.
          const agent = pane.agent ?? message('treeNoAgent');
          return element('li', 'pane', {
            'data-tree-pane': pane.pane_id, 'data-status': pane.status, 'data-agent': pane.agent ?? '',
          },
          element('span', 'status-dot', { 'aria-hidden': 'true' }),
          element('span', 'pane-head', { title: `${agent} · ${pane.pane_id} · ${pane.status} · ${pane.cwd}` },
            element('span', 'pane-agent', {}, agent),
            element('span', 'pane-meta', {}, ` · ${pane.pane_id} · ${pane.status} · ${pane.cwd}`)),
          isPinned
            ? element('span', 'pinned-mark', { 'data-pinned-marker': '' }, message('treePinnedMark'))
            : button(message('treePin'), { 'data-pin': pane.pane_id, 'aria-label': message('treePinLabel', [pane.pane_id]) }, () => pin(pane)),
          element('span', 'last-line', pane.last_line ? { 'data-last-line': '', title: pane.last_line } : { 'aria-hidden': 'true' }, pane.last_line || ' '));
        }))))));
  }))];
}

/** The Pinned Target with its read-only actions (inspect, read the last TAIL_LINES lines). */
function pinnedNodes(model, pinned, actions, output) {
  const nodes = [element('h2', '', {}, message('treePinnedTitle'))];
  if (!pinned) {
    nodes.push(element('p', 'line', { 'data-pinned-none': '' }, message('treePinnedNone')));
    return nodes;
  }
  const stale = model.staleReason(pinned);
  const pane = model.panes.get(pinned.pane_id);
  nodes.push(element('p', `line tone-${stale ? 'warning' : 'good'}`, {
    'data-pinned': pinned.pane_id, 'data-stale': stale ? 'true' : 'false', 'data-stale-reason': stale ?? '',
  }, stale
    ? message('treePinnedStale', [pinned.pane_id, stale])
    : message('treePinnedLive', [pinned.pane_id, pane?.agent ?? message('treeNoAgent'), pane?.status ?? ''])));
  nodes.push(element('div', 'actions', {},
    button(message('treeInspect'), { 'data-pinned-action': 'inspect' }, () => actions.inspect()),
    button(message('treeReadTail', [String(TAIL_LINES)]), { 'data-pinned-action': 'read' }, () => actions.read()),
    button(message('treeUnpin'), { 'data-pinned-action': 'unpin' }, () => actions.unpin())));
  nodes.push(output);
  return nodes;
}

/** Mounts the live view into `region` (the side panel's `section.live`); `companion` is the
 * side panel's CompanionClient. */
export function mountLiveTree(region, companion) {
  const model = new HerdrModel();
  let pinned = null;
  let state = { up: false, reason: null }; // the companion link, as companion_watch says
  let listError = null; // why the last read of the lists failed (read again soon), or null
  const output = element('pre', 'pane-tail', { 'data-pinned-output': '', tabindex: '0' });
  const status = element('p', 'line', { role: 'status', 'aria-live': 'polite', 'data-live-state': 'connecting' }, message('treeConnecting'));
  const treeRegion = element('div', 'tree-region', {});
  const pinnedRegion = element('div', 'pinned-card', {});
  region.replaceChildren(element('h2', '', {}, message('treeTitle')), status, treeRegion, pinnedRegion);
  // Keyboard: ↑/↓ (and Home/End) move between the tree's buttons; Tab still leaves the tree.
  treeRegion.addEventListener('keydown', (event) => {
    const keys = { ArrowDown: 1, ArrowUp: -1, Home: -Infinity, End: Infinity };
    if (!Object.hasOwn(keys, event.key)) return;
    const buttons = [...treeRegion.querySelectorAll('button')];
    const at = buttons.indexOf(document.activeElement);
    if (at < 0 || buttons.length === 0) return;
    const step = keys[event.key];
    const next = Number.isFinite(step) ? Math.min(buttons.length - 1, Math.max(0, at + step)) : step < 0 ? 0 : buttons.length - 1;
    buttons[next].focus();
    event.preventDefault();
  });

  let scheduled = null;
  const render = () => {
    scheduled = null;
    const up = state.up && listError === null;
    status.dataset.liveState = up ? 'up' : 'down';
    status.textContent = up ? message('treeLive')
      : state.up ? message('treeListsFailed', [listError, String(LOAD_RETRY_MS / 1000)]) : message('treeDown', [state.reason ?? '']);
    // The stream re-renders often: remember where the keyboard focus is, and the output's scroll.
    const focus = focusOf(document.activeElement);
    const scrollTop = output.scrollTop;
    treeRegion.replaceChildren(...treeNodes(model, pinned, pin));
    pinnedRegion.replaceChildren(...pinnedNodes(model, pinned, actions, output));
    output.scrollTop = scrollTop;
    restoreFocus(focus);
  };
  // Where the focus is, as something that survives a re-render: a pane's Pin button (with its
  // place among the tree's buttons), a Pinned card action, or the output.
  const focusOf = (active) => {
    if (!active) return null;
    if (treeRegion.contains(active) && active.hasAttribute('data-pin')) {
      return { pin: active.getAttribute('data-pin'), at: [...treeRegion.querySelectorAll('button')].indexOf(active) };
    }
    if (active === output) return { output: true };
    if (pinnedRegion.contains(active) && active.hasAttribute('data-pinned-action')) return { action: active.getAttribute('data-pinned-action'), pane: pinned?.pane_id ?? unpinnedPane };
    return null;
  };
  // Puts the focus back on the same control; when it is gone, on the nearest one that means the
  // same thing, so the keyboard never drops to <body>: a pane just pinned → its Unpin; a pane
  // that closed → the tree button now in its place; Unpin pressed → that pane's Pin button.
  const restoreFocus = (focus) => {
    if (!focus) return;
    const treeButtons = () => [...treeRegion.querySelectorAll('button')];
    const unpin = () => pinnedRegion.querySelector('[data-pinned-action="unpin"]');
    const paneButton = (paneId) => (paneId == null ? null : treeRegion.querySelector(`button[data-pin="${CSS.escape(paneId)}"]`));
    let target = null;
    if (focus.output) target = output.isConnected ? output : unpin();
    else if (focus.pin != null) {
      const buttons = treeButtons();
      target = paneButton(focus.pin) ?? (pinned?.pane_id === focus.pin ? unpin() : null) ?? buttons[Math.min(focus.at, buttons.length - 1)] ?? unpin();
    } else if (focus.action != null) {
      target = pinnedRegion.querySelector(`[data-pinned-action="${CSS.escape(focus.action)}"]`) ?? paneButton(focus.pane) ?? treeButtons()[0];
    }
    if (target && target !== document.activeElement) target.focus();
  };
  // Coalesced: a burst of events renders once (a timer, so a hidden panel does not pile up frames).
  const schedule = () => { if (!scheduled) scheduled = setTimeout(render, 50); };

  let unpinnedPane = null; // the pane just unpinned: its Pin button takes the focus from Unpin
  const savePinned = (value) => {
    unpinnedPane = pinned?.pane_id ?? null;
    pinned = value;
    const write = value ? chrome.storage.local.set({ [PINNED_KEY]: value }) : chrome.storage.local.remove(PINNED_KEY);
    Promise.resolve(write).catch((error) => { output.textContent = message('treePinSaveFailed', [errorText(error)]); });
    output.textContent = '';
    schedule();
  };
  const pin = (pane) => savePinned({ pane_id: pane.pane_id, workspace_id: pane.workspace_id, agent: pane.agent ?? null, pinned_at: Date.now() });
  // The lists read on each connection, and when a stream event wants it (HerdrModel
  // `reloadWanted`). One read at a time, at most one every RELOAD_GAP_MS: a burst of events
  // reads once more after the read in flight. The stream's events that come while a read
  // waits are drawn at once and applied again after its answers (an upsert or a removal
  // applied twice is the same), so an answer older than them does not undo them.
  let loading = null;
  let loadAgain = false;
  let lastLoad = -Infinity;
  let reloadTimer = null;
  let retryTimer = null;
  let during = null; // [name, data] of the events while a read waits, or null
  const reload = () => {
    if (loading) { loadAgain = true; return; }
    if (reloadTimer || !state.up) return;
    const wait = lastLoad + RELOAD_GAP_MS - performance.now();
    if (wait > 0) {
      reloadTimer = setTimeout(() => { reloadTimer = null; reload(); }, wait);
      return;
    }
    lastLoad = performance.now();
    loading = load().finally(() => {
      loading = null;
      if (loadAgain) { loadAgain = false; reload(); }
    });
  };
  const load = () => {
    during = [];
    return Promise.all([companion.call(METHODS.herdr_workspaces), companion.call(METHODS.herdr_agents), companion.call(METHODS.herdr_panes)])
      .then(([workspaces, agents, panes]) => {
        // What the worker did not show of the lists (docs/PROTOCOL.md, the relay).
        model.loaded(workspaces, agents, panes, pinned?.pane_id ?? null);
        for (const [name, data] of during) model.apply(name, data);
        if (model.takeReload()) loadAgain = true;
        listError = null;
        clearTimeout(retryTimer);
        retryTimer = null;
        schedule();
      }, (error) => {
        // Shown as the view being down, with why; read again while the link is up.
        listError = errorText(error).replace(/[.。]\s*$/, '');
        schedule();
        if (!retryTimer) retryTimer = setTimeout(() => { retryTimer = null; reload(); }, LOAD_RETRY_MS);
      })
      .finally(() => { during = null; });
  };
  companion.watch({
    onEvent: (name, data) => {
      if (model.apply(name, data)) schedule();
      if (during) {
        if (during.length < 4 * LIST_MAX) during.push([name, data]);
        else loadAgain = true;
      }
      if (model.takeReload()) reload();
    },
    onState: (up, reason, dropped) => {
      const changed = up !== state.up || reason !== state.reason;
      state = { up, reason };
      model.eventsDropped = count(dropped);
      if (changed) listError = null;
      schedule();
      if (up && changed) reload();
    },
  });
  const actions = {
    inspect: () => {
      const pane = model.panes.get(pinned.pane_id);
      output.dataset.kind = 'inspect';
      output.textContent = pane
        ? message('treeInspectPane', [pane.pane_id, pane.workspace_id, pane.tab_id, pane.agent ?? '—', pane.status, pane.cwd])
        : message('treePinnedClosed');
    },
    read: () => {
      output.dataset.kind = 'read';
      output.textContent = message('treeReading');
      companion.call(METHODS.herdr_pane_read, { pane_id: pinned.pane_id, lines: TAIL_LINES })
        .then((read) => {
          const text = string(read.text) ? read.text : '';
          output.textContent = text.split('\n').slice(-TAIL_LINES).join('\n') || message('treeTailEmpty');
        })
        .catch((error) => { output.textContent = message('treeReadFailed', [errorText(error)]); });
    },
    unpin: () => savePinned(null),
  };
  Promise.resolve(chrome.storage.local.get(PINNED_KEY))
    .then((items) => {
      const stored = items?.[PINNED_KEY];
      if (object(stored) && string(stored.pane_id) && string(stored.workspace_id) && optionalString(stored.agent)) pinned = stored;
      schedule();
    })
    .catch((error) => { output.textContent = message('treePinSaveFailed', [errorText(error)]); schedule(); });
  render();
}

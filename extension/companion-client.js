// The extension pages' way to the companion (issue 28: one companion client, the worker's).
// The side panel's live tree and audit log and the options page's storage limits call the
// companion over their `panel` port to the worker: `companion_call {id, method, params}` →
// `companion_answer {id, result}` or `{id, error: {code, detail, status?}}`. ext-core
// (`worker::calls`) checks the method against its allowlist, sends it on the worker's one
// native connection, answers `timed_out` or `not_connected` itself, and routes the answer
// back by id; this file only pairs answers with promises and turns a failure into an Error
// whose text is the locale's `companionCall_<code>` (the code is the core's). `watch()`
// asks for `companion_state {connected, status}` (and, in the side panel, the Herdr
// stream's events as `companion_event {event, data}`). The worker stops when idle (MV3) and
// its ports close: `panelPort` connects again after a short backoff (which wakes it), asks
// `companion_watch` again and fails only the calls waiting at that moment.
import './contracts.js';
import { message } from './page-dom.js';

const {
  ports: PORTS,
  messages: { panel_to_worker: TO_WORKER, worker_to_panel: FROM_WORKER },
  companion_calls: { failures: FAILURES },
  caps: { page_message_bytes: MAX_BYTES },
} = globalThis.herdrContracts;

const object = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const string = (value) => typeof value === 'string';

/** The text of a HUD status line (`{key, substitutions}`), or '' when there is none. */
export function statusText(status) {
  return object(status) && string(status.key) ? message(status.key, Array.isArray(status.substitutions) ? status.substitutions.map(String) : []) : '';
}

/** Why a call failed, as the core named it (a code it does not list reads as its last,
 * the companion's own error). */
function failureText(error) {
  const code = object(error) && FAILURES.includes(error.code) ? error.code : FAILURES[FAILURES.length - 1];
  const detail = object(error) && string(error.detail) ? error.detail : '';
  return message(`companionCall_${code}`, [statusText(error?.status) || detail]);
}

/** Calls over one `panel` port; feed it the port's messages with `received`. */
export class CompanionClient {
  constructor(post) {
    this.post = post;
    this.pending = new Map();
    this.next = 1;
    this.watchers = [];
    this.state = null; // [connected, reason] as last told
  }

  /** The companion's `result` of `method`, or an Error that says why there is none. */
  call(method, params = {}) {
    const id = String(this.next++);
    const request = { type: TO_WORKER.companion_call, id, method, params };
    if (new TextEncoder().encode(JSON.stringify(request)).length > MAX_BYTES) {
      return Promise.reject(new Error(message('companionCall_bad_request', [String(MAX_BYTES)])));
    }
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.post(request);
      } catch (error) {
        this.pending.delete(id);
        reject(error);
      }
    });
  }

  /** `onState(connected, reason, dropped)` now (once known) and on every change of the
   * worker's connection or of `dropped` (the stream events the worker did not relay); in the
   * side panel also `onEvent(name, data)` for the Herdr stream's events.
   * One `companion_watch` per port, however many watch. */
  watch({ onState, onEvent = () => {} }) {
    this.watchers.push({ onState, onEvent });
    if (this.watchers.length === 1) this.post({ type: TO_WORKER.companion_watch });
    else if (this.state) onState(...this.state);
  }

  tell(connected, reason, dropped = 0) {
    this.state = [connected, reason, dropped];
    for (const watcher of this.watchers) watcher.onState(connected, reason, dropped);
  }

  /** A message from the worker; true when it was one of the client's. */
  received(received) {
    if (!object(received)) return false;
    switch (received.type) {
      case FROM_WORKER.companion_answer: {
        const waiting = string(received.id) ? this.pending.get(received.id) : undefined;
        if (!waiting) return true;
        this.pending.delete(received.id);
        if (Object.hasOwn(received, 'result')) waiting.resolve(received.result);
        else waiting.reject(new Error(failureText(received.error)));
        return true;
      }
      case FROM_WORKER.companion_event:
        if (string(received.event)) for (const watcher of this.watchers) watcher.onEvent(received.event, received.data);
        return true;
      case FROM_WORKER.companion_state:
        this.tell(received.connected === true, statusText(received.status), Number.isInteger(received.stream_events_dropped) ? received.stream_events_dropped : 0);
        return true;
      default:
        return false;
    }
  }

  /** The port closed: every waiting call fails with `reason` (a later one goes on the next
   * port; until there is one it fails the same way). */
  dropped(reason) {
    for (const { reject } of this.pending.values()) reject(new Error(reason));
    this.pending.clear();
    this.tell(false, reason);
  }

  /** A new port: the watch is asked for again (its state and events come anew). */
  reconnected() {
    if (this.watchers.length > 0) this.post({ type: TO_WORKER.companion_watch });
  }
}

// The first reconnect waits this long, each next one twice as long up to the last (a
// message from the worker starts again from the first).
const RECONNECT_MS = [250, 500, 1_000, 2_000];

/** A `panel` port to the worker that connects again whenever it closes, and its client:
 * `{client, post}`. A message that is not the client's goes to `onMessage`; `onConnect(post)`
 * runs on each new port after the watch is asked again (the side panel's `panel_hello`).
 * `post` throws, with the reason, between a close and the next port. */
export function panelPort({ onMessage = () => {}, onConnect = () => {} } = {}) {
  const closedText = message('companionCallPortClosed');
  let port = null;
  let attempt = 0;
  const post = (command) => {
    if (!port) throw new Error(closedText);
    port.postMessage(command);
  };
  const client = new CompanionClient(post);
  const connect = () => {
    try {
      port = chrome.runtime.connect({ name: PORTS.panel });
    } catch (error) {
      // The extension was reloaded or removed: this page's context is gone for good.
      port = null;
      client.dropped(`${closedText} (${error?.message ?? error})`);
      return;
    }
    port.onMessage.addListener((received) => {
      attempt = 0;
      if (!client.received(received)) onMessage(received);
    });
    port.onDisconnect.addListener(() => {
      port = null;
      client.dropped(closedText);
      setTimeout(connect, RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]);
      attempt += 1;
    });
    client.reconnected();
    onConnect(post);
  };
  connect();
  return { client, post };
}

/** A `panel` port of its own and its client (the options page, which shows no view). */
export function companionPort() {
  return panelPort().client;
}

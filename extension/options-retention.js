// The options page's "Storage limits" section (issue 26 "Retention", SPEC W4; docs/PROTOCOL.md
// "Retention"): what the companion keeps, how big each store is, and the limits — each
// within the bounds the companion answers. The limits live in the companion's state.db, so
// this section opens its own native port (like the side panel's live tree): `hello`, then
// `retention.get`; Save sends `retention.set` with the changed limits. The companion checks
// the bounds again and names them when it refuses; nothing here decides what is reclaimed.
import './contracts.js';
import { button, element, errorText, message, statusRegion } from './page-dom.js';

const { protocol: { host: HOST, version: PROTOCOL }, retention } = globalThis.herdrContracts;
/** The limits in display order (docs/PROTOCOL.md "Retention"). */
const LIMITS = retention.limits;
const STORES = retention.stores;
const ANSWER_MS = 5_000;

/** A native port answering requests by id; `close()` ends it. */
function companionPort() {
  const port = chrome.runtime.connectNative(HOST);
  const pending = new Map();
  let next = 1;
  let closed = null;
  port.onMessage.addListener((received) => {
    const waiting = pending.get(received?.id);
    if (!waiting) return;
    pending.delete(received.id);
    if (received.error) waiting.reject(new Error(received.error.message ?? received.error.code));
    else waiting.resolve(received.result);
  });
  port.onDisconnect.addListener(() => {
    closed = chrome.runtime.lastError?.message ?? message('optionRetentionClosed');
    for (const { reject } of pending.values()) reject(new Error(closed));
    pending.clear();
  });
  return {
    request(method, params) {
      if (closed) return Promise.reject(new Error(closed));
      const id = `options-${next++}`;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        setTimeout(() => {
          if (pending.delete(id)) reject(new Error(message('optionRetentionNoAnswer')));
        }, ANSWER_MS);
        port.postMessage({ id, method, params });
      });
    },
    close: () => port.disconnect(),
  };
}

/** `1 234 567` bytes as KiB / MiB with one decimal. */
function bytesText(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The fieldset; it fills itself once the companion answers (or says why it cannot). */
export function retentionSection() {
  const state = statusRegion('retention-state', { id: 'retentionState' });
  const sizes = element('ul', 'retention-sizes', { id: 'retentionSizes' });
  const rows = element('div', 'retention-limits', { id: 'retentionLimits' });
  const status = statusRegion('retention-status', { id: 'retentionStatus' });
  const inputs = new Map();
  let bounds = {};
  let port = null;

  const render = (answer) => {
    bounds = answer.bounds ?? {};
    rows.replaceChildren(...LIMITS.map((name) => {
      const bound = bounds[name] ?? { min: 0, max: 0, default: 0 };
      const input = element('input', '', { id: `retention-${name}`, name, 'data-limit': name, type: 'number', min: String(bound.min), max: String(bound.max) });
      input.value = String(answer.limits?.[name] ?? bound.default);
      inputs.set(name, input);
      return element('label', 'setting', {}, element('span', 'caption', {}, message(`optionRetention_${name}`)), input,
        element('span', 'retention-bound', {}, message('optionRetentionBound', [String(bound.min), String(bound.max), String(bound.default)])));
    }));
    const byStore = new Map((answer.sizes ?? []).map((size) => [size.store, size]));
    sizes.replaceChildren(...STORES.map((store) => {
      const size = byStore.get(store) ?? { rows: 0, bytes: 0 };
      return element('li', '', { 'data-store': store },
        message('optionRetentionSize', [message(`optionRetentionStore_${store}`), String(size.rows), bytesText(size.bytes)]));
    }));
    save.disabled = false;
  };

  const connect = async () => {
    port?.close();
    port = companionPort();
    const hello = await port.request('hello', { protocol: PROTOCOL, extension_version: chrome.runtime.getManifest().version });
    if (hello?.compatible !== true || hello?.protocol !== PROTOCOL || !Array.isArray(hello?.capabilities) || !hello.capabilities.includes('retention.get')) {
      throw new Error(message('optionRetentionMismatch', [String(hello?.runtime_version ?? '?'), String(hello?.protocol ?? '?')]));
    }
    return port;
  };

  const load = async () => {
    save.disabled = true;
    try {
      const answer = await (await connect()).request('retention.get', {});
      render(answer);
      state.textContent = '';
    } catch (failure) {
      state.textContent = message('optionRetentionUnavailable', [errorText(failure)]);
    }
  };

  const save = button(message('optionRetentionSave'), { id: 'retentionSave' }, async () => {
    const limits = {};
    for (const name of LIMITS) {
      const input = inputs.get(name);
      const bound = bounds[name];
      const text = input?.value.trim() ?? '';
      const value = /^\d+$/.test(text) ? Number(text) : NaN;
      if (!bound || !(value >= bound.min && value <= bound.max)) {
        status.textContent = message('optionRetentionOutOfBounds', [message(`optionRetention_${name}`), String(bound?.min ?? '?'), String(bound?.max ?? '?')]);
        return;
      }
      limits[name] = value;
    }
    try {
      render(await (await connect()).request('retention.set', { limits }));
      status.textContent = message('optionRetentionSaved');
    } catch (failure) {
      status.textContent = message('optionRetentionSaveFailed', [errorText(failure)]);
    }
  });
  save.disabled = true;
  load();
  return element('fieldset', 'retention', { id: 'retention' }, element('legend', '', {}, message('optionRetentionHeading')),
    element('p', 'retention-help', {}, message('optionRetentionNote')), state, sizes, rows, save, status);
}

// The options page's "Storage limits" section (issue 26 "Retention", SPEC W4; docs/PROTOCOL.md
// "Retention"): what the companion keeps, how big each store is, and the limits — each
// within the bounds the companion answers. The limits live in the companion's state.db:
// this section calls the companion through the worker's one connection (companion-client.js,
// a `panel` port of the options page's own): `retention.get` each time the worker connects;
// Save sends `retention.set` with the changed limits. The companion checks the bounds again
// and names them when it refuses, and says when its reclaim goes on after its answer
// (`reclaiming`); nothing here decides what is reclaimed.
import './contracts.js';
import { button, element, errorText, message, statusRegion } from './page-dom.js';
import { companionPort } from './companion-client.js';

const { retention, companion_calls: { methods: METHODS } } = globalThis.herdrContracts;
/** The limits in display order (docs/PROTOCOL.md "Retention"). */
const LIMITS = retention.limits;
const STORES = retention.stores;

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
  const companion = companionPort();

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
    // A save's answer may leave the sizes out (best-effort once the limits are stored): the
    // ones shown stay.
    if (Array.isArray(answer.sizes)) {
      const byStore = new Map(answer.sizes.map((size) => [size.store, size]));
      sizes.replaceChildren(...STORES.map((store) => {
        const size = byStore.get(store) ?? { rows: 0, bytes: 0 };
        return element('li', '', { 'data-store': store },
          message('optionRetentionSize', [message(`optionRetentionStore_${store}`), String(size.rows), bytesText(size.bytes)]));
      }));
    }
    save.disabled = false;
  };

  const load = async () => {
    save.disabled = true;
    try {
      const answer = await companion.call(METHODS.retention_get);
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
      const answer = await companion.call(METHODS.retention_set, { limits });
      render(answer);
      // `reclaiming`: the companion stored the limits and goes on reclaiming after it answered.
      status.textContent = message(answer.reclaiming === true ? 'optionRetentionSavedReclaiming' : 'optionRetentionSaved');
    } catch (failure) {
      status.textContent = message('optionRetentionSaveFailed', [errorText(failure)]);
    }
  });
  save.disabled = true;
  // Read when the worker is connected (again); while it is not, say why (the HUD's line).
  companion.watch({
    onState: (connected, reason) => {
      if (connected) load();
      else {
        save.disabled = true;
        state.textContent = message('optionRetentionUnavailable', [reason]);
      }
    },
  });
  return element('fieldset', 'retention', { id: 'retention' }, element('legend', '', {}, message('optionRetentionHeading')),
    element('p', 'retention-help', {}, message('optionRetentionNote')), state, sizes, rows, save, status);
}

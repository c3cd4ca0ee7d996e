// The options page (SPEC O4): one labelled input per entry of SETTINGS, loaded from and
// saved to chrome.storage.sync. The worker reads the stored values (and ext-core clamps
// them again), so this page only keeps what a user types within each setting's range.
import { element, errorText, message, startPage, statusRegion } from './page-dom.js';

/**
 * Every setting the page shows, in display order: `key` in chrome.storage.sync, `label`
 * (its i18n key), `kind` (one of KINDS) with its default and, for numbers, the range
 * (defaults from REFERENCE.md §2; SPEC P3, P5, M2, O4). A new setting is one line here
 * (and a new kind one entry of KINDS).
 */
const SETTINGS = [
  { key: 'progressTickSec', label: 'optionProgressTickSec', kind: 'seconds', default: 60, min: 5, max: 3600 },
  { key: 'progressFallbackSec', label: 'optionProgressFallbackSec', kind: 'seconds', default: 1200, min: 60, max: 86_400 },
  { key: 'allowProjectAuto', label: 'optionAllowProjectAuto', kind: 'flag', default: false },
];

/**
 * Clamps a whole number typed by the user into `min..=max`; null when the text is not a
 * whole number (the page then shows an error and saves nothing).
 */
function acceptWhole(text, { min, max }) {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) return null;
  return Math.min(Math.max(Number(trimmed), min), max);
}

/**
 * How each kind of setting is shown (`show`: the input's attributes and stored value) and
 * read back (`read`: `{value}` to save, or `{error}` to show instead of saving).
 */
const KINDS = {
  seconds: {
    show(input, spec, stored) {
      Object.assign(input, { type: 'number', min: String(spec.min), max: String(spec.max) });
      input.value = String(typeof stored === 'number' ? Math.max(0, Math.trunc(stored)) : spec.default);
    },
    read(input, spec) {
      const value = acceptWhole(input.value, spec);
      if (value === null) return { error: message('optionNotANumber', [String(spec.min), String(spec.max)]) };
      input.value = String(value);
      return { value };
    },
  },
  flag: {
    show(input, spec, stored) {
      input.type = 'checkbox';
      input.checked = typeof stored === 'boolean' ? stored : spec.default;
    },
    read: (input) => ({ value: input.checked }),
  },
};

/** One `<label class=setting>` row: caption and input; a change saves that one key. */
function settingRow(spec, stored, status) {
  const kind = KINDS[spec.kind];
  const input = element('input', '', { id: spec.key, name: spec.key });
  kind.show(input, spec, stored[spec.key]);
  input.addEventListener('change', async () => {
    const { value, error } = kind.read(input, spec);
    if (error) {
      status.textContent = error;
      return;
    }
    try {
      await chrome.storage.sync.set({ [spec.key]: value });
      status.textContent = message('optionSaved');
    } catch (failure) {
      status.textContent = message('optionSaveFailed', [errorText(failure)]);
    }
  });
  return element('label', 'setting', {}, element('span', 'caption', {}, message(spec.label)), input);
}

startPage((app) => {
  const form = element('form', 'settings');
  const status = statusRegion('save-status');
  app.append(form, status);
  const defaults = Object.fromEntries(SETTINGS.map((spec) => [spec.key, spec.default]));
  chrome.storage.sync.get(defaults)
    .catch(() => defaults)
    .then((stored) => form.append(...SETTINGS.map((spec) => settingRow(spec, stored, status))));
});

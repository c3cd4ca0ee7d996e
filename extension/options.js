// The options page (SPEC O4): one labelled input per entry of SETTINGS, loaded from and
// saved to chrome.storage.sync. The worker reads the stored values (and ext-core clamps
// them again), so this page only keeps what a user types within each setting's range.
//
// Every key, default and range here is ext-core's (`herdrContracts`, generated from
// ext-core/src/contracts.rs): the page checks that a value is a whole number in that range
// so a typo is named at once, and the worker validates every stored record again with
// ext-core's rule, which is the one that counts (a refused record falls back to the
// defaults and the HUD says so).
import './contracts.js';
import { button, element, errorText, message, startPage, statusRegion } from './page-dom.js';
import { retentionSection } from './options-retention.js';

const { settings: CONTRACT_SETTINGS, caps: CAPS, profiles: PROFILES, messages: MESSAGES } = globalThis.herdrContracts;

/**
 * Every setting the page shows, in display order: `key` in chrome.storage.sync, `label`
 * (its i18n key), `kind` (one of KINDS) with its default and, for numbers, the range
 * (SPEC P3, P5, M2, O4). A new setting is one entry of ext-core's contracts (and a new kind
 * one entry of KINDS).
 */
const SETTINGS = CONTRACT_SETTINGS.sync;

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

// ---- The turn-end judge (O4, M4, M7): its use and the bound on automatic continues, one
// record in chrome.storage.local under JUDGE_KEY (ext_core::semantic_auto::SETTINGS_KEY),
// which the worker reads and ext-core validates again (a bad record falls back to the
// defaults there too, and the HUD says so). The queue's limits are fixed and only shown
// (ext_core::queue MAX_ITEMS, MAX_MERGED_CHARS, MAX_AGE_MS).
const JUDGE_KEY = CONTRACT_SETTINGS.judge.key;
const MAX_CONTINUES = CONTRACT_SETTINGS.judge.max_continues;
const JUDGE_DEFAULTS = { mode: CONTRACT_SETTINGS.judge.default_mode, max_continues: MAX_CONTINUES.default };
/** Each judge mode's label (its i18n key). */
const JUDGE_LABELS = { off: 'optionJudgeOff', manual_only: 'optionJudgeManual', in_auto: 'optionJudgeInAuto' };
const JUDGE_MODES = CONTRACT_SETTINGS.judge.modes.map((mode) => [mode, JUDGE_LABELS[mode]]);
const QUEUE_LIMITS = { items: CAPS.queue_items, chars: CAPS.queue_merged_chars, days: CAPS.queue_max_age_days };

/** The stored judge record read as the core reads it: `{settings, problem}` (a problem code). */
function readJudge(text) {
  if (typeof text !== 'string') return { settings: { ...JUDGE_DEFAULTS }, problem: null };
  let record;
  try { record = JSON.parse(text); } catch { return { settings: { ...JUDGE_DEFAULTS }, problem: 'not_json' }; }
  const settings = { ...JUDGE_DEFAULTS };
  let problem = null;
  if (JUDGE_MODES.some(([mode]) => mode === record?.mode)) settings.mode = record.mode;
  else problem = 'bad_mode';
  const max = record?.max_continues;
  if (Number.isInteger(max) && max >= MAX_CONTINUES.min && max <= MAX_CONTINUES.max) settings.max_continues = max;
  else problem ??= 'bad_max';
  return { settings, problem };
}

/** The judge fieldset: judge use, the bound, the queue limits and its own note line. */
async function judgeSection() {
  const stored = await chrome.storage.local.get(JUDGE_KEY).then((items) => items[JUDGE_KEY], () => undefined);
  const { settings, problem } = readJudge(stored);
  // Announced like the page's save status, but not a second [role=status].
  const note = element('p', 'judge-note', { 'aria-live': 'polite' }, problem ? message('optionJudgeReset', [message(`judgeProblem_${problem}`)]) : '');
  const mode = element('select', '', { id: 'judgeMode' },
    ...JUDGE_MODES.map(([value, label]) => element('option', '', { value }, message(label))));
  mode.value = settings.mode;
  const max = element('input', '', { id: 'maxContinues', type: 'number', min: String(MAX_CONTINUES.min), max: String(MAX_CONTINUES.max) });
  max.value = String(settings.max_continues);
  const save = async () => {
    // Not clamped like the settings above: the core refuses a bound outside 1–10.
    const text = max.value.trim();
    const value = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!(value >= MAX_CONTINUES.min && value <= MAX_CONTINUES.max)) {
      note.textContent = message('optionNotAWholeNumber', [String(MAX_CONTINUES.min), String(MAX_CONTINUES.max)]);
      return;
    }
    try {
      await chrome.storage.local.set({ [JUDGE_KEY]: JSON.stringify({ mode: mode.value, max_continues: value }) });
      note.textContent = message('optionSaved');
    } catch (failure) {
      note.textContent = message('optionSaveFailed', [errorText(failure)]);
    }
  };
  mode.addEventListener('change', save);
  max.addEventListener('change', save);
  const row = (label, control) => element('label', 'setting', {}, element('span', 'caption', {}, message(label)), control);
  const limits = element('p', 'queue-limits', { id: 'queueLimits' },
    message('optionQueueLimits', [String(QUEUE_LIMITS.items), String(QUEUE_LIMITS.chars), String(QUEUE_LIMITS.days)]));
  return element('fieldset', 'judge', {}, element('legend', '', {}, message('optionJudgeHeading')),
    row('optionJudgeMode', mode), row('optionMaxContinues', max), limits, note);
}

// ---- Stuck pages and page health (S4, S7, H1, H3, H4): one record in chrome.storage.local
// under RECOVERY_KEY (ext_core::recovery_config::SETTINGS_KEY) with the fields of
// ext_core::recovery_config::FIELDS — the same names, ranges and defaults (REFERENCE §2).
// A value that is not a whole number in its range, or a high threshold not above its warn
// one, is named with its range and nothing is saved; the worker validates again.
const RECOVERY_KEY = CONTRACT_SETTINGS.recovery.key;
const RECOVERY_FIELDS = CONTRACT_SETTINGS.recovery.fields;

/** The record from the inputs, or the first field that is out of range with its range. */
function readRecovery(inputs) {
  const record = {};
  for (const field of RECOVERY_FIELDS) {
    const text = inputs[field.name].value.trim();
    const value = /^\d+$/.test(text) ? Number(text) : NaN;
    const min = field.above ? Math.max(field.min, record[field.above] + 1) : field.min;
    if (!(value >= min && value <= field.max)) return { error: { field, min } };
    record[field.name] = value;
  }
  return { record };
}

/** The thresholds fieldset: one number input per field, saved whole on any change. */
async function recoverySection() {
  const text = await chrome.storage.local.get(RECOVERY_KEY).then((items) => items[RECOVERY_KEY], () => undefined);
  let stored = {};
  try { stored = typeof text === 'string' ? JSON.parse(text) ?? {} : {}; } catch { stored = {}; }
  const note = element('p', 'recovery-note', { id: 'recoveryStatus', 'aria-live': 'polite' }, '');
  const inputs = {};
  const save = async () => {
    const { record, error } = readRecovery(inputs);
    if (error) {
      note.textContent = message('optionRecoveryOutOfRange', [message(`optionRecovery_${error.field.name}`), String(error.min), String(error.field.max)]);
      note.dataset.field = error.field.name;
      return;
    }
    delete note.dataset.field;
    try {
      await chrome.storage.local.set({ [RECOVERY_KEY]: JSON.stringify(record) });
      note.textContent = message('optionRecoverySaved');
    } catch (failure) {
      note.textContent = message('optionSaveFailed', [errorText(failure)]);
    }
  };
  const rows = RECOVERY_FIELDS.map((field) => {
    const value = Number.isInteger(stored[field.name]) ? stored[field.name] : field.default;
    const input = element('input', '', { id: field.name, name: field.name, type: 'number', min: String(field.min), max: String(field.max) });
    input.value = String(value);
    input.addEventListener('change', save);
    inputs[field.name] = input;
    return element('label', 'setting', {}, element('span', 'caption', {}, message(`optionRecovery_${field.name}`)), input);
  });
  return element('fieldset', 'recovery', { id: 'recoverySettings' }, element('legend', '', {}, message('optionRecoveryHeading')),
    element('p', 'recovery-help', {}, message('optionRecoveryNote')), ...rows, note);
}

// ---- Trusted typing for the Herdr App (docs/PROTOCOL.md "The Herdr App"): ChatGPT opens
// its App picker only for real key presses, so the worker types `@<keyword>` into the chat's
// composer through chrome.debugger — only after the user turns it on here. The switch is
// `trustedTypingAllowed` in chrome.storage.local (worker.js reads it on every request); the
// `debugger` permission itself is granted with the extension (Chrome does not let an
// extension ask for `debugger` later), so the state shown is both: allowed here and granted.
const TRUSTED_TYPING_KEY = CONTRACT_SETTINGS.trusted_typing_key;

async function trustedTypingState() {
  const [allowed, granted] = await Promise.all([
    chrome.storage.local.get(TRUSTED_TYPING_KEY).then((items) => items?.[TRUSTED_TYPING_KEY] === true, () => false),
    Promise.resolve(chrome.permissions?.contains?.({ permissions: ['debugger'] })).then(Boolean, () => false),
  ]);
  if (!granted) return 'not_granted';
  return allowed ? 'on' : 'off';
}

/** The section: why, what is typed, the browser's debugging bar, the state and one button. */
async function trustedTypingSection() {
  const state = element('p', 'trusted-typing-state', { id: 'trustedTypingState', 'aria-live': 'polite' });
  const note = element('p', 'trusted-typing-note', { id: 'trustedTypingNote', 'aria-live': 'polite' });
  const toggle = button('', { id: 'trustedTypingToggle' }, async () => {
    const turnOn = toggle.dataset.state !== 'on';
    try {
      if (turnOn) await chrome.storage.local.set({ [TRUSTED_TYPING_KEY]: true });
      else await chrome.storage.local.remove(TRUSTED_TYPING_KEY);
      note.textContent = message(turnOn ? 'optionTrustedTypingAllowed' : 'optionTrustedTypingRevoked');
    } catch (failure) {
      note.textContent = message('optionSaveFailed', [errorText(failure)]);
    }
    await show();
  });
  const show = async () => {
    const now = await trustedTypingState();
    state.dataset.state = now;
    toggle.dataset.state = now;
    state.textContent = message(`optionTrustedTypingState_${now}`);
    toggle.textContent = message(now === 'on' ? 'optionTrustedTypingRevoke' : 'optionTrustedTypingGrant');
    toggle.disabled = now === 'not_granted';
  };
  await show();
  return element('fieldset', 'trusted-typing', { id: 'trustedTyping' }, element('legend', '', {}, message('optionTrustedTypingHeading')),
    element('p', 'trusted-typing-why', {}, message('optionTrustedTypingWhy')),
    element('p', 'trusted-typing-what', {}, message('optionTrustedTypingWhat')),
    element('p', 'trusted-typing-bar', {}, message('optionTrustedTypingBar')),
    state, toggle, note);
}

// ---- Site profiles (issue 25; docs/PROTOCOL.md "Site profile files"): per site the
// profile in force — built in, imported here, or a file in the companion home — with its
// version and date; "Import…" sends a profile file to the worker (`profile_import`), which
// validates it in ext-core and keeps it in chrome.storage.local only when it passes;
// "Export" saves the profile in force (`profile_get`) as `<site>-profile.json`; "Reset to
// built-in" drops the import (`profile_reset`). The validation of record is ext-core's
// (sites/file.rs): this page only adds what a browser can tell and ext-core cannot — that
// every selector parses as CSS here — and refuses such a file before sending it.
/** Each site's name as its chats show it (the sites are ext-core's). */
const SITE_NAMES = { chatgpt: 'ChatGPT', zai: 'Z.ai', deepseek: 'DeepSeek' };
const PROFILE_SITES = PROFILES.sites.map((site) => [site, SITE_NAMES[site] ?? site]);
/** Where the worker keeps imports (`{<site>: {text, imported_at}}`): watched to refresh. */
const PROFILE_OVERRIDES_KEY = CONTRACT_SETTINGS.profile_overrides_key;
const PROFILE_MAX_BYTES = CAPS.profile_file_bytes;
const PROFILE_SOURCES = PROFILES.sources;
/** What ext-core refuses in a selector by itself (and names better): not parsed here. */
const CODE_IN_SELECTOR = /[{};<\u0000]|javascript:|url\(/i;

/** One request to the worker: `{answer}` (an object), or `{failed}` (a text to show). */
async function askWorker(request) {
  try {
    const answer = await chrome.runtime.sendMessage(request);
    if (answer && typeof answer === 'object') return { answer };
    return { failed: message('optionProfileNoAnswer', [message('optionProfileNoAnswerEmpty')]) };
  } catch (failure) {
    return { failed: message('optionProfileNoAnswer', [errorText(failure)]) };
  }
}

/**
 * Every selector of a profile file with its JSON path, in file order: detection rules,
 * fact probes, `never`, `disabled`, the App mention probes. Values that are not strings
 * are skipped: ext-core names those.
 */
function* profileSelectors(profile) {
  const strings = function* (list, where) {
    if (!Array.isArray(list)) return;
    for (const [i, css] of list.entries()) if (typeof css === 'string') yield [`${where}[${i}]`, css];
  };
  const probes = function* (list, where) {
    if (!Array.isArray(list)) return;
    for (const [i, probe] of list.entries()) if (typeof probe?.css === 'string') yield [`${where}[${i}].css`, probe.css];
  };
  if (Array.isArray(profile.generations)) {
    for (const [g, generation] of profile.generations.entries()) {
      for (const rule of ['all', 'any', 'none']) yield* strings(generation?.detect?.[rule], `generations[${g}].detect.${rule}`);
    }
  }
  if (profile.facts && typeof profile.facts === 'object') {
    for (const [fact, chain] of Object.entries(profile.facts)) yield* probes(chain, `facts.${fact}`);
  }
  yield* strings(profile.never, 'never');
  yield* strings(profile.disabled, 'disabled');
  const apps = profile.app_mentions;
  if (apps && typeof apps === 'object') {
    yield* probes(apps.pills, 'app_mentions.pills');
    yield* probes(apps.picker, 'app_mentions.picker');
    if (typeof apps.option === 'string') yield ['app_mentions.option', apps.option];
  }
}

/**
 * The first selector of `text` (a profile file) this browser cannot parse, as a problem
 * line (`facts.send[2].css: …`), or null. Text that is not a JSON object, and selectors
 * ext-core refuses by itself (code-bearing characters), are left to ext-core.
 */
function unparsableSelector(text) {
  let profile;
  try { profile = JSON.parse(text); } catch { return null; }
  if (!profile || typeof profile !== 'object') return null;
  const probe = document.createDocumentFragment();
  for (const [where, css] of profileSelectors(profile)) {
    if (css.trim() === '' || CODE_IN_SELECTOR.test(css)) continue;
    try {
      probe.querySelector(css);
    } catch {
      return message('optionProfileSelectorUnparsable', [where]);
    }
  }
  return null;
}

/** The profile of an answer as an object (the worker may send it as JSON text). */
function profileOf(answer) {
  if (typeof answer?.profile === 'string') {
    try { return JSON.parse(answer.profile); } catch { return null; }
  }
  return answer?.profile && typeof answer.profile === 'object' ? answer.profile : null;
}

/** One site's block: what is in force, Import… / Export / Reset, its alert and its note. */
function profileSite([site, name]) {
  const source = element('span', 'profile-source', { 'data-profile-source': '' }, message('optionProfileLoading'));
  const version = element('span', 'profile-version', { 'data-profile-version': '' });
  const date = element('span', 'profile-date', { 'data-profile-date': '' });
  const problem = element('p', 'profile-problem', { 'data-profile-problem': '' });
  const hint = element('p', 'profile-hint', { 'data-profile-hint': '' });
  // role=alert: a refused import is announced at once (and is empty otherwise).
  const error = element('p', 'profile-error', { role: 'alert', 'data-profile-error': '' });
  // Announced like the page's save status, but not a second [role=status].
  const note = element('p', 'profile-note', { 'aria-live': 'polite', 'data-profile-note': '' });
  const inputId = `profileImport-${site}`;
  const input = element('input', 'profile-import', {
    id: inputId, type: 'file', accept: '.json,application/json', 'data-profile-import': '', 'aria-describedby': 'profilesHelp',
  });
  const importLabel = element('label', 'profile-import-label', { for: inputId }, message('optionProfileImport'));
  const say = (line, text) => { line.textContent = text; };
  const refuse = (text) => { say(note, ''); say(error, text); };

  const refresh = async () => {
    let { answer, failed } = await askWorker({ type: MESSAGES.runtime_to_worker.profile_get, site });
    if (answer?.ok === false) {
      failed = message('optionProfileGetRefused', [String(answer.problem ?? '?')]);
      answer = null;
    }
    const profile = profileOf(answer);
    const from = PROFILE_SOURCES.includes(answer?.source) ? answer.source : '';
    source.dataset.profileSource = from;
    source.textContent = from ? message(`optionProfileSource_${from}`) : message('optionProfileSourceUnknown');
    version.dataset.profileVersion = typeof profile?.version === 'string' ? profile.version : '';
    version.textContent = profile?.version === 'builtin' ? message('optionProfileVersionBuiltin')
      : message('optionProfileVersion', [version.dataset.profileVersion || '?']);
    date.dataset.profileDate = typeof profile?.date === 'string' ? profile.date : '';
    date.textContent = message('optionProfileDate', [date.dataset.profileDate || '?']);
    say(problem, typeof answer?.problem === 'string' && answer.problem ? message('optionProfileNotInForce', [answer.problem]) : '');
    say(hint, from === 'companion' ? message('optionProfileCompanionHint', [site]) : '');
    // Reset removes this page's import: there is one to remove when it is in force, or
    // when it is stored but refused (its problem starts `options:`); a companion file is
    // removed from the companion home, not here.
    reset.disabled = from !== 'options' && !String(answer?.problem ?? '').startsWith('options:');
    exportButton.disabled = !profile;
    if (failed) say(error, failed);
  };

  input.addEventListener('change', async () => {
    const file = input.files?.[0];
    input.value = ''; // the same file can be picked again after a fix
    if (!file) return;
    say(error, '');
    if (file.size > PROFILE_MAX_BYTES) {
      refuse(message('optionProfileRefused', [file.name, message('optionProfileTooLarge', [String(PROFILE_MAX_BYTES / 1024)])]));
      return;
    }
    let text;
    try {
      text = await file.text();
    } catch (failure) {
      refuse(message('optionProfileRefused', [file.name, message('optionProfileUnreadable', [errorText(failure)])]));
      return;
    }
    const unparsable = unparsableSelector(text);
    if (unparsable) {
      refuse(message('optionProfileRefused', [file.name, unparsable]));
      return;
    }
    const { answer, failed } = await askWorker({ type: MESSAGES.runtime_to_worker.profile_import, site, text });
    if (failed || answer.ok !== true) {
      refuse(failed ?? message('optionProfileRefused', [file.name, typeof answer.problem === 'string' ? answer.problem : '?']));
      return;
    }
    say(error, '');
    say(note, message('optionProfileImported', [String(answer.version ?? '?'), String(answer.date ?? '?')]));
    await refresh();
  });

  const exportButton = button(message('optionProfileExport'), { 'data-profile-export': '' }, async () => {
    say(error, '');
    const { answer, failed } = await askWorker({ type: MESSAGES.runtime_to_worker.profile_get, site });
    const profile = profileOf(answer);
    if (failed || !profile) {
      const why = failed ?? (answer?.ok === false ? String(answer.problem ?? '?') : message('optionProfileNoProfile'));
      say(error, message('optionProfileExportFailed', [why]));
      return;
    }
    const fileName = `${site}-profile.json`;
    const url = URL.createObjectURL(new Blob([`${JSON.stringify(profile, null, 2)}\n`], { type: 'application/json' }));
    const link = element('a', '', { href: url, download: fileName, hidden: '' });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000); // after the download has taken it
    say(note, message('optionProfileExported', [fileName]));
  });

  const reset = button(message('optionProfileReset'), { 'data-profile-reset': '' }, async () => {
    say(error, '');
    const { answer, failed } = await askWorker({ type: MESSAGES.runtime_to_worker.profile_reset, site });
    if (failed || answer.ok === false) {
      say(error, message('optionProfileResetFailed', [failed ?? String(answer.problem ?? answer.error ?? '?')]));
      return;
    }
    say(note, message('optionProfileResetDone'));
    await refresh();
  });

  const block = element('section', 'profile-site', { 'data-profile-site': site, 'aria-labelledby': `profileHeading-${site}` },
    element('h3', '', { id: `profileHeading-${site}` }, name),
    element('p', 'profile-in-force', {}, element('span', 'caption', {}, message('optionProfileInForce')), ' ', source, ' · ', version, ' · ', date),
    problem, hint,
    element('div', 'actions profile-actions', {}, importLabel, input, exportButton, reset),
    error, note);
  block.refresh = refresh;
  return block;
}

/** The fieldset: what a profile is, then one block per site; storage changes refresh it. */
function profilesSection() {
  const sites = PROFILE_SITES.map(profileSite);
  const refreshAll = () => Promise.all(sites.map((site) => site.refresh()));
  chrome.storage.onChanged?.addListener?.((changes, area) => {
    if (area === 'local' && PROFILE_OVERRIDES_KEY in changes) refreshAll();
  });
  refreshAll();
  return element('fieldset', 'profiles', { id: 'siteProfiles' }, element('legend', '', {}, message('optionProfilesHeading')),
    element('p', 'profiles-help', { id: 'profilesHelp' }, message('optionProfilesNote')), ...sites);
}

startPage((app) => {
  const form = element('form', 'settings');
  const status = statusRegion('save-status');
  app.append(form, status);
  judgeSection().then((section) => app.append(section)).then(recoverySection).then((section) => app.append(section))
    .then(trustedTypingSection).then((section) => app.append(section))
    .then(() => app.append(profilesSection()))
    .then(() => app.append(retentionSection()));
  const defaults = Object.fromEntries(SETTINGS.map((spec) => [spec.key, spec.default]));
  chrome.storage.sync.get(defaults)
    .catch(() => defaults)
    .then((stored) => form.append(...SETTINGS.map((spec) => settingRow(spec, stored, status))));
});

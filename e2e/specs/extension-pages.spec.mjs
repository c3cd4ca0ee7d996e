// The extension pages' JS renderers (extension/sidepanel.js, extension/options.js) on
// their own, in real Chromium: the pages are served from extension/ with a stand-in
// `chrome` (a panel port the test drives, chrome.i18n from _locales/en, an in-memory
// chrome.storage.sync), so the test plays the worker. SPEC O1 (Control Center), O4
// (options), B1 (binding from the panel). The pages with the real worker and companion
// are covered by continuity-actions, continuity-progress and site-diagnostics.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { closeContexts, test, expect } from '../lib/test.mjs';
import { REPO_ROOT } from '../lib/paths.mjs';

const ORIGIN = 'https://pages.herdr.test';
const EXTENSION_SRC = path.join(REPO_ROOT, 'extension');
const MESSAGES = JSON.parse(readFileSync(path.join(EXTENSION_SRC, '_locales', 'en', 'messages.json'), 'utf8'));
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

// Runs in the page before its scripts: the stand-in chrome API. `window.__herdr` holds the
// messages the page posted and the stored settings, and sends messages as the worker.
function installChrome({ messages, stored, storedLocal = {}, failSet, profiles = null }) {
  const herdr = { posted: [], listeners: [], sync: { ...stored }, local: { ...storedLocal }, warnings: [] };
  // The worker's side of the Site profiles messages (contract: docs/PROTOCOL.md "Site
  // profile overrides"): `profiles` is site → the built-in `{profile, source}`; an import
  // answers `herdr.importAnswer` (set by the test) and, when it is ok, puts the file in
  // force; every request is kept in `herdr.requests`. Without `profiles` the worker does
  // not answer (as a worker that does not know the messages).
  herdr.requests = [];
  herdr.builtin = profiles;
  herdr.profiles = profiles && JSON.parse(JSON.stringify(profiles));
  herdr.importAnswer = null;
  const answerProfile = async (request) => {
    herdr.requests.push(JSON.parse(JSON.stringify(request)));
    if (!herdr.profiles) throw new Error('Could not establish connection. Receiving end does not exist.');
    const { site } = request;
    if (request.type === 'profile_get') return herdr.profiles[site];
    if (request.type === 'profile_import') {
      if (herdr.importAnswer?.ok) herdr.profiles[site] = { profile: JSON.parse(request.text), source: 'options' };
      return herdr.importAnswer;
    }
    if (request.type === 'profile_reset') {
      herdr.profiles[site] = JSON.parse(JSON.stringify(herdr.builtin[site]));
      return { ok: true };
    }
    return undefined;
  };
  herdr.send = (message) => herdr.listeners.forEach((listener) => listener(message));
  const warn = console.warn.bind(console);
  console.warn = (...args) => { herdr.warnings.push(String(args[0])); warn(...args); };
  const getMessage = (key, substitutions = []) => {
    const entry = messages[key];
    return entry ? entry.message.replace(/\$(\d)/g, (_, n) => substitutions[n - 1] ?? '') : '';
  };
  // chrome.storage.onChanged for the local area, as Chrome fires it after a write.
  herdr.storageListeners = [];
  herdr.changed = (items) => {
    const changes = Object.fromEntries(Object.keys(items).map((key) => [key, { newValue: items[key] }]));
    herdr.storageListeners.forEach((listener) => listener(changes, 'local'));
  };
  window.__herdr = herdr;
  window.chrome = {
    i18n: { getMessage },
    runtime: {
      getManifest: () => ({ version: '0.1.0' }),
      sendMessage: answerProfile,
      connect: ({ name }) => {
        herdr.portName = name;
        return {
          postMessage: (message) => herdr.posted.push(JSON.parse(JSON.stringify(message))),
          onMessage: { addListener: (listener) => herdr.listeners.push(listener) },
          onDisconnect: { addListener: () => {} },
        };
      },
    },
    storage: {
      sync: {
        get: async (defaults) => ({ ...defaults, ...herdr.sync }),
        set: async (items) => {
          if (failSet) throw new Error('sync storage is disabled');
          Object.assign(herdr.sync, items);
        },
      },
      local: {
        get: async (key) => (key in herdr.local ? { [key]: herdr.local[key] } : {}),
        set: async (items) => { Object.assign(herdr.local, items); herdr.changed(items); },
        remove: async (key) => { delete herdr.local[key]; herdr.changed({ [key]: undefined }); },
      },
      onChanged: { addListener: (listener) => herdr.storageListeners.push(listener) },
    },
  };
}

let browser;
let context;
test.beforeEach(async ({ plainBrowser }) => {
  browser = plainBrowser;
  context = await browser.newContext();
  await context.route(`${ORIGIN}/**`, (route) => {
    const file = path.basename(new URL(route.request().url()).pathname);
    route.fulfill({ status: 200, contentType: TYPES[path.extname(file)], body: readFileSync(path.join(EXTENSION_SRC, file)) });
  });
});
test.afterEach(async () => {
  await closeContexts(browser);
});

/** Opens `file` (with `query`) under the stand-in chrome; waits until `ready` is shown. */
async function open(file, { query = '', stored = {}, storedLocal = {}, failSet = false, profiles = null, ready = '#app > *' } = {}) {
  const page = await context.newPage();
  await page.addInitScript(installChrome, { messages: MESSAGES, stored, storedLocal, failSet, profiles });
  await page.goto(`${ORIGIN}/${file}${query}`);
  await expect(page.locator(ready).first()).toBeAttached();
  return page;
}
const send = (page, message) => page.evaluate((m) => window.__herdr.send(m), message);
// The panel's commands; its companion calls (the live tree's and the audit log's, through
// the same port) are control-center-look.spec.mjs's.
const posted = (page) => page.evaluate(() => window.__herdr.posted.filter((m) => m.type !== 'companion_call' && m.type !== 'companion_watch'));
const stored = (page) => page.evaluate(() => window.__herdr.sync);

const HUD = {
  type: 'hud',
  view: {
    companion: { key: 'companionNotInstalled', substitutions: [], tone: 'bad' },
    herdr: { key: 'herdrUnknown', substitutions: [], tone: 'pending' },
    actions: [{ id: 'retry_companion', label: 'actionRetryCompanion' }],
  },
};

test('the side panel says which tab it shows, renders a HUD view with keyboard-usable buttons, and a button posts its action (O1)', async () => {
  const page = await open('sidepanel.html', { query: '?tab=7', ready: 'section.hud' });
  expect(await page.evaluate(() => window.__herdr.portName)).toBe('panel');
  expect(await posted(page)).toEqual([{ type: 'panel_hello', tab_id: 7 }]);
  await expect(page.locator('h1')).toHaveText(MESSAGES.sidePanelTitle.message);

  await send(page, HUD);
  const companion = page.locator('section.hud [data-line="companion"]');
  await expect(companion).toHaveClass('line tone-bad');
  await expect(companion).toHaveAttribute('data-key', 'companionNotInstalled');
  await expect(companion).toHaveText(MESSAGES.companionNotInstalled.message);
  await expect(page.locator('section.hud [data-line="herdr"]')).toHaveClass('line tone-pending');
  const retry = page.locator('section.hud .actions button');
  await expect(retry).toHaveCount(1);
  await expect(retry).toHaveAttribute('type', 'button');
  await expect(retry).toHaveAttribute('data-action', 'retry_companion');
  await retry.click();
  await retry.focus();
  await page.keyboard.press('Enter');
  expect((await posted(page)).slice(1)).toEqual([
    { type: 'action', action: 'retry_companion' },
    { type: 'action', action: 'retry_companion' },
  ]);

  await send(page, { type: 'round_trip_result', ok: true, ms: 3, status: { key: 'roundTripOk', substitutions: ['3'], tone: 'good' } });
  await expect(page.locator('p.round-trip[role=status]')).toHaveAttribute('data-key', 'roundTripOk');
});

test('the Control Center lists the catalog with Bind, the bindings with Unbind, and posts each command (B1, O1)', async () => {
  const page = await open('sidepanel.html', { query: '?tab=7', ready: 'section.control-center' });
  await send(page, {
    type: 'panel',
    view: {
      tab: { tab_id: 7, url: 'https://chatgpt.com/c/abc', scope_key: 'chatgpt:conv:abc', session_ref: 'chatgpt:conv:abc', bound_to: null, bindable: true, reason: null },
      catalog: [{ workspace_id: 'w1', label: 'api' }],
      catalog_error: null,
      bindings: [{ scope_key: 'chatgpt:conv:old', session_ref: 'chatgpt:conv:old', workspace_id: 'w9', label: 'gone', active_target: 'old', in_catalog: false, auto: 'off' }],
    },
  });
  const tab = page.locator('[data-panel-tab]');
  await expect(tab).toHaveAttribute('data-tab-id', '7');
  await expect(tab).toHaveAttribute('data-scope-key', 'chatgpt:conv:abc');
  await expect(tab).toHaveText('Scope: chatgpt:conv:abc');
  await expect(page.locator('[data-catalog-error]')).toHaveCount(0);
  const row = page.locator('[data-bindings] [data-binding-row="chatgpt:conv:old"]');
  await expect(row).toHaveAttribute('data-workspace', 'w9');
  await expect(row.locator('span')).toHaveText(`chatgpt:conv:old → gone (w9) /c/old ${MESSAGES.panelNotInCatalog.message}`);

  await page.locator('[data-catalog] button[data-bind="w1"]').click();
  await page.locator('button[data-refresh]').click();
  await row.locator('button[data-unbind]').click();
  expect((await posted(page)).slice(1)).toEqual([
    { type: 'bind', tab_id: 7, workspace_id: 'w1', label: 'api' },
    { type: 'panel_refresh' },
    { type: 'unbind', scope_key: 'chatgpt:conv:old' },
  ]);
});

const ACTIVITY_KEY = 'herdrContinuityActivityV1';
const SCOPE = 'chatgpt:conv:abc';
const panelFor = (scopeKey) => ({
  type: 'panel',
  view: { tab: { tab_id: 7, url: 'https://chatgpt.com/c/abc', scope_key: scopeKey, bound_to: 'w1', bindable: true, reason: null }, catalog: [], catalog_error: null, bindings: [] },
});
const activityRows = (page) => page.locator('[data-activity] [data-activity-entry]');

test('the Activity timeline shows the tab\'s scope newest first with each code\'s text (or the code), updates live, keeps focus, and shows all chats (O1)', async () => {
  const record = {
    version: 1,
    scopes: {
      [SCOPE]: [
        { t: Date.UTC(2026, 11, 1, 9, 0, 1), kind: 'wake', outcome: 'withheld', reason: 'human_draft', id: 'wake:w1#2' },
        { t: Date.UTC(2026, 11, 1, 9, 0, 5), kind: 'wake', outcome: 'sent', reason: 'settled', id: 'wake:w1#2/e.0.0' },
      ],
      'chatgpt:conv:other': [{ t: Date.UTC(2026, 11, 1, 9, 0, 3), kind: 'progress', outcome: 'failed', reason: 'some_future_code' }],
    },
  };
  const page = await open('sidepanel.html', { query: '?tab=7', storedLocal: { [ACTIVITY_KEY]: record }, ready: '[data-activity-log]' });
  await expect(page.locator('[data-activity-note]'), 'no scope yet').toHaveText(MESSAGES.activityNoScope.message);
  await send(page, panelFor(SCOPE));
  await expect(activityRows(page)).toHaveCount(2);
  await expect(activityRows(page).first(), 'newest first').toHaveAttribute('data-outcome', 'sent');
  await expect(activityRows(page).first()).toContainText(MESSAGES.activityReason_settled.message);
  await expect(activityRows(page).first().locator('code')).toHaveText('wake:w1#2/e.0.0');
  await expect(activityRows(page).nth(1)).toContainText(`${MESSAGES.activityKind_wake.message}${MESSAGES.activityOutcome_withheld.message}${MESSAGES.activityReason_human_draft.message}`);
  await expect(activityRows(page).nth(1).locator('time')).toHaveText(/^\d\d:\d\d:01$/);

  // A new entry lands while the control has the focus: the list updates, the focus stays.
  const showAll = page.locator('button[data-activity-all]');
  await showAll.focus();
  await page.evaluate(async () => {
    const log = await import('./activity-log.js');
    await log.recordActivity({ scope_key: 'chatgpt:conv:abc', kind: 'queue_batch', outcome: 'sent', reason: 'queued_turn', id: 'qb:1/e.0.1' });
  });
  await expect(activityRows(page)).toHaveCount(3);
  await expect(activityRows(page).first()).toHaveAttribute('data-kind', 'queue_batch');
  expect(await page.evaluate(() => document.activeElement?.hasAttribute('data-activity-all'))).toBe(true);

  // Every chat, with the keyboard; a code without a text shows the code, not a blank.
  await page.keyboard.press('Enter');
  await expect(showAll).toHaveAttribute('aria-pressed', 'true');
  await expect(showAll).toHaveText(MESSAGES.activityShowScope.message);
  const other = page.locator('[data-activity] [data-scope="chatgpt:conv:other"]');
  await expect(other).toContainText('some_future_code');
  await expect(other.locator('.activity-scope')).toHaveText('chatgpt:conv:other');
  await page.keyboard.press('Space');
  await expect(showAll).toHaveAttribute('aria-pressed', 'false');
  await expect(other).toHaveCount(0);
});

test('an unreadable Activity record is never overwritten: the panel says so and clearing it starts a new one (O1)', async () => {
  const page = await open('sidepanel.html', { query: '?tab=7', storedLocal: { [ACTIVITY_KEY]: { version: 9, scopes: {} } }, ready: '[data-activity-log]' });
  await send(page, panelFor(SCOPE));
  const log = page.locator('[data-activity-log]');
  await expect(log).toHaveAttribute('data-activity-state', 'unreadable');
  await expect(page.locator('[data-activity-note]')).toContainText('cannot be read (it is not a version 1 Activity record)');
  // A new entry is not written over it.
  await page.evaluate(async () => {
    const activity = await import('./activity-log.js');
    await activity.recordActivity({ scope_key: 'chatgpt:conv:abc', kind: 'wake', outcome: 'sent', reason: 'settled', id: 'wake:w1#3/e.0.0' });
  });
  expect(await page.evaluate((key) => window.__herdr.local[key], ACTIVITY_KEY)).toEqual({ version: 9, scopes: {} });
  await page.locator('button[data-activity-clear]').click();
  await expect(log).toHaveAttribute('data-activity-state', 'ok');
  await expect(page.locator('button[data-activity-clear]')).toBeHidden();
  await expect(page.locator('[data-activity-note]')).toHaveText(MESSAGES.activityEmpty.message);
});

test('the Activity store keeps both of two entries that land together, and stays bounded per scope and in scopes (O1)', async () => {
  const page = await open('sidepanel.html', { ready: '[data-activity-log]' });
  const result = await page.evaluate(async (key) => {
    const log = await import('./activity-log.js');
    const entry = (scope, n) => ({ scope_key: scope, kind: 'progress', outcome: 'sent', reason: 'new_output', id: `progress:w1/e.0.${n}` });
    // Two at once: the second write reads what the first wrote.
    await Promise.all([log.recordActivity(entry('a', 0)), log.recordActivity(entry('a', 1))]);
    const both = window.__herdr.local[key].scopes.a.map((e) => e.id);
    for (let n = 2; n < log.MAX_ENTRIES_PER_SCOPE + 5; n++) log.recordActivity(entry('a', n));
    await log.recordActivity(entry('a', 999));
    const a = window.__herdr.local[key].scopes.a;
    // More scopes than the bound, each newer than the last ('a' is the least recently active).
    for (let n = 0; n < log.MAX_SCOPES + 2; n++) log.recordActivity(entry(`s${n}`, n));
    await log.recordActivity(entry('s0', 0));
    return { both, perScope: a.length, first: a[0].id, last: a.at(-1).id, scopes: Object.keys(window.__herdr.local[key].scopes), max: [log.MAX_ENTRIES_PER_SCOPE, log.MAX_SCOPES] };
  }, ACTIVITY_KEY);
  expect(result.both).toEqual(['progress:w1/e.0.0', 'progress:w1/e.0.1']);
  const [maxEntries, maxScopes] = result.max;
  expect(result.perScope).toBe(maxEntries);
  // 206 entries recorded (0 … 204 and 999): the oldest six were dropped.
  expect(result.first, 'the oldest were dropped').toBe('progress:w1/e.0.6');
  expect(result.last).toBe('progress:w1/e.0.999');
  expect(result.scopes).toHaveLength(maxScopes);
  expect(result.scopes, 'the least recently active scopes were dropped').not.toContain('a');
  expect(result.scopes).not.toContain('s1');
  expect(result.scopes, 'a scope active again is kept').toContain('s0');
  expect(result.scopes).toContain(`s${maxScopes + 1}`);
});

test('"What the extension sees" lists the facts in the worker\'s order and copies them as text without page content', async () => {
  const page = await open('sidepanel.html', { ready: 'section.diagnostics' });
  expect(await posted(page)).toEqual([{ type: 'panel_hello', tab_id: null }]);
  const sees = page.locator('[data-diagnostics]');
  await send(page, { type: 'diagnostics', tab_id: null, diagnostics: null, fact_order: [] });
  await expect(sees.locator('[data-diagnostics-missing]')).toHaveText(MESSAGES.panelSeesNothing.message);
  // Folded away under its summary while nothing in it needs attention.
  await expect(sees.locator('summary')).toHaveText(MESSAGES.panelSees.message);
  await expect(sees.locator('details')).not.toHaveAttribute('open');

  await send(page, {
    type: 'diagnostics',
    tab_id: 3,
    diagnostics: {
      type: 'page_diagnostics', page_load: 'p1', site: 'chatgpt', generation: 'chatgpt.classic', matching: ['chatgpt.classic'],
      facts: { composer: '#prompt-textarea', send: 'button[data-testid="send-button"]', stop: null },
      usage: {
        composer: { entry: 0, gens: ['chatgpt.classic'], fallback: false, count: 12 },
        send: { entry: 1, gens: ['chatgpt.classic'], fallback: true, count: 7 },
      },
      missing: { stop: { elements: 40, tags: { div: 30, button: 2 }, roles: { log: 1 }, data_attrs: { 'data-testid': 3 } } },
      csp: { meta: false, violations: 2, directives: ['script-src-elem'] },
      deliveries: [{ id: 'wake:w1#3', outcome: 'not_submitted', reason: 'no_composer' }],
    },
    fact_order: ['composer', 'stop', 'send'],
  });
  await expect(sees.locator('[data-generation]')).toHaveAttribute('data-generation', 'chatgpt.classic');
  await expect(sees.locator('details'), 'a fallback and a missing fact unfold the diagnostics').toHaveAttribute('open', '');
  const fallbackText = MESSAGES.panelFactFallback.message.replace('$1', '1').replace('$2', '7');
  await expect(sees.locator('[data-fact]')).toHaveText(['composer: #prompt-textarea', 'stop: none', `send: button[data-testid="send-button"] ${fallbackText}`]);
  // A fact served by a fallback: a warning with its entry and count; a primary is none.
  const sendFact = sees.locator('[data-fact="send"]');
  await expect(sendFact).toHaveAttribute('data-fallback', 'true');
  await expect(sendFact).toHaveAttribute('data-tone', 'warn');
  await expect(sendFact).toHaveAttribute('data-entry', '1');
  await expect(sendFact).toHaveAttribute('data-count', '7');
  await expect(sees.locator('[data-fact="composer"]')).toHaveAttribute('data-fallback', 'false');
  await expect(sees.locator('[data-fact="composer"] [data-fallback-warning]')).toHaveCount(0);
  await expect(sees.locator('[data-fact="stop"]')).not.toHaveAttribute('data-fallback');
  await expect(sees.locator('[data-missing] [data-missing-fact="stop"]')).toHaveAttribute('data-elements', '40');
  await expect(sees.locator('[data-missing-fact="stop"]')).toHaveText(MESSAGES.panelMissing.message
    .replace('$1', 'stop').replace('$2', '40').replace('$3', 'div 30, button 2').replace('$4', 'log 1').replace('$5', 'data-testid 3'));
  await expect(sees.locator('[data-fact="stop"]')).toHaveAttribute('data-selector', '');
  await expect(sees.locator('[data-csp-violations]')).toHaveAttribute('data-csp-violations', '2');
  await expect(sees.locator('[data-delivery="wake:w1#3"]')).toHaveText('wake:w1#3 → not_submitted (no_composer)');

  await page.evaluate(() => { navigator.clipboard.writeText = async (text) => { window.__copied = text; }; });
  await sees.locator('button[data-copy-diagnostics]').click();
  await expect(sees.locator('[data-copy-status]')).toHaveText(MESSAGES.panelCopied.message);
  expect(await page.evaluate(() => window.__copied)).toBe([
    'herdr-continuity diagnostics (extension 0.1.0)',
    'site: chatgpt',
    'generation: chatgpt.classic',
    'matching rules: chatgpt.classic',
    'fact composer: #prompt-textarea',
    'fact stop: none',
    'fact send: button[data-testid="send-button"]',
    'usage composer: entry 0, won 12 recompute(s), generations chatgpt.classic',
    'FALLBACK usage send: entry 1 (fallback), won 7 recompute(s), generations chatgpt.classic',
    'missing stop: 40 element(s) looked at; tags: div 30, button 2; roles: log 1; data-*: data-testid 3',
    'csp: meta policy absent, 2 violation(s) (script-src-elem)',
    'delivery wake:w1#3: not_submitted (no_composer)',
    'json: {"usage":{"composer":{"entry":0,"gens":["chatgpt.classic"],"fallback":false,"count":12},"send":{"entry":1,"gens":["chatgpt.classic"],"fallback":true,"count":7}},'
      + '"missing":{"stop":{"elements":40,"tags":{"div":30,"button":2},"roles":{"log":1},"data_attrs":{"data-testid":3}}}}',
  ].join('\n'));

  await page.evaluate(() => { navigator.clipboard.writeText = async () => { throw new Error('denied'); }; });
  await sees.locator('button[data-copy-diagnostics]').click();
  await expect(sees.locator('[data-copy-status]')).toHaveText('Copying failed: denied');
});

test('a CSP violation and a delivery that did not go out each unfold the diagnostics as a warning', async () => {
  const page = await open('sidepanel.html', { ready: 'section.diagnostics' });
  const sees = page.locator('[data-diagnostics]');
  const details = sees.locator('details');
  const diagnostics = ({ violations = 0, deliveries = [] }) => ({
    type: 'diagnostics',
    tab_id: 3,
    diagnostics: {
      type: 'page_diagnostics', page_load: 'p1', site: 'chatgpt', generation: 'chatgpt.classic', matching: ['chatgpt.classic'],
      facts: { composer: '#prompt-textarea' }, usage: {}, missing: {},
      csp: { meta: false, violations, directives: violations ? ['script-src-elem'] : [] },
      deliveries,
    },
    fact_order: ['composer'],
  });
  // Nothing wrong: folded, no warning.
  await send(page, diagnostics({ deliveries: [{ id: 'wake:w1#1', outcome: 'submitted', reason: null }] }));
  await expect(sees.locator('[data-delivery="wake:w1#1"]')).toBeAttached();
  await expect(sees.locator('[data-delivery="wake:w1#1"]')).not.toHaveClass(/tone-warning/);
  await expect(sees.locator('[data-csp-violations]')).not.toHaveClass(/tone-warning/);
  await expect(details).not.toHaveAttribute('open');

  // CSP violations (shown only here) are a warning and unfold the diagnostics.
  await send(page, diagnostics({ violations: 5 }));
  await expect(sees.locator('[data-csp-violations="5"]')).toHaveClass(/tone-warning/);
  await expect(details).toHaveAttribute('open', '');

  // Folded again by the user, cleared; then a delivery that was not submitted unfolds them.
  await sees.locator('summary').click();
  await expect(details).not.toHaveAttribute('open');
  await send(page, diagnostics({}));
  await expect(sees.locator('[data-csp-violations="0"]')).toBeAttached();
  await send(page, diagnostics({ deliveries: [{ id: 'wake:w1#2', outcome: 'not_submitted', reason: 'send_button_missing' }] }));
  await expect(sees.locator('[data-delivery="wake:w1#2"]')).toHaveClass(/tone-warning/);
  await expect(details).toHaveAttribute('open', '');
});

// A live region taken out of the accessibility tree (display:none) while empty is often not
// announced when its text arrives ("Copied", "Saved"): empty ones stay rendered, collapsed.
const hiddenLiveRegions = (page) => page.evaluate(() => [...document.querySelectorAll('[role="status"], [role="alert"], [aria-live]')]
  .filter((node) => getComputedStyle(node).display === 'none')
  .map((node) => `${node.tagName.toLowerCase()}.${node.className || '-'}${node.id ? `#${node.id}` : ''}`));

test('empty live regions of the side panel and the options page stay rendered, so their text is announced', async () => {
  const panel = await open('sidepanel.html', { query: '?tab=7', ready: 'section.hud' });
  await send(panel, {
    type: 'diagnostics', tab_id: 7, fact_order: ['composer'],
    diagnostics: {
      type: 'page_diagnostics', page_load: 'p1', site: 'chatgpt', generation: 'chatgpt.classic', matching: ['chatgpt.classic'],
      facts: { composer: '#prompt-textarea' }, usage: {}, missing: {}, csp: { meta: false, violations: 0, directives: [] }, deliveries: [],
    },
  });
  await expect(panel.locator('[data-copy-status]')).toBeAttached();
  await expect(panel.locator('[data-copy-status]')).toBeEmpty();
  await expect(panel.locator('#app > p.round-trip')).toBeEmpty();
  expect(await hiddenLiveRegions(panel), 'live regions with display:none').toEqual([]);

  const options = await open('options.html', { ready: 'input#allowProjectAuto' });
  await expect(options.locator('.save-status')).toBeEmpty();
  await expect(options.locator('.recovery-note')).toBeEmpty();
  expect(await hiddenLiveRegions(options), 'live regions with display:none').toEqual([]);
});

test('a message of unknown shape is refused visibly and nothing of it is rendered', async () => {
  const page = await open('sidepanel.html', { query: '?tab=7', ready: 'section.hud' });
  await send(page, HUD);
  await expect(page.locator('section.hud [data-line]')).toHaveCount(2);

  // A HUD view whose Herdr line has no tone replaces the last view with the refusal.
  const toneless = structuredClone(HUD);
  delete toneless.view.herdr.tone;
  await send(page, toneless);
  const refusal = page.locator('section.hud [data-unknown-shape]');
  await expect(refusal).toHaveAttribute('data-unknown-shape', 'hud');
  await expect(refusal).toHaveClass('line tone-bad');
  await expect(refusal).toContainText('“hud” message it cannot read');
  await expect(page.locator('section.hud [data-line], section.hud button')).toHaveCount(0);

  await send(page, { type: 'panel', view: { tab: null, catalog: 'w1', catalog_error: null, bindings: [] } });
  await expect(page.locator('section.control-center [data-unknown-shape="panel"]')).toBeVisible();
  await expect(page.locator('section.control-center [data-catalog], section.control-center h2')).toHaveCount(0);

  await send(page, { type: 'diagnostics', tab_id: 7, diagnostics: { generation: 'chatgpt.classic', facts: ['composer'] }, fact_order: [] });
  await expect(page.locator('[data-diagnostics] [data-unknown-shape="diagnostics"]')).toBeVisible();
  await expect(page.locator('[data-diagnostics] [data-generation]')).toHaveCount(0);

  // A type the panel does not know goes to the status region.
  await send(page, { type: 'bogus' });
  await expect(page.locator('p.round-trip [data-unknown-shape="bogus"]')).toBeVisible();
  await send(page, 'not an object');
  await expect(page.locator('p.round-trip [data-unknown-shape="?"]')).toBeVisible();
  expect(await page.evaluate(() => window.__herdr.warnings.length)).toBe(5);
  expect(await posted(page), 'nothing is posted for a refused message').toEqual([{ type: 'panel_hello', tab_id: 7 }]);
});

test('the options page shows each setting from storage or its default, clamps numbers into range, refuses a non-whole number, and saves flags (O4)', async () => {
  const page = await open('options.html', { stored: { progressFallbackSec: 900 }, ready: 'input#allowProjectAuto' });
  await expect(page.locator('h1')).toHaveText(MESSAGES.optionsTitle.message);
  const tick = page.locator('input#progressTickSec');
  const fallback = page.locator('input#progressFallbackSec');
  const allow = page.locator('input#allowProjectAuto');
  await expect(page.locator('form.settings label.setting .caption')).toHaveText([
    MESSAGES.optionProgressTickSec.message, MESSAGES.optionProgressFallbackSec.message, MESSAGES.optionAllowProjectAuto.message,
  ]);
  await expect(tick).toHaveValue('60');
  await expect(tick).toHaveAttribute('min', '5');
  await expect(tick).toHaveAttribute('max', '3600');
  await expect(fallback).toHaveValue('900');
  await expect(allow).not.toBeChecked();
  const status = page.locator('p.save-status[role=status]');

  await tick.fill('2');
  await tick.press('Tab');
  await expect(status).toHaveText(MESSAGES.optionSaved.message);
  await expect(tick, 'below the range: clamped to its minimum').toHaveValue('5');
  expect(await stored(page)).toEqual({ progressFallbackSec: 900, progressTickSec: 5 });

  await fallback.fill('100000');
  await fallback.press('Tab');
  await expect(fallback, 'above the range: clamped to its maximum').toHaveValue('86400');
  expect((await stored(page)).progressFallbackSec).toBe(86_400);

  await tick.fill('7.5');
  await tick.press('Tab');
  await expect(status).toHaveText('Not saved: enter a whole number of seconds between 5 and 3600.');
  expect((await stored(page)).progressTickSec, 'a non-whole number saves nothing').toBe(5);

  await allow.press('Space');
  await expect(status).toHaveText(MESSAGES.optionSaved.message);
  expect((await stored(page)).allowProjectAuto).toBe(true);
});

test('the options page says when saving failed', async () => {
  const page = await open('options.html', { failSet: true, ready: 'input#allowProjectAuto' });
  await page.locator('input#allowProjectAuto').check();
  await expect(page.locator('p.save-status')).toHaveText(/^Could not save: sync storage is disabled\./);
});

test('the options page\'s judge section: a bad stored record shows the defaults and says so; an out-of-range bound saves nothing (O4, M7)', async () => {
  const key = 'herdrContinuityJudgeV1';
  const page = await open('options.html', { storedLocal: { [key]: '{"mode":"always","max_continues":3}' }, ready: 'select#judgeMode' });
  const mode = page.locator('select#judgeMode');
  const max = page.locator('input#maxContinues');
  const note = page.locator('p.judge-note');
  await expect(mode, 'an unknown judge use falls back to the default').toHaveValue('manual_only');
  await expect(max).toHaveValue('3');
  await expect(note).toContainText('the stored judge use is not off, manual_only or in_auto');
  await expect(page.locator('#queueLimits')).toContainText('20');
  const local = () => page.evaluate((k) => window.__herdr.local[k], key);

  await max.fill('11');
  await max.press('Tab');
  await expect(note).toHaveText('Not saved: enter a whole number between 1 and 10.');
  expect(await local(), 'nothing saved').toBe('{"mode":"always","max_continues":3}');

  await max.fill('2');
  await mode.selectOption('in_auto');
  await expect(note).toHaveText(MESSAGES.optionSaved.message);
  expect(JSON.parse(await local())).toEqual({ mode: 'in_auto', max_continues: 2 });
});

test('the options page\'s thresholds take their keys, ranges and defaults from the generated contracts: out of range or a high not above its warn is refused by name and saves nothing (O4, issue 28)', async () => {
  const page = await open('options.html', { ready: 'input#drift_high_ms' });
  // The contracts as the page loaded them (extension/contracts.js, generated from ext-core;
  // ext-core tests/it/contracts.rs proves these ranges are the ones RecoveryConfig::read enforces).
  const { key, fields } = await page.evaluate(() => globalThis.herdrContracts.settings.recovery);
  expect(key).toBe('herdrContinuityRecoveryV1');
  expect(await page.evaluate(() => Object.isFrozen(globalThis.herdrContracts.settings.recovery.fields[0])), 'deep-frozen').toBe(true);
  for (const field of fields) {
    const input = page.locator(`input#${field.name}`);
    await expect(input).toHaveValue(String(field.default));
    await expect(input).toHaveAttribute('min', String(field.min));
    await expect(input).toHaveAttribute('max', String(field.max));
  }
  const note = page.locator('#recoveryStatus');
  const local = () => page.evaluate((k) => window.__herdr.local[k], key);
  const quiet = fields.find((field) => field.name === 'quiet_sec');
  await page.locator('input#quiet_sec').fill(String(quiet.max + 1));
  await page.locator('input#quiet_sec').press('Tab');
  await expect(note).toHaveAttribute('data-field', 'quiet_sec');
  await expect(note).toHaveText(MESSAGES.optionRecoveryOutOfRange.message
    .replace('$1', MESSAGES.optionRecovery_quiet_sec.message).replace('$2', String(quiet.min)).replace('$3', String(quiet.max)));
  expect(await local(), 'nothing saved').toBeUndefined();
  await page.locator('input#quiet_sec').fill(String(quiet.default));
  await page.locator('input#quiet_sec').press('Tab');
  await expect(note).toHaveText(MESSAGES.optionRecoverySaved.message);
  const defaults = Object.fromEntries(fields.map((field) => [field.name, field.default]));
  expect(JSON.parse(await local())).toEqual(defaults);

  const high = fields.find((field) => field.above === 'drift_warn_ms');
  const warn = fields.find((field) => field.name === high.above);
  await page.locator('input#drift_high_ms').fill(String(warn.default));
  await page.locator('input#drift_high_ms').press('Tab');
  await expect(note, 'a high threshold at its warn one is refused with the warn one + 1 as its minimum').toHaveText(MESSAGES.optionRecoveryOutOfRange.message
    .replace('$1', MESSAGES.optionRecovery_drift_high_ms.message).replace('$2', String(warn.default + 1)).replace('$3', String(high.max)));
  expect(JSON.parse(await local()), 'nothing saved').toEqual(defaults);

  await page.locator('input#drift_high_ms').fill(String(warn.default + 1));
  await page.locator('input#drift_high_ms').press('Tab');
  await expect(note).toHaveText(MESSAGES.optionRecoverySaved.message);
  expect(JSON.parse(await local())).toEqual({ ...defaults, drift_high_ms: warn.default + 1 });
});

// ---- Site profiles (issue 25): the options page's half, against the stand-in worker above.
// The real worker, ext-core's validation and the companion file: profile-override.spec.
const builtinProfile = (site) => ({
  schema: 1, site, origin: `https://${site}.test`, version: 'builtin', date: '2026-09-26', generations: [],
  facts: { composer: [{ css: '#prompt-textarea', scope: 'doc', gens: [`${site}.a`], fallback: false }] }, labels: [], never: [], disabled: [],
});
const PROFILES = Object.fromEntries(['chatgpt', 'zai', 'deepseek'].map((site) => [site, { profile: builtinProfile(site), source: 'builtin' }]));
const profileFile = (name, profile) => ({ name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(profile)) });

test('the options page lists the profile in force per site; Import… refuses a file the browser cannot parse before sending and one the worker refuses with its first problem, changing nothing; an accepted one is shown in force; Export downloads it; Reset to built-in is one click', async () => {
  const page = await open('options.html', { profiles: PROFILES, ready: '[data-profile-site="deepseek"]' });
  await expect(page.locator('#siteProfiles legend')).toHaveText(MESSAGES.optionProfilesHeading.message);
  const site = page.locator('[data-profile-site="chatgpt"]');
  const source = site.locator('[data-profile-source]');
  const version = site.locator('[data-profile-version]');
  const error = site.locator('[data-profile-error][role=alert]');
  const note = site.locator('[data-profile-note]');
  for (const name of ['chatgpt', 'zai', 'deepseek']) {
    await expect(page.locator(`[data-profile-site="${name}"] [data-profile-source]`)).toHaveAttribute('data-profile-source', 'builtin');
  }
  await expect(source).toHaveText(MESSAGES.optionProfileSource_builtin.message);
  await expect(version).toHaveAttribute('data-profile-version', 'builtin');
  await expect(site.locator('[data-profile-date]')).toHaveText('checked 2026-09-26');
  await expect(site.locator('button[data-profile-reset]'), 'nothing to reset while the built-in profile is in force').toBeDisabled();
  // Keyboard-usable: the file input is the labelled "Import…" control and takes focus.
  const input = site.getByLabel(MESSAGES.optionProfileImport.message);
  await expect(input).toHaveAttribute('type', 'file');
  await input.focus();
  await expect(input).toBeFocused();

  // A selector the browser cannot parse (balanced, no code characters: ext-core's checks
  // would let it through) is refused here, and nothing is sent.
  const override = { ...builtinProfile('chatgpt'), version: 'renamed-1', date: '2026-12-06' };
  const unparsable = structuredClone(override);
  unparsable.facts.send = [{ css: 'button', scope: 'root' }, { css: 'button:not-a-pseudo-class', scope: 'root' }];
  await input.setInputFiles(profileFile('bad-selector.json', unparsable));
  await expect(error).toHaveText('Not imported (bad-selector.json): facts.send[1].css: the browser cannot parse this selector. Nothing was changed; fix the file and import it again.');
  expect((await page.evaluate(() => window.__herdr.requests)).map((r) => r.type), 'no import was sent').not.toContain('profile_import');

  // The worker (ext-core) refuses a code-bearing file: its first problem is shown, nothing changes.
  await page.evaluate(() => { window.__herdr.importAnswer = { ok: false, problem: 'unknown field "on_load": a profile holds selector and label tables only' }; });
  await input.setInputFiles(profileFile('code.json', { ...override, on_load: 'alert(1)' }));
  await expect(error).toHaveText('Not imported (code.json): unknown field "on_load": a profile holds selector and label tables only. Nothing was changed; fix the file and import it again.');
  await expect(source).toHaveAttribute('data-profile-source', 'builtin');
  const sent = (await page.evaluate(() => window.__herdr.requests)).filter((r) => r.type === 'profile_import');
  expect(sent).toHaveLength(1);
  expect(sent[0].site).toBe('chatgpt');
  expect(JSON.parse(sent[0].text).on_load, 'the file text is sent as it is').toBe('alert(1)');

  // An accepted import is in force with its version and date; the alert is cleared.
  await page.evaluate(() => { window.__herdr.importAnswer = { ok: true, version: 'renamed-1', date: '2026-12-06' }; });
  await input.setInputFiles(profileFile('chatgpt-renamed.json', override));
  await expect(note).toHaveText('Imported: version renamed-1 (checked 2026-12-06) is in force for this site from now on, on open pages too.');
  await expect(error).toBeEmpty();
  await expect(source).toHaveAttribute('data-profile-source', 'options');
  await expect(version).toHaveAttribute('data-profile-version', 'renamed-1');
  await expect(version).toHaveText('version renamed-1');
  await expect(page.locator('[data-profile-site="zai"] [data-profile-source]'), 'other sites unchanged').toHaveAttribute('data-profile-source', 'builtin');

  // Export saves the profile in force as <site>-profile.json.
  const [download] = await Promise.all([page.waitForEvent('download'), site.locator('button[data-profile-export]').click()]);
  expect(download.suggestedFilename()).toBe('chatgpt-profile.json');
  const saved = JSON.parse(readFileSync(await download.path(), 'utf8'));
  expect(saved).toEqual(override);

  // Reset to built-in: one click.
  await site.locator('button[data-profile-reset]').click();
  await expect(source).toHaveAttribute('data-profile-source', 'builtin');
  await expect(note).toHaveText(MESSAGES.optionProfileResetDone.message);
  expect((await page.evaluate(() => window.__herdr.requests)).filter((r) => r.type === 'profile_reset')).toEqual([{ type: 'profile_reset', site: 'chatgpt' }]);
});

test('the options page says when the worker does not answer about profiles, and shows an override that is not in force with its problem', async () => {
  const silent = await open('options.html', { ready: '[data-profile-site="chatgpt"]' });
  await expect(silent.locator('[data-profile-site="chatgpt"] [data-profile-error]')).toContainText("The extension's background did not answer (Could not establish connection.");
  await expect(silent.locator('[data-profile-site="chatgpt"] [data-profile-source]')).toHaveText(MESSAGES.optionProfileSourceUnknown.message);

  const profiles = structuredClone(PROFILES);
  profiles.chatgpt.problem = 'options: facts.composer: missing';
  profiles.zai = { profile: { ...builtinProfile('zai'), version: 'mine', date: '2026-12-01' }, source: 'companion' };
  profiles.deepseek = { ok: false, problem: 'only the options page may ask' };
  const page = await open('options.html', { profiles, ready: '[data-profile-site="chatgpt"]' });
  await expect(page.locator('[data-profile-site="chatgpt"] [data-profile-problem]')).toHaveText('An override for this site is not in force: options: facts.composer: missing. The profile shown is used instead until the file is fixed (an import here can also be reset).');
  await expect(page.locator('[data-profile-site="chatgpt"] button[data-profile-reset]'), 'a stored import that does not validate can be reset').toBeEnabled();
  await expect(page.locator('[data-profile-site="zai"] button[data-profile-reset]'), 'a companion file is not removed from here').toBeDisabled();
  await expect(page.locator('[data-profile-site="zai"] [data-profile-source]')).toHaveAttribute('data-profile-source', 'companion');
  await expect(page.locator('[data-profile-site="zai"] [data-profile-hint]')).toContainText('profiles/zai.json');
  await expect(page.locator('[data-profile-site="deepseek"] [data-profile-error]'), 'a refused profile_get is shown').toHaveText("The extension did not show this site's profile: only the options page may ask");
});

// The live tree's model (extension/live-tree.js HerdrModel) on its own: what it shows and
// counts of Herdr's lists against the relay's cap, and when it asks for the lists again.
// The control-center spec drives the same through the real companion; these cases are the
// orderings and counts a run there may or may not hit (b63c214: a stream `hello` after a
// read; review stop 39: a cut pane's events, the agents' cut, the pinned pane cut).
test('the live tree counts what the relay cut and the panes of a workspace it cut, asks for the lists again once per reason, and does not call a cut pinned pane closed (O1)', async () => {
  const page = await open('sidepanel.html', { ready: 'section.live' });
  const { max, out, texts } = await page.evaluate(async () => {
    const { HerdrModel } = await import('./live-tree.js');
    const max = globalThis.herdrContracts.caps.runtime_list_items;
    const ws = (n) => ({ workspace_id: `w${n}`, label: `ws ${n}`, number: n });
    const pane = (n) => ({ pane_id: `w${n}:p1`, workspace_id: `w${n}`, tab_id: 't1', agent: null, agent_status: 'idle', cwd: '/' });
    const range = (n, make) => Array.from({ length: n }, (_, i) => make(i + 1));
    const model = new HerdrModel();
    const out = {};
    const texts = [];
    // A read: `max` of each list shown, 2 workspaces and 2 panes cut, 5 agents cut (their
    // panes are the panes' list: not counted).
    model.loaded({ workspaces: range(max, ws), cut: 2 }, { agents: [], cut: 5 }, { panes: range(max, pane), cut: 2 });
    model.apply('agent_output', { pane_id: 'w3:p1', workspace_id: 'w3', tail: 'building\n' });
    out.loaded = { shown: model.workspaces.size, panes: model.panes.size, cut: model.cut(), reload: model.takeReload() };
    // A stream hello later: drawn, counts kept, and the lists read for its counts.
    model.apply('hello', { workspaces: range(max, ws), agents: [], cut: 9 });
    out.afterStreamHello = { cut: model.cut(), reload: model.takeReload() };
    // An item the tree has no place for: asked once, not again for the same id.
    model.apply('pane_upsert', pane(max + 10));
    out.overCap = { has: model.panes.has(`w${max + 10}:p1`), cut: model.cut(), reload: model.takeReload() };
    model.apply('agent_working', { ...pane(max + 10), status: 'working' });
    out.overCapAgain = model.takeReload();
    // A shown item that leaves while some are cut: the lists read again (the place is free:
    // the item the tree had no place for takes it when the stream brings it again).
    model.apply('workspace_removed', { workspace_id: 'w1' });
    out.removedWhileCut = { shown: model.workspaces.size, panes: model.panes.size, reload: model.takeReload() };
    model.apply('pane_upsert', pane(max + 10));
    out.afterRemoval = { has: model.panes.has(`w${max + 10}:p1`), reload: model.takeReload() };
    // A read again keeps each pane's last line; the pinned pane, cut now, keeps its entry.
    model.loaded({ workspaces: range(max, (i) => ws(i + 1)), cut: 1 }, { agents: [] }, { panes: range(max, (i) => pane(i + 2)), cut: 1 }, 'w2:p1');
    out.reread = { line: model.panes.get('w3:p1')?.last_line, pinnedKept: model.panes.has('w2:p1'), w1: model.panes.has('w1:p1'), cut: model.cut() };
    // A pinned pane not in the lists while panes are cut (here: a read that did not know it
    // before) is not called closed; once the stream removed it, it is.
    model.loaded({ workspaces: range(max, (i) => ws(i + 1)), cut: 1 }, { agents: [] }, { panes: range(max, (i) => pane(i + 2)), cut: 1 });
    texts.push(model.staleReason({ pane_id: 'w2:p1', agent: null }));
    model.apply('pane_removed', { pane_id: 'w2:p1', workspace_id: 'w2' });
    texts.push(model.staleReason({ pane_id: 'w2:p1', agent: null }));
    // Nothing cut: a removal needs no read; a pane of a workspace not shown is counted.
    const small = new HerdrModel();
    small.loaded({ workspaces: [ws(1), ws(2)] }, { agents: [] }, { panes: [pane(1)] });
    small.apply('pane_removed', { pane_id: 'w1:p1', workspace_id: 'w1' });
    out.removedNothingCut = { panes: small.panes.size, reload: small.takeReload() };
    small.apply('pane_upsert', pane(7));
    out.orphan = { cut: small.cut(), notShown: small.notShown() };
    return { max, out, texts };
  });
  expect(out.loaded).toEqual({ shown: max, panes: max, cut: 4, reload: false });
  expect(out.afterStreamHello).toEqual({ cut: 4, reload: true });
  expect(out.overCap).toEqual({ has: false, cut: 4, reload: true });
  expect(out.overCapAgain, 'a cut pane\'s events do not read the lists again and again').toBe(false);
  expect(out.removedWhileCut).toEqual({ shown: max - 1, panes: max - 1, reload: true });
  expect(out.afterRemoval).toEqual({ has: true, reload: false });
  expect(out.reread, 'the kept pane is shown, so not counted with the cut').toEqual({ line: 'building', pinnedKept: true, w1: false, cut: 1 });
  expect(texts).toEqual([`it is not among the first ${max} panes the side panel shows, so its state is not known here`, 'the pane is closed']);
  expect(out.removedNothingCut).toEqual({ panes: 0, reload: false });
  expect(out.orphan).toEqual({ cut: 0, notShown: 1 });
});

// The page half of "the App rides on every message" (issue 24), on a recorded ChatGPT
// snippet: the real content script, fed ext-core's profile, in real Chromium; the test plays
// the worker (e2e/lib/adapter-harness.mjs) and answers the page's `trusted_type` requests
// with Playwright's keyboard, whose key events are trusted like chrome.debugger's Input
// domain. The page's App picker is modelled as field notes §1 record it: typing `@` and
// letters opens a listbox of App options only for trusted input; Enter (trusted) or a
// pointerdown on an option (never a bare click) puts the App's pill in the composer. Checks
// `human_apps`, the attach (a whole pointer press on the option, never a trusted Enter), the read-back, every
// named failure with its cleanup (also after a worker that failed half-way), a message whose
// own text contains `@herdr`, and that a deliver without `app` types no mention.
// The whole extension against the ChatGPT fixture is e2e/specs/herdr-app.spec.mjs.
import { closeContexts, test, expect } from '../lib/test.mjs';
import { lastPosted, openSnippet, sendToPage, serveSnippets, siteProfiles } from '../lib/adapter-harness.mjs';

const PROFILES = siteProfiles();
const HERDR = { keyword: 'herdr', name: 'Herdr', path: 'connector://apps/herdr' };

let browser;
let context;
test.beforeEach(async ({ plainBrowser }) => {
  browser = plainBrowser;
  context = await browser.newContext();
  await serveSnippets(context);
});
test.afterEach(async () => {
  await closeContexts(browser);
});

// The classic composer's page side with an App picker. `pill`: 'mention' (2026-10-10) or
// 'selection' (before); `picker` (also `window.__site.picker`, changeable): 'works' | 'broken'
// (never opens) | 'wrong_pill' (a chosen option yields GitHub's pill); `highlight`: the
// keyword of the option highlighted first (the list then shows every App).
function appSite({ pill = 'mention', picker = 'works', highlight = null }) {
  const APPS = [{ keyword: 'github', name: 'GitHub', path: 'connector://apps/github' }, { keyword: 'herdr', name: 'Herdr', path: 'connector://apps/herdr' }];
  const composer = () => document.querySelector('#prompt-textarea');
  const send = () => document.querySelector('#composer-submit-button');
  const pillHtml = (app) => (pill === 'mention'
    ? `<span data-appearance="inline-mention" app-mention-name="${app.name}" app-mention-path="${app.path}" contenteditable="false">@${app.name}</span>`
    : `<span data-inline-selection-pill data-symbol="ecosystemMention" data-keyword="${app.keyword}" contenteditable="false">${app.name}</span>`);
  const site = { submitted: [], untrustedOpens: 0, picker, optionEvents: [] };
  Object.defineProperty(window, '__site', { value: site });
  document.querySelector('form').addEventListener('submit', (event) => event.preventDefault());
  let list = null;
  const close = () => { list?.remove(); list = null; };
  const choose = (app) => {
    const chosen = site.picker === 'wrong_pill' ? APPS[0] : app;
    composer().innerHTML = `<p>${pillHtml(chosen)}&nbsp;</p>`;
    // The picker goes once the event is handled (React commits after the handler).
    setTimeout(() => {
      close();
      composer().dispatchEvent(new InputEvent('input', { bubbles: true }));
    });
  };
  const open = (query) => {
    close();
    const matching = highlight ? APPS : APPS.filter((app) => app.keyword.startsWith(query));
    if (!matching.length) return;
    list = document.createElement('div');
    list.setAttribute('role', 'listbox');
    list.dataset.testid = 'app-mention-picker';
    const first = matching.find((app) => app.keyword === highlight) ?? matching[0];
    for (const app of matching) {
      const option = document.createElement('div');
      option.setAttribute('role', 'option');
      option.dataset.appKeyword = app.keyword;
      option.setAttribute('aria-selected', String(app === first));
      option.textContent = app.name;
      // Chosen on pointerdown only (Radix): a bare click() chooses nothing.
      for (const type of ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click']) {
        option.addEventListener(type, (event) => site.optionEvents.push(`${app.keyword}:${event.type}`));
      }
      option.addEventListener('pointerdown', (event) => { event.preventDefault(); choose(app); });
      list.append(option);
    }
    document.body.append(list);
  };
  // Text the editor inserts (execCommand) fires a trusted `input` too, but no key event:
  // the picker opens only when a trusted key press made the input.
  let keyed = false;
  composer().addEventListener('keydown', (event) => { keyed = event.isTrusted; }, true);
  composer().addEventListener('input', () => {
    const value = composer().textContent;
    send().disabled = value.trim() === '';
    const query = /@([a-z]*)$/.exec(value.replace(/\u00a0/g, ' '));
    const trusted = keyed;
    keyed = false;
    if (!query) { close(); return; }
    if (!trusted) { site.untrustedOpens += 1; return; }
    if (site.picker !== 'broken') open(query[1]);
  });
  composer().addEventListener('keydown', (event) => {
    if (event.key === 'Escape') close();
    if (event.key !== 'Enter' || !list) return;
    event.preventDefault();
    if (!event.isTrusted) return;
    const highlighted = list.querySelector('[aria-selected="true"]');
    choose(APPS.find((app) => app.keyword === highlighted.dataset.appKeyword));
  }, true);
  document.addEventListener('click', (event) => {
    if (!event.target.closest?.('#composer-submit-button') || composer().textContent.trim() === '') return;
    const apps = [...composer().querySelectorAll('[app-mention-name], [data-inline-selection-pill]')]
      .map((el) => el.getAttribute('app-mention-name') ?? el.textContent);
    site.submitted.push({ text: composer().textContent, apps });
    composer().innerHTML = '<p><br class="ProseMirror-trailingBreak"></p>';
    send().disabled = true;
  });
}

// The worker's side of `trusted_type`: `mode` 'granted' types with Playwright's (trusted)
// keyboard; 'no_permission' answers as worker.js does without the user's permission;
// 'failed' types `@her` and then fails (`debugger_failed`, e.g. the tab was closed for
// DevTools); 'late' types `@her`, stalls past the page's 3 s wait, then types `dr`.
async function standInWorker(page, mode) {
  const asked = [];
  await page.exposeFunction('__trustedType', async (message) => {
    asked.push(message);
    if (mode === 'failed' || mode === 'late') {
      await page.keyboard.type(message.text.slice(0, 4));
      if (mode === 'failed') return { ok: false, error: 'debugger_failed', message: 'Detached while handling command.' };
      await new Promise((resolve) => { setTimeout(resolve, 3500); });
      await page.keyboard.type(message.text.slice(4));
      return { ok: true };
    }
    if (mode !== 'granted') return { ok: false, error: 'no_permission' };
    if (message.key) await page.keyboard.press(message.key);
    else await page.keyboard.type(message.text);
    return { ok: true };
  });
  await page.evaluate(() => { window.chrome.runtime.sendMessage = (message) => window.__trustedType(message); });
  return asked;
}

async function openApp(options = {}, worker = 'granted') {
  const page = await openSnippet(context, 'chatgpt-classic.html', PROFILES.chatgpt);
  await page.evaluate(appSite, options);
  const asked = await standInWorker(page, worker);
  return { page, asked };
}

const reportOf = (page, id) => page.evaluate((i) => window.__herdr.posted.map((p) => p.message)
  .filter((m) => m.type === 'delivery_report' && m.id === i).pop() ?? null, id);
const composerHtml = (page) => page.evaluate(() => document.querySelector('#prompt-textarea').textContent);
const submitted = (page) => page.evaluate(() => window.__site.submitted);
const pickerOpen = (page) => page.evaluate(() => document.querySelector('[role="listbox"]') !== null);

async function deliver(page, id, app, text = '[Herdr] Workspace w1 settled.') {
  await sendToPage(page, { type: 'deliver', id, text: `${text}\n[herdr-continuity ${id}]`, ...(app !== undefined && { app }) });
}

test('human_apps are the pills of the newest human user turn, in both markups; our own turns are skipped', async () => {
  const page = await openSnippet(context, 'chatgpt-classic.html', PROFILES.chatgpt);
  expect((await lastPosted(page, 'page_facts')).human_apps, 'no pill anywhere').toEqual([]);
  // The human's turn (c1-user-1) carries the new pill; the newest user turn is our wake.
  await page.evaluate(() => {
    document.querySelector('[data-message-id="c1-user-1"] .whitespace-pre-wrap').innerHTML =
      '<span data-appearance="inline-mention" app-mention-name="Herdr" app-mention-path="connector://apps/herdr">@Herdr</span> check the agents';
  });
  await expect.poll(async () => (await lastPosted(page, 'page_facts')).human_apps).toEqual([HERDR]);
  // A newer human turn with the old markup and two Apps: both, in page order.
  await page.evaluate(() => {
    const article = document.createElement('article');
    article.dataset.testid = 'conversation-turn-5';
    article.dataset.turn = 'user';
    article.innerHTML = '<div data-message-author-role="user" data-message-id="c1-user-3"><div class="whitespace-pre-wrap">' +
      '<span data-inline-selection-pill data-symbol="ecosystemMention" data-keyword="herdr">Herdr</span> and ' +
      '<span data-inline-selection-pill data-symbol="ecosystemMention" data-keyword="github">GitHub</span> go</div></div>';
    document.querySelector('article[data-testid="conversation-turn-4"]').after(article);
  });
  await expect.poll(async () => (await lastPosted(page, 'page_facts')).human_apps).toEqual([
    { keyword: 'herdr', name: 'Herdr', path: '' }, { keyword: 'github', name: 'GitHub', path: '' }]);
  // A selection pill of another kind (not an App) is not an App.
  await page.evaluate(() => {
    document.querySelector('[data-keyword="github"]').outerHTML =
      '<span data-inline-selection-pill data-symbol="fileMention" data-keyword="notes">notes.md</span>';
  });
  await expect.poll(async () => (await lastPosted(page, 'page_facts')).human_apps).toEqual([{ keyword: 'herdr', name: 'Herdr', path: '' }]);
});

for (const pill of ['mention', 'selection']) {
  test(`deliver with the App (${pill} pill): trusted @herdr, a click on the highlighted Herdr (no Enter), pill read back, then the text, sent once`, async () => {
    const { page, asked } = await openApp({ pill });
    const id = `wake:w1#app-${pill}`;
    const app = pill === 'mention' ? HERDR : { keyword: 'herdr', name: 'Herdr', path: '' };
    await deliver(page, id, app);
    await expect.poll(() => reportOf(page, id)).toEqual({ type: 'delivery_report', id, outcome: 'submitted', reason: null });
    expect(asked, 'the worker typed the mention, nothing else: no Enter that could send a stray @herdr').toEqual([
      { type: 'trusted_type', text: '@herdr' }]);
    const sent = await submitted(page);
    expect(sent).toHaveLength(1);
    expect(sent[0].apps).toEqual(['Herdr']);
    expect(sent[0].text).toContain(`[herdr-continuity ${id}]`);
    expect(sent[0].text, 'the mention became the pill; no @herdr text is left').not.toContain('@herdr');
    expect(await page.evaluate(() => window.__site.untrustedOpens), 'the picker was opened by trusted keys only').toBe(0);
  });
}

test('deliver with the App when GitHub is highlighted: Herdr is chosen by a whole pointer press on its option (the page acts on pointerdown only)', async () => {
  const { page, asked } = await openApp({ highlight: 'github' });
  const id = 'wake:w1#app-click';
  await deliver(page, id, HERDR);
  await expect.poll(() => reportOf(page, id)).toMatchObject({ outcome: 'submitted' });
  expect(asked.filter((m) => m.key), 'no Enter for an option that is not highlighted').toEqual([]);
  expect((await submitted(page))[0].apps).toEqual(['Herdr']);
  expect(await page.evaluate(() => window.__site.optionEvents), 'pointerdown, mousedown, pointerup, mouseup, click on Herdr\'s option only')
    .toEqual(['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click'].map((type) => `herdr:${type}`));
});

// A message may itself contain `@herdr` (an address, a package name): it is still sent once
// with the App; only a leftover mention before our text means the pill was not chosen.
test('deliver with the App whose own text contains @herdr: sent once, with the App', async () => {
  const { page } = await openApp({});
  const id = 'queue:w1#app-at';
  await deliver(page, id, HERDR, 'mail ops@herdr.io about @herdr/cli');
  await expect.poll(() => reportOf(page, id)).toEqual({ type: 'delivery_report', id, outcome: 'submitted', reason: null });
  const sent = await submitted(page);
  expect(sent).toHaveLength(1);
  expect(sent[0].apps).toEqual(['Herdr']);
  expect(sent[0].text).toContain('mail ops@herdr.io about @herdr/cli');
  expect((await composerHtml(page)).trim()).toBe('');
});

// The worker failed (or answered late) after typing part of the mention: the page types no
// second mention with the editor (only `no_permission` falls back to it; `@her@herdr` was
// left behind as a draft), waits for late keys, and removes all of it; a picker that the
// partial mention opened is closed.
for (const [mode, picker] of [['failed', 'broken'], ['late', 'broken'], ['failed', 'works']]) {
  test(`the worker ${mode === 'failed' ? 'fails' : 'answers late'} after typing @her (picker ${picker}): picker_not_opened, no editor insertion, the composer is left empty`, async () => {
    const { page, asked } = await openApp({ picker }, mode);
    const id = `wake:w1#app-${mode}-${picker}`;
    await deliver(page, id, HERDR);
    await expect.poll(() => reportOf(page, id), { timeout: 10_000 }).toEqual({
      type: 'delivery_report', id, outcome: 'not_submitted', reason: 'app_not_attached', detail: 'picker_not_opened' });
    await page.waitForTimeout(mode === 'late' ? 1000 : 200);
    expect(await submitted(page)).toEqual([]);
    expect((await composerHtml(page)).trim(), 'the half mention is removed').toBe('');
    expect(asked).toEqual([{ type: 'trusted_type', text: '@herdr' }]);
    expect(await page.evaluate(() => window.__site.untrustedOpens), 'the editor typed no second @herdr').toBe(0);
    expect(await pickerOpen(page), 'no picker is left open').toBe(false);
    await expect.poll(() => lastPosted(page, 'page_facts'), 'nothing left counts as a draft').toMatchObject({ draft: false, delivering: null });
  });
}

test('no trusted keys (no_permission): the editor insertion opens no picker; nothing is sent and the half mention is removed', async () => {
  const { page, asked } = await openApp({}, 'no_permission');
  const id = 'wake:w1#app-noperm';
  await deliver(page, id, HERDR);
  await expect.poll(() => reportOf(page, id), { timeout: 8000 }).toEqual({
    type: 'delivery_report', id, outcome: 'not_submitted', reason: 'app_not_attached', detail: 'no_permission' });
  expect(asked).toEqual([{ type: 'trusted_type', text: '@herdr' }]);
  expect(await page.evaluate(() => window.__site.untrustedOpens), 'the editor did type @herdr (and the picker ignored it)').toBeGreaterThan(0);
  expect(await submitted(page)).toEqual([]);
  expect((await composerHtml(page)).trim(), 'no draft is left').toBe('');
  await expect.poll(() => lastPosted(page, 'page_facts')).toMatchObject({ draft: false, delivering: null });
});

for (const [case_, options, app, detail] of [
  ['the picker never opens', { picker: 'broken' }, HERDR, 'picker_not_opened'],
  // `@her` lists Herdr, which is neither keyword `her` nor name `Her`.
  ['the App is not among the options', {}, { keyword: 'her', name: 'Her', path: 'connector://apps/her' }, 'option_missing'],
  ['the chosen option yields another App\'s pill', { picker: 'wrong_pill' }, HERDR, 'pill_not_read_back'],
]) {
  test(`${case_}: not_submitted app_not_attached ${detail}; the composer is left empty, nothing is sent`, async () => {
    const { page } = await openApp(options);
    const id = `wake:w1#${detail}`;
    await deliver(page, id, app);
    await expect.poll(() => reportOf(page, id), { timeout: 10_000 }).toEqual({
      type: 'delivery_report', id, outcome: 'not_submitted', reason: 'app_not_attached', detail });
    expect(await submitted(page)).toEqual([]);
    expect((await composerHtml(page)).trim(), 'the half-typed mention and any pill are removed').toBe('');
    expect(await pickerOpen(page), 'no picker is left open').toBe(false);
    await expect.poll(() => lastPosted(page, 'page_facts'), 'nothing left counts as a draft').toMatchObject({ draft: false, delivering: null });
  });
}

test('a delivery withheld for its App is typed when the worker retries it with the same id and the picker works again', async () => {
  const { page } = await openApp({ picker: 'broken' });
  const id = 'wake:w1#retry';
  await deliver(page, id, HERDR);
  await expect.poll(() => reportOf(page, id), { timeout: 10_000 }).toMatchObject({ outcome: 'not_submitted', detail: 'picker_not_opened' });
  await sendToPage(page, { type: 'delivery_seen', id });
  await page.evaluate(() => { window.__site.picker = 'works'; });
  await deliver(page, id, HERDR);
  await expect.poll(() => reportOf(page, id)).toMatchObject({ outcome: 'submitted' });
  const sent = await submitted(page);
  expect(sent).toHaveLength(1);
  expect(sent[0].apps).toEqual(['Herdr']);
});

test('a deliver without app types no mention and asks the worker nothing', async () => {
  const { page, asked } = await openApp({});
  const id = 'wake:w1#plain';
  await deliver(page, id);
  await expect.poll(() => reportOf(page, id)).toEqual({ type: 'delivery_report', id, outcome: 'submitted', reason: null });
  expect(asked).toEqual([]);
  expect(await submitted(page)).toEqual([{ text: `[Herdr] Workspace w1 settled.[herdr-continuity ${id}]`, apps: [] }]);
});

test('a human pill already in the composer is the human\'s draft: nothing is typed', async () => {
  const { page, asked } = await openApp({});
  await page.evaluate(() => {
    document.querySelector('#prompt-textarea').innerHTML =
      '<p><span data-appearance="inline-mention" app-mention-name="Herdr" app-mention-path="connector://apps/herdr">@Herdr</span></p>';
  });
  const id = 'wake:w1#draft';
  await deliver(page, id, HERDR);
  await expect.poll(() => reportOf(page, id)).toEqual({ type: 'delivery_report', id, outcome: 'not_submitted', reason: 'human_draft' });
  expect(asked).toEqual([]);
});

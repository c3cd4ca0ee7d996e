// The Herdr App rides on every message (issue 24, acceptance 1): the whole extension in
// real Chromium against the ChatGPT fixture.
//
// Trusted typing: the worker types `@<keyword>` through chrome.debugger only after the user
// turned it on on the options page. Chrome does not let an extension request `debugger` at
// run time (chrome_api_permissions.cc marks it kFlagCannotBeOptional; Chromium 156 answers
// `chrome.permissions.request` with "Only permissions specified in the manifest may be
// requested"), so the manifest carries it and the user's consent is the options page's
// switch. The tests turn it on through that page's real button: no browser dialog and no
// shortcut through the worker's context is involved. Without it the extension's fallback
// (editor insertion) does not open the fixture's picker, and nothing is sent.
//
// Acceptance 1, one world per layout × CSP with several checks each: after a human message
// that carried the Herdr App, a wake, a queue batch, a judge continue and a handoff seed each
// reach the fixture's server carrying the App exactly once; a wake the App could not be
// attached to (no trusted typing, or the picker broken) sends nothing, the HUD says why, and
// the wake goes out once with the App when attaching works again; a chat that never used an
// App gets its plain wake. "Exactly once" is counted after a checkpoint (lib/backend.mjs).
import { test, expect } from '../lib/test.mjs';
import { Sandbox } from '../lib/sandbox.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { runClock } from '../lib/clock.mjs';
import { inContentWorld } from '../lib/shadow.mjs';
import { hudRoot, queueRoot } from '../lib/hud.mjs';
import { backendMessages, expectExactlyOne } from '../lib/backend.mjs';
import { sendHumanWithApp } from '../lib/apps.mjs';
import {
  CHATS, CONVERSATION, OTHER_WORKSPACE, ContinuityHud, agentCycle, bindFromPanel, continuityWorld, dispatchTask,
  expectIdleAfterWakes, openAndBind, reportAgent, turnAutoOn,
} from '../lib/continuity.mjs';
import { BACKEND_APP_MENTIONS, CSP_VARIANTS, ChatGptFixture, LAYOUTS, MARKER_LINE, chatgptUrl } from '../fixtures/chatgpt.mjs';

let sandbox;
test.beforeEach(() => {
  sandbox = new Sandbox();
});
test.afterEach(async () => {
  await sandbox?.dispose();
  sandbox = null;
});

/** The options page's trusted-typing section: its state and its one button. */
async function trustedTypingOptions(context) {
  const options = await context.newPage();
  await options.goto(`${EXTENSION_ORIGIN}options.html`);
  const state = options.locator('#trustedTypingState');
  const toggle = options.locator('#trustedTypingToggle');
  await expect(state).toHaveAttribute('data-state', /^(on|off|not_granted)$/);
  return { options, state, toggle };
}

/** Asks the worker for trusted typing from our content script's world, as content-composer.js does. */
const askWorker = (page, message) => inContentWorld(page, (m) => chrome.runtime.sendMessage(m), message);

test('trusted typing: off until the options page turns it on; then the worker types @herdr with trusted keys into the asking tab only, nothing but a mention', async () => {
  const { context } = await sandbox.launchBrowser();
  const fixture = new ChatGptFixture({});
  fixture.conversations.set(CONVERSATION, { title: 'Apps', turns: [{ role: 'user', text: 'Hi' }, { role: 'assistant', text: 'Hello.' }] });
  await fixture.install(context);
  const page = await context.newPage();
  await page.goto(chatgptUrl.conversation(CONVERSATION));
  await expect.poll(() => inContentWorld(page, () => typeof chrome.runtime.sendMessage), { message: 'our content script runs' }).toBe('function');
  const composer = page.locator('#prompt-textarea');
  await page.evaluate(() => {
    window.__keys = [];
    document.addEventListener('keydown', (event) => window.__keys.push({ key: event.key, trusted: event.isTrusted }), true);
  });

  const { options, state, toggle } = await trustedTypingOptions(context);
  await expect(state, 'off by default').toHaveAttribute('data-state', 'off');
  await expect(options.locator('#trustedTyping')).toContainText('@herdr');
  await expect(toggle).toBeEnabled();
  await composer.click();
  expect(await askWorker(page, { type: 'trusted_type', text: '@herdr' })).toEqual({ ok: false, error: 'no_permission' });
  expect(await page.evaluate(() => window.__keys), 'nothing was typed without the permission').toEqual([]);

  await toggle.click();
  await expect(state).toHaveAttribute('data-state', 'on');
  await expect(options.locator('#trustedTypingNote')).not.toBeEmpty();
  await composer.click();
  expect(await askWorker(page, { type: 'trusted_type', text: '@herdr' })).toEqual({ ok: true });
  await expect(composer).toHaveText('@herdr');
  const keys = await page.evaluate(() => window.__keys);
  expect(keys.map((k) => k.key).join('')).toBe('@herdr');
  expect(keys.every((k) => k.trusted), 'every key event is trusted').toBe(true);

  // Nothing but an @ mention is typed: no key (the page picks the App by a click, so an Enter
  // that could send a stray `@herdr` is never asked for).
  // Review 42 LOW-3: the keyword is learned from the page, so only a name is typed — letters,
  // digits, `.`, `_`, `-` — never symbols or a direction override a page could slip in.
  const forged = [{ text: '@##!!##' }, { text: '@her\u202edr' }, { text: '@herdr;rm' }, { text: '@-herdr' }];
  for (const bad of [{ text: 'hello' }, { text: '@her dr' }, { text: '@herdr\n' }, { key: 'Enter' }, { key: 'Backspace' }, { text: '@herdr', key: 'Enter' }, {}, ...forged]) {
    expect(await askWorker(page, { type: 'trusted_type', ...bad }), JSON.stringify(bad)).toEqual({ ok: false, error: 'bad_request' });
  }
  await expect(composer).toHaveText('@herdr');

  await toggle.click();
  await expect(state).toHaveAttribute('data-state', 'off');
  expect(await askWorker(page, { type: 'trusted_type', text: '@herdr' })).toEqual({ ok: false, error: 'no_permission' });
  await expect(composer).toHaveText('@herdr');
});

// ---- Acceptance 1.

const PROJECT_CHAT = CHATS.find((c) => c.project);
/** A second conversation, never shown an App pill, bound to w2. */
const PLAIN_CONVERSATION = '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const HERDR = 'Herdr';
/** A reply that declares its next step (the judge's script continues it) and one it calls done. */
const PENDING = 'The config loader is in and its tests pass. Next I will write the route pool and its cooldown tests.';
const FINISHED = 'The route pool is written, its cooldown tests pass and everything is committed on the branch.';
/** How long a withheld App delivery waits before its retry (ext-core: 30 s after the first failure), with room; worker time. */
const APP_RETRY_MS = 60_000;

const messagesIn = (fixture, conversationId, filter = {}) => backendMessages(fixture, { conversationId, ...filter });
const appNames = (message) => (message.apps ?? []).map((a) => a.name);

/** Turns trusted typing on with the options page's button (see the top of this file). */
async function allowTrustedTyping(context) {
  const { options, state, toggle } = await trustedTypingOptions(context);
  if ((await state.getAttribute('data-state')) !== 'on') await toggle.click();
  await expect(state).toHaveAttribute('data-state', 'on');
  await options.close();
}

/** The options page's judge use (O4). */
async function judgeInAuto(context) {
  const options = await context.newPage();
  await options.goto(`${EXTENSION_ORIGIN}options.html`);
  const select = options.locator('select#judgeMode');
  await expect(select).toBeVisible({ timeout: 15_000 });
  await select.selectOption('in_auto');
  await expect(options.locator('p.judge-note')).toHaveText(/Saved/, { timeout: 10_000 });
  await options.close();
}

/** The human types `text` (no App pill) and sends it. */
async function sendPlain(page, fixture, text) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.insertText(text);
  await page.keyboard.press('Enter');
}

/** The page is idle: no reply streams. */
const replyEnded = (page, fixture) => expect(page.locator(fixture.ui.stop), 'the reply has ended').toHaveCount(0, { timeout: 30_000 });

/** The HUD's withheld line says `code`, in words. */
async function expectWithheld(hud, code) {
  await hud.expect('data-withheld', code, `the HUD says why: ${code}`, 30_000);
  const line = hud.host.locator('p[data-line="withheld"]');
  await expect(line).toHaveAttribute('data-code', code);
  await expect(line).toContainText('Herdr App could not be attached');
}

/** The tab a handoff opens (as e2e/specs/handoff.spec.mjs: reload a tab whose first navigation the routes missed). */
async function handoffTab(context) {
  const page = await context.waitForEvent('page', { timeout: 30_000 });
  await expect.poll(() => page.url(), { message: 'the new tab opened a Project page', timeout: 15_000 }).toMatch(/herdr_handoff=|\/c\//);
  const url = page.url();
  if (url.includes('herdr_handoff=') && (await page.locator('#prompt-textarea, [data-composer-markdown]').count()) === 0) {
    await page.waitForTimeout(2_000);
    if ((await page.locator('#prompt-textarea, [data-composer-markdown]').count()) === 0) await page.goto(url);
  }
  return page;
}

/**
 * A wake that cannot carry the App: nothing reaches the server, nothing is left in the
 * composer or in the Project's server draft, the HUD names `code`; `fix()` makes attaching
 * work; then the same wake goes out once, with the App. Returns the wake.
 */
async function withheldWakeThenSent({ page, worker, fixture, hud, sessionRef, code, fix, wakesBefore }) {
  const before = fixture.server.length;
  const pickerAsks = fixture.requests.get(BACKEND_APP_MENTIONS) ?? 0;
  await agentCycle(sandbox, hud, sessionRef, `Task for ${code}`);
  await expectWithheld(hud, code);
  if (code === 'app_picker_not_opened') {
    expect(fixture.requests.get(BACKEND_APP_MENTIONS) ?? 0, 'the trusted @ reached the page (it asked for the Apps)').toBeGreaterThan(pickerAsks);
  }
  expect(fixture.server.length, 'nothing App-less was sent').toBe(before);
  await expect(page.locator(fixture.ui.composer), 'the attempt left nothing in the composer').toHaveText(/^\s*$/);
  await expect(page.locator(fixture.ui.picker), 'no picker is left open').toHaveCount(0);
  await expect.poll(() => [...fixture.drafts.values()].filter((d) => d.conversationId === CONVERSATION && d.text.trim() !== '').map((d) => d.text),
    { message: 'no Project draft of the attempt stays on the server' }).toEqual([]);
  await fix();
  // The retry waits on the worker's clock: moved ahead until the wake's delivery started
  // (the HUD shows a delivery state; the withheld reason stays until a delivery lands), and
  // from there on real time, so its typing runs as it would. The whole wait keeps the old
  // deadline: the clock's part and the real part together are at most APP_RETRY_MS. The
  // clock moves 15 s a step (the retry falls due at most a step late, never early), so the
  // 30 s retry takes two settles, not six.
  const started = async () => (await hud.state.getAttribute('data-delivery-state')) !== ''
    || (await hud.state.getAttribute('data-withheld')) !== code;
  const moved = await runClock(worker, APP_RETRY_MS - 20_000, started, { step: 15_000 });
  expect(await started(), `the retry started within ${(APP_RETRY_MS - 20_000) / 1000} s of the worker's time`).toBe(true);
  const wake = await expectExactlyOne(fixture, { conversationId: CONVERSATION, marker: /^wake:/ }, {
    previous: wakesBefore,
    timeout: APP_RETRY_MS - moved,
    message: 'the withheld wake goes out once attaching works again',
    checkpoint: () => expectIdleAfterWakes(page, fixture, hud, wakesBefore + 1, 30_000),
  });
  expect(appNames(wake), 'the wake carries the Herdr App').toEqual([HERDR]);
  return wake;
}

for (const layout of LAYOUTS) {
  for (const csp of CSP_VARIANTS) {
    test(`acceptance 1 (${layout}, CSP ${csp}): after a human message with the Herdr App, the wake, a queue batch, a judge continue and the handoff seed each carry it exactly once; an unattachable App withholds with the reason`, async () => {
      test.setTimeout(420_000);
      const { context, worker, fixture } = await continuityWorld(sandbox, { csp, layout });
      fixture.conversations.set(PLAIN_CONVERSATION, { title: 'No Apps', turns: [{ role: 'user', text: 'Keep an eye on the web build.' }, { role: 'assistant', text: 'Will do.' }] });
      const { page, hud } = await openAndBind(context, worker, PROJECT_CHAT);
      await turnAutoOn(context, hud, PROJECT_CHAT);
      const sessionRef = await hud.sessionRef();
      await hud.expect('data-app', '', 'no App before any human pill');

      // The human's message carries the Herdr App (the fixture's pill generation of the layout).
      const human = await sendHumanWithApp(page, fixture, 'Plan the API refactor and hand it to the agents.');
      expect(appNames(human)).toEqual([HERDR]);
      await replyEnded(page, fixture);
      await hud.expect('data-app', 'herdr', 'the binding learned the App from the human turn');

      // 1. The settle wake, first withheld: with CSP none before trusted typing is allowed
      // (the editor's insertion does not open the picker: fail closed), with CSP strict
      // while the picker is broken.
      const fixAttach = csp === 'none'
        ? { code: 'app_no_permission', fix: () => allowTrustedTyping(context) }
        : { code: 'app_picker_not_opened', fix: async () => { fixture.appPicker = null; } };
      if (csp === 'strict') {
        await allowTrustedTyping(context);
        fixture.appPicker = 'broken';
      }
      await page.bringToFront();
      await withheldWakeThenSent({ page, worker, fixture, hud, sessionRef, ...fixAttach, wakesBefore: 0 });

      // 2. A queue batch: queued while the human's next (plain) message streams, sent after.
      fixture.streamMs = 6_000;
      await sendPlain(page, fixture, 'Refactor the parser, please.');
      await expect(page.locator(fixture.ui.stop), 'the reply streams').toBeVisible({ timeout: 10_000 });
      fixture.streamMs = 300;
      await page.locator(fixture.ui.composer).click();
      await page.keyboard.insertText('Then run the tests.');
      await queueRoot(page).locator('button[data-action="queue"]').click();
      await expect(queueRoot(page)).toHaveAttribute('data-queue-count', '1', { timeout: 10_000 });
      const batch = await expectExactlyOne(fixture, { conversationId: CONVERSATION, marker: /^qb:/ }, {
        timeout: 40_000,
        message: 'the queued message goes out once',
        checkpoint: async () => {
          await expect(queueRoot(page)).toHaveAttribute('data-queue-count', '0', { timeout: 30_000 });
          await replyEnded(page, fixture);
        },
      });
      expect(appNames(batch), 'the queue batch carries the Herdr App').toEqual([HERDR]);

      // 3. A judge continue: the reply declares its next step; the script continues it once.
      await judgeInAuto(context);
      fixture.replyWith = (text) => (text.includes('[herdr-continuity judge:') ? FINISHED : PENDING);
      await page.bringToFront();
      await sendPlain(page, fixture, 'Please add the config loader and its tests.');
      const judged = await expectExactlyOne(fixture, { conversationId: CONVERSATION, marker: /^judge:/ }, {
        timeout: 40_000,
        message: 'one judge continue',
        checkpoint: () => expect(hudRoot(page).locator('p[data-line="judge"]')).toContainText('Judge (script): done', { timeout: 30_000 }),
      });
      expect(appNames(judged), 'the judge continue carries the Herdr App').toEqual([HERDR]);
      expect(fixture.toolTurns.length, 'the planner had Herdr tools in the turns we typed').toBeGreaterThanOrEqual(4);

      // 4. A chat that never used an App: its wake is plain (bound to w2, its own Auto).
      if (csp === 'none') {
        const plain = await context.newPage();
        await plain.goto(chatgptUrl.conversation(PLAIN_CONVERSATION));
        const plainHud = new ContinuityHud(plain);
        const { panel } = await bindFromPanel(context, worker, plain, OTHER_WORKSPACE.id);
        await plainHud.expect('data-binding', OTHER_WORKSPACE.id);
        await panel.close();
        await plainHud.turnAutoOn();
        await plainHud.expect('data-app', '', 'a chat without pills has no App');
        const plainRef = await plainHud.sessionRef();
        await dispatchTask(sandbox, { sessionRef: plainRef, workspace: OTHER_WORKSPACE.id, pane: OTHER_WORKSPACE.pane, text: 'Watch the web build' });
        await reportAgent(sandbox, OTHER_WORKSPACE.pane, 'working');
        await plainHud.expect('data-scope-state', 'working');
        await reportAgent(sandbox, OTHER_WORKSPACE.pane, 'idle');
        const plainWake = await expectExactlyOne(fixture, { conversationId: PLAIN_CONVERSATION, marker: /^wake:/ }, {
          message: 'the plain chat gets its wake',
          checkpoint: () => expectIdleAfterWakes(plain, fixture, plainHud, 1),
        });
        expect(plainWake.apps ?? [], 'no App on a chat that never used one').toEqual([]);
        expect(plainWake.text.startsWith('@'), 'no mention typed').toBe(false);
        await plain.close();
        await page.bringToFront();
      }

      // 5. The handoff seed in a new chat of the Project carries the source's App.
      fixture.replyWith = () => FINISHED;
      await hud.expect('data-journal', 'journalRecorded', 'the chain exists before the handoff');
      await hud.expand();
      const opened = handoffTab(context);
      await hud.action('handoff').click();
      await opened;
      const isSeed = (m) => m.conversationId !== CONVERSATION && m.conversationId !== PLAIN_CONVERSATION && MARKER_LINE.test(m.text);
      await expect.poll(() => fixture.server.filter(isSeed).length, { message: 'the seed reached the new conversation', timeout: 60_000 }).toBe(1);
      const seed = fixture.server.find(isSeed);
      await hud.expect('data-active-target', seed.conversationId, 'the target moved once the seed was confirmed', 40_000);
      expect(fixture.server.filter(isSeed), 'one seed').toHaveLength(1);
      expect(appNames(seed), 'the handoff seed carries the Herdr App').toEqual([HERDR]);

      // Every message the extension typed into the Project carried the App, and only once.
      for (const message of backendMessages(fixture, { automatic: true }).filter((m) => m.conversationId !== PLAIN_CONVERSATION)) {
        expect(appNames(message), message.text.match(MARKER_LINE)?.[1]).toEqual([HERDR]);
      }
    });
  }
}

// Issue 11, the extension's side of the turn-end judge (SPEC J1–J4, J7, M4, M6, M7, Q2,
// O4), in real Chromium with the built extension, the real companion, the ChatGPT fixture
// and provider stand-ins on 127.0.0.1 (lib/provider-standins.mjs):
// - the HUD judge button sends the page's last turn and shows verdict, source and reason:
//   a confident decision is final (the LLM stand-in gets no request), an unsure one goes
//   to the LLM, with both down the script answers; a 0644 config.json is refused with a
//   message saying how to fix it;
// - no provider key ever reaches chrome.storage (local, session, sync) or the extension's
//   ports: what the worker posts and receives on the page's port is recorded and scanned,
//   and so is the answer a native port of the worker gets for the same judge call (the
//   live native port cannot be tapped: its connectNative is bound when the worker starts);
// - semantic Auto: a reply that declares its own next step is continued exactly once, by a
//   message naming the judge; the queue beats the judge; the bound on continues in a row
//   holds while the fixture keeps answering "next I will …".
//
// "Exactly once" is counted at the fixture's backend after a checkpoint (the HUD's judge
// line says the next turn end was judged), never after a sleep.
import { test, expect } from '../lib/test.mjs';
import { CHATS, CONVERSATION, continuityWorld, openAndBind, turnAutoOn } from '../lib/continuity.mjs';
import { HUD_HOST, HudProbe, hudRoot, queueRoot } from '../lib/hud.mjs';
import { backendMessages, expectExactlyOne, waitForMessages } from '../lib/backend.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { nativeRequestFromWorker } from '../lib/extension.mjs';
import { withProviderStandins, writeJudgeConfig } from '../lib/provider-standins.mjs';

const CHAT = CHATS.find((c) => !c.project);
const USER_TEXT = 'Please add the config loader and its tests.';
/** A reply that announces the assistant's own next step (the script says continue). */
const PENDING = 'The config loader is in and its tests pass. Next I will write the route pool and its cooldown tests.';
/** A reply the script calls done. */
const FINISHED = 'The route pool is written, its cooldown tests pass and everything is committed on the branch.';
/** Provider keys: none of them may ever reach the extension. */
const KEYS = { jev: 'sk-e2e-decision-5b1f0c', small: 'sk-e2e-chat-93d2aa' };
const JUDGE_CONTINUES = { conversationId: CONVERSATION, marker: /^judge:/ };

function statusLine(page) {
  return hudRoot(page).locator('p.status');
}

function judgeLine(page) {
  return hudRoot(page).locator('p[data-line="judge"]');
}

/** A decision stand-in (unsure until told otherwise) and a chat stand-in for `use`. */
const withStandins = (use) => withProviderStandins(use, { decision: 0.5 });

function routes({ decision, chat }) {
  return [decision.route('jev', { apiKey: KEYS.jev }), chat.route('small', { apiKey: KEYS.small })];
}

/** A world whose conversation already ends with `reply` to `USER_TEXT`. */
async function worldWithReply(sandbox, reply, options = {}) {
  const world = await continuityWorld(sandbox, options);
  world.fixture.conversations.get(CONVERSATION).turns = [
    { role: 'user', text: USER_TEXT },
    { role: 'assistant', text: reply },
  ];
  return world;
}

async function openChat(context) {
  const page = await context.newPage();
  await page.goto(CHAT.url);
  const probe = new HudProbe(page);
  await probe.expectCompanionConnected();
  await probe.expand();
  return page;
}

/** Presses the HUD's judge button and waits for a notice matching `expected`. */
async function pressJudge(page, expected) {
  await statusLine(page).evaluate((el) => { el.textContent = ''; });
  const button = hudRoot(page).locator('button[data-action="llm_judge"]');
  await expect(button).toBeEnabled({ timeout: 15_000 });
  await button.click();
  await expect(statusLine(page), 'the HUD shows the judge\'s answer').toContainText(expected, { timeout: 30_000 });
  return statusLine(page).textContent();
}

/** Sets the options page's judge use and bound, with the keyboard (O4). */
async function setJudgeOptions(context, { mode, max }) {
  const options = await context.newPage();
  await options.goto(`${EXTENSION_ORIGIN}options.html`);
  const select = options.locator('select#judgeMode');
  await expect(select).toBeVisible({ timeout: 15_000 });
  await expect(options.locator('#queueLimits'), 'the queue limits are shown').toContainText('20');
  const note = options.locator('p.judge-note');
  await select.focus();
  await select.selectOption(mode);
  await expect(note, 'the judge use is saved').toHaveText(/Saved/, { timeout: 10_000 });
  if (max !== undefined) {
    await note.evaluate((el) => { el.textContent = ''; });
    const input = options.locator('input#maxContinues');
    await input.fill(String(max));
    await input.press('Tab');
    await expect(note, 'the bound is saved').toHaveText(/Saved/, { timeout: 10_000 });
  }
  await options.close();
}

/** The human types `text` and sends it. */
async function send(page, fixture, text) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.insertText(text);
  await page.keyboard.press('Enter');
}

test.describe('the turn-end judge in the extension (issue 11)', () => {
  test('the HUD judge button: a confident decision is final, an unsure one goes to the LLM, both down → script (J2, J3, J7, M4)', async ({ sandbox }) => {
    await withStandins(async (standins) => {
      const { decision, chat } = standins;
      writeJudgeConfig(sandbox.home, { routes: routes(standins), goal_priors: true });
      const { context, fixture } = await worldWithReply(sandbox, PENDING);
      const page = await openChat(context);
      const sent = fixture.server.length;

      decision.answer({ p: 0.92, priors: { can_continue: 0.9, needs_human: 0.1 } });
      const confident = await pressJudge(page, 'Judge (jev): continue');
      expect(confident, 'the J7 priors are shown as advice').toContain('Advice only (goal priors): can_continue 90%, needs_human 10%');
      expect(chat.count, 'a confident decision is final: the LLM is not asked').toBe(0);
      expect(decision.count).toBe(1);
      // The page's own turn reached the judge (read from the DOM when the button was pressed).
      expect(decision.requests[0].body.state.assistant_latest_response).toBe(PENDING);
      expect(decision.requests[0].body.state.user_request).toBe(USER_TEXT);

      decision.answer(0.5);
      chat.answer({ verdict: 'done', reason: "the next steps are the user's" });
      await pressJudge(page, "Judge (llm): done — jev unsure");
      expect(chat.count, 'an unsure decision goes to the LLM').toBe(1);

      decision.fail(503);
      chat.fail(503);
      await pressJudge(page, 'Judge (script): continue');
      expect(fixture.server.length, 'the judge button never sends anything into the chat').toBe(sent);
    });
  });

  test('a 0644 config.json is refused with a message in the HUD that says how to fix it (J5)', async ({ sandbox }) => {
    await withStandins(async (standins) => {
      const file = writeJudgeConfig(sandbox.home, { routes: routes(standins) }, { mode: 0o644 });
      const { context } = await worldWithReply(sandbox, PENDING);
      const page = await openChat(context);
      const text = await pressJudge(page, 'Judge failed');
      expect(text).toContain(`chmod 600 ${file}`);
      expect(standins.decision.count + standins.chat.count, 'no provider is asked with a refused config').toBe(0);
    });
  });

  test('no provider key appears in chrome.storage or on the extension\'s ports (J4)', async ({ sandbox }) => {
    await withStandins(async (standins) => {
      writeJudgeConfig(sandbox.home, { routes: routes(standins) });
      const { context, worker } = await worldWithReply(sandbox, PENDING);
      // Record every message the worker posts to or receives from a page port opened from
      // now on (a listener after worker.js's own one sees each new port first, before the
      // wasm shell posts anything on it).
      await worker.evaluate(() => {
        const log = [];
        globalThis.__portLog = log;
        chrome.runtime.onConnect.addListener((port) => {
          const post = port.postMessage.bind(port);
          port.postMessage = (message) => { log.push(`out ${JSON.stringify(message)}`); return post(message); };
          port.onMessage.addListener((message) => log.push(`in ${JSON.stringify(message)}`));
        });
      });
      const page = await openChat(context);
      standins.decision.answer(0.92);
      await pressJudge(page, 'Judge (jev): continue');
      // The native port's connectNative is bound when the worker starts, so a test cannot
      // tap the live one; a port the worker opens now carries the same call's answer.
      const native = await nativeRequestFromWorker(worker, 'judge.turn_end', { user_text: USER_TEXT, assistant_text: PENDING, conversation: CHAT.sessionRef });
      const seen = await worker.evaluate(async () => ({
        ports: globalThis.__portLog,
        local: JSON.stringify(await chrome.storage.local.get(null)),
        session: JSON.stringify(await chrome.storage.session.get(null)),
        sync: JSON.stringify(await chrome.storage.sync.get(null)),
      }));
      seen.ports.push(`native ${JSON.stringify(native)}`);
      const ports = seen.ports.join('\n');
      expect(ports, 'the recording saw the page\'s turn on the page port').toContain('"action":"llm_judge"');
      // The page gets the verdict as a _locales message and its substitutions.
      expect(ports, 'and the verdict shown to the page').toContain('"args":["jev","continue",');
      expect(ports, 'as the judge line').toContain('"key":"judgeLine"');
      expect(ports, 'and the runtime\'s verdict on a native port').toContain('"type":"judge_verdict"');
      for (const key of Object.values(KEYS)) {
        expect(ports, 'no key on any port').not.toContain(key);
        for (const area of ['local', 'session', 'sync']) expect(seen[area], `no key in chrome.storage.${area}`).not.toContain(key);
      }
      expect(standins.decision.requests[0].bearer, 'the key reached its provider only').toBe(KEYS.jev);
    });
  });

  test('semantic Auto: a reply that declares its next step is continued exactly once, naming the judge (J1, M6, M7)', async ({ sandbox }) => {
    // No provider: the script decides (continue for the pending reply, done for the next).
    const { context, worker, fixture } = await continuityWorld(sandbox);
    fixture.replyWith = (text) => (text.includes('[herdr-continuity judge:') ? FINISHED : PENDING);
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await turnAutoOn(context, hud, CHAT);
    await setJudgeOptions(context, { mode: 'in_auto' });
    await send(page, fixture, USER_TEXT);
    const continued = await expectExactlyOne(fixture, JUDGE_CONTINUES, {
      timeout: 30_000,
      message: 'one continue after the pending reply',
      // The reply to the continue was judged too (done): nothing more will follow.
      checkpoint: () => expect(judgeLine(page)).toContainText('Judge (script): done', { timeout: 30_000 }),
    });
    expect(continued.text).toContain('The turn-end judge (script) decided to continue');
    expect(continued.text).toMatch(/\(Automatic continue 1 of at most 3 in a row\.\)\n\[herdr-continuity judge:/);
  });

  test('semantic Auto: the queue beats the judge (Q2)', async ({ sandbox }) => {
    await withStandins(async (standins) => {
      standins.decision.answer(0.92); // the judge would continue every reply it is asked about
      writeJudgeConfig(sandbox.home, { routes: routes(standins) });
      const { context, worker, fixture } = await continuityWorld(sandbox);
      // The first reply declares more work; the reply to the queued message is too short to judge.
      fixture.replyWith = (text) => (text.startsWith(USER_TEXT) ? PENDING : 'Done.');
      const { page, hud } = await openAndBind(context, worker, CHAT);
      await turnAutoOn(context, hud, CHAT);
      await setJudgeOptions(context, { mode: 'in_auto' });
      fixture.streamMs = 6_000;
      await send(page, fixture, USER_TEXT);
      await expect(page.locator(fixture.ui.stop), 'the reply streams').toBeVisible({ timeout: 10_000 });
      fixture.streamMs = 300;
      await page.locator(fixture.ui.composer).click();
      await page.keyboard.insertText('Then run the whole suite.');
      await queueRoot(page).locator('button[data-action="queue"]').click();
      await expect(queueRoot(page)).toHaveAttribute('data-queue-count', '1', { timeout: 10_000 });
      const batch = await expectExactlyOne(fixture, { conversationId: CONVERSATION, marker: /^qb:/ }, {
        timeout: 30_000,
        message: 'the queued message is sent when the reply ends',
        // The reply to the batch ended and was seen (too short to judge).
        checkpoint: () => expect(judgeLine(page)).toContainText('too short', { timeout: 30_000 }),
      });
      expect(batch.text).toMatch(/^Then run the whole suite\.\n\[herdr-continuity qb:/);
      expect(standins.decision.count, 'the judge was not asked for the turn end the queue took').toBe(0);
      expect(backendMessages(fixture, JUDGE_CONTINUES), 'no judge continue').toEqual([]);
    });
  });

  test('semantic Auto: at most N continues in a row while the reply keeps saying "next I will …" (M7)', async ({ sandbox }) => {
    await withStandins(async (standins) => {
      standins.decision.answer(0.92);
      writeJudgeConfig(sandbox.home, { routes: routes(standins) });
      const { context, worker, fixture } = await continuityWorld(sandbox);
      let step = 0;
      fixture.replyWith = () => `Step ${++step} is done and its tests pass. Next I will do step ${step + 1}.`;
      const { page, hud } = await openAndBind(context, worker, CHAT);
      await turnAutoOn(context, hud, CHAT);
      await setJudgeOptions(context, { mode: 'in_auto', max: 2 });
      await send(page, fixture, USER_TEXT);
      await waitForMessages(fixture, 2, JUDGE_CONTINUES, { timeout: 40_000, message: 'two continues' });
      await expect(judgeLine(page), 'Auto says it stopped').toContainText('Auto stopped continuing', { timeout: 30_000 });
      await expect(page.locator(fixture.ui.stop), 'the last reply finished').toHaveCount(0, { timeout: 20_000 });
      const continues = backendMessages(fixture, JUDGE_CONTINUES);
      expect(continues.length, 'the bound holds').toBe(2);
      for (const message of continues) expect(message.text).toMatch(/The turn-end judge \(jev\) decided to continue[^]*\n<<<HC_DATA kind=agent_output n=[0-9a-f]{12}>>>\njev:/);
      expect(standins.decision.count, 'the third reply is not judged: the bound is reached').toBe(2);
    });
  });
});

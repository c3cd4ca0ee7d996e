// The HUD's Handoff end to end (SPEC X1–X8, B8, C2, Q9; §V8), in real Chromium with the
// built extension, the real companion over real Native Messaging and its journal, and the
// ChatGPT fixture's Project new-chat flow, under both CSP variants:
// - Handoff on a journaled Project conversation opens a new chat of the Project, types the
//   package's message (then the ledger's marker line) into it, and the Project's active
//   target switches to the new conversation only once the seed is confirmed there; the
//   binding stays;
// - a seed the page certainly refused (twice) offers Copy Prompt with the package's bytes;
//   a seed whose fate is unknown never offers it (X8);
// - the service worker stopped (CDP `ServiceWorker.stopWorker`, from an extension page's session) after the seed reached
//   the server and before the page shows it: the restarted worker finishes the transfer
//   from the snapshot, without a second new conversation (B7, X6);
// - with the journal's chain unknown the transfer fails, the source stays the target and
//   no tab is opened (X5).
//
// Every wait is a poll with a deadline on a HUD hook, the fixture's record or the worker;
// the ledger's deadlines pass on the worker's test clock (e2e/lib/clock.mjs).
import { test, expect } from '../lib/test.mjs';
import { askAndWait, CHATS, CONVERSATION, continuityWorld, openAndBind, ContinuityHud, turnAutoOn, watchHudHook } from '../lib/continuity.mjs';
import { CSP_VARIANTS, MARKER_LINE } from '../fixtures/chatgpt.mjs';
import { nativeRequestFromWorker, stopWorkerAndAwaitRestart } from '../lib/extension.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { runClock } from '../lib/clock.mjs';

const PROJECT_CHAT = CHATS.find((c) => c.project);

/** The tab the worker opened with chrome.tabs.create. Routes may miss the first navigation
 * of a tab an extension opens: then it still shows the URL naming the transfer without the
 * fixture's page, and the test loads that URL again. */
async function handoffTab(context) {
  const page = await context.waitForEvent('page', { timeout: 30_000 });
  await expect.poll(() => page.url(), { message: 'the new tab opened a Project page', timeout: 15_000 }).toMatch(/herdr_handoff=|\/c\//);
  const url = page.url();
  if (url.includes('herdr_handoff=') && (await page.locator('#prompt-textarea').count()) === 0) {
    await page.waitForTimeout(2_000);
    if ((await page.locator('#prompt-textarea').count()) === 0) await page.goto(url);
  }
  return { page, url };
}

/** A bound, journaled Project conversation with its HUD expanded. */
async function journaledProjectChat(sandbox, csp) {
  const world = await continuityWorld(sandbox, { csp, replyWith: () => 'The loader is in and its tests pass.' });
  const { page, hud } = await openAndBind(world.context, world.worker, PROJECT_CHAT);
  await askAndWait(page, world.fixture, 'Add the config loader and its tests');
  await hud.expect('data-journal', 'journalRecorded', 'C1: the chain exists before the handoff');
  await hud.expand();
  return { ...world, page, hud };
}

/** The params the worker prepares the bound Project chat's handoff with (X9: its
 * workspace, its inbox ref, its queue — empty here). */
const prepareParams = (continuityId) => ({
  continuity_id: continuityId, source_url: PROJECT_CHAT.url, workspace_id: 'w1', browser_session_ref: PROJECT_CHAT.sessionRef, queue: [],
});

/** The package the runtime gives for the source (the same params and facts give the same package). */
async function packageOf(worker) {
  const resolved = await nativeRequestFromWorker(worker, 'continuity.resolve', { conversation_id: CONVERSATION });
  const prepared = await nativeRequestFromWorker(worker, 'herdr_mcp.browser_handoff.prepare', prepareParams(resolved.result.continuity_id));
  return prepared.result;
}

for (const csp of CSP_VARIANTS) {
  test.describe(`Handoff from the HUD (§V8), CSP ${csp}`, () => {
    test('the target switches only after the seed is confirmed, and the seed is the package\'s message byte for byte (X4, X6, B8)', async ({ sandbox }) => {
      test.slow();
      const { context, worker, fixture } = await continuityWorld(sandbox, { csp, replyWith: () => 'The loader is in and its tests pass.' });
      const { page, hud } = await openAndBind(context, worker, PROJECT_CHAT);
      await askAndWait(page, fixture, 'Add the config loader and its tests');
      await hud.expect('data-journal', 'journalRecorded', 'C1: the chain exists before the handoff');
      await hud.expect('data-handoff-button', 'handoff', 'X1: the HUD offers Handoff');
      await hud.expand();
      const targetHook = await watchHudHook(page, 'data-active-target');
      // The package as the worker will get it: prepared now, before the cut-over journals the
      // new conversation's turns into the chain (its newest turns are part of the seed, X9).
      const resolved = await nativeRequestFromWorker(worker, 'continuity.resolve', { conversation_id: CONVERSATION });
      const prepared = await nativeRequestFromWorker(worker, 'herdr_mcp.browser_handoff.prepare', prepareParams(resolved.result.continuity_id));
      const message = prepared.result.automatic_delivery.params.message;
      const opened = handoffTab(context);
      // Keyboard: the button is focusable and Enter presses it.
      await hud.action('handoff').focus();
      await page.keyboard.press('Enter');
      const { page: target } = await opened;
      await expect.poll(() => fixture.server.filter((m) => m.conversationId !== CONVERSATION && MARKER_LINE.test(m.text)).length,
        { message: 'the seed reached the new conversation', timeout: 40_000 }).toBe(1);
      const seed = fixture.server.find((m) => m.conversationId !== CONVERSATION && MARKER_LINE.test(m.text));
      await hud.expect('data-active-target', seed.conversationId, 'X6: the target is the new conversation once the seed is confirmed', 40_000);
      await hud.expect('data-binding', 'w1', 'B8: the binding stays');
      await hud.expect('data-handoff-step', 'done');
      await expect(target).toHaveURL(new RegExp(`/c/${seed.conversationId}$`));
      // The source, handed over, offers no second Handoff (it would fork the chain).
      await hud.expect('data-handoff-button', 'none', 'the retired source offers no Handoff');
      await expect(hud.action('handoff')).toHaveCount(0);
      // X6, X7: the target took exactly two values, the source then the new conversation,
      // and it switched only after the fixture's server had the seed.
      const targets = await targetHook.read();
      expect(targets.map((t) => t.value)).toEqual([CONVERSATION, seed.conversationId]);
      expect(targets[1].at).toBeGreaterThanOrEqual(seed.at);
      const urls = await worker.evaluate(async () => (await chrome.tabs.query({})).map((t) => t.url));
      expect(urls.filter((u) => u.includes('herdr_handoff=') || u.includes(`/c/${seed.conversationId}`)), 'one new tab').toHaveLength(1);
      // X4: the seed is the package's message, byte for byte (then the ledger's marker line).
      expect(prepared.result.manual_delivery.copy_prompt).toBe(message);
      const lines = seed.text.split('\n');
      expect(MARKER_LINE.test(lines.at(-1))).toBe(true);
      expect(lines.at(-1).match(MARKER_LINE)[2], 'the seed\'s marker names the Project\'s session ref').toBe(PROJECT_CHAT.sessionRef);
      expect(lines.slice(0, -1).join('\n')).toBe(message);
      expect(fixture.server.filter((m) => m.text.includes('HERDR_CONTINUITY_REF')), 'one seed, one new conversation').toHaveLength(1);
    });

    test('a seed the page certainly refused twice offers Copy Prompt with the package\'s bytes (X8)', async ({ sandbox }) => {
      test.slow();
      const { context, worker, fixture, page, hud } = await journaledProjectChat(sandbox, csp);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: 'https://chatgpt.com' });
      const buttonHook = await watchHudHook(page, 'data-handoff-button');
      fixture.seedFault = 'seed_failed';
      const opened = handoffTab(context);
      await hud.action('handoff').click();
      const { page: target } = await opened;
      await expect.poll(() => fixture.refusedSeeds.length, { message: 'the page refused the first seed', timeout: 30_000 }).toBe(1);
      fixture.seedFault = 'seed_failed';
      // A refused seed is known lost only when the ledger's submitted deadline (20 s,
      // delivery_ledger::SUBMITTED_DEADLINE_MS) finds our text back in the idle composer: that
      // deadline passes on the worker's clock, and each wait keeps its old deadline (the
      // clock's part and the real part together: 60 s, then 40 s).
      await runClock(worker, 45_000, () => fixture.refusedSeeds.length >= 2);
      await expect.poll(() => fixture.refusedSeeds.length, { message: 'the seed went once more and was refused again', timeout: 15_000 }).toBe(2);
      const copyOffered = async () => (await hud.state.getAttribute('data-handoff-button')) === 'copy_prompt';
      await runClock(worker, 30_000, copyOffered);
      await hud.expect('data-handoff-button', 'copy_prompt', 'X8: Copy Prompt after two certain failures', 10_000);
      await hud.expect('data-active-target', CONVERSATION, 'the source stays the target');
      expect(fixture.server.filter((m) => m.text.includes('HERDR_CONTINUITY_REF')), 'nothing reached a chat').toHaveLength(0);
      const { manual_delivery: { copy_prompt: prompt } } = await packageOf(worker);
      await page.bringToFront();
      await hud.action('copy_prompt').click();
      // What was copied is kept inside the closed root only (the page cannot read it).
      await expect(hud.action('copy_prompt')).toHaveAttribute('data-copied', prompt);
      expect(await page.evaluate(() => {
        const host = document.querySelector('herdr-continuity-hud');
        return host.shadowRoot === null && ![...host.attributes].some((a) => a.value.includes('HERDR_CONTINUITY_REF'));
      }), 'the page cannot read the prompt').toBe(true);
      await hud.expect('data-copied', 'yes', 'the prompt is on the clipboard');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(prompt);
      expect(fixture.refusedSeeds.map((r) => r.text.split('\n').slice(0, -1).join('\n')), 'each refused seed was the package\'s message').toEqual([prompt, prompt]);
      expect((await buttonHook.read()).map((b) => b.value)).toEqual(['handoff', 'none', 'copy_prompt']);
      await target.close();
    });

    test('an uncertain seed never offers Copy Prompt and keeps the source the target (X7, X8)', async ({ sandbox }) => {
      test.slow();
      const { context, worker, fixture, page, hud } = await journaledProjectChat(sandbox, csp);
      const buttonHook = await watchHudHook(page, 'data-handoff-button');
      // The send times out and the server has nothing: no conversation, no marker, ever.
      fixture.seedFault = 'seed_send_timeout';
      fixture.seedTimeoutServer = 'none';
      const opened = handoffTab(context);
      await hud.action('handoff').click();
      await opened;
      await hud.expect('data-handoff-step', 'seeding');
      // The send reached the server (which took the fault), then the worker's time runs
      // past the ledger's deadlines for typing and submitting (15 s + 20 s): unconfirmed.
      await expect.poll(() => fixture.seedFault, { message: 'the seed was sent', timeout: 40_000 }).toBeNull();
      // The page reports its `unconfirmed` after its own wait for the composer to clear
      // (content-composer.js PLUMBING_WAIT_MS, 2 s, real time): that report reaches the
      // worker before its deadlines move, so the test takes the path real use takes.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await runClock(worker, 40_000);
      await hud.expect('data-active-target', CONVERSATION, 'X7: the source stays the target');
      const buttons = (await buttonHook.read()).map((b) => b.value);
      expect(buttons, 'X8: never Copy Prompt while the seed is uncertain').not.toContain('copy_prompt');
      expect(await hud.state.getAttribute('data-handoff-step')).not.toBe('done');
    });

    test('a worker restart mid-transfer finishes it without a second new conversation (B7, X6)', async ({ sandbox }) => {
      test.slow();
      const { context, worker, fixture, page, hud } = await journaledProjectChat(sandbox, csp);
      // The user turn shows only 8 s after the send: the window to stop the worker in.
      fixture.confirmDelayMs = 8_000;
      const opened = handoffTab(context);
      await hud.action('handoff').click();
      await opened;
      await expect.poll(() => fixture.server.filter((m) => m.text.includes('HERDR_CONTINUITY_REF')).length,
        { message: 'the seed reached the server', timeout: 40_000 }).toBe(1);
      // Mid-transfer: the seed is on the server, the page does not show it yet.
      await hud.expect('data-handoff-step', 'seeding');
      await hud.expect('data-active-target', CONVERSATION, 'X7: the source is still the target');
      await stopWorkerAndAwaitRestart(context, worker);
      await hud.expect('data-handoff-step', 'done', 'the restarted worker finished the transfer', 60_000);
      const seeds = fixture.server.filter((m) => m.text.includes('HERDR_CONTINUITY_REF'));
      expect(seeds, 'one seed').toHaveLength(1);
      await hud.expect('data-active-target', seeds[0].conversationId, 'X6: the target is the new conversation');
      const restarted = context.serviceWorkers().find((w) => w.url().startsWith(EXTENSION_ORIGIN));
      const urls = await restarted.evaluate(async () => (await chrome.tabs.query({})).map((t) => t.url));
      expect(urls.filter((u) => u.includes('herdr_handoff=') || u.includes(`/c/${seeds[0].conversationId}`)), 'one new tab').toHaveLength(1);
    });

    test('an unknown chain fails the handoff: the source stays the target and no tab opens (X5, C2)', async ({ sandbox }) => {
      const { context, worker } = await continuityWorld(sandbox, { csp });
      const { page, hud } = await openAndBind(context, worker, PROJECT_CHAT);
      await hud.expand();
      let tabs = 0;
      context.on('page', () => { tabs += 1; });
      await hud.action('handoff').click();
      await hud.expect('data-handoff-step', 'failed', 'X5: nothing journaled yet, so the chain cannot be confirmed');
      await expect(hud.host.locator('p[data-line="handoff"]')).toContainText(PROJECT_CHAT.url);
      await hud.expect('data-active-target', CONVERSATION);
      await page.waitForTimeout(1_000);
      expect(tabs).toBe(0);
    });
  });
}

// A plain ChatGPT conversation (outside a Project) is bound on its own: the Handoff opens
// ChatGPT's new chat, and the binding and Auto move to the new conversation only after the
// seed is confirmed there (X6, X1; the conversation scope's cut-over, as on z.ai, X10).
test.describe('Handoff outside a Project', () => {
  test('a plain conversation hands over to a new chat; its binding and Auto move with the cut-over', async ({ sandbox }) => {
    test.slow();
    const plain = CHATS.find((c) => !c.project);
    const { context, worker, fixture } = await continuityWorld(sandbox, { replyWith: () => 'The loader is in and its tests pass.' });
    const { page, hud } = await openAndBind(context, worker, plain);
    await askAndWait(page, fixture, 'Add the config loader and its tests');
    await hud.expect('data-journal', 'journalRecorded', 'C1: the chain exists before the handoff');
    await turnAutoOn(context, hud, plain);
    const bindingHook = await watchHudHook(page, 'data-binding');
    const opened = handoffTab(context);
    await hud.action('handoff').click();
    const { page: target } = await opened;
    await expect.poll(() => fixture.server.filter((m) => m.conversationId !== CONVERSATION && MARKER_LINE.test(m.text)).length,
      { message: 'the seed reached the new conversation', timeout: 40_000 }).toBe(1);
    const seed = fixture.server.find((m) => m.conversationId !== CONVERSATION && MARKER_LINE.test(m.text));
    expect(seed.projectId ?? null, 'a new chat outside any Project').toBeNull();
    const targetHud = new ContinuityHud(target);
    await targetHud.expect('data-binding', 'w1', 'the new conversation is bound after the cut-over', 40_000);
    await targetHud.expect('data-auto', 'on', 'X1: it inherits the source\'s Auto');
    await page.bringToFront();
    await hud.expect('data-binding', '', 'the old conversation is no longer bound');
    const seen = await bindingHook.read();
    expect(seen.map((b) => b.value)).toEqual(['w1', '']);
    expect(seen[1].at, 'the binding moved only after the backend had the seed').toBeGreaterThanOrEqual(seed.at);
    expect(fixture.server.filter((m) => m.text.includes('HERDR_CONTINUITY_REF')), 'one seed, one new conversation').toHaveLength(1);
  });
});

// Issue 12, the HUD's Handoff on z.ai (SPEC X10, X1, X6, C1), in real Chromium with the
// built extension, the real companion over real Native Messaging and its journal, the Herdr
// stand-in and the z.ai fixture's new-chat flow (fixtures/chatsites.mjs):
// - a bound z.ai conversation's turns are journaled;
// - Handoff opens z.ai's new chat in a new tab and types the package's message there as a
//   plain user message (the raw channel: never the JSON bridge's results message);
// - z.ai is conversation-scoped: the binding moves to the new conversation, with its
//   workspace and the source's Auto, only once the new conversation's id and the seed's
//   marker are in; the source is left unbound, and one new conversation exists.
//
// Every wait is a poll with a deadline on a HUD hook or the fixture's record.
import { test, expect } from '../lib/test.mjs';
import { ContinuityHud, WORKSPACE, chatSiteWorld, openSiteBoundWithAuto, persistedContinuity, watchHudHook } from '../lib/continuity.mjs';
import { MARKER_LINE } from '../fixtures/chatsites.mjs';
import { nativeRequestFromWorker } from '../lib/extension.mjs';

const CONVERSATION = '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

test.describe('Handoff on z.ai (X10)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('a bound z.ai conversation hands over to a new z.ai chat; the binding and Auto move only once the seed is confirmed there', async ({ sandbox }) => {
    test.slow();
    const { context, worker, fixture } = await chatSiteWorld(sandbox, 'zai', CONVERSATION, { replyWith: () => 'The loader is in and its tests pass.' });
    const { page, hud } = await openSiteBoundWithAuto(context, worker, fixture, CONVERSATION);

    // C1 on z.ai: a finished reply and its question are journaled.
    await page.locator(fixture.ui.composer).fill('Add the config loader and its tests');
    await page.locator(fixture.ui.composer).press('Enter');
    await hud.expect('data-journal', 'journalRecorded', 'C1: the z.ai turns are in the journal', 30_000);
    const resolved = await nativeRequestFromWorker(worker, 'continuity.resolve', { conversation_id: CONVERSATION });
    expect(resolved.result?.continuity_id, 'the runtime knows the chain').toMatch(/^hc-/);

    await hud.expand();
    await hud.expect('data-handoff-button', 'handoff', 'X1: the HUD offers Handoff on z.ai');
    const bindingHook = await watchHudHook(page, 'data-binding');
    const opened = context.waitForEvent('page', { timeout: 30_000 });
    await hud.action('handoff').click();
    const target = await opened;
    await expect.poll(() => target.url(), { message: 'the new tab opened z.ai\'s new chat', timeout: 15_000 }).toMatch(/^https:\/\/chat\.z\.ai\/(\?herdr_handoff=|c\/)/);
    if (target.url().includes('herdr_handoff=') && (await target.locator(fixture.ui.composer).count()) === 0) {
      // Routes may miss the first navigation of a tab an extension opens: load it again.
      await target.waitForTimeout(2_000);
      if ((await target.locator(fixture.ui.composer).count()) === 0) await target.goto(target.url());
    }
    await expect.poll(() => fixture.created.length, { message: 'one new z.ai conversation', timeout: 40_000 }).toBe(1);
    const [created] = fixture.created;
    const [seed] = fixture.messagesOf(created);
    // X4, X10: the package's message, byte for byte, then the ledger's marker line — a plain
    // message, not the bridge's results.
    // The params the worker sent (X9: the source's workspace and inbox ref, its empty queue).
    const prepared = await nativeRequestFromWorker(worker, 'herdr_mcp.browser_handoff.prepare', {
      continuity_id: resolved.result.continuity_id, source_url: fixture.url(CONVERSATION),
      workspace_id: WORKSPACE.id, browser_session_ref: `zai:conv:${CONVERSATION}`, queue: [],
    });
    expect(prepared.result?.handoff?.target_context?.provider).toBe('zai');
    const lines = seed.text.split('\n');
    expect(MARKER_LINE.test(lines.at(-1))).toBe(true);
    expect(lines.at(-1).match(MARKER_LINE)[2], 'a seed into a chat without an id yet names no ref').toBeUndefined();
    expect(lines.slice(0, -1).join('\n')).toBe(prepared.result.manual_delivery.copy_prompt);
    expect(seed.text.startsWith('HERDR_TOOL_RESULTS'), 'not the JSON bridge\'s channel').toBe(false);

    // X6, X10: the binding moves to the new conversation, with the source's Auto (X1).
    const targetHud = new ContinuityHud(target);
    await targetHud.expect('data-binding', WORKSPACE.id, 'the new conversation is bound once the seed is confirmed', 40_000);
    await targetHud.expect('data-auto', 'on', 'X1: the target inherits the source\'s Auto');
    await page.bringToFront();
    await hud.expect('data-binding', '', 'the source is no longer bound');
    await hud.expect('data-handoff-step', 'done');
    // The source kept its binding until after the backend had the seed.
    const seen = await bindingHook.read();
    expect(seen.map((b) => b.value)).toEqual([WORKSPACE.id, '']);
    expect(seen[1].at).toBeGreaterThanOrEqual(seed.at);
    // The snapshot is written within the persist debounce (200 ms, B7) after the move the
    // HUD already shows; the polls that saw it come every 50–200 ms, so wait for the write.
    await expect.poll(async () => JSON.stringify((await persistedContinuity(worker))?.bindings ?? null),
      { message: 'the persisted binding names the new conversation', timeout: 5_000 }).toContain(`zai:${created}`);
    const bindings = JSON.stringify((await persistedContinuity(worker))?.bindings ?? null);
    expect(bindings, 'the persisted binding names the new conversation').toContain(`zai:${created}`);
    expect(bindings, 'and no longer the source').not.toContain(`zai:${CONVERSATION}`);
    expect(fixture.created, 'one new conversation').toHaveLength(1);
    expect(fixture.server.filter((m) => m.text.includes('HERDR_CONTINUITY_REF')), 'one seed').toHaveLength(1);
  });
});

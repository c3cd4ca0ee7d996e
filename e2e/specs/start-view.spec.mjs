// Issue 28, the start view: while a restarted service worker's wasm compiles, worker.js posts
// the page the view the core stored for its URL (ext-core `worker::start_view`, storage key
// `start_keys.view`), marked provisional; the core's live view replaces it once the wasm is up.
//
// The worker is stopped through CDP (`ServiceWorker.stopWorker`, what Chrome does to an idle
// worker); the page's reconnect starts it again. Every view the page renders is recorded, in
// order, by a MutationObserver in our content script's isolated world (the HUD's closed root
// is readable there only): whether it was the start view (the host's `data-start-view`), the
// companion line, and the binding and Auto hooks.
import { test, expect } from '../lib/test.mjs';
import { CHATS, WORKSPACE, continuityWorld, openAndBind, persistedContinuity, turnAutoOn } from '../lib/continuity.mjs';
import { workerStopper } from '../bench/cold-start.mjs';
import { HUD_HOST } from '../lib/hud.mjs';
import { inContentWorld } from '../lib/shadow.mjs';

const PLAIN_CHAT = CHATS[1];

/** Starts recording the page's renders (cleared at every call). */
async function recordRenders(page) {
  await expect.poll(() => inContentWorld(page, (selector) => {
    const host = document.querySelector(selector);
    if (!host) return false;
    const root = chrome.dom.openOrClosedShadowRoot(host);
    globalThis.__startViewRenders = [];
    globalThis.__startViewObserver?.disconnect();
    globalThis.__startViewObserver = new MutationObserver((records) => {
      if (!records.some((r) => r.attributeName === 'data-companion')) return;
      const hooks = root.querySelector('[data-hud-state]').dataset;
      globalThis.__startViewRenders.push({ start: host.hasAttribute('data-start-view'), companion: host.dataset.companion, binding: hooks.binding, auto: hooks.auto });
    });
    globalThis.__startViewObserver.observe(host, { attributes: true, attributeFilter: ['data-companion'] });
    return true;
  }, HUD_HOST), { message: 'the render recorder is installed' }).toBe(true);
}

/**
 * Stops the worker from the chat page's CDP session (the bench's stopper: no extension page
 * is opened, whose port could start the next life before the page's); the page's reconnect
 * starts it again.
 */
async function restartWorker(context, page) {
  const stopper = await workerStopper(context, page);
  await stopper.stop();
  await stopper.close();
}

/** Auto's toggles as the stored snapshot holds them (the state a restart restores). */
const storedAuto = async (worker) => Object.values((await persistedContinuity(worker).catch(() => null))?.auto?.toggles ?? {});

const renders = (page) => inContentWorld(page, () => globalThis.__startViewRenders ?? []);
const bound = (render) => render.binding === WORKSPACE.id;
/** Waits until the page rendered a live view of the new life showing the restored binding. */
const liveBound = (page, message) =>
  expect.poll(async () => (await renders(page)).some((render) => bound(render) && !render.start), { message, timeout: 20_000 }).toBe(true);

/** The stored start view record, as an extension page reads it (not through the worker). */
async function storedRecord(worker) {
  const raw = await worker.evaluate(async () => {
    const key = globalThis.herdrContracts.start_keys.view;
    return (await chrome.storage.local.get(key))[key] ?? null;
  });
  return typeof raw === 'string' ? JSON.parse(raw) : raw;
}

/** Rewrites the stored record (`change` maps it) in a worker life that will not write it again. */
async function rewriteRecord(worker, change) {
  const record = change(await storedRecord(worker));
  await worker.evaluate(async (text) => {
    await chrome.storage.local.set({ [globalThis.herdrContracts.start_keys.view]: text });
  }, JSON.stringify(record));
}

test.describe('the start view of a restarted worker', () => {
  test.setTimeout(120_000);

  test('the page shows the stored start view first, then the live view with its binding and Auto as restored', async ({ sandbox }) => {
    const { context, worker } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await turnAutoOn(context, hud, PLAIN_CHAT);
    await expect.poll(() => storedAuto(worker), { message: 'Auto on is stored' }).toContain(true);
    await expect.poll(async () => Object.keys((await storedRecord(worker))?.pages ?? {}), { message: 'the record lists the page' })
      .toContain(page.url());

    await recordRenders(page);
    await restartWorker(context, page);
    await liveBound(page, 'the live view shows the restored binding');
    await hud.expect('data-auto', 'on', 'and Auto on, as toggled before the stop');
    const seen = await renders(page);
    // The first view of the new life is the start view: the companion starting, nothing of
    // continuity (a restart knows no page facts until the page reports: no binding, no Auto).
    expect(seen[0], `renders: ${JSON.stringify(seen)}`).toEqual({ start: true, companion: 'companionStarting', binding: '', auto: 'off' });
    // Then the core's live views, never the start view again.
    const live = seen.findIndex((render) => !render.start);
    expect(live, `renders: ${JSON.stringify(seen)}`).toBeGreaterThan(0);
    expect(seen.slice(live).every((render) => !render.start), `renders: ${JSON.stringify(seen)}`).toBe(true);
    expect(seen.some(bound)).toBe(true);

    // Auto turned off in the next life: the page's start view does not show Auto either way,
    // and the live view after the next restart follows the stored state.
    await hud.expand();
    await hud.action('toggle_auto').click();
    await hud.expect('data-auto', 'off', 'Auto is off after the toggle');
    await expect.poll(() => storedAuto(worker), { message: 'Auto off is stored' }).not.toContain(true);
    await recordRenders(page);
    await restartWorker(context, page);
    await liveBound(page, 'the live view shows the restored binding');
    const again = await renders(page);
    expect(again[0], `renders: ${JSON.stringify(again)}`).toEqual({ start: true, companion: 'companionStarting', binding: '', auto: 'off' });
    await expect.poll(async () => (await renders(page)).filter(bound).map((render) => render.auto)).toContain('off');
    expect((await renders(page)).filter(bound).every((render) => render.auto === 'off' && !render.start)).toBe(true);
  });

  // Chrome stops an idle worker and the page's port goes with it; the page reconnects a
  // second later. A press in that second was dropped (`hc.port` was null): now the press
  // connects the port at once, which starts the worker, and reaches it.
  test('a HUD press while the worker is stopped and the page has not reconnected yet reaches the new worker', async ({ sandbox }) => {
    const { context, worker } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await hud.expand();
    await expect(hud.action('toggle_auto')).toBeEnabled({ timeout: 15_000 });
    await hud.expect('data-auto', 'off', 'Auto is off before the stop');
    const stopper = await workerStopper(context, page);
    await stopper.stop();
    await hud.action('toggle_auto').click();
    await hud.expect('data-auto', 'on', 'the press reached the restarted worker');
    await expect.poll(() => storedAuto(worker), { message: 'Auto on is stored' }).toContain(true);
    await stopper.close();
  });

  test('worker.js posts no start view for a URL the record does not list, nor from a record of another version', async ({ sandbox }) => {
    const { context, worker } = await continuityWorld(sandbox);
    const { page } = await openAndBind(context, worker, PLAIN_CHAT);
    await expect.poll(async () => JSON.stringify((await persistedContinuity(worker).catch(() => null))?.bindings ?? null),
      { message: 'the binding is stored' }).toContain(WORKSPACE.id);
    await expect.poll(async () => Object.keys((await storedRecord(worker))?.pages ?? {}), { message: 'the record lists the page' })
      .toContain(page.url());

    for (const [what, change] of [
      ['another URL', (record) => ({ ...record, pages: { [`${page.url()}-other`]: record.pages[page.url()] } })],
      ['another version', (record) => ({ ...record, version: `${record.version}-other` })],
    ]) {
      await rewriteRecord(worker, change);
      await recordRenders(page);
      await restartWorker(context, page);
      await liveBound(page, `${what}: the live view shows the restored binding`);
      const seen = await renders(page);
      expect(seen.length, `${what}: renders`).toBeGreaterThan(0);
      expect(seen.filter((render) => render.start), `${what}: no start view (renders: ${JSON.stringify(seen)})`).toEqual([]);
      // The new life writes the page into its record again (its entry, of its version).
      await expect.poll(async () => Boolean((await storedRecord(worker).catch(() => null))?.pages?.[page.url()]),
        { message: `${what}: the new life lists the page again` }).toBe(true);
    }
  });
});

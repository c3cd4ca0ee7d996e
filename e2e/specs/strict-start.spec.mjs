// Issue 23, strict start: a chrome.storage read that fails when the service worker starts
// must leave the stored state untouched (no persist before a read succeeded), be tried
// again, and be shown in the HUD and the side panel.
//
// A start that cannot happen at all (review L3: `crypto.getRandomValues` missing, so
// ext-shell `start_worker` refuses) is said in both too, as final: no retry text.
//
// How the read is made to fail, in real Chromium with the real worker: the side panel (an
// extension page, inside the worker's scope) opens a CDP session whose auto-attach reaches
// the extension's service worker; a `beforeScriptExecution` instrumentation breakpoint
// pauses the worker's next life before worker.js runs, and while it is paused
// `chrome.storage.local.get` is wrapped to reject until the test lets it through. Then the
// worker is stopped (CDP `ServiceWorker.stopWorker`) and the page's reconnect starts it again.
import { test, expect } from '../lib/test.mjs';
import { CHATS, WORKSPACE, continuityWorld, openAndBind, tabIdOf } from '../lib/continuity.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';

const PLAIN_CHAT = CHATS[1];
const REFUSAL = 'test: the storage read was refused';
// ext-shell `start_worker`'s refusal without Web Crypto (ext-shell/src/lib.rs).
const NO_CRYPTO = 'crypto.getRandomValues is not available';
// Removes Web Crypto's random source from the worker's global before worker.js runs.
const NO_CRYPTO_STUB = `(() => {
  Object.defineProperty(Crypto.prototype, 'getRandomValues', { value: undefined, configurable: true });
  return typeof crypto.getRandomValues;
})()`;

/** The stored snapshot as an extension page reads it (not through the worker). */
async function storedSnapshot(extensionPage) {
  const raw = await extensionPage.evaluate(async () => (await chrome.storage.local.get('continuity')).continuity ?? null);
  return typeof raw === 'string' ? JSON.parse(raw) : raw;
}

/**
 * A CDP handle on the extension's service worker through `extensionPage`'s auto-attach:
 * `failNextStart(stub)` arms the breakpoint that runs `stub` in the next worker life before
 * worker.js (by default: its storage reads reject until `release()`), `stop()` stops the
 * running worker.
 */
async function workerControl(context, extensionPage) {
  const cdp = await context.newCDPSession(extensionPage);
  let session = null;
  let next = 1;
  let restarted = false;
  let arm = null;
  const seen = [];
  const send = (method, params = {}) => cdp.send('Target.sendMessageToTarget', {
    sessionId: session, message: JSON.stringify({ id: next++, method, params }),
  });
  const STUB = `(() => {
    if (globalThis.__readsRefused !== undefined) return 'already';
    globalThis.__readsRefused = true;
    const local = chrome.storage.local;
    const real = local.get.bind(local);
    local.get = (...args) => (globalThis.__readsRefused ? Promise.reject(new Error(${JSON.stringify(REFUSAL)})) : real(...args));
    return 'stubbed';
  })()`;
  cdp.on('Target.attachedToTarget', async ({ sessionId, targetInfo, waitingForDebugger }) => {
    if (targetInfo.type !== 'service_worker' || !targetInfo.url.startsWith(EXTENSION_ORIGIN)) return;
    session = sessionId;
    await send('Debugger.enable');
    if (waitingForDebugger) await send('Runtime.runIfWaitingForDebugger');
  });
  cdp.on('Target.receivedMessageFromTarget', async ({ message }) => {
    const m = JSON.parse(message);
    if (m.method === 'Inspector.targetReloadedAfterCrash') restarted = true;
    if (m.method !== 'Debugger.paused') return;
    if (arm && restarted) {
      seen.push('stubbed before worker.js ran');
      await send('Runtime.evaluate', { expression: arm });
      arm = null;
      await send('Debugger.disable');
    }
    await send('Debugger.resume');
  });
  const versions = [];
  cdp.on('ServiceWorker.workerVersionUpdated', (event) => versions.push(...event.versions));
  await cdp.send('ServiceWorker.enable');
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  await expect.poll(() => session !== null && versions.some((v) => v.runningStatus === 'running' && v.scriptURL.startsWith(EXTENSION_ORIGIN)),
    { message: 'the worker is attached and running' }).toBe(true);
  return {
    seen,
    async failNextStart(stub = STUB) {
      arm = stub;
      restarted = false;
      await send('Debugger.setInstrumentationBreakpoint', { instrumentation: 'beforeScriptExecution' });
    },
    async stop() {
      for (const v of versions.filter((v) => v.scriptURL.startsWith(EXTENSION_ORIGIN))) {
        await cdp.send('ServiceWorker.stopWorker', { versionId: v.versionId }).catch(() => {});
      }
    },
    release: () => send('Runtime.evaluate', { expression: 'globalThis.__readsRefused = false' }),
  };
}

/** A bound chat page with its HUD, and the side panel open on its tab. */
async function boundWithPanel(sandbox) {
  const { context, worker } = await continuityWorld(sandbox);
  const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
  const tabId = await tabIdOf(worker, page.url());
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${tabId}`);
  await expect(panel.locator('[data-panel-tab]')).toHaveAttribute('data-tab-id', String(tabId), { timeout: 15_000 });
  return { context, page, hud, panel };
}

test.describe('strict worker start', () => {
  test.use({ sandboxOptions: { autostart: false } });
  test.setTimeout(120_000);

  test('a failed storage read at start keeps the stored bindings, shows the problem in the HUD and the side panel, and starts once a read succeeds', async ({ sandbox }) => {
    const { context, page, hud, panel } = await boundWithPanel(sandbox);
    const before = await storedSnapshot(panel);
    expect(JSON.stringify(before?.bindings), 'the binding is stored').toContain(WORKSPACE.id);

    const control = await workerControl(context, panel);
    await control.failNextStart();
    await control.stop();
    // The page reconnects (content.js, after 1 s) and so starts the worker again; so does
    // the side panel, left open (companion-client.js `panelPort`, review 35 M3).
    await expect.poll(() => control.seen.length, { message: 'the next worker life was paused before worker.js ran', timeout: 20_000 }).toBe(1);

    // The reads keep failing: the HUD and the side panel say why, and nothing is written.
    await hud.expect('data-start-problem', 'yes', 'HUD: the start read failed');
    await expect(hud.host.locator('p.status'), 'HUD status line').toHaveAttribute('data-key', 'startProblem');
    await expect(hud.host.locator('p.status')).toContainText(REFUSAL);
    const problem = panel.locator('[data-start-problem] [data-key="startProblem"]');
    await expect(problem, 'side panel: the start read failed').toContainText(REFUSAL, { timeout: 15_000 });
    // Retries happen meanwhile (1 s, then 2 s): none of them wrote anything.
    await page.waitForTimeout(3_500);
    expect(await storedSnapshot(panel), 'the stored state is untouched').toEqual(before);

    // The reads succeed again: the worker starts with the stored state.
    await control.release();
    await expect(hud.host.locator('p.status'), 'the HUD problem line is cleared').not.toHaveAttribute('data-key', 'startProblem', { timeout: 20_000 });
    await expect(hud.host, 'the HUD host no longer flags it').not.toHaveAttribute('data-start-problem');
    await hud.expect('data-binding', WORKSPACE.id, 'the binding survived the failed start');
    await expect(panel.locator('[data-start-problem]'), 'side panel: the problem is gone').toHaveCount(0, { timeout: 15_000 });
    const after = await storedSnapshot(panel);
    expect(JSON.stringify(after?.bindings), 'the binding is still stored').toContain(WORKSPACE.id);
  });

  test('a worker that cannot start at all (no crypto.getRandomValues) says so, as final, in the HUD and the side panel', async ({ sandbox }) => {
    const { context, hud, panel } = await boundWithPanel(sandbox);

    const control = await workerControl(context, panel);
    await control.failNextStart(NO_CRYPTO_STUB);
    await control.stop();
    await expect.poll(() => control.seen.length, { message: 'the next worker life was paused before worker.js ran', timeout: 20_000 }).toBe(1);

    // The page and the side panel reconnect to a worker whose start failed: both say why,
    // with the final text (reload or reinstall), not the retrying read's.
    await hud.expect('data-start-problem', 'yes', 'HUD: the start failed');
    await expect(hud.host.locator('p.status'), 'HUD status line').toHaveAttribute('data-key', 'startFailed', { timeout: 15_000 });
    await expect(hud.host.locator('p.status')).toContainText(NO_CRYPTO);
    await expect(hud.host.locator('p.status')).toHaveAttribute('data-tone', 'bad');
    const failed = panel.locator('[data-start-problem] [data-key="startFailed"]');
    await expect(failed, 'side panel: the start failed').toContainText(NO_CRYPTO, { timeout: 15_000 });
    await expect(panel.locator('[data-start-problem] [data-key="startProblem"]'), 'no retry text in the side panel').toHaveCount(0);
  });
});

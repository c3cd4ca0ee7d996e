// Direct probes of the extension's native path, evaluated inside the extension's service
// worker (the same global the extension's own code runs in).
import { expect } from '@playwright/test';
import { EXTENSION_ORIGIN, NATIVE_HOST_NAME } from './paths.mjs';

/**
 * One request over a fresh `chrome.runtime.connectNative` port from the worker:
 * worker → herdr-companion host → runtime → worker. Resolves with the response object;
 * rejects with what went wrong (port closed, no answer in time).
 */
export async function nativeRequestFromWorker(worker, method, params = {}, timeoutMs = 10_000) {
  return worker.evaluate(
    ({ hostName, method, params, timeoutMs }) =>
      new Promise((resolve, reject) => {
        const port = chrome.runtime.connectNative(hostName);
        const id = `e2e-${Date.now()}`;
        const timer = setTimeout(() => {
          port.disconnect();
          reject(new Error(`no answer to ${method} within ${timeoutMs} ms`));
        }, timeoutMs);
        port.onMessage.addListener((message) => {
          if (message?.id !== id) return;
          clearTimeout(timer);
          port.disconnect();
          resolve(message);
        });
        port.onDisconnect.addListener(() => {
          clearTimeout(timer);
          reject(new Error(`native port closed: ${chrome.runtime.lastError?.message ?? 'no reason given'}`));
        });
        port.postMessage({ id, method, params });
      }),
    { hostName: NATIVE_HOST_NAME, method, params, timeoutMs },
  );
}

/**
 * Stops the extension's service worker through CDP (from an extension page's session) and
 * waits until Chrome runs it again. A worker that runs again has fresh globals: a mark set
 * on the old one tells them apart. `worker` is Playwright's handle of the service worker.
 */
export async function stopWorkerAndAwaitRestart(context, worker, { intervalMs = 1_000 } = {}) {
  const extPage = await context.newPage();
  await extPage.goto(`${EXTENSION_ORIGIN}options.html`);
  const cdp = await context.newCDPSession(extPage);
  const versions = [];
  cdp.on('ServiceWorker.workerVersionUpdated', (event) => versions.push(...event.versions));
  await cdp.send('ServiceWorker.enable');
  await expect.poll(() => versions.filter((v) => v.runningStatus === 'running' && v.scriptURL.startsWith(EXTENSION_ORIGIN)).length,
    { message: 'the worker\'s version is known' }).toBeGreaterThan(0);
  await worker.evaluate(() => { globalThis.__beforeStop = true; });
  const life = () => worker.evaluate(() => (globalThis.__beforeStop ? 'old' : 'new')).catch(() => 'restarting');
  await expect.poll(async () => {
    if ((await life()) === 'old') {
      for (const version of versions.filter((v) => v.scriptURL.startsWith(EXTENSION_ORIGIN))) {
        await cdp.send('ServiceWorker.stopWorker', { versionId: version.versionId }).catch(() => {});
      }
    }
    return life();
  }, { message: 'the worker was stopped and runs again', timeout: 20_000, intervals: [intervalMs] }).toBe('new');
  await extPage.close();
}

// Direct probes of the extension's native path, evaluated inside the extension's service
// worker (the same global the extension's own code runs in).
import { NATIVE_HOST_NAME } from './paths.mjs';

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

// The Playwright `test` the specs use. Fixtures:
// - `sandbox` (per test): a fresh Sandbox, disposed afterwards even when the test fails.
// - `plainBrowser` (per Playwright worker): one headless Chromium without the extension,
//   shared by every test of the worker that drives pages on their own (fixture pages, site
//   snippets, the extension pages under a stand-in `chrome`). Isolation is per browser
//   context: a test makes its own contexts and `closeContexts(browser)` in its afterEach
//   closes every one, so no cookie, storage, route or page outlives the test.
import { test as base, chromium } from '@playwright/test';
import { expect } from './shadow.mjs';
import { Sandbox } from './sandbox.mjs';
import { CHROMIUM_BIN } from './paths.mjs';

/** The arguments every plain (extension-less) Chromium of the suite runs with. */
export const PLAIN_CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu'];

export const test = base.extend({
  // Options a spec can set with test.use({ sandboxOptions: {...} }).
  sandboxOptions: [{}, { option: true }],
  sandbox: async ({ sandboxOptions }, use) => {
    const sandbox = new Sandbox(sandboxOptions);
    try {
      await use(sandbox);
    } finally {
      await sandbox.dispose();
    }
  },
  plainBrowser: [
    async ({}, use) => {
      const browser = await chromium.launch({ executablePath: CHROMIUM_BIN, headless: true, args: PLAIN_CHROMIUM_ARGS });
      await use(browser);
      await browser.close();
    },
    { scope: 'worker' },
  ],
});

/** Closes every context open on `browser` (a test's afterEach on the shared browser). */
export async function closeContexts(browser) {
  await Promise.all((browser?.contexts() ?? []).map((context) => context.close()));
}

export { expect };

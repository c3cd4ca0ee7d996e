// The Playwright `test` the specs use: it adds a `sandbox` fixture (a fresh Sandbox per
// test, disposed afterwards even when the test fails) and a `fixtureFor` helper.
import { test as base } from '@playwright/test';
import { expect } from './shadow.mjs';
import { Sandbox } from './sandbox.mjs';

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
});

export { expect };

// The harness's own promises (lib/sandbox.mjs, lib/test.mjs): a disposed sandbox leaves no
// process of its home behind and its dir goes; a test on the shared plain browser starts
// with no context left over from the test before.
import { existsSync } from 'node:fs';
import { Sandbox } from '../lib/sandbox.mjs';
import { closeContexts, test, expect } from '../lib/test.mjs';
import { startSeededHerdr } from '../lib/continuity.mjs';

test('dispose ends every process of the sandbox (stand-in, runtime, Chromium, host) and removes its dir', async () => {
  const sandbox = new Sandbox();
  try {
    await Promise.all([startSeededHerdr(sandbox), sandbox.installHost()]);
    await sandbox.startRuntime();
    const { context } = await sandbox.launchBrowser();
    const page = await context.newPage();
    await page.goto('about:blank');
    expect(sandbox.processesOfThisHome().length, 'the stand-in, the runtime and Chromium run').toBeGreaterThan(2);
  } finally {
    await sandbox.dispose();
  }
  expect(sandbox.processesOfThisHome(), 'nothing of this home runs after dispose').toEqual([]);
  expect(sandbox.context).toBeNull();
  await expect.poll(() => existsSync(sandbox.dir), { message: `${sandbox.dir} is removed`, timeout: 10_000 }).toBe(false);
});

test.describe('the shared plain browser', () => {
  let browser;
  test.afterEach(async () => {
    await closeContexts(browser);
  });

  test('a test leaves a context open', async ({ plainBrowser }) => {
    browser = plainBrowser;
    const context = await plainBrowser.newContext();
    await (await context.newPage()).goto('about:blank');
    expect(plainBrowser.contexts()).toHaveLength(1);
  });

  test('the next test on the same browser starts with none', async ({ plainBrowser }) => {
    browser = plainBrowser;
    expect(plainBrowser.isConnected()).toBe(true);
    expect(plainBrowser.contexts()).toEqual([]);
  });
});

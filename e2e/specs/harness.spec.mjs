// The harness's own promises (lib/sandbox.mjs, lib/test.mjs): a disposed sandbox leaves no
// process of its home behind and its dir goes; a test on the shared plain browser starts
// with no context left over from the test before; a click on our closed-root UI presses the
// button it names even when the HUD re-lays out as it lands (lib/shadow.mjs).
import { existsSync } from 'node:fs';
import { Sandbox } from '../lib/sandbox.mjs';
import { closeContexts, test, expect } from '../lib/test.mjs';
import { chatSiteWorld, openSiteBound, startSeededHerdr } from '../lib/continuity.mjs';
import { inShadowRoot } from '../lib/shadow.mjs';

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

test.describe('a click on our closed-root UI', () => {
  test.use({ sandboxOptions: { autostart: false } });

  // The CI flake of `turnAutoOn`: a view that adds a line between the last look and the
  // press moves the buttons, and the release lands beside the one pressed (Chrome then
  // clicks their common parent: nothing happens). Here the HUD moves its buttons as the
  // first press goes down; the helper stops that click and presses again, once.
  test('a HUD button that moves as it is pressed is pressed once, when the click lands on it', async ({ sandbox }) => {
    const conversation = '2d4f6a8b-1c3e-4a5b-9c7d-0e1f2a3b4c5d';
    const { context, worker, fixture } = await chatSiteWorld(sandbox, 'zai', conversation, { replyWith: () => 'ok' });
    const { page, hud } = await openSiteBound(context, worker, fixture, conversation);
    await hud.expect('data-auto', 'off', 'Auto is off before the press');
    await hud.expand();
    await expect(hud.action('toggle_auto')).toBeEnabled({ timeout: 15_000 });
    // The first press going down pushes the buttons down by a line, as a view adding one does.
    await inShadowRoot(page, 'herdr-continuity-hud', (root) => {
      const onDown = () => {
        root.removeEventListener('mousedown', onDown, true);
        const button = root.querySelector('button[data-action="toggle_auto"]');
        const line = document.createElement('p');
        line.dataset.testLine = '';
        line.style.cssText = 'height: 48px; margin: 0';
        button.parentElement.before(line);
      };
      root.addEventListener('mousedown', onDown, true);
    });
    await hud.action('toggle_auto').click();
    await hud.expect('data-auto', 'on', 'the second click landed on the button and turned Auto on');
    await page.waitForTimeout(500);
    expect(await hud.state.getAttribute('data-auto'), 'one press only: Auto was not turned off again').toBe('on');
    expect(await hud.host.locator('p[data-test-line]').count(), 'the button moved').toBe(1);
    expect(test.info().annotations.filter((a) => a.type === 'click-again'), 'the second click is reported').toHaveLength(1);
  });
});

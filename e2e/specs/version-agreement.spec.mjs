// Issue 26 Found 8 (SPEC N4, W4): extension ↔ runtime agreement at hello, and the storage
// limits on the options page — real Chromium, the real native host and runtime.
// The older companion is the real runtime started with HERDR_CONTINUITY_TEST_OLD_HELLO=1, a
// test-only switch (companion/src/api/mod.rs `TEST_OLD_HELLO`) under which `hello` answers
// as a runtime of protocol 1 did: protocol 1, no `capabilities`.
import { test, expect } from '../lib/test.mjs';
import { ChatGptFixture, CSP_VARIANTS, chatgptUrl } from '../fixtures/chatgpt.mjs';
import { securityPolicyViolations } from '../lib/csp-recorder.mjs';
import { HudProbe } from '../lib/hud.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

async function openChatGpt(context, csp) {
  const fixture = new ChatGptFixture({ csp });
  await fixture.install(context);
  const page = await context.newPage();
  await page.goto(chatgptUrl.home());
  return { page, hud: new HudProbe(page) };
}

for (const csp of CSP_VARIANTS) {
  test.describe(`version agreement, CSP ${csp}`, () => {
    test.use({ sandboxOptions: { autostart: false } });

    test('an older companion is named at hello in the HUD, the side panel and the options page, with what to update (N4)', async ({ sandbox }) => {
      await sandbox.startHerdr();
      await sandbox.installHost();
      sandbox.env.HERDR_CONTINUITY_TEST_OLD_HELLO = '1';
      await sandbox.startRuntime();
      const { context } = await sandbox.launchBrowser();
      const { page, hud } = await openChatGpt(context, csp);

      await expect(hud.companion, 'the HUD names the older side').toHaveAttribute('data-key', 'hudVersionMismatch', { timeout: 20_000 });
      await hud.expand();
      await expect(hud.companion).toContainText('herdr-companion install again');
      await expect(hud.companion).toContainText('protocol 1');
      await expect(hud.action('retry_companion'), 'Retry is offered, nothing retries by itself').toBeVisible();

      const panel = await context.newPage();
      await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html`);
      await expect(panel.locator('[data-line="companion"]')).toHaveAttribute('data-key', 'hudVersionMismatch', { timeout: 15_000 });

      const options = await context.newPage();
      await options.goto(`${EXTENSION_ORIGIN}options.html`);
      await expect(options.locator('#retentionState')).toContainText('run herdr-companion install again', { timeout: 15_000 });
      expect(await securityPolicyViolations(page)).toEqual([]);
    });
  });
}

test.describe('storage limits', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('the options page shows each store\'s size and the limits within their bounds, refuses one outside and saves one inside (W4)', async ({ sandbox }) => {
    await sandbox.startHerdr();
    await sandbox.installHost();
    await sandbox.startRuntime();
    const { context } = await sandbox.launchBrowser();
    const options = await context.newPage();
    await options.goto(`${EXTENSION_ORIGIN}options.html`);

    const journal = options.locator('input#retention-journal_turns');
    await expect(journal).toHaveValue('5000', { timeout: 15_000 });
    await expect(journal).toHaveAttribute('min', '100');
    await expect(options.locator('input#retention-inbox_days')).toHaveValue('30');
    for (const store of ['journal', 'work_memory', 'bridge_results', 'inbox']) {
      await expect(options.locator(`#retentionSizes [data-store="${store}"]`)).toContainText('0 rows');
    }

    const inbox = options.locator('input#retention-inbox_days');
    await inbox.fill('0');
    await options.locator('#retentionSave').click();
    await expect(options.locator('#retentionStatus')).toContainText('from 1 to 3650');

    await inbox.fill('7');
    await options.locator('#retentionSave').click();
    await expect(options.locator('#retentionStatus')).toContainText('Saved in the companion');
    await options.reload();
    await expect(options.locator('input#retention-inbox_days'), 'kept by the companion').toHaveValue('7', { timeout: 15_000 });
  });
});

// A state.db written by a newer herdr-companion: the runtime the host starts refuses to
// start and says why. The extension used to call that "unreachable, retrying
// automatically" and start the runtime again on every back-off step; it now shows the
// reason, waits for the user's Retry and starts nothing on its own.
test.describe('a runtime that refuses to start', () => {
  test('the HUD shows why and what to do, and only Retry starts it again', async ({ sandbox }) => {
    await sandbox.startHerdr();
    await sandbox.installHost();
    // `PRAGMA user_version` far above this build's migrations (companion/src/schema.rs).
    execFileSync('python3', ['-c', 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE from_the_future (x)"); c.execute("PRAGMA user_version = 999"); c.commit()',
      path.join(sandbox.home, 'state.db')]);
    const refusals = () => {
      try {
        return readFileSync(path.join(sandbox.home, 'runtime.log'), 'utf8').split('\n').filter((l) => l.includes('runtime refused to start:')).length;
      } catch {
        return 0;
      }
    };
    const { context } = await sandbox.launchBrowser();
    const { page, hud } = await openChatGpt(context, 'none');

    await expect(hud.companion, 'the HUD says the runtime refused to start').toHaveAttribute('data-key', 'companionRuntimeWontStart', { timeout: 20_000 });
    await hud.expand();
    await expect(hud.companion).toContainText('schema version 999');
    await expect(hud.companion).toContainText('Install that newer version again');
    expect(refusals()).toBe(1);
    // The link's longest back-off is 5 s (PROTOCOL.md "Companion link"): past it, a timer
    // would have started the runtime again.
    await page.waitForTimeout(6_500);
    expect(refusals(), 'nothing starts the runtime again on its own').toBe(1);

    await hud.action('retry_companion').click();
    await expect.poll(refusals, { message: 'Retry starts it once more' }).toBe(2);
    await expect(hud.companion).toHaveAttribute('data-key', 'companionRuntimeWontStart');
  });
});

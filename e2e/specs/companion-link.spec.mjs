// Issue 2, acceptance 2: the extension, the companion (native host + runtime) and Herdr are
// wired end to end in real Chromium, on a ChatGPT page with and without a strict CSP.
// R: A4 (local-only path), N1 (Native Messaging host), N2 (host ↔ runtime socket),
// N4 (extension ↔ runtime version agreement), O1/A2 (HUD shows state, never decides).
import { readFileSync } from 'node:fs';
import { test, expect } from '../lib/test.mjs';
import { ChatGptFixture, CSP_VARIANTS, chatgptUrl } from '../fixtures/chatgpt.mjs';
import { securityPolicyViolations } from '../lib/csp-recorder.mjs';
import { HudProbe } from '../lib/hud.mjs';
import { nativeRequestFromWorker } from '../lib/extension.mjs';

const HERDR_PROTOCOL = 20;

function commandLine(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ');
  } catch {
    return '';
  }
}
const PROJECT_HEX = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';

async function openChatGpt(context, csp, url = chatgptUrl.projectHome(PROJECT_HEX)) {
  const fixture = new ChatGptFixture({ csp });
  await fixture.install(context);
  const page = await context.newPage();
  await page.goto(url);
  return { fixture, page, hud: new HudProbe(page) };
}

for (const csp of CSP_VARIANTS) {
  test.describe(`extension + companion on ChatGPT, CSP ${csp}`, () => {
    test.describe('runtime started by the test (autostart off)', () => {
      test.use({ sandboxOptions: { autostart: false } });

      test('HUD shows companion and Herdr connected with protocol 20; a round trip succeeds (N1, N2, N4)', async ({ sandbox }) => {
        await sandbox.startHerdr();
        await sandbox.installHost();
        await sandbox.startRuntime();
        const { context, worker } = await sandbox.launchBrowser();
        const { page, hud } = await openChatGpt(context, csp);

        await expect(hud.host).toBeAttached();
        await hud.expectCompanionConnected();
        await hud.expectHerdrConnected(HERDR_PROTOCOL);

        // The HUD's own self-test: worker → host → runtime → worker, measured by the worker.
        const hudRoundTripMs = await hud.roundTrip();
        expect(hudRoundTripMs).toBeGreaterThan(0);
        expect(hudRoundTripMs).toBeLessThan(5_000);

        // The same path probed directly from the worker's global.
        const pong = await nativeRequestFromWorker(worker, 'ping');
        expect(pong.result?.type, JSON.stringify(pong)).toBe('pong');
        const hello = await nativeRequestFromWorker(worker, 'hello', { extension_version: 'e2e', protocol: 2 });
        expect(hello.result).toMatchObject({ type: 'hello', protocol: 2, compatible: true });
        expect(hello.result.herdr).toMatchObject({ state: 'connected', protocol: HERDR_PROTOCOL });

        expect(await securityPolicyViolations(page)).toEqual([]);
      });

      test('stopping the runtime turns the HUD offline; it reconnects by itself when the runtime is back', async ({ sandbox }) => {
        await sandbox.startHerdr();
        await sandbox.installHost();
        await sandbox.startRuntime();
        const { context } = await sandbox.launchBrowser();
        const { page, hud } = await openChatGpt(context, csp, chatgptUrl.home());
        await hud.expectCompanionConnected();

        await sandbox.stopRuntime();
        await hud.expectCompanionOffline(10_000);

        await sandbox.startRuntime();
        // No user action: the worker's link retries with a backoff capped at 5 s.
        await hud.expectCompanionConnected(15_000);
        await hud.expectHerdrConnected(HERDR_PROTOCOL);
        expect(await securityPolicyViolations(page)).toEqual([]);
      });
    });

    test.describe('runtime started by the native host (autostart on)', () => {
      test.use({ sandboxOptions: { autostart: true } });

      test('with no runtime running, the host starts one and the HUD connects', async ({ sandbox }) => {
        await sandbox.startHerdr();
        await sandbox.installHost();
        expect(sandbox.processesOfThisHome().length, 'only the stand-in runs before the browser').toBe(1);
        const { context } = await sandbox.launchBrowser();
        const { page, hud } = await openChatGpt(context, csp);

        await hud.expectCompanionConnected(20_000);
        await hud.expectHerdrConnected(HERDR_PROTOCOL);
        const runtimes = sandbox.processesOfThisHome().filter((pid) => commandLine(pid).includes(' runtime'));
        expect(runtimes.length, 'exactly one runtime, started by the host').toBe(1);
        expect(await securityPolicyViolations(page)).toEqual([]);
      });
    });
  });
}

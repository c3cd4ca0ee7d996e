// `npm run demo` (after setup + build): a narrated walk through what works today, in a
// throw-away profile. Starts the Herdr stand-in with a demo workspace, installs the
// companion's native host into a temp Chromium profile, opens the ChatGPT fixture in
// headless Chromium with the extension, and shows the HUD connecting. Screenshots go to
// demo-output/. Exit 0 on success; on failure it says which step failed and exits 1.
// Later issues extend it with: bind, Auto, dispatch, settle wake.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Sandbox } from './lib/sandbox.mjs';
import { ChatGptFixture, chatgptUrl } from './fixtures/chatgpt.mjs';
import { HudProbe } from './lib/hud.mjs';
import { nativeRequestFromWorker } from './lib/extension.mjs';
import { securityPolicyViolations } from './lib/csp-recorder.mjs';
import { REPO_ROOT } from './lib/paths.mjs';

const OUTPUT = path.join(REPO_ROOT, 'demo-output');
const PROJECT_HEX = 'd3e40000000000000000000000000001';
let stepNumber = 0;

async function step(sentence, action) {
  stepNumber += 1;
  process.stdout.write(`${stepNumber}. ${sentence}\n`);
  try {
    return await action();
  } catch (error) {
    error.demoStep = `${stepNumber}. ${sentence}`;
    throw error;
  }
}

function say(sentence) {
  process.stdout.write(`   ${sentence}\n`);
}

async function main() {
  mkdirSync(OUTPUT, { recursive: true });
  const sandbox = new Sandbox({ autostart: true });
  try {
    say(`Working in a throw-away directory: ${sandbox.dir}`);
    await step('Start the Herdr stand-in (a local Herdr 0.8.2, protocol 20) with a demo workspace.', async () => {
      await sandbox.startHerdr();
      const workspace = await createDemoWorkspace(sandbox.herdrSocket);
      say(`Herdr is listening on ${sandbox.herdrSocket}; workspace ${workspace} is ready.`);
    });
    await step('Install the companion as a Native Messaging host into a fresh Chromium profile.', async () => {
      const out = await sandbox.installHost();
      for (const line of out.trim().split('\n').filter(Boolean)) say(line);
    });
    const { context, worker } = await step('Launch headless Chromium with the extension loaded.', async () => {
      const launched = await sandbox.launchBrowser();
      say(`The extension's service worker runs at ${launched.worker.url()}.`);
      return launched;
    });
    const { page, hud } = await step('Open a ChatGPT Project page (local fixture with a strict CSP, like a real site may have).', async () => {
      const fixture = new ChatGptFixture({ csp: 'strict' });
      await fixture.install(context);
      const opened = await context.newPage();
      await opened.setViewportSize({ width: 1280, height: 800 });
      await opened.goto(chatgptUrl.projectHome(PROJECT_HEX));
      return { page: opened, hud: new HudProbe(opened) };
    });
    await step('Wait for the HUD: no runtime was running, so the native host starts one; the HUD then shows the companion and Herdr connected.', async () => {
      await hud.expectCompanionConnected(20_000);
      await hud.expectHerdrConnected(20);
      say(`The HUD says: ${await hud.describe()}`);
      const file = path.join(OUTPUT, '01-hud-connected.png');
      await page.screenshot({ path: file });
      say(`Screenshot: ${path.relative(REPO_ROOT, file)}`);
    });
    await step('Press the HUD\'s round-trip button: service worker → native host → runtime → service worker.', async () => {
      const ms = await hud.roundTrip();
      say(`The worker measured ${ms} ms over its open native port.`);
      await page.screenshot({ path: path.join(OUTPUT, '02-hud-round-trip.png') });
      const t0 = Date.now();
      const reply = await nativeRequestFromWorker(worker, 'ping');
      if (reply.result?.type !== 'pong') throw new Error(`expected a pong, got ${JSON.stringify(reply)}`);
      say(`A ping on a fresh native port (a new host process) took ${Date.now() - t0} ms end to end.`);
      say('Screenshot: demo-output/02-hud-round-trip.png');
    });
    await step('Check that the extension caused no Content-Security-Policy violation on the page.', async () => {
      const violations = await securityPolicyViolations(page);
      if (violations.length > 0) throw new Error(`the page recorded CSP violations: ${JSON.stringify(violations)}`);
      say('None recorded.');
    });
    await step('Stop the runtime: the HUD shows the companion offline, then reconnects on its own.', async () => {
      for (const pid of sandbox.processesOfThisHome()) {
        if (pid !== sandbox.standin.child.pid && (await commandOf(pid)).includes('runtime')) process.kill(pid, 'SIGTERM');
      }
      await hud.expectCompanionOffline(10_000);
      say(`The HUD says: ${await hud.describe()}`);
      await page.screenshot({ path: path.join(OUTPUT, '03-hud-offline.png') });
      await hud.expectCompanionConnected(20_000);
      say(`The host started a new runtime; the HUD says: ${await hud.describe()}`);
      await page.screenshot({ path: path.join(OUTPUT, '04-hud-reconnected.png') });
      say('Screenshots: demo-output/03-hud-offline.png, demo-output/04-hud-reconnected.png');
    });
    process.stdout.write('\nDemo finished: every step worked.\n');
  } finally {
    await sandbox.dispose();
  }
}

async function commandOf(pid) {
  const { readFile } = await import('node:fs/promises');
  return (await readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '')).split('\0').join(' ');
}

/** Asks the stand-in (Herdr's one-request-per-connection protocol) for a labelled workspace. */
async function createDemoWorkspace(socketPath) {
  const net = await import('node:net');
  const request = { id: 'demo_1', method: 'workspace.create', params: { label: 'demo', cwd: REPO_ROOT, focus: true } };
  const reply = await new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath, () => socket.write(`${JSON.stringify(request)}\n`));
    let data = '';
    socket.on('data', (chunk) => { data += chunk; });
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
  const parsed = JSON.parse(reply.split('\n')[0]);
  if (parsed.error) throw new Error(`the Herdr stand-in refused workspace.create: ${parsed.error.message}`);
  return `${parsed.result.workspace.workspace_id} "${parsed.result.workspace.label}"`;
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stdout.write(`\nDemo failed at step ${error.demoStep ?? '(setup)'}\n   ${error.message}\n`);
    process.exit(1);
  },
);

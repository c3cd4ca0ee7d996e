// `npm run demo` (after setup + build): a narrated walk through what works today, in a
// throw-away profile. Starts the Herdr stand-in with a demo workspace, installs the
// companion's native host into a temp Chromium profile, opens the ChatGPT fixture in
// headless Chromium with the extension, and shows the HUD connecting. Screenshots go to
// demo-output/. Exit 0 on success; on failure it says which step failed and exits 1.
// Then the main job (issue 4): bind a Project conversation to a Herdr workspace from the
// side panel, turn Auto on, dispatch a task as the MCP downlink would, watch it work, let
// it settle, and see the chat continue exactly once (the fixture's fake backend records
// every user message), with the task acknowledged only after that.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Sandbox } from './lib/sandbox.mjs';
import { ChatGptFixture, chatgptUrl } from './fixtures/chatgpt.mjs';
import { HudProbe } from './lib/hud.mjs';
import { inShadowRoot } from './lib/shadow.mjs';
import { nativeRequestFromWorker } from './lib/extension.mjs';
import { securityPolicyViolations } from './lib/csp-recorder.mjs';
import { REPO_ROOT } from './lib/paths.mjs';
import {
  ContinuityHud, WORKSPACE, allowProjectAuto, bindFromPanel, dispatchTask, listTasks, reportAgent, startSeededHerdr,
} from './lib/continuity.mjs';

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
      // Seeded with workspaces w1 "api" and w2 "web", each running a `claude` agent pane.
      await startSeededHerdr(sandbox);
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
    const fixture = new ChatGptFixture({ csp: 'strict', streamMs: 1_500, replyWith: (text) => (text.includes('[herdr-continuity') ? 'Re-reading the workspace: the agent finished; checking the diff and the tests next.' : 'Noted.') });
    const { page, hud } = await step('Open a ChatGPT Project page (local fixture with a strict CSP, like a real site may have).', async () => {
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
    await continuityDemo(sandbox, context, worker, fixture);
    process.stdout.write('\nDemo finished: every step worked.\n');
  } finally {
    await sandbox.dispose();
  }
}

const CONVERSATION = '0d5e1f2a-3b4c-4d5e-8f6a-7b8c9d0e1f2a';
const shot = async (page, name) => {
  const file = path.join(OUTPUT, name);
  await page.screenshot({ path: file });
  say(`Screenshot: ${path.relative(REPO_ROOT, file)}`);
};
const waitFor = async (what, predicate, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms`);
};
// The HUD's state hooks live inside its closed root: read from our isolated world.
const hudAttr = (page, name) => inShadowRoot(page, 'herdr-continuity-hud', (root, host, n) => root?.querySelector('[data-hud-state]')?.getAttribute(n) ?? null, name);

/** The main job: bind → Auto → dispatch → working → settle → the chat continues once. */
async function continuityDemo(sandbox, context, worker, fixture) {
  fixture.conversations.set(CONVERSATION, {
    title: 'API refactor',
    turns: [
      { role: 'user', text: 'Plan the API client refactor and hand it to the agents in workspace api.' },
      { role: 'assistant', text: 'Plan ready. Dispatching the first task to the agent in workspace api.' },
    ],
  });
  const url = chatgptUrl.projectConversation(PROJECT_HEX, CONVERSATION);
  const page = await step('Open a conversation of the ChatGPT Project.', async () => {
    const opened = await context.newPage();
    await opened.setViewportSize({ width: 1280, height: 800 });
    await opened.goto(url);
    await new HudProbe(opened).expectCompanionConnected(20_000);
    return opened;
  });
  const hud = new ContinuityHud(page);
  await step('Bind the Project to Herdr workspace "api" (w1) from the side panel.', async () => {
    const { panel } = await bindFromPanel(context, worker, page, WORKSPACE.id);
    await panel.setViewportSize({ width: 420, height: 640 });
    await waitFor('the HUD showing the binding', async () => (await hudAttr(page, 'data-binding')) === WORKSPACE.id);
    await waitFor('the HUD showing the active target', async () => (await hudAttr(page, 'data-active-target')) === CONVERSATION);
    await shot(panel, '05-side-panel-bound.png');
    await panel.close();
    say(`The HUD shows: ${await hud.describe()}`);
    await shot(page, '06-hud-bound.png');
  });
  await step('Turn Auto on: allow Project Auto in the options, then press the HUD\'s Auto toggle.', async () => {
    await allowProjectAuto(context);
    await hud.expand(); // the HUD is a collapsed status pill by default
    await hud.action('toggle_auto').click();
    await waitFor('Auto on', async () => (await hudAttr(page, 'data-auto')) === 'on');
    say(`The HUD shows: ${await hud.describe()}`);
    await shot(page, '07-auto-on.png');
    await hud.toggle.click(); // collapse back to the pill
    await waitFor('the HUD collapsed', async () => (await hudAttr(page, 'data-expanded')) === 'false');
  });
  const sessionRef = await new ContinuityHud(page).sessionRef();
  const task = await step(`Dispatch a task into pane ${WORKSPACE.pane} as the MCP downlink would (session ref ${sessionRef}); the agent starts working.`, async () => {
    const dispatched = await dispatchTask(sandbox, { sessionRef, text: 'Refactor the API client and run the tests' });
    say(`The runtime recorded task ${dispatched.task_id} (${dispatched.state}).`);
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await waitFor('the HUD showing working', async () => (await hudAttr(page, 'data-scope-state')) === 'working');
    say(`The HUD shows: ${await hud.describe()}`);
    await shot(page, '08-working.png');
    return dispatched;
  });
  await step('The agent finishes (Herdr reports idle): the chat continues by itself, exactly once.', async () => {
    const t0 = Date.now();
    await reportAgent(sandbox, WORKSPACE.pane, 'idle');
    await waitFor('the wake reaching the chat', async () => fixture.automaticMessages(CONVERSATION).length === 1);
    say(`${Date.now() - t0} ms from the settle to the continue message recorded by the chat's backend.`);
    const [wake] = fixture.automaticMessages(CONVERSATION);
    for (const line of wake.text.split('\n')) say(`  > ${line}`);
    await waitFor('the reply to finish', async () => (await page.locator('button[data-testid="send-button"]').count()) === 1);
    await waitFor('the wake counted', async () => (await hudAttr(page, 'data-wake-count')) === '1');
    say(`The HUD shows: ${await hud.describe()}`);
    await shot(page, '09-chat-continued.png');
  });
  await step('Check the parent inbox and that nothing else was sent.', async () => {
    await waitFor('the task acknowledged', async () => (await listTasks(sandbox, sessionRef)).some((t) => t.task_id === task.task_id && t.acked_at));
    const [row] = await listTasks(sandbox, sessionRef);
    say(`Task ${row.task_id}: ${row.state}, acknowledged at ${new Date(row.acked_at).toISOString()} (after the wake was confirmed on the page).`);
    const automatic = fixture.automaticMessages(CONVERSATION).length;
    if (automatic !== 1) throw new Error(`expected exactly one automatic message, the backend recorded ${automatic}`);
    say('Exactly one automatic message was recorded.');
  });
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

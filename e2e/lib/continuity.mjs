// Helpers for the continuity loop end to end (issue 4): a Herdr seed with one agent pane,
// driving agent states the way a Herdr hook does (`pane.report_agent` on the stand-in
// socket), dispatching tasks the way the MCP downlink does (`herdr-companion task
// dispatch`), binding a chat from the side panel and switching Auto from the HUD.
//
// Invariants: nothing here sleeps to assert; every wait is a poll with a deadline that
// fails with what was seen. Hooks used are the documented ones (docs/PROTOCOL.md
// "Continuity loop on the internal ports").
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect, inContentWorld, inShadowRoot } from './shadow.mjs';
import { EXTENSION_ORIGIN } from './paths.mjs';
import { runCompanion } from './processes.mjs';
import { HUD_HOST, HudProbe, hudRoot } from './hud.mjs';
import { ChatGptFixture, chatgptUrl } from '../fixtures/chatgpt.mjs';
import { ChatSiteFixture } from '../fixtures/chatsites.mjs';

/** The seeded workspaces: w1 "api" and w2 "web", each with one `claude` pane, idle. */
export const SEED = {
  workspaces: [
    { label: 'api', cwd: '/home/user/api', tabs: [{ panes: [{ agent: 'claude', state: 'idle', output: 'claude ready' }] }] },
    { label: 'web', cwd: '/home/user/web', tabs: [{ panes: [{ agent: 'claude', state: 'idle', output: 'claude ready' }] }] },
  ],
};
export const WORKSPACE = { id: 'w1', label: 'api', pane: 'w1:p1' };
export const OTHER_WORKSPACE = { id: 'w2', label: 'web', pane: 'w2:p1' };
export const AGENT = 'claude';

/** Starts the stand-in with SEED (written into the sandbox dir). */
export async function startSeededHerdr(sandbox, seed = SEED) {
  const seedPath = path.join(sandbox.dir, 'seed.json');
  writeFileSync(seedPath, JSON.stringify(seed));
  return sandbox.startHerdr(['--seed', seedPath]);
}

/** One request to a Herdr socket (one request per connection, as Herdr does). */
export function herdrRequest(socketPath, method, params = {}, timeoutMs = 5_000) {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    let buffer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`Herdr at ${socketPath} did not answer ${method} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(`${JSON.stringify({ id: `e2e-${method}`, method, params })}\n`));
    socket.on('data', (chunk) => {
      buffer += chunk;
      const end = buffer.indexOf('\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.destroy();
      const answer = JSON.parse(buffer.slice(0, end));
      if (answer.error) reject(new Error(`Herdr refused ${method}: ${answer.error.code}: ${answer.error.message}`));
      else resolve(answer.result);
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot reach Herdr at ${socketPath} for ${method}: ${error.message}`));
    });
  });
}

/** What an agent's Herdr hook does: report the pane's state. */
export function reportAgent(sandbox, paneId, state, agent = AGENT) {
  return herdrRequest(sandbox.herdrSocket, 'pane.report_agent', { pane_id: paneId, source: 'custom:e2e', agent, state });
}

/** New output in a pane (what an agent prints while it works). */
export function paneOutput(sandbox, paneId, text) {
  return herdrRequest(sandbox.herdrSocket, 'pane.send_text', { pane_id: paneId, text, keys: ['enter'] });
}

/** `herdr-companion task dispatch` (the MCP downlink's `herdr_prompt` stand-in). */
export async function dispatchTask(sandbox, { sessionRef, workspace = WORKSPACE.id, pane = WORKSPACE.pane, text }) {
  const out = await runCompanion(
    ['task', 'dispatch', '--session-ref', sessionRef, '--workspace', workspace, '--pane', pane, '--home', sandbox.home, text],
    sandbox.env,
  );
  return JSON.parse(out);
}

/**
 * One agent cycle on w1 for `sessionRef`: dispatch `text`, working (waits until the HUD
 * shows it), idle. Returns the dispatched task.
 */
export async function agentCycle(sandbox, hud, sessionRef, text) {
  const task = await dispatchTask(sandbox, { sessionRef, text });
  await reportAgent(sandbox, WORKSPACE.pane, 'working');
  await hud.expect('data-scope-state', 'working', 'HUD shows the bound workspace working (P2)');
  await reportAgent(sandbox, WORKSPACE.pane, 'idle');
  return task;
}

/**
 * The page is idle again after `wakes` confirmed wakes: the HUD counts them, the page's
 * reply finished (no generation Stop, `fixture.ui.stop`) and nothing is withheld. A
 * checkpoint for "exactly one" (lib/backend.mjs `expectExactlyOne`).
 */
export async function expectIdleAfterWakes(page, fixture, hud, wakes, timeout = 20_000) {
  await hud.expect('data-wake-count', String(wakes), `HUD counts ${wakes} confirmed wake(s)`, timeout);
  await expect(page.locator(fixture.ui.stop), 'the reply to the wake has finished').toHaveCount(0, { timeout });
  await hud.expect('data-withheld', '');
}

/** `herdr-companion task list` for one session ref. */
export async function listTasks(sandbox, sessionRef) {
  const out = await runCompanion(['task', 'list', '--session-ref', sessionRef, '--home', sandbox.home], sandbox.env);
  return JSON.parse(out).tasks;
}

/** Sends `text` from the composer as the user and waits until the reply has ended;
 * `paste`: the text goes in at once, as a paste does (a long text typed key by key is slow). */
export async function askAndWait(page, fixture, text, { paste = false } = {}) {
  const before = fixture.server.length;
  await page.locator('#prompt-textarea').click();
  if (paste) await page.keyboard.insertText(text);
  else await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await expect.poll(() => fixture.server.length, { message: 'the fixture received the message' }).toBeGreaterThan(before);
  await expect(page.locator('button[data-testid="stop-button"]'), 'the reply has ended').toHaveCount(0, { timeout: 20_000 });
}

/** The Chrome tab id of the page showing `url` (asked from the extension's worker). */
export async function tabIdOf(worker, url) {
  let tabs = [];
  for (let i = 0; i < 50; i++) {
    tabs = await worker.evaluate(() => chrome.tabs.query({}));
    const tab = tabs.find((t) => t.url === url);
    if (tab) return tab.id;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no tab shows ${url}; tabs: ${JSON.stringify(tabs.map((t) => t.url))}`);
}

/**
 * Opens the side panel for the tab of `page` (as a page: sidepanel.html?tab=<id>) and binds
 * that tab's scope to `workspaceId` with the panel's button. Returns the panel page.
 */
export async function bindFromPanel(context, worker, page, workspaceId) {
  const tabId = await tabIdOf(worker, page.url());
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${tabId}`);
  await expect(panel.locator('[data-panel-tab]'), 'side panel shows the chat tab').toHaveAttribute('data-tab-id', String(tabId), { timeout: 15_000 });
  const bind = panel.locator(`[data-catalog] button[data-bind="${workspaceId}"]`);
  await expect(bind, `side panel lists workspace ${workspaceId}`).toBeVisible({ timeout: 15_000 });
  await bind.click();
  return { panel, tabId };
}

/** Ticks "allow Project Auto" on the options page (SPEC M2). */
export async function allowProjectAuto(context) {
  const options = await context.newPage();
  await options.goto(`${EXTENSION_ORIGIN}options.html`);
  const box = options.locator('input#allowProjectAuto');
  await expect(box).toBeVisible({ timeout: 15_000 });
  if (!(await box.isChecked())) await box.check();
  await expect(options.locator('p.save-status[role=status]')).not.toBeEmpty();
  await options.close();
}

/**
 * Sets the progress timing on the options page (O4) the way a user does: type a value,
 * leave the field. Returns the values the page shows afterwards (clamped into range).
 */
export async function setProgressOptions(context, { tickSec, fallbackSec }) {
  const options = await context.newPage();
  await options.goto(`${EXTENSION_ORIGIN}options.html`);
  const shown = {};
  for (const [id, value] of [['progressTickSec', tickSec], ['progressFallbackSec', fallbackSec]]) {
    if (value == null) continue;
    const input = options.locator(`input#${id}`);
    await expect(input).toBeVisible({ timeout: 15_000 });
    const status = options.locator('p.save-status[role=status]');
    await status.evaluate((el) => { el.textContent = ''; });
    await input.fill(String(value));
    await input.press('Tab'); // `change` fires when the field loses focus
    await expect(status, `options page saved ${id}`).not.toBeEmpty();
    shown[id] = Number(await input.inputValue());
  }
  await options.close();
  return shown;
}

/** The HUD's state hooks kept inside its closed root (extension/content-hud.js `hooks`); the rest stay on the host. */
const STATE_HOOK = /^data-(binding|active-target|auto|scope-state|wake-count|progress-count|withheld|tasks|layout|unresolved|delivery-state|recovery-(state|reason|probes|reloads-left)|card-(state|code|tool)|journal|pressure-(level|tokens|messages)|rollover|handoff-(step|button)|bridge-(pending|round-limit)|expanded|summary-tone|app|cooldown-until)$/;

/** The continuity hooks of the HUD host element. */
export class ContinuityHud {
  constructor(page) {
    this.page = page;
    this.host = hudRoot(page);
  }

  action(id) {
    return this.host.locator(`button[data-action="${id}"]`);
  }

  /** The status pill (`<button aria-expanded>`) that shows/hides the HUD's details. */
  get toggle() {
    return this.host.locator('button[data-hud-toggle]');
  }

  /** Expands the HUD (collapsed by default) so its buttons can be pressed. */
  async expand() {
    await expect(this.toggle).toBeVisible({ timeout: 15_000 });
    if ((await this.toggle.getAttribute('aria-expanded')) !== 'true') await this.toggle.click();
    await expect(this.toggle).toHaveAttribute('aria-expanded', 'true');
  }

  /**
   * The HUD's state hooks (Auto, the binding, a card waiting, …): an element inside the
   * closed root, read from our isolated world — never on the host, where the page could
   * read them.
   */
  get state() {
    return this.host.locator('[data-hud-state]');
  }

  expect(attribute, value, message, timeout = 20_000) {
    const where = STATE_HOOK.test(attribute) ? this.state : this.host;
    return expect(where, message ?? `HUD ${attribute}`).toHaveAttribute(attribute, value, { timeout });
  }

  /** The session ref the HUD shows (inside its closed root only: the page cannot read it). */
  async sessionRef() {
    const line = this.host.locator('p[data-line="session"]');
    await expect(line, 'HUD shows the session ref').toHaveAttribute('data-ref', /.+/, { timeout: 20_000 });
    return line.getAttribute('data-ref');
  }

  async turnAutoOn() {
    await this.expect('data-auto', 'off', 'Auto is off before the toggle');
    await this.expand();
    await expect(this.action('toggle_auto')).toBeEnabled({ timeout: 15_000 });
    await this.action('toggle_auto').click();
    await this.expect('data-auto', 'on', 'Auto is on after the toggle');
  }

  /** A one-line summary of the continuity hooks (for messages and the demo). */
  async describe() {
    const d = await this.state.evaluate((el) => (el ? { ...el.dataset } : null));
    if (!d) return '(no HUD)';
    return `binding=${d.binding} target=${d.activeTarget || '-'} auto=${d.auto} state=${d.scopeState} wakes=${d.wakeCount} withheld=${d.withheld || '-'} tasks=${d.tasks || '-'}`;
  }
}

// ---- A whole continuity world: seeded Herdr, runtime, Chromium, the ChatGPT fixture.

export const PROJECT_HEX = '5f0c2e7a9b1d4c3e8f6a0b2c4d6e8f01';
export const CONVERSATION = '3b9f1c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
export const STREAM_MS = 300;

/** The two kinds of chat a binding can have (REFERENCE §3). */
export const CHATS = [
  {
    name: 'Project conversation',
    url: chatgptUrl.projectConversation(PROJECT_HEX, CONVERSATION),
    sessionRef: `chatgpt:project:g-p-${PROJECT_HEX}`,
    project: true,
  },
  {
    name: 'plain conversation',
    url: chatgptUrl.conversation(CONVERSATION),
    sessionRef: `chatgpt:conv:${CONVERSATION}`,
    project: false,
  },
];

/**
 * Herdr with two seeded agent workspaces, the host installed, the runtime started, Chromium
 * up (`uiLang`: the browser's UI language, e.g. `zh-CN`), and the ChatGPT fixture with
 * `fixtureOptions` (`csp`, `layout`, `lang`, `submit`, `wrap`, `editOpen`: see
 * fixtures/chatgpt.mjs).
 */
export async function continuityWorld(sandbox, { streamMs = STREAM_MS, csp = 'none', uiLang = null, ...fixtureOptions } = {}) {
  // The host manifest is a file: written while the stand-in starts. The runtime comes after
  // Herdr, as a user's does.
  await Promise.all([startSeededHerdr(sandbox), sandbox.installHost()]);
  await sandbox.startRuntime();
  const { context, worker } = await sandbox.launchBrowser({ lang: uiLang });
  const fixture = new ChatGptFixture({ streamMs, csp, ...fixtureOptions });
  fixture.conversations.set(CONVERSATION, {
    title: 'Continuity',
    turns: [
      { role: 'user', text: 'Plan the API refactor and hand it to the agents.' },
      { role: 'assistant', text: 'Dispatching to workspace api.' },
    ],
  });
  await fixture.install(context);
  return { context, worker, fixture };
}

/**
 * Restarts the extension's service worker the documented way: close the browser context
 * and launch the same profile again (the fixture's backend record lives on in this process).
 */
export async function relaunchBrowser(sandbox, fixture) {
  await sandbox.context.close();
  sandbox.context = null;
  const { context, worker } = await sandbox.launchBrowser();
  await fixture.install(context);
  return { context, worker };
}

/** The worker's persisted continuity snapshot (`chrome.storage.local["continuity"]`), parsed. */
export async function persistedContinuity(worker) {
  const stored = await worker.evaluate(() => chrome.storage.local.get('continuity'));
  const raw = stored?.continuity;
  if (raw == null) return null;
  return typeof raw === 'string' ? JSON.parse(raw) : raw;
}

/** Opens the chat, waits for a connected HUD, binds it to w1 from the side panel. */
export async function openAndBind(context, worker, chat) {
  const page = await context.newPage();
  await page.goto(chat.url);
  await new HudProbe(page).expectCompanionConnected();
  const hud = new ContinuityHud(page);
  const { panel } = await bindFromPanel(context, worker, page, WORKSPACE.id);
  await hud.expect('data-binding', WORKSPACE.id, 'HUD shows the binding (B1)');
  if (chat.project) await hud.expect('data-active-target', CONVERSATION, 'HUD shows the Project delivery target (B3)');
  await expect(panel.locator(`[data-bindings] [data-binding-row]`)).toHaveCount(1);
  await panel.close();
  return { page, hud };
}

export async function turnAutoOn(context, hud, chat) {
  await hud.expect('data-auto', 'off', 'Auto is off by default (M1)');
  await hud.expand();
  await expect(hud.action('toggle_auto')).toBeEnabled({ timeout: 15_000 });
  await hud.action('toggle_auto').click();
  if (chat.project) {
    // M2: a Project's toggle only takes effect once the options page allows Project Auto.
    await hud.expect('data-auto', 'not_allowed', 'Project Auto waits for the global option (M2)');
    await allowProjectAuto(context);
  }
  await hud.expect('data-auto', 'on', 'Auto is on');
}

/**
 * A plain conversation bound to w1 with Auto on and recovery watching it (the HUD says
 * `healthy`): the world of the stuck-view recovery cases (recovery.spec.mjs,
 * mixed-layouts.spec.mjs). `fixtureOptions` as for `continuityWorld`; replies stream 600 ms
 * unless `streamMs` says otherwise.
 */
export async function stuckChatWorld(sandbox, fixtureOptions = {}) {
  const chat = CHATS.find((c) => !c.project);
  const world = await continuityWorld(sandbox, { streamMs: 600, ...fixtureOptions });
  const { page, hud } = await openAndBind(world.context, world.worker, chat);
  await turnAutoOn(world.context, hud, chat);
  await hud.expect('data-recovery-state', 'healthy', 'HUD: recovery watches the chat');
  return { ...world, page, hud };
}

/** The human sends `text` from the composer (Enter) and the fixture's server gets it. */
export async function humanSends(page, fixture, text) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await expect.poll(() => fixture.counts.userMessages, { message: 'the server got the message' }).toBeGreaterThan(0);
}

/**
 * A whole world with `chat` bound to w1, Auto on, and `draft` typed into its composer by
 * the user (a human draft, which holds wakes back: M7).
 */
export async function boundChatWithDraft(sandbox, chat, draft) {
  const { context, worker, fixture } = await continuityWorld(sandbox);
  const { page, hud } = await openAndBind(context, worker, chat);
  await turnAutoOn(context, hud, chat);
  const sessionRef = await hud.sessionRef();
  const composer = page.locator('#prompt-textarea');
  await composer.click();
  await page.keyboard.type(draft);
  return { context, worker, fixture, page, hud, sessionRef, composer };
}

/**
 * Records every value the HUD hook `attribute` takes on `page` from now on, with the time
 * (page clock); `read()` gives `[{ value, at }]`, the value at the call first.
 */
export async function watchHudHook(page, attribute) {
  // The state hooks live inside the HUD's closed root: watched from our isolated world.
  const slot = `__watch_${attribute.replace(/\W/g, '_')}`;
  await inShadowRoot(page, HUD_HOST, (root, host, [name, slotName]) => {
    const el = root.querySelector('[data-hud-state]');
    globalThis[slotName] = [{ value: el.getAttribute(name), at: Date.now() }];
    new MutationObserver(() => {
      const value = el.getAttribute(name);
      if (globalThis[slotName].at(-1).value !== value) globalThis[slotName].push({ value, at: Date.now() });
    }).observe(el, { attributes: true, attributeFilter: [name] });
  }, [attribute, slot]);
  return { read: () => inContentWorld(page, (slotName) => globalThis[slotName], slot) };
}

/**
 * Herdr, host, runtime and Chromium with the z.ai or DeepSeek fixture of `site` holding
 * `conversation`'s short thread.
 */
export async function chatSiteWorld(sandbox, site, conversation, fixtureOptions = {}) {
  // The host manifest is a file: written while the stand-in starts. The runtime comes after
  // Herdr, as a user's does.
  await Promise.all([startSeededHerdr(sandbox), sandbox.installHost()]);
  await sandbox.startRuntime();
  const { context, worker } = await sandbox.launchBrowser();
  const fixture = new ChatSiteFixture({ site, ...fixtureOptions });
  fixture.conversations.set(conversation, [
    { role: 'user', text: 'Plan the API refactor and hand it to the agents.', id: 'u0' },
    { role: 'assistant', text: 'Dispatching to workspace api.', id: 'a0' },
  ]);
  await fixture.install(context);
  return { context, worker, fixture };
}

/** Opens `conversation` of a site fixture and binds it to w1 from the side panel (B6). */
export async function openSiteBound(context, worker, fixture, conversation) {
  const page = await context.newPage();
  await page.goto(fixture.url(conversation));
  await new HudProbe(page).expectCompanionConnected();
  const hud = new ContinuityHud(page);
  const { panel } = await bindFromPanel(context, worker, page, WORKSPACE.id);
  await hud.expect('data-binding', WORKSPACE.id, 'HUD shows the conversation bound (B6)');
  await panel.close();
  return { page, hud };
}

/** `openSiteBound`, then its Auto turned on (M3). */
export async function openSiteBoundWithAuto(context, worker, fixture, conversation) {
  const { page, hud } = await openSiteBound(context, worker, fixture, conversation);
  await hud.turnAutoOn();
  return { page, hud };
}

// Issue 4 / SPEC M4, B5: the HUD's manual actions and the side panel, end to end in real
// Chromium with the built extension, the native host, the companion runtime, the Herdr
// stand-in and the ChatGPT fixture (whose fake backend in this process records every
// submitted user message).
// - Continue (Auto off, bound): exactly one manual message, A3 wording, never a claim of
//   success; the HUD's last-message line updates; a human draft is never overwritten or sent.
// - Check Herdr: reads the live workspace through the runtime (`herdr.panes`,
//   `herdr.pane_read`) and puts a bounded summary into the composer; sends nothing.
// - LLM judge (issue 11): the page's last turn goes to the companion's `judge.turn_end`;
//   with no provider configured the companion's own gate and script answer, and a notice
//   shows the verdict, its source and reason; nothing is sent (semantic-judge.spec.mjs
//   covers the providers).
// - Auto on locks the three (M4): `disabled` + `data-locked`, keyboard cannot reach them;
//   Auto off unlocks them.
// - Side panel (B1): live catalog with Herdr's labels, bind, the bindings list, Unbind;
//   after Unbind a settle of that workspace never wakes the chat (even with Auto on before).
//
// "Nothing was sent" is always asserted after a checkpoint the HUD, the composer or another
// chat's confirmed wake proves was reached, never after a sleep.
import { test, expect } from '../lib/test.mjs';
import {
  AGENT, CHATS, CONVERSATION, ContinuityHud, OTHER_WORKSPACE, WORKSPACE, continuityWorld, dispatchTask, herdrRequest,
  listTasks, openAndBind, reportAgent, tabIdOf, turnAutoOn,
} from '../lib/continuity.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { nativeRequestFromWorker } from '../lib/extension.mjs';
import { HUD_HOST } from '../lib/hud.mjs';
import { inShadowRoot } from '../lib/shadow.mjs';
import { chatgptUrl } from '../fixtures/chatgpt.mjs';

const [, PLAIN_CHAT] = CHATS;
const OTHER_CONVERSATION = '7c1d2e3f-8a9b-4c0d-9e1f-2a3b4c5d6e7f';
const LOCKABLE = ['continue', 'check_herdr', 'llm_judge'];
/** ext-core `continuity::CHECK_HERDR_MAX_CHARS`: the Check Herdr summary's cap. */
const CHECK_HERDR_MAX_CHARS = 6_000;
/** ext-core `continuity::CHECK_HERDR_LINES`: rows read per pane. */
const CHECK_HERDR_LINES = 40;

/** The composer's text as ChatGPT would submit it (paragraphs joined by one "\n"). */
function composerText(page) {
  return page.evaluate(() => {
    const composer = document.getElementById('prompt-textarea');
    const blocks = [...composer.children].filter((el) => el.tagName === 'P' || el.tagName === 'DIV');
    const text = blocks.length ? blocks.map((p) => p.innerText.replace(/\n$/, '')).join('\n') : composer.innerText;
    return text.replace(/\n+$/, '');
  });
}

/** The HUD's one-off status line (`[role=status]`, outside the collapsible panel). */
function statusLine(hud) {
  return hud.host.locator('p.status[role="status"]');
}

/** Empties the status line, so the next notice is known to be new. */
async function clearStatus(page) {
  await inShadowRoot(page, HUD_HOST, (root) => {
    const status = root?.querySelector('p.status');
    if (status) {
      status.textContent = '';
      delete status.dataset.key;
      delete status.dataset.tone;
    }
  });
}

/** How many page_facts the content script has posted (its `data-facts-sent` counter). */
function factsSent(page) {
  return page.evaluate((tag) => Number(document.querySelector(tag)?.dataset.factsSent ?? NaN), HUD_HOST);
}

/**
 * Changes the composer with `change` and waits until the content script has posted the
 * new page facts (draft or not) to the worker: the next `action` on the same port is then
 * handled with them. The hook is the host's `data-facts-sent` counter (content-facts.js); a
 * build without it falls back to outlasting the facts throttle (100 ms) — a
 * synchronisation point, never an assertion.
 */
async function composerChange(page, change) {
  const before = await factsSent(page);
  await change();
  if (Number.isNaN(before)) {
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 400)));
    return;
  }
  await expect.poll(() => factsSent(page), { message: 'the content script reports the composer change' }).toBeGreaterThan(before);
}

/** Types a human draft into the composer. */
async function typeDraft(page, text) {
  await composerChange(page, async () => {
    await page.locator('#prompt-textarea').click();
    await page.keyboard.type(text);
    await expect.poll(() => composerText(page)).toBe(text);
  });
}

/** Clears the composer the way a human does. */
async function clearComposer(page) {
  await composerChange(page, async () => {
    await page.locator('#prompt-textarea').click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await expect.poll(() => composerText(page)).toBe('');
  });
}

/** Prints `lines` into a pane (what an agent does while it works). */
function printLines(sandbox, paneId, lines) {
  return herdrRequest(sandbox.herdrSocket, 'pane.send_text', { pane_id: paneId, text: lines.join('\n'), keys: ['enter'] });
}

/** A second agent pane in w1 (split of w1:p1), with `agent` reported working. */
async function addAgentPane(sandbox, worker, agent) {
  const split = await herdrRequest(sandbox.herdrSocket, 'pane.split', { target_pane_id: WORKSPACE.pane, direction: 'right' });
  const paneId = split.pane.pane_id;
  await reportAgent(sandbox, paneId, 'working', agent);
  await runtimeKnows(worker, paneId, agent);
  return paneId;
}

/**
 * Check Herdr lists the panes the runtime's catalog holds, which Herdr's events fill: waits
 * until it holds `paneId` with its `agent` working (under load the events can land after a
 * press).
 */
async function runtimeKnows(worker, paneId, agent) {
  await expect.poll(async () => {
    const answer = await nativeRequestFromWorker(worker, 'herdr.panes', { workspace_id: WORKSPACE.id }).catch(() => null);
    return (answer?.result?.panes ?? []).some((pane) => pane.pane_id === paneId && pane.agent === agent && pane.agent_status === 'working');
  }, { message: `the runtime knows pane ${paneId} and its ${agent} working`, timeout: 15_000 }).toBe(true);
}

/** Long numbered lines for a pane (`width` chars each). */
function longLines(tag, count, width = 200) {
  return Array.from({ length: count }, (_, i) => {
    const head = `${tag} line ${String(i + 1).padStart(3, '0')} `;
    return head + 'x'.repeat(Math.max(0, width - head.length));
  });
}

/** Presses a HUD action button once the HUD is expanded and the button is enabled. */
async function press(hud, action) {
  await hud.expand();
  await expect(hud.action(action), `${action} is enabled`).toBeEnabled({ timeout: 15_000 });
  await hud.action(action).click();
}

test.describe('HUD manual actions and the side panel (M4, B1, B5)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('Continue with Auto off sends exactly one A3 manual message; a human draft is never overwritten or sent (M4, M7, A3)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await hud.expect('data-auto', 'off', 'Auto is off by default (M1)');
    const lastMessage = hud.host.locator('[data-line="last-wake"]');
    await hud.expand();
    await expect(lastMessage, 'HUD: nothing sent yet').toHaveAttribute('data-key', 'hudNoWakeYet');

    await press(hud, 'continue');
    await expect.poll(() => fixture.messagesOf(CONVERSATION).length, { timeout: 20_000, message: 'the manual continue reaches the backend' }).toBe(1);
    const [manual] = fixture.messagesOf(CONVERSATION);
    expect(manual.text, 'the marker line names a manual continue').toMatch(/\n\[herdr-continuity continue:w1\/[0-9a-z]+\.\d+\.\d+ ref=([^\]\s]+)\]$/);
    expect(manual.text.match(/ ref=([^\]\s]+)\]$/)[1], 'and the chat\'s session ref').toBe(PLAIN_CHAT.sessionRef);
    expect(manual.text, 'names the bound workspace').toContain(`workspace ${WORKSPACE.label} (${WORKSPACE.id})`);
    expect(manual.text, 'A3: asks to re-read live Herdr/Git state').toContain('Re-read the live Herdr and Git state');
    expect(manual.text, 'A3: says it is no evidence of success').toContain('not evidence that anything succeeded');
    expect(manual.text, 'A3: never claims success').not.toMatch(/\b(all (tests|work) (pass|passed|done)|(work|task)s? (is|are|has been|have been) (done|completed|finished))\b/i);
    await expect(lastMessage, 'HUD: the last-message line shows the continue').toHaveAttribute('data-key', 'hudLastWake', { timeout: 15_000 });
    await expect(lastMessage).toContainText('continue');

    // The reply finishes; a human starts a draft and presses Continue.
    await expect(page.locator('button[data-testid="send-button"]')).toBeVisible();
    const draft = 'half-written thought about the cache layer';
    await typeDraft(page, draft);
    await clearStatus(page);
    await press(hud, 'continue');
    // Checkpoint: the worker refused and said why.
    await expect(statusLine(hud), 'HUD says the draft blocks Continue').toHaveAttribute('data-key', 'notice', { timeout: 15_000 });
    await expect(statusLine(hud)).toContainText('unsent text');
    await expect(statusLine(hud)).toHaveAttribute('data-tone', 'bad');
    expect(await composerText(page), 'the draft is untouched').toBe(draft);
    expect(fixture.messagesOf(CONVERSATION), 'nothing more was submitted').toHaveLength(1);

    // The human clears the draft and presses Continue again: one more message, number 2.
    await clearComposer(page);
    await press(hud, 'continue');
    await expect
      .poll(async () => ({ sent: fixture.messagesOf(CONVERSATION).length, status: await statusLine(hud).textContent() }), { timeout: 20_000 })
      .toMatchObject({ sent: 2 });
    const second = fixture.messagesOf(CONVERSATION)[1];
    expect(second.text).toMatch(/\n\[herdr-continuity continue:w1\/[0-9a-z]+\.\d+\.\d+ ref=([^\]\s]+)\]$/);
    expect(second.text).not.toContain(draft);
    expect(second.text.match(/continue:(\S+) ref=/)[1], 'a new delivery id').not.toBe(manual.text.match(/continue:(\S+) ref=/)[1]);
    await expect(page.locator('button[data-testid="send-button"]')).toBeVisible();
    expect(fixture.messagesOf(CONVERSATION), 'exactly two manual messages in all').toHaveLength(2);
    await hud.expect('data-auto', 'off', 'Continue never switches Auto on');
  });

  // Regression (CI, 2026-12, the test above on a loaded 2-core machine: no notice after the
  // draft's Continue): a click is a press and a release; the HUD rebuilt its buttons on
  // every view it got, and a view arriving in between (frequent under load: the health
  // line's counts change the view) replaced the pressed button, so the browser dispatched
  // no click at all — Continue did nothing and said nothing. Here the view arrives, for
  // certain, while the button is held: an agent of the bound workspace starts working.
  test('a HUD view that arrives between press and release does not lose the Continue press (M4, M7)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await typeDraft(page, 'a thought in progress');
    await clearStatus(page);
    await hud.expand();
    await hud.expect('data-scope-state', 'idle', 'no agent works yet');
    const button = hud.action('continue');
    const { x, y } = await button.actionable();
    await page.mouse.move(x, y);
    await page.mouse.down();
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await hud.expect('data-scope-state', 'working', 'the HUD rendered the new view while the button was held');
    expect((await button.state()).box, 'the button did not move (the release lands on it)').toEqual({ x, y });
    await page.mouse.up();
    await expect(statusLine(hud), 'the press counted: the worker refused and said why').toHaveAttribute('data-key', 'notice', { timeout: 15_000 });
    await expect(statusLine(hud)).toContainText('unsent text');
    expect(fixture.server, 'nothing was sent').toEqual([]);
  });

  // Regression: a Continue refused because of a draft is dropped, not queued (the test above
  // proves nothing follows when the draft is cleared), so its notice must not be the
  // automatic-wake text ("… the update follows"): it says it was not sent and to press again.
  test('a Continue refused for a human draft says it was not sent, without promising a later send (M7)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await typeDraft(page, 'a thought in progress');
    await clearStatus(page);
    await press(hud, 'continue');
    await expect(statusLine(hud)).toHaveAttribute('data-key', 'notice', { timeout: 15_000 });
    await expect(statusLine(hud), 'the draft is named as the reason').toContainText('unsent text');
    await expect(statusLine(hud), 'no promise of an automatic follow-up').not.toContainText(/Waiting|follows/);
    await expect(statusLine(hud), 'says what to do').toContainText('press Continue again');
    expect(fixture.server).toEqual([]);
  });

  // A2: the HUD speaks the browser's language. Its texts are _locales messages the core
  // names by key (ext-core texts::Say), so a Chinese browser gets the Chinese ones.
  test('in a Chinese browser the refused Continue and the withheld reason are Chinese (A2)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox, { uiLang: 'zh-CN' });
    expect(await worker.evaluate(() => chrome.i18n.getUILanguage()), 'the browser runs in Chinese').toMatch(/^zh/);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await typeDraft(page, '关于缓存层的半句话');
    await clearStatus(page);
    await press(hud, 'continue');
    await expect(statusLine(hud)).toHaveAttribute('data-key', 'notice', { timeout: 15_000 });
    await expect(statusLine(hud), 'the zh_CN text of manualRefused_human_draft').toHaveText('未发送：输入框里有你尚未发送的文字。请先发送或清空，然后再按“继续”。');
    // Auto is off here, so that is what the withheld line names, in Chinese too.
    await expect(hud.host.locator('[data-line="withheld"]'), 'the withheld line too').toHaveText('未发送：此会话的自动已关闭。开启自动，或手动继续。');
    expect(fixture.server).toEqual([]);
  });

  test('Check Herdr puts a summary of the live workspace (panes, agents, statuses, recent output) into the composer and sends nothing (M4)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await hud.expect('data-scope-state', 'working', 'HUD shows w1 working');
    // 60 short numbered lines: only the most recent CHECK_HERDR_LINES are read.
    const lines = Array.from({ length: 60 }, (_, i) => `cargo test step ${String(i + 1).padStart(2, '0')} ok`);
    await printLines(sandbox, WORKSPACE.pane, lines);

    await press(hud, 'check_herdr');
    await expect.poll(() => composerText(page), { timeout: 15_000, message: 'the summary lands in the composer' }).toContain('[Herdr check]');
    const summary = await composerText(page);
    expect(summary).toContain(`[Herdr check] Workspace ${WORKSPACE.id}: 1 pane(s).`);
    expect(summary, 'pane id, agent and status').toContain(`## ${WORKSPACE.pane} (claude, working)`);
    expect(summary, 'the newest output line (pane.read)').toContain('cargo test step 60 ok');
    expect(summary, 'recent output, in order').toContain('cargo test step 59 ok\ncargo test step 60 ok');
    expect(summary, `only the last ${CHECK_HERDR_LINES} rows are read`).not.toContain('cargo test step 05 ok');
    expect(summary, 'no marker: this is not an automatic delivery').not.toContain('[herdr-continuity');

    // Checkpoint reached (the composer holds the summary): nothing went to the backend, and
    // the text waits for the human (it is now a draft, Auto is off).
    expect(fixture.server, 'Check Herdr sends nothing').toEqual([]);
    await expect(page.locator('button[data-testid="send-button"]'), 'the send button is the human\'s to press').toBeEnabled();
    await expect(page.locator('[data-message-author-role="user"]')).toHaveCount(1);
    await hud.expect('data-wake-count', '0');
  });

  test('the Check Herdr summary is bounded however much the agents print (M4)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await runtimeKnows(worker, WORKSPACE.pane, AGENT);
    const second = await addAgentPane(sandbox, worker, 'codex');
    // Each pane's last 40 rows hold 8 000 characters: 16 000 in all, far over the cap.
    await printLines(sandbox, WORKSPACE.pane, longLines('claude', 80));
    await printLines(sandbox, second, longLines('codex', 80));

    await press(hud, 'check_herdr');
    await expect.poll(() => composerText(page), { timeout: 15_000 }).toContain('[Herdr check]');
    const summary = await composerText(page);
    expect(summary).toContain(`[Herdr check] Workspace ${WORKSPACE.id}: 2 pane(s).`);
    expect(summary).toContain(`## ${WORKSPACE.pane} (claude, working)`);
    expect(summary, 'only recent rows are read').not.toContain('claude line 001 ');
    expect([...summary].length, `the summary is capped at ${CHECK_HERDR_MAX_CHARS} characters`).toBeLessThanOrEqual(CHECK_HERDR_MAX_CHARS);
    expect(summary, 'a cut summary says so with …, inside its data fence').toMatch(/…\n<<<END_HC_DATA n=[0-9a-f]{12}>>>$/);
    expect([...summary].length, 'the cap, not a tiny read, bounded it').toBeGreaterThan(CHECK_HERDR_MAX_CHARS / 2);
    expect(fixture.server, 'Check Herdr sends nothing').toEqual([]);
  });

  // Regression: a pane whose last 40 rows exceed 4 000 characters used to lose its NEWEST
  // rows (the worker clipped `herdr.pane_read.text` keeping the head). Terminal output is
  // now clipped from its start (ext-core `limits::clip_tail`).
  test('Check Herdr keeps a busy pane\'s newest output line (bounded from the old end)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    const lines = longLines('claude', 80);
    await printLines(sandbox, WORKSPACE.pane, lines);
    await press(hud, 'check_herdr');
    await expect.poll(() => composerText(page), { timeout: 15_000 }).toContain('[Herdr check]');
    const summary = await composerText(page);
    expect(summary, 'the pane\'s newest line is in the summary').toContain(lines.at(-1));
    expect(fixture.server).toEqual([]);
  });

  test('LLM judge: the HUD shows the verdict, its source and reason; nothing is sent (M4, J4)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await clearStatus(page);
    await press(hud, 'llm_judge');
    const status = statusLine(hud);
    await expect(status, 'a notice answers the judge button').toHaveAttribute('data-key', 'notice', { timeout: 15_000 });
    await expect(status).toHaveAttribute('data-tone', 'info');
    // The fixture's last reply ("Dispatching to workspace api.") is too short to leave work.
    await expect(status, 'the verdict, who decided and why').toContainText('Judge (script): done — ');
    // The notice is visible even with the HUD collapsed.
    await hud.toggle.click();
    await expect(hud.toggle).toHaveAttribute('aria-expanded', 'false');
    await expect(status).toBeVisible();
    expect(fixture.server, 'the judge sends nothing').toEqual([]);
    expect(await composerText(page), 'and types nothing').toBe('');
  });

  test('Auto on locks Continue, Check Herdr and LLM judge (disabled, data-locked, unreachable by keyboard); Auto off unlocks them (M4)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await turnAutoOn(context, hud, PLAIN_CHAT);
    await hud.expand();
    for (const action of LOCKABLE) {
      await expect(hud.action(action), `${action} is disabled`).toBeDisabled();
      await expect(hud.action(action)).toHaveAttribute('data-locked', 'auto_is_on');
      await expect(hud.action(action), 'the title says why').toHaveAttribute('title', /Auto is on/);
    }
    await expect(hud.action('toggle_auto'), 'Auto itself stays switchable').toBeEnabled();

    // Keyboard: Tab through the whole HUD from the pill; a locked button never takes focus,
    // so Enter/Space cannot trigger it.
    await clearStatus(page);
    await hud.toggle.focus();
    const reached = [];
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      const focused = await inShadowRoot(page, HUD_HOST, (root) => {
        const el = root?.activeElement;
        return el ? el.dataset.action ?? el.dataset.hudToggle ?? el.tagName : null;
      });
      if (focused == null) break; // focus left the HUD
      reached.push(focused);
    }
    expect(reached, 'Tab reaches the Auto toggle').toContain('toggle_auto');
    for (const action of LOCKABLE) expect(reached, `Tab never reaches locked ${action}`).not.toContain(action);
    // Enter / Space on whatever a script might focus: a disabled button refuses focus.
    for (const action of LOCKABLE) {
      await hud.action(action).evaluate((el) => el.focus());
      const focused = await inShadowRoot(page, HUD_HOST, (root) => root?.activeElement?.dataset?.action ?? null);
      expect(focused, `${action} cannot be focused`).not.toBe(action);
    }

    // Auto off (by keyboard on the toggle): the three unlock.
    await hud.action('toggle_auto').focus();
    await page.keyboard.press('Enter');
    await hud.expect('data-auto', 'off', 'Auto off');
    for (const action of LOCKABLE) {
      await expect(hud.action(action), `${action} unlocked`).toBeEnabled();
      await expect(hud.action(action)).not.toHaveAttribute('data-locked', /.*/);
    }
    // Checkpoint for the keyboard attempts above: the worker handled the toggle after them
    // (one ordered port), and no lock notice or message came from them.
    await expect(statusLine(hud)).not.toHaveAttribute('data-key', 'notice');
    expect(fixture.server, 'nothing was sent while locked').toEqual([]);

    // Unlocked, the keyboard works: Enter on Continue sends one manual message.
    await hud.action('continue').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => fixture.messagesOf(CONVERSATION).length, { timeout: 20_000 }).toBe(1);
    expect(fixture.messagesOf(CONVERSATION)[0].text).toMatch(/\[herdr-continuity continue:w1\/[0-9a-z]+\.\d+\.\d+ ref=([^\]\s]+)\]$/);
  });

  test('side panel: live catalog with Herdr labels, bind, list, Unbind; after Unbind a settle never wakes the chat (B1, M1)', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    fixture.conversations.set(OTHER_CONVERSATION, { title: 'Other', turns: [{ role: 'user', text: 'Watch the web app.' }, { role: 'assistant', text: 'OK.' }] });
    const page = await context.newPage();
    await page.goto(PLAIN_CHAT.url);
    const hud = new ContinuityHud(page);
    await hud.expect('data-companion', 'companionConnected');
    await hud.expect('data-binding', '', 'not bound yet');

    const tabId = await tabIdOf(worker, page.url());
    const panel = await context.newPage();
    await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${tabId}`);
    await expect(panel.locator('[data-panel-tab]')).toHaveAttribute('data-tab-id', String(tabId), { timeout: 15_000 });
    await expect(panel.locator('[data-panel-tab]')).toHaveAttribute('data-scope-key', /.+/);
    const scopeKey = await panel.locator('[data-panel-tab]').getAttribute('data-scope-key');

    // The live catalog: the stand-in's workspaces with their Herdr labels.
    const catalog = panel.locator('[data-catalog]');
    await expect(catalog.locator(`button[data-bind="${WORKSPACE.id}"]`)).toContainText(`${WORKSPACE.label} (${WORKSPACE.id})`, { timeout: 15_000 });
    await expect(catalog.locator(`button[data-bind="${OTHER_WORKSPACE.id}"]`)).toContainText(`${OTHER_WORKSPACE.label} (${OTHER_WORKSPACE.id})`);
    // A workspace created in Herdr now shows after Refresh, with its label. (Relabelling is
    // not covered: the stand-in does not implement `workspace.rename`.)
    const created = await herdrRequest(sandbox.herdrSocket, 'workspace.create', { label: 'docs', cwd: '/home/user/docs' });
    const docsId = created.workspace.workspace_id;
    await panel.locator('button[data-refresh]').click();
    await expect(catalog.locator(`button[data-bind="${docsId}"]`), 'the catalog is live').toContainText(`docs (${docsId})`, { timeout: 15_000 });
    await expect(panel.locator('[data-catalog-error]')).toHaveCount(0);

    // Bind w1: the bindings list and the HUD show it.
    await catalog.locator(`button[data-bind="${WORKSPACE.id}"]`).click();
    const row = panel.locator(`[data-bindings] [data-binding-row="${scopeKey}"]`);
    await expect(row, 'the binding is listed').toHaveCount(1, { timeout: 15_000 });
    await expect(row).toHaveAttribute('data-workspace', WORKSPACE.id);
    await expect(row).toContainText(`${WORKSPACE.label} (${WORKSPACE.id})`);
    await expect(row).toContainText(PLAIN_CHAT.sessionRef);
    await hud.expect('data-binding', WORKSPACE.id, 'HUD shows the binding');
    await expect(panel.locator('[data-panel-tab]')).toHaveAttribute('data-bound-to', /.+/);

    // Auto on, then Unbind from the panel.
    await turnAutoOn(context, hud, PLAIN_CHAT);
    const sessionRef = await hud.sessionRef();
    await row.locator('button[data-unbind]').click();
    await expect(panel.locator('[data-bindings] [data-binding-row]'), 'the list is empty').toHaveCount(0, { timeout: 15_000 });
    await hud.expect('data-binding', '', 'HUD: no binding after Unbind');

    // Another chat bound to w2 with Auto on: its wake is the checkpoint that the worker has
    // handled the (earlier) w1 settle.
    const other = await context.newPage();
    await other.goto(chatgptUrl.conversation(OTHER_CONVERSATION));
    const otherHud = new ContinuityHud(other);
    await otherHud.expect('data-companion', 'companionConnected');
    const otherTab = await tabIdOf(worker, other.url());
    await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${otherTab}`);
    await expect(panel.locator('[data-panel-tab]')).toHaveAttribute('data-tab-id', String(otherTab), { timeout: 15_000 });
    await panel.locator(`[data-catalog] button[data-bind="${OTHER_WORKSPACE.id}"]`).click();
    await otherHud.expect('data-binding', OTHER_WORKSPACE.id);
    await turnAutoOn(context, otherHud, PLAIN_CHAT);
    const otherRef = await otherHud.sessionRef();

    // w1 works and settles with a task of the unbound chat: no wake for it.
    const orphan = await dispatchTask(sandbox, { sessionRef, text: 'work nobody listens to' });
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await reportAgent(sandbox, WORKSPACE.pane, 'idle');
    await expect
      .poll(async () => (await listTasks(sandbox, sessionRef)).find((t) => t.task_id === orphan.task_id)?.state, { timeout: 15_000 })
      .toBe('completed');
    // Then w2 works and settles: the other chat wakes once.
    const watched = await dispatchTask(sandbox, { sessionRef: otherRef, workspace: OTHER_WORKSPACE.id, pane: OTHER_WORKSPACE.pane, text: 'watched work' });
    await reportAgent(sandbox, OTHER_WORKSPACE.pane, 'working');
    await otherHud.expect('data-scope-state', 'working');
    await reportAgent(sandbox, OTHER_WORKSPACE.pane, 'idle');
    await expect.poll(() => fixture.automaticMessages(OTHER_CONVERSATION).length, { timeout: 20_000 }).toBe(1);
    expect(fixture.automaticMessages(OTHER_CONVERSATION)[0].text).toContain(watched.task_id);
    await otherHud.expect('data-wake-count', '1');

    // The unbound chat got nothing, and its task is still unacknowledged.
    expect(fixture.messagesOf(CONVERSATION), 'the unbound chat is never woken').toEqual([]);
    await hud.expect('data-binding', '');
    await hud.expect('data-wake-count', '0');
    const orphanNow = (await listTasks(sandbox, sessionRef)).find((t) => t.task_id === orphan.task_id);
    expect(orphanNow.acked_at, 'no wake, so no ack (I4)').toBeNull();
    expect(fixture.automaticMessages(OTHER_CONVERSATION)[0].text).not.toContain(orphan.task_id);
  });
});

// Issue 13 / SPEC O1: the Control Center's live Herdr view, end to end — the side panel in
// real Chromium with the built extension, its own connection through the real native host
// to the real companion runtime, and the Herdr stand-in.
// - The tree shows workspace → tab → pane → agent from the event stream, and follows a
//   status change, new output and a new pane without a reload or a Refresh.
// - A Pinned Target stays what the user pinned (it does not follow focus or another pane),
//   survives the panel being reopened, reads a bounded tail (the last 40 lines), and is
//   shown stale, with the reason, while another agent runs in its pane and once it closes.
// Latency ("within a second of a change") is not asserted here (no timed assertions on a
// shared machine): the tree is fed by the same live events the HUD uses.
// - The Activity timeline: after a settle it shows the wake sent with its reason and
//   delivery id, and a wake held back by a human draft as withheld with why — once, not
//   once per page fact; the entries survive the panel reopening and a worker restart.
import { test, expect } from '../lib/test.mjs';
import {
  AGENT, CHATS, CONVERSATION, ContinuityHud, OTHER_WORKSPACE, WORKSPACE, agentCycle, boundChatWithDraft, continuityWorld, herdrRequest, paneOutput,
  relaunchBrowser, reportAgent, tabIdOf,
} from '../lib/continuity.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';

test.describe('Control Center live view', () => {
  test('the tree follows Herdr live; a pinned pane reads a bounded tail and turns stale when it closes (O1)', async ({ sandbox }) => {
    const { context } = await continuityWorld(sandbox);
    const panel = await context.newPage();
    await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html`);
    await expect(panel.locator('[data-live-state]')).toHaveAttribute('data-live-state', 'up', { timeout: 15_000 });

    // The seeded catalog: both workspaces, each pane with its agent, status and cwd.
    const pane = panel.locator(`[data-tree-pane="${WORKSPACE.pane}"]`);
    await expect(panel.locator(`[data-tree-workspace="${WORKSPACE.id}"]`)).toContainText(`${WORKSPACE.label} (${WORKSPACE.id})`, { timeout: 15_000 });
    await expect(pane).toHaveAttribute('data-agent', AGENT);
    await expect(pane).toHaveAttribute('data-status', 'idle');
    await expect(pane).toContainText('/home/user/api');
    await expect(panel.locator('[data-tree-pane="w2:p1"]')).toHaveCount(1);

    // A status change and new output reach the tree from the stream (no Refresh exists here).
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await expect(pane, 'the status follows Herdr').toHaveAttribute('data-status', 'working', { timeout: 15_000 });
    await paneOutput(sandbox, WORKSPACE.pane, 'compiling crate parser');
    await expect(pane.locator('[data-last-line]'), 'the last output line').toContainText('compiling crate parser', { timeout: 15_000 });
    await reportAgent(sandbox, WORKSPACE.pane, 'idle');
    await expect(pane).toHaveAttribute('data-status', 'idle', { timeout: 15_000 });

    // A new pane appears in the tree by itself.
    const split = await herdrRequest(sandbox.herdrSocket, 'pane.split', { target_pane_id: WORKSPACE.pane, direction: 'right' });
    const newPane = split.pane?.pane_id ?? split.pane_id;
    expect(typeof newPane, JSON.stringify(split)).toBe('string');
    await expect(panel.locator(`[data-tree-pane="${newPane}"]`), 'a new pane is listed').toHaveCount(1, { timeout: 15_000 });

    // Pin w1:p1: it is the target, and stays it when the panel is reopened.
    await panel.locator(`button[data-pin="${WORKSPACE.pane}"]`).focus();
    await panel.keyboard.press('Enter');
    const pinned = panel.locator('[data-pinned]');
    await expect(pinned).toHaveAttribute('data-pinned', WORKSPACE.pane);
    await expect(pinned).toHaveAttribute('data-stale', 'false');
    await panel.reload();
    await expect(pinned, 'the pin is kept').toHaveAttribute('data-pinned', WORKSPACE.pane, { timeout: 15_000 });
    await expect(pinned).toHaveAttribute('data-stale', 'false', { timeout: 15_000 });

    // Read-only actions: inspect, and the last 40 lines (bounded even when the pane has more).
    for (let i = 0; i < 60; i++) await paneOutput(sandbox, WORKSPACE.pane, `line ${i}`);
    const output = panel.locator('[data-pinned-output]');
    await panel.locator('button[data-pinned-action="inspect"]').click();
    await expect(output).toContainText(`pane_id: ${WORKSPACE.pane}`);
    await expect(output).toContainText(`agent: ${AGENT}`);
    await panel.locator('button[data-pinned-action="read"]').click();
    await expect(output, 'the tail').toContainText('line 59', { timeout: 15_000 });
    const lines = (await output.textContent()).split('\n');
    expect(lines.length, 'at most 40 lines').toBeLessThanOrEqual(40);
    expect(lines.join('\n')).not.toContain('line 0\n');

    // Another agent takes the pane: stale, and says why; the first agent back: live again.
    await reportAgent(sandbox, WORKSPACE.pane, 'idle', 'codex');
    await expect(pinned, 'stale with another agent in the pane').toHaveAttribute('data-stale', 'true', { timeout: 15_000 });
    await expect(pinned).toHaveAttribute('data-stale-reason', `another agent runs in it now (codex, pinned with ${AGENT})`);
    await reportAgent(sandbox, WORKSPACE.pane, 'idle', AGENT);
    await expect(pinned).toHaveAttribute('data-stale', 'false', { timeout: 15_000 });

    // Its pane closes: the pin stays, marked stale with the reason; the tree drops the pane.
    await herdrRequest(sandbox.herdrSocket, 'pane.close', { pane_id: WORKSPACE.pane });
    await expect(pinned, 'stale once its pane closed').toHaveAttribute('data-stale', 'true', { timeout: 15_000 });
    await expect(pinned).toHaveAttribute('data-stale-reason', 'the pane is closed');
    await expect(panel.locator(`[data-tree-pane="${WORKSPACE.pane}"]`)).toHaveCount(0);
    await expect(pinned, 'it did not move to another pane').toHaveAttribute('data-pinned', WORKSPACE.pane);

    // Unpin.
    await panel.locator('button[data-pinned-action="unpin"]').click();
    await expect(panel.locator('[data-pinned-none]')).toHaveCount(1);
  });

  // Leftovers31: the worker relays the first 256 items of each of Herdr's lists; the tree
  // says how many more it does not show instead of hiding them silently.
  test('a catalog longer than the relay\'s cap says how many workspaces are not shown', async ({ sandbox }) => {
    const { panel, max } = await panelOverCap(sandbox);
    const cut = panel.locator('[data-tree-cut]');
    // The workspaces (2 over) and the panes (one per workspace, so at least 2 over).
    await expect(cut, 'the tree says the list is cut').toHaveAttribute('data-tree-cut', /^\d+$/, { timeout: 15_000 });
    expect(Number(await cut.getAttribute('data-tree-cut'))).toBeGreaterThanOrEqual(4);
    await expect(cut).toContainText(`the first ${max} of each list`);
    await expect(panel.locator('[data-tree-workspace]')).toHaveCount(max);
  });

  // Failed before (stop 37's full run, under load): workspaces Herdr adds while the panel is
  // open came as stream events after the capped catalog, and the tree took every one.
  test('workspaces Herdr adds while the panel is open stop at the cap, and the rest are counted', async ({ sandbox }) => {
    const { context, worker } = await continuityWorld(sandbox);
    const { runtime_list_items: max } = await worker.evaluate(() => globalThis.herdrContracts.caps);
    const panel = await context.newPage();
    await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html`);
    await expect(panel.locator('[data-live-state]')).toHaveAttribute('data-live-state', 'up', { timeout: 15_000 });
    await expect(panel.locator(`[data-tree-workspace="${WORKSPACE.id}"]`)).toHaveCount(1, { timeout: 15_000 });
    // Two are seeded; `max` more arrive one by one on the live stream.
    for (let i = 0; i < max; i++) await herdrRequest(sandbox.herdrSocket, 'workspace.create', { label: `extra ${i}`, cwd: '/tmp' });
    const cut = panel.locator('[data-tree-cut]');
    await expect(cut, 'the two over the cap are counted').toHaveAttribute('data-tree-cut', /^\d+$/, { timeout: 20_000 });
    await expect.poll(async () => Number(await cut.getAttribute('data-tree-cut')), { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    await expect(panel.locator('[data-tree-workspace]')).toHaveCount(max);
  });

  // Stop 38's closing note: when a shown workspace closed while others were counted over the
  // cap, the tree showed one fewer until the panel was reopened; nothing took its place.
  test('a shown workspace that closes while others are over the cap gives its place to one of them', async ({ sandbox }) => {
    // The relay leaves two workspaces and two panes out (each list cut apart, in its own
    // order), and so the panes it sends of the two workspaces it left out are not shown either.
    const { panel, max } = await panelOverCap(sandbox);
    const workspaces = panel.locator('[data-tree-workspace]');
    const cut = panel.locator('[data-tree-cut]');
    await expect(workspaces).toHaveCount(max, { timeout: 15_000 });
    // The companion's catalog may still be taking Herdr's last workspaces in when the panel reads.
    await expect.poll(async () => Number(await cut.getAttribute('data-tree-cut')),
      { message: 'two workspaces and two panes at least are left out', timeout: 15_000 }).toBeGreaterThanOrEqual(4);
    const cutBefore = Number(await cut.getAttribute('data-tree-cut'));
    await expect(panel.locator(`[data-tree-workspace="${OTHER_WORKSPACE.id}"]`), 'w2 is shown').toHaveCount(1);
    // A shown pane's last output line (the stream's, not in the lists read again; output is
    // followed while its agent works).
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await paneOutput(sandbox, WORKSPACE.pane, 'compiling crate parser');
    const lastLine = panel.locator(`[data-tree-pane="${WORKSPACE.pane}"] [data-last-line]`);
    await expect(lastLine).toContainText('compiling crate parser', { timeout: 15_000 });
    // w2's only pane closes, and w2 with it: the pane and the workspace leave the tree.
    await herdrRequest(sandbox.herdrSocket, 'pane.close', { pane_id: OTHER_WORKSPACE.pane });
    await expect(panel.locator(`[data-tree-workspace="${OTHER_WORKSPACE.id}"]`), 'w2 is gone').toHaveCount(0, { timeout: 15_000 });
    await expect(workspaces, 'a workspace left out before takes its place').toHaveCount(max, { timeout: 15_000 });
    // The count is the lists', read again: fewer left out, some still. (Exactly how many is
    // the relay's order's: extension-pages checks the model's counting. A first fix that kept
    // counting the stream's over-cap items apart counted one of them twice here at times.)
    await expect.poll(async () => Number(await cut.getAttribute('data-tree-cut')),
      { message: 'fewer are left out', timeout: 15_000 }).toBeLessThan(cutBefore);
    expect(Number(await cut.getAttribute('data-tree-cut'))).toBeGreaterThan(0);
    await expect(lastLine, 'the lists read again keep the last output line').toContainText('compiling crate parser');
  });
});

/** The side panel, live, once Herdr holds its two seeded workspaces and the relay's cap more
 * (`max`): every list over the cap. */
async function panelOverCap(sandbox) {
  const { context, worker } = await continuityWorld(sandbox);
  const { runtime_list_items: max } = await worker.evaluate(() => globalThis.herdrContracts.caps);
  for (let i = 0; i < max; i++) await herdrRequest(sandbox.herdrSocket, 'workspace.create', { label: `extra ${i}`, cwd: '/tmp' });
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html`);
  await expect(panel.locator('[data-live-state]')).toHaveAttribute('data-live-state', 'up', { timeout: 15_000 });
  return { panel, max };
}

const PLAIN_CHAT = CHATS[1];

/** The side panel for the tab showing `page` (sidepanel.html?tab=<id>), with its Activity section. */
async function activityPanel(context, worker, page) {
  const tabId = await tabIdOf(worker, page.url());
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${tabId}`);
  await expect(panel.locator('[data-panel-tab]'), 'the panel shows the chat tab').toHaveAttribute('data-tab-id', String(tabId), { timeout: 15_000 });
  await expect(panel.locator('[data-activity-log]')).toHaveAttribute('data-activity-state', 'ok');
  return panel;
}

const rows = (panel, filter = '') => panel.locator(`[data-activity] [data-activity-entry]${filter}`);

test.describe('Control Center Activity timeline', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('a wake held back by a draft shows withheld with why, once; the sent wake its reason and id; both survive a reopen and a worker restart (O1, M7)', async ({ sandbox }) => {
    const { context, worker, fixture, page, hud, sessionRef, composer } = await boundChatWithDraft(sandbox, PLAIN_CHAT, 'a draft of my own');

    // The agent settles while the draft is in the composer: the wake is held back.
    await agentCycle(sandbox, hud, sessionRef, 'migrate the schema');
    await hud.expect('data-withheld', 'human_draft', 'HUD: held back because of the draft');
    const panel = await activityPanel(context, worker, page);
    const withheld = rows(panel, '[data-outcome="withheld"][data-reason="human_draft"]');
    await expect(withheld, 'the withheld wake is in the timeline').toHaveCount(1, { timeout: 15_000 });
    await expect(withheld).toHaveAttribute('data-kind', 'wake');
    await expect(withheld).toContainText('withheld');
    await expect(withheld, 'why, in English').toContainText('your draft is in the composer');
    await expect(withheld.locator('time')).toHaveText(/^\d\d:\d\d:\d\d$/);

    // More page facts of the same state (each keystroke is one) record nothing more.
    await composer.click();
    await page.keyboard.type(' and some more words');

    // Keyboard: the panel's control keeps the focus while the timeline updates.
    const showAll = panel.locator('button[data-activity-all]');
    await showAll.focus();

    // The user clears the draft: the wake goes, and is confirmed.
    await composer.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await expect.poll(() => fixture.automaticMessages(CONVERSATION).length, { timeout: 20_000 }).toBe(1);
    await hud.expect('data-wake-count', '1');
    const confirmed = rows(panel, '[data-kind="wake"][data-outcome="confirmed"]');
    await expect(confirmed, 'the wake is confirmed by its marker, once').toHaveCount(1, { timeout: 15_000 });
    const id = await confirmed.getAttribute('data-id');
    expect(id, 'the delivery id').toMatch(/^wake:w1#\d+\//);
    const sent = rows(panel, `[data-kind="wake"][data-outcome="sent"][data-id="${id}"]`);
    await expect(sent, 'the sent wake is in the timeline').toHaveCount(1, { timeout: 15_000 });
    await expect(sent).toHaveAttribute('data-reason', 'settled');
    await expect(sent, 'why, in English').toContainText('the agents settled');
    await expect(sent.locator('code')).toHaveText(id);
    // A try the page could not carry out (on a loaded machine the send button may stay
    // disabled past the page's 2 s) is recorded as failed and goes again under a new id:
    // every other sent wake has its failed entry, and one message reached the chat.
    const sentIds = await rows(panel, '[data-kind="wake"][data-outcome="sent"]').evaluateAll((els) => els.map((el) => el.dataset.id));
    for (const other of sentIds.filter((sentId) => sentId !== id)) {
      await expect(rows(panel, `[data-outcome="failed"][data-id="${other}"]`), `the try ${other} did not reach the chat`).toHaveCount(1);
    }
    expect(fixture.automaticMessages(CONVERSATION), 'one wake in the chat').toHaveLength(1);
    await expect(rows(panel).first(), 'newest first').toHaveAttribute('data-outcome', 'confirmed');
    await expect(withheld, 'the draft was recorded once, not once per page fact').toHaveCount(1);
    expect(await panel.evaluate(() => document.activeElement?.hasAttribute('data-activity-all')), 'focus stayed on the control').toBe(true);

    // Show all chats with the keyboard: every scope's entries, each with its scope.
    await panel.keyboard.press('Enter');
    await expect(showAll).toHaveAttribute('aria-pressed', 'true');
    await expect(rows(panel, '[data-outcome="withheld"][data-reason="human_draft"]').locator('.activity-scope')).toHaveText(`chatgpt:${CONVERSATION}`);

    // The panel reopened: the entries are still there.
    await panel.reload();
    await expect(rows(panel, '[data-outcome="withheld"][data-reason="human_draft"]'), 'kept across a reopen').toHaveCount(1, { timeout: 15_000 });
    await expect(rows(panel, `[data-outcome="sent"][data-id="${id}"]`)).toHaveCount(1);

    // A worker restart (the browser closed and the same profile launched again): still there.
    const relaunched = await relaunchBrowser(sandbox, fixture);
    const reopened = await relaunched.context.newPage();
    await reopened.goto(PLAIN_CHAT.url);
    await new ContinuityHud(reopened).expect('data-binding', WORKSPACE.id);
    const panel2 = await activityPanel(relaunched.context, relaunched.worker, reopened);
    await expect(rows(panel2, '[data-outcome="withheld"][data-reason="human_draft"]'), 'kept across a worker restart').toHaveCount(1, { timeout: 15_000 });
    await expect(rows(panel2, `[data-outcome="sent"][data-id="${id}"]`)).toHaveCount(1);
    await expect(rows(panel2, `[data-outcome="confirmed"][data-id="${id}"]`)).toHaveCount(1);
  });
});

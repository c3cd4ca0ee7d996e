// Issue 24 acceptance 3: two bound ChatGPT chats dispatch through a real MCP client (the
// official TypeScript SDK over stdio) without anyone copying a ref from the HUD, and each
// task's result wakes its own chat exactly once. The test is the planner: chat A's
// dispatch names the ref it reads off the marker line of a message the extension typed into
// chat A; chat B's names no ref and is attributed while chat B alone generates a reply
// (its ChatGPT `_meta` session is paired with chat B on the way, and a later ref-less call
// of that session goes to chat B again). A ref-less dispatch while both chats generate is
// refused with the clear message and leaves no task.
//
// A probe call with a target no pane has (`w9:p9`) shows how the companion attributes a
// ref-less call without dispatching anything: an attribution refusal, or — once a chat is
// found — `Herdr has no pane w9:p9`.
import { test, expect } from '../lib/test.mjs';
import { backendMessages, expectExactlyOne } from '../lib/backend.mjs';
import {
  CONVERSATION, ContinuityHud, OTHER_WORKSPACE, WORKSPACE, bindFromPanel, continuityWorld, listTasks, reportAgent,
} from '../lib/continuity.mjs';
import { HudProbe } from '../lib/hud.mjs';
import { chatgptUrl } from '../fixtures/chatgpt.mjs';
import { connectStdio } from '../lib/mcp.mjs';

const CONVERSATION_B = '5d2e8f10-7a3b-4c9d-8e1f-6a7b8c9d0e1f';
const CHAT_A = { url: chatgptUrl.conversation(CONVERSATION), conversation: CONVERSATION, workspace: WORKSPACE, ref: `chatgpt:conv:${CONVERSATION}` };
const CHAT_B = { url: chatgptUrl.conversation(CONVERSATION_B), conversation: CONVERSATION_B, workspace: OTHER_WORKSPACE, ref: `chatgpt:conv:${CONVERSATION_B}` };
/** A reply that streams long enough to dispatch during it. */
const LONG_STREAM_MS = 12_000;
const SHORT_STREAM_MS = 300;
const MARKER_REF = /\n\[herdr-continuity [^\]\s]+ ref=([^\]\s]+)\]$/;
const SESSION_B = { 'openai/session': 'v1/e2e-session-b', 'openai/subject': 'v1/e2e-user' };

async function openBound(context, worker, chat, { auto = true } = {}) {
  const page = await context.newPage();
  await page.goto(chat.url);
  await new HudProbe(page).expectCompanionConnected();
  const hud = new ContinuityHud(page);
  const { panel } = await bindFromPanel(context, worker, page, chat.workspace.id);
  await hud.expect('data-binding', chat.workspace.id, 'HUD shows the binding');
  await panel.close();
  if (auto) await hud.turnAutoOn();
  return { page, hud };
}

/** The human sends `text` in `page` (the reply then streams for the fixture's streamMs). */
async function humanSends(page, fixture, text) {
  const before = fixture.server.length;
  await page.locator('#prompt-textarea').click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await expect.poll(() => fixture.server.length, { message: 'the fixture received the message' }).toBeGreaterThan(before);
  await expect(page.locator(fixture.ui.stop), 'the reply is being generated').toHaveCount(1);
}

/** Calls herdr_prompt; resolves with `{ ok, text, result }`. */
async function prompt(client, args, meta) {
  const params = { name: 'herdr_prompt', arguments: args };
  if (meta) params._meta = meta;
  const answer = await client.callTool(params);
  return { ok: !answer.isError, text: JSON.stringify(answer.content), result: answer.structuredContent };
}

/** Polls a side-effect-free ref-less probe until its answer matches `pattern`. */
async function attributionShows(client, pattern, meta, message) {
  await expect
    .poll(async () => (await prompt(client, { target: 'w9:p9', text: 'probe' }, meta)).text, { timeout: 20_000, message })
    .toMatch(pattern);
}

/** The workspace's agent works (the chat's HUD shows it), then settles. */
async function settle(sandbox, workspace, hud) {
  await reportAgent(sandbox, workspace.pane, 'working');
  await hud.expect('data-scope-state', 'working', `HUD shows workspace ${workspace.id} working`);
  await reportAgent(sandbox, workspace.pane, 'idle');
}

test.describe('dispatches find their chat (issue 24, acceptance 3)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('two bound chats dispatch through MCP without a copied ref; each result wakes its own chat exactly once', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox, { streamMs: SHORT_STREAM_MS });
    fixture.conversations.set(CONVERSATION_B, {
      title: 'Web',
      turns: [{ role: 'user', text: 'Plan the web work.' }, { role: 'assistant', text: 'Dispatching to workspace web.' }],
    });
    const a = await openBound(context, worker, CHAT_A, { auto: false });
    const b = await openBound(context, worker, CHAT_B);
    const { client, close } = await connectStdio(sandbox);
    try {
      // Chat A: a message the extension typed (a manual Continue, before Auto is on) ends
      // with the marker the planner reads its ref from.
      await a.hud.expand();
      await expect(a.hud.action('continue')).toBeEnabled({ timeout: 15_000 });
      await a.hud.action('continue').click();
      const typed = await expectExactlyOne(fixture, { conversationId: CONVERSATION, marker: /^continue:/ }, {
        checkpoint: () => expect(a.page.locator(fixture.ui.stop)).toHaveCount(0, { timeout: 20_000 }),
        message: 'the extension typed one message into chat A',
      });
      await a.hud.turnAutoOn();
      const refA = typed.text.match(MARKER_REF)?.[1];
      expect(refA, 'the marker line of the typed message names chat A').toBe(CHAT_A.ref);
      const taskA = await prompt(client, { browser_session_ref: refA, target: CHAT_A.workspace.pane, text: 'Refactor the API client' });
      expect(taskA.ok, taskA.text).toBe(true);
      expect(taskA.result).toMatchObject({ browser_session_ref: CHAT_A.ref, workspace_id: CHAT_A.workspace.id });
      expect(taskA.result.attributed, 'it named its ref').toBeUndefined();

      // Chat B: its planner is mid-turn (the reply streams) and names no ref.
      fixture.streamMs = LONG_STREAM_MS;
      await humanSends(b.page, fixture, 'Build the settings page.');
      await attributionShows(client, /Herdr has no pane w9:p9/, SESSION_B, 'the companion finds the one generating chat');
      const taskB = await prompt(client, { target: CHAT_B.workspace.pane, text: 'Build the settings page' }, SESSION_B);
      expect(taskB.ok, taskB.text).toBe(true);
      expect(taskB.result, 'attributed to chat B, the only chat generating').toMatchObject({
        browser_session_ref: CHAT_B.ref, workspace_id: CHAT_B.workspace.id, attributed: 'generating_chat',
      });
      await expect(b.page.locator(fixture.ui.stop), 'chat B\'s reply ends').toHaveCount(0, { timeout: LONG_STREAM_MS + 10_000 });
      fixture.streamMs = SHORT_STREAM_MS;

      // Nothing generates now; chat B's ChatGPT session was paired by that call, so its next
      // ref-less call goes to chat B again — and a call of it naming chat A is refused.
      const again = await prompt(client, { target: CHAT_B.workspace.pane, text: 'Then add its tests' }, SESSION_B);
      expect(again.ok, again.text).toBe(true);
      expect(again.result).toMatchObject({ browser_session_ref: CHAT_B.ref, attributed: 'paired_session' });
      const conflict = await prompt(client, { browser_session_ref: CHAT_A.ref, target: CHAT_A.workspace.pane, text: 'not for this chat' }, SESSION_B);
      expect(conflict.ok, 'a ref that conflicts with the session\'s pairing is refused').toBe(false);
      expect(conflict.text).toContain(`paired with chat ${CHAT_B.ref}, not ${CHAT_A.ref}`);

      // Each workspace's agents settle: each chat gets exactly one wake, with its own tasks.
      await settle(sandbox, CHAT_A.workspace, a.hud);
      const wakeA = await expectExactlyOne(fixture, { conversationId: CONVERSATION, marker: /^wake:w1#/ }, {
        checkpoint: async () => {
          await a.hud.expect('data-wake-count', '1', 'chat A counts one wake');
          await a.hud.expect('data-tasks', '0/0', 'chat A\'s task is acknowledged');
        },
        message: 'exactly one wake reaches chat A',
      });
      expect(wakeA.text).toContain(taskA.result.task_id);
      expect(wakeA.text.match(MARKER_REF)?.[1], 'the wake names chat A\'s ref').toBe(CHAT_A.ref);
      await settle(sandbox, CHAT_B.workspace, b.hud);
      const wakeB = await expectExactlyOne(fixture, { conversationId: CONVERSATION_B, marker: /^wake:w2#/ }, {
        checkpoint: async () => {
          await b.hud.expect('data-wake-count', '1', 'chat B counts one wake');
          await b.hud.expect('data-tasks', '0/0', 'chat B\'s tasks are acknowledged');
          await expect(b.page.locator(fixture.ui.stop)).toHaveCount(0, { timeout: 20_000 });
        },
        message: 'exactly one wake reaches chat B',
      });
      expect(wakeB.text).toContain(taskB.result.task_id);
      expect(wakeB.text).toContain(again.result.task_id);
      expect(wakeB.text.match(MARKER_REF)?.[1], 'the wake names chat B\'s ref').toBe(CHAT_B.ref);
      // No chat got the other's results.
      expect(backendMessages(fixture, { conversationId: CONVERSATION, automatic: true }).some((m) => m.text.includes(taskB.result.task_id))).toBe(false);
      expect(backendMessages(fixture, { conversationId: CONVERSATION_B, automatic: true }).some((m) => m.text.includes(taskA.result.task_id))).toBe(false);
      expect((await listTasks(sandbox, CHAT_A.ref)).map((t) => t.task_id)).toEqual([taskA.result.task_id]);
      expect((await listTasks(sandbox, CHAT_B.ref)).map((t) => t.task_id).sort()).toEqual([taskB.result.task_id, again.result.task_id].sort());
    } finally {
      await close();
    }
  });

  test('a ref-less dispatch while two bound chats generate is refused with where the ref is, and leaves no task', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox, { streamMs: LONG_STREAM_MS });
    fixture.conversations.set(CONVERSATION_B, { title: 'Web', turns: [{ role: 'user', text: 'Plan the web work.' }, { role: 'assistant', text: 'On it.' }] });
    const a = await openBound(context, worker, CHAT_A);
    const b = await openBound(context, worker, CHAT_B);
    const { client, close } = await connectStdio(sandbox);
    try {
      const none = await prompt(client, { target: CHAT_A.workspace.pane, text: 'Refactor the API client' });
      expect(none.ok, 'nothing generates: no evidence').toBe(false);
      expect(none.text).toContain('no bound chat is generating a reply right now');

      await humanSends(a.page, fixture, 'Refactor the API client.');
      await humanSends(b.page, fixture, 'Build the settings page.');
      await attributionShows(client, /2 bound chats are generating a reply right now/, null, 'the companion sees both chats generating');
      const refused = await prompt(client, { target: CHAT_A.workspace.pane, text: 'Refactor the API client' });
      expect(refused.ok, 'two chats generate: ambiguous, refused').toBe(false);
      expect(refused.text).toContain('2 bound chats are generating a reply right now');
      expect(refused.text, 'it says where the ref is').toContain('last line of any message the herdr-continuity extension typed');
      expect(refused.text).toContain('HUD');
      expect(await listTasks(sandbox, CHAT_A.ref)).toEqual([]);
      expect(await listTasks(sandbox, CHAT_B.ref)).toEqual([]);
    } finally {
      await close();
    }
  });
});

// Issue 13 acceptance 1 (SPEC I1): a real MCP client — the official TypeScript SDK — talks
// to `herdr-companion mcp` over stdio and over streamable HTTP, lists the planner tools and
// calls `herdr_prompt` for the bound ChatGPT chat; the task lands in the chat's parent inbox,
// the agent works and settles, and exactly one wake reaches the chat, carrying the task,
// which is acknowledged after the wake was confirmed (I2, I4). A client without the bearer
// token is refused.
import { test, expect } from '../lib/test.mjs';
import { expectExactlyOne } from '../lib/backend.mjs';
import {
  CHATS, CONVERSATION, WORKSPACE, continuityWorld, expectIdleAfterWakes, listTasks, openAndBind, reportAgent, turnAutoOn,
} from '../lib/continuity.mjs';
import { connectHttp, connectStdio, startHttpMcp } from '../lib/mcp.mjs';

const PLAIN_CHAT = CHATS.find((chat) => !chat.project);
const TOOLS = ['herdr_prompt', 'herdr_call', 'herdr_methods', 'herdr_inspect'];

/** Bound chat with Auto on; the MCP client `connect()` gives dispatches for it. */
async function promptSettlesIntoOneWake(sandbox, connect) {
  const { context, worker, fixture } = await continuityWorld(sandbox);
  const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
  await turnAutoOn(context, hud, PLAIN_CHAT);
  const sessionRef = await hud.sessionRef();

  const { client, close } = await connect();
  try {
    expect(client.getServerVersion()?.name, 'the server names itself').toBe('herdr-companion');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);

    const inspect = await client.callTool({ name: 'herdr_inspect', arguments: {} });
    expect(inspect.structuredContent.panes.map((p) => p.pane_id), 'herdr_inspect shows the panes to prompt').toContain(WORKSPACE.pane);

    const dispatched = await client.callTool({
      name: 'herdr_prompt',
      arguments: { browser_session_ref: sessionRef, target: WORKSPACE.pane, text: 'Refactor the API client and run the tests' },
    });
    expect(dispatched.isError, JSON.stringify(dispatched.content)).toBeFalsy();
    const task = dispatched.structuredContent;
    expect(task, 'I1: the dispatch answers at once with the task ids').toMatchObject({
      state: 'running', browser_session_ref: sessionRef, workspace_id: WORKSPACE.id, pane_id: WORKSPACE.pane,
    });
    expect(task.dispatch_id).toBeTruthy();
    await hud.expect('data-tasks', '1/0', 'HUD counts the MCP task as running (I4)');

    const oversize = await client.callTool({
      name: 'herdr_prompt',
      arguments: { browser_session_ref: sessionRef, target: WORKSPACE.pane, text: 'x'.repeat(64 * 1024 + 1) },
    });
    expect(oversize.isError, 'an oversize prompt is refused').toBe(true);
    expect(JSON.stringify(oversize.content)).toContain('at most 65536 (64 KiB)');

    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await hud.expect('data-scope-state', 'working', 'HUD shows the bound workspace working (P2)');
    await reportAgent(sandbox, WORKSPACE.pane, 'idle');

    const wake = await expectExactlyOne(fixture, { conversationId: CONVERSATION, automatic: true }, {
      checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1),
      message: 'exactly one wake reaches the bound chat',
    });
    expect(wake.text, 'the wake carries the MCP task (I2)').toContain(task.task_id);
    await hud.expect('data-tasks', '0/0', 'HUD: nothing running, nothing unacked');
    const tasks = await listTasks(sandbox, sessionRef);
    expect(tasks.map((t) => t.task_id), 'the oversize prompt left no task').toEqual([task.task_id]);
    expect(tasks[0]).toMatchObject({ state: 'completed' });
    expect(tasks[0].acked_at, 'acknowledged after the confirmed wake (I4)').not.toBeNull();
  } finally {
    await close();
  }
}

test.describe('MCP downlink (issue 13)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('stdio: initialize, list the tools, herdr_prompt → inbox task → settle → exactly one wake', async ({ sandbox }) => {
    await promptSettlesIntoOneWake(sandbox, () => connectStdio(sandbox));
  });

  test('HTTP with the bearer token: the same; without the token the client is refused', async ({ sandbox }) => {
    let server = null;
    try {
      await promptSettlesIntoOneWake(sandbox, async () => {
        server = await startHttpMcp(sandbox);
        return connectHttp(server.url, server.token);
      });
      await expect(connectHttp(server.url, null), 'no token, no session').rejects.toThrow(/401|Unauthorized|bearer/i);
    } finally {
      await server?.stop();
    }
  });
});

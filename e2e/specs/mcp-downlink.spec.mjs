// Issue 13 acceptance 1 (SPEC I1): real MCP clients — the official TypeScript SDK, and the
// MCP Inspector's CLI for listing and a read-only call — talk
// to `herdr-companion mcp` over stdio and over streamable HTTP, lists the planner tools and
// calls `herdr_prompt` for the bound ChatGPT chat; the task lands in the chat's parent inbox,
// the agent works and settles, and exactly one wake reaches the chat, carrying the task,
// which is acknowledged after the wake was confirmed (I2, I4). A client without the bearer
// token is refused.
import { test, expect } from '../lib/test.mjs';
import { expectExactlyOne } from '../lib/backend.mjs';
import {
  CHATS, CONVERSATION, WORKSPACE, continuityWorld, expectIdleAfterWakes, listTasks, openAndBind, reportAgent, startSeededHerdr,
  turnAutoOn,
} from '../lib/continuity.mjs';
import { connectHttp, connectStdio, inspectorCli, startHttpMcp } from '../lib/mcp.mjs';

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
    expect(tools.map((t) => t.name).slice(0, TOOLS.length)).toEqual(TOOLS);

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

  // Acceptance 1's second client: the MCP Inspector CLI from npm runs offline here, so it
  // talks to the companion too — stdio and HTTP, listing the tools and calling one.
  test('the MCP Inspector CLI lists the tools and calls herdr_inspect over stdio and HTTP; without the token it is refused', async ({ sandbox }) => {
    await startSeededHerdr(sandbox);
    await sandbox.startRuntime();
    const listed = await inspectorCli(sandbox, { args: ['--method', 'tools/list'] });
    expect(listed.ok, listed.output).toBe(true);
    expect(listed.json.tools.map((t) => t.name).slice(0, TOOLS.length)).toEqual(TOOLS);
    const inspected = await inspectorCli(sandbox, { args: ['--method', 'tools/call', '--tool-name', 'herdr_inspect'] });
    expect(inspected.ok, inspected.output).toBe(true);
    expect(inspected.json.isError ?? false, inspected.output).toBe(false);
    expect(JSON.stringify(inspected.json.content), 'herdr_inspect shows the seeded pane').toContain(WORKSPACE.pane);

    const server = await startHttpMcp(sandbox);
    try {
      const overHttp = await inspectorCli(sandbox, { url: server.url, headers: [`Authorization: Bearer ${server.token}`], args: ['--stored-auth-only', '--method', 'tools/list'] });
      expect(overHttp.ok, overHttp.output).toBe(true);
      expect(overHttp.json.tools.map((t) => t.name).slice(0, TOOLS.length)).toEqual(TOOLS);
      // Without it the server answers 401 and the Inspector, which would start an OAuth
      // login there, stops (non-interactive) with what it was told.
      const refused = await inspectorCli(sandbox, { url: server.url, args: ['--stored-auth-only', '--method', 'tools/list'] });
      expect(refused.ok, 'no token: refused').toBe(false);
      expect(refused.output, refused.output).toMatch(/401|Unauthorized|auth_required/i);
    } finally {
      await server.stop();
    }
  });
});

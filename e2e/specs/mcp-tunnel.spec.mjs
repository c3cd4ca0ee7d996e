// Issue 24 acceptance 2 (first half): an MCP client drives `herdr-companion mcp` the way
// OpenAI's Secure MCP Tunnel (`tunnel-client`) does — over stdio, raw JSON-RPC lines, no
// session id, no `initialize`, 2026-07-28 requests carrying `_meta` — lists the tools,
// inspects Herdr and dispatches `herdr_prompt` for a bound chat; the agent settles and
// exactly one wake reaches that chat. A legacy connector session on the same pipe
// (`initialize` 2025-06-18, requests without `_meta`) is served too. And the HTTP binding
// (`--mcp.server-url … --mcp.extra-headers "Authorization: file:<home>/mcp-authorization"`)
// answers stateless requests with the header file's value and refuses them without it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect } from '../lib/test.mjs';
import { expectExactlyOne } from '../lib/backend.mjs';
import {
  CHATS, CONVERSATION, WORKSPACE, continuityWorld, expectIdleAfterWakes, listTasks, openAndBind, reportAgent, startSeededHerdr,
  turnAutoOn,
} from '../lib/continuity.mjs';
import { startHttpMcp } from '../lib/mcp.mjs';
import { TunnelStdio, meta2026 } from '../lib/tunnel.mjs';

const PLAIN_CHAT = CHATS.find((chat) => !chat.project);
const TOOLS = ['herdr_prompt', 'herdr_call', 'herdr_methods', 'herdr_inspect'];

function resultOf(answer, what) {
  expect(answer.error, `${what}: ${JSON.stringify(answer)}`).toBeUndefined();
  return answer.result;
}

test.describe('MCP through the Secure MCP Tunnel (issue 24)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('stdio as tunnel-client drives it: stateless 2026-07-28 requests list, inspect and dispatch; the settle wakes the chat once', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await turnAutoOn(context, hud, PLAIN_CHAT);
    const sessionRef = await hud.sessionRef();

    const tunnel = new TunnelStdio(sandbox);
    try {
      // No initialize: the first line the server sees is a stateless tools/list.
      const listed = resultOf(await tunnel.request('list-1', 'tools/list', { _meta: meta2026() }), 'tools/list');
      expect(listed.tools.map((t) => t.name).slice(0, TOOLS.length)).toEqual(TOOLS);

      const inspect = resultOf(await tunnel.request(2, 'tools/call', { name: 'herdr_inspect', arguments: {}, _meta: meta2026() }), 'herdr_inspect');
      expect(inspect.isError, JSON.stringify(inspect.content)).toBeFalsy();
      expect(inspect.structuredContent.panes.map((p) => p.pane_id), 'herdr_inspect shows the panes to prompt').toContain(WORKSPACE.pane);

      const dispatched = resultOf(await tunnel.request(3, 'tools/call', {
        name: 'herdr_prompt',
        arguments: { browser_session_ref: sessionRef, target: WORKSPACE.pane, text: 'Refactor the API client and run the tests' },
        _meta: meta2026(),
      }), 'herdr_prompt');
      expect(dispatched.isError, JSON.stringify(dispatched.content)).toBeFalsy();
      const task = dispatched.structuredContent;
      expect(task, 'the dispatch answers at once with the task').toMatchObject({ state: 'running', browser_session_ref: sessionRef, pane_id: WORKSPACE.pane });
      await hud.expect('data-tasks', '1/0', 'HUD counts the tunnelled task as running');

      // A 2026-07-28 request without its required _meta is refused and says what is missing.
      const bare = await tunnel.request(4, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } });
      expect(bare.error?.message, JSON.stringify(bare)).toContain('clientCapabilities');

      // Another connector session on the same pipe, with the legacy handshake: served too.
      const init = resultOf(await tunnel.request(5, 'initialize', {
        protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'openai-mcp', version: '1.0.0' },
      }), 'initialize');
      expect(init.protocolVersion).toBe('2025-06-18');
      expect(init.serverInfo.name).toBe('herdr-companion');
      tunnel.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const legacy = resultOf(await tunnel.request(6, 'tools/list', {}), 'legacy tools/list');
      expect(legacy.tools.map((t) => t.name).slice(0, TOOLS.length)).toEqual(TOOLS);

      await reportAgent(sandbox, WORKSPACE.pane, 'working');
      await hud.expect('data-scope-state', 'working', 'HUD shows the bound workspace working');
      await reportAgent(sandbox, WORKSPACE.pane, 'idle');
      const wake = await expectExactlyOne(fixture, { conversationId: CONVERSATION, automatic: true }, {
        checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1),
        message: 'exactly one wake reaches the bound chat',
      });
      expect(wake.text, 'the wake carries the tunnelled task').toContain(task.task_id);
      const tasks = await listTasks(sandbox, sessionRef);
      expect(tasks.map((t) => t.task_id)).toEqual([task.task_id]);
      expect(tasks[0]).toMatchObject({ state: 'completed' });
    } finally {
      await tunnel.stop();
    }
  });

  test('HTTP as tunnel-client forwards to it: stateless requests with the header file are answered, without it refused', async ({ sandbox }) => {
    await startSeededHerdr(sandbox);
    await sandbox.startRuntime();
    const server = await startHttpMcp(sandbox);
    try {
      // tunnel-client reads the whole header value from the file and trims one line ending.
      const authorization = readFileSync(path.join(sandbox.home, 'mcp-authorization'), 'utf8').replace(/\r?\n$/, '');
      expect(authorization).toBe(`Bearer ${server.token}`);
      const post = (headers, id, method, params) => fetch(server.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method, ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      });
      const answerOf = async (response) => {
        const text = await response.text();
        const json = text.split('\n').map((line) => line.replace(/^data:\s*/, '')).filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line)).find((message) => message.id !== undefined);
        return { status: response.status, json, text };
      };
      const listed = await answerOf(await post({ Authorization: authorization }, 1, 'tools/list', { _meta: meta2026() }));
      expect(listed.status, listed.text).toBe(200);
      expect(listed.json.result.tools.map((t) => t.name).slice(0, TOOLS.length)).toEqual(TOOLS);
      const inspect = await answerOf(await post({ Authorization: authorization, 'Mcp-Name': 'herdr_inspect' }, 2, 'tools/call', { name: 'herdr_inspect', arguments: {}, _meta: meta2026() }));
      expect(inspect.status, inspect.text).toBe(200);
      expect(JSON.stringify(inspect.json.result.structuredContent)).toContain(WORKSPACE.pane);
      const refused = await answerOf(await post({}, 3, 'tools/list', { _meta: meta2026() }));
      expect(refused.status, 'no header, no answer').toBe(401);
    } finally {
      await server.stop();
    }
  });
});

// Issue 11 acceptance 2, the runtime's side (SPEC J2, J3, J5, J6): the real companion
// runtime judges turns through its socket (`judge.turn_end`) and the `herdr-companion judge
// classify` CLI against local provider stand-ins. A confident decision is final (the LLM
// is not asked), an unsure decision goes to the LLM, with both down the script answers, a
// config.json readable by others is refused with how to fix it, and the per-call timeout
// and the pool's deadline bound the routes separately. Keys reach only their own provider,
// as `Authorization: Bearer`, and never come back in an answer.
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { test, expect } from '../lib/test.mjs';
import { COMPANION_BIN } from '../lib/paths.mjs';
import { GOAL_PRIORS, startChatStandin, startDecisionStandin, writeJudgeConfig } from '../lib/provider-standins.mjs';

/** The script reads this reply's own next step (continue). */
const PENDING = 'The config loader is finished and its tests pass. Next I\'ll write the route pool and its cooldown tests.';
/** The script calls this reply done. */
const FINISHED = 'The config loader is finished, its tests pass and everything is committed on the branch.';
const USER_TEXT = 'Please build the judge.';

/** One request on the runtime socket; resolves with the response that carries its id. */
function runtimeCall(home, method, params, timeoutMs = 20_000) {
  const id = `e2e-${method}-${Math.random().toString(36).slice(2, 8)}`;
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(path.join(home, 'run', 'companion.sock'));
    let buffer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the runtime did not answer ${method} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('connect', () => socket.write(`${JSON.stringify({ id, method, params })}\n`));
    socket.on('data', (chunk) => {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf('\n')) >= 0) {
        const message = JSON.parse(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
        if (message.id !== id) continue;
        clearTimeout(timer);
        socket.destroy();
        resolve(message);
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot reach the runtime for ${method}: ${error.message}`));
    });
  });
}

function turnEnd(sandbox, assistantText) {
  return runtimeCall(sandbox.home, 'judge.turn_end', { user_text: USER_TEXT, assistant_text: assistantText, conversation: 'chatgpt:conv:6a1b' });
}

/** `herdr-companion judge classify` with `lines` on stdin; resolves with exit code, parsed stdout lines and stderr. */
function classify(sandbox, lines) {
  return new Promise((resolve, reject) => {
    const child = spawn(COMPANION_BIN, ['judge', 'classify', '--home', sandbox.home], { env: sandbox.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)), stderr }));
    child.stdin.end(lines.map((l) => JSON.stringify(l)).join('\n'));
  });
}

/** A decision and a chat stand-in, closed after the test. */
async function standins(use) {
  const decision = await startDecisionStandin();
  const chat = await startChatStandin();
  try {
    await use({ decision, chat });
  } finally {
    await decision.close();
    await chat.close();
  }
}

test('a confident decision is final and the LLM is never asked (J3)', async ({ sandbox }) => {
  await standins(async ({ decision, chat }) => {
    decision.answer(0.92);
    chat.answer({ verdict: 'done', reason: 'finished' });
    writeJudgeConfig(sandbox.home, { routes: [decision.route('jev'), chat.route('small')] });
    await sandbox.startRuntime();

    // The script would call this reply done; the decision's continue stands.
    const answer = await turnEnd(sandbox, FINISHED);
    expect(answer.result, JSON.stringify(answer)).toMatchObject({ type: 'judge_verdict', verdict: 'continue', source: 'jev', confidence: 0.92 });
    decision.answer(0.08);
    const confidentDone = await turnEnd(sandbox, PENDING);
    expect(confidentDone.result, 'a confident done is final too, over the script\'s continue').toMatchObject({ verdict: 'done', source: 'jev' });

    // The CLI runs the same chain.
    const cli = await classify(sandbox, [{ id: 'a', text: PENDING, user_text: USER_TEXT }]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.lines).toEqual([expect.objectContaining({ id: 'a', verdict: 'done', source: 'jev' })]);

    expect(chat.count, 'the LLM stand-in was never asked').toBe(0);
    expect(decision.count).toBe(3);
    for (const request of decision.requests) {
      expect(request.path).toBe('/v1/systemone');
      expect(request.bearer, 'the decision key, only as the Authorization header').toBe('key-jev');
      expect(request.body.model).toBe('jev-model');
      expect(request.body.state.user_request).toBe(USER_TEXT);
      expect(request.body.questions.has_unfinished_work.type).toBe('noul');
      expect(request.raw, 'no key in the body').not.toContain('key-');
    }
    expect(decision.requests[0].body.state.assistant_latest_response).toBe(FINISHED);
    expect(JSON.stringify([answer, confidentDone, cli.lines]), 'no key comes back to a client').not.toContain('key-');
  });
});

test('an unsure decision goes to the LLM, whose verdict the script does not override (J2, J3)', async ({ sandbox }) => {
  await standins(async ({ decision, chat }) => {
    decision.answer(0.5);
    chat.answer('```json\n{"verdict": "done", "reason": "the next steps are the user\'s"}\n```');
    writeJudgeConfig(sandbox.home, { routes: [decision.route('jev'), chat.route('small')], threshold: 0.8 });
    await sandbox.startRuntime();

    // The script would continue this reply; the LLM's done stands.
    const answer = await turnEnd(sandbox, PENDING);
    expect(answer.result, JSON.stringify(answer)).toMatchObject({ verdict: 'done', source: 'llm', confidence: null });
    expect(answer.result.reason).toContain('jev unsure');
    expect(answer.result.reason).toContain('0.50');
    expect(answer.result.reason).toContain("the next steps are the user's");

    chat.answer({ verdict: 'continue', reason: 'it announced the route pool as its next step' });
    const next = await turnEnd(sandbox, FINISHED);
    expect(next.result, 'an LLM continue is final over the script\'s done').toMatchObject({ verdict: 'continue', source: 'llm' });

    expect(decision.count, 'the decision is asked first each time').toBe(2);
    expect(chat.count).toBe(2);
    const [first] = chat.requests;
    expect(first.path).toBe('/v1/chat/completions');
    expect(first.bearer, 'the chat key reaches the chat provider').toBe('key-small');
    expect(first.body.model).toBe('small-model');
    expect(first.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(first.body.messages[1].content).toContain(USER_TEXT);
    expect(first.body.messages[1].content).toContain(PENDING);
    expect(decision.requests.every((r) => r.bearer === 'key-jev'), 'the decision provider never sees the chat key').toBe(true);
    expect(chat.requests.every((r) => r.bearer === 'key-small' && !r.raw.includes('key-')), 'the chat provider never sees the decision key').toBe(true);
  });
});

test('with both providers down the script answers, and fails closed (J3)', async ({ sandbox }) => {
  await standins(async ({ decision, chat }) => {
    decision.fail(503);
    chat.garbage();
    writeJudgeConfig(sandbox.home, { routes: [decision.route('jev'), chat.route('small')], call_timeout_ms: 1500, pool_deadline_ms: 3000 });
    await sandbox.startRuntime();

    const pending = await turnEnd(sandbox, PENDING);
    expect(pending.result, JSON.stringify(pending)).toMatchObject({ verdict: 'continue', source: 'script', confidence: null });
    expect(pending.result.reason).toContain('jev failed: HTTP 503');
    expect(pending.result.reason).toContain('small failed: unusable answer');

    // Both hang: each is cut at its own per-call timeout, and the script still decides
    // (done for a finished reply). New route names, so no cooldown from above applies.
    decision.hang();
    chat.hang();
    writeJudgeConfig(sandbox.home, { routes: [decision.route('jev2'), chat.route('small2')], call_timeout_ms: 300, pool_deadline_ms: 600 });
    const finished = await turnEnd(sandbox, FINISHED);
    expect(finished.result, JSON.stringify(finished)).toMatchObject({ verdict: 'done', source: 'script' });
    expect(finished.result.reason).toContain('jev2 failed: no answer within 300 ms');
    expect(finished.result.reason).toContain('small2 failed: no answer within 300 ms');
    expect(decision.count).toBe(2);
    expect(chat.count).toBe(2);
  });
});

test('a config.json readable by others is refused with how to fix it, and nothing is sent (J5)', async ({ sandbox }) => {
  await standins(async ({ decision, chat }) => {
    decision.answer(0.9);
    const file = writeJudgeConfig(sandbox.home, { routes: [decision.route('jev'), chat.route('small')] }, { mode: 0o644 });
    await sandbox.startRuntime();

    const refused = await turnEnd(sandbox, PENDING);
    expect(refused.error?.code, JSON.stringify(refused)).toBe('config_refused');
    expect(refused.error.message).toContain('mode 0644');
    expect(refused.error.message).toContain(`chmod 600 ${file}`);
    const cli = await classify(sandbox, [{ id: 'a', text: PENDING }]);
    expect(cli.code, 'the CLI refuses it too').toBe(1);
    expect(cli.lines).toEqual([]);
    expect(cli.stderr).toContain(`chmod 600 ${file}`);
    expect(decision.count + chat.count, 'no provider is asked with a refused config').toBe(0);

    // Fixed as the message says: the next call uses the route, without a restart.
    writeJudgeConfig(sandbox.home, { routes: [decision.route('jev'), chat.route('small')] });
    const fixed = await turnEnd(sandbox, PENDING);
    expect(fixed.result, JSON.stringify(fixed)).toMatchObject({ verdict: 'continue', source: 'jev' });
  });
});

test('the per-call timeout and the pool deadline are separate bounds (J6)', async ({ sandbox }) => {
  const stuck = [await startDecisionStandin(), await startDecisionStandin(), await startDecisionStandin(0.9)];
  try {
    stuck[0].hang();
    stuck[1].hang();
    const routes = stuck.map((standin, i) => standin.route(`r${i}`));
    writeJudgeConfig(sandbox.home, { routes, call_timeout_ms: 400, pool_deadline_ms: 600 });
    await sandbox.startRuntime();

    const answer = await turnEnd(sandbox, FINISHED);
    expect(answer.result, JSON.stringify(answer)).toMatchObject({ verdict: 'done', source: 'script' });
    const reason = answer.result.reason;
    expect(reason, 'r0 had its whole per-call timeout').toContain('r0 failed: no answer within 400 ms');
    expect(reason, 'r1 got only what was left of the pool deadline').toMatch(/r1 failed: no answer within (\d+) ms/);
    expect(Number(reason.match(/r1 failed: no answer within (\d+) ms/)[1])).toBeLessThan(400);
    expect(reason).toContain('deadline passed before r2 was asked');
    expect(stuck[2].count, 'no route is started after the pool deadline').toBe(0);

    // A slow answer inside the per-call timeout is an answer: r2 first, slow but in time.
    stuck[2].slow(300, 0.1);
    writeJudgeConfig(sandbox.home, { routes: [stuck[2].route('slow')], call_timeout_ms: 5000, pool_deadline_ms: 6000 });
    const slow = await turnEnd(sandbox, PENDING);
    expect(slow.result, JSON.stringify(slow)).toMatchObject({ verdict: 'done', source: 'jev', confidence: 0.1 });
    expect(stuck[2].count).toBe(1);
  } finally {
    for (const standin of stuck) await standin.close();
  }
});

test('a decision-vercel route is typed evaluation at its url as written, and its priors ride along (J5, J7)', async ({ sandbox }) => {
  const edge = await startDecisionStandin(0.5, { path: '/api/jev' });
  const chat = await startChatStandin({ verdict: 'done', reason: 'the rest is for the user' });
  try {
    edge.answer({ p: 0.93, priors: { can_continue: 0.9, needs_human: 0.05 } });
    writeJudgeConfig(sandbox.home, { routes: [edge.route('edge', { protocol: 'decision-vercel' }), chat.route('small')], goal_priors: true });
    await sandbox.startRuntime();

    const answer = await turnEnd(sandbox, FINISHED);
    expect(answer.result, JSON.stringify(answer)).toMatchObject({ verdict: 'continue', source: 'jev', confidence: 0.93 });
    expect(answer.result.priors).toEqual({ can_continue: 0.9, needs_human: 0.05, waiting_external: null, task_completed: null, needs_handoff: null });
    expect(chat.count, 'a confident decision-vercel answer is final').toBe(0);
    expect(edge.requests.map((r) => [r.method, r.path, r.bearer])).toEqual([['POST', '/api/jev', 'key-edge']]);
    const asked = Object.keys(edge.requests[0].body.questions);
    expect(asked.sort(), 'the System One question and the five priors').toEqual(['has_unfinished_work', ...GOAL_PRIORS].sort());
  } finally {
    await edge.close();
    await chat.close();
  }
});

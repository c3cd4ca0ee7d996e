// Issue 4, SPEC §V 5 (P2–P6, P8, A3, O4): while the bound workspace works, real new pane
// output reaches the chat as exactly one progress message; unchanged output sends nothing
// however many checks run; the settle wake still comes exactly once, after it, and lists
// the finished task with its output tail on lines of their own. Real everything: Chromium
// with the built extension, native host, companion runtime, Herdr stand-in, ChatGPT
// fixture. Checkpoints come from the HUD and the worker's persisted state, never a sleep.
import { test, expect } from '../lib/test.mjs';
import {
  CHATS, CONVERSATION, WORKSPACE, continuityWorld, dispatchTask, listTasks, openAndBind, paneOutput,
  persistedContinuity, reportAgent, setProgressOptions, turnAutoOn,
} from '../lib/continuity.mjs';

const PLAIN_CHAT = CHATS[1];
const TICK_SEC = 5;
const NEW_OUTPUT = 'running cargo test… 41 passed';
const isProgress = (m) => /\[herdr-continuity progress:w1\/[0-9a-z]+\.\d+\.\d+ ref=chatgpt:conv:[0-9a-f-]+\]$/.test(m.text);
const isWake = (m) => /\[herdr-continuity wake:w1#\d+\/[0-9a-z]+\.\d+\.\d+ ref=chatgpt:conv:[0-9a-f-]+\]$/.test(m.text);

/** The persisted scheduler state of the chat's scope (worker snapshot, P6). */
async function progressState(worker) {
  const saved = await persistedContinuity(worker);
  const scope = Object.values(saved?.scopes ?? {})[0];
  return { pane: saved?.pane_outputs?.[WORKSPACE.pane] ?? null, progress: scope?.scheduler?.progress ?? null };
}

test.describe('progress push (§V 5)', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('new output while working → one progress message; unchanged → none; the settle still wakes once', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox);
    // O4: the options page clamps an out-of-range value and shows what it saved.
    expect(await setProgressOptions(context, { tickSec: 1, fallbackSec: 3600 }), 'tick clamped to 5 s').toEqual({ progressTickSec: TICK_SEC, progressFallbackSec: 3600 });
    const stored = await worker.evaluate(() => chrome.storage.sync.get(['progressTickSec', 'progressFallbackSec']));
    expect(stored).toEqual({ progressTickSec: TICK_SEC, progressFallbackSec: 3600 });

    const { page, hud } = await openAndBind(context, worker, PLAIN_CHAT);
    await turnAutoOn(context, hud, PLAIN_CHAT);
    const sessionRef = await hud.sessionRef();
    const task = await dispatchTask(sandbox, { sessionRef, text: 'Run the API tests' });
    await reportAgent(sandbox, WORKSPACE.pane, 'working');
    await hud.expect('data-scope-state', 'working', 'P2: working');

    // Checkpoint: the runtime's first read of the working pane reached the worker (the
    // episode's baseline: what was on screen when the work began is not progress).
    await expect.poll(async () => (await progressState(worker)).pane?.tail ?? null, { timeout: 15_000, message: 'first agent_output seen' })
      .toContain('Run the API tests');
    expect(fixture.automaticMessages(CONVERSATION), 'the baseline alone sends nothing (P4)').toEqual([]);

    // Real new output in the pane.
    await paneOutput(sandbox, WORKSPACE.pane, NEW_OUTPUT);
    await expect.poll(() => fixture.automaticMessages(CONVERSATION).filter(isProgress).length, { timeout: 20_000, message: 'one progress message' }).toBe(1);
    const [progress] = fixture.automaticMessages(CONVERSATION);
    expect(progress.text).toContain(NEW_OUTPUT);
    expect(progress.text, 'A3: progress is not evidence').toContain('This is progress, not evidence that the work succeeded');
    expect(progress.text).toContain(`${WORKSPACE.pane} (claude):`);
    await hud.expect('data-progress-count', '1', 'HUD counts the confirmed progress message');

    // Unchanged output: let at least two more checks run (persisted next_check_at moves on),
    // then nothing new went out (P3: ticks only check).
    const before = (await progressState(worker)).progress?.phase?.next_check_at;
    expect(before, 'the scope is working with a check scheduled').toEqual(expect.any(Number));
    await expect.poll(async () => (await progressState(worker)).progress?.phase?.next_check_at ?? 0, { timeout: 25_000, message: 'two more checks ran' })
      .toBeGreaterThanOrEqual(before + 2 * TICK_SEC * 1000);
    expect(fixture.automaticMessages(CONVERSATION), 'unchanged output sends nothing').toHaveLength(1);

    // §V 6: the settle wakes the chat once, after the progress message.
    await reportAgent(sandbox, WORKSPACE.pane, 'idle');
    await expect.poll(() => fixture.automaticMessages(CONVERSATION).filter(isWake).length, { timeout: 20_000, message: 'one wake' }).toBe(1);
    await hud.expect('data-wake-count', '1');
    const messages = fixture.automaticMessages(CONVERSATION);
    expect(messages.map((m) => (isWake(m) ? 'wake' : 'progress'))).toEqual(['progress', 'wake']);
    const wake = messages[1];
    // Message polish: every task and each of its output lines on a line of its own.
    const lines = wake.text.split('\n');
    expect(lines).toContain('Terminal tasks of this chat (1):');
    expect(lines.find((l) => l.startsWith(`- ${task.task_id} [completed] pane ${WORKSPACE.pane}: Run the API tests`))).toBeTruthy();
    expect(lines, 'the task carries its output tail').toContain(`| ${NEW_OUTPUT}`);
    expect(wake.text, 'no blank-line doubling').not.toContain('\n\n');
    await expect(page.locator('[data-message-author-role="user"]').last(), 'the chat shows the lines separately').toContainText(NEW_OUTPUT);
    const shown = await page.locator('[data-message-author-role="user"]').last().innerText();
    expect(shown.split('\n')).toContain('Terminal tasks of this chat (1):');

    // Acked after the wake (I4); the settle stopped the checks (P8): no progress after it.
    await expect.poll(async () => (await listTasks(sandbox, sessionRef))[0]?.acked_at ?? null, { timeout: 15_000 }).not.toBeNull();
    await expect.poll(async () => (await progressState(worker)).progress?.phase?.phase, { timeout: 10_000 }).toBe('idle');
    expect(fixture.automaticMessages(CONVERSATION)).toHaveLength(2);
  });
});

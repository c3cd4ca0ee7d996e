// The JSON bridge asks before anything runs (issue 23 items 1, 2, 6; acceptance 2): real
// Chromium with the built extension, the native host, the companion runtime, the Herdr
// stand-in and the z.ai / DeepSeek fixtures. With the chat's Auto ON:
// - a reply's `pane.send_keys` call runs nothing until the HUD's Run is pressed (the
//   stand-in's pane shows no keys before, the keys once after), and a Run, Auto or any
//   click the page itself makes — `el.click()`, `dispatchEvent` on our host, an untrusted
//   event at the button — does nothing;
// - a call inside a Markdown code fence never runs and is not counted; a call on another
//   workspace's pane and a herdr_prompt naming another chat's ref are refused without
//   asking, and the refusals are in the results message;
// - with Auto on, read-only calls run on their own for at most 6 rounds per user message,
//   then the HUD says so (M7), and a new user message starts a new allowance;
// - Insert JSON tool prompt goes over the worker's one companion connection: a second
//   press opens no native port (worker.js opened one per press before).
import { test, expect } from '../lib/test.mjs';
import { OTHER_WORKSPACE, WORKSPACE, chatSiteWorld, herdrRequest, openSiteBoundWithAuto, reportAgent, tabIdOf } from '../lib/continuity.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { coverThePage } from '../lib/hud.mjs';

const CONVERSATION = '2d4f6a8b-1c3e-4a5b-9c7d-0e1f2a3b4c5d';
const OTHER_CHAT_REF = 'zai:conv:99999999-aaaa-4bbb-8ccc-dddddddddddd';

/** How many times `token` shows in `pane`'s text at the Herdr stand-in. */
async function timesInPane(sandbox, token, pane = WORKSPACE.pane) {
  const read = await herdrRequest(sandbox.herdrSocket, 'pane.read', { pane_id: pane, source: 'recent', lines: 1000 });
  return JSON.stringify(read).split(token).length - 1;
}

/** The results messages the bridge typed into the chat (their marker is a `bridge:` id). */
const bridgeMessages = (fixture) => fixture.automaticMessages(CONVERSATION).filter((m) => /\[herdr-continuity bridge:[0-9a-f]{16}\//.test(m.text));

/** One `herdr_call` line. */
const herdrCall = (method, params) => JSON.stringify({ tool: 'herdr_call', args: { method, params: JSON.stringify(params) } });

/** The site's world, the conversation open, bound to w1, its Auto on; replies come from `reply`. */
async function boundChat(sandbox, site, reply) {
  const { context, worker, fixture } = await chatSiteWorld(sandbox, site, CONVERSATION, {
    streamMs: 600,
    replyWith: (text) => (text.startsWith('HERDR_TOOL_RESULTS') ? 'Noted.' : reply),
  });
  const { page, hud } = await openSiteBoundWithAuto(context, worker, fixture, CONVERSATION);
  return { context, worker, fixture, page, hud };
}

async function ask(page, fixture, text) {
  await page.locator(fixture.ui.composer).fill(text);
  await page.locator(fixture.ui.composer).press('Enter');
}

/** The side panel's Activity rows of the JSON bridge for the tab showing `page`. */
async function bridgeActivity(context, worker, page) {
  const tabId = await tabIdOf(worker, page.url());
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${tabId}`);
  await expect(panel.locator('[data-activity-log]')).toHaveAttribute('data-activity-state', 'ok', { timeout: 15_000 });
  return (reason) => panel.locator(`[data-activity] [data-activity-entry][data-kind="bridge_call"][data-reason="${reason}"]`);
}

for (const site of ['zai', 'deepseek']) {
  test.describe(`JSON bridge approval on ${site}`, () => {
    test.use({ sandboxOptions: { autostart: false } });

    test('a pane.send_keys call runs nothing until the HUD\'s Run is pressed; clicks the page makes on Run or Auto do nothing', async ({ sandbox }) => {
      const token = `approve-me-${site}`;
      const call = herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: token, keys: ['enter'] });
      const { context, worker, fixture, page, hud } = await boundChat(sandbox, site, `I will type it into the pane.\n${call}`);

      await ask(page, fixture, 'Type the token into the pane.');
      await hud.expect('data-bridge-pending', '1', 'the HUD asks about the call (Auto is on)');
      expect(await timesInPane(sandbox, token), 'nothing ran before Run').toBe(0);
      expect(bridgeMessages(fixture), 'no results message before Run').toEqual([]);

      // The card: tool, method, target, the arguments, the "changes things" tag.
      await hud.expand();
      const item = hud.host.locator('[data-line="bridge-approval"] li[data-call="1"]');
      await expect(item).toHaveAttribute('data-mutating', 'yes');
      await expect(item).toContainText('herdr_call · pane.send_keys');
      await expect(item).toContainText(WORKSPACE.pane);
      await expect(item).toContainText(token);
      await expect(item).toContainText('changes things');
      // What it would type, decoded and whole, in a box that scrolls (never cut silently).
      const detail = item.locator('[data-line="bridge-detail"]');
      await expect(detail).toBeVisible();
      await expect(detail).toHaveText(`${token}\nkeys: enter`);
      expect(await detail.evaluate((el) => getComputedStyle(el).overflowY), 'the box scrolls').toBe('auto');
      await expect(item.locator('[data-line="bridge-more"]'), 'nothing was left out').toHaveCount(0);

      // The page's own clicks: on the host (the only thing it can reach of a closed root),
      // through an open root if there were one, and untrusted events at the buttons
      // themselves (dispatched from our content world: still not real input).
      const reached = await page.evaluate(() => {
        const host = document.querySelector('herdr-continuity-hud');
        const root = host?.shadowRoot ?? null;
        for (const action of ['bridge_run:1', 'toggle_auto']) root?.querySelector(`button[data-action="${action}"]`)?.click();
        host?.click();
        host?.dispatchEvent(new MouseEvent('click', { bubbles: true, composed: true }));
        host?.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true, composed: true }));
        return { host: Boolean(host), root: root !== null };
      });
      expect(reached, 'the page sees our host but not inside it').toEqual({ host: true, root: false });
      for (const action of ['bridge_run:1', 'toggle_auto']) {
        await hud.action(action).evaluate((button) => {
          button.click();
          button.dispatchEvent(new MouseEvent('click', { bubbles: true, composed: true }));
          button.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
        });
      }
      await page.waitForTimeout(1500);
      await hud.expect('data-bridge-pending', '1', 'still waiting for a real press');
      await hud.expect('data-auto', 'on', 'Auto did not change');
      expect(await timesInPane(sandbox, token), 'no page-made click ran the call').toBe(0);

      // The user's Run (real input: the mouse on z.ai, the keyboard — Enter on the focused
      // button — on DeepSeek): the keys reach the pane once, the results come back.
      if (site === 'deepseek') await hud.action('bridge_run:1').press('Enter');
      else await hud.action('bridge_run:1').click();
      await hud.expect('data-bridge-pending', '0');
      await expect.poll(() => timesInPane(sandbox, token), { timeout: 20_000, message: 'the keys reached the pane' }).toBe(1);
      await expect.poll(() => bridgeMessages(fixture).length, { timeout: 20_000, message: 'one results message' }).toBe(1);
      expect(bridgeMessages(fixture)[0].text).toMatch(/^HERDR_TOOL_RESULTS \(1 call\)\n[^\n]+\n<<<HC_DATA kind=tool_output n=[0-9a-f]{12}>>>\n\{"call":1,"ok":true/);
      await expect(page.locator(fixture.ui.assistantTurn).last()).toHaveText('Noted.', { timeout: 20_000 });
      expect(await timesInPane(sandbox, token), 'it ran once').toBe(1);

      // The Activity timeline: the call waited, the user approved it, the results went out.
      const rows = await bridgeActivity(context, worker, page);
      await expect(rows('awaiting_approval')).toHaveCount(1, { timeout: 15_000 });
      await expect(rows('run_approved')).toHaveCount(1);
      await expect(rows('send_pressed')).toHaveCount(1);
    });

    test('a fenced call never runs; a call on another workspace and one naming another chat\'s ref are refused, visibly', async ({ sandbox }) => {
      const fenced = `fenced-${site}`;
      const foreign = `foreign-${site}`;
      const reply = [
        'Here is what I could do:',
        '```json',
        herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: fenced, keys: ['enter'] }),
        '```',
        herdrCall('pane.send_text', { pane_id: OTHER_WORKSPACE.pane, text: foreign }),
        JSON.stringify({ tool: 'herdr_prompt', args: { browser_session_ref: OTHER_CHAT_REF, target: WORKSPACE.pane, text: 'report to the other chat' } }),
      ].join('\n');
      const { context, worker, fixture, page, hud } = await boundChat(sandbox, site, reply);

      await ask(page, fixture, 'Show me what you could do.');
      // Refusals are answered without asking: with Auto on the results come back at once.
      await expect.poll(() => bridgeMessages(fixture).length, { timeout: 20_000, message: 'the results message' }).toBe(1);
      const [results] = bridgeMessages(fixture);
      expect(results.text, 'the fenced line is not a call').toMatch(/^HERDR_TOOL_RESULTS \(2 calls\)\n/);
      expect(results.text.match(/"error":"refused"/g), 'both calls refused, in the results').toHaveLength(2);
      expect(results.text, 'the refusal says what was refused').toContain(OTHER_WORKSPACE.pane);
      await hud.expect('data-bridge-pending', '0', 'nothing was asked about');
      expect(await timesInPane(sandbox, fenced), 'the fenced call never ran').toBe(0);
      expect(await timesInPane(sandbox, foreign, OTHER_WORKSPACE.pane), 'the other workspace was not reached').toBe(0);
      const tasks = await herdrRequest(sandbox.herdrSocket, 'pane.read', { pane_id: WORKSPACE.pane, source: 'recent', lines: 1000 });
      expect(JSON.stringify(tasks), 'no prompt reached the agent for the other chat').not.toContain('report to the other chat');
      // Each refusal is in the Activity timeline, with its batch and position.
      const rows = await bridgeActivity(context, worker, page);
      await expect(rows('call_refused'), 'both refusals in the timeline').toHaveCount(2, { timeout: 15_000 });
      await expect(rows('awaiting_approval'), 'nothing was asked about').toHaveCount(0);
    });

    // Review of stop 40: the reply's text put each code block back between ``` lines found
    // by the first copy of its text. A block whose code holds a ``` line (a Markdown
    // example in a longer fence) was closed early by it, and a block whose text also stood
    // inline earlier (`like this`) was fenced there instead: either left a call line of
    // the block unfenced, and it was read as a call.
    test('a call in a code block stays fenced when the block holds ``` lines or its text also stands inline earlier: nothing is asked, nothing runs', async ({ sandbox }) => {
      const nested = `nested-${site}`;
      const inline = `inline-${site}`;
      const nestedCall = herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: nested, keys: ['enter'] });
      const inlineCall = herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: inline, keys: ['enter'] });
      const reply = [
        'An example reply, as Markdown:',
        '````markdown',
        'Example reply:',
        '```',
        nestedCall,
        '```',
        '````',
        `Write \`${inlineCall}\` alone on a line:`,
        '```',
        inlineCall,
        '```',
        'That is all.',
      ].join('\n');
      const { context, worker, fixture, page, hud } = await boundChat(sandbox, site, reply);
      await ask(page, fixture, 'Show me the format.');
      await expect(page.locator(`${fixture.ui.assistantTurn} pre code`).first()).toContainText(nested, { timeout: 20_000 });
      await expect(page.locator(`${fixture.ui.assistantTurn}`).last()).toContainText('That is all.', { timeout: 20_000 });
      await page.waitForTimeout(2500);
      await hud.expect('data-bridge-pending', '0', 'nothing was asked about');
      expect(bridgeMessages(fixture), 'no results message: the reply has no call').toEqual([]);
      expect(await timesInPane(sandbox, nested), 'the call in the nested example never ran').toBe(0);
      expect(await timesInPane(sandbox, inline), 'the call in the block never ran').toBe(0);
      const rows = await bridgeActivity(context, worker, page);
      await expect(rows('awaiting_approval')).toHaveCount(0);
    });

    test('a fence that opens before the 12 000-character mark keeps a pane.send_keys line after it fenced: nothing runs, nothing is asked', async ({ sandbox }) => {
      const token = `long-fenced-${site}`;
      const filler = Array.from({ length: 200 }, (_, i) => `line ${String(i).padStart(3, '0')} ${'x'.repeat(70)}`);
      const reply = ['A long listing:', '```', ...filler, herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: token, keys: ['enter'] }), '```', 'That is all.'].join('\n');
      expect(reply.indexOf(token), 'the call sits past the first 12 000 characters').toBeGreaterThan(12_000);
      const { context, worker, fixture, page, hud } = await boundChat(sandbox, site, reply);
      await ask(page, fixture, 'List it.');
      // The page renders the fenced block as <pre><code>, as the real sites do.
      await expect(page.locator(`${fixture.ui.assistantTurn} pre code`).last()).toContainText(token, { timeout: 20_000 });
      await expect(page.locator(fixture.ui.assistantTurn).last()).toContainText('That is all.', { timeout: 20_000 });
      await page.waitForTimeout(2500);
      await hud.expect('data-bridge-pending', '0', 'nothing was asked about');
      expect(await timesInPane(sandbox, token), 'the fenced call never ran').toBe(0);
      expect(bridgeMessages(fixture), 'no results message: the reply has no call').toEqual([]);
      const rows = await bridgeActivity(context, worker, page);
      await expect(rows('awaiting_approval')).toHaveCount(0);
    });

    test('Run counts only once the card stood still where it is shown: a host the page moves, fades or paints over refuses the press; a settled real press runs', async ({ sandbox }) => {
      const token = `jacked-${site}`;
      const call = herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: token, keys: ['enter'] });
      const { page, fixture, hud } = await boundChat(sandbox, site, `Typing it.\n${call}`);
      await ask(page, fixture, 'Type the token.');
      await hud.expect('data-bridge-pending', '1', 'the HUD asks about the call');
      const told = await page.evaluate(() => Object.keys(document.querySelector('herdr-continuity-hud').dataset));
      expect(told.filter((k) => ['bridgePending', 'bridgeRoundLimit', 'auto', 'binding', 'summaryTone', 'expanded'].includes(k)),
        'the host tells the page nothing of the card, Auto or the binding').toEqual([]);
      await hud.expand();
      const status = hud.host.locator('p.status');
      // The page keeps moving our host under the pointer: every press waits.
      await page.evaluate(() => {
        const host = document.querySelector('herdr-continuity-hud');
        globalThis.jack = setInterval(() => { host.style.setProperty('top', `${64 + Math.floor(Math.random() * 6)}px`, 'important'); }, 40);
      });
      await page.waitForTimeout(800);
      await hud.action('bridge_run:1').click({ force: true });
      await expect(status).toHaveAttribute('data-key', 'noticeBridgePressTooSoon');
      // Still, faded: refused as hidden.
      await page.evaluate(() => {
        clearInterval(globalThis.jack);
        document.querySelector('herdr-continuity-hud').style.setProperty('opacity', '0.3', 'important');
      });
      await page.waitForTimeout(1000);
      await hud.action('bridge_run:1').click();
      await expect(status).toHaveAttribute('data-key', 'noticeBridgePressHidden');
      await page.waitForTimeout(1000);
      await hud.expect('data-bridge-pending', '1', 'no refused press ran the call');
      expect(await timesInPane(sandbox, token), 'nothing ran').toBe(0);
      // As we style it, but painted over by the page with a layer that lets clicks through
      // (review of stop 40: elementFromPoint skips it, so such a cover showing a harmless
      // card got the user's real press on Run): refused as hidden.
      await coverThePage(page);
      await page.waitForTimeout(1000);
      await hud.action('bridge_run:1').click();
      await expect(status).toHaveAttribute('data-key', 'noticeBridgePressHidden');
      await page.waitForTimeout(1000);
      await hud.expect('data-bridge-pending', '1', 'the press through the cover ran nothing');
      expect(await timesInPane(sandbox, token), 'nothing ran').toBe(0);
      // The page lifts its cover the moment the press begins (review of stop 40: the
      // browser reads the HUD whole again before the release): the press does not count.
      await status.evaluate((el) => { el.dataset.key = ''; });
      await page.evaluate(() => document.addEventListener('pointerdown', () => document.getElementById('page-cover')?.remove(), { capture: true, once: true }));
      const run = await hud.action('bridge_run:1').boundingBox();
      await page.mouse.move(run.x + run.width / 2, run.y + run.height / 2);
      await page.mouse.down();
      await page.waitForTimeout(250);
      await page.mouse.up();
      await expect(status).toHaveAttribute('data-key', 'noticeBridgePressHidden');
      await page.waitForTimeout(1000);
      await hud.expect('data-bridge-pending', '1', 'the press as the cover lifted ran nothing');
      expect(await timesInPane(sandbox, token), 'nothing ran').toBe(0);
      // As we style it, uncovered, still for a moment: the user's press runs the call.
      await page.evaluate(() => document.getElementById('page-cover')?.remove());
      await page.waitForTimeout(1000);
      await hud.action('bridge_run:1').click();
      await hud.expect('data-bridge-pending', '0');
      await expect.poll(() => timesInPane(sandbox, token), { timeout: 20_000, message: 'the keys reached the pane' }).toBe(1);
    });

    // A click is a press and a release; the HUD rebuilt the card on every view, so a view
    // arriving in between (an agent's state, a health count) replaced the pressed Run and
    // the browser dispatched no click: the press did nothing. The card is kept while it
    // shows the same calls. (The HUD is the same on both sites: run on z.ai.)
    // Review 42 MED-1: the settle record was keyed by the button's action (`bridge_run:1`),
    // the same for every batch, so a newer batch's card drawn where the old one stood took
    // a press at once, and a focused Run moved to the new batch's Run (a repeated Enter ran
    // it). Each card's buttons now settle on their own, and focus never moves to another
    // batch's button.
    if (site === 'zai') test('a card replaced in place by a newer batch waits again: a press right after the swap runs nothing, and focus does not move onto it', async ({ sandbox }) => {
      const [tokenA, tokenB] = ['swap-AAAAAAAA', 'swap-BBBBBBBB'];
      const callA = herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: tokenA, keys: ['enter'] });
      const callB = herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: tokenB, keys: ['enter'] });
      const { context, worker, fixture } = await chatSiteWorld(sandbox, site, CONVERSATION, {
        streamMs: 600,
        replyWith: (text) => (text.startsWith('HERDR_TOOL_RESULTS') ? 'Noted.' : `Typing it.\n${text.includes('second') ? callB : callA}`),
      });
      const { page, hud } = await openSiteBoundWithAuto(context, worker, fixture, CONVERSATION);
      await ask(page, fixture, 'first');
      await hud.expect('data-bridge-pending', '1', 'card A');
      await hud.expand();
      const item = hud.host.locator('[data-line="bridge-approval"] li[data-call="1"]');
      await expect(item).toContainText(tokenA);
      await page.waitForTimeout(1500); // card A has settled
      const boxA = await hud.action('bridge_run:1').boundingBox();
      await ask(page, fixture, 'second');
      // While the newer reply streams, the user tabs to card A's Run.
      await hud.action('bridge_run:1').focus();
      await expect(item).toContainText(tokenA);
      await expect(item).toContainText(tokenB, { timeout: 20_000 });
      const boxB = await hud.action('bridge_run:1').boundingBox();
      expect(boxB, 'the new Run stands where the old one stood').toEqual(boxA);
      expect(await hud.host.locator('button[data-action="bridge_run:1"]').evaluate((el) => el.matches(':focus')),
        'focus did not move onto the new batch\'s Run').toBe(false);
      const status = hud.host.locator('p.status');
      await page.mouse.click(boxB.x + boxB.width / 2, boxB.y + boxB.height / 2);
      await expect(status).toHaveAttribute('data-key', 'noticeBridgePressTooSoon');
      await page.waitForTimeout(1500);
      expect(await timesInPane(sandbox, tokenB), 'the press right after the swap ran nothing').toBe(0);
      // Settled, the user's press runs the call they now see.
      await hud.action('bridge_run:1').click();
      await hud.expect('data-bridge-pending', '0');
      await expect.poll(() => timesInPane(sandbox, tokenB), { timeout: 20_000, message: 'the keys reached the pane' }).toBe(1);
      expect(await timesInPane(sandbox, tokenA), 'the replaced batch never ran').toBe(0);
    });

    if (site === 'zai') test('a HUD view that arrives between press and release does not lose the Run press', async ({ sandbox }) => {
      const token = `held-press-${site}`;
      const call = herdrCall('pane.send_keys', { pane_id: WORKSPACE.pane, text: token, keys: ['enter'] });
      const { page, fixture, hud } = await boundChat(sandbox, site, `Typing it.\n${call}`);
      await ask(page, fixture, 'Type the token.');
      await hud.expect('data-bridge-pending', '1', 'the HUD asks about the call');
      await hud.expand();
      await hud.expect('data-scope-state', 'idle', 'no agent works yet');
      const run = hud.action('bridge_run:1');
      const { x, y } = await run.actionable();
      await page.waitForTimeout(1000); // the card stands still (the click-jacking guard)
      await page.mouse.move(x, y);
      await page.mouse.down();
      await reportAgent(sandbox, WORKSPACE.pane, 'working');
      await hud.expect('data-scope-state', 'working', 'the HUD rendered the new view while Run was held');
      expect((await run.state()).box, 'Run did not move (the release lands on it)').toEqual({ x, y });
      await page.mouse.up();
      await hud.expect('data-bridge-pending', '0', 'the press counted');
      await expect.poll(() => timesInPane(sandbox, token), { timeout: 20_000, message: 'the keys reached the pane' }).toBe(1);
    });

    test('with Auto on, read-only calls run on their own for at most 6 rounds per user message; then the HUD says the limit is reached (M7)', async ({ sandbox }) => {
      // A model that always answers with a read-only call.
      const { context, worker, fixture } = await chatSiteWorld(sandbox, site, CONVERSATION, {
        streamMs: 200,
        replyWith: () => `Let me look again.\n${JSON.stringify({ tool: 'herdr_inspect', args: {} })}`,
      });
      const { page, hud } = await openSiteBoundWithAuto(context, worker, fixture, CONVERSATION);
      await ask(page, fixture, 'Keep an eye on the workspace.');
      await hud.expect('data-bridge-round-limit', 'yes', 'the HUD says the round limit is reached', 60_000);
      expect(bridgeMessages(fixture), 'six rounds of results, no more').toHaveLength(6);
      await hud.expect('data-bridge-pending', '0', 'read-only calls asked nothing');
      await hud.expand();
      await expect(hud.host.locator('p[data-line="bridge-round-limit"]')).toContainText('6 of 6');
      const rows = await bridgeActivity(context, worker, page);
      await expect(rows('round_limit')).toHaveCount(1, { timeout: 15_000 });
      await page.waitForTimeout(1500);
      expect(bridgeMessages(fixture), 'nothing more after the limit').toHaveLength(6);

      // A new message of the user's starts a new allowance.
      await page.bringToFront();
      await ask(page, fixture, 'Once more, please.');
      await expect.poll(() => bridgeMessages(fixture).length, { timeout: 20_000, message: 'a new round after the user wrote' }).toBeGreaterThan(6);
    });

    test('Insert JSON tool prompt goes over the worker\'s one companion connection: a second press opens no native port', async ({ sandbox }) => {
      const { worker, fixture, page, hud } = await boundChat(sandbox, site, 'ok');
      // Count every connectNative the worker makes from now on; the count is proven to
      // work by one port the test opens (and closes) itself.
      const counting = await worker.evaluate(() => {
        const connect = chrome.runtime.connectNative.bind(chrome.runtime);
        globalThis.herdrTestNativeConnects = 0;
        chrome.runtime.connectNative = (...args) => {
          globalThis.herdrTestNativeConnects += 1;
          return connect(...args);
        };
        chrome.runtime.connectNative('dev.herdr.continuity').disconnect();
        return globalThis.herdrTestNativeConnects;
      });
      expect(counting, 'the worker\'s connectNative is counted').toBe(1);
      await hud.expand();
      for (const press of [1, 2]) {
        await page.locator(fixture.ui.composer).fill('');
        await hud.action('bridge_prompt').click();
        await expect(page.locator(fixture.ui.composer), `press ${press} inserts the prompt`).toHaveValue(/^\[herdr-continuity JSON bridge v1\]\n/);
      }
      const prompt = await page.locator(fixture.ui.composer).inputValue();
      expect(prompt, 'the prompt names this chat').toContain(`:conv:${CONVERSATION}.`);
      expect(await worker.evaluate(() => globalThis.herdrTestNativeConnects), 'no native port per press').toBe(1);
    });
  });
}

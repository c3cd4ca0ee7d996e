// The ChatGPT fixture itself (no extension): every route serves the documented page shape
// under both CSP variants, the strict variant really enforces its CSP, and the in-page fake
// server records a submitted message. If these fail, the extension tests cannot be trusted.
import { closeContexts, test, expect } from '../lib/test.mjs';
import {
  BACKEND_APP_MENTIONS, BACKEND_DRAFTS, ChatGptFixture, CSP_VARIANTS, DRAFT_DEBOUNCE_MS, HERDR_TOOL_REPLY, LAYOUTS, NO_TOOLS_REPLY,
  PILL_ANY, PILL_GENERATIONS, SEED_FAILED_TEXT, SEND_TIMEOUT_TEXT, chatgptUrl, submittedMessages,
} from '../fixtures/chatgpt.mjs';
import { appsOf, attachAppLikeHuman, insertTextByScript, sendHumanWithApp } from '../lib/apps.mjs';
import { backendMessages } from '../lib/backend.mjs';
import { recordSecurityPolicyViolations, securityPolicyViolations } from '../lib/csp-recorder.mjs';

const PROJECT_HEX = '0123456789abcdef0123456789abcdef';
const PROJECT_ID = `g-p-${PROJECT_HEX}`;
const CONVERSATION = '6a1f3e2b-1c2d-4e5f-8a9b-0c1d2e3f4a5b';

for (const csp of CSP_VARIANTS) {
  test.describe(`ChatGPT fixture, CSP ${csp}`, () => {
    let browser;
    let context;
    let fixture;
    test.beforeEach(async ({ plainBrowser }) => {
      browser = plainBrowser;
      context = await browser.newContext();
      await recordSecurityPolicyViolations(context);
      fixture = new ChatGptFixture({ csp, streamMs: 50 });
      fixture.conversations.set(CONVERSATION, {
        title: 'Seeded',
        turns: [
          { role: 'user', text: 'Run the tests' },
          { role: 'assistant', text: 'All green.' },
        ],
      });
      await fixture.install(context);
    });
    test.afterEach(async () => {
      await closeContexts(browser);
    });

    test('serves every ChatGPT route with composer and turns (REFERENCE §3)', async () => {
      const page = await context.newPage();
      for (const url of [
        chatgptUrl.home(),
        chatgptUrl.conversation(CONVERSATION),
        chatgptUrl.projectHome(PROJECT_HEX),
        chatgptUrl.projectConversation(PROJECT_HEX, CONVERSATION),
      ]) {
        await page.goto(url);
        await expect(page.locator('form[data-type="unified-composer"] #prompt-textarea[contenteditable="true"]')).toBeVisible();
        await expect(page.locator('button[data-testid="send-button"]')).toBeDisabled();
      }
      await page.goto(chatgptUrl.conversation(CONVERSATION));
      const turns = page.locator('[data-testid^="conversation-turn-"] [data-message-author-role]');
      await expect(turns).toHaveCount(2);
      await expect(turns.nth(1)).toHaveAttribute('data-message-author-role', 'assistant');
      expect(fixture.served.map((s) => s.kind)).toEqual(['home', 'conversation', 'project_home', 'project_conversation', 'conversation']);
      expect(await securityPolicyViolations(page)).toEqual([]);
    });

    test('records a submitted message and streams a reply', async () => {
      const page = await context.newPage();
      await page.goto(chatgptUrl.home());
      await page.locator('#prompt-textarea').click();
      await page.keyboard.type('Bind this chat to w1');
      await page.locator('button[data-testid="send-button"]').click();
      await expect(page.locator('[data-message-author-role="assistant"]').last()).toHaveText(NO_TOOLS_REPLY);
      await expect(page.locator('.result-streaming, [aria-busy="true"]')).toHaveCount(0);
      const submitted = await submittedMessages(page);
      expect(submitted.map((m) => m.text)).toEqual(['Bind this chat to w1']);
      await expect(page.locator('[data-message-author-role="user"]').last()).toHaveText('Bind this chat to w1');
    });

    test(`page CSP is ${csp === 'strict' ? 'enforced' : 'absent'}`, async () => {
      const page = await context.newPage();
      await page.goto(chatgptUrl.home());
      // An un-nonced inline script is what a strict CSP must block.
      const ran = await page.evaluate(async () => {
        window.__inlineRan = false;
        const s = document.createElement('script');
        s.textContent = 'window.__inlineRan = true;';
        document.body.appendChild(s);
        await new Promise((r) => setTimeout(r, 50));
        return window.__inlineRan;
      });
      const violations = await securityPolicyViolations(page);
      if (csp === 'strict') {
        expect(ran).toBe(false);
        expect(violations.map((v) => v.effectiveDirective)).toContain('script-src-elem');
      } else {
        expect(ran).toBe(true);
        expect(violations).toEqual([]);
      }
    });

    // The snapshot API the recovery probe reads (REFERENCE §3, SITES-2026 §1.9), asked from
    // the page's own origin as the content script asks it.
    const fetchJson = (page, path, headers = {}) => page.evaluate(async ({ path, headers }) => {
      const response = await fetch(path, { headers });
      return { status: response.status, body: await response.json().catch(() => null) };
    }, { path, headers });
    const SNAPSHOT = `/backend-api/conversation/${CONVERSATION}`;
    // The seeded conversation open, and the server's current node as the page reads it.
    const openSnapshot = async () => {
      const page = await context.newPage();
      await page.goto(chatgptUrl.conversation(CONVERSATION));
      const bearer = { authorization: `Bearer ${fixture.accessToken}` };
      const current = async () => {
        const body = (await fetchJson(page, SNAPSHOT, bearer)).body;
        return body.mapping[body.current_node].message;
      };
      return { page, bearer, current };
    };

    test('the snapshot needs the session\'s Bearer and follows a reply from in_progress to finished (S2)', async () => {
      const { page, bearer, current } = await openSnapshot();
      const path = SNAPSHOT;
      expect((await fetchJson(page, path)).status, 'no Bearer: 401').toBe(401);
      const session = await fetchJson(page, '/api/auth/session');
      expect(session.body.accessToken).toBe(fixture.accessToken);
      const seeded = (await fetchJson(page, path, bearer)).body;
      const last = seeded.mapping[seeded.current_node].message;
      expect(last).toMatchObject({ author: { role: 'assistant' }, status: 'finished_successfully', end_turn: true, content: { parts: ['All green.'] } });
      expect(seeded.mapping[seeded.mapping[seeded.current_node].parent].message.author.role).toBe('user');
      expect(last.update_time, 'times are seconds').toBeLessThan(1e10);

      fixture.streamMs = 3000;
      fixture.replyWith = () => 'one two three four five six seven eight nine ten eleven twelve';
      await page.locator('#prompt-textarea').click();
      await page.keyboard.type('Stream a long one');
      await page.keyboard.press('Enter');
      await expect.poll(async () => {
        const node = await current();
        return `${node.author.role} ${node.status}`;
      }, { timeout: 5_000 }).toBe('assistant in_progress');
      await expect.poll(async () => (await current()).status, { timeout: 10_000 }).toBe('finished_successfully');
      expect((await current()).end_turn).toBe(true);
      expect(fixture.counts.snapshotRequests).toBe(fixture.requests.get(path));
      expect(fixture.counts.snapshotAuthorized).toBe(fixture.counts.snapshotRequests - 1);
      expect(fixture.counts.sessionRequests).toBe(1);
    });

    test('snapshot faults switch at run time: 429, 500, odd shape', async () => {
      const { page, bearer } = await openSnapshot();
      const path = SNAPSHOT;
      fixture.snapshotFault = '429';
      expect((await fetchJson(page, path, bearer)).status).toBe(429);
      fixture.snapshotFault = '500';
      expect((await fetchJson(page, path, bearer)).status).toBe(500);
      fixture.snapshotFault = 'odd_shape';
      const odd = await fetchJson(page, path, bearer);
      expect(odd.status).toBe(200);
      expect(odd.body.current_node).toBeUndefined();
      fixture.snapshotFault = null;
      expect((await fetchJson(page, path, bearer)).body.current_node).toBeTruthy();
      expect(fixture.counts.snapshotRequests).toBe(4);
    });

    test('faults of a message: server ahead freezes the page, send timeouts show the card with Retry (S3, S6)', async () => {
      const { page, current: currentNode } = await openSnapshot();
      const send = async (text) => {
        await page.locator('#prompt-textarea').click();
        await page.keyboard.type(text);
        await page.keyboard.press('Enter');
      };
      fixture.replyWith = () => 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu';
      fixture.streamMs = 400;

      fixture.fault = 'server_ahead';
      await send('freeze please');
      await expect.poll(async () => (await currentNode()).status, { timeout: 10_000 }).toBe('finished_successfully');
      const frozen = page.locator('[data-message-author-role="assistant"]').last();
      await expect(page.locator('button[data-testid="stop-button"]'), 'the page still shows Stop').toBeVisible();
      await expect(frozen).not.toHaveAttribute('data-message-id', /.+/);
      expect((await frozen.textContent()).length).toBeLessThan((await currentNode()).content.parts[0].length);
      await page.locator('button[data-testid="stop-button"]').click();

      fixture.fault = 'send_timeout_at_user';
      await send('time out at the user');
      await expect(page.getByText(SEND_TIMEOUT_TEXT)).toBeVisible();
      expect((await currentNode()).author.role, 'the server is at the user').toBe('user');
      await page.locator('button[data-testid="regenerate-thread-error-button"]').click();
      await expect.poll(async () => (await currentNode()).status, { timeout: 10_000 }).toBe('finished_successfully');
      expect((await currentNode()).author.role).toBe('assistant');

      fixture.fault = 'send_timeout_at_assistant';
      await send('time out at the assistant');
      await expect(page.getByText(SEND_TIMEOUT_TEXT)).toBeVisible();
      await expect.poll(async () => (await currentNode()).content.parts[0], { timeout: 10_000 }).toBe(fixture.replyWith());
      expect(fixture.counts).toMatchObject({ userMessages: 3, retryClicks: 1, pageLoads: 1 });
      await page.reload();
      await expect(page.locator('[data-message-author-role="assistant"]').last()).toHaveText(fixture.replyWith());
      expect(fixture.counts.pageLoads).toBe(2);
    });
  });
}

// A Project's new-chat flow (issue 12 "The fixture grows"): what a user sees when the first
// message on a Project home starts a conversation, and when that first message goes wrong.
const NEW_CHAT_URL = new RegExp(`/g/${PROJECT_ID}-demo/c/[0-9a-f-]{36}$`);

for (const csp of CSP_VARIANTS) {
  test.describe(`ChatGPT fixture, a Project's new chat, CSP ${csp}`, () => {
    let browser;
    let fixture;
    let page;
    /** The Project home with one earlier conversation in its list. */
    test.beforeEach(async ({ plainBrowser }) => {
      browser = plainBrowser;
      const context = await browser.newContext();
      await recordSecurityPolicyViolations(context);
      fixture = new ChatGptFixture({ csp, streamMs: 50 });
      fixture.conversations.set(CONVERSATION, { title: 'Earlier work', turns: [{ role: 'user', text: 'Run the tests' }, { role: 'assistant', text: 'All green.' }] });
      fixture.projectChats.set(PROJECT_ID, [{ id: CONVERSATION, title: 'Earlier work' }]);
      await fixture.install(context);
      page = await context.newPage();
      await page.goto(chatgptUrl.projectHome(PROJECT_HEX));
    });
    test.afterEach(async () => {
      expect(await securityPolicyViolations(page)).toEqual([]);
      await closeContexts(browser);
    });

    const listed = () => page.locator('aside [data-project-conversation]');
    const send = async (text) => {
      await page.locator(fixture.ui.composer).click();
      await page.keyboard.type(text);
      await page.keyboard.press('Enter');
    };
    const newChatId = () => new URL(page.url()).pathname.split('/').pop();

    test('the first message creates the conversation: the URL moves without a load, the list grows, the server has it', async () => {
      await expect(listed()).toHaveText(['Earlier work']);
      await send('Continue the parser split');
      await expect(page).toHaveURL(NEW_CHAT_URL);
      await expect(page.locator(fixture.ui.finished).last()).toHaveText(NO_TOOLS_REPLY);
      const id = newChatId();
      expect(fixture.counts.pageLoads, 'history.pushState, not a navigation').toBe(1);
      await expect(listed()).toHaveText(['Continue the parser split', 'Earlier work']);
      await expect(listed().first()).toHaveAttribute('href', `/g/${PROJECT_ID}-demo/c/${id}`);
      expect(fixture.messagesOf(id).map((m) => [m.text, m.projectId])).toEqual([['Continue the parser split', PROJECT_ID]]);
      expect(fixture.projectConversationsOf(PROJECT_ID).map((c) => c.id)).toEqual([id, CONVERSATION]);
      // The next message stays in the new conversation; a reload shows the thread and the list.
      await send('And the tests');
      await expect(page.locator(fixture.ui.finished)).toHaveCount(2);
      expect(fixture.messagesOf(id).map((m) => m.text)).toEqual(['Continue the parser split', 'And the tests']);
      await page.reload();
      await expect(page.locator(fixture.ui.userTurn)).toHaveText(['Continue the parser split', 'And the tests']);
      await expect(listed()).toHaveText(['Continue the parser split', 'Earlier work']);
      expect(fixture.served.map((s) => s.kind)).toEqual(['project_home', 'project_conversation']);
    });

    test('the section and thread layouts start a Project chat the same way', async () => {
      for (const layout of ['section', 'thread']) {
        const context = await browser.newContext();
        const other = new ChatGptFixture({ csp, layout, streamMs: 50 });
        await other.install(context);
        const tab = await context.newPage();
        await tab.goto(chatgptUrl.projectHome(PROJECT_HEX));
        await tab.locator(other.ui.composer).click();
        await tab.keyboard.type(`Start in ${layout}`);
        await tab.keyboard.press('Enter');
        await expect(tab, layout).toHaveURL(NEW_CHAT_URL);
        await expect(tab.locator(other.ui.finished), layout).toHaveText([NO_TOOLS_REPLY]);
        await expect(tab.locator('aside [data-project-conversation]'), layout).toHaveText([`Start in ${layout}`]);
        expect(other.messagesOf(new URL(tab.url()).pathname.split('/').pop()).map((m) => m.text)).toEqual([`Start in ${layout}`]);
        await context.close();
      }
    });

    test('seed_send_timeout with the server at the user: the thread error and Retry, the URL already moved', async () => {
      fixture.seedFault = 'seed_send_timeout';
      await send('Seed that times out');
      await expect(page.getByText(SEND_TIMEOUT_TEXT)).toBeVisible();
      await expect(page).toHaveURL(NEW_CHAT_URL);
      const id = newChatId();
      expect(fixture.messagesOf(id).map((m) => m.text), 'the server has the message').toEqual(['Seed that times out']);
      await expect(listed()).toHaveCount(2);
      await page.getByRole('button', { name: fixture.ui.labels.retry }).click();
      await expect(page.locator(fixture.ui.finished).last()).toHaveText(NO_TOOLS_REPLY);
      expect(fixture.counts).toMatchObject({ userMessages: 1, retryClicks: 1 });
    });

    test('seed_send_timeout with nothing on the server: the error and Retry on the Project home; Retry sends it again', async () => {
      fixture.seedFault = 'seed_send_timeout';
      fixture.seedTimeoutServer = 'none';
      await send('Seed the server never got');
      await expect(page.getByText(SEND_TIMEOUT_TEXT)).toBeVisible();
      await expect(page.locator(fixture.ui.userTurn)).toHaveText(['Seed the server never got']);
      expect(new URL(page.url()).pathname).toBe(`/g/${PROJECT_ID}-demo/project`);
      expect(fixture.server).toEqual([]);
      await expect(listed()).toHaveCount(1);
      await page.getByRole('button', { name: fixture.ui.labels.retry }).click();
      await expect(page).toHaveURL(NEW_CHAT_URL);
      await expect(page.locator(fixture.ui.finished).last()).toHaveText(NO_TOOLS_REPLY);
      expect(fixture.messagesOf(newChatId()).map((m) => m.text)).toEqual(['Seed the server never got']);
      await expect(listed()).toHaveCount(2);
    });

    test('seed_failed: refused with a visible error, the text back in the composer, no conversation', async () => {
      fixture.seedFault = 'seed_failed';
      await send('Seed that is refused');
      await expect(page.locator('[data-testid="toast-error"]')).toHaveText(SEED_FAILED_TEXT);
      await expect(page.locator(fixture.ui.composer)).toHaveText('Seed that is refused');
      await expect(page.locator(fixture.ui.userTurn)).toHaveCount(0);
      expect(new URL(page.url()).pathname).toBe(`/g/${PROJECT_ID}-demo/project`);
      expect(fixture.server).toEqual([]);
      expect(fixture.refusedSeeds.map((r) => [r.text, r.projectId])).toEqual([['Seed that is refused', PROJECT_ID]]);
      await expect(listed()).toHaveText(['Earlier work']);
      expect(fixture.projectConversationsOf(PROJECT_ID)).toHaveLength(1);
      expect(await submittedMessages(page)).toHaveLength(1);
      // The text came back without an input event: no draft is saved for it.
      await expect.poll(() => fixture.drafts.size).toBe(0);
    });

    test('seed_no_conversation: accepted and answered, but the URL never moves and the list does not grow', async () => {
      fixture.seedFault = 'seed_no_conversation';
      await send('Seed without a conversation');
      await expect(page.locator(fixture.ui.finished).last()).toHaveText(NO_TOOLS_REPLY);
      expect(new URL(page.url()).pathname).toBe(`/g/${PROJECT_ID}-demo/project`);
      await expect(listed()).toHaveText(['Earlier work']);
      expect(fixture.server.map((m) => m.text), 'the server took it').toEqual(['Seed without a conversation']);
      const hidden = fixture.server[0].conversationId;
      expect(fixture.projectConversationsOf(PROJECT_ID).map((c) => c.id)).not.toContain(hidden);
    });
  });
}

// ---- The Herdr App (issue 24, field notes §1): App pills of both generations in the
// composer and in user turns, the `@` picker that opens only for trusted keyboard input,
// the server recording each message's Apps, the planner side, and Project drafts.
const HERDR = { name: 'Herdr', path: 'connector://apps/herdr' };
const GITHUB = { name: 'GitHub', path: 'connector://apps/github' };

/** A fresh context on the seeded conversation (or `url`) of a fixture with `options`. */
async function openApps(browser, options = {}, url = chatgptUrl.conversation(CONVERSATION)) {
  const context = await browser.newContext();
  await recordSecurityPolicyViolations(context);
  const fixture = new ChatGptFixture({ streamMs: 50, ...options });
  fixture.conversations.set(CONVERSATION, { title: 'Seeded', turns: [{ role: 'user', text: 'Run the tests' }, { role: 'assistant', text: 'All green.' }] });
  await fixture.install(context);
  const page = await context.newPage();
  await page.goto(url);
  return { context, fixture, page };
}

/** How many times a page asked for the picker's Apps (a trusted `@` was seen). */
const pickerAsks = (fixture) => fixture.requests.get(BACKEND_APP_MENTIONS) ?? 0;
/** How many of those answers the page has taken (after which it would have opened the picker). */
const pickerAnswers = (page) => page.evaluate(() => window.__chatgptFixture.pickerAnswers ?? 0);

/** Clears the composer as a person does (select all, Backspace). */
async function clearComposer(page, fixture) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Backspace');
  await expect(page.locator(fixture.ui.composer)).toHaveText('');
}

test.describe('ChatGPT fixture, the Herdr App', () => {
  let browser;
  test.beforeAll(({ plainBrowser }) => {
    browser = plainBrowser;
  });
  test.afterEach(async () => {
    await closeContexts(browser);
  });

  for (const layout of LAYOUTS) {
    for (const pill of PILL_GENERATIONS) {
      for (const csp of CSP_VARIANTS) {
        test(`${layout}, ${pill} pills, CSP ${csp}: trusted typing attaches Herdr, script insertion and the broken picker never open it, the pill survives a reload`, async () => {
          const { context, fixture, page } = await openApps(browser, { layout, pill, csp });
          const { ui } = fixture;
          // Script insertion (execCommand) and a synthetic InputEvent never open the picker.
          await insertTextByScript(page, fixture, '@herdr');
          await page.locator(ui.composer).evaluate((composer) => {
            composer.append(Object.assign(document.createElement('p'), { textContent: '@' }));
            composer.dispatchEvent(new InputEvent('input', { bubbles: true, data: '@', inputType: 'insertText' }));
          });
          // Checkpoint: a trusted `@` typed after them is seen (the page asks for the Apps).
          await page.locator(ui.composer).click();
          await page.keyboard.press('ControlOrMeta+End');
          await page.keyboard.type(' @');
          await expect(page.locator(ui.picker)).toBeVisible();
          expect(pickerAsks(fixture), 'only the trusted @ asked for the Apps').toBe(1);
          await page.keyboard.press('Escape');
          await expect(page.locator(ui.picker)).toHaveCount(0);
          await clearComposer(page, fixture);
          // The broken picker: the trusted @ is seen (the page asks), nothing opens.
          fixture.appPicker = 'broken';
          await page.keyboard.type('@herdr');
          await expect.poll(() => pickerAnswers(page)).toBe(2);
          expect(pickerAsks(fixture)).toBe(2);
          await page.keyboard.type('x');
          await expect(page.locator(ui.composer)).toHaveText('@herdrx');
          await expect(page.locator(ui.picker)).toHaveCount(0);
          fixture.appPicker = null;
          await clearComposer(page, fixture);

          const message = await sendHumanWithApp(page, fixture, 'check the api workspace');
          expect(appsOf(message)).toEqual([HERDR]);
          expect(message.text).toBe('@Herdr check the api workspace');
          const userTurn = page.locator(ui.userTurn).last();
          await expect(userTurn.locator(ui.pill)).toHaveCount(1);
          await expect(userTurn.locator(PILL_ANY)).toHaveText(pill === 'mention' ? '@Herdr' : 'Herdr');
          await expect(userTurn).toContainText('check the api workspace');
          await expect(page.locator(ui.composer).locator(PILL_ANY), 'the submit cleared the composer').toHaveCount(0);
          await expect(page.locator(ui.finished).last()).toHaveText(HERDR_TOOL_REPLY);

          // A message without a pill carries no App, and its planner had no Herdr tools.
          await page.locator(ui.composer).click();
          await page.keyboard.type('and without the app');
          await page.locator(ui.send).click();
          await expect(page.locator(ui.finished).last()).toHaveText(NO_TOOLS_REPLY);
          expect(fixture.messagesOf(CONVERSATION).map((m) => [m.text, appsOf(m)])).toEqual([
            ['@Herdr check the api workspace', [HERDR]],
            ['and without the app', []],
          ]);
          expect(backendMessages(fixture, { app: 'Herdr' }).map((m) => m.text)).toEqual(['@Herdr check the api workspace']);
          expect(backendMessages(fixture, { app: null }).map((m) => m.text)).toEqual(['and without the app']);
          expect(fixture.toolTurns.map((t) => [t.conversationId, t.tool, t.text])).toEqual([[CONVERSATION, 'herdr_inspect', '@Herdr check the api workspace']]);

          // After a reload (rendered from the stored thread) the pill is in its bubble only.
          await page.reload();
          const users = page.locator(ui.userTurn);
          await expect(users).toHaveCount(3);
          await expect(users.nth(1).locator(ui.pill)).toHaveCount(1);
          await expect(users.nth(1)).toContainText('check the api workspace');
          await expect(users.nth(2).locator(PILL_ANY)).toHaveCount(0);
          await expect(users.nth(2)).toHaveText('and without the app');
          // The snapshot API keeps the stored text (the mention token first).
          const snapshot = await page.evaluate(async ({ id, token }) => (await fetch(`/backend-api/conversation/${id}`, { headers: { authorization: `Bearer ${token}` } })).json(), { id: CONVERSATION, token: fixture.accessToken });
          const userTexts = Object.values(snapshot.mapping).filter((n) => n.message?.author.role === 'user').map((n) => n.message.content.parts[0]);
          expect(userTexts).toEqual(['Run the tests', '@Herdr check the api workspace', 'and without the app']);
          expect(await securityPolicyViolations(page)).toEqual([]);
          await context.close();
        });
      }
    }
  }

  test('the picker: options filtered by the letters, first highlighted, arrows move, Enter or a mouse click chooses (a bare click() does not), Escape and a space without a match close', async () => {
    const { context, fixture, page } = await openApps(browser);
    const { ui } = fixture;
    const options = page.locator(`${ui.picker} [role="option"]`);
    await page.locator(ui.composer).click();
    await page.keyboard.type('@');
    await expect(options).toHaveText(['Herdr', 'GitHub']);
    await expect(options.nth(0)).toHaveAttribute('aria-selected', 'true');
    await expect(options.nth(1)).toHaveAttribute('aria-selected', 'false');
    await page.keyboard.press('ArrowDown');
    await expect(options.nth(1)).toHaveAttribute('aria-selected', 'true');
    await expect(options.nth(0)).toHaveAttribute('aria-selected', 'false');
    await page.keyboard.press('ArrowUp');
    await expect(options.nth(0)).toHaveAttribute('aria-selected', 'true');
    await page.keyboard.type('g');
    await expect(options).toHaveText(['GitHub']);
    await expect(page.locator(ui.option('github'))).toHaveAttribute('aria-selected', 'true');
    await page.keyboard.press('Backspace');
    await expect(options).toHaveText(['Herdr', 'GitHub']);
    await page.keyboard.press('Escape');
    await expect(page.locator(ui.picker)).toHaveCount(0);
    await expect(page.locator(ui.composer), 'Escape leaves the typed text').toHaveText('@');
    await clearComposer(page, fixture);
    // Moving the caret off the mention closes it too.
    await page.keyboard.type('note @her');
    await expect(options).toHaveText(['Herdr']);
    await page.keyboard.press('Home');
    await expect(page.locator(ui.picker)).toHaveCount(0);
    await clearComposer(page, fixture);

    // No match: the picker closes; a space after `@letters` closes it too.
    await page.keyboard.type('@hx');
    await expect(page.locator(ui.picker)).toHaveCount(0);
    await page.keyboard.type(' @her');
    await expect(options).toHaveText(['Herdr']);
    await page.keyboard.type(' ');
    await expect(page.locator(ui.picker)).toHaveCount(0);
    await clearComposer(page, fixture);

    // An untrusted Enter while the picker is open neither chooses nor submits.
    await page.keyboard.type('@herdr');
    await expect(options).toHaveText(['Herdr']);
    await page.locator(ui.composer).dispatchEvent('keydown', { key: 'Enter', bubbles: true, cancelable: true });
    await expect(page.locator(ui.picker)).toBeVisible();
    await expect(page.locator(ui.composer).locator(PILL_ANY)).toHaveCount(0);
    expect(fixture.server).toEqual([]);
    // A bare click() on an option chooses nothing (ChatGPT's Radix menus act on pointerdown).
    await page.locator(ui.option('herdr')).evaluate((option) => option.click());
    await expect(page.locator(ui.picker)).toBeVisible();
    await expect(page.locator(ui.composer).locator(PILL_ANY)).toHaveCount(0);
    // A mouse's click on an option (its pointerdown) chooses it, replacing `@herdr` by the pill.
    await page.locator(ui.option('herdr')).click();
    await expect(page.locator(ui.picker)).toHaveCount(0);
    await expect(page.locator(ui.composer).locator(ui.pill)).toHaveCount(1);
    await expect(page.locator(ui.composer)).not.toContainText('@herdr');
    await page.keyboard.type('after the click');
    await page.keyboard.press('Enter');
    await expect.poll(() => fixture.server.length).toBe(1);
    expect(fixture.server[0]).toMatchObject({ text: '@Herdr after the click', apps: [HERDR] });
    // The next message: two Apps chosen by pointerdown alone (a Radix-style option).
    await page.locator(ui.composer).click();
    await page.keyboard.type('@git');
    await page.locator(ui.option('github')).dispatchEvent('pointerdown');
    await page.keyboard.type('@herdr');
    // The picker opens after its fetch: Enter before it shows would send the message.
    await expect(options).toHaveText(['Herdr']);
    await page.keyboard.press('Enter');
    await page.keyboard.type('both');
    await page.keyboard.press('Enter');
    await expect.poll(() => fixture.server.length).toBe(2);
    expect(fixture.server[1]).toMatchObject({ text: '@GitHub @Herdr both', apps: [GITHUB, HERDR] });
    // A pill in the middle of the text: the stored text starts with its token, then the rest.
    await page.locator(ui.composer).click();
    await page.keyboard.type('please ');
    await attachAppLikeHuman(page, fixture, 'herdr');
    await page.keyboard.type('look again');
    await page.keyboard.press('Enter');
    await expect.poll(() => fixture.server.length).toBe(3);
    expect(fixture.server[2]).toMatchObject({ text: '@Herdr please look again', apps: [HERDR] });
    await expect(page.locator(ui.userTurn).nth(2).locator(PILL_ANY)).toHaveText(['GitHub', 'Herdr']);
    expect(fixture.toolTurns).toHaveLength(3);
    await context.close();
  });

  test('a pill deleted by Backspace is gone, and pill markup put there by script counts for nothing', async () => {
    const { context, fixture, page } = await openApps(browser, { layout: 'thread' });
    const { ui } = fixture;
    await attachAppLikeHuman(page, fixture, 'herdr');
    await page.keyboard.press('Backspace'); // the space after the pill
    await page.keyboard.press('Backspace'); // the pill
    await expect(page.locator(ui.composer).locator(PILL_ANY)).toHaveCount(0);
    await page.keyboard.type('no app after all');
    await page.locator(ui.send).click();
    await expect.poll(() => fixture.server.length).toBe(1);
    expect(fixture.server[0]).toMatchObject({ text: 'no app after all', apps: [] });
    await expect(page.locator(ui.finished).last()).toHaveText(NO_TOOLS_REPLY);

    // Forged markup: the pill's attributes written into the composer by a script.
    await page.locator(ui.composer).evaluate((composer, html) => {
      composer.innerHTML = `<p>${html}&nbsp;forged</p>`;
      composer.dispatchEvent(new InputEvent('input', { bubbles: true }));
    }, '<span data-appearance="inline-mention" app-mention-name="Herdr" app-mention-path="connector://apps/herdr" contenteditable="false">@Herdr</span>');
    await page.locator(ui.send).click();
    await expect.poll(() => fixture.server.length).toBe(2);
    expect(fixture.server[1].apps, 'a forged pill is no App').toEqual([]);
    expect(fixture.toolTurns).toEqual([]);
    await context.close();
  });

  test('script-typed lines after a picker-made pill keep their lines and the marker line last; the bubble shows them after the pill', async () => {
    for (const pill of PILL_GENERATIONS) {
      const { context, fixture, page } = await openApps(browser, { pill });
      await attachAppLikeHuman(page, fixture, 'herdr');
      await insertTextByScript(page, fixture, 'line one\nline two\n[herdr-continuity wake:w1#1]');
      await page.locator(fixture.ui.send).click();
      await expect.poll(() => fixture.server.length).toBe(1);
      expect(fixture.server[0]).toMatchObject({ text: '@Herdr line one\nline two\n[herdr-continuity wake:w1#1]', apps: [HERDR] });
      expect(backendMessages(fixture, { marker: 'wake:w1#1', app: 'Herdr' })).toHaveLength(1);
      const bubble = page.locator(fixture.ui.userTurn).last();
      await expect(bubble.locator(fixture.ui.pill)).toHaveCount(1);
      expect(await bubble.textContent()).toBe(`${pill === 'mention' ? '@Herdr' : 'Herdr'} line one\nline two\n[herdr-continuity wake:w1#1]`);
      await context.close();
    }
  });

  test('a seeded user turn with apps renders its pills in every layout and pill generation', async () => {
    for (const layout of LAYOUTS) {
      for (const pill of PILL_GENERATIONS) {
        const context = await browser.newContext();
        const fixture = new ChatGptFixture({ layout, pill, streamMs: 50 });
        fixture.conversations.set(CONVERSATION, {
          title: 'Seeded with an App',
          turns: [{ role: 'user', text: '@Herdr plan it', apps: [HERDR] }, { role: 'assistant', text: HERDR_TOOL_REPLY }],
        });
        await fixture.install(context);
        const page = await context.newPage();
        await page.goto(chatgptUrl.conversation(CONVERSATION));
        const bubble = page.locator(fixture.ui.userTurn);
        await expect(bubble.locator(fixture.ui.pill), `${layout} ${pill}`).toHaveCount(1);
        expect(await bubble.textContent()).toBe(`${pill === 'mention' ? '@Herdr' : 'Herdr'} plan it`);
        await context.close();
      }
    }
  });

  // What chrome.debugger's Input domain sends (the extension's trusted path): key events
  // open the picker and a trusted Enter chooses; CDP Input.insertText (no key) does not.
  test('CDP key events open the picker and choose with Enter; CDP insertText never opens it', async () => {
    const { context, fixture, page } = await openApps(browser, { layout: 'thread' });
    const { ui } = fixture;
    const cdp = await context.newCDPSession(page);
    const key = async (k, text, extra = {}) => {
      await cdp.send('Input.dispatchKeyEvent', { type: 'keyDown', key: k, text, unmodifiedText: text, ...extra });
      await cdp.send('Input.dispatchKeyEvent', { type: 'keyUp', key: k, ...extra });
    };
    await page.locator(ui.composer).click();
    await cdp.send('Input.insertText', { text: '@herdr' });
    await expect(page.locator(ui.composer)).toHaveText('@herdr');
    await key(' ', ' ');
    await key('@', '@');
    await expect(page.locator(ui.picker), 'the key event opened it').toBeVisible();
    expect(pickerAsks(fixture), 'insertText asked for nothing').toBe(1);
    for (const letter of 'herdr') await key(letter, letter);
    await expect(page.locator(`${ui.picker} [role="option"]`)).toHaveText(['Herdr']);
    await key('Enter', '\r', { code: 'Enter', windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 });
    await expect(page.locator(ui.picker)).toHaveCount(0);
    await expect(page.locator(ui.composer).locator(ui.pill)).toHaveCount(1);
    expect(fixture.server, 'the Enter chose, it did not submit').toEqual([]);
    await cdp.send('Input.insertText', { text: 'wake text' });
    await page.locator(ui.send).click();
    await expect.poll(() => fixture.server.length).toBe(1);
    expect(fixture.server[0]).toMatchObject({ text: '@Herdr @herdr wake text', apps: [HERDR] });
    await context.close();
  });

  for (const layout of LAYOUTS) {
    test(`${layout}: the broken picker never opens (read at run time); a fixed one opens again`, async () => {
      const { context, fixture, page } = await openApps(browser, { layout });
      const { ui } = fixture;
      fixture.appPicker = 'broken';
      await page.locator(ui.composer).click();
      await page.keyboard.type('@herdr');
      // Checkpoint: the page asked for the Apps (the trusted @ was seen) and got none.
      await expect.poll(() => pickerAnswers(page)).toBe(1);
      expect(pickerAsks(fixture)).toBe(1);
      await page.keyboard.type('x');
      await page.keyboard.press('Backspace');
      await expect(page.locator(ui.picker)).toHaveCount(0);
      await expect(page.locator(ui.composer)).toHaveText('@herdr');
      fixture.appPicker = null;
      await page.keyboard.type(' @herdr');
      await expect(page.locator(ui.option('herdr'))).toBeVisible();
      expect(pickerAsks(fixture)).toBe(2);
      await context.close();
    });
  }

  test('replyWith still decides the words; the turn with Herdr is recorded; Retry answers with the turn\'s Apps', async () => {
    const { context, fixture, page } = await openApps(browser, { layout: 'section' });
    fixture.replyWith = (text) => `echo ${text}`;
    await sendHumanWithApp(page, fixture, 'with tools');
    await expect(page.locator(fixture.ui.finished).last()).toHaveText('echo @Herdr with tools');
    expect(fixture.toolTurns.map((t) => t.text)).toEqual(['@Herdr with tools']);
    fixture.replyWith = null;
    fixture.failNext = true;
    await sendHumanWithApp(page, fixture, 'fails first');
    await page.getByRole('button', { name: fixture.ui.labels.retry }).click();
    await expect(page.locator(fixture.ui.finished).last()).toHaveText(HERDR_TOOL_REPLY);
    expect(fixture.toolTurns).toHaveLength(2);
    await context.close();
  });

  for (const [layout, csp] of LAYOUTS.flatMap((l) => CSP_VARIANTS.map((c) => [l, c]))) {
    test(`${layout}, CSP ${csp}: Project drafts saved on input (a half-typed @herd too), restored on load, cleared by a submit; none on other pages`, async () => {
      const { context, fixture, page } = await openApps(browser, { csp, layout }, chatgptUrl.projectConversation(PROJECT_HEX, CONVERSATION));
      const { ui } = fixture;
      await page.locator(ui.composer).click();
      await page.keyboard.type('@herd');
      await expect(page.locator(ui.option('herdr'))).toBeVisible();
      await expect.poll(() => fixture.draftOf(PROJECT_ID, CONVERSATION), 'the half-typed mention is saved').toBe('@herd');
      await page.reload();
      await expect(page.locator(ui.composer), 'the draft is back after a reload').toHaveText('@herd');
      await expect(page.locator(ui.send)).toBeEnabled();
      // Cleaning up with the keyboard removes the server's draft too.
      await clearComposer(page, fixture);
      await expect.poll(() => fixture.drafts.size).toBe(0);
      // A submit clears it at once (no stale save overtakes it).
      await sendHumanWithApp(page, fixture, 'go on');
      await expect(page.locator(ui.finished).last()).toHaveText(HERDR_TOOL_REPLY);
      await page.waitForTimeout(DRAFT_DEBOUNCE_MS * 2);
      expect(fixture.drafts.size).toBe(0);
      await page.reload();
      await expect(page.locator(ui.composer)).toHaveText('');

      // A Project home's first message with the App: recorded with it, then the new chat.
      await page.goto(chatgptUrl.projectHome(PROJECT_HEX));
      await page.locator(ui.composer).click();
      await page.keyboard.type('draft on the home');
      await expect.poll(() => fixture.draftOf(PROJECT_ID)).toBe('draft on the home');
      await clearComposer(page, fixture);
      const seed = await sendHumanWithApp(page, fixture, 'start with the app');
      expect(seed).toMatchObject({ projectId: PROJECT_ID, text: '@Herdr start with the app', apps: [HERDR] });
      await expect(page).toHaveURL(NEW_CHAT_URL);
      await expect(page.locator(ui.userTurn).last().locator(ui.pill)).toHaveCount(1);
      await page.reload();
      await expect(page.locator(ui.userTurn).last().locator(ui.pill)).toHaveCount(1);
      expect(fixture.drafts.size).toBe(0);

      // A plain conversation keeps no draft.
      await page.goto(chatgptUrl.conversation(CONVERSATION));
      await page.locator(ui.composer).click();
      await page.keyboard.type('not saved');
      await page.waitForTimeout(DRAFT_DEBOUNCE_MS * 2);
      expect(fixture.requests.get(BACKEND_DRAFTS) ?? 0, 'saves came from the Project pages only').toBeGreaterThan(0);
      const saves = fixture.requests.get(BACKEND_DRAFTS);
      await page.reload();
      await expect(page.locator(ui.composer)).toHaveText('');
      expect(fixture.requests.get(BACKEND_DRAFTS)).toBe(saves);
      expect(fixture.drafts.size).toBe(0);
      expect(await securityPolicyViolations(page)).toEqual([]);
      await context.close();
    });
  }
});

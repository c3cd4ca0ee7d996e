// The ChatGPT fixture itself (no extension): every route serves the documented page shape
// under both CSP variants, the strict variant really enforces its CSP, and the in-page fake
// server records a submitted message. If these fail, the extension tests cannot be trusted.
import { chromium } from '@playwright/test';
import { test, expect } from '../lib/test.mjs';
import { ChatGptFixture, CSP_VARIANTS, SEED_FAILED_TEXT, SEND_TIMEOUT_TEXT, chatgptUrl, submittedMessages } from '../fixtures/chatgpt.mjs';
import { recordSecurityPolicyViolations, securityPolicyViolations } from '../lib/csp-recorder.mjs';
import { CHROMIUM_BIN } from '../lib/paths.mjs';

const PROJECT_HEX = '0123456789abcdef0123456789abcdef';
const CONVERSATION = '6a1f3e2b-1c2d-4e5f-8a9b-0c1d2e3f4a5b';

for (const csp of CSP_VARIANTS) {
  test.describe(`ChatGPT fixture, CSP ${csp}`, () => {
    let browser;
    let context;
    let fixture;
    test.beforeEach(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM_BIN, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
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
      await browser?.close();
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
      await expect(page.locator('[data-message-author-role="assistant"]').last()).toHaveText('Noted.');
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
const PROJECT_ID = `g-p-${PROJECT_HEX}`;
const NEW_CHAT_URL = new RegExp(`/g/${PROJECT_ID}-demo/c/[0-9a-f-]{36}$`);

for (const csp of CSP_VARIANTS) {
  test.describe(`ChatGPT fixture, a Project's new chat, CSP ${csp}`, () => {
    let browser;
    let fixture;
    let page;
    /** The Project home with one earlier conversation in its list. */
    test.beforeEach(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM_BIN, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
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
      await browser?.close();
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
      await expect(page.locator(fixture.ui.finished).last()).toHaveText('Noted.');
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
        await expect(tab.locator(other.ui.finished), layout).toHaveText(['Noted.']);
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
      await expect(page.locator(fixture.ui.finished).last()).toHaveText('Noted.');
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
      await expect(page.locator(fixture.ui.finished).last()).toHaveText('Noted.');
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
    });

    test('seed_no_conversation: accepted and answered, but the URL never moves and the list does not grow', async () => {
      fixture.seedFault = 'seed_no_conversation';
      await send('Seed without a conversation');
      await expect(page.locator(fixture.ui.finished).last()).toHaveText('Noted.');
      expect(new URL(page.url()).pathname).toBe(`/g/${PROJECT_ID}-demo/project`);
      await expect(listed()).toHaveText(['Earlier work']);
      expect(fixture.server.map((m) => m.text), 'the server took it').toEqual(['Seed without a conversation']);
      const hidden = fixture.server[0].conversationId;
      expect(fixture.projectConversationsOf(PROJECT_ID).map((c) => c.id)).not.toContain(hidden);
    });
  });
}

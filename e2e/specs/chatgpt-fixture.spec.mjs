// The ChatGPT fixture itself (no extension): every route serves the documented page shape
// under both CSP variants, the strict variant really enforces its CSP, and the in-page fake
// server records a submitted message. If these fail, the extension tests cannot be trusted.
import { chromium } from '@playwright/test';
import { test, expect } from '../lib/test.mjs';
import { ChatGptFixture, CSP_VARIANTS, SEND_TIMEOUT_TEXT, chatgptUrl, submittedMessages } from '../fixtures/chatgpt.mjs';
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

// The ChatGPT fixture itself (no extension): every route serves the documented page shape
// under both CSP variants, the strict variant really enforces its CSP, and the in-page fake
// server records a submitted message. If these fail, the extension tests cannot be trusted.
import { chromium } from '@playwright/test';
import { test, expect } from '../lib/test.mjs';
import { ChatGptFixture, CSP_VARIANTS, chatgptUrl, submittedMessages } from '../fixtures/chatgpt.mjs';
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
  });
}

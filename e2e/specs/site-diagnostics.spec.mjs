// "What the extension sees" end to end (issue 9): the worker sends the page the site
// profile ext-core has for chatgpt.com, the real content script detects the classic
// layout of the ChatGPT fixture and reports page_diagnostics, the worker validates and
// keeps them, and the side panel shows them for the tab — generation, each fact with its
// probe or "none", the CSP as observed — and copies the same as text.
import { test, expect } from '../lib/test.mjs';
import { CHATS, continuityWorld, tabIdOf } from '../lib/continuity.mjs';
import { HudProbe } from '../lib/hud.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';

test.use({ sandboxOptions: { autostart: false } });

test('the side panel shows the generation, every fact and the CSP the content script observed, and copies them', async ({ sandbox }) => {
  const { context, worker } = await continuityWorld(sandbox);
  const chat = CHATS.find((c) => !c.project);
  const page = await context.newPage();
  await page.goto(chat.url);
  await new HudProbe(page).expectCompanionConnected();
  await expect(page.locator('herdr-continuity-hud')).toHaveAttribute('data-generation', 'chatgpt.classic');

  const tabId = await tabIdOf(worker, page.url());
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${tabId}`);
  const sees = panel.locator('[data-diagnostics]');
  await expect(sees.locator('[data-generation]')).toHaveAttribute('data-generation', 'chatgpt.classic', { timeout: 15_000 });
  await expect(sees.locator('[data-fact="composer"]')).toHaveAttribute('data-selector', '#prompt-textarea');
  await expect(sees.locator('[data-fact="send"]')).toHaveAttribute('data-selector', 'button[data-testid="send-button"]');
  await expect(sees.locator('[data-fact="stop"]'), 'idle: no Stop').toHaveAttribute('data-selector', '');
  await expect(sees.locator('[data-fact="stop"]')).toHaveText('stop: none');
  await expect(sees.locator('[data-fact]')).toHaveCount(16);
  await expect(sees.locator('[data-csp-meta]')).toHaveAttribute('data-csp-meta', 'false');

  // Extension pages are opaque origins to Playwright's permission API, so the clipboard
  // is observed at its entry point instead of read back.
  await panel.evaluate(() => {
    navigator.clipboard.writeText = async (text) => { window.__copied = text; };
  });
  await sees.locator('button[data-copy-diagnostics]').click();
  await expect(sees.locator('[data-copy-status]')).toHaveText(/no page content/);
  const copied = await panel.evaluate(() => window.__copied);
  expect(copied).toContain('generation: chatgpt.classic');
  expect(copied).toContain('fact composer: #prompt-textarea');
  expect(copied).toContain('fact stop: none');
  expect(copied, 'no page content').not.toContain('Dispatching to workspace api.');
});

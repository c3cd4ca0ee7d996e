// "What the extension sees" end to end (issue 9): the worker sends the page the site
// profile ext-core has for chatgpt.com, the real content script detects the classic
// layout of the ChatGPT fixture and reports page_diagnostics, the worker validates and
// keeps them, and the side panel shows them for the tab — generation, each fact with its
// probe or "none", the CSP as observed — and copies the same as text.
import { test, expect } from '../lib/test.mjs';
import { CHATS, continuityWorld, startSeededHerdr, tabIdOf } from '../lib/continuity.mjs';
import { SNIPPET_DIR } from '../lib/adapter-harness.mjs';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { HudProbe, hudRoot } from '../lib/hud.mjs';
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
  // The send chain starts with the label probe every ChatGPT generation has (the flat
  // profile walks the newest generation first): on classic it finds the same button.
  await expect(sees.locator('[data-fact="send"]')).toHaveAttribute('data-selector', 'button[aria-label] label=send');
  await expect(sees.locator('[data-fact="stop"]'), 'idle: no Stop').toHaveAttribute('data-selector', '');
  await expect(sees.locator('[data-fact="stop"]')).toHaveText('stop: none');
  await expect(sees.locator('[data-fact]')).toHaveCount(16);
  // A page of a known generation, unchanged: its first probes serve it, no fallback warning.
  await expect(sees.locator('[data-fact="composer"]')).toHaveAttribute('data-fallback', 'false');
  await expect(sees.locator('[data-fallback="true"]')).toHaveCount(0);
  await expect(sees.locator('[data-missing]')).toHaveCount(0);
  await expect(sees.locator('[data-csp-meta]')).toHaveAttribute('data-csp-meta', 'false');

  // Extension pages are opaque origins to Playwright's permission API, so the clipboard
  // is observed at its entry point instead of read back.
  await panel.evaluate(() => {
    navigator.clipboard.writeText = async (text) => { window.__copied = text; };
  });
  // The diagnostics are folded away (they open by themselves only on a problem).
  if ((await sees.locator('details').getAttribute('open')) === null) await sees.locator('summary').click();
  await sees.locator('button[data-copy-diagnostics]').click();
  await expect(sees.locator('[data-copy-status]')).toHaveText(/no page content/);
  const copied = await panel.evaluate(() => window.__copied);
  expect(copied).toContain('generation: chatgpt.classic');
  expect(copied).toContain('fact composer: #prompt-textarea');
  expect(copied).toContain('fact stop: none');
  expect(copied, 'no page content').not.toContain('Dispatching to workspace api.');
});

test('a chatgpt.com page whose markup matches no layout: the side panel says so and the adapter types nothing', async ({ sandbox }) => {
  await startSeededHerdr(sandbox);
  await sandbox.installHost();
  await sandbox.startRuntime();
  const { context, worker } = await sandbox.launchBrowser();
  const unknown = readFileSync(path.join(SNIPPET_DIR, 'chatgpt-unknown.html'), 'utf8');
  await context.route('https://chatgpt.com/**', (route) => route.fulfill({
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    body: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ChatGPT</title></head><body>${unknown}</body></html>`,
  }));
  const page = await context.newPage();
  await page.goto('https://chatgpt.com/c/7d3e2a10-5b6c-4d7e-8f90-a1b2c3d4e5f6');
  await new HudProbe(page).expectCompanionConnected();
  await expect(page.locator('herdr-continuity-hud')).toHaveAttribute('data-generation', '');
  // The HUD says so too (issue 9 acceptance 2): the worker's view has no layout, the pill warns.
  const hud = hudRoot(page);
  await expect(hud.locator('[data-hud-state]')).toHaveAttribute('data-layout', '');
  await expect(hud.locator('[data-hud-state]')).toHaveAttribute('data-summary-tone', 'warning');
  await hud.locator('button[data-hud-toggle]').click();
  // The composer is the fact that does not resolve: the line names it.
  await expect(hud.locator('[data-line="layout"]')).toHaveAttribute('data-key', 'hudFactUnresolved');
  await expect(hud.locator('[data-line="layout"]')).toHaveAttribute('data-fact', 'composer');
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${await tabIdOf(worker, page.url())}`);
  const sees = panel.locator('[data-diagnostics]');
  await expect(sees.locator('[data-generation]')).toHaveAttribute('data-generation', '', { timeout: 15_000 });
  await expect(sees.locator('[data-generation]')).toHaveText(/no composer found/);
  await expect(sees.locator('[data-fact="composer"]')).toHaveAttribute('data-selector', '');
  expect(await page.locator('#mobile-composer-prompt').inputValue()).toBe('');
});

// Fallbacks counted and probes that help a fix (issue 25, acceptance 3), end to end: the
// real content script on the ChatGPT fixture reports per fact which entry of its fallback
// chain won and how often (`page_diagnostics.usage`), and for a needed fact it cannot find
// the structure of the region where it looked (`missing`: tag names, roles, data-*
// attribute names, counts). The side panel shows a fact served by a fallback as a warning
// with its count, lists the missing facts' structure, and "Copy diagnostics" carries both —
// names and counts only: page text and attribute values never leave the page.
import { test, expect } from '../lib/test.mjs';
import { CHATS, CONVERSATION, continuityWorld, startSeededHerdr, tabIdOf } from '../lib/continuity.mjs';
import { SNIPPET_DIR } from '../lib/adapter-harness.mjs';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { HudProbe } from '../lib/hud.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';

test.use({ sandboxOptions: { autostart: false } });

// Words that are on the page and must never be in what the extension reports.
const SECRET_TEXT = 'zebra-quartz-7719 my private plan';
const SECRET_VALUE = 'value-secret-5521';

/** Opens the side panel of `page`'s tab; the clipboard is observed at its entry point. */
async function openPanel(context, worker, page) {
  const panel = await context.newPage();
  await panel.goto(`${EXTENSION_ORIGIN}sidepanel.html?tab=${await tabIdOf(worker, page.url())}`);
  await panel.evaluate(() => {
    // Extension pages are opaque origins to Playwright's permission API.
    navigator.clipboard.writeText = async (text) => { window.__copied = text; };
  });
  return panel;
}

async function copyDiagnostics(panel) {
  const sees = panel.locator('[data-diagnostics]');
  // The diagnostics are folded away (they open by themselves only on a problem).
  if ((await sees.locator('details').getAttribute('open')) === null) await sees.locator('summary').click();
  await sees.locator('button[data-copy-diagnostics]').click();
  await expect(sees.locator('[data-copy-status]')).toHaveText(/.+/);
  const copied = await panel.evaluate(() => window.__copied);
  expect(copied, 'something was copied').toEqual(expect.any(String));
  const json = JSON.parse(copied.split('\n').find((line) => line.startsWith('json: ')).slice('json: '.length));
  return { copied, json };
}

for (const uiLang of ['en', 'zh-CN']) {
  test(`a fact served by a fallback probe is a warning with its count in the side panel and in copied diagnostics (${uiLang})`, async ({ sandbox }) => {
    // The classic layout with drifted markup: the composer's form lost
    // data-type="unified-composer", so `root` is found by the chain's later probe `form`.
    const { context, worker, fixture } = await continuityWorld(sandbox, { bareForm: true, uiLang: uiLang === 'en' ? null : uiLang });
    fixture.conversations.get(CONVERSATION).turns.push(
      { role: 'user', text: `Remember ${SECRET_TEXT}.` },
      { role: 'assistant', text: `Noted: ${SECRET_TEXT}.` },
    );
    const chat = CHATS.find((c) => !c.project);
    const page = await context.newPage();
    await page.goto(chat.url);
    await new HudProbe(page).expectCompanionConnected();
    await expect(page.locator('herdr-continuity-hud')).toHaveAttribute('data-generation', 'chatgpt.classic');
    await expect(page.getByText(SECRET_TEXT).first()).toBeVisible();

    const panel = await openPanel(context, worker, page);
    const sees = panel.locator('[data-diagnostics]');
    const root = sees.locator('[data-fact="root"]');
    await expect(root).toHaveAttribute('data-fallback', 'true', { timeout: 15_000 });
    await expect(root).toHaveAttribute('data-tone', 'warn');
    await expect(root).toHaveClass(/tone-warning/);
    const entry = Number(await root.getAttribute('data-entry'));
    expect(entry, 'a later entry of the chain than the first').toBeGreaterThan(0);
    await expect(root).toHaveAttribute('data-selector', 'form');
    const warning = root.locator('[data-fallback-warning]');
    await expect(warning).toBeVisible();
    await expect(warning).toContainText(uiLang === 'en' ? 'fallback' : '后备');
    const first = Number(await root.getAttribute('data-count'));
    expect(first, 'it won at least one recompute').toBeGreaterThan(0);
    await expect(warning).toContainText(String(first));
    // A fact a primary probe serves (the one classic lists first) is no warning.
    const composer = sees.locator('[data-fact="composer"]');
    await expect(composer).toHaveAttribute('data-selector', '#prompt-textarea');
    await expect(composer).toHaveAttribute('data-fallback', 'false');
    await expect(composer.locator('[data-fallback-warning]')).toHaveCount(0);
    await expect(sees.locator('[data-fallback="true"]'), 'only root drifted').toHaveCount(1);

    // "How often since load": every recompute the fallback wins is counted.
    await page.locator('#prompt-textarea').click();
    await page.keyboard.type('a draft the page recomputes on');
    await expect.poll(async () => Number(await root.getAttribute('data-count')), { timeout: 15_000 }).toBeGreaterThan(first);

    const { copied, json } = await copyDiagnostics(panel);
    expect(copied).toMatch(/FALLBACK usage root: entry \d+ \(fallback\), won \d+ recompute/);
    expect(json.usage.root).toMatchObject({ fallback: true, entry });
    expect(json.usage.root.count).toBeGreaterThan(first);
    expect(json.usage.composer).toMatchObject({ fallback: false });
    expect(json.missing, 'every needed fact was found').toEqual({});
    expect(copied, 'no page text').not.toContain('zebra-quartz');
    expect(copied, 'no page text').not.toContain('Dispatching to workspace api.');
    expect(copied, 'not the draft either').not.toContain('a draft the page');
  });
}

test('a missing needed fact shows the structure where the extension looked, names and counts only', async ({ sandbox }) => {
  await startSeededHerdr(sandbox);
  await sandbox.installHost();
  await sandbox.startRuntime();
  const { context, worker } = await sandbox.launchBrowser();
  const unknown = readFileSync(path.join(SNIPPET_DIR, 'chatgpt-unknown.html'), 'utf8');
  // Inside the page's <main>, where a missing composer is looked for.
  const secret = `<div role="log" data-secret-marker="${SECRET_VALUE}"><p data-turn-id="${SECRET_VALUE}">${SECRET_TEXT}</p></div>`;
  const body = unknown.replace('</main>', `${secret}</main>`);
  expect(body).toContain(SECRET_VALUE);
  await context.route('https://chatgpt.com/**', (route) => route.fulfill({
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    body: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ChatGPT</title></head><body>${body}</body></html>`,
  }));
  const page = await context.newPage();
  await page.goto('https://chatgpt.com/c/7d3e2a10-5b6c-4d7e-8f90-a1b2c3d4e5f6');
  await new HudProbe(page).expectCompanionConnected();

  const panel = await openPanel(context, worker, page);
  const sees = panel.locator('[data-diagnostics]');
  const missing = sees.locator('[data-missing-fact="composer"]');
  await expect(missing).toBeVisible({ timeout: 15_000 });
  const elements = Number(await missing.getAttribute('data-elements'));
  expect(elements).toBeGreaterThan(0);
  expect(elements).toBeLessThanOrEqual(200);
  await expect(missing).toContainText('composer');
  await expect(missing).toContainText('data-secret-marker 1');
  await expect(missing).toContainText('log 1');
  await expect(missing).not.toContainText(SECRET_VALUE);
  await expect(missing).not.toContainText('zebra-quartz');

  const { copied, json } = await copyDiagnostics(panel);
  expect(copied).toMatch(/missing composer: \d+ element\(s\) looked at; tags: .*main 1/);
  const summary = json.missing.composer;
  expect(summary.elements).toBe(elements);
  expect(summary.tags.main).toBe(1);
  expect(summary.roles.log).toBe(1);
  expect(summary.data_attrs['data-secret-marker']).toBe(1);
  expect(summary.data_attrs['data-turn-id']).toBe(1);
  for (const map of [summary.tags, summary.roles, summary.data_attrs]) {
    expect(Object.keys(map).length).toBeLessThanOrEqual(16);
    for (const n of Object.values(map)) expect(Number.isInteger(n) && n >= 0).toBe(true);
  }
  expect(copied, 'no page text').not.toContain('zebra-quartz');
  expect(copied, 'no attribute value').not.toContain(SECRET_VALUE);
  expect(await page.locator('#mobile-composer-prompt').inputValue(), 'nothing typed').toBe('');
});

// The content scripts as files by concern (issue 28): loaded in the manifest's order into
// one world, they share one namespace object that no one can reach after they loaded, and
// a second injection into the same world does nothing (one HUD, one port).
import { closeContexts, test, expect } from '../lib/test.mjs';
import { openSnippet, runContentScriptsAgain, serveSnippets, siteProfiles } from '../lib/adapter-harness.mjs';

let browser;
let context;
test.beforeAll(async ({ plainBrowser }) => {
  browser = plainBrowser;
  context = await browser.newContext();
  await serveSnippets(context);
});
test.afterAll(async () => {
  await closeContexts(browser);
});

test('the content scripts run once per world and leave no namespace behind', async () => {
  const page = await openSnippet(context, 'chatgpt-thread.html', siteProfiles().chatgpt);
  const state = () => page.evaluate(() => ({
    ports: window.__herdr.ports.length,
    huds: document.querySelectorAll('herdr-continuity-hud').length,
    namespace: globalThis[Symbol.for('herdr-continuity.content')] ?? null,
  }));
  await expect.poll(() => page.evaluate(() => window.__herdr.last('page_facts') !== null)).toBe(true);
  expect(await state()).toEqual({ ports: 1, huds: 1, namespace: null });

  await runContentScriptsAgain(page);
  expect(await state(), 'a second injection mounts nothing and opens no port').toEqual({ ports: 1, huds: 1, namespace: null });
  await page.close();
});

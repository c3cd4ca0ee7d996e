// The Herdr App rides on every message (issue 24, acceptance 1): the whole extension in
// real Chromium against the ChatGPT fixture.
//
// Trusted typing: the worker types `@<keyword>` through chrome.debugger only after the user
// turned it on on the options page. Chrome does not let an extension request `debugger` at
// run time (chrome_api_permissions.cc marks it kFlagCannotBeOptional; Chromium 156 answers
// `chrome.permissions.request` with "Only permissions specified in the manifest may be
// requested"), so the manifest carries it and the user's consent is the options page's
// switch. The tests turn it on through that page's real button: no browser dialog and no
// shortcut through the worker's context is involved.
import { test, expect } from '../lib/test.mjs';
import { Sandbox } from '../lib/sandbox.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { inContentWorld } from '../lib/shadow.mjs';
import { ChatGptFixture, chatgptUrl } from '../fixtures/chatgpt.mjs';

const CONVERSATION = '3b9f1c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

let sandbox;
test.beforeEach(() => {
  sandbox = new Sandbox();
});
test.afterEach(async () => {
  await sandbox?.dispose();
});

/** The options page's trusted-typing section: its state and its one button. */
async function trustedTypingOptions(context) {
  const options = await context.newPage();
  await options.goto(`${EXTENSION_ORIGIN}options.html`);
  const state = options.locator('#trustedTypingState');
  const toggle = options.locator('#trustedTypingToggle');
  await expect(state).toHaveAttribute('data-state', /^(on|off|not_granted)$/);
  return { options, state, toggle };
}

/** Asks the worker for trusted typing from our content script's world, as content.js does. */
const askWorker = (page, message) => inContentWorld(page, (m) => chrome.runtime.sendMessage(m), message);

test('trusted typing: off until the options page turns it on; then the worker types @herdr with trusted keys into the asking tab only, nothing but a mention or Enter', async () => {
  const { context } = await sandbox.launchBrowser();
  const fixture = new ChatGptFixture({});
  fixture.conversations.set(CONVERSATION, { title: 'Apps', turns: [{ role: 'user', text: 'Hi' }, { role: 'assistant', text: 'Hello.' }] });
  await fixture.install(context);
  const page = await context.newPage();
  await page.goto(chatgptUrl.conversation(CONVERSATION));
  await expect.poll(() => inContentWorld(page, () => typeof chrome.runtime.sendMessage), { message: 'our content script runs' }).toBe('function');
  const composer = page.locator('#prompt-textarea');
  await page.evaluate(() => {
    window.__keys = [];
    document.addEventListener('keydown', (event) => window.__keys.push({ key: event.key, trusted: event.isTrusted }), true);
  });

  const { options, state, toggle } = await trustedTypingOptions(context);
  await expect(state, 'off by default').toHaveAttribute('data-state', 'off');
  await expect(options.locator('#trustedTyping')).toContainText('@herdr');
  await expect(toggle).toBeEnabled();
  await composer.click();
  expect(await askWorker(page, { type: 'trusted_type', text: '@herdr' })).toEqual({ ok: false, error: 'no_permission' });
  expect(await page.evaluate(() => window.__keys), 'nothing was typed without the permission').toEqual([]);

  await toggle.click();
  await expect(state).toHaveAttribute('data-state', 'on');
  await expect(options.locator('#trustedTypingNote')).not.toBeEmpty();
  await composer.click();
  expect(await askWorker(page, { type: 'trusted_type', text: '@herdr' })).toEqual({ ok: true });
  await expect(composer).toHaveText('@herdr');
  const keys = await page.evaluate(() => window.__keys);
  expect(keys.map((k) => k.key).join('')).toBe('@herdr');
  expect(keys.every((k) => k.trusted), 'every key event is trusted').toBe(true);

  // Nothing but an @ mention or Enter is typed.
  for (const bad of [{ text: 'hello' }, { text: '@her dr' }, { text: '@herdr\n' }, { key: 'Backspace' }, { text: '@herdr', key: 'Enter' }, {}]) {
    expect(await askWorker(page, { type: 'trusted_type', ...bad }), JSON.stringify(bad)).toEqual({ ok: false, error: 'bad_request' });
  }
  await expect(composer).toHaveText('@herdr');

  await toggle.click();
  await expect(state).toHaveAttribute('data-state', 'off');
  expect(await askWorker(page, { type: 'trusted_type', text: '@herdr' })).toEqual({ ok: false, error: 'no_permission' });
  await expect(composer).toHaveText('@herdr');
});

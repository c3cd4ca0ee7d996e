// The Herdr App in tests: a human attaching an App with the `@` picker of the ChatGPT
// fixture (Playwright's keyboard is trusted input, so the picker opens as for a person), and
// reading the Apps the fixture's server recorded on a message.
import { expect } from './shadow.mjs';
import { APPS, APP_PICKER, PILL_ANY, appOption, pillSelector } from '../fixtures/chatgpt.mjs';

export { APPS, APP_PICKER, PILL_ANY, appOption, pillSelector };

/** The App the fixture knows by `keyword` (`herdr`, `github`). */
export function appOf(keyword) {
  const app = APPS.find((a) => a.keyword === keyword);
  if (!app) throw new Error(`the ChatGPT fixture has no App ${keyword}; use one of ${APPS.map((a) => a.keyword).join(', ')}`);
  return app;
}

/** The Apps the server recorded on a message (`fixture.server` / `messagesOf` / `backendMessages` entry): [{name, path}]. */
export function appsOf(message) {
  return message?.apps ?? [];
}

/**
 * Puts the App's pill in the composer as a person does: click the composer, type
 * `@<keyword>` with the (trusted) keyboard, wait for the picker's highlighted option, choose
 * it (`pick`: `enter` presses Enter, `click` clicks the option), and check the pill is there.
 */
export async function attachAppLikeHuman(page, fixture, keyword = 'herdr', { pick = 'enter' } = {}) {
  const app = appOf(keyword);
  const composer = page.locator(fixture.ui.composer);
  const pills = composer.locator(fixture.ui.pillOf(app));
  const before = await pills.count();
  await composer.click();
  await page.keyboard.press('End');
  await page.keyboard.type(`@${keyword}`);
  const option = page.locator(appOption(keyword));
  await expect(option, `the @ picker lists ${app.name}`).toBeVisible();
  await expect(option).toHaveAttribute('aria-selected', 'true');
  if (pick === 'click') await option.click();
  else await page.keyboard.press('Enter');
  await expect(page.locator(APP_PICKER), 'choosing closes the picker').toHaveCount(0);
  await expect(pills, `the ${app.name} pill is in the composer`).toHaveCount(before + 1);
}

/**
 * A human message with an App: attaches it (`attachAppLikeHuman`), types `text` after the
 * pill, clicks Send. Unless `wait` is false (e.g. while `fixture.holdSubmit`), waits until
 * the server recorded the message and returns it.
 */
export async function sendHumanWithApp(page, fixture, text, keyword = 'herdr', { pick = 'enter', wait = true } = {}) {
  const recorded = fixture.server.length;
  await attachAppLikeHuman(page, fixture, keyword, { pick });
  await page.keyboard.type(text);
  await page.locator(fixture.ui.send).click();
  if (!wait) return null;
  await expect.poll(() => fixture.server.length, { message: 'the message reaches the fixture server' }).toBeGreaterThan(recorded);
  return fixture.server[recorded];
}

/** Types `text` into the composer by script (execCommand insertText), as an extension without trusted input does. */
export async function insertTextByScript(page, fixture, text) {
  await page.locator(fixture.ui.composer).evaluate((composer, value) => {
    composer.focus();
    const selection = getSelection();
    selection.selectAllChildren(composer);
    selection.collapseToEnd();
    document.execCommand('insertText', false, value);
  }, text);
}

// The in-page HUD stays out of ChatGPT's way (A2, O1): collapsed by default to a one-line
// status pill at the top right, below the header; it expands on click / Enter / Space (a
// real <button aria-expanded>) and Esc collapses it. Neither state ever overlaps the
// composer or the send button, at a common laptop viewport and a small one, so a human
// (and the extension's own delivery) can always press Send.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect } from '../lib/test.mjs';
import { REPO_ROOT } from '../lib/paths.mjs';
import { inShadowRoot } from '../lib/shadow.mjs';
import { CHATS, continuityWorld, openAndBind } from '../lib/continuity.mjs';

const [PROJECT_CHAT] = CHATS;
const EN = JSON.parse(readFileSync(path.join(REPO_ROOT, 'extension', '_locales', 'en', 'messages.json'), 'utf8'));
/** Auto's state → [the panel line's key, the pill part's key] (ext-core hud_pill::auto_keys). */
const AUTO_KEYS = {
  on: ['hudAutoOn', 'pillAutoOn'],
  off: ['hudAutoOff', 'pillAutoOff'],
  not_allowed: ['hudAutoNotAllowed', 'pillAutoNotAllowed'],
};

/** The page-coordinates box of `locator` (it must be rendered). */
async function box(locator, what) {
  const b = await locator.boundingBox();
  expect(b, `${what} is rendered`).not.toBeNull();
  return b;
}

function overlaps(a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

/** The HUD's visible parts (pill, and the panel when expanded) never cover the composer. */
async function expectComposerUncovered(page, hud) {
  const composer = await box(page.locator('form[data-type="unified-composer"]'), 'the composer');
  const send = await box(page.locator('button[data-testid="send-button"]'), 'the send button');
  const parts = [await box(hud.toggle, 'the HUD pill')];
  if ((await hud.toggle.getAttribute('aria-expanded')) === 'true') {
    parts.push(await box(hud.host.locator('section.hud'), 'the HUD panel'));
  }
  for (const part of parts) {
    expect(overlaps(part, composer), `HUD ${JSON.stringify(part)} must not overlap the composer ${JSON.stringify(composer)}`).toBe(false);
    expect(overlaps(part, send), 'HUD must not overlap the send button').toBe(false);
  }
  // The point a user clicks on the send button really hits the send button, not the HUD.
  const hit = await page.evaluate(({ x, y }) => document.elementFromPoint(x, y)?.closest('button')?.dataset.testid ?? null, {
    x: send.x + send.width / 2,
    y: send.y + send.height / 2,
  });
  expect(hit, 'a click at the centre of Send lands on Send').toBe('send-button');
}

test.describe('HUD placement', () => {
  test.use({ sandboxOptions: { autostart: false } });

  for (const viewport of [{ width: 1280, height: 800 }, { width: 820, height: 560 }]) {
    test(`collapsed pill by default, keyboard toggle, never over the composer (${viewport.width}×${viewport.height})`, async ({ sandbox }) => {
      const { context, worker } = await continuityWorld(sandbox);
      const { page, hud } = await openAndBind(context, worker, PROJECT_CHAT);
      await page.setViewportSize(viewport);

      // Collapsed by default: a pill with a one-line summary; the details are hidden.
      await expect(hud.toggle).toBeVisible();
      await expect(hud.toggle).toHaveAttribute('aria-expanded', 'false');
      await expect(hud.toggle, 'the pill names the bound workspace and Auto').toContainText(/api.*Auto/);
      await expect(hud.host.locator('section.hud')).toBeHidden();
      const pill = await box(hud.toggle, 'the HUD pill');
      expect(pill.y, 'top placement, below the header').toBeGreaterThanOrEqual(56);
      expect(pill.y + pill.height, 'the pill is one line').toBeLessThan(110);
      expect(pill.x + pill.width, 'right-aligned').toBeGreaterThan(viewport.width - 40);
      await expectComposerUncovered(page, hud);

      // Enter expands (real button semantics); the action buttons are there and pressable.
      await hud.toggle.focus();
      await page.keyboard.press('Enter');
      await expect(hud.toggle).toHaveAttribute('aria-expanded', 'true');
      await expect(hud.host.locator('[data-hud-state]')).toHaveAttribute('data-expanded', 'true');
      await expect(hud.action('toggle_auto')).toBeVisible();
      await expect(hud.host.locator('[data-line="companion"]')).toBeVisible();
      await expectComposerUncovered(page, hud);
      const panel = await box(hud.host.locator('section.hud'), 'the HUD panel');
      expect(panel.y + panel.height, 'the expanded panel ends inside the viewport').toBeLessThanOrEqual(viewport.height);

      // Esc collapses and gives focus back to the pill; Space expands again.
      await hud.action('toggle_auto').focus();
      await page.keyboard.press('Escape');
      await expect(hud.toggle).toHaveAttribute('aria-expanded', 'false');
      await expect(hud.host.locator('section.hud')).toBeHidden();
      expect(await inShadowRoot(page, 'herdr-continuity-hud', (root) => root.activeElement?.dataset.hudToggle !== undefined)).toBe(true);
      await page.keyboard.press('Space');
      await expect(hud.toggle).toHaveAttribute('aria-expanded', 'true');

      // The expanded HUD stays expanded across view updates (a click that changes state).
      const before = await box(hud.action('toggle_auto'), 'the Auto button');
      await hud.action('toggle_auto').click();
      await hud.expect('data-auto', /^(on|not_allowed)$/);
      await expect(hud.toggle).toHaveAttribute('aria-expanded', 'true');
      // The view changed the lines (Auto's, the withheld reason's): the buttons above them
      // stayed where they were, so a press as a view arrives lands on its button.
      const after = await box(hud.action('toggle_auto'), 'the Auto button');
      expect({ x: after.x, y: after.y }, 'the Auto button did not move').toEqual({ x: before.x, y: before.y });
      // The panel's Auto line and the pill say the same Auto state (ext-core hud_pill
      // auto_keys): on a Project without "allow Project Auto" both say "not allowed".
      const auto = await hud.state.getAttribute('data-auto');
      const [lineKey, pillKey] = AUTO_KEYS[auto];
      await expect(hud.host.locator('p[data-line="auto"]')).toHaveAttribute('data-key', lineKey);
      await expect(hud.host.locator('.summary')).toContainText(EN[pillKey].message);

      // A human can type and press the real Send button with the HUD expanded.
      await page.locator('#prompt-textarea').click();
      await page.keyboard.type('hello from a human');
      await page.locator('button[data-testid="send-button"]').click();
      await expect(page.locator('[data-message-author-role="user"]').last()).toHaveText('hello from a human');
    });
  }
});

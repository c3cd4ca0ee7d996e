// Reads the extension's in-page HUD: host element <herdr-continuity-hud> on
// document.documentElement with a closed shadow root, reached through lib/shadow.mjs
// (reads in the content script's isolated world, real mouse and keyboard input for
// presses: our controls act on trusted events only). Lines are identified by the i18n
// message key the worker chose
// (ext-core/src/hud.rs `HudView`), so the tests do not depend on the wording.
// Hooks relied on (extension/content-hud.js): `p[data-line="companion"|"herdr"][data-key]`,
// `button[data-action]`, `p.status[data-key]` and the host's `data-roundtrip-ms`.
import { ShadowLocator, expect } from './shadow.mjs';

export const HUD_HOST = 'herdr-continuity-hud';
export const QUEUE_HOST = 'herdr-continuity-queue';

/** The HUD's host as a ShadowLocator: `.locator(css)` looks inside its closed root. */
export const hudRoot = (page) => new ShadowLocator(page, HUD_HOST);
/** The Queue button's host, likewise. */
export const queueRoot = (page) => new ShadowLocator(page, QUEUE_HOST);

/** Message keys of a companion that is not connected (ext-core hud.rs `offline_line`). */
/**
 * As a hostile page would: our host's style removed, then a see-through layer over the whole
 * page that lets clicks through (`pointer-events: none`, which `elementFromPoint` skips),
 * `#page-cover`. The HUD must refuse presses while it is there.
 */
export const coverThePage = (page) => page.evaluate((tag) => {
  document.querySelector(tag).removeAttribute('style');
  const cover = document.createElement('div');
  cover.id = 'page-cover';
  cover.style.cssText = 'position:fixed;inset:0;z-index:2147483647;pointer-events:none;background:rgba(255,255,255,0.02)';
  document.documentElement.append(cover);
}, HUD_HOST);

export const COMPANION_OFFLINE_KEYS = [
  'companionExited',
  'companionRuntimeUnreachable',
  'companionNoAnswer',
  'companionPortError',
  'companionConnecting',
];

export class HudProbe {
  constructor(page) {
    this.page = page;
    this.host = hudRoot(page);
    this.companion = this.host.locator('[data-line="companion"]');
    this.herdr = this.host.locator('[data-line="herdr"]');
  }

  action(id) {
    return this.host.locator(`button[data-action="${id}"]`);
  }

  /** Expands the HUD (a collapsed status pill by default) so its buttons can be pressed. */
  async expand() {
    const toggle = this.host.locator('button[data-hud-toggle]');
    await expect(toggle).toBeVisible({ timeout: 15_000 });
    if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
    await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  }

  /**
   * Presses the HUD's round-trip button (worker → host → runtime → worker) and returns the
   * milliseconds the worker measured, once the HUD shows the answer.
   */
  async roundTrip(timeout = 10_000) {
    await this.page.evaluate((hud) => document.querySelector(hud)?.removeAttribute('data-roundtrip-ms'), HUD_HOST);
    await this.expand();
    await this.action('round_trip_test').click();
    await expect(this.host.locator('p.status'), 'HUD round-trip status').toHaveAttribute('data-key', 'roundTripAnswered', { timeout });
    await expect(this.host).toHaveAttribute('data-roundtrip-ms', /^\d+(\.\d+)?$/, { timeout });
    return Number(await this.host.getAttribute('data-roundtrip-ms'));
  }

  async expectCompanionConnected(timeout = 20_000) {
    await expect(this.companion, 'HUD companion line should say connected').toHaveAttribute('data-key', 'companionConnected', { timeout });
  }

  /** Herdr connected, and the protocol number Herdr reported is shown. */
  async expectHerdrConnected(protocol, timeout = 20_000) {
    await expect(this.herdr, 'HUD Herdr line should say connected').toHaveAttribute('data-key', 'herdrConnected', { timeout });
    await expect(this.herdr).toContainText(String(protocol));
  }

  async expectCompanionOffline(timeout = 10_000) {
    const offline = new RegExp(`^(${COMPANION_OFFLINE_KEYS.join('|')})$`);
    await expect(this.companion, 'HUD companion line should say offline').toHaveAttribute('data-key', offline, { timeout });
    await expect(this.herdr).not.toHaveAttribute('data-key', 'herdrConnected', { timeout });
  }

  /** A readable one-line summary of what the HUD shows (for the demo's narration). */
  async describe() {
    const text = async (loc) => ((await loc.count()) ? (await loc.first().innerText()).replace(/\s+/g, ' ').trim() : '(absent)');
    return `companion: ${await text(this.companion)} | herdr: ${await text(this.herdr)}`;
  }
}

// Profile overrides end to end (issue 25 acceptance 2): a ChatGPT page drift the built-in
// profile does not know — the fixture's `renamed` layout, the thread layout with its
// composer, turn and message-id markers renamed — fails closed, and a profile file written
// for it fixes it without a release. That file, e2e/fixtures/profiles/chatgpt-renamed.json,
// is the built-in profile's export (`cargo run -p ext-core --example site_profiles`) with the
// fixture's RENAMED_MARKERS attribute names put in place of the thread layout's, its own
// version and date: what a user does after copying the diagnostics of a drifted page.
// Real everything: Chromium with the built extension, the native host, the companion
// runtime, the Herdr stand-in and the fixture's backend (in this process).
//
// - With the built-in profile the settle's wake is withheld, the HUD names the missing fact
//   (composer) and nothing is typed or sent.
// - On the options page a malformed file and code-bearing files (an unknown field, a
//   selector with `{`) are refused with their first problem, and nothing changes: the
//   built-in profile stays in force and the wake stays held.
// - Importing the file puts it in force (source options, its version) and the held wake
//   goes out exactly once; Export downloads the profile in force, which validates when it
//   is imported again; "Reset to built-in" restores the built-in behaviour (fails closed).
// - The same file dropped into the companion home (`<home>/profiles/chatgpt.json`) is in
//   force with source companion and wakes the renamed page once; a companion file that does
//   not validate is not in force, and the options page names its first problem.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect } from '../lib/test.mjs';
import { CHATS, CONVERSATION, agentCycle, continuityWorld, expectIdleAfterWakes, openAndBind, turnAutoOn } from '../lib/continuity.mjs';
import { countMessages, expectExactlyOne } from '../lib/backend.mjs';
import { EXTENSION_ORIGIN, REPO_ROOT } from '../lib/paths.mjs';

const CHAT = CHATS.find((c) => !c.project);
const WAKES = { conversationId: CONVERSATION, marker: /^wake:/ };
const RENAMED_TEXT = readFileSync(path.join(REPO_ROOT, 'e2e', 'fixtures', 'profiles', 'chatgpt-renamed.json'), 'utf8');
const RENAMED = JSON.parse(RENAMED_TEXT);

/** The options page's Site profiles block of one site, driven as a user does. */
class ProfileRow {
  static async open(context, site = 'chatgpt') {
    const page = await context.newPage();
    await page.goto(`${EXTENSION_ORIGIN}options.html`);
    const row = new ProfileRow(page, site);
    await expect(row.source, 'the options page shows the profile in force').not.toHaveAttribute('data-profile-source', '', { timeout: 15_000 });
    return row;
  }

  constructor(page, site) {
    this.page = page;
    this.block = page.locator(`[data-profile-site="${site}"]`);
    this.source = this.block.locator('[data-profile-source]');
    this.version = this.block.locator('[data-profile-version]');
    this.error = this.block.locator('[data-profile-error][role=alert]');
    this.note = this.block.locator('[data-profile-note]');
  }

  /** Picks `text` as the file `name` in "Import…". */
  async import(name, text) {
    await this.note.evaluate((el) => { el.textContent = ''; });
    await this.block.locator('input[type=file][data-profile-import]').setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(text) });
  }

  /** An import that is refused: the alert names `problem` (a RegExp or substring). */
  async expectRefused(name, text, problem, message) {
    await this.import(name, text);
    await expect(this.error, message).toContainText(`Not imported (${name}): `);
    await expect(this.error, message).toContainText(problem);
    await expect(this.note).toBeEmpty();
  }

  async expectInForce(source, version) {
    await expect(this.source, `profile in force: ${source}`).toHaveAttribute('data-profile-source', source);
    await expect(this.version).toHaveAttribute('data-profile-version', version);
  }
}

/**
 * The HUD holds the wake back because the page's composer is missing (the page reports no
 * composer: withheld `no_composer`) and names the fact; nothing was typed or sent.
 */
async function expectFailsClosed(page, fixture, hud, sent) {
  await hud.expect('data-unresolved', 'composer:missing', 'HUD: the composer does not resolve');
  await hud.expect('data-withheld', 'no_composer', 'HUD: the wake is held back (fail closed)');
  await hud.expand();
  const line = hud.host.locator('p[data-line="layout"]');
  await expect(line).toHaveAttribute('data-key', 'hudFactUnresolved');
  await expect(line, 'the HUD names the missing fact').toHaveAttribute('data-fact', 'composer');
  await expect(line).toHaveAttribute('data-why', 'missing');
  await expect(line).toContainText('“composer”');
  await expect(page.locator(fixture.ui.composer), 'nothing was typed').toHaveText('');
  expect(countMessages(fixture, WAKES), 'nothing more was sent').toBe(sent);
}

test.describe('profile overrides on a ChatGPT layout the built-in profile does not know', () => {
  test.use({ sandboxOptions: { autostart: false } });

  test('fails closed; malformed and code-bearing files are refused with their first problem; the imported file wakes exactly once; Export re-imports; Reset to built-in fails closed again', async ({ sandbox }) => {
    const { context, worker, fixture } = await continuityWorld(sandbox, { layout: 'renamed' });
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await turnAutoOn(context, hud, CHAT);
    const sessionRef = await hud.sessionRef();

    // The built-in profile: the settle's wake is held, the HUD names the composer.
    const first = await agentCycle(sandbox, hud, sessionRef, 'Refactor the API client');
    await expectFailsClosed(page, fixture, hud, 0);

    const options = await ProfileRow.open(context);
    await options.expectInForce('builtin', 'builtin');
    // A malformed file: not JSON.
    await options.expectRefused('broken.json', RENAMED_TEXT.slice(0, 200), 'not JSON', 'a malformed file is refused');
    // Code-bearing files: a field that is no part of a profile, a selector with `{`.
    await options.expectRefused('on-load.json', JSON.stringify({ ...RENAMED, on_load: 'fetch("https://evil.test")' }),
      'unknown field "on_load"', 'an unknown field is refused');
    const styled = structuredClone(RENAMED);
    styled.facts.composer[0].css = 'div{background:url(https://evil.test)}';
    await options.expectRefused('styled.json', JSON.stringify(styled), 'facts.composer[0].css: not a valid selector ("{"', 'a selector with { is refused');
    await options.expectInForce('builtin', 'builtin');
    await hud.expect('data-withheld', 'no_composer', 'nothing changed: still held');
    await hud.expect('data-unresolved', 'composer:missing');
    expect(countMessages(fixture, WAKES), 'nothing was sent meanwhile').toBe(0);

    // The file written for the renamed page: in force, and the held wake goes out once.
    await options.import('chatgpt-renamed.json', RENAMED_TEXT);
    await expect(options.note).toContainText(`version ${RENAMED.version}`);
    await expect(options.error).toBeEmpty();
    await options.expectInForce('options', RENAMED.version);
    await hud.expect('data-unresolved', '', 'the open page reads with the imported profile: every needed fact resolves');
    const wake = await expectExactlyOne(fixture, WAKES, {
      message: 'the imported profile lets the held wake go, exactly once',
      checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1),
    });
    expect(wake.text, 'the wake carries the finished task').toContain(first.task_id);
    await expect(page.locator(fixture.ui.userTurn).last()).toContainText('[herdr-continuity wake:w1#');
    await expect(page.locator(fixture.ui.composer), 'nothing left in the composer').toHaveText('');

    // Export saves the profile in force; imported again it validates and stays in force.
    const [download] = await Promise.all([options.page.waitForEvent('download'), options.block.locator('button[data-profile-export]').click()]);
    expect(download.suggestedFilename()).toBe('chatgpt-profile.json');
    const exported = readFileSync(await download.path(), 'utf8');
    expect(JSON.parse(exported)).toMatchObject({ schema: 1, site: 'chatgpt', version: RENAMED.version, date: RENAMED.date });
    await options.import('chatgpt-profile.json', exported);
    await expect(options.note).toContainText(`version ${RENAMED.version}`);
    await expect(options.error).toBeEmpty();
    await options.expectInForce('options', RENAMED.version);

    // Reset to built-in: one click; the next wake is held again, nothing typed.
    await options.block.locator('button[data-profile-reset]').click();
    await options.expectInForce('builtin', 'builtin');
    await agentCycle(sandbox, hud, sessionRef, 'Migrate the schema');
    await expectFailsClosed(page, fixture, hud, 1);
    expect(fixture.server, 'only the one wake reached the backend').toHaveLength(1);
  });

  test('a profile file in the companion home is in force (source companion) and wakes the renamed layout exactly once; one that does not validate is not, and the options page says why', async ({ sandbox }) => {
    const profiles = path.join(sandbox.home, 'profiles');
    mkdirSync(profiles, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(profiles, 'chatgpt.json'), RENAMED_TEXT, { mode: 0o600 });
    // A companion file that does not validate is not in force; the options page names why.
    writeFileSync(path.join(profiles, 'zai.json'), JSON.stringify({ schema: 1, site: 'zai', on_load: 'alert(1)' }), { mode: 0o600 });
    const { context, worker, fixture } = await continuityWorld(sandbox, { layout: 'renamed' });
    const { page, hud } = await openAndBind(context, worker, CHAT);
    await turnAutoOn(context, hud, CHAT);
    const sessionRef = await hud.sessionRef();

    const options = await ProfileRow.open(context);
    await options.expectInForce('companion', RENAMED.version);
    await expect(options.block.locator('[data-profile-hint]')).toContainText('profiles/chatgpt.json');
    const zai = new ProfileRow(options.page, 'zai');
    await zai.expectInForce('builtin', 'builtin');
    await expect(zai.block.locator('[data-profile-problem]')).toContainText('companion: unknown field "on_load"');

    const task = await agentCycle(sandbox, hud, sessionRef, 'Refactor the API client');
    const wake = await expectExactlyOne(fixture, WAKES, {
      message: 'the companion file lets the wake go, exactly once',
      checkpoint: () => expectIdleAfterWakes(page, fixture, hud, 1),
    });
    expect(wake.text).toContain(task.task_id);
    expect(fixture.server).toHaveLength(1);
  });
});

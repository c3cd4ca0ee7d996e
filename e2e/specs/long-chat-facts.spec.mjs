// A long chat reads as a short one (docs/PROTOCOL.md "Site profiles and page diagnostics":
// scope `doc` is the live page, the turn list's last 12 units and everything outside it).
// The real content scripts on the ChatGPT streaming and attention snippets of every layout,
// once with one older turn in front (the turn list is known, and short) and once with 40:
// every page fact, recovery fact and diagnostics fact is the same, except the user turns
// counted (the `user` fact reads the whole thread). The composer chain also reads the whole
// document: a second composer match in an old turn (an inline editor on an old message)
// still makes the page "composer ambiguous", and nothing is typed.
import { chromium } from '@playwright/test';
import { test, expect } from '../lib/test.mjs';
import { CHROMIUM_BIN } from '../lib/paths.mjs';
import { lastPosted, runAdapter, sendToPage, serveSnippets, siteProfiles, SNIPPET_ORIGIN } from '../lib/adapter-harness.mjs';

const PROFILES = siteProfiles();
const TURN = 'article[data-testid^="conversation-turn-"], section[data-testid^="conversation-turn-"], [data-turn-key]';

let browser;
let context;
test.beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM_BIN, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  context = await browser.newContext();
  await serveSnippets(context);
});
test.afterAll(async () => browser?.close());

// The snippet with `older` copies of its first turn (its own wrapper when it has one) put
// in front of it, then the adapter's facts once they have settled.
async function factsWith(file, older) {
  const page = await context.newPage();
  await page.goto(`${SNIPPET_ORIGIN}/${file}`);
  const turns = await page.evaluate(({ css, older }) => {
    const first = document.querySelector(css);
    const unit = first.parentElement.querySelectorAll(css).length === 1 && first.parentElement.children.length === 1 ? first.parentElement : first;
    for (let i = 0; i < older; i++) unit.before(unit.cloneNode(true));
    return document.querySelectorAll(css).length;
  }, { css: TURN, older });
  await runAdapter(page, PROFILES.chatgpt);
  await expect.poll(() => lastPosted(page, 'page_diagnostics'), { timeout: 10_000 }).not.toBeNull();
  const facts = await lastPosted(page, 'page_facts');
  const recovery = await lastPosted(page, 'recovery_facts');
  const diagnostics = await lastPosted(page, 'page_diagnostics');
  await page.close();
  return { turns, facts, recovery, diagnostics };
}

for (const layout of ['classic', 'section', 'thread']) {
  for (const state of ['streaming', 'attention']) {
    test(`${layout} ${state}: 40 older turns change no fact but the user turns counted`, async () => {
      const file = `chatgpt-${layout}-${state}.html`;
      const short = await factsWith(file, 1);
      const long = await factsWith(file, 40);
      expect(long.turns - short.turns, 'the long page holds 39 more turns').toBe(39);
      expect(short.facts.unresolved).toBeNull();
      expect(short.facts.generation).toBe(`chatgpt.${layout}`);
      const users = (f) => f.user_turns;
      expect(users(long.facts)).toBeGreaterThan(users(short.facts));
      const same = (f) => ({ ...f, user_turns: null, page_load: null });
      expect(same(long.facts)).toEqual(same(short.facts));
      expect({ ...long.recovery, page_load: null }).toEqual({ ...short.recovery, page_load: null });
      expect(long.diagnostics.facts).toEqual(short.diagnostics.facts);
      expect(long.diagnostics.matching).toEqual(short.diagnostics.matching);
    });
  }
}

// A copy of the composer (its form, when it has one) put into the oldest of 40 older turns,
// far outside the live page's last 12 units: the composer chain finds two, the page is
// `unresolved: composer` (ambiguous), and a delivery types nothing.
for (const layout of ['classic', 'section', 'thread']) {
  test(`${layout}: a composer match in a turn 40 units back still makes the composer ambiguous; nothing is typed`, async () => {
    const page = await context.newPage();
    await page.goto(`${SNIPPET_ORIGIN}/chatgpt-${layout}.html`);
    const chain = PROFILES.chatgpt.facts.composer.filter((probe) => probe.scope === 'doc').map((probe) => probe.css);
    const placed = await page.evaluate(({ css, chain, older }) => {
      const first = document.querySelector(css);
      const unit = first.parentElement.querySelectorAll(css).length === 1 && first.parentElement.children.length === 1 ? first.parentElement : first;
      for (let i = 0; i < older; i++) unit.before(unit.cloneNode(true));
      const composer = chain.map((c) => document.querySelector(c)).find(Boolean);
      const oldest = unit.parentElement.firstElementChild;
      oldest.append((composer.closest('form') ?? composer).cloneNode(true));
      const units = [...oldest.parentElement.children];
      return { back: units.length - 1 - units.indexOf(oldest), matches: chain.map((c) => document.querySelectorAll(c).length) };
    }, { css: TURN, chain, older: 40 });
    expect(placed.back, 'the copy sits far outside the last 12 units').toBeGreaterThan(12);
    expect(placed.matches.some((n) => n === 2), 'a probe of the chain matches both').toBe(true);
    await runAdapter(page, PROFILES.chatgpt);
    await expect.poll(() => lastPosted(page, 'page_facts'), { timeout: 10_000 }).not.toBeNull();
    const facts = await lastPosted(page, 'page_facts');
    expect({ unresolved: facts.unresolved, why: facts.unresolved_why }).toEqual({ unresolved: 'composer', why: 'ambiguous' });
    const before = await page.evaluate(() => document.body.textContent);
    await sendToPage(page, { type: 'deliver', id: 'wake:w1#1', text: 'hello\n[herdr-continuity wake:w1#1]' });
    await expect.poll(() => lastPosted(page, 'delivery_report'), { timeout: 10_000 })
      .toEqual({ type: 'delivery_report', id: 'wake:w1#1', outcome: 'not_submitted', reason: 'fact_unresolved' });
    expect(await page.evaluate(() => document.body.textContent), 'nothing was typed').toBe(before);
    await page.close();
  });
}

// The user turns of a long chat as it grows and shrinks (content-probes.js `threadFind`):
// the matches in the turn list's settled units are kept and only the newest units are looked
// at again, so every user turn appended counts, also one whose unit came first and its user
// message later (a unit rendered in two steps); a list whose first units went (virtualised
// from its top) is counted whole again. `user_turns` is held to the page's own count through
// the profile's user chain (its first probe that matches, as the adapter reads it).
for (const layout of ['classic', 'section', 'thread']) {
  test(`${layout}: a long chat's user turns counted as units come at its end and go at its top`, async () => {
    const page = await context.newPage();
    await page.goto(`${SNIPPET_ORIGIN}/chatgpt-${layout}.html`);
    const chain = PROFILES.chatgpt.facts.user.map((probe) => probe.css);
    const units = await page.evaluate(({ css, chain, older }) => {
      const first = document.querySelector(css);
      const unit = first.parentElement.querySelectorAll(css).length === 1 && first.parentElement.children.length === 1 ? first.parentElement : first;
      for (let i = 0; i < older; i++) unit.before(unit.cloneNode(true));
      const list = unit.parentElement;
      const userUnit = [...list.children].find((u) => chain.some((c) => u.matches(c) || u.querySelector(c)));
      window.__longChat = { list, userUnit: userUnit.cloneNode(true), chain };
      return list.children.length;
    }, { css: TURN, chain, older: 40 });
    expect(units, 'more units than the live tail').toBeGreaterThan(13);
    const expected = () => page.evaluate(() => {
      const { chain } = window.__longChat;
      return chain.map((c) => document.querySelectorAll(c).length).find((n) => n > 0) ?? 0;
    });
    const counted = async () => (await lastPosted(page, 'page_facts'))?.user_turns ?? null;
    await runAdapter(page, PROFILES.chatgpt);
    await expect.poll(counted, { timeout: 10_000 }).toBe(await expected());
    const before = await expected();
    // Two user units at the end, one after the other.
    for (let i = 1; i <= 2; i++) {
      await page.evaluate(() => window.__longChat.list.append(window.__longChat.userUnit.cloneNode(true)));
      await expect.poll(counted, { timeout: 10_000 }).toBe(before + i);
    }
    // A unit that comes empty and gets its user message after a recompute has seen it (the
    // HUD host's recompute counter, written when asked: content-facts.js).
    const recomputes = () => page.evaluate(() => {
      const host = document.querySelector('herdr-continuity-hud');
      host.dispatchEvent(new Event('herdr-continuity:counters'));
      return Number(host.dataset.factsComputed);
    });
    const seen = await recomputes();
    await page.evaluate(() => {
      const { list, userUnit } = window.__longChat;
      window.__longChat.shell = list.appendChild(userUnit.cloneNode(false));
    });
    await expect.poll(recomputes, { timeout: 10_000 }).toBeGreaterThan(seen);
    await page.evaluate(() => {
      const { shell, userUnit } = window.__longChat;
      for (const child of userUnit.children) shell.append(child.cloneNode(true));
    });
    await expect.poll(counted, { timeout: 10_000 }).toBe(await expected());
    expect(await expected(), 'the shell holds a user message now').toBe(before + 3);
    // The five oldest units go (the list virtualised from its top): counted whole again.
    await page.evaluate(() => { for (let i = 0; i < 5; i++) window.__longChat.list.firstElementChild.remove(); });
    const after = await expected();
    expect(after, 'old user turns went with them').toBeLessThan(before + 3);
    await expect.poll(counted, { timeout: 10_000 }).toBe(after);
    await page.close();
  });
}

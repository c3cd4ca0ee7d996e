// A long chat reads as a short one (docs/PROTOCOL.md "Site profiles and page diagnostics":
// scope `doc` is the live page, the turn list's last 12 units and everything outside it).
// The real content scripts on the ChatGPT streaming and attention snippets of every layout,
// once with one older turn in front (the turn list is known, and short) and once with 40:
// every page fact, recovery fact and diagnostics fact is the same, except the user turns
// counted (the `user` fact reads the whole thread).
import { chromium } from '@playwright/test';
import { test, expect } from '../lib/test.mjs';
import { CHROMIUM_BIN } from '../lib/paths.mjs';
import { lastPosted, runAdapter, serveSnippets, siteProfiles, SNIPPET_ORIGIN } from '../lib/adapter-harness.mjs';

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

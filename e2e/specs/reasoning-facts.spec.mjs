// recovery_facts.reasoning (PROTOCOL.md "Recovery"): the real content script on the ChatGPT
// streaming snippet. Only a short assistant turn whose whole text is a thinking placeholder,
// with no user turn waiting after it, is "reasoning" (the 30-minute stall allowance); an
// earlier reply that merely mentions thinking, with a user turn waiting and Stop shown, is
// a stall candidate (reasoning false).
import { closeContexts, test, expect } from '../lib/test.mjs';
import { lastPosted, runAdapter, serveSnippets, siteProfiles, SNIPPET_ORIGIN } from '../lib/adapter-harness.mjs';

const PROFILES = siteProfiles();

let browser;
let context;
test.beforeAll(async ({ plainBrowser }) => {
  browser = plainBrowser;
  context = await browser.newContext();
  await serveSnippets(context);
});
test.afterAll(() => closeContexts(browser));

// Opens the streaming snippet, sets the assistant turn's text and (optionally) appends a
// user turn after it, then runs the adapter and returns its recovery_facts.
async function factsFor(assistantText, { userWaits }) {
  const page = await context.newPage();
  await page.goto(`${SNIPPET_ORIGIN}/chatgpt-thread-streaming.html`);
  await page.evaluate(({ assistantText, userWaits }) => {
    document.querySelector('[data-markdown-text-style="assistant-message"]').textContent = assistantText;
    if (userWaits) {
      const turn = document.createElement('div');
      turn.dataset.turnKey = 't6';
      turn.innerHTML = '<div data-chatgpt-search-unit-key="conv:10:user" data-chatgpt-search-message-ids="t-user-6">'
        + '<div data-user-message-bubble data-chatgpt-selection-message-id="t-user-6"><div class="whitespace-pre-wrap">Build a CLI</div></div></div>';
      document.querySelector('[data-content-search-root]').append(turn);
    }
  }, { assistantText, userWaits });
  await runAdapter(page, PROFILES.chatgpt);
  await expect.poll(() => lastPosted(page, 'recovery_facts')).not.toBeNull();
  const facts = await lastPosted(page, 'recovery_facts');
  await page.close();
  return facts;
}

test('a thinking placeholder while Stop is shown is reasoning', async () => {
  const facts = await factsFor('Thinking…', { userWaits: false });
  expect(facts.user_waiting).toBe(false);
  expect(facts.reasoning).toBe(true);
});

test('an earlier short reply that mentions thinking, with a user turn waiting and Stop shown, is not reasoning', async () => {
  const facts = await factsFor('What are you thinking of building?', { userWaits: true });
  expect(facts.user_waiting).toBe(true);
  expect(facts.reasoning).toBe(false);
});

test('a placeholder label with a user turn waiting after it is not reasoning', async () => {
  const facts = await factsFor('Thinking', { userWaits: true });
  expect(facts.reasoning).toBe(false);
});

test('a short reply that contains a label but is not the placeholder is not reasoning', async () => {
  const facts = await factsFor('I was thinking we could ship it', { userWaits: false });
  expect(facts.reasoning).toBe(false);
});

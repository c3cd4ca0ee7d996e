// Site profiles against recorded DOM snippets (issue 9 acceptance 3; issue 7's page half;
// issue 25's flat profile): the real content script, fed the flat profiles ext-core
// produces, in real Chromium. No extension and no companion: e2e/lib/adapter-harness.mjs
// plays the worker's side of the page port. Checks that every snippet proves exactly its
// own generation (the diagnostic label) with every needed fact resolved, that every probe
// of every fact chain matches in a snippet of one of its generations, that dictation / voice /
// read-aloud Stop controls never read as generating, and the delivery contract of
// docs/PROTOCOL.md "One delivery path on the internal ports" in every generation.
import { closeContexts, test, expect } from '../lib/test.mjs';
import {
  allPosted, clicks, describeProbe, lastPosted, openSnippet, sendToPage, serveSnippets, siteProfiles, snippets,
} from '../lib/adapter-harness.mjs';

const PROFILES = siteProfiles();
const SNIPPETS = snippets();

let browser;
let context;
test.beforeEach(async ({ plainBrowser }) => {
  browser = plainBrowser;
  context = await browser.newContext();
  await serveSnippets(context);
});
test.afterEach(async () => {
  await closeContexts(browser);
});

const open = (file) => openSnippet(context, file, PROFILES[SNIPPETS.find((s) => s.file === file).site]);

test('every snippet proves exactly its own generation and no other', async () => {
  expect(SNIPPETS.length).toBeGreaterThanOrEqual(15);
  for (const snippet of SNIPPETS) {
    const page = await open(snippet.file);
    const diagnostics = await lastPosted(page, 'page_diagnostics');
    expect(diagnostics.generation, snippet.file).toBe(snippet.generation);
    expect(diagnostics.matching, `${snippet.file}: detection rules are mutually exclusive`).toEqual(snippet.generation ? [snippet.generation] : []);
    const facts = await lastPosted(page, 'page_facts');
    expect(facts.generation, snippet.file).toBe(snippet.generation);
    // A recorded page of a known generation resolves every needed fact, even where its user
    // turns carry no id (the zh recordings, a streaming DeepSeek row); the unknown one has no
    // composer any probe knows.
    const want = !snippet.generation ? ['composer', 'missing'] : [null, null];
    expect([facts.unresolved, facts.unresolved_why], snippet.file).toEqual(want);
    await page.close();
  }
});

test('every probe of every fact chain matches in a recorded snippet of one of its generations', async () => {
  const uncovered = [];
  for (const [site, profile] of Object.entries(PROFILES)) {
    const covered = new Set();
    for (const generation of profile.generations) {
      expect(SNIPPETS.some((s) => s.generation === generation.id), `${generation.id} has snippets`).toBe(true);
    }
    for (const snippet of SNIPPETS.filter((s) => s.site === site && s.generation)) {
      const page = await openSnippet(context, snippet.file, profile);
      for (const [fact, chain] of Object.entries(profile.facts)) {
        for (const [index, probe] of chain.entries()) {
          if (covered.has(`${fact}#${index}`) || !probe.gens.includes(snippet.generation)) continue;
          // The same profile with only this probe for this fact: the adapter must report it.
          const variant = structuredClone(profile);
          variant.facts[fact] = [probe];
          await sendToPage(page, { type: 'profile', profile: variant });
          const seen = await lastPosted(page, 'page_diagnostics');
          if (seen.generation === snippet.generation && seen.facts[fact] === describeProbe(probe)) covered.add(`${fact}#${index}`);
        }
      }
      await page.close();
    }
    for (const [fact, chain] of Object.entries(profile.facts)) {
      chain.forEach((probe, index) => {
        if (!covered.has(`${fact}#${index}`)) uncovered.push(`${site} ${fact}#${index} [${probe.gens.join(' ')}] ${describeProbe(probe)}`);
      });
    }
  }
  expect(uncovered).toEqual([]);
});

test('a Stop-labelled dictation, voice or read-aloud control never reads as generating, and the dictation button is not Send', async () => {
  for (const file of ['chatgpt-classic.html', 'chatgpt-section.html', 'chatgpt-thread.html']) {
    const page = await open(file);
    const facts = await lastPosted(page, 'page_facts');
    const diagnostics = await lastPosted(page, 'page_diagnostics');
    expect(facts.generating, `${file} has "Stop reading" / "Stop voice" controls only`).toBe(false);
    expect(diagnostics.facts.stop, file).toBeNull();
    if (file === 'chatgpt-thread.html') expect(diagnostics.facts.send, 'the Dictate button in the send slot').toBeNull();
    await page.close();
  }
  // The same pages streaming do read as generating (the check above is not vacuous).
  for (const file of ['chatgpt-classic-streaming.html', 'chatgpt-section-streaming.html', 'chatgpt-thread-streaming.html',
    'chatgpt-classic-zh.html', 'chatgpt-section-zh.html', 'zai-streaming.html', 'deepseek-streaming.html', 'deepseek-thinking.html']) {
    const page = await open(file);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    await page.close();
  }
});

test('page facts per generation: user turns, the last user turn id, markers and drafts', async () => {
  const expected = {
    'chatgpt-classic.html': { user_turns: 2, last_user_turn_id: 'c1-user-2', markers: ['wake:w1#7/k3x9.1.4'], draft: false },
    'chatgpt-section.html': { user_turns: 2, last_user_turn_id: 's1-user-2', markers: ['wake:w1#9'], draft: false },
    'chatgpt-thread.html': { user_turns: 2, last_user_turn_id: 't-user-2', markers: ['wake:w1#11'], draft: false },
    'chatgpt-thread-zh.html': { user_turns: 2, last_user_turn_id: 'z-user-2', markers: [], draft: true, permission_card: true },
    'zai.html': { user_turns: 2, last_user_turn_id: 'message-u2', markers: ['wake:w1#5'], draft: false },
    'deepseek.html': { user_turns: 2, last_user_turn_id: 'k-u2', markers: ['wake:w1#3'], draft: false },
  };
  for (const [file, want] of Object.entries(expected)) {
    const page = await open(file);
    const facts = await lastPosted(page, 'page_facts');
    expect(facts, file).toMatchObject({ composer: true, composer_marker: null, permission_card: false, ...want });
    expect(facts.page_load, 'a random id per content-script start').toMatch(/^[0-9a-f-]{36}$/);
    await page.close();
  }
  const attention = await open('chatgpt-thread-attention.html');
  expect((await lastPosted(attention, 'page_facts')).permission_card).toBe(true);
});

// The page's side of a submit, per generation, written for the test from SITES-2026.md:
// the send control enables (or replaces the dictation button) on input; a click takes the
// composer's text into a new user turn and empties the composer. Options: `flipOnInput`
// (classic: the single submit button turns into Stop as soon as there is text),
// `ignoreClicks` (the page does not react to Send).
function simulateSite({ kind, flipOnInput = false, ignoreClicks = false }) {
  const shapes = {
    classic: { composer: '#prompt-textarea', send: '#composer-submit-button' },
    section: { composer: '#prompt-textarea', send: '#composer-submit-button' },
    thread: { composer: '[data-composer-markdown]', send: 'button[aria-label="Send"]' },
    'classic-in-thread': { composer: '#prompt-textarea', send: '#composer-submit-button' },
    zai: { composer: '#chat-input', send: '#send-message-button' },
    deepseek: { composer: 'textarea', send: '.ds-button--circle' },
  };
  const shape = shapes[kind];
  const composer = () => document.querySelector(shape.composer);
  const text = () => (composer().tagName === 'TEXTAREA' ? composer().value : composer().textContent);
  const site = { submitted: [] };
  Object.defineProperty(window, '__site', { value: site });
  document.querySelector('form')?.addEventListener('submit', (event) => event.preventDefault());
  let n = 0;
  const appendUser = (value) => {
    n += 1;
    const holder = document.createElement('div');
    if (kind === 'classic') {
      holder.innerHTML = `<article data-testid="conversation-turn-${90 + n}" data-turn="user"><div data-message-author-role="user" data-message-id="sent-${n}"><div class="whitespace-pre-wrap"></div></div></article>`;
      document.querySelector('article').parentElement.append(holder.firstElementChild);
    } else if (kind === 'section') {
      holder.innerHTML = `<div><section data-testid="conversation-turn-${90 + n}" data-turn="user" data-turn-id="request-abc-0"><div data-message-author-role="user" data-message-id="sent-${n}"><div class="whitespace-pre-wrap"></div></div></section></div>`;
      document.querySelector('section').parentElement.parentElement.append(holder.firstElementChild);
    } else if (kind === 'thread' || kind === 'classic-in-thread') {
      // The user turn's id appears only later.
      holder.innerHTML = `<div data-turn-key="sent-${n}"><div data-chatgpt-search-unit-key="conv:${90 + n}:user"><div data-user-message-bubble><div class="whitespace-pre-wrap"></div></div></div></div>`;
      const unit = holder.querySelector('[data-chatgpt-search-unit-key]');
      document.querySelector('[data-turn-key]').parentElement.append(holder.firstElementChild);
      setTimeout(() => unit.setAttribute('data-chatgpt-search-message-ids', `late-${n}`), 300);
    } else if (kind === 'zai') {
      holder.innerHTML = `<div id="message-sent${n}" class="message-sent${n}"><div class="chat-user"></div></div>`;
      document.getElementById('messages-container').append(holder.firstElementChild);
    } else {
      holder.innerHTML = `<div data-virtual-list-item-key="k-sent${n}"><div class="ds-message"><div class="ds-collapsible-text"></div></div></div>`;
      document.querySelector('.ds-virtual-list-visible-items').append(holder.firstElementChild);
    }
    document.querySelectorAll('.whitespace-pre-wrap, .chat-user, .ds-collapsible-text').forEach((el) => { if (el.textContent === '') el.textContent = value; });
  };
  const submit = () => {
    if (ignoreClicks || text().trim() === '') return;
    site.submitted.push(text());
    if (composer().tagName === 'TEXTAREA') composer().value = '';
    else composer().innerHTML = '<p><br class="ProseMirror-trailingBreak"></p>';
    appendUser(site.submitted[site.submitted.length - 1]);
  };
  document.addEventListener('click', (event) => {
    if (event.target.closest?.(shape.send)) submit();
  });
  composer().addEventListener('input', () => {
    const has = text().trim() !== '';
    if (kind === 'thread') {
      const dictate = document.querySelector('button[aria-label="Dictate"]');
      if (has && dictate) dictate.outerHTML = '<button type="button" aria-label="Send">↑</button>';
      return;
    }
    const send = document.querySelector(shape.send);
    if (flipOnInput && has) {
      send.setAttribute('data-testid', 'stop-button');
      send.setAttribute('aria-label', 'Stop streaming');
      send.disabled = false;
      return;
    }
    if (kind === 'deepseek') {
      send.classList.toggle('ds-button--disabled', !has);
      send.setAttribute('aria-disabled', String(!has));
    } else {
      send.disabled = !has;
    }
  });
}

const composerText = (page) => page.evaluate(() => {
  const el = document.querySelector('#prompt-textarea, [data-composer-markdown], #chat-input, textarea');
  return el.tagName === 'TEXTAREA' ? el.value : el.textContent;
});
const reportOf = (page, id) => page.evaluate((i) => window.__herdr.posted.map((p) => p.message)
  .filter((m) => m.type === 'delivery_report' && m.id === i).pop() ?? null, id);

for (const [kind, file] of [['classic', 'chatgpt-classic.html'], ['section', 'chatgpt-section.html'], ['thread', 'chatgpt-thread.html'],
  ['zai', 'zai.html'], ['deepseek', 'deepseek.html']]) {
  test(`delivery on ${file}: typed, Send clicked, reported submitted; the marker shows in the next facts`, async () => {
    const page = await open(file);
    await page.evaluate(simulateSite, { kind });
    const id = `wake:w1#${kind}`;
    await sendToPage(page, { type: 'deliver', id, text: `[Herdr] Workspace w1 settled.\n[herdr-continuity ${id}]` });
    await expect.poll(() => reportOf(page, id)).toEqual({ type: 'delivery_report', id, outcome: 'submitted', reason: null });
    expect(await page.evaluate(() => window.__site.submitted.length)).toBe(1);
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).markers).toContain(id);
    const facts = await lastPosted(page, 'page_facts');
    expect(facts).toMatchObject({ user_turns: 3, draft: false, composer_marker: null, delivering: null });
    if (kind === 'thread') {
      // The id appears late; the facts follow it.
      await expect.poll(async () => (await lastPosted(page, 'page_facts')).last_user_turn_id).toBe('late-1');
    }
    // A repeated command for the same id is answered again, never typed twice.
    await sendToPage(page, { type: 'deliver', id, text: `again\n[herdr-continuity ${id}]` });
    expect(await page.evaluate(() => window.__site.submitted.length)).toBe(1);
    const diagnostics = await lastPosted(page, 'page_diagnostics');
    expect(diagnostics.deliveries).toContainEqual({ id, outcome: 'submitted', reason: null });
  });
}

// The streaming snippets and the element each streams its reply into; a permission-card
// probe of `css` alone (document scope, no filter); one token appended to the reply, then
// 300 ms, so the streaming watch has looked at the reply (at least one recompute).
const STREAMING_BODIES = {
  'chatgpt-classic-streaming.html': '[data-message-author-role="assistant"] > .markdown',
  'chatgpt-section-streaming.html': '[data-message-author-role="assistant"] > .markdown',
  'chatgpt-thread-streaming.html': '[data-markdown-text-style="assistant-message"]',
};
const cardProbe = (css) => ({ ...PROFILES.chatgpt.facts.permission_card.find((p) => p.scope === 'doc'), css, scope: 'doc',
  label: null, text: null, icon: null, attr: null, beside: null, unique: false });
// `count` tokens into the reply, one every `everyMs` ms and a new paragraph every ten, one
// task each, like a streamed reply.
const streamTokens = (page, body, count, everyMs) => page.evaluate(({ css, count: n, everyMs: ms }) => new Promise((resolve) => {
  const reply = document.querySelector(css);
  let paragraph = null;
  let sent = 0;
  const tick = () => {
    if (sent % 10 === 0) { paragraph = document.createElement('p'); reply.append(paragraph); }
    paragraph.append(document.createTextNode(` tok${sent}`));
    sent += 1;
    if (sent < n) setTimeout(tick, ms); else resolve();
  };
  tick();
}), { css: body, count, everyMs });
const token = (page, body) => page.evaluate((css) => new Promise((resolve) => {
  document.querySelector(css).append(document.createTextNode(' tok'));
  setTimeout(resolve, 300);
}), body);

// While a reply streams, the observer leaves the reply body's content out (content-facts.js "the
// streaming watch"): its text costs nothing, yet a probe's element that appears deep inside
// the body, or anywhere else, still reaches the facts (M5: a permission card is never missed).
test('while a reply streams, what appears inside its body or elsewhere still reaches the facts', async () => {
  const card = (page) => lastPosted(page, 'page_facts').then((facts) => facts.permission_card);
  for (const [file, body] of Object.entries(STREAMING_BODIES)) {
    const page = await open(file);
    expect(await lastPosted(page, 'page_facts'), file).toMatchObject({ generating: true, permission_card: false });
    await streamTokens(page, body, 60, 5);
    // A card nested in the reply's last paragraph (no record of the document observer's
    // kind reaches the adapter for it while the reply streams).
    await page.evaluate((css) => {
      const inner = document.createElement('span');
      inner.dataset.testid = 'tool-action-buttons';
      document.querySelector(css).lastElementChild.append(inner);
    }, body);
    await expect.poll(() => card(page), { message: `${file}: a card inside the streaming reply`, timeout: 10_000 }).toBe(true);
    await page.evaluate(() => document.querySelector('[data-testid="tool-action-buttons"]').remove());
    await expect.poll(() => card(page), { message: `${file}: the card went away`, timeout: 10_000 }).toBe(false);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    // And one outside the reply, while it still streams.
    await page.evaluate(() => {
      const outside = document.createElement('div');
      outside.dataset.testid = 'tool-action-buttons';
      document.body.append(outside);
    });
    await expect.poll(() => card(page), { message: `${file}: a card outside the reply`, timeout: 10_000 }).toBe(true);
    await page.close();
  }
});

// While a reply streams, an attribute change that makes a probe match reaches the facts even
// when the element it lands on is not the one that matches: a class set on a wrapper inside
// the reply body makes a descendant-combinator probe match an element the watch has already
// looked at (content-facts.js onlyQuietText), and an attribute only a `never` selector names
// is watched too (content-facts.js watch()).
test('while a reply streams, an ancestor attribute in its body and a never-only attribute still reach the facts', async () => {
  for (const [file, body] of Object.entries(STREAMING_BODIES)) {
    // (a) A card probe `.hc-done .hc-card`; the card is in the reply body before its wrapper
    // gets the class.
    const cards = structuredClone(PROFILES.chatgpt);
    cards.facts.permission_card = [cardProbe('.hc-done .hc-card'), ...cards.facts.permission_card];
    let page = await openSnippet(context, file, cards);
    await page.evaluate((css) => {
      const wrap = document.createElement('div');
      wrap.className = 'hc-wrap';
      wrap.innerHTML = '<span class="hc-card">waiting</span>';
      document.querySelector(css).append(wrap);
    }, body);
    await token(page, body);
    expect(await lastPosted(page, 'page_facts'), file).toMatchObject({ generating: true, permission_card: false });
    await token(page, body);
    await page.evaluate(() => document.querySelector('.hc-wrap').classList.add('hc-done'));
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).permission_card,
      { message: `${file}: the wrapper's class makes the card match`, timeout: 5_000 }).toBe(true);
    await page.close();
    // (b) Stop is the only cue of generating; an attribute that only a `never` selector
    // names, set on it, makes it a control that is never Stop.
    const never = structuredClone(PROFILES.chatgpt);
    never.facts.streaming = [];
    for (const gen of never.generations) gen.pending_until_complete = false;
    never.never = [...never.never, '[data-hc-never]'];
    page = await openSnippet(context, file, never);
    await token(page, body);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    await token(page, body);
    await page.evaluate(() => {
      const stop = document.querySelector('[data-testid="stop-button"], button[aria-label="Stop"]');
      stop.setAttribute('data-hc-never', '');
    });
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).generating,
      { message: `${file}: Stop marked never`, timeout: 5_000 }).toBe(false);
    await page.close();
  }
});

// While a reply streams, an element the watch has already looked at and that is then MOVED
// inside the reply body (under a wrapper whose class makes a descendant-combinator probe
// match it) reaches the facts before the reply ends: a move makes no record of the watch's
// kind, so the streaming recheck looks again at every element whose parent changed, and at
// what is inside it (content-facts.js newMatchIn).
test('while a reply streams, an element moved inside its body is looked at again', async () => {
  for (const [file, body] of Object.entries(STREAMING_BODIES)) {
    const cards = structuredClone(PROFILES.chatgpt);
    cards.facts.permission_card = [cardProbe('.hc-done .hc-card'), ...cards.facts.permission_card];
    const page = await openSnippet(context, file, cards);
    // A finished wrapper and, beside it, a card in a wrapper of its own (the card and its
    // wrapper each looked at once, neither matching); two tokens, so the watch has seen both.
    await page.evaluate((css) => {
      const reply = document.querySelector(css);
      reply.insertAdjacentHTML('beforeend', '<div class="hc-done"><p>done</p></div><div class="hc-box"><p><span class="hc-card">waiting</span></p></div>');
    }, body);
    await token(page, body);
    await token(page, body);
    expect(await lastPosted(page, 'page_facts'), file).toMatchObject({ generating: true, permission_card: false });
    // The card's wrapper moves under the finished one: the card's own parent is unchanged.
    await page.evaluate(() => document.querySelector('.hc-done').append(document.querySelector('.hc-box')));
    await token(page, body);
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).permission_card,
      { message: `${file}: the moved card matches under its new ancestor`, timeout: 5_000 }).toBe(true);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    await page.close();
  }
});

// While a reply streams, a reply that ends by a cue only its body shows (a completion
// element added deep inside the body: no record of the streaming watch's kind, and nothing
// else on the page changes) still ends: the streaming recheck's look into the body finds
// it, the full recompute says the page is no longer generating, and the ended turn is
// reported (content-facts.js recheckTick, lookIn; why the recheck exists).
test('while a reply streams, a reply that ends by a cue deep inside its body, with no other change, ends', async () => {
  for (const [file, body] of Object.entries(STREAMING_BODIES)) {
    // Generating only until a `.hc-finished` element shows in the last reply (no Stop, no
    // streaming cue), as a layout whose replies are pending until complete.
    const ends = structuredClone(PROFILES.chatgpt);
    ends.facts.stop = [];
    ends.facts.streaming = [];
    for (const gen of ends.generations) gen.pending_until_complete = true;
    ends.facts.complete = [{ ...cardProbe('.hc-finished'), scope: 'last', gens: ends.generations.map((gen) => gen.id) }];
    const page = await openSnippet(context, file, ends);
    await streamTokens(page, body, 20, 5);
    await token(page, body);
    expect(await lastPosted(page, 'page_facts'), file).toMatchObject({ generating: true });
    expect(await lastPosted(page, 'turn_ended'), file).toBeNull();
    await page.evaluate((css) => {
      const done = document.createElement('span');
      done.className = 'hc-finished';
      document.querySelector(css).lastElementChild.append(done);
    }, body);
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).generating,
      { message: `${file}: the cue inside the body ends the reply`, timeout: 5_000 }).toBe(false);
    expect(await lastPosted(page, 'turn_ended'), file).not.toBeNull();
    await page.close();
  }
});

// Stop 39: a reply with a code block streamed at ~10x the cost per token. The code block's
// Copy button (SITES-2026: `button[aria-label="Copy code"]` in the reply) matched the quiet
// zone's bare `button` and the Stop / completion probes' `button[aria-label]` selectors, so
// the reply body stopped being quiet and every token's mutation cost a full recompute. A
// filtered probe's element counts only when its filters pass; a button that passes (a Stop
// in the reply) still does.
const fullRecomputes = (page) => page.evaluate(() => {
  const host = document.querySelector('herdr-continuity-hud');
  host.dispatchEvent(new Event('herdr-continuity:counters'));
  return Number(host.dataset.factsComputed) - Number(host.dataset.factsSkipped ?? 0);
});
const codeBlock = (label) => `<pre><div class="code-head"><span>rust</span><button aria-label="${label}">${label}</button></div><code>fn main() {}</code></pre>`;
test('while a reply streams, a code block\'s Copy button in it keeps the reply quiet; a Stop in it does not', async () => {
  for (const [file, body] of Object.entries(STREAMING_BODIES)) {
    const page = await open(file);
    await streamTokens(page, body, 20, 10);
    await token(page, body);
    await page.evaluate(({ css, html }) => document.querySelector(css).insertAdjacentHTML('beforeend', html), { css: body, html: codeBlock('Copy code') });
    await token(page, body);
    const before = await fullRecomputes(page);
    // 1.5 s of tokens after the code block: quiet, so no full recompute (before: one every 100 ms).
    await streamTokens(page, body, 75, 20);
    await token(page, body);
    expect(await fullRecomputes(page) - before, `${file}: full recomputes while the reply streams past its code block`).toBeLessThanOrEqual(1);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    // A button in the reply that is a page fact's element (a labelled Stop) still ends the quiet.
    await page.evaluate(({ css, html }) => document.querySelector(css).insertAdjacentHTML('beforeend', html), { css: body, html: codeBlock('Stop') });
    const seen = await fullRecomputes(page);
    await expect.poll(() => fullRecomputes(page), { message: `${file}: a Stop in the reply is looked at`, timeout: 5_000 }).toBeGreaterThan(seen);
    await page.close();
  }
});

// Review (stop 39) of the Copy-button fix: a button in the reply that is no page fact's
// element until its text changes (no record while the watch leaves the reply out) is seen by
// the streaming recheck; and on a page that does not generate, nothing in a reply is taken
// as quiet (Retry, a thread error and a permission card's Allow are read then). The idle half
// also passed without that rule here (a later full recompute found the card within the poll);
// it guards the outcome, not the path.
const BODIES = {
  'chatgpt-classic.html': '[data-message-author-role="assistant"] > .markdown',
  'chatgpt-section.html': '[data-message-author-role="assistant"] > .markdown',
  'chatgpt-thread.html': '[data-markdown-text-style="assistant-message"]',
};
test('a button in a reply that becomes a permission card\'s by its text alone, or beside an Allow, reaches the facts, streaming or not', async () => {
  const card = (page) => lastPosted(page, 'page_facts').then((facts) => facts.permission_card);
  for (const [file, body] of Object.entries(STREAMING_BODIES)) {
    const page = await open(file);
    await page.evaluate((css) => document.querySelector(css).insertAdjacentHTML('beforeend', '<p><button class="hc-later"></button></p>'), body);
    await token(page, body);
    expect(await card(page), file).toBe(false);
    await page.evaluate(() => { document.querySelector('.hc-later').textContent = 'Allow'; });
    await expect.poll(() => card(page), { message: `${file}: its text made it the card's Allow`, timeout: 5_000 }).toBe(true);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    await page.close();
  }
  for (const [file, body] of Object.entries(BODIES)) {
    const page = await open(file);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(false);
    await page.evaluate((css) => document.querySelector(css).insertAdjacentHTML('beforeend', '<div class="hc-card-row"><button>Deny</button></div>'), body);
    await page.waitForTimeout(300); // one coalesced recompute (100 ms) has looked at it
    expect(await card(page), file).toBe(false);
    await page.evaluate(() => document.querySelector('.hc-card-row').insertAdjacentHTML('beforeend', '<button aria-label="Allow">Allow</button>'));
    await expect.poll(() => card(page), { message: `${file}: Deny beside an Allow, on an idle page`, timeout: 5_000 }).toBe(true);
    await page.close();
  }
});

// While a reply streams, the health meters have no timer of their own: they ride on the
// streaming watch's recheck timer (content-health.js healthBeat). Their samples still come
// every five ticks, with the chat observer's callbacks counted.
test('while a reply streams, the health samples ride on the streaming recheck and still come', async () => {
  const view = {
    companion: { key: 'companionNotInstalled', substitutions: [], tone: 'bad' },
    herdr: { key: 'herdrUnknown', substitutions: [], tone: 'pending' },
    actions: [],
    continuity: { lines: [], actions: [], health: { level: 'normal', decision: null, reason: null, spikes: 0 } },
  };
  const [file, body] = Object.entries(STREAMING_BODIES)[2];
  const page = await open(file);
  await sendToPage(page, { type: 'hud', view });
  const samples = () => page.evaluate(() => window.__herdr.posted.filter((p) => p.message.type === 'health_sample').length);
  // 6.5 s of tokens: the watch's recheck runs all along.
  await streamTokens(page, body, 130, 50);
  expect((await lastPosted(page, 'page_facts')).generating).toBe(true);
  expect(await samples()).toBeGreaterThanOrEqual(1);
  const sample = await lastPosted(page, 'health_sample');
  expect(sample.callbacks).toBeGreaterThanOrEqual(0);
  expect(sample.drift_ms).toBeGreaterThanOrEqual(0);
  await page.close();
});

// The streaming watch leaves out the old turns of a long chat (content-facts.js WATCH_BEFORE), but
// never the ones a page fact reads: a marker in any of the five newest user turns, and a new
// turn, still reach the facts while a reply streams.
test('while a reply streams in a long chat, the newest user turns and new turns still reach the facts', async () => {
  const layouts = {
    'chatgpt-classic-streaming.html': { body: '[data-message-author-role="assistant"] > .markdown', user: '[data-message-author-role="user"]', id: 'data-message-id' },
    'chatgpt-section-streaming.html': { body: '[data-message-author-role="assistant"] > .markdown', user: '[data-message-author-role="user"]', id: 'data-message-id' },
    'chatgpt-thread-streaming.html': { body: '[data-markdown-text-style="assistant-message"]', user: '[data-user-message-bubble]', id: 'data-chatgpt-selection-message-id' },
  };
  for (const [file, layout] of Object.entries(layouts)) {
    const page = await open(file);
    // Thirty older user turns before the streaming reply's turn, each its own subtree.
    await page.evaluate(({ body, user, id }) => {
      const zone = document.querySelector(body);
      let branch = document.querySelector(user);
      while (!branch.parentElement.contains(zone)) branch = branch.parentElement;
      for (let i = 0; i < 30; i++) {
        const copy = branch.cloneNode(true);
        const message = copy.matches(user) ? copy : copy.querySelector(user);
        message.setAttribute(id, `old-${i}`);
        branch.before(copy);
      }
    }, layout);
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).user_turns, { message: file }).toBe(31);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    // A token, so the watch is the streaming one, then a marker into the fifth newest user turn.
    await page.evaluate((body) => document.querySelector(body).append(document.createTextNode(' tok')), layout.body);
    await page.evaluate((user) => {
      const users = document.querySelectorAll(user);
      users[users.length - 5].append(document.createTextNode(' [herdr-continuity wake:old#5]'));
    }, layout.user);
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).markers, { message: `${file}: fifth newest user turn`, timeout: 10_000 }).toContain('wake:old#5');
    // A turn added at the end while the reply still streams.
    await page.evaluate(({ body, user }) => {
      const zone = document.querySelector(body);
      let branch = document.querySelector(user);
      while (!branch.parentElement.contains(zone)) branch = branch.parentElement;
      branch.parentElement.append(branch.cloneNode(true));
    }, layout);
    await expect.poll(async () => (await lastPosted(page, 'page_facts')).user_turns, { message: `${file}: a new turn`, timeout: 10_000 }).toBe(32);
    expect((await lastPosted(page, 'page_facts')).generating, file).toBe(true);
    await page.close();
  }
});

test('a page whose composer no probe knows: the fact named, nothing typed or clicked', async () => {
  const page = await open('chatgpt-unknown.html');
  expect(await lastPosted(page, 'page_facts')).toMatchObject({
    generation: null, composer: false, generating: false, unresolved: 'composer', unresolved_why: 'missing',
  });
  const diagnostics = await lastPosted(page, 'page_diagnostics');
  expect(diagnostics).toMatchObject({ site: 'chatgpt', generation: null, matching: [] });
  expect(diagnostics.facts.composer).toBeNull();
  await sendToPage(page, { type: 'deliver', id: 'wake:w1#1', text: 'hello\n[herdr-continuity wake:w1#1]' });
  await sendToPage(page, { type: 'insert', text: 'check herdr' });
  expect(await reportOf(page, 'wake:w1#1')).toEqual({ type: 'delivery_report', id: 'wake:w1#1', outcome: 'not_submitted', reason: 'fact_unresolved' });
  expect(await composerText(page)).toBe('');
  expect(await clicks(page)).toEqual([]);
  // Without any profile (an origin ext-core has none for) it is the same.
  const bare = await openSnippet(context, 'chatgpt-classic.html', null);
  expect(await lastPosted(bare, 'page_facts')).toMatchObject({ generation: null, unresolved: 'profile', unresolved_why: 'missing' });
  await sendToPage(bare, { type: 'deliver', id: 'wake:w1#2', text: 'x\n[herdr-continuity wake:w1#2]' });
  expect((await reportOf(bare, 'wake:w1#2')).reason).toBe('fact_unresolved');
  expect(await composerText(bare)).toBe('');
});

// Facts, not generations (issue 25, contract B): each needed fact resolves through its own
// chain, and the first that does not — in the order composer, root, send, stop, user —
// is named; while one is, nothing is typed or clicked.
test('a missing or ambiguous needed fact is named in order, and nothing is typed or clicked', async () => {
  const cases = [
    ['chatgpt-classic.html', 'two composers', () => {
      const composer = document.querySelector('#prompt-textarea');
      composer.parentElement.append(composer.cloneNode(true));
    }, ['composer', 'ambiguous']],
    ['chatgpt-thread.html', 'the composer outside any form', () => {
      document.body.append(document.querySelector('[data-composer-markdown]'));
    }, ['root', 'missing']],
    ['chatgpt-classic.html', 'two Send buttons', () => {
      const send = document.querySelector('#composer-submit-button');
      const second = send.cloneNode(true);
      second.removeAttribute('id');
      send.after(second);
    }, ['send', 'ambiguous']],
    ['chatgpt-classic-streaming.html', 'two Stop buttons', () => {
      const stop = document.querySelector('[data-testid="stop-button"]');
      const second = stop.cloneNode(true);
      second.removeAttribute('id');
      stop.after(second);
    }, ['stop', 'ambiguous']],
    ['chatgpt-classic.html', 'turns with no message of either role', () => {
      const turns = [...document.querySelectorAll('article')].map((turn) => turn.cloneNode(true));
      for (const turn of turns) {
        turn.removeAttribute('data-turn');
        for (const el of turn.querySelectorAll('[data-message-author-role]')) el.removeAttribute('data-message-author-role');
      }
      document.querySelector('article').parentElement.replaceChildren(...turns);
    }, ['user', 'missing']],
    // Two failures at once: the first in order is the one named.
    ['chatgpt-classic.html', 'two composers and two Send buttons', () => {
      const composer = document.querySelector('#prompt-textarea');
      composer.parentElement.append(composer.cloneNode(true));
      const send = document.querySelector('#composer-submit-button');
      send.after(send.cloneNode(true));
    }, ['composer', 'ambiguous']],
  ];
  for (const [file, what, change, want] of cases) {
    const page = await open(file);
    expect((await lastPosted(page, 'page_facts')).unresolved, `${file} as recorded`).toBeNull();
    await page.evaluate(change);
    await expect.poll(async () => {
      const facts = await lastPosted(page, 'page_facts');
      return [facts.unresolved, facts.unresolved_why];
    }, { message: `${file}: ${what}` }).toEqual(want);
    const id = `wake:w1#${want[0]}`;
    await sendToPage(page, { type: 'deliver', id, text: `x\n[herdr-continuity ${id}]` });
    expect(await reportOf(page, id), `${file}: ${what}`).toMatchObject({ outcome: 'not_submitted', reason: file.includes('streaming') ? 'busy' : 'fact_unresolved' });
    await sendToPage(page, { type: 'insert', text: 'check herdr' });
    expect(await clicks(page), `${file}: ${what}`).toEqual([]);
    expect(await page.evaluate(() => [...document.querySelectorAll('[contenteditable="true"]')].map((el) => el.textContent.trim()).join('')), `${file}: ${what}`).toBe('');
    await page.close();
  }
});

// The thread composer is cached while it was the one match (a document query for it walks
// the whole thread): a second editor that appears without a new turn (an inline edit box)
// must still stop a delivery and a Check Herdr insert, and is then reported as ambiguous.
test('a second composer that appears after the first look is ambiguous: nothing typed or clicked (thread)', async () => {
  const page = await open('chatgpt-thread.html');
  expect((await lastPosted(page, 'page_facts')).unresolved, 'as recorded').toBeNull();
  await page.evaluate(() => {
    const composer = document.querySelector('[data-composer-markdown]');
    composer.after(composer.cloneNode(true));
  });
  await sendToPage(page, { type: 'deliver', id: 'wake:w1#9', text: 'x\n[herdr-continuity wake:w1#9]' });
  expect(await reportOf(page, 'wake:w1#9')).toMatchObject({ outcome: 'not_submitted', reason: 'fact_unresolved' });
  await sendToPage(page, { type: 'insert', text: 'check herdr' });
  expect(await clicks(page)).toEqual([]);
  expect(await page.evaluate(() => [...document.querySelectorAll('[contenteditable="true"]')].map((el) => el.textContent.trim()).join(''))).toBe('');
  // The next change on the page (a real page changes all the time) reports it.
  await page.evaluate(() => document.body.append(document.createElement('div')));
  await expect.poll(async () => {
    const facts = await lastPosted(page, 'page_facts');
    return [facts.unresolved, facts.unresolved_why];
  }).toEqual(['composer', 'ambiguous']);
});

// A page that mixes two generations' markup, every needed fact present once: labelled
// "mixed", nothing unresolved, and a delivery goes out as on the pure generations.
test('a page mixing thread turns with the classic composer and its submit button resolves every fact and delivers', async () => {
  const page = await open('chatgpt-thread.html');
  await page.evaluate(() => {
    const form = document.querySelector('form[data-chatgpt-composer]');
    form.outerHTML = `<form class="w-full" data-type="unified-composer"><div id="prompt-textarea" class="ProseMirror" contenteditable="true" role="textbox"><p><br class="ProseMirror-trailingBreak"></p></div>
      <button id="composer-submit-button" data-testid="send-button" aria-label="Send prompt" disabled>↑</button></form>`;
  });
  await expect.poll(async () => (await lastPosted(page, 'page_facts')).generation).toBe('mixed');
  expect(await lastPosted(page, 'page_facts')).toMatchObject({ unresolved: null, composer: true, generating: false, user_turns: 2 });
  await page.evaluate(simulateSite, { kind: 'classic-in-thread' });
  const id = 'wake:w1#mixed';
  await sendToPage(page, { type: 'deliver', id, text: `[Herdr] settled.\n[herdr-continuity ${id}]` });
  await expect.poll(() => reportOf(page, id)).toMatchObject({ outcome: 'submitted', reason: null });
  expect(await page.evaluate(() => window.__site.submitted.length)).toBe(1);
  await page.close();
});

test('the single submit button is never clicked while it is Stop', async () => {
  // Streaming: the flipped button is Stop; the page is busy and nothing is typed.
  const busy = await open('chatgpt-classic-streaming.html');
  await sendToPage(busy, { type: 'deliver', id: 'wake:w1#3', text: 'x\n[herdr-continuity wake:w1#3]' });
  expect(await reportOf(busy, 'wake:w1#3')).toMatchObject({ outcome: 'not_submitted', reason: 'busy' });
  expect(await composerText(busy)).toBe('');
  expect(await clicks(busy)).toEqual([]);
  // The button flips to Stop as soon as we typed: re-checked before the click, never
  // clicked, and our text is removed again.
  const flips = await open('chatgpt-classic.html');
  await flips.evaluate(simulateSite, { kind: 'classic', flipOnInput: true });
  await sendToPage(flips, { type: 'deliver', id: 'wake:w1#4', text: 'x\n[herdr-continuity wake:w1#4]' });
  await expect.poll(() => reportOf(flips, 'wake:w1#4')).toMatchObject({ outcome: 'not_submitted', reason: 'send_button_missing' });
  expect(await clicks(flips)).toEqual([]);
  expect((await composerText(flips)).trim()).toBe('');
  // DeepSeek's circle showing the Stop icon is not Send either.
  const deepseek = await open('deepseek-streaming.html');
  await sendToPage(deepseek, { type: 'deliver', id: 'wake:w1#5', text: 'x\n[herdr-continuity wake:w1#5]' });
  expect(await reportOf(deepseek, 'wake:w1#5')).toMatchObject({ outcome: 'not_submitted', reason: 'busy' });
  expect(await clicks(deepseek)).toEqual([]);
});

test('unconfirmed when the page keeps the text; composer_marker; clear_composer removes only its own text', async () => {
  const page = await open('chatgpt-classic.html');
  await page.evaluate(simulateSite, { kind: 'classic', ignoreClicks: true });
  const id = 'wake:w1#50';
  await sendToPage(page, { type: 'deliver', id, text: `[Herdr] settled.\n[herdr-continuity ${id}]` });
  await expect.poll(() => reportOf(page, id), { timeout: 10_000 }).toMatchObject({ outcome: 'unconfirmed', reason: null });
  expect(await clicks(page)).toEqual(['Send prompt']);
  await expect.poll(async () => (await lastPosted(page, 'page_facts')).composer_marker).toBe(id);
  expect((await lastPosted(page, 'page_facts')).draft, 'our own unsent text is not a draft').toBe(false);
  await sendToPage(page, { type: 'clear_composer', id: 'wake:w1#49' });
  expect(await composerText(page)).toContain(`[herdr-continuity ${id}]`);
  await sendToPage(page, { type: 'clear_composer', id });
  expect((await composerText(page)).trim()).toBe('');
  await expect.poll(async () => (await lastPosted(page, 'page_facts')).composer_marker).toBeNull();
});

test('a human draft is never sent along, and reports are re-sent after a reconnect until delivery_seen', async () => {
  const draft = await open('chatgpt-thread-zh.html');
  await sendToPage(draft, { type: 'deliver', id: 'wake:w1#6', text: 'x\n[herdr-continuity wake:w1#6]' });
  expect(await reportOf(draft, 'wake:w1#6')).toMatchObject({ outcome: 'not_submitted', reason: 'human_draft' });
  expect(await composerText(draft)).toBe('草稿');
  expect(await clicks(draft)).toEqual([]);
  // The worker went away before acknowledging: the next port hears the report again.
  await draft.evaluate(() => window.__herdr.drop());
  await expect.poll(() => draft.evaluate(() => window.__herdr.ports.length)).toBe(2);
  const again = (await allPosted(draft)).filter((p) => p.port === 1 && p.message.type === 'delivery_report');
  expect(again.map((p) => p.message.id)).toEqual(['wake:w1#6']);
  await sendToPage(draft, { type: 'delivery_seen', id: 'wake:w1#6' });
  await draft.evaluate(() => window.__herdr.drop());
  await expect.poll(() => draft.evaluate(() => window.__herdr.ports.length)).toBe(3);
  const third = (await allPosted(draft)).filter((p) => p.port === 2 && p.message.type === 'delivery_report');
  expect(third).toEqual([]);
});

test('diagnostics carry the CSP as observed: the meta policy and violation events, no page content', async () => {
  const strict = await browser.newContext();
  await serveSnippets(strict, { head: `<meta http-equiv="Content-Security-Policy" content="img-src 'none'">` });
  const page = await openSnippet(strict, 'chatgpt-classic.html', PROFILES.chatgpt);
  await page.evaluate(() => { const img = new Image(); img.src = 'https://images.herdr.test/a.png'; document.body.append(img); });
  await expect.poll(async () => (await lastPosted(page, 'page_diagnostics')).csp).toEqual({ meta: true, violations: 1, directives: ['img-src'] });
  const text = JSON.stringify(await lastPosted(page, 'page_diagnostics'));
  for (const content of ['Hello', 'Done.', 'Hi.']) expect(text).not.toContain(content);
  const plain = await open('chatgpt-classic.html');
  expect((await lastPosted(plain, 'page_diagnostics')).csp).toEqual({ meta: false, violations: 0, directives: [] });
});

test('while a reply streams, the diagnostics pass waits for the reply to end, then reports what happened meanwhile', async () => {
  // The diagnostics pass evaluates every fact; on a streaming page it would be the content
  // script's largest cost (issue 8), so it runs once the reply ended.
  const strict = await browser.newContext();
  await serveSnippets(strict, { head: `<meta http-equiv="Content-Security-Policy" content="img-src 'none'">` });
  const page = await openSnippet(strict, 'chatgpt-classic-streaming.html', PROFILES.chatgpt);
  await expect.poll(async () => (await lastPosted(page, 'page_facts'))?.generating).toBe(true);
  await expect.poll(async () => (await lastPosted(page, 'page_diagnostics'))?.generation).toBe('chatgpt.classic');
  await page.evaluate(() => { const img = new Image(); img.src = 'https://images.herdr.test/a.png'; document.body.append(img); });
  // Past the 2 s the pass would otherwise wait: still the report from before the violation.
  await page.waitForTimeout(2_500);
  expect((await lastPosted(page, 'page_diagnostics')).csp.violations).toBe(0);
  // The reply ends: Stop becomes Send, the streaming cues go.
  await page.evaluate(() => {
    const button = document.querySelector('#composer-submit-button');
    button.dataset.testid = 'send-button';
    button.setAttribute('aria-label', 'Send prompt');
    document.querySelector('[aria-busy]').removeAttribute('aria-busy');
    document.querySelector('.result-streaming').classList.remove('result-streaming');
  });
  await expect.poll(async () => (await lastPosted(page, 'page_facts')).generating).toBe(false);
  await expect.poll(async () => (await lastPosted(page, 'page_diagnostics')).csp, { timeout: 10_000 })
    .toEqual({ meta: true, violations: 1, directives: ['img-src'] });
  await strict.close();
});

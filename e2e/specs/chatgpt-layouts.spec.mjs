// The ChatGPT fixture's layouts themselves (no extension): each DOM generation renders the
// tags, attributes, labels and cues ../shared/SITES-2026.md §1 documents (checked with
// plain DOM queries), its variants (Chinese labels, one flipping submit button, wrapped
// turns, an open edit box, read-aloud Stop, the error card with Retry) behave as on
// ChatGPT, and the backend and its test hooks (late confirmation, held submit) are the
// same in every layout. If these fail, the layout specs cannot be trusted.
import { closeContexts, test, expect } from '../lib/test.mjs';
import { ChatGptFixture, CSP_VARIANTS, FAILURE_TEXT, LABELS, LAYOUTS, NO_TOOLS_REPLY, RENAMED_MARKERS, chatgptUrl } from '../fixtures/chatgpt.mjs';
import { recordSecurityPolicyViolations, securityPolicyViolations } from '../lib/csp-recorder.mjs';

const CONVERSATION = '9d2c4b1a-7e6f-4a5b-8c9d-0e1f2a3b4c5d';
const SEEDED = [
  { role: 'user', text: 'Run the tests' },
  { role: 'assistant', text: 'All green.' },
  { role: 'user', text: 'Ship it' },
  { role: 'assistant', text: 'Shipped.' },
];

let browser;
test.beforeAll(async ({ plainBrowser }) => {
  browser = plainBrowser;
});
test.afterAll(async () => {
  await closeContexts(browser);
});

/** A fresh context with the fixture installed, on the seeded conversation. */
async function open(options) {
  const context = await browser.newContext();
  await recordSecurityPolicyViolations(context);
  const fixture = new ChatGptFixture({ streamMs: 50, ...options });
  fixture.conversations.set(CONVERSATION, { title: 'Seeded', turns: SEEDED.map((t) => ({ ...t })) });
  await fixture.install(context);
  const page = await context.newPage();
  await page.goto(chatgptUrl.conversation(CONVERSATION));
  return { context, fixture, page };
}

/** Types into the layout's composer and presses its Send (as a human would). */
async function send(page, fixture, text) {
  await page.locator(fixture.ui.composer).click();
  await page.keyboard.type(text);
  await page.locator(fixture.ui.send).click();
}

/** The structure of the page's turns, read with DOM queries. */
function turnShape(page) {
  return page.evaluate(() => {
    const attrs = (el) => Object.fromEntries([...el.attributes].map((a) => [a.name, a.value]));
    return {
      articles: document.querySelectorAll('article[data-testid^="conversation-turn-"]').length,
      sections: [...document.querySelectorAll('section[data-testid^="conversation-turn-"]')].map((s) => ({
        ...attrs(s),
        parentTag: s.parentElement.tagName,
        parentHoldsOneTurn: s.parentElement.querySelectorAll('[data-testid^="conversation-turn-"]').length === 1,
        listHoldsAll: s.parentElement.parentElement.querySelectorAll('section[data-testid^="conversation-turn-"]').length,
      })),
      threadTurns: [...document.querySelectorAll('[data-turn-key]')].map((t) => ({
        tag: t.tagName,
        key: t.getAttribute('data-turn-key'),
        searchKey: t.getAttribute('data-content-search-turn-key'),
        units: [...t.querySelectorAll('[data-chatgpt-search-unit-key]')].map((u) => ({
          key: u.getAttribute('data-chatgpt-search-unit-key'),
          ids: u.getAttribute('data-chatgpt-search-message-ids'),
          user: u.querySelector('[data-user-message-bubble] .whitespace-pre-wrap')?.textContent ?? null,
          assistant: u.querySelector('[data-markdown-text-style="assistant-message"]')?.textContent ?? null,
          selection: u.querySelector('[data-chatgpt-selection-message-id]')?.getAttribute('data-chatgpt-selection-message-id') ?? null,
        })),
      })),
      authorRoles: [...document.querySelectorAll('[data-message-author-role]')].map((m) => ({
        role: m.getAttribute('data-message-author-role'),
        id: m.getAttribute('data-message-id'),
        turn: m.closest('[data-turn]')?.getAttribute('data-turn') ?? null,
        body: m.querySelector(m.getAttribute('data-message-author-role') === 'assistant' ? '.markdown.prose' : '.whitespace-pre-wrap')?.textContent ?? null,
      })),
      promptTextarea: document.querySelectorAll('#prompt-textarea').length,
      isStreamingAttr: document.querySelectorAll('[data-is-streaming]').length,
    };
  });
}

// The `renamed` layout (issue 25: a drift no built-in profile knows) is the thread layout
// with its markers renamed: the same DOM once the names are mapped back, none of the
// thread markers the built-in profile reads, and the same behaviour.
/** Every marker of the built-in ChatGPT profile's composer, turns, roles and ids. */
const BUILTIN_MARKERS = [
  '#prompt-textarea', '.ProseMirror', 'form[data-chatgpt-composer]', 'form[data-type="unified-composer"]', '[data-composer-markdown]',
  '[data-turn-key]', '[data-content-search-turn-key]', '[data-chatgpt-search-unit-key]', '[data-content-search-unit-key]',
  '[data-chatgpt-search-message-ids]', '[data-chatgpt-selection-message-id]', '[data-user-message-bubble]', '[data-markdown-text-style]',
  '[data-message-author-role]', '[data-message-id]', '[data-turn]', '[data-testid^="conversation-turn-"]',
];

for (const csp of CSP_VARIANTS) {
  test(`renamed, CSP ${csp}: the thread layout's DOM under renamed markers, none of the built-in markers, the same behaviour`, async () => {
    const thread = await open({ layout: 'thread', csp });
    // The thread page's markup with the renames applied (the fixture's seeded ids are fixed).
    const expected = await thread.page.evaluate((renamed) => {
      const copy = document.getElementById('main').cloneNode(true);
      for (const el of [copy, ...copy.querySelectorAll('*')]) {
        for (const { name, value } of [...el.attributes]) {
          if (!renamed.attributes[name]) continue;
          el.removeAttribute(name);
          el.setAttribute(renamed.attributes[name], value);
        }
        for (const [from, to] of Object.entries(renamed.classes)) if (el.classList.contains(from)) el.classList.replace(from, to);
      }
      return copy.outerHTML;
    }, RENAMED_MARKERS);
    await thread.context.close();
    // Attribute order may differ after the renames above: compare parsed, attributes sorted.
    const canonical = (page, html) => page.evaluate((markup) => {
      const box = document.createElement('div');
      box.innerHTML = markup;
      const walk = (el) => [el.tagName, [...el.attributes].map((a) => [a.name, a.value]).sort(), [...el.childNodes].map((n) => (n.nodeType === 1 ? walk(n) : n.textContent))];
      return walk(box.firstElementChild);
    }, html);

    const { context, fixture, page } = await open({ layout: 'renamed', csp });
    const { ui } = fixture;
    const l = LABELS.en;
    const actual = await page.evaluate(() => document.getElementById('main').outerHTML);
    expect(await canonical(page, actual), 'the thread DOM with renamed markers').toEqual(await canonical(page, expected));
    for (const marker of BUILTIN_MARKERS) expect(await page.locator(marker).count(), `no ${marker}`).toBe(0);
    await expect(page.locator('form[data-cg-composer] [data-cg-editor].cg-prose[contenteditable="true"][role="textbox"]')).toHaveAttribute('aria-label', l.composerThread);
    await expect(page.locator('[data-cg-turn]')).toHaveCount(2);
    await expect(page.locator('[data-cg-unit$=":user"] [data-cg-bubble]')).toHaveText([SEEDED[0].text, SEEDED[2].text]);
    await expect(page.locator(ui.finished)).toHaveCount(2);

    // Type, Send, a reply streams without its id behind Stop; Stop finishes it with its ids.
    fixture.streamMs = 60_000;
    await page.locator(ui.composer).click();
    await page.keyboard.type('Deploy to staging');
    await expect(page.locator(ui.send)).toHaveAttribute('aria-label', l.sendThread);
    await page.locator(ui.send).click();
    await expect(page.locator(ui.stop)).toHaveAttribute('aria-label', l.stopThread);
    await expect(page.locator(ui.userTurn).last()).toHaveText('Deploy to staging');
    await expect(page.locator(ui.composer)).toHaveText('');
    const unit = page.locator('[data-cg-unit$=":assistant"]').last();
    await expect(unit, 'streaming: no message id yet').not.toHaveAttribute('data-cg-message-ids', /.*/);
    await page.locator(ui.stop).click();
    await expect(page.locator(ui.finished)).toHaveCount(3);
    const id = await unit.getAttribute('data-cg-message-ids');
    expect(id).toMatch(/\S/);
    await expect(unit.locator('[data-cg-text-style]')).toHaveAttribute('data-cg-final-id', id);
    for (const marker of BUILTIN_MARKERS) expect(await page.locator(marker).count(), `still no ${marker}`).toBe(0);
    expect(fixture.server.map((m) => [m.conversationId, m.text])).toEqual([[CONVERSATION, 'Deploy to staging']]);

    await page.reload();
    await expect(page.locator(ui.userTurn)).toHaveCount(3);
    await expect(page.locator(ui.finished)).toHaveCount(3);
    expect(await securityPolicyViolations(page)).toEqual([]);
    await context.close();
  });
}

for (const layout of LAYOUTS) {
  for (const csp of CSP_VARIANTS) {
    test(`${layout}, CSP ${csp}: documented shape, dictation slot, streaming without id, completion cues, reload`, async () => {
      const { context, fixture, page } = await open({ layout, csp });
      const { ui } = fixture;
      const l = LABELS.en;
      const shape = await turnShape(page);
      expect(shape.isStreamingAttr, 'data-is-streaming is not a ChatGPT attribute').toBe(0);
      if (layout === 'classic') {
        expect(shape.articles).toBe(4);
        expect(await page.evaluate(() => [...document.querySelector('article').parentElement.children].every((c) => c.matches('article[data-turn]'))),
          'classic: the turns are the children of one list').toBe(true);
        await expect(page.locator('form[data-type="unified-composer"] #prompt-textarea.ProseMirror[contenteditable="true"][role="textbox"]')).toHaveAttribute('aria-label', l.composerClassic);
        await expect(page.locator('textarea[name="prompt-textarea"]'), 'the hidden fallback textarea').toBeHidden();
        await expect(page.locator('button[data-testid="send-button"]#composer-submit-button')).toBeDisabled();
        await expect(page.locator(`form button[data-start-dictation][aria-label="${l.dictate}"]`)).toBeVisible();
      }
      if (layout === 'section') {
        expect(shape.articles, 'section: no article turns').toBe(0);
        expect(shape.sections.map((s) => s['data-turn'])).toEqual(['user', 'assistant', 'user', 'assistant']);
        for (const s of shape.sections) {
          expect(s['data-testid']).toMatch(/^conversation-turn-\d+$/);
          expect(s.parentTag, 'each section turn is wrapped in its own div').toBe('DIV');
          expect(s.parentHoldsOneTurn).toBe(true);
          expect(s.listHoldsAll, 'under one shared list').toBe(4);
        }
        const ids = shape.sections.map((s) => s['data-turn-id']);
        expect(ids[0], 'a request shares one data-turn-id').toBe(ids[1]);
        expect(new Set(ids).size).toBeLessThan(ids.length);
      }
      if (layout !== 'thread') {
        expect(shape.authorRoles.map((m) => [m.role, m.turn, m.body])).toEqual(SEEDED.map((t) => [t.role, t.role, t.text]));
        expect(shape.authorRoles.every((m) => m.id), 'finished messages carry data-message-id').toBe(true);
        await expect(page.locator(`${ui.finished} ~ .turn-actions button[data-testid="copy-turn-action-button"][aria-label="${l.copyMessage}"]`)).toHaveCount(2);
      }
      if (layout === 'section' || layout === 'thread') {
        await expect(page.locator(ui.send), 'no Send while the composer is empty').toHaveCount(0);
        const slot = layout === 'thread' ? 'form[data-chatgpt-composer]' : '[data-testid="composer-trailing-actions"]';
        await expect(page.locator(`${slot} button[data-start-dictation][aria-label="${l.dictate}"]`), 'the dictation button holds the send slot').toBeVisible();
      }
      if (layout === 'thread') {
        expect(shape.promptTextarea, 'thread: no #prompt-textarea').toBe(0);
        expect(shape.articles + shape.sections.length + shape.authorRoles.length, 'thread: no classic turns or roles').toBe(0);
        expect(shape.threadTurns).toHaveLength(2);
        for (const [i, turn] of shape.threadTurns.entries()) {
          expect(turn.tag).toBe('DIV');
          expect(turn.searchKey).toBe(turn.key);
          expect(turn.units.map((u) => u.key)).toEqual([`${CONVERSATION}:${2 * i}:user`, `${CONVERSATION}:${2 * i + 1}:assistant`]);
          expect(turn.units.map((u) => u.user ?? u.assistant)).toEqual([SEEDED[2 * i].text, SEEDED[2 * i + 1].text]);
          for (const unit of turn.units) {
            expect(unit.ids, 'message ids in data-chatgpt-search-message-ids').toMatch(/\S/);
            expect(unit.selection, 'finished: data-chatgpt-selection-message-id').toBe(unit.ids.split(' ')[0]);
          }
        }
        const composer = page.locator('form[data-chatgpt-composer] [data-composer-markdown][contenteditable="true"][role="textbox"]');
        await expect(composer).toHaveAttribute('aria-label', l.composerThread);
        await expect(page.locator('form[data-chatgpt-composer] [data-testid]'), 'no test ids in the composer').toHaveCount(0);
        await expect(page.locator(`form[data-chatgpt-composer] button[type="button"][aria-label="${l.addFiles}"][data-composer-navigation-target="add-context"]`)).toHaveCount(1);
        await expect(page.locator(`button[aria-label="${l.model}"][data-composer-navigation-target="reasoning"]`)).toHaveAttribute('data-selected-reasoning-effort', /.+/);
        for (const attr of ['header[data-app-shell-titlebar]', 'nav[data-app-navigation-rail]', 'main[data-app-shell-main-surface]', '[data-scroll-root]', '[data-thread-scroll-footer]', '[data-composer-seat]']) {
          await expect(page.locator(attr), `app shell ${attr}`).toHaveCount(1);
        }
        await expect(page.locator(`[data-markdown-text-style][data-chatgpt-selection-message-id] ~ .turn-action-controls button[aria-label="${l.copyMessage}"]`)).toHaveCount(2);
      }

      // Typing shows Send (enabled); a long reply then streams behind Stop, without its id.
      fixture.streamMs = 60_000;
      await page.locator(ui.composer).click();
      await page.keyboard.type('Deploy to staging');
      await expect(page.locator(ui.send)).toBeEnabled();
      if (layout !== 'classic') await expect(page.locator('form [data-start-dictation]'), 'Send replaced the dictation button').toHaveCount(0);
      await page.locator(ui.send).click();
      await expect(page.locator(ui.stop)).toBeVisible();
      await expect(page.locator(ui.assistantTurn)).toHaveCount(3);
      await expect(page.locator(ui.userTurn).last()).toHaveText('Deploy to staging');
      await expect(page.locator(ui.composer)).toHaveText('');
      const last = page.locator(ui.assistantTurn).last();
      await expect(last).not.toHaveText('');
      if (layout === 'thread') {
        await expect(last, 'streaming: no selection id yet').not.toHaveAttribute('data-chatgpt-selection-message-id', /.*/);
        await expect(page.locator('[data-chatgpt-search-unit-key$=":assistant"]').last()).not.toHaveAttribute('data-chatgpt-search-message-ids', /.*/);
        await expect(page.locator(ui.stop)).not.toHaveAttribute('data-testid', /.*/);
        await expect(page.locator('[data-chatgpt-search-unit-key$=":assistant"]').last().locator('.turn-action-controls')).toHaveCount(0);
      } else {
        await expect(last, 'streaming: no data-message-id yet').not.toHaveAttribute('data-message-id', /.*/);
        await expect(last.locator('.markdown.result-streaming')).toHaveCount(1);
        if (layout === 'classic') await expect(last).toHaveAttribute('aria-busy', 'true');
        await expect(page.locator(`form[data-type="unified-composer"] ${ui.stop}`)).toHaveAttribute('aria-label', l.stopClassic);
        await expect(page.locator('[data-testid^="conversation-turn-"]').last().locator('[data-testid="copy-turn-action-button"]'), 'no Copy while streaming').toHaveCount(0);
      }
      expect((await turnShape(page)).isStreamingAttr).toBe(0);

      // Stop ends the reply: the id appears, the cue goes, the finished actions mount.
      await page.locator(ui.stop).click();
      await expect(page.locator(ui.finished)).toHaveCount(3);
      await expect(page.locator(ui.stop)).toHaveCount(0);
      if (layout === 'thread') {
        const unit = page.locator('[data-chatgpt-search-unit-key$=":assistant"]').last();
        const id = await unit.getAttribute('data-chatgpt-search-message-ids');
        expect(id).toMatch(/\S/);
        await expect(last).toHaveAttribute('data-chatgpt-selection-message-id', id);
        await expect(unit.locator(`.turn-action-controls button[aria-label="${l.copyMessage}"]`)).toHaveCount(1);
        await expect(page.locator('#thread-announcer[role="alert"].sr-only'), 'an sr-only alert announces unrelated UI state').toHaveText(l.actionsRefreshed);
      } else {
        await expect(last).toHaveAttribute('data-message-id', /\S/);
        await expect(page.locator('.result-streaming, [aria-busy="true"]')).toHaveCount(0);
        await expect(page.locator('[data-testid^="conversation-turn-"]').last().locator(`button[data-testid="copy-turn-action-button"][aria-label="${l.copyMessage}"]`)).toHaveCount(1);
      }
      if (layout === 'classic') await expect(page.locator(ui.send)).toBeDisabled();
      else await expect(page.locator('form button[data-start-dictation]')).toBeVisible();

      // The backend recorded the message; a reload shows the whole thread in the same shape.
      expect(fixture.server.map((m) => [m.conversationId, m.text])).toEqual([[CONVERSATION, 'Deploy to staging']]);
      await page.reload();
      await expect(page.locator(ui.userTurn)).toHaveCount(3);
      await expect(page.locator(ui.userTurn).last()).toHaveText('Deploy to staging');
      await expect(page.locator(ui.finished)).toHaveCount(3);
      expect(await securityPolicyViolations(page)).toEqual([]);
      await context.close();
    });
  }

  test.describe(`${layout} variants`, () => {
    test(`${layout}: Chinese labels`, async () => {
      const { context, fixture, page } = await open({ layout, lang: 'zh' });
      const { ui } = fixture;
      const l = LABELS.zh;
      await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
      await expect(page.locator(ui.composer)).toHaveAttribute('aria-label', layout === 'thread' ? l.composerThread : l.composerClassic);
      await expect(page.locator(`form button[aria-label="${l.dictate}"][data-start-dictation]`)).toHaveCount(1);
      await expect(page.locator(`button[aria-label="${l.copyMessage}"]`)).toHaveCount(4);
      fixture.streamMs = 60_000;
      await page.locator(ui.composer).click();
      await page.keyboard.type('部署到测试环境');
      await expect(page.locator('form button[aria-label]').last()).toHaveAttribute('aria-label', layout === 'thread' ? '发送' : '发送提示');
      await page.locator(ui.send).click();
      await expect(page.locator(ui.stop)).toHaveAttribute('aria-label', layout === 'thread' ? '停止' : '停止流式传输');
      await page.locator(ui.stop).click();
      await expect(page.locator(ui.finished)).toHaveCount(3);
      expect(fixture.server.map((m) => m.text)).toEqual(['部署到测试环境']);
      await context.close();
    });

    test(`${layout}: one flipping submit button`, async () => {
      const { context, fixture, page } = await open({ layout, submit: 'flip' });
      const { ui } = fixture;
      const stateOf = () => page.evaluate((layoutName) => {
        const b = layoutName === 'thread'
          ? document.querySelector('form[data-chatgpt-composer] .composer-trailing button')
          : document.getElementById('composer-submit-button');
        if (!b) return null;
        window.__seenSubmit ??= b;
        return { same: window.__seenSubmit === b, testid: b.getAttribute('data-testid'), label: b.getAttribute('aria-label') };
      }, layout);
      fixture.streamMs = 60_000;
      await page.locator(ui.composer).click();
      await page.keyboard.type('Flip');
      expect(await stateOf()).toMatchObject(layout === 'thread' ? { testid: null, label: 'Send' } : { testid: 'send-button', label: 'Send prompt' });
      await page.locator(ui.send).click();
      await expect(page.locator(ui.stop)).toBeVisible();
      expect(await stateOf(), 'the same element now reads as Stop')
        .toEqual(layout === 'thread' ? { same: true, testid: null, label: 'Stop' } : { same: true, testid: 'stop-button', label: 'Stop streaming' });
      await page.locator(ui.stop).click();
      await expect(page.locator(ui.finished)).toHaveCount(3);
      await page.locator(ui.composer).click();
      await page.keyboard.type('again');
      expect(await stateOf(), 'and flips back to Send').toMatchObject({ same: true, testid: layout === 'thread' ? null : 'send-button' });
      if (layout !== 'thread') await expect(page.locator('button[data-testid="stop-button"]:not(#composer-submit-button)')).toHaveCount(0);
      await context.close();
    });

    test(`${layout}: turns wrapped in extra sections`, async () => {
      const { context, fixture, page } = await open({ layout, wrap: true });
      const turnRoot = { classic: 'article[data-testid]', section: 'div:has(> section[data-testid])', thread: 'div[data-turn-key]' }[layout];
      await send(page, fixture, 'Wrapped');
      await expect(page.locator(fixture.ui.finished)).toHaveCount(3);
      const wrapped = await page.evaluate((root) => {
        const wrappers = [...document.querySelectorAll('section.turn-wrap')];
        return {
          listChildren: [...wrappers[0].parentElement.children].map((c) => c.tagName),
          eachHoldsOne: wrappers.map((w) => w.querySelectorAll(`:scope > ${root}`).length),
        };
      }, turnRoot);
      const turns = layout === 'thread' ? 3 : 6;
      expect(wrapped.listChildren).toEqual(Array(turns).fill('SECTION'));
      expect(wrapped.eachHoldsOne).toEqual(Array(turns).fill(1));
      await context.close();
    });

    test(`${layout}: an open edit box on an earlier message is not the composer`, async () => {
      const { context, fixture, page } = await open({ layout, editOpen: true });
      const { ui } = fixture;
      const editor = page.locator('.edit-box').locator(layout === 'thread' ? '[contenteditable="true"][role="textbox"]' : 'textarea');
      await expect(editor).toBeVisible();
      expect(await editor.evaluate((el) => el.value ?? el.textContent)).toBe('Run the tests');
      expect(await editor.evaluate((el) => Boolean(el.closest('form'))), 'the edit box lives in the turn, outside the composer form').toBe(false);
      await expect(page.locator('.edit-box button', { hasText: LABELS.en.editSend })).toBeVisible();
      await expect(page.locator(ui.composer)).toHaveCount(1);
      // The composer still sends on its own; the edit box stays open and unchanged.
      await send(page, fixture, 'From the composer');
      await expect(page.locator(ui.finished)).toHaveCount(3);
      expect(await editor.evaluate((el) => el.value ?? el.textContent)).toBe('Run the tests');
      // The edit box's own Send submits the edited message and closes the box.
      await editor.click();
      await page.keyboard.press('End');
      await page.keyboard.type(' again');
      await page.locator('.edit-box button', { hasText: LABELS.en.editSend }).click();
      await expect(page.locator('.edit-box')).toHaveCount(0);
      await expect(page.locator(ui.finished)).toHaveCount(4);
      expect(fixture.server.map((m) => m.text)).toEqual(['From the composer', 'Run the tests again']);
      await context.close();
    });

    test(`${layout}: read aloud shows a "Stop" that is not generation`, async () => {
      const { context, fixture, page } = await open({ layout });
      const { ui } = fixture;
      await page.locator(ui.readAloud).last().click();
      const reading = page.locator(`button[aria-label="${LABELS.en.stopReading}"]`);
      await expect(reading).toHaveCount(1);
      expect(await reading.evaluate((el) => Boolean(el.closest('form'))), 'the read-aloud Stop is on the message, not in the composer').toBe(false);
      await expect(page.locator(ui.stop), 'no generation Stop').toHaveCount(0);
      if (layout !== 'thread') await expect(reading).toHaveAttribute('data-testid', 'voice-stop-turn-action-button');
      await reading.click();
      await expect(page.locator(ui.readAloud)).toHaveCount(2);
      await context.close();
    });

    test(`${layout}: an error reply shows the layout's error card; Retry regenerates it`, async () => {
      const { context, fixture, page } = await open({ layout });
      const { ui } = fixture;
      fixture.failNext = true;
      await send(page, fixture, 'Break it');
      const card = page.locator('div', { hasText: FAILURE_TEXT }).last();
      await expect(card).toBeVisible();
      const retry = page.getByRole('button', { name: 'Retry', exact: true });
      await expect(retry).toHaveCount(1);
      if (layout === 'thread') {
        expect(await card.evaluate((el) => Boolean(el.closest('[role="alert"]'))), 'thread: the card has no role="alert"').toBe(false);
        expect(await retry.evaluate((el) => [el.getAttribute('data-testid'), el.getAttribute('aria-label'), el.textContent])).toEqual([null, null, 'Retry']);
      } else {
        await expect(page.locator('[role="alert"] button[data-testid="regenerate-thread-error-button"]')).toHaveText('Retry');
      }
      await expect(page.locator(ui.stop)).toHaveCount(0);
      await expect(page.locator(ui.finished), 'a failed reply is not finished').toHaveCount(2);
      await retry.click();
      await expect(page.locator(ui.finished)).toHaveCount(3);
      await expect(page.locator(ui.assistantTurn).last()).toHaveText(NO_TOOLS_REPLY);
      await expect(page.getByText(FAILURE_TEXT)).toHaveCount(0);
      expect(fixture.retries).toBe(1);
      expect(fixture.server.map((m) => m.text), 'Retry sends no user message').toEqual(['Break it']);
      await page.reload();
      await expect(page.locator(ui.finished)).toHaveCount(3);
      await context.close();
    });

    test(`${layout}: late confirmation and a held submit lost by a reload (same backend in every layout)`, async () => {
      const { context, fixture, page } = await open({ layout });
      const { ui } = fixture;
      // Late confirmation: the backend has the message well before the page shows it.
      fixture.confirmDelayMs = 3_000;
      await send(page, fixture, 'Confirm me late');
      await expect.poll(() => fixture.server.length).toBe(1);
      await expect(page.locator(ui.userTurn).filter({ hasText: 'Confirm me late' }), 'not shown yet').toHaveCount(0);
      await expect(page.locator(ui.composer)).toHaveText('');
      await expect(page.locator(ui.stop), 'the page is busy meanwhile').toBeVisible();
      await expect(page.locator(ui.userTurn).last()).toHaveText('Confirm me late', { timeout: 15_000 });
      await expect(page.locator(ui.finished)).toHaveCount(3);
      fixture.confirmDelayMs = 0;

      // Held submit: Send was clicked, the page has not submitted yet; a reload loses it.
      fixture.holdSubmit = true;
      await send(page, fixture, 'Lost in the reload');
      await expect.poll(() => fixture.heldSubmits).toBe(1);
      await expect(page.locator(ui.composer)).toHaveText('');
      await expect(page.locator(ui.stop)).toBeVisible();
      expect(fixture.server).toHaveLength(1);
      await page.reload();
      fixture.holdSubmit = false;
      expect(fixture.releaseSubmits()).toBe(1);
      // Checkpoint: a message sent after the reload arrives; the lost one never did.
      await send(page, fixture, 'After the reload');
      await expect(page.locator(ui.finished)).toHaveCount(4);
      expect(fixture.server.map((m) => m.text)).toEqual(['Confirm me late', 'After the reload']);
      await expect(page.getByText('Lost in the reload')).toHaveCount(0);

      // Held then released without a reload: it goes through.
      fixture.holdSubmit = true;
      await send(page, fixture, 'Held, then released');
      await expect.poll(() => fixture.heldSubmits).toBe(1);
      fixture.holdSubmit = false;
      expect(fixture.releaseSubmits()).toBe(1);
      await expect(page.locator(ui.userTurn).last()).toHaveText('Held, then released');
      await expect(page.locator(ui.finished)).toHaveCount(5);
      expect(fixture.server.map((m) => m.text)).toEqual(['Confirm me late', 'After the reload', 'Held, then released']);
      await context.close();
    });
  });
}

// Mixed pages (issue 25): one generation's turns with another's composer, Send and Stop, as
// a staged rollout renders them; and the fact faults, where one needed fact is missing or
// ambiguous. A human still chats on every one of them.
test.describe('mixed pages and fact faults', () => {
  const shapeOf = (page) => page.evaluate(() => ({
    threadTurns: document.querySelectorAll('[data-turn-key]').length,
    sectionTurns: document.querySelectorAll('section[data-testid^="conversation-turn-"]').length,
    articleTurns: document.querySelectorAll('article[data-testid^="conversation-turn-"]').length,
    promptTextarea: document.querySelectorAll('#prompt-textarea').length,
    threadComposers: document.querySelectorAll('form[data-chatgpt-composer] [data-composer-markdown]').length,
    classicForms: document.querySelectorAll('form[data-type="unified-composer"]').length,
  }));

  test('thread turns with classic\'s single flipping submit button: it flips to Stop while the reply streams', async () => {
    const { context, fixture, page } = await open({ layout: 'thread', composer: 'classic', submit: 'flip', streamMs: 1500 });
    expect(await shapeOf(page)).toEqual({ threadTurns: 2, sectionTurns: 0, articleTurns: 0, promptTextarea: 1, threadComposers: 0, classicForms: 1 });
    const submit = page.locator('#composer-submit-button');
    await expect(submit).toHaveAttribute('data-testid', 'send-button');
    await expect(submit).toBeDisabled();
    await send(page, fixture, 'Mixed hello');
    await expect(submit).toHaveAttribute('data-testid', 'stop-button');
    await expect(submit).toHaveAttribute('aria-label', LABELS.en.stopClassic);
    await expect(page.locator(fixture.ui.finished)).toHaveCount(3, { timeout: 10_000 });
    await expect(submit).toHaveAttribute('data-testid', 'send-button');
    expect(fixture.server.map((m) => m.text)).toEqual(['Mixed hello']);
    expect((await shapeOf(page)).threadTurns, 'the new request is a thread turn').toBe(3);
    await context.close();
  });

  for (const lang of ['en', 'zh']) {
    test(`section turns with the thread composer (${lang}): label-only Send and Stop in the thread form`, async () => {
      const { context, fixture, page } = await open({ layout: 'section', composer: 'thread', lang, streamMs: 1500 });
      const l = LABELS[lang];
      expect(await shapeOf(page)).toEqual({ threadTurns: 0, sectionTurns: 4, articleTurns: 0, promptTextarea: 0, threadComposers: 1, classicForms: 0 });
      await send(page, fixture, 'Section with thread composer');
      await expect(page.locator(`form[data-chatgpt-composer] button[type="button"][aria-label="${l.stopThread}"]`)).toBeVisible();
      await expect(page.locator(fixture.ui.finished)).toHaveCount(3, { timeout: 10_000 });
      expect((await shapeOf(page)).sectionTurns).toBe(6);
      expect(fixture.server.map((m) => m.text)).toEqual(['Section with thread composer']);
      await context.close();
    });
  }

  test('fact faults: a composer with no known marker, two composers, two Sends; the page\'s own composer still sends', async () => {
    const checks = {
      no_composer: () => ({
        known: document.querySelectorAll('#prompt-textarea, [data-composer-markdown], .ProseMirror').length,
        editor: document.querySelectorAll('[data-fixture-editor][contenteditable="true"][role="textbox"]').length,
      }),
      two_composers: () => ({ composers: document.querySelectorAll('#prompt-textarea').length, extra: document.querySelectorAll('form[data-fixture-extra]').length }),
      two_sends: () => ({
        sends: [...document.querySelectorAll('form button[aria-label]')].filter((b) => b.getAttribute('aria-label') === 'Send prompt').length,
      }),
    };
    const want = { no_composer: { known: 0, editor: 1 }, two_composers: { composers: 2, extra: 1 }, two_sends: { sends: 2 } };
    for (const factFault of Object.keys(checks)) {
      const { context, fixture, page } = await open({ layout: 'thread', composer: 'classic', factFault });
      expect(await page.evaluate(checks[factFault]), factFault).toEqual(want[factFault]);
      await send(page, fixture, `Through the page's own composer (${factFault})`);
      await expect.poll(() => fixture.server.map((m) => m.text), { message: factFault }).toEqual([`Through the page's own composer (${factFault})`]);
      // The extra controls do nothing.
      if (factFault === 'two_sends') {
        await page.locator('button[data-fixture-extra]').click();
        expect(fixture.server).toHaveLength(1);
      }
      await context.close();
    }
  });
});

// Issue 26 Found 7 (PROTOCOL.md "Recovery"): the stale-view probe compares normalised text,
// not the server's markdown length against the page's rendered text. extension/plain-text.js
// (loaded before content.js) is run here as the browser runs it, on a finished reply as the
// server holds it (markdown) and as the page renders it: the normalised server text is not
// "clearly longer" (ext-core stale_view: > 16 characters and > 5 % longer), where the raw
// markdown was; a page that froze half-way still reads as clearly shorter. No browser needed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';
import { test, expect } from '@playwright/test';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const context = vm.createContext({});
vm.runInContext(readFileSync(path.join(ROOT, 'extension', 'plain-text.js'), 'utf8'), context);
const { plainLength, markdownPlain } = vm.runInContext("globalThis[Symbol.for('herdr-continuity.plain-text')]", context);
// ext-core stale_view::CLEARLY_LONGER_CHARS / CLEARLY_LONGER_PERCENT.
const clearlyLonger = (server, dom) => server > dom + 16 && server * 100 > dom * 105;

const MARKDOWN = [
  '## Migration result',
  '',
  'The run **finished** on staging; see [the runbook](https://docs.example.com/runbooks/migrations/2026-12/staging?section=rollback&lang=en "Runbook") and `scripts/migrate.sh`.',
  '',
  '1. Counts match ([report](https://ci.example.com/jobs/4711/artifacts/report.html)).',
  '2. The rollback script is ready.',
  '   - [x] dry run',
  '   - [ ] review tomorrow',
  '',
  '> Note: the index rebuild ran twice.',
  '',
  '| table | rows before | rows after |',
  '|:------|------------:|-----------:|',
  '| users | 1204 | 1204 |',
  '| orders | 88210 | 88210 |',
  '',
  '```bash',
  'psql -c "select count(*) from users"',
  '```',
  '',
  '---',
  'Citations follow \ue200cite\ue202turn0search1\ue202turn0search4\ue201 and snake_case_names stay.',
].join('\n');

// What the page shows for it (textContent of the rendered reply: the code block's language
// label and "Copy code" button included, the table's cells without pipes).
const RENDERED = [
  'Migration result',
  'The run finished on staging; see the runbook and scripts/migrate.sh.',
  'Counts match (report).',
  'The rollback script is ready.',
  'dry run',
  'review tomorrow',
  'Note: the index rebuild ran twice.',
  'tablerows beforerows after',
  'users12041204',
  'orders8821088210',
  'bashCopy code',
  'psql -c "select count(*) from users"',
  'Citations follow  and snake_case_names stay.',
].join('');

test('a finished markdown reply does not read as "server ahead" of its rendering', () => {
  expect(clearlyLonger(MARKDOWN.length, RENDERED.length), 'raw lengths (the old comparison) say server ahead').toBe(true);
  const server = plainLength(markdownPlain(MARKDOWN));
  const dom = plainLength(RENDERED);
  expect(clearlyLonger(server, dom), `normalised: server ${server}, page ${dom}`).toBe(false);
  expect(server, 'nothing of the prose is lost').toBeGreaterThan(dom * 0.8);
});

test('a page that froze half-way still reads as clearly behind the server', () => {
  const half = RENDERED.slice(0, Math.floor(RENDERED.length / 2));
  expect(clearlyLonger(plainLength(markdownPlain(MARKDOWN)), plainLength(half))).toBe(true);
});

test('markdown syntax goes, the text stays', () => {
  expect(markdownPlain('**bold** and __strong__ and ~~gone~~ and `code`')).toBe('bold and strong and gone and code');
  // An image shows no text on the page (its alt is an attribute).
  expect(markdownPlain('see [a link](https://x.test/a_(b)) and ![alt](https://x.test/i.png)')).toBe('see a link and ');
  expect(markdownPlain('# Title\n> quote\n- item\n* item\n+ item\n12. item\n- [x] done')).toBe('Title\nquote\nitem\nitem\nitem\nitem\ndone');
  expect(markdownPlain('a_b_c * 2 < 3')).toBe('a_b_c * 2 < 3');
  expect(plainLength(' a\n\tb \u200b c ')).toBe(3);
});

// A reply with a big HTML code block: the page shows the code verbatim (tags, pipes,
// backticks, list-like lines), so the server side must count it verbatim too — a page that
// froze at 60 % of it reads as clearly behind.
const HTML_BLOCK = [
  'Here is the page:',
  '',
  '```html',
  ...Array.from({ length: 30 }, (_, i) => `<li class="row-${i}"><a href="/items/${i}">Item | ${i}</a> <code>Vec<String></code></li>`),
  '- not a list: code',
  '```',
  '',
  'Prose keeps `Vec<String>` and a <br> tag goes.',
].join('\n');
const HTML_RENDERED = [
  'Here is the page:',
  'htmlCopy code',
  ...Array.from({ length: 30 }, (_, i) => `<li class="row-${i}"><a href="/items/${i}">Item | ${i}</a> <code>Vec<String></code></li>`),
  '- not a list: code',
  'Prose keeps Vec<String> and a  tag goes.',
].join('\n');

test('a code block is counted verbatim: a page frozen at 60 % of an HTML block is clearly behind', () => {
  const server = plainLength(markdownPlain(HTML_BLOCK));
  expect(clearlyLonger(server, plainLength(HTML_RENDERED)), 'the finished page is not behind').toBe(false);
  const frozen = HTML_RENDERED.slice(0, Math.floor(HTML_RENDERED.length * 0.6));
  expect(clearlyLonger(server, plainLength(frozen)), `server ${server}, frozen page ${plainLength(frozen)}`).toBe(true);
  expect(markdownPlain('```\n<b>|x|</b> `y` **z**\n```')).toBe('<b>|x|</b> `y` **z**');
});

test('a reply with reference-style links is not "server ahead" of its rendering', () => {
  const markdown = [
    'See [the runbook][runbook], [the report][2] and ![diagram][img] for details \\_ok\\_ &amp; done.',
    '',
    '[runbook]: https://docs.example.com/runbooks/migrations/2026-12/staging?section=rollback&lang=en "Runbook"',
    '[2]: https://ci.example.com/jobs/4711/artifacts/report.html',
    '[img]: https://cdn.example.com/diagrams/migration-flow-2026-12-staging-rollback.png',
  ].join('\n');
  const rendered = 'See the runbook, the report and  for details _ok_ & done.';
  const server = plainLength(markdownPlain(markdown));
  expect(clearlyLonger(server, plainLength(rendered)), `server ${server}, page ${plainLength(rendered)}`).toBe(false);
  expect(server).toBe(plainLength(rendered));
});

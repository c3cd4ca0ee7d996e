// The real content scripts (extension/content*.js, in manifest order) on a recorded DOM snippet, without the
// extension: a stand-in `chrome.runtime.connect` hands it a port the test drives, so the
// test plays the worker — it sends the site profile ext-core produced and delivery
// commands, and reads every message the adapter posted (page_facts, page_diagnostics,
// delivery_report). Used by e2e/specs/site-profiles.spec.mjs.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './paths.mjs';

export const SNIPPET_DIR = path.join(REPO_ROOT, 'e2e', 'snippets');
export const SNIPPET_ORIGIN = 'https://snippets.herdr.test';
// The content scripts in the manifest's order (plain-text.js first: the snapshot comparison's
// lengths), without the Queue button (queue-button.js), which the adapter runs without.
const MANIFEST = JSON.parse(readFileSync(path.join(REPO_ROOT, 'manifest', 'manifest.json'), 'utf8'));
// Joined into one source and evaluated at once: Chrome runs the files of one `content_scripts`
// entry in sequence in one task, so no timer or mutation callback of an earlier file runs
// before the later files have defined what it uses.
const CONTENT_SCRIPTS = MANIFEST.content_scripts[0].js
  .filter((file) => file !== 'queue-button.js')
  .map((file) => readFileSync(path.join(REPO_ROOT, 'extension', file), 'utf8'))
  .join('\n;\n');

let profilesJson = null;
/**
 * Every site profile as the worker sends it: the flat profile (schema 1, one probe chain per
 * fact, each probe with its `gens` and `fallback`), from `cargo run -p ext-core --example
 * site_profiles`, run once per process (the runner and each worker load many specs); each
 * call returns its own copy.
 */
export function siteProfiles() {
  profilesJson ??= execFileSync('cargo', ['run', '--quiet', '-p', 'ext-core', '--example', 'site_profiles'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 22,
  });
  return JSON.parse(profilesJson);
}

/** The snippets: `{ file, site, generation (null for "none"), state }` from each first line. */
export function snippets() {
  return readdirSync(SNIPPET_DIR)
    .filter((file) => file.endsWith('.html'))
    .sort()
    .map((file) => {
      const head = readFileSync(path.join(SNIPPET_DIR, file), 'utf8').split('\n', 1)[0];
      const field = (name) => head.match(new RegExp(`${name}: ([^·]+?)\\s*(?:·|-->)`))?.[1];
      const generation = field('generation');
      return { file, site: field('site'), generation: generation === 'none' ? null : generation, state: field('state') };
    });
}

/** Serves the snippets (optionally with extra `<head>` markup) on SNIPPET_ORIGIN. */
export async function serveSnippets(context, { head = '' } = {}) {
  await context.route(`${SNIPPET_ORIGIN}/**`, (route) => {
    const file = decodeURIComponent(new URL(route.request().url()).pathname.slice(1));
    const body = readFileSync(path.join(SNIPPET_DIR, path.basename(file)), 'utf8');
    route.fulfill({
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: `<!doctype html><html lang="en"><head><meta charset="utf-8">${head}</head><body>${body}</body></html>`,
    });
  });
}

/**
 * One browser context serving the snippets for the tests of a `describe` (opened before
 * them on the plain browser, closed after with `closeContexts`); returns its getter.
 */
export function snippetContext(test, closeContexts) {
  let browser = null;
  let context = null;
  test.beforeAll(async ({ plainBrowser }) => {
    browser = plainBrowser;
    context = await browser.newContext();
    await serveSnippets(context);
  });
  test.afterAll(() => closeContexts(browser));
  return () => context;
}

// Installed in the page before the content script: the stand-in chrome API. Every port the
// adapter opens is kept; `posted` holds `{ port, message }` for every message it sent.
function installStandIn() {
  const herdr = { ports: [], posted: [], clicks: [] };
  const connect = () => {
    const index = herdr.ports.length;
    const port = {
      messageListeners: [],
      disconnectListeners: [],
      postMessage: (message) => herdr.posted.push({ port: index, message: JSON.parse(JSON.stringify(message)) }),
      onMessage: { addListener: (f) => port.messageListeners.push(f) },
      onDisconnect: { addListener: (f) => port.disconnectListeners.push(f) },
    };
    herdr.ports.push(port);
    return port;
  };
  herdr.send = (message) => herdr.ports[herdr.ports.length - 1].messageListeners.forEach((f) => f(message));
  herdr.drop = () => herdr.ports[herdr.ports.length - 1].disconnectListeners.forEach((f) => f());
  herdr.last = (type) => herdr.posted.filter((p) => p.message.type === type).map((p) => p.message).pop() ?? null;
  // Every click that reaches a button (trusted or not), to prove what was never clicked.
  document.addEventListener('click', (event) => {
    const button = event.target.closest?.('button, [role="button"]');
    if (button) herdr.clicks.push(button.getAttribute('aria-label') || button.getAttribute('data-testid') || button.className || button.tagName);
  }, true);
  Object.defineProperty(window, '__herdr', { value: herdr });
  Object.defineProperty(window, 'chrome', {
    configurable: true,
    writable: true,
    value: { runtime: { connect }, i18n: { getMessage: (key) => key } },
  });
}

/**
 * Opens `file` in a new page, runs the content script there and sends it `profile`
 * (a flat site profile or null). Returns the page.
 */
export async function openSnippet(context, file, profile) {
  const page = await context.newPage();
  await page.goto(`${SNIPPET_ORIGIN}/${file}`);
  await runAdapter(page, profile);
  return page;
}

/** Runs the content script on `page` as it is (a snippet, or a fixture's page) and sends it `profile`. */
export async function runAdapter(page, profile) {
  await page.evaluate(installStandIn);
  // Runtime.evaluate, like a content script, is not subject to the page's CSP.
  await page.evaluate(CONTENT_SCRIPTS);
  await sendToPage(page, { type: 'profile', profile });
}

/** Runs the content scripts on `page` once more, as a second injection into the same world would. */
export async function runContentScriptsAgain(page) {
  await page.evaluate(CONTENT_SCRIPTS);
}

/** Posts `message` to the adapter as the worker would. */
export function sendToPage(page, message) {
  return page.evaluate((m) => window.__herdr.send(m), message);
}

/** The adapter's newest message of `type`, or null. */
export function lastPosted(page, type) {
  return page.evaluate((t) => window.__herdr.last(t), type);
}

/** Every `{ port, message }` the adapter posted. */
export function allPosted(page) {
  return page.evaluate(() => window.__herdr.posted);
}

/** The buttons clicked so far (label, test id or class). */
export function clicks(page) {
  return page.evaluate(() => window.__herdr.clicks);
}

/** The adapter's description of a probe in `page_diagnostics.facts` (content-probes.js `describe`). */
export function describeProbe(probe) {
  const filters = ['label', 'text', 'icon', 'attr', 'beside'].filter((key) => probe[key]).map((key) => `${key}=${probe[key]}`);
  if (probe.unique) filters.push('unique');
  return [probe.css, ...filters].join(' ').slice(0, 256);
}

// Our own page UI (the HUD, the Queue button) lives in CLOSED shadow roots and acts only on
// trusted input (extension/content-hud.js `onTrusted`). Playwright's locators pierce open
// shadow roots only, and a page-world `el.click()` is untrusted, so the tests reach our UI
// the way nothing on the page can:
// - reads run in the content script's isolated world (CDP `Runtime.evaluate` in the
//   execution context Chrome made for this extension in the page's main frame), where
//   `chrome.dom.openOrClosedShadowRoot(host)` — an extension-only API — returns the root;
// - clicks and keys are real input (`page.mouse` at the element's centre, `page.keyboard`
//   on the focused element), so they arrive with `isTrusted` like a user's.
// The product exposes nothing for this: no open root, no hook, no test build.
//
// `ShadowLocator` is the subset of Playwright's Locator the specs use; `expect` (re-exported
// by lib/test.mjs) takes a ShadowLocator where Playwright's takes a Locator and polls the
// same matchers (toHaveAttribute, toHaveClass, toContainText, toHaveText, toBeVisible, toBeHidden,
// toBeEnabled, toBeDisabled, toBeAttached, toHaveCount, toBeFocused), `.not` included.
import { expect as baseExpect, test as baseTest } from '@playwright/test';

const EXTENSION_ORIGIN = 'chrome-extension://';
const contexts = new WeakMap(); // page → { cdp, ids: Map<frameId, contextId>, main }

/** The CDP session of `page` that tracks our content script's isolated worlds. */
async function worlds(page) {
  let entry = contexts.get(page);
  if (entry) return entry;
  const cdp = await page.context().newCDPSession(page);
  entry = { cdp, ids: new Map(), main: null };
  contexts.set(page, entry);
  cdp.on('Runtime.executionContextCreated', ({ context }) => {
    const aux = context.auxData ?? {};
    if (aux.type === 'isolated' && String(context.origin).startsWith(EXTENSION_ORIGIN)) entry.ids.set(aux.frameId, context.id);
  });
  cdp.on('Runtime.executionContextDestroyed', ({ executionContextId }) => {
    for (const [frame, id] of entry.ids) if (id === executionContextId) entry.ids.delete(frame);
  });
  cdp.on('Runtime.executionContextsCleared', () => entry.ids.clear());
  const { frameTree } = await cdp.send('Page.getFrameTree');
  entry.main = frameTree.frame.id;
  cdp.on('Page.frameNavigated', ({ frame }) => { if (!frame.parentId) entry.main = frame.id; });
  await cdp.send('Page.enable');
  await cdp.send('Runtime.enable');
  return entry;
}

/**
 * Runs `fn(arg)` (a self-contained function) in our content script's isolated world of
 * `page`'s main frame and returns its JSON value; `undefined` when the content script has
 * no world there yet (a page still loading).
 */
export async function inContentWorld(page, fn, arg) {
  const entry = await worlds(page);
  const contextId = entry.ids.get(entry.main);
  if (contextId === undefined) return undefined;
  const answer = await entry.cdp.send('Runtime.evaluate', {
    expression: `(${fn})(${JSON.stringify(arg ?? null)})`,
    contextId,
    returnByValue: true,
    awaitPromise: true,
  }).catch(() => null);
  if (!answer || answer.exceptionDetails) return undefined;
  return answer.result.value;
}

// Runs in the isolated world: the element(s) `query` names, and what a matcher reads.
// `query`: { host, path: [css…], nth } — `path` empty: the host itself; each css is looked
// for inside the previous match (the first step inside the host's closed root).
function findAll(query) {
  const host = document.querySelector(query.host);
  let found = host ? [host] : [];
  for (const [i, css] of query.path.entries()) {
    const scopes = i === 0 ? found.map((h) => chrome.dom.openOrClosedShadowRoot(h)).filter(Boolean) : found;
    found = scopes.flatMap((scope) => [...scope.querySelectorAll(css)]);
  }
  return found;
}

// `fn(input, findAll)` as a self-contained function for `inContentWorld`.
const withFind = (fn) => new Function('input', `return (${fn})(input, ${findAll});`);

function probeWith({ query, read }, find) {
  const found = find(query);
  if (read === 'count') return found.length;
  const el = query.nth === -1 ? found.at(-1) : found[query.nth];
  if (!el) return { attached: false };
  const box = el.getBoundingClientRect();
  const style = getComputedStyle(el);
  const visible = box.width > 0 && box.height > 0 && style.visibility !== 'hidden' && el.checkVisibility?.() !== false;
  const rootOf = el.getRootNode();
  // What a click at the centre would reach (Playwright's hit-target check): the element
  // itself or something inside it, not a line that moved over it.
  const atCentre = rootOf.elementFromPoint?.(box.x + box.width / 2, box.y + box.height / 2) ?? null;
  const result = {
    attached: true,
    visible,
    enabled: !el.disabled && el.getAttribute('aria-disabled') !== 'true',
    focused: (rootOf.activeElement ?? document.activeElement) === el,
    text: el.textContent ?? '',
    innerText: el.innerText ?? el.textContent ?? '',
    attributes: Object.fromEntries([...el.attributes].map((a) => [a.name, a.value])),
    box: { x: box.x + box.width / 2, y: box.y + box.height / 2 },
    rect: { x: box.x, y: box.y, width: box.width, height: box.height },
    hit: atCentre !== null && (atCentre === el || el.contains(atCentre)),
    // An element whose presses wait for the browser to have seen it whole for 600 ms
    // (content-hud.js `pressGuard`, PRESS_SETTLE_MS) carries, on itself or an ancestor in
    // the root, when that began (`data-seen-since`; "" while not seen whole); one whose
    // presses wait for its host to have stood still as long (queue-button.js), since when
    // it has (`data-placed-since`).
    settled: ['seenSince', 'placedSince'].every((hook) => {
      const since = el.closest(`[data-${hook.replace('S', '-s')}]`)?.dataset[hook];
      return since === undefined || (since !== '' && performance.now() - Number(since) >= 600);
    }),
  };
  if (read === 'scroll') el.scrollIntoView({ block: 'center', inline: 'center' });
  if (read === 'focus') el.focus();
  return result;
}

const CLICK_ATTEMPTS = 3;
// The event a release of each mouse button makes on the element it was pressed on.
const CLICK_EVENT = { left: 'click', right: 'contextmenu' };

// Runs in the isolated world: watches the next click (`type`: the event the button's release
// makes) inside the element's root. A click on
// the element (or inside it) goes on; one on anything else there is stopped in the capture
// phase, before any of our listeners sees it.
function armClickWith({ query, type }, find) {
  const found = find(query);
  const el = query.nth === -1 ? found.at(-1) : found[query.nth];
  const watch = { landed: 'outside', stop: () => {} };
  globalThis.__herdrTestClickWatch?.stop();
  globalThis.__herdrTestClickWatch = watch;
  if (!el) return false;
  const root = el.getRootNode();
  const onClick = (event) => {
    if (event.composedPath().includes(el)) {
      watch.landed = 'hit';
    } else {
      watch.landed = `stopped on ${event.composedPath()[0]?.nodeName ?? '?'}`;
      event.stopImmediatePropagation();
      event.preventDefault();
    }
    watch.stop();
  };
  root.addEventListener(type, onClick, true);
  watch.stop = () => root.removeEventListener(type, onClick, true);
  return true;
}

// Where the watched click landed ('hit', 'stopped on …', or 'outside' the root); the
// watch ends. CDP's mouse release answers once the page handled it, so the click was
// dispatched by now.
function disarmClick() {
  const watch = globalThis.__herdrTestClickWatch;
  if (!watch) return 'outside';
  watch.stop();
  globalThis.__herdrTestClickWatch = null;
  return watch.landed;
}

const probe = withFind(probeWith);
const armClick = withFind(armClickWith);

/**
 * Runs `fn(root, host, arg)` in our content script's isolated world, `root` being the closed
 * shadow root of the element `host` (CSS) names (null when there is none): for what a
 * matcher does not read (the focused element, clearing a status line).
 */
export function inShadowRoot(page, host, fn, arg) {
  const run = new Function('input', `const host = document.querySelector(input.host);
    const root = host ? chrome.dom.openOrClosedShadowRoot(host) : null;
    return (${fn})(root, host, input.arg);`);
  return inContentWorld(page, run, { host, arg });
}

/** A Locator-like handle on our UI: `host` (CSS of the host element) and a path inside it. */
export class ShadowLocator {
  constructor(page, host, path = [], nthIndex = 0) {
    this.page = page;
    this.query = { host, path, nth: nthIndex };
  }

  /** Something inside this element (the host: inside its closed root). */
  locator(css) {
    return new ShadowLocator(this.page, this.query.host, [...this.query.path, css], 0);
  }

  first() { return new ShadowLocator(this.page, this.query.host, this.query.path, 0); }
  last() { return new ShadowLocator(this.page, this.query.host, this.query.path, -1); }
  nth(i) { return new ShadowLocator(this.page, this.query.host, this.query.path, i); }

  toString() { return `${this.query.host} ⟶ ${this.query.path.join(' ⟶ ') || '(host)'} [${this.query.nth}]`; }

  /** What the element shows now (`{attached: false}` when it is not there). */
  async state(read = 'state') {
    return (await inContentWorld(this.page, probe, { query: this.query, read })) ?? { attached: false };
  }

  async count() { return (await inContentWorld(this.page, probe, { query: this.query, read: 'count' })) ?? 0; }
  async getAttribute(name) { const s = await this.state(); return s.attached ? (s.attributes[name] ?? null) : null; }
  async textContent() { const s = await this.state(); return s.attached ? s.text : null; }
  async innerText() { const s = await this.state(); return s.attached ? s.innerText : ''; }
  async isVisible() { return Boolean((await this.state()).visible); }
  async isEnabled() { return Boolean((await this.state()).enabled); }

  async boundingBox() { const s = await this.state(); return s.attached ? s.rect : null; }

  /** `fn(element, arg)` in our isolated world (the element this locator names, or null). */
  evaluate(fn, arg) {
    // The same walk as every other read (findAll), so `evaluate` names the element `state`,
    // `count` and the clicks name.
    const run = new Function('input', 'find', `const all = find(input.query);
      const el = input.query.nth === -1 ? all.at(-1) : all[input.query.nth];
      return (${fn})(el ?? null, input.arg);`);
    return inContentWorld(this.page, withFind(run), { query: this.query, arg });
  }

  /** Waits until the element is there, visible and enabled; returns its centre. */
  // Visible, enabled, at the same place in two looks in a row (the HUD re-lays out as views
  // arrive: a click read from a moving box lands beside it), not covered at its centre, and
  // seen whole long enough where a press guard watches it (`settled`).
  // `force`: visible and enabled only (a test that makes the page move our host on purpose).
  async actionable(timeout = 15_000, force = false) {
    let point = null;
    let before = null;
    await baseExpect.poll(async () => {
      const s = await this.state('scroll');
      if (!s.attached || !s.visible || !s.enabled) return false;
      const now = await this.state();
      if (force) {
        point = now.box;
        return true;
      }
      const stable = now.box.x === s.box.x && now.box.y === s.box.y && (!before || (before.x === now.box.x && before.y === now.box.y));
      before = now.box;
      if (!stable || !now.hit || !now.settled) return false;
      point = now.box;
      return true;
    }, { message: `${this} is visible, enabled, still and not covered`, timeout }).toBe(true);
    return point;
  }

  /**
   * A real mouse click at the element's centre (a trusted event). The HUD may re-lay out
   * between the last look and the press (a view that adds or removes a line moves the
   * buttons): the click is watched inside the element's root, and one that would land on
   * anything else there is stopped before it does anything and tried again, as Playwright's
   * own hit-target check does — said in the console and the test's annotations
   * (`click-again`), never silently. `force`: one click at the point, unwatched (tests that move
   * or cover our host on purpose).
   */
  async click({ button = 'left', timeout, force = false } = {}) {
    for (let attempt = 1; ; attempt += 1) {
      const { x, y } = await this.actionable(timeout, force);
      if (force) {
        await this.page.mouse.click(x, y, { button });
        return;
      }
      // Not armed (the element left the tree since the look): no click, look again.
      const armed = await inContentWorld(this.page, armClick, { query: this.query, type: CLICK_EVENT[button] ?? 'auxclick' });
      let landed = 'nowhere: the element was gone when the click was armed';
      if (armed) {
        await this.page.mouse.click(x, y, { button });
        landed = (await inContentWorld(this.page, disarmClick, null)) ?? 'the page went away';
        if (landed === 'hit') return;
      }
      if (attempt === CLICK_ATTEMPTS) throw new Error(`${this}: ${CLICK_ATTEMPTS} clicks at its centre landed elsewhere (last: ${landed})`);
      // Said, never silent: the report carries every click that had to be made again.
      const note = `${this}: the click landed ${landed === 'outside' ? 'outside its root' : landed}; clicked again`;
      console.warn(note);
      try { baseTest.info().annotations.push({ type: 'click-again', description: note }); } catch { /* outside a test */ }
    }
  }

  /** Focuses the element (from our world: focus is no input); keys then go to it. */
  // Once it is there and, where a press guard watches it, seen whole long enough (a key
  // press on it is judged as a click is).
  async focus() {
    await baseExpect.poll(async () => {
      const s = await this.state('focus');
      return s.attached && s.settled;
    }, { message: `${this} is there to focus, and settled` }).toBe(true);
  }

  /** Focuses the element and presses `key` on the real keyboard (a trusted event). */
  async press(key) {
    await this.focus();
    await this.page.keyboard.press(key);
  }
}

const textMatches = (actual, expected, whole) => {
  const squash = (value) => String(value).replace(/\s+/g, ' ').trim();
  if (expected instanceof RegExp) return expected.test(actual);
  return whole ? squash(actual) === squash(expected) : squash(actual).includes(squash(expected));
};

/** The matchers of a ShadowLocator: each polls the element's state until it holds (or not). */
function shadowMatchers(locator, message, not) {
  const check = (name, test, describe) => async (...args) => {
    const options = typeof args.at(-1) === 'object' && !(args.at(-1) instanceof RegExp) && args.length > test.length ? args.at(-1) : {};
    const timeout = options.timeout;
    const label = `${message ? `${message}: ` : ''}${locator} ${not ? 'not ' : ''}${name}(${describe(...args)})`;
    await baseExpect.poll(async () => test(...args)(name === 'toHaveCount' ? await locator.count() : await locator.state()),
      { message: label, timeout, intervals: POLL_INTERVALS }).toBe(!not);
  };
  const show = (...values) => values.filter((v) => typeof v !== 'object' || v instanceof RegExp).map(String).join(', ');
  return {
    toHaveAttribute: check('toHaveAttribute', (name, value) => (s) => s.attached && (value === undefined || typeof value === 'object' && !(value instanceof RegExp)
      ? name in s.attributes
      : name in s.attributes && textMatches(s.attributes[name], value, true)), show),
    toHaveClass: check('toHaveClass', (value) => (s) => s.attached && textMatches(s.attributes.class ?? '', value, true), show),
    toContainText: check('toContainText', (value) => (s) => s.attached && textMatches(s.text, value, false), show),
    toHaveText: check('toHaveText', (value) => (s) => s.attached && textMatches(s.text, value, true), show),
    toBeVisible: check('toBeVisible', () => (s) => Boolean(s.attached && s.visible), show),
    toBeHidden: check('toBeHidden', () => (s) => !s.attached || !s.visible, show),
    toBeEnabled: check('toBeEnabled', () => (s) => Boolean(s.attached && s.enabled), show),
    toBeDisabled: check('toBeDisabled', () => (s) => Boolean(s.attached && !s.enabled), show),
    toBeAttached: check('toBeAttached', () => (s) => Boolean(s.attached), show),
    toBeFocused: check('toBeFocused', () => (s) => Boolean(s.attached && s.focused), show),
    toHaveCount: check('toHaveCount', (n) => (count) => count === n, show),
  };
}

/**
 * How often a poll looks again (ms; the last repeats): a wait ends within 200 ms of its
 * condition holding. Playwright's default (100, 250, 500, then every 1 000 ms) lets a wait
 * that ends after a second or two overshoot by half a second on average, and a test waits
 * like that many times. Each look is one read (a CDP evaluate, a worker evaluate, a fixture
 * counter), cheap next to the wait; timeouts, and with them every assertion, are unchanged.
 */
export const POLL_INTERVALS = [50, 100, 100, 200];

/**
 * Playwright's `expect`, taking a ShadowLocator too (see the file's head); `expect.poll`
 * looks every POLL_INTERVALS unless the call gives its own `intervals`; everything else
 * (soft, configure, a real Locator, plain values) is Playwright's own.
 */
export const expect = new Proxy(baseExpect, {
  get(target, property, receiver) {
    if (property === 'poll') return (poll, options = {}) => target.poll(poll, { intervals: POLL_INTERVALS, ...options });
    return Reflect.get(target, property, receiver);
  },
  apply(target, thisArg, args) {
    const [actual, message] = args;
    if (!(actual instanceof ShadowLocator)) return Reflect.apply(target, thisArg, args);
    const text = typeof message === 'string' ? message : message?.message;
    return { ...shadowMatchers(actual, text, false), not: shadowMatchers(actual, text, true) };
  },
});

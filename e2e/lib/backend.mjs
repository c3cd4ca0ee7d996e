// What reached the ChatGPT fixture's fake backend (`fixture.server`, in the test process, so
// it survives reloads, tab closes and worker restarts): counting messages and asserting
// "exactly one".
//
// "Exactly one" is never asserted right after the first message arrives (a duplicate could
// still be on its way): the caller passes a checkpoint that proves the extension is done
// with that delivery (e.g. the HUD counts the wake and the page is idle again), and the
// count is taken after it.
import { expect } from './shadow.mjs';
import { MARKER_LINE } from '../fixtures/chatgpt.mjs';

/**
 * The recorded user messages that match: `conversationId` (omit for any; null = a page
 * without one), `automatic` (only those with a herdr-continuity marker line), `marker`
 * (a string or RegExp the marker id must match, e.g. /^wake:w1#/), `text` (a substring),
 * `app` (an App's name, e.g. 'Herdr': only messages that carried that App; null: only
 * messages that carried no App). Every entry keeps the server's fields, `apps` among them.
 */
export function backendMessages(fixture, { conversationId, automatic = false, marker, text, app } = {}) {
  return fixture.server.filter((m) => {
    if (conversationId !== undefined && m.conversationId !== conversationId) return false;
    const id = m.text.match(MARKER_LINE)?.[1] ?? null;
    if ((automatic || marker) && id === null) return false;
    if (marker instanceof RegExp && !marker.test(id)) return false;
    if (typeof marker === 'string' && id !== marker) return false;
    if (text !== undefined && !m.text.includes(text)) return false;
    if (app === null && (m.apps ?? []).length) return false;
    if (typeof app === 'string' && !(m.apps ?? []).some((a) => a.name === app)) return false;
    return true;
  });
}

/** How many recorded user messages match (see `backendMessages`). */
export function countMessages(fixture, filter = {}) {
  return backendMessages(fixture, filter).length;
}

/** Waits until at least `n` matching messages reached the backend; returns them. */
export async function waitForMessages(fixture, n, filter = {}, { timeout = 20_000, message } = {}) {
  await expect
    .poll(() => countMessages(fixture, filter), { timeout, message: message ?? `${n} message(s) matching ${describe(filter)} reach the backend` })
    .toBeGreaterThanOrEqual(n);
  return backendMessages(fixture, filter);
}

/**
 * Waits for one matching message at the backend, then for `checkpoint()` (proof that the
 * sender is done with it), then asserts that exactly one matching message arrived; returns
 * it. `previous` is how many matching messages were there before (they are not counted).
 */
export async function expectExactlyOne(fixture, filter = {}, { checkpoint, previous = 0, timeout = 20_000, message } = {}) {
  await waitForMessages(fixture, previous + 1, filter, { timeout, message });
  if (checkpoint) await checkpoint();
  const found = backendMessages(fixture, filter);
  expect(found.length - previous, message ?? `exactly one message matching ${describe(filter)} reached the backend`).toBe(1);
  return found[found.length - 1];
}

function describe(filter) {
  return JSON.stringify(filter, (_, v) => (v instanceof RegExp ? String(v) : v));
}

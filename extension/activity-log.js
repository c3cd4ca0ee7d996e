// The Activity timeline's store (issue 13, SPEC O1; docs/PROTOCOL.md "Activity record").
// The worker's core decides what an entry says (ext-core `continuity/activity`); this file
// only stamps the time, keeps the record bounded and durable in chrome.storage.local, and
// reads it back for the side panel. It decides nothing about the product.
//
// - Writes run one at a time through one promise chain: two entries that land together
//   are both kept (each write reads the record the previous one wrote).
// - Bounded: at most MAX_ENTRIES_PER_SCOPE entries per scope (the oldest dropped) and
//   MAX_SCOPES scopes (the one whose newest entry is oldest dropped).
// - A stored record this code cannot read is never overwritten: nothing is recorded until
//   the user clears it from the side panel (which says so).
import './contracts.js';

const { activity } = globalThis.herdrContracts;
export const ACTIVITY_KEY = activity.key;
export const ACTIVITY_VERSION = activity.version;
export const MAX_ENTRIES_PER_SCOPE = activity.max_entries_per_scope;
export const MAX_SCOPES = activity.max_scopes;

const text = (value) => typeof value === 'string';
const isEntry = (entry) => typeof entry === 'object' && entry !== null
  && Number.isFinite(entry.t) && text(entry.kind) && text(entry.outcome) && text(entry.reason)
  && (entry.id === undefined || text(entry.id)) && (entry.tool === undefined || text(entry.tool));

/**
 * The stored value, checked: `{ok: true, record}` (an empty record when nothing is stored)
 * or `{ok: false, error}` saying what is wrong with it.
 */
export function readRecord(stored) {
  if (stored === undefined) return { ok: true, record: { version: ACTIVITY_VERSION, scopes: {} } };
  if (typeof stored !== 'object' || stored === null || stored.version !== ACTIVITY_VERSION) {
    return { ok: false, error: `it is not a version ${ACTIVITY_VERSION} Activity record` };
  }
  const { scopes } = stored;
  if (typeof scopes !== 'object' || scopes === null || Array.isArray(scopes)) return { ok: false, error: 'its scopes are not an object' };
  for (const [scope, entries] of Object.entries(scopes)) {
    if (!Array.isArray(entries) || !entries.every(isEntry)) return { ok: false, error: `the entries of ${scope} are malformed` };
  }
  return { ok: true, record: stored };
}

/** Reads the stored record (see readRecord). */
export async function loadActivity() {
  const stored = await chrome.storage.local.get(ACTIVITY_KEY);
  return readRecord(stored[ACTIVITY_KEY]);
}

/** `record` with `entry` appended to its scope, within the bounds. */
export function appendEntry(record, scopeKey, entry) {
  const scopes = { ...record.scopes };
  scopes[scopeKey] = [...(scopes[scopeKey] ?? []), entry].slice(-MAX_ENTRIES_PER_SCOPE);
  const newest = (key) => scopes[key].at(-1)?.t ?? 0;
  const keys = Object.keys(scopes);
  if (keys.length > MAX_SCOPES) {
    keys.sort((a, b) => newest(a) - newest(b));
    for (const key of keys.slice(0, keys.length - MAX_SCOPES)) delete scopes[key];
  }
  return { version: ACTIVITY_VERSION, scopes };
}

let writes = Promise.resolve();

/**
 * One entry from the core (`{scope_key, kind, outcome, reason, id, tool}`), stamped with
 * Date.now() and stored. Returns the promise of its write.
 */
export function recordActivity(activity) {
  const entry = { t: Date.now(), kind: activity.kind, outcome: activity.outcome, reason: activity.reason };
  if (text(activity.id)) entry.id = activity.id;
  if (text(activity.tool)) entry.tool = activity.tool;
  writes = writes.then(async () => {
    const read = await loadActivity();
    if (!read.ok) {
      console.warn(`herdr-continuity: the Activity record cannot be read (${read.error}); it is kept and nothing is recorded until it is cleared in the side panel`);
      return;
    }
    await chrome.storage.local.set({ [ACTIVITY_KEY]: appendEntry(read.record, activity.scope_key, entry) });
  }).catch((error) => console.warn('herdr-continuity: an Activity entry was not stored:', error));
  return writes;
}

/** Removes the stored record (the side panel's Clear, after an unreadable one). */
export function clearActivity() {
  writes = writes.then(() => chrome.storage.local.remove(ACTIVITY_KEY));
  return writes;
}

// Our marker line and whose a text is (docs/PROTOCOL.md "Fenced data"), loaded before the
// content scripts that read markers. The rule lives once in Rust (protocol/src/marker.rs);
// the content scripts cannot load wasm, so this is its JavaScript copy, and
// e2e/specs/own-marker.spec.mjs runs it against the shared case list
// (protocol/tests/fixtures/own-marker-cases.json) that the Rust side is tested against too.
// Pure functions, no DOM, no state.
(() => {
  const KEY = Symbol.for('herdr-continuity.own-marker');
  if (globalThis[KEY]) return;
  // Our marker line: `[herdr-continuity <delivery id> ref=<session ref>]` (the ref is left
  // out only on a handoff seed into a chat without an id yet); group 1 is the delivery id.
  const MARKER = /\[herdr-continuity ([^\]\s]+)(?: ref=[^\]\s]+)?\]/g;
  // A message's own marker: our marker line ends every message we type, after any data
  // fence, so only the LAST marker of the text counts, and only when the nearest fence
  // delimiter before it is a closing one (or there is none): a marker inside
  // `<<<HC_DATA …>>>` … `<<<END_HC_DATA …>>>` is relayed agent/tool text and never ours.
  // null when the text has no such marker.
  const FENCE_DELIMITER = /<<<(END_)?HC_DATA [^\n]*?>>>/g;
  const ownMarker = (text) => {
    const last = [...text.matchAll(MARKER)].pop();
    if (!last) return null;
    const before = [...text.slice(0, last.index).matchAll(FENCE_DELIMITER)].pop();
    return before && !before[1] ? null : last[1];
  };
  const hasMarker = (text, id) => ownMarker(text) === id;
  // A delivery id as the worker's ledger makes them (`<subject>/<epoch>.<life>.<n>`,
  // continuity_protocol::marker `delivery_id_shaped`): a user turn is ours only by such an
  // id in its own marker line, never by its text; a marker-like line without one is the
  // human's.
  const DELIVERY_ID = /^.+\/[A-Za-z0-9]+\.\d+\.\d+$/;
  const deliveryIdShaped = (id) => DELIVERY_ID.test(id);
  const oursByMarker = (text) => {
    const id = ownMarker(text);
    return id !== null && deliveryIdShaped(id);
  };
  globalThis[KEY] = Object.freeze({ ownMarker, hasMarker, deliveryIdShaped, oursByMarker });
})();

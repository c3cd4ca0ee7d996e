// The own-marker rule lives once in Rust (protocol/src/marker.rs); the content scripts keep a
// JavaScript copy (extension/own-marker.js, loaded before the scripts that read markers).
// Both are tested against one case list, protocol/tests/fixtures/own-marker-cases.json
// (protocol/tests/marker_cases.rs for Rust): here the content scripts' copy is run as the
// browser runs it, in a fresh realm, on every case. A case the two sides decide
// differently fails here. No browser needed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';
import { test, expect } from '@playwright/test';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CASES = JSON.parse(readFileSync(path.join(ROOT, 'protocol', 'tests', 'fixtures', 'own-marker-cases.json'), 'utf8'));
const context = vm.createContext({});
vm.runInContext(readFileSync(path.join(ROOT, 'extension', 'own-marker.js'), 'utf8'), context);
const rule = vm.runInContext("globalThis[Symbol.for('herdr-continuity.own-marker')]", context);

test('the content scripts load the marker rule before the scripts that read it', () => {
  const scripts = JSON.parse(readFileSync(path.join(ROOT, 'manifest', 'manifest.json'), 'utf8')).content_scripts[0].js;
  expect(scripts).toContain('own-marker.js');
  const readers = scripts.filter((file) => /ownMarker|oursByMarker|hasMarker/.test(readFileSync(path.join(ROOT, 'extension', file), 'utf8')));
  expect(readers.length).toBeGreaterThan(1);
  for (const reader of readers) expect(scripts.indexOf('own-marker.js')).toBeLessThanOrEqual(scripts.indexOf(reader));
});

test('every own_marker case: the text\'s own marker is the one Rust finds', () => {
  expect(CASES.own_marker.length).toBeGreaterThan(0);
  const disagree = CASES.own_marker
    .map((c) => ({ why: c.why, text: c.text, want: c.own, got: rule.ownMarker(c.text) }))
    .filter((c) => c.got !== c.want);
  expect(disagree).toEqual([]);
  // hasMarker is ownMarker compared; oursByMarker adds the delivery-id shape.
  for (const c of CASES.own_marker) {
    if (c.own !== null) expect(rule.hasMarker(c.text, c.own), c.why).toBe(true);
    expect(rule.oursByMarker(c.text), c.why).toBe(c.own !== null && rule.deliveryIdShaped(c.own));
  }
});

test('every delivery_id_shaped case: the id shape is the one Rust checks', () => {
  expect(CASES.delivery_id_shaped.length).toBeGreaterThan(0);
  const disagree = CASES.delivery_id_shaped
    .map((c) => ({ id: c.id, want: c.shaped, got: rule.deliveryIdShaped(c.id) }))
    .filter((c) => c.got !== c.want);
  expect(disagree).toEqual([]);
});

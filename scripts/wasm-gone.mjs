// Where the wasm's gzip bytes are: "gzip if gone" per function or group of functions — the
// gzip -9 of the code section's function bodies minus the gzip of those bodies without the
// group (what removing that code would save, at best; docs/BENCH-LOG.md "Wasm size log").
// Needs function names: a module from build.sh's wasm-opt flags plus `-g`, e.g.
//
//   node_modules/.bin/wasm-opt <build.sh's flags without --strip-debug> -g \
//     dist/extension/pkg/ext_shell_bg.wasm -o /tmp/named.wasm   (on wasm-bindgen's output)
//   node scripts/wasm-gone.mjs /tmp/named.wasm                    the 60 largest functions
//   node scripts/wasm-gone.mjs /tmp/named.wasm 'BTreeMap|btree' '^ext_shell::wire'
//
// Each argument after the module is a regular expression over the Rust function names; a
// group's line gives its function count, raw bytes and gzip if gone. A measuring tool only:
// nothing in the build or the tests runs it.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const [file, ...groups] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/wasm-gone.mjs MODULE_WITH_NAMES.wasm [REGEX ...]');
  process.exit(2);
}
const bytes = readFileSync(file);
let at = 8;
const leb = () => {
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) return value;
  }
};
const skipName = () => {
  const length = leb();
  at += length;
};
let imported = 0;
const bodies = [];
let data = null;
const names = new Map();
while (at < bytes.length) {
  const id = bytes[at++];
  const end = leb() + at;
  if (id === 2) {
    // Imports: only the count of imported functions matters (they come first in the index).
    for (let n = leb(); n > 0; n--) {
      skipName();
      skipName();
      const kind = bytes[at++];
      if (kind === 0) {
        leb();
        imported++;
      } else if (kind === 1 || kind === 2) {
        if (kind === 1) at++; // a table's element type
        const flags = bytes[at++];
        leb();
        if (flags & 1) leb();
      } else {
        at += 2; // a global's type and mutability
      }
    }
  } else if (id === 10) {
    for (let n = leb(); n > 0; n--) {
      const size = leb();
      bodies.push([at, at + size]);
      at += size;
    }
  } else if (id === 11) {
    data = bytes.subarray(at, end);
  } else if (id === 0) {
    const length = leb();
    const name = bytes.toString('utf8', at, at + length);
    at += length;
    while (name === 'name' && at < end) {
      const sub = bytes[at++];
      const subEnd = leb() + at;
      // The function names subsection: (index, name) pairs.
      if (sub === 1) {
        for (let n = leb(); n > 0; n--) {
          const index = leb();
          const size = leb();
          names.set(index, bytes.toString('utf8', at, at + size));
          at += size;
        }
      }
      at = subEnd;
    }
  }
  at = end;
}
if (names.size === 0) throw new Error(`${file} has no function names: build it with wasm-opt -g`);
const gzip = (buffer) => gzipSync(buffer, { level: 9 }).length;
const functions = bodies.map(([start, end], i) => ({ name: names.get(imported + i) ?? `#${imported + i}`, body: bytes.subarray(start, end) }));
const code = (keep) => Buffer.concat(functions.filter(keep).map((f) => f.body));
const total = gzip(code(() => true));
console.log(`code ${code(() => true).length} B raw, ${total} B gzip; data ${data?.length ?? 0} B raw, ${data ? gzip(data) : 0} B gzip`);
const line = (label, inGroup) => {
  const members = functions.filter(inGroup);
  const raw = members.reduce((sum, f) => sum + f.body.length, 0);
  console.log(`${String(total - gzip(code((f) => !inGroup(f)))).padStart(7)} gone ${String(raw).padStart(7)} raw ${String(members.length).padStart(4)} fns  ${label}`);
};
if (groups.length === 0) {
  for (const f of [...functions].sort((a, b) => b.body.length - a.body.length).slice(0, 60)) line(f.name, (g) => g === f);
}
for (const group of groups) {
  const pattern = new RegExp(group);
  line(group, (f) => pattern.test(f.name));
}

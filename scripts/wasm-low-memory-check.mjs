// build.sh runs wasm-opt with --low-memory-unused, which assumes the module never uses an
// address below 1024. This checks that on the module wasm-bindgen wrote: the stack pointer
// (the first global) starts at 1024 or above and every active data segment lies there too.
// Exit 1 with what was found below otherwise.
import { readFileSync } from 'node:fs';

const bytes = readFileSync(process.argv[2]);
let at = 8;
const leb = () => {
  let value = 0;
  let shift = 0;
  let byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return value;
};
const low = [];
let seen = 0;
while (at < bytes.length) {
  const id = bytes[at++];
  const size = leb();
  const end = at + size;
  if (id === 6) {
    // Globals: value type, mutability, init expression (i32.const N, end).
    for (let n = leb(), k = 0; k < n; k++) {
      at += 2;
      const op = bytes[at++];
      const value = op === 0x41 ? leb() : null;
      at++;
      if (k === 0) {
        seen++;
        if (value === null || value < 1024) low.push(`the stack pointer starts at ${value}`);
      }
    }
  }
  if (id === 11) {
    // Data: flags 0 = active in memory 0 at (i32.const N, end), then the bytes.
    for (let n = leb(), k = 0; k < n; k++) {
      const flags = leb();
      if (flags !== 0) {
        low.push(`data segment ${k} has flags ${flags} (not checked)`);
        break;
      }
      const op = bytes[at++];
      const offset = op === 0x41 ? leb() : null;
      at++;
      const length = leb();
      at += length;
      seen++;
      if (offset === null || offset < 1024) low.push(`data segment ${k} at ${offset}`);
    }
  }
  at = end;
}
if (seen === 0) low.push('no stack pointer or data segment found');
if (low.length) {
  console.error(`build: error: the wasm may use memory below 1024 (${low.join('; ')}): drop wasm-opt's --low-memory-unused`);
  process.exit(1);
}

// Where the end-to-end tests find the things they run: the built extension, the binaries of
// the companion and the Herdr stand-in (release, or the dev build `npm test` makes), and the
// fixed extension id.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The built extension; HERDR_CONTINUITY_EXTENSION_DIR overrides it (for trying another build). */
export const EXTENSION_DIR = process.env.HERDR_CONTINUITY_EXTENSION_DIR ? path.resolve(process.env.HERDR_CONTINUITY_EXTENSION_DIR) : path.join(REPO_ROOT, 'dist', 'extension');
/** Cargo's target dir, honouring CARGO_TARGET_DIR like cargo itself (and scripts/test.sh). */
export const TARGET_DIR = process.env.CARGO_TARGET_DIR ? path.resolve(process.env.CARGO_TARGET_DIR) : path.join(REPO_ROOT, 'target');
/**
 * Which cargo profile's binaries run: `release` (what `bash scripts/build.sh` builds, for the
 * demo and the bench) unless HERDR_CONTINUITY_BIN_PROFILE says `debug` — `npm test` sets it and
 * has build.sh build the dev binaries, the ones its native tests compile anyway.
 */
export const BIN_PROFILE = binProfile(process.env.HERDR_CONTINUITY_BIN_PROFILE);
export const COMPANION_BIN = path.join(TARGET_DIR, BIN_PROFILE, 'herdr-companion');
export const STANDIN_BIN = path.join(TARGET_DIR, BIN_PROFILE, 'herdr-standin');
export const CHROMIUM_BIN = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
/** The manifest `key` fixes this id (docs/PROTOCOL.md "Names and places"). */
export const EXTENSION_ID = readFileSync(path.join(REPO_ROOT, 'manifest', 'extension-id.txt'), 'utf8').trim();
export const EXTENSION_ORIGIN = `chrome-extension://${EXTENSION_ID}/`;
/** Native Messaging host name (docs/PROTOCOL.md). */
export const NATIVE_HOST_NAME = 'dev.herdr.continuity';

function binProfile(value) {
  if (value === undefined || value === '' || value === 'release') return 'release';
  if (value === 'debug') return 'debug';
  throw new Error(`HERDR_CONTINUITY_BIN_PROFILE is '${value}'; set it to 'release' (the default) or 'debug', or unset it`);
}

/**
 * The Rust sources a native binary is built from: the crates' `src/` files, without the
 * `#[cfg(test)]` modules' files (`tests.rs`, `*_tests.rs`), which cargo rebuilds only the
 * tests for. Manifests are left out: cargo relinks nothing for an edit that changes no unit.
 */
const BIN_SOURCES = {
  'herdr-companion': ['companion', 'protocol'],
  'herdr-standin': ['herdr-standin', 'protocol'],
};

/**
 * Why `bin` cannot be run as the build of the current sources, or null: it is missing, or
 * older than a file it is built from (a stale build would test yesterday's code). The
 * message says which command builds it.
 */
export function binaryProblem(bin) {
  const build = BIN_PROFILE === 'debug'
    ? 'HERDR_CONTINUITY_BIN_PROFILE=debug bash scripts/build.sh'
    : 'bash scripts/build.sh (or npm run build)';
  let built;
  try {
    built = statSync(bin).mtimeMs;
  } catch {
    return `${bin} is missing. Build it with: ${build}`;
  }
  const crates = BIN_SOURCES[path.basename(bin)] ?? [];
  const files = crates.flatMap((crate) => rustFiles(path.join(REPO_ROOT, crate, 'src')));
  for (const file of files) {
    if (statSync(file).mtimeMs > built) {
      return `${bin} is older than ${path.relative(REPO_ROOT, file)}, so it is not the build of these sources. Rebuild it with: ${build}`;
    }
  }
  return null;
}

function rustFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...rustFiles(full));
    else if (entry.name.endsWith('.rs') && entry.name !== 'tests.rs' && !entry.name.endsWith('_tests.rs')) out.push(full);
  }
  return out;
}

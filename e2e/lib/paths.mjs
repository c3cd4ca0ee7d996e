// Where the end-to-end tests find the things they run: the built extension, the release
// binaries of the companion and the Herdr stand-in, and the fixed extension id.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The built extension; HERDR_CONTINUITY_EXTENSION_DIR overrides it (for trying another build). */
export const EXTENSION_DIR = process.env.HERDR_CONTINUITY_EXTENSION_DIR ? path.resolve(process.env.HERDR_CONTINUITY_EXTENSION_DIR) : path.join(REPO_ROOT, 'dist', 'extension');
/** Cargo's target dir, honouring CARGO_TARGET_DIR like cargo itself (and scripts/test.sh). */
export const TARGET_DIR = process.env.CARGO_TARGET_DIR ? path.resolve(process.env.CARGO_TARGET_DIR) : path.join(REPO_ROOT, 'target');
export const COMPANION_BIN = path.join(TARGET_DIR, 'release', 'herdr-companion');
export const STANDIN_BIN = path.join(TARGET_DIR, 'release', 'herdr-standin');
export const CHROMIUM_BIN = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
/** The manifest `key` fixes this id (docs/PROTOCOL.md "Names and places"). */
export const EXTENSION_ID = readFileSync(path.join(REPO_ROOT, 'manifest', 'extension-id.txt'), 'utf8').trim();
export const EXTENSION_ORIGIN = `chrome-extension://${EXTENSION_ID}/`;
/** Native Messaging host name (docs/PROTOCOL.md). */
export const NATIVE_HOST_NAME = 'dev.herdr.continuity';

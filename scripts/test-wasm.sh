#!/usr/bin/env bash
# ext-shell's wasm-bindgen tests in headless Chromium: tests/browser.rs (a page) and
# tests/worker.rs (a service worker). Offline: needs /usr/bin/chromedriver, wasm-bindgen
# (+ wasm-bindgen-test-runner) on PATH at the Cargo.lock version, and
# ext-shell/webdriver.json (Chromium binary, --no-sandbox since we may run as root).
# Cargo runs them with the runner .cargo/config.toml names (wasm-bindgen-test-runner, from
# wasm-bindgen-cli), headless unless NO_HEADLESS=1: the same tests wasm-pack would run
# (`wasm-pack test --headless --chrome ext-shell` counts the same), without installing it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
[[ -x "$CHROMEDRIVER" ]] || { echo "test-wasm: chromedriver not found at $CHROMEDRIVER; install chromium-driver (npm run setup)" >&2; exit 1; }
command -v wasm-bindgen-test-runner >/dev/null || { echo "test-wasm: wasm-bindgen-test-runner missing; run npm run setup" >&2; exit 1; }

status=0
# wasm-bindgen-test-runner looks for webdriver.json in the current directory.
(cd ext-shell && cargo test --target wasm32-unknown-unknown --tests) || status=$?
# Each chromedriver session leaves ~12 MB of scoped dirs behind; scripts/test.sh removes
# the ones no running browser uses (removing all here would break a concurrent session).
exit $status

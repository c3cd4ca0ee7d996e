#!/usr/bin/env bash
# The whole test suite (`npm test`, `.ci/run`): setup → build → native Rust tests →
# wasm tests in headless Chromium → Playwright end-to-end tests with the real extension,
# companion and Herdr stand-in. Runs every suite even after one fails, prints one summary
# line "N passed, N failed" and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"

logs="$(mktemp -d /tmp/herdr-continuity-test.XXXXXX)"
suite_timeout="${HC_SUITE_TIMEOUT:-4800}"   # seconds per suite (the e2e suite is the longest: its time is printed in the summary)
total_passed=0
total_failed=0
failed_suites=()
part_times=()   # "name seconds" of every part, printed in the summary

cleanup() {
  # Each chromedriver/Chromium session leaves ~12 MB of scoped dirs in the temp dir.
  # Remove them, except those a running browser still uses (its --user-data-dir names them),
  # so a concurrent run on the same machine is not broken.
  local in_use dir
  in_use="$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -o '/tmp/org\.chromium\.Chromium\.scoped_dir\.[A-Za-z0-9]*' | sort -u || true)"
  for dir in /tmp/org.chromium.Chromium.scoped_dir.*; do
    [[ -e "$dir" ]] || continue
    grep -qxF "$dir" <<<"$in_use" || rm -rf "$dir"
  done
  rm -rf "$logs"
}
trap cleanup EXIT

banner() { printf '\n==== %s ====\n' "$*"; }

# Sums "test result: ok. X passed; Y failed" lines (cargo test, wasm-bindgen-test-runner).
count_rust() {
  local log="$1" p f
  p=$(grep -E 'test result: ' "$log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
  f=$(grep -E 'test result: ' "$log" | grep -Eo '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
  echo "$p $f"
}
# Playwright list reporter ends with "  N passed (…)" and "  N failed".
count_playwright() {
  local log="$1" p f
  p=$(grep -Eo '^ +[0-9]+ passed' "$log" | tail -1 | awk '{print $1+0}')
  f=$(grep -Eo '^ +[0-9]+ (failed|flaky|interrupted|did not run)' "$log" | awk '{s+=$1} END {print s+0}')
  echo "${p:-0} ${f:-0}"
}

# A suite that reports nothing countable: 1 passed when it exited 0, else 1 failed
# (run_suite reads the exit status, saved next to the log, for it).
count_exit() {
  local log="$1"
  if [[ "$(cat "$log.rc" 2>/dev/null)" == 0 ]]; then echo "1 0"; else echo "0 1"; fi
}

# run_suite NAME COUNTER COMMAND... — runs a suite, tees its log, adds its counts.
run_suite() {
  local name="$1" counter="$2"; shift 2
  local log="$logs/$name.log" rc counts p f started=$SECONDS
  banner "$name: $*"
  # A hung suite is a failure, not a stuck CI job.
  timeout --kill-after=30 "$suite_timeout" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  echo "$rc" >"$log.rc"
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "test: suite $name did not finish within ${suite_timeout}s and was stopped (set HC_SUITE_TIMEOUT to change)"
  fi
  read -r p f < <("$counter" "$log")
  if [[ $rc -ne 0 && $f -eq 0 ]]; then f=1; fi   # a suite that died before reporting
  total_passed=$((total_passed + p)); total_failed=$((total_failed + f))
  if [[ $rc -ne 0 ]]; then failed_suites+=("$name"); fi
  part_times+=("$name $((SECONDS - started))")
  printf -- '---- %s: %s passed, %s failed (exit %s) in %ss\n' "$name" "$p" "$f" "$rc" "$((SECONDS - started))"
}

banner "setup"
started=$SECONDS
bash scripts/setup.sh || { echo "test: setup failed — fix the message above, then rerun npm test"; exit 1; }

part_times+=("setup $((SECONDS - started))")

banner "build"
started=$SECONDS
# The e2e tests run the dev binaries (e2e/lib/paths.mjs reads the same variable): build.sh
# compiles them with the native tests in one `cargo test --no-run`, so the native dependency
# tree is compiled once (dev), not also with release's LTO. A failed compile stops here, so
# no suite runs binaries older than the sources (paths.mjs also refuses a stale binary).
export HERDR_CONTINUITY_BIN_PROFILE=debug
bash scripts/build.sh || { echo "test: scripts/build.sh failed — the extension or the native tests could not be built; see the error above"; exit 1; }
part_times+=("build $((SECONDS - started))")

# ext-shell builds natively but all its tests are wasm-bindgen-test tests (0 run natively);
# they run in headless Chromium through scripts/test-wasm.sh, so native cargo test skips it.
run_suite cargo-test count_rust cargo test --workspace --exclude ext-shell --no-fail-fast
run_suite wasm-test count_rust bash scripts/test-wasm.sh
# Lint gate: the code is as rustfmt.toml formats it, and clippy passes with every warning an
# error (the workspace's lints in Cargo.toml, e.g. unwrap_used = deny).
run_suite lint count_exit bash -c 'cargo fmt --all --check && cargo clippy --workspace --all-targets --quiet -- -D warnings'
# The companion must build for macOS (issue 8): cargo check for aarch64-apple-darwin, with
# rusqlite's bundled SQLite compiled by zig through scripts/zig-cc-macos.sh (setup.sh
# installs the target and zig). Its own target/aarch64-apple-darwin keeps it incremental.
run_suite macos-check count_exit env \
  CC_aarch64_apple_darwin="$PWD/scripts/zig-cc-macos.sh" \
  AR_aarch64_apple_darwin="$PWD/scripts/zig-ar.sh" \
  cargo check -p companion --target aarch64-apple-darwin
# The list reporter for the log (count_playwright reads it), a JSON report for the slowest
# tests printed in the summary.
run_suite e2e count_playwright env PLAYWRIGHT_JSON_OUTPUT_NAME="$logs/e2e.json" \
  npx playwright test --config e2e/playwright.config.mjs --reporter=list,json

banner "summary"
if [[ -s "$logs/e2e.json" ]]; then
  node scripts/e2e-slowest.mjs "$logs/e2e.json" 10 || echo "test: the e2e timing report could not be read (see above)"
  echo
fi
for part in "${part_times[@]}"; do
  read -r name seconds <<<"$part"
  printf '%-12s %5d s  (%d:%02d)\n' "$name" "$seconds" $((seconds / 60)) $((seconds % 60))
done
printf '%-12s %5d s  (%d:%02d)\n' total "$SECONDS" $((SECONDS / 60)) $((SECONDS % 60))
echo "${total_passed} passed, ${total_failed} failed"
if [[ ${#failed_suites[@]} -gt 0 ]]; then
  echo "failing suites: ${failed_suites[*]}"
  exit 1
fi

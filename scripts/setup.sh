#!/usr/bin/env bash
# Idempotent developer/CI setup for herdr-continuity.
# Installs only what is missing and says what it skips. Never downloads browsers:
# the tests use Debian's /usr/bin/chromium (see ../shared/TOOLCHAIN.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

say() { printf 'setup: %s\n' "$*"; }

# What is missing is found first (quick checks, in order), then the installs that do not
# depend on each other run at once: apt (network and disk), `cargo install wasm-bindgen-cli`
# (CPU: ~5 min on 2 cores, the longest), pip's zig and npm ci (network). Each writes its own
# log, printed whole with its time when it has ended, so the output stays readable.
is_root() { [[ "$(id -u)" == 0 ]]; }

for tool in rustup cargo node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    say "$tool is not on PATH. Install Rust with rustup (https://rustup.rs) and Node.js 20 with npm, then rerun."
    exit 1
  fi
done

# 1. Chromium + chromedriver (Debian packages), and Chromium's Chinese UI (chromium-l10n):
#    the e2e suite checks that the HUD speaks the browser's language (Debian's chromium ships
#    only en-US.pak without it).
apt_packages=()
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
  say "skip chromium: /usr/bin/chromium and /usr/bin/chromedriver present"
else
  apt_packages+=(chromium chromium-driver)
fi
if [[ -f /usr/lib/chromium/locales/zh-CN.pak ]]; then
  say "skip chromium-l10n: /usr/lib/chromium/locales/zh-CN.pak present"
else
  apt_packages+=(chromium-l10n)
fi
if [[ ${#apt_packages[@]} -gt 0 ]] && ! is_root; then
  say "Chromium, chromedriver or Chromium's locales are missing and this is not root. Run:"
  say "  sudo apt-get update && sudo apt-get install -y ${apt_packages[*]}"
  exit 1
fi

# 2. Rust targets (wasm32 for the extension, aarch64-apple-darwin for the macOS build check)
#    and the components the lint gate of npm test runs (rustfmt, clippy). Quick, and done
#    before the installs below so nothing changes the toolchain while cargo compiles.
for target in wasm32-unknown-unknown aarch64-apple-darwin; do
  if rustup target list --installed | grep -qx "$target"; then
    say "skip rust target: $target installed"
  else
    say "adding rust target $target"
    rustup target add "$target"
  fi
done
for comp in rustfmt clippy; do
  if rustup component list --installed | grep -q "^$comp"; then
    say "skip rust component: $comp installed"
  else
    say "adding rust component $comp"
    rustup component add "$comp"
  fi
done

# 3. wasm-bindgen-cli at exactly the wasm-bindgen crate version in Cargo.lock (it brings
#    wasm-bindgen-test-runner, the runner scripts/test-wasm.sh uses through .cargo/config.toml).
wb_want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
if [[ -z "$wb_want" ]]; then
  say "Cargo.lock names no wasm-bindgen version; run 'cargo generate-lockfile' and retry"
  exit 1
fi
wb_have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)"
need_wasm_bindgen=0
if [[ "$wb_have" == "$wb_want" ]]; then
  say "skip wasm-bindgen-cli: $wb_have matches Cargo.lock"
else
  need_wasm_bindgen=1
fi

# 4. zig (PyPI `ziglang`) as the C compiler for rusqlite's bundled SQLite in the macOS build
#    check (scripts/test.sh suite macos-check). Installed with pip --target into
#    target/tools/ziglang (ignored by git), so it does not depend on which python3 is first
#    on PATH: Debian 12's "externally managed" python accepts a --target install as it is;
#    the retry with --break-system-packages is for pips that refuse it (it touches nothing
#    outside target/tools either way).
zig_version=0.17.1
zig_dir=target/tools/ziglang
zig_have="$("$zig_dir/ziglang/zig" version 2>/dev/null || true)"
need_zig=0
if [[ "$zig_have" == "$zig_version" ]]; then
  say "skip zig: $zig_dir has zig $zig_have"
else
  # Without python3 the zig step fails with what to do; the other installs still run.
  need_zig=1
fi

# 5. npm packages (Playwright test runner, binaryen's wasm-opt, the MCP SDK's client for the
#    e2e MCP spec).
need_npm=0
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  need_npm=1
else
  say "skip npm ci: node_modules is up to date with package-lock.json"
fi

install_apt() {
  say "installing ${apt_packages[*]} with apt-get"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${apt_packages[@]}"
}
install_wasm_bindgen() {
  say "installing wasm-bindgen-cli $wb_want (have: ${wb_have:-none}); takes ~5 min on 2 cores"
  # No --locked: its lockfile pins a webpki-roots this registry lacks (TOOLCHAIN.md).
  cargo install wasm-bindgen-cli --version "$wb_want" --force
}
install_zig() {
  if ! command -v python3 >/dev/null 2>&1; then
    say "python3 is not on PATH; install it (apt-get install -y python3 python3-pip) and rerun"
    return 1
  fi
  say "installing PyPI ziglang==$zig_version into $zig_dir (have: ${zig_have:-none}; ~100 MB download)"
  rm -rf "$zig_dir"
  local pip_install=(python3 -m pip install --disable-pip-version-check --no-input --target "$zig_dir" "ziglang==$zig_version")
  if ! "${pip_install[@]}"; then
    say "retrying with --break-system-packages (an externally managed python)"
    "${pip_install[@]}" --break-system-packages
  fi
  "$zig_dir/ziglang/zig" version >/dev/null
}
install_npm() {
  say "running npm ci"
  npm ci --no-audit --no-fund
}

step_logs="$(mktemp -d /tmp/herdr-continuity-setup.XXXXXX)"
step_names=()
step_pids=()
# Interrupted (Ctrl-C, a CI timeout): the installs still running stop too, with what they
# started (apt-get, cargo's rustc jobs), so a rerun does not meet a held dpkg or cargo lock.
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
stop_steps() {
  local pid
  for pid in "${step_pids[@]}"; do kill_tree "$pid"; done
}
trap 'rm -rf "$step_logs"' EXIT
trap 'say "interrupted: stopping the installs under way"; stop_steps; exit 130' INT TERM
# start_step NAME FUNCTION: runs FUNCTION in the background (errexit on inside), its output
# into NAME's log, its exit status and seconds into NAME.status.
start_step() {
  local name="$1" fn="$2"
  {
    set +e
    began=$SECONDS
    (set -e; "$fn")
    echo "$? $((SECONDS - began))" >"$step_logs/$name.status"
  } >"$step_logs/$name.log" 2>&1 &
  step_names+=("$name")
  step_pids+=("$!")
}
[[ ${#apt_packages[@]} -gt 0 ]] && start_step apt install_apt
[[ $need_npm == 1 ]] && start_step npm-ci install_npm
[[ $need_zig == 1 ]] && start_step zig install_zig
[[ $need_wasm_bindgen == 1 ]] && start_step wasm-bindgen-cli install_wasm_bindgen

# Each step's log once it has ended (in the order started; the cargo install, the longest, last).
failed=()
for i in "${!step_pids[@]}"; do
  name="${step_names[$i]}"
  wait "${step_pids[$i]}" || true
  read -r rc seconds <"$step_logs/$name.status" 2>/dev/null || { rc=1; seconds='?'; }
  printf 'setup: ---- %s (%ss, exit %s) ----\n' "$name" "$seconds" "$rc"
  cat "$step_logs/$name.log"
  [[ "$rc" == 0 ]] || failed+=("$name")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  say "failed: ${failed[*]} (its log is above)"
  exit 1
fi

say "done"

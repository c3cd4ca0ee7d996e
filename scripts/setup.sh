#!/usr/bin/env bash
# Idempotent developer/CI setup for herdr-continuity.
# Installs only what is missing and says what it skips. Never downloads browsers:
# the tests use Debian's /usr/bin/chromium (see ../shared/TOOLCHAIN.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

say() { printf 'setup: %s\n' "$*"; }

# 1. Chromium + chromedriver (Debian packages).
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
  say "skip chromium: /usr/bin/chromium and /usr/bin/chromedriver present"
elif [[ "$(id -u)" == 0 ]]; then
  say "installing chromium chromium-driver with apt-get"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver
else
  say "Chromium or chromedriver is missing and this is not root. Run:"
  say "  sudo apt-get update && sudo apt-get install -y chromium chromium-driver"
  exit 1
fi

# 1b. Chromium's Chinese UI (chromium-l10n): the e2e suite checks that the HUD speaks the
# browser's language (Debian's chromium ships only en-US.pak without it).
if [[ -f /usr/lib/chromium/locales/zh-CN.pak ]]; then
  say "skip chromium-l10n: /usr/lib/chromium/locales/zh-CN.pak present"
elif [[ "$(id -u)" == 0 ]]; then
  say "installing chromium-l10n with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y chromium-l10n || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium-l10n; }
else
  say "Chromium's locales are missing and this is not root. Run:"
  say "  sudo apt-get update && sudo apt-get install -y chromium-l10n"
  exit 1
fi

for tool in rustup cargo node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    say "$tool is not on PATH. Install Rust with rustup (https://rustup.rs) and Node.js 20 with npm, then rerun."
    exit 1
  fi
done

# 2. Rust wasm target.
if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "skip rust target: wasm32-unknown-unknown installed"
else
  say "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
# The lint gate of npm test runs rustfmt and clippy.
for comp in rustfmt clippy; do
  if rustup component list --installed | grep -q "^$comp"; then
    say "skip rust component: $comp installed"
  else
    say "adding rust component $comp"
    rustup component add "$comp"
  fi
done

# 3. wasm-bindgen-cli at exactly the wasm-bindgen crate version in Cargo.lock.
wb_want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
if [[ -z "$wb_want" ]]; then
  say "Cargo.lock names no wasm-bindgen version; run 'cargo generate-lockfile' and retry"
  exit 1
fi
wb_have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)"
if [[ "$wb_have" == "$wb_want" ]]; then
  say "skip wasm-bindgen-cli: $wb_have matches Cargo.lock"
else
  say "installing wasm-bindgen-cli $wb_want (have: ${wb_have:-none}); takes ~5 min on 2 cores"
  # No --locked: its lockfile pins a webpki-roots this registry lacks (TOOLCHAIN.md).
  cargo install wasm-bindgen-cli --version "$wb_want" --force
fi

# 4. wasm-pack (used by scripts/test-wasm.sh).
if command -v wasm-pack >/dev/null 2>&1; then
  say "skip wasm-pack: $(wasm-pack --version)"
elif pgrep -f 'cargo install wasm-pack' >/dev/null 2>&1; then
  say "wasm-pack is being installed by another process; waiting for it"
  while pgrep -f 'cargo install wasm-pack' >/dev/null 2>&1; do sleep 5; done
  command -v wasm-pack >/dev/null 2>&1 || cargo install wasm-pack --locked
else
  say "installing wasm-pack (~2 min)"
  cargo install wasm-pack --locked
fi

# 5. macOS cross-check (scripts/test.sh suite macos-check): the aarch64-apple-darwin std
#    and zig (PyPI `ziglang`) as the C compiler for rusqlite's bundled SQLite. Installed
#    with pip --target into target/tools/ziglang (ignored by git), so it does not depend on
#    which python3 is first on PATH: Debian 12's "externally managed" python accepts a
#    --target install as it is; the retry with --break-system-packages is for pips that
#    refuse it (it touches nothing outside target/tools either way).
if rustup target list --installed | grep -qx aarch64-apple-darwin; then
  say "skip rust target: aarch64-apple-darwin installed"
else
  say "adding rust target aarch64-apple-darwin (for the macOS build check)"
  rustup target add aarch64-apple-darwin
fi
zig_version=0.17.1
zig_dir=target/tools/ziglang
zig_have="$("$zig_dir/ziglang/zig" version 2>/dev/null || true)"
if [[ "$zig_have" == "$zig_version" ]]; then
  say "skip zig: $zig_dir has zig $zig_have"
elif ! command -v python3 >/dev/null 2>&1; then
  say "python3 is not on PATH; install it (apt-get install -y python3 python3-pip) and rerun"
  exit 1
else
  say "installing PyPI ziglang==$zig_version into $zig_dir (have: ${zig_have:-none}; ~100 MB download)"
  rm -rf "$zig_dir"
  pip_install=(python3 -m pip install --disable-pip-version-check --no-input --target "$zig_dir" "ziglang==$zig_version")
  if ! "${pip_install[@]}"; then
    say "retrying with --break-system-packages (an externally managed python)"
    "${pip_install[@]}" --break-system-packages
  fi
  "$zig_dir/ziglang/zig" version >/dev/null
fi

# 6. npm packages (Playwright test runner, binaryen's wasm-opt, the MCP SDK's client for the
#    e2e MCP spec).
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  say "running npm ci"
  npm ci --no-audit --no-fund
else
  say "skip npm ci: node_modules is up to date with package-lock.json"
fi

say "done"

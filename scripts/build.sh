#!/usr/bin/env bash
# Builds the extension into dist/extension/ and the native binaries into target/release/.
#
#   1. ext-shell → wasm32-unknown-unknown (profile wasm-release: release's opt-level z and
#      lto with panic=abort; the native release profile unwinds, see Cargo.toml)
#   2. wasm-bindgen --target web → dist/extension/pkg (CLI version = crate version)
#   3. npm binaryen's wasm-opt -Oz (never Debian's /usr/bin/wasm-opt: it breaks
#      wasm-bindgen 0.2.130 output; see ../shared/TOOLCHAIN.md), no strip
#   4. dist/extension/: manifest (with `key`), loaders, pages, CSS, _locales
#   5. herdr-companion + herdr-standin: release (cargo build --release) for the demo, the
#      bench and users; with HERDR_CONTINUITY_BIN_PROFILE=debug (npm test) the dev binaries,
#      built by `cargo test --workspace --exclude ext-shell --no-run`: the compile the native
#      tests need anyway (cargo builds a package's binaries for its integration tests), so
#      npm test compiles the native dependency tree once, not a second time with release's LTO
# Honours CARGO_TARGET_DIR (default: target/); e2e/lib/paths.mjs reads the same variables. Prints the wasm size raw and gzipped and
# fails when the wasm imports anything from `env`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

say() { printf 'build: %s\n' "$*"; }
die() { printf 'build: error: %s\n' "$*" >&2; exit 1; }

target_dir="${CARGO_TARGET_DIR:-target}"
bin_profile="${HERDR_CONTINUITY_BIN_PROFILE:-release}"
case "$bin_profile" in
  release|debug) ;;
  *) die "HERDR_CONTINUITY_BIN_PROFILE is '$bin_profile'; set it to 'release' (the default) or 'debug', or unset it" ;;
esac
dist="dist/extension"
wasm_opt="node_modules/.bin/wasm-opt"

want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
have="$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)"
[[ "$have" == "$want" ]] || die "wasm-bindgen CLI is '${have:-missing}' but Cargo.lock wants $want; run 'npm run setup' (or cargo install wasm-bindgen-cli --version $want)"
[[ -x "$wasm_opt" ]] || die "$wasm_opt is missing; run 'npm ci' (binaryen 132 from npm is required, Debian's wasm-opt breaks the module)"

say "cargo build ext-shell (wasm32-unknown-unknown, profile wasm-release)"
cargo build --profile wasm-release -p ext-shell --target wasm32-unknown-unknown
raw_wasm="$target_dir/wasm32-unknown-unknown/wasm-release/ext_shell.wasm"
[[ -f "$raw_wasm" ]] || die "expected $raw_wasm after cargo build; is CARGO_TARGET_DIR set consistently?"

say "assembling $dist"
rm -rf "$dist"
mkdir -p "$dist/pkg"
wasm-bindgen --target web --out-dir "$dist/pkg" "$raw_wasm"
bg="$dist/pkg/ext_shell_bg.wasm"
before=$(stat -c %s "$bg")
# --strip-debug --strip-producers drop custom sections only (the target-features section
# wasm-bindgen needs was already read): -98 B gzip. --converge (repeat -Oz until it stops
# shrinking) measured -42 to +155 B in 2026-11 and -617 B on the December module: used.
# --one-caller-inline-max-function-size=20: binaryen inlines a function with one caller
# whatever its size by default, which folds most of the driver into a few huge functions
# (the worker-start future was 49 KB); capped at 20 instructions the module is 1 % larger
# raw but compresses far better: 357 137 / 150 391 B -> 361 147 / 134 722 B gzip (values
# measured: 0 135 029, 10 134 719, 20 134 722, 50 137 397, 100 142 226, 1000 149 689 B).
# --reorder-functions-by-name (before --strip-debug drops the names): the functions laid
# out by their Rust path, so the instances of one generic (VecMap::insert, Fields::get, the
# readers) sit next to each other inside gzip's 32 KB window: 151 534 -> 149 912 B gzip
# (--reorder-functions, by call count, measured +3.8 KB gzip). Measured again with it (B gzip,
# one-caller / always-inline sizes): 20/2 148 514, 10/2 148 423, 20/4 148 324, 10/3
# 148 331, 10/4 148 280, 15/4 148 280 (taken: fewer raw bytes than 10/4), 20/6 148 812.
# --low-memory-unused: addresses below 1024 are never used, so constant address parts fold
# into the loads' and stores' offsets. True of this module: rustc's wasm32 layout puts the
# 1 MiB stack first, growing down from 1 048 576 where the data starts (the stack pointer's
# initial value and the first data segment's offset; only a stack nearly 1 MiB deep would
# reach them, and a deeper one traps: it wraps below 0): -600 B gzip. The layout is checked
# on wasm-bindgen's module first (scripts/wasm-low-memory-check.mjs).
node scripts/wasm-low-memory-check.mjs "$bg"
"$wasm_opt" -Oz --converge --one-caller-inline-max-function-size=15 --always-inline-max-function-size=4 \
  --reorder-functions-by-name --low-memory-unused --strip-debug --strip-producers \
  --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  "$bg" -o "$bg.opt"
mv "$bg.opt" "$bg"

# The module must import nothing from `env` (an `env` import means a C dependency or a
# missing wasm-bindgen shim, and the module would fail to instantiate).
if grep -q 'from "env"\|from '"'"'env'"'"'' "$dist/pkg/ext_shell.js"; then
  die "ext_shell.js imports from 'env'; a dependency needs a C/JS shim that is not provided"
fi
node -e '
  const bytes = require("fs").readFileSync(process.argv[1]);
  const mod = new WebAssembly.Module(bytes);
  const bad = WebAssembly.Module.imports(mod).filter((i) => i.module === "env");
  if (bad.length) { console.error("build: error: wasm imports from env:", bad.map((i) => i.name).join(", ")); process.exit(1); }
' "$bg"

cp extension/*.js extension/*.html extension/*.css "$dist/"
cp -r extension/_locales "$dist/_locales"
key="$(tr -d '\n' < manifest/extension-key.pub.b64)"
node -e '
  const fs = require("fs");
  const [src, dst, key] = process.argv.slice(1);
  const manifest = JSON.parse(fs.readFileSync(src, "utf8"));
  manifest.key = key;
  fs.writeFileSync(dst, JSON.stringify(manifest, null, 2) + "\n");
' manifest/manifest.json "$dist/manifest.json" "$key"

if [[ "$bin_profile" == release ]]; then
  say "cargo build companion + herdr-standin (release)"
  cargo build --release -p companion -p herdr-standin
else
  say "cargo test --no-run: the native tests and the dev companion + herdr-standin"
  cargo test --workspace --exclude ext-shell --no-run
fi

after=$(stat -c %s "$bg")
gz=$(gzip -9 -c "$bg" | wc -c)
say "extension: $dist (id $(cat manifest/extension-id.txt))"
say "binaries: $target_dir/$bin_profile/herdr-companion $target_dir/$bin_profile/herdr-standin"
say "wasm: ${after} B raw (${before} B before wasm-opt), ${gz} B gzip"

#!/usr/bin/env bash
# C compiler for `cargo check --target aarch64-apple-darwin` on Linux (scripts/test.sh,
# suite macos-check): runs `zig cc -target aarch64-macos` from the PyPI package `ziglang`
# that scripts/setup.sh installs under target/tools/ziglang.
#
# cc-rs (which builds rusqlite's bundled SQLite) passes the flags it would give Apple's
# clang: `-arch arm64`, `--target=arm64-apple-macosx` and `-mmacosx-version-min=11.0`.
# zig picks the target from its own `-target` and rejects or misreads those, so they are
# dropped here; every other argument is passed through unchanged.
#
# `zig-cc-macos.sh --ar ARGS…` runs `zig ar ARGS…` instead (scripts/zig-ar.sh, the
# archiver paired with this compiler), so both find zig in one place.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
zig="${HC_ZIG:-$root/target/tools/ziglang/ziglang/zig}"
if [[ ! -x "$zig" ]]; then
  echo "zig-cc-macos: no zig at $zig; run scripts/setup.sh (it installs PyPI ziglang there) or set HC_ZIG" >&2
  exit 127
fi
if [[ "${1:-}" == --ar ]]; then
  shift
  exec "$zig" ar "$@"
fi
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -arch) shift 2 || shift ;;                         # `-arch arm64`: two arguments
    --target=* | -mmacosx-version-min=*) shift ;;
    -target) shift 2 || shift ;;                       # an explicit clang `-target X`
    *) args+=("$1"); shift ;;
  esac
done
exec "$zig" cc -target aarch64-macos "${args[@]}"

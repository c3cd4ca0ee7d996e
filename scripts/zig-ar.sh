#!/usr/bin/env bash
# Archiver paired with scripts/zig-cc-macos.sh: `zig ar` from the PyPI package `ziglang`
# (without it cc-rs looks for an Apple or host archiver that may not be installed here).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
zig="${HC_ZIG:-$root/target/tools/ziglang/ziglang/zig}"
if [[ ! -x "$zig" ]]; then
  echo "zig-ar: no zig at $zig; run scripts/setup.sh (it installs PyPI ziglang there) or set HC_ZIG" >&2
  exit 127
fi
exec "$zig" ar "$@"

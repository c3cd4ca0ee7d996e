#!/usr/bin/env bash
# Archiver paired with scripts/zig-cc-macos.sh for the macOS build check: `zig ar` (without
# it cc-rs looks for an Apple or host archiver that may not be installed here).
exec "$(dirname "$0")/zig-cc-macos.sh" --ar "$@"

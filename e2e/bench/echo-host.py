#!/usr/bin/env python3
"""Minimal Native Messaging host for the benchmark baseline: it echoes every frame back
unchanged (32-bit native-endian length + UTF-8 JSON, Chrome's framing). It does no work at
all, so `npm run bench` can report herdr-companion's round trip as a ratio to it."""
import struct
import sys


def main() -> None:
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    while True:
        header = stdin.read(4)
        if len(header) < 4:
            return
        (length,) = struct.unpack("=I", header)
        body = stdin.read(length)
        if len(body) < length:
            return
        stdout.write(header + body)
        stdout.flush()


if __name__ == "__main__":
    main()

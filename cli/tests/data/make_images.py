#!/usr/bin/env python3
"""Makes the screenshot fixtures of cli/tests/cli.rs with nothing but the standard library:
shot.png (a real 24x16 RGB PNG) and cut.png (its first half: a damaged PNG).
"""
import struct, zlib

def chunk(kind, data):
    c = struct.pack(">I", len(data)) + kind + data
    return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

w, h = 24, 16
raw = b"".join(b"\x00" + b"".join(bytes((x * 10 % 256, y * 15 % 256, 128)) for x in range(w)) for y in range(h))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open("shot.png", "wb").write(png)
open("cut.png", "wb").write(png[: len(png) // 2])

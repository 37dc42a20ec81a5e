#!/usr/bin/env python3
"""Writes the app icons (RGBA PNG: the FP32 blue / FP16 orange diagonal) into this folder."""
import os, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def png(path, n):
    rows = b""
    for y in range(n):
        row = b"\x00"
        for x in range(n):
            r, g, b = (0x2B, 0x6C, 0xB0) if x + y < n else (0xE8, 0x7D, 0x1E)
            row += bytes((r, g, b, 255))
        rows += row

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", n, n, 8, 6, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


for n, name in ((32, "32x32.png"), (128, "128x128.png"), (512, "icon.png")):
    png(os.path.join(HERE, name), n)

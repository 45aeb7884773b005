#!/usr/bin/env python3
"""Draws the app icon (a gatehouse arch on a shield-blue tile) as RGBA PNGs, with no
imaging library: src-tauri/icons/{32x32,128x128,icon}.png. Run again after changing it."""
import math
import struct
import zlib
from pathlib import Path


def png(size, pixel):
    rows = []
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            row.extend(pixel(x + 0.5, y + 0.5, size))
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def coverage(inside, x, y, size, samples=4):
    hits = 0
    for i in range(samples):
        for j in range(samples):
            u = (x - 0.5 + (i + 0.5) / samples) / size
            v = (y - 0.5 + (j + 0.5) / samples) / size
            hits += inside(u, v)
    return hits / (samples * samples)


def tile(u, v):
    r = 0.18
    dx = max(abs(u - 0.5) - (0.5 - r) + 0.02, 0)
    dy = max(abs(v - 0.5) - (0.5 - r) + 0.02, 0)
    return math.hypot(dx, dy) <= r


def gate(u, v):
    # Two towers and a wall with an arched opening.
    towers = (0.2 <= u <= 0.36 or 0.64 <= u <= 0.8) and 0.22 <= v <= 0.8
    wall = 0.2 <= u <= 0.8 and 0.36 <= v <= 0.8
    battlement = 0.2 <= u <= 0.8 and 0.3 <= v < 0.36 and int((u - 0.2) / 0.075) % 2 == 0
    arch = 0.41 <= u <= 0.59 and v >= 0.52 or math.hypot(u - 0.5, v - 0.52) <= 0.09
    return (towers or wall or battlement) and not arch


def pixel(x, y, size):
    t = coverage(tile, x, y, size)
    g = coverage(gate, x, y, size)
    top, bottom = (37, 99, 235), (30, 58, 138)
    k = y / size
    base = [round(top[i] * (1 - k) + bottom[i] * k) for i in range(3)]
    color = [round(base[i] * (1 - g) + 255 * g) for i in range(3)]
    return bytes(color + [round(255 * t)])


out = Path(__file__).resolve().parent.parent / "src-tauri" / "icons"
out.mkdir(parents=True, exist_ok=True)
for name, size in [("32x32.png", 32), ("128x128.png", 128), ("icon.png", 512)]:
    (out / name).write_bytes(png(size, pixel))
    print(out / name)

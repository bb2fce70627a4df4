"""A tiny PNG reader (zlib + struct + numpy) for screenshot tests: 8-bit RGB/RGBA,
non-interlaced, every row filter. Enough for what headless Chromium writes; no Pillow."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
from numpy.typing import NDArray


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def read_png(path: Path) -> NDArray[np.uint8]:
    """(height, width, 3) RGB pixels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if f == 1:  # Sub: running sum per channel
            line = np.cumsum(line.reshape(w, bpp), axis=0).reshape(-1) % 256
        elif f == 2:
            line = (line + prev) % 256
        elif f in (3, 4):
            cur = line.tolist()
            up = prev.tolist()
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                if f == 3:
                    cur[i] = (cur[i] + (left + up[i]) // 2) % 256
                else:
                    diag = up[i - bpp] if i >= bpp else 0
                    cur[i] = (cur[i] + _paeth(left, up[i], diag)) % 256
            line = np.array(cur, dtype=np.int32)
        out[y] = line
        prev = line
    return out.reshape(h, w, bpp)[:, :, :3]


def count_colour(pixels: NDArray[np.uint8], hex_colour: str, rows: slice = slice(None)) -> int:
    """How many pixels (in ``rows``) have exactly this colour."""
    rgb = tuple(int(hex_colour.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    return int(np.all(pixels[rows] == np.array(rgb, dtype=np.uint8), axis=-1).sum())


def rows_with(pixels: NDArray[np.uint8], hex_colour: str) -> NDArray[np.intp]:
    """The row indices where the colour appears."""
    rgb = tuple(int(hex_colour.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    return np.nonzero(np.all(pixels == np.array(rgb, dtype=np.uint8), axis=-1).any(axis=1))[0]

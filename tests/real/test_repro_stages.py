"""Every reproducer of real-model failures through every stage of its README.

The cases are copied unchanged from the shared ``repro/real`` folder into ``repro/`` here
(560 KB), so that CI, which clones only this repository, runs them too.

Each case is a failure pir had on a real model (taken unchanged from a published package),
cut down to a few nodes; its ``.npz`` holds the inputs (``in_<name>``) and the expected
outputs (``out_<name>``: onnxruntime's, or for the long reductions the exact result).  The
stages: import, the reference runtime, ``pir optimize`` (default pipeline) and run,
decompose..fuse + ``pir codegen --target llvm`` and run, and ``pir codegen --target cuda``
with every emitted kernel compiled by nvcc (where nvcc exists).  Each is compared with
``compare.py``'s measure: max |got - ref| / max |ref| over the outputs.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from helpers import cli

REPRO = pathlib.Path(__file__).resolve().parent / "repro"
FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"

#: case -> what it exercises (the README's table); the tolerance is 1e-4 unless given
CASES = {
    "question_mark_dims": "several '?' dims in one input are different symbols",
    "value_info_expr_dims": "value_info dims written as sympy expressions of the input dims",
    "conv_dynamic_hw": "a conv over symbolic H and W: its unk__N result dims are expressions",
    "size_of_unbound_dim": "Size of a value reshaped to a run-time shape, after decompose",
    "long_softmax": "softmax over 18,710 classes: a long f32 sum",
    "long_reduce_sum": "1.0 then 20,000 terms of 3e-8: a long f32 sum",
    "kernel_named_select": "a value named after a C library function (select)",
    "dynamic_quantize_lstm": "com.microsoft::DynamicQuantizeLSTM from onnxruntime's quantizer",
}
TOLERANCE = {"long_softmax": 1e-6, "long_reduce_sum": 1e-6}

def _error(ref: dict, got: dict) -> float:
    worst = 0.0
    for name, r in ref.items():
        assert name in got, f"missing output {name}; have {sorted(got)}"
        g = got[name]
        assert g.shape == r.shape, f"{name}: shape {g.shape} != {r.shape}"
        if r.size:
            r64, g64 = r.astype(np.float64), g.astype(np.float64)
            worst = max(worst, float(np.max(np.abs(g64 - r64)) / max(np.max(np.abs(r64)), 1e-6)))
    return worst


@pytest.fixture(params=sorted(CASES), scope="module")
def case(request, tmp_path_factory):
    name = request.param
    if not (REPRO / f"{name}.onnx").exists():
        pytest.skip(f"{name}.onnx is absent")
    tmp = tmp_path_factory.mktemp(name)
    data = np.load(REPRO / f"{name}.npz")
    np.savez(tmp / "in.npz", **{k[3:]: data[k] for k in data.files if k.startswith("in_")})
    ref = {k[4:]: data[k] for k in data.files if k.startswith("out_")}
    code, _, err = cli("import", REPRO / f"{name}.onnx", "-o", tmp / "n.pir")
    assert code == 0, err
    return name, tmp, ref


def _run(tmp, program: str, out: str) -> dict:
    # a compiled program twice: the second run follows its execution plan
    again = ("--repeat", "1") if program == "k.pir" else ()
    code, _, err = cli("run", tmp / program, "--inputs", tmp / "in.npz", *again,
                       "-o", tmp / out)
    assert code == 0, err
    got = np.load(tmp / out)
    return {k: got[k] for k in got.files}


def test_reference(case):
    name, tmp, ref = case
    assert _error(ref, _run(tmp, "n.pir", "ref.npz")) <= TOLERANCE.get(name, 1e-4)


def test_optimized(case):
    name, tmp, ref = case
    code, _, err = cli("optimize", tmp / "n.pir", "-o", tmp / "o.pir")
    assert code == 0, err
    assert _error(ref, _run(tmp, "o.pir", "opt.npz")) <= TOLERANCE.get(name, 1e-4)


def _fused(tmp):
    if not (tmp / "f.pir").exists():
        code, _, err = cli("optimize", tmp / "n.pir", "-p", FUSE, "-o", tmp / "f.pir")
        assert code == 0, err


def test_compiled_llvm(case):
    name, tmp, ref = case
    _fused(tmp)
    code, _, err = cli("codegen", tmp / "f.pir", "--target", "llvm", "-o", tmp / "k.pir")
    assert code == 0, err
    assert _error(ref, _run(tmp, "k.pir", "llvm.npz")) <= TOLERANCE.get(name, 1e-4)


def test_cuda_sources_compile(case):
    name, tmp, _ = case
    _fused(tmp)
    cu = tmp / "cu"
    code, _, err = cli("codegen", tmp / "f.pir", "--target", "cuda", "--emit-sources", cu,
                       "-o", tmp / "c.pir")
    assert code == 0, err
    sources = sorted(cu.glob("*.cu")) if cu.exists() else []
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    for src in sources:
        r = subprocess.run(["nvcc", "-arch=sm_90", "--ptx", "-o", str(src.with_suffix(".ptx")),
                            str(src)], capture_output=True, text=True)
        assert r.returncode == 0, f"{src.name}: {r.stderr[-2000:]}"

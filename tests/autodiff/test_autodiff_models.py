"""Weight gradients of the test models (tests/models/*.onnx, exported from PyTorch) against
central finite differences.

Each model is cast to float64 first (every f32 type, attribute and weight, and the
statistics type of layer norms, which decompose would otherwise compute in f32), so the
differences are accurate: the gradients of every float output (random cotangents) with
respect to three weights (the first, a middle and the last weight held in resources) must
match the difference quotient along two random directions (all three weights perturbed at
once) to a relative 1e-6.  The step is 1e-7, not the usual 1e-6: t5's ReLUs have inputs
within 1e-6 of their kink for these weights, so a larger step measures the slope on both
sides of it.

bert's position ids are a slice of a buffer up to the sequence length, which the importer
can only type as an unknown dim (`unk__1`): the embeddings' sum `[batch, seq] + [1, unk__1]`
then broadcasts to an unknown dim that decompose cannot lower.  ``shapes{broadcast-equal}``
(assume no symbolic dim is 1 at run time, as ONNX Runtime does) unifies them with `seq`;
the test runs it on every model before differentiating, as a user would.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pir.frontends.onnx.importer import import_model
from pir.ir.attributes import ResourceRef
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.ir.types import DType
from pir.passes.autodiff import differentiate
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.reference import run_function
from pir.runtimes.reference.interpreter import output_names

MODELS = Path(__file__).resolve().parents[1] / "models"
NAMES = sorted(p.stem for p in MODELS.glob("*.onnx"))
STEP, TOL = 1e-7, 1e-6


def as_float64(module):
    """``module`` with every f32 type, cast and weight made f64."""
    for key, array in list(module.resources.items()):
        if array.dtype == np.float32:
            module.resources[key] = array.astype(np.float64)
    text = print_module(module)
    cut = text.find("\nresources {")
    body, res = (text, "") if cut < 0 else (text[:cut + 1], text[cut + 1:])
    out = parse_module(re.sub(r"(?<=[x<\s])f32\b", "f64", body) + res)
    for op in out.walk():
        sig = getattr(op, "signature", None)
        if sig is not None and "stash_type" in sig.attrs:
            op.attributes["stash_type"] = DType.F64
    return out


def _weights(fn):
    consts = [op for op in fn.entry.ops if isinstance(op, ConstantOp)
              and isinstance(op.value, ResourceRef) and op.results[0].type.dtype.is_float]
    return [consts[0], consts[len(consts) // 2], consts[-1]]


@pytest.mark.parametrize("name", NAMES)
def test_weight_gradients_match_differences(name):
    module = import_model(str(MODELS / f"{name}.onnx"))
    PassManager(parse_pipeline("shapes{broadcast-equal=true}")).run(module)
    module = as_float64(module)
    feeds = {k: v.astype(np.float64) if v.dtype == np.float32 else v
             for k, v in np.load(MODELS / f"{name}.inputs.npz").items()}
    fn = module.lookup("main")
    weights = _weights(fn)
    wnames = [w.results[0].name for w in weights]
    keys = [w.value.key for w in weights]
    outs = [o for o, v in zip(output_names(fn), fn.return_op.operands) if v.type.dtype.is_float]
    rng = np.random.default_rng(0)
    primal = run_function(module, feeds)
    cots = {o: rng.standard_normal(primal[o].shape) for o in outs}
    differentiate(module, wnames, of=outs)
    grads = run_function(module, {**feeds, **{f"cot_{o}": c for o, c in cots.items()}},
                         func="main_grad")
    base = {k: module.resources[k].copy() for k in keys}

    def objective(dirs, sign):
        for k in keys:
            module.resources[k] = base[k] + sign * STEP * dirs[k]
        got = run_function(module, feeds)
        return sum(float(np.sum(cots[o] * got[o])) for o in outs)

    for _ in range(2):
        dirs = {k: rng.standard_normal(base[k].shape) for k in keys}
        fd = (objective(dirs, 1) - objective(dirs, -1)) / (2 * STEP)
        ad = sum(float(np.sum(grads[f"grad_{n}"] * dirs[k])) for n, k in zip(wnames, keys))
        assert abs(ad - fd) <= TOL * max(abs(fd), 1.0), (name, ad, fd)
    for k in keys:
        module.resources[k] = base[k]

"""Test harness for prim ops: build one op in a function, round-trip its text, run it.

``check_op`` builds ``func.func @main`` holding the op applied to the function's arguments
(``%x0``, ``%x1`` ...), checks that the module verifies and that print -> parse -> print is
byte-identical, then runs the parsed module with the reference runtime on each set of input
arrays and compares with ``expected(*arrays)``, an independent numpy computation.
"""

from __future__ import annotations

import importlib.util
import pathlib
from typing import Callable, Sequence

import numpy as np

import pir.ir.dialects.prim  # noqa: F401  (registers the prim ops in OPS)
from helpers import roundtrip
from pir.ir.builder import Builder
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir.parser import parse_module
from pir.ir.types import DType, FunctionType, TensorType, Type
from pir.ir.verifier import verify_module
from pir.runtimes.reference import run_function

__all__ = ["make_module", "check_op", "ttype", "rand", "covered_ops"]

RNG = np.random.default_rng(0)


def ttype(dtype: str, *shape) -> TensorType:
    """ttype("f32", "B", 4) is tensor<Bx4xf32>."""
    return TensorType(DType(dtype), tuple(shape))


def rand(shape, dtype: str = "f32", low: float = -3.0, high: float = 3.0) -> np.ndarray:
    """Random test data: uniform floats in [low, high), integers in [low, high], booleans."""
    npdt = DType(dtype).numpy
    if dtype == "i1":
        return RNG.random(shape) < 0.5
    if np.issubdtype(npdt, np.integer):
        return RNG.integers(int(low), int(high) + 1, size=shape).astype(npdt)
    return RNG.uniform(low, high, size=shape).astype(npdt)


def make_module(cls, input_types: Sequence[Type], result_types=None, variadic: bool = False,
                n_operands: int | None = None, **attrs) -> ModuleOp:
    """A verified module whose @main applies ``cls`` to its first ``n_operands`` arguments
    (all by default; as one list when ``variadic``) and returns the op's results."""
    module = ModuleOp.create("test")
    fn = FuncOp.create("main", list(input_types), [],
                       arg_names=[f"x{i}" for i in range(len(input_types))])
    module.body.block.append(fn)
    b = Builder(fn.entry)
    args = list(fn.args)[:n_operands]
    operands = [args] if variadic else args
    op = b.create(cls, *operands, result_types=result_types, **attrs)
    for i, r in enumerate(op.results):
        r.name = f"out{i}"
    b.create(ReturnOp, list(op.results))
    fn.attributes["function_type"] = FunctionType(tuple(input_types),
                                                  tuple(r.type for r in op.results))
    verify_module(module)
    return module


def check_op(cls, runs: Sequence[Sequence[np.ndarray]], expected: Callable, *,
             input_types: Sequence[Type] | None = None, rtol: float = 1e-5, atol: float = 1e-6,
             **build) -> ModuleOp:
    """Build ``cls`` on inputs typed ``input_types`` (default: the types of ``runs[0]``),
    check the text round trip, and compare each run with ``expected``."""
    if input_types is None:
        input_types = [TensorType.of(np.asarray(a)) for a in runs[0]]
    module = make_module(cls, input_types, **build)
    text = roundtrip(module)
    assert f" = {cls.name}(" in text
    parsed = parse_module(text)
    for arrays in runs:
        got = run_function(parsed, {f"x{i}": np.asarray(a) for i, a in enumerate(arrays)})
        want = expected(*arrays)
        want = want if isinstance(want, tuple) else (want,)
        assert len(got) == len(want)
        for i, ref in enumerate(want):
            ref = np.asarray(ref)
            out = got[f"out{i}"]
            assert out.dtype == ref.dtype, f"out{i}: dtype {out.dtype}, expected {ref.dtype}"
            assert out.shape == ref.shape, f"out{i}: shape {out.shape}, expected {ref.shape}"
            if ref.dtype.kind == "f" or DType.from_numpy(ref.dtype).is_float:
                np.testing.assert_allclose(out.astype(np.float64), ref.astype(np.float64),
                                           rtol=rtol, atol=atol, equal_nan=True)
            else:
                np.testing.assert_array_equal(out, ref)
    return module


def covered_ops() -> set[str]:
    """The prim ops the test modules of this directory declare (their ``COVERED`` sets)."""
    names: set[str] = set()
    for path in sorted(pathlib.Path(__file__).parent.glob("test_prim_*.py")):
        spec = importlib.util.spec_from_file_location(f"_prim_cover_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        names |= set(getattr(module, "COVERED", ()))
    return names

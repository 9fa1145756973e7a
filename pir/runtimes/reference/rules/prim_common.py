"""Helpers shared by the prim rules: concrete result shapes and compute precision."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from pir.errors import PirError
from pir.ir.core import Operation
from pir.ir.dimexpr import evaluate
from pir.ir.types import DType, TensorType
from pir.runtimes.reference.registry import bound_symbols

__all__ = ["result_shape", "compute_dtype", "in_compute_dtype"]


def result_shape(op: Operation, arrays: Sequence[np.ndarray], index: int = 0,
                 fallback: Callable[[int, list], int | None] | None = None) -> tuple[int, ...]:
    """The concrete shape of result ``index``: static dims as declared, symbols as bound by
    the operands or by the running function, other dims from ``fallback(dim, partial)``.

    ``partial`` holds the dims found so far (None where unknown).
    """
    t = op.results[index].type
    if not isinstance(t, TensorType) or t.shape is None:
        raise PirError(f"result {index} needs a ranked tensor type, got {t}")
    symbols = dict(bound_symbols())
    for v, a in zip(op.operands, arrays):
        vt = v.type
        if isinstance(vt, TensorType) and vt.shape is not None and len(vt.shape) == a.ndim:
            for d, s in zip(vt.shape, a.shape):
                if isinstance(d, str):
                    symbols.setdefault(d, s)
    partial: list = [evaluate(d, symbols) for d in t.shape]
    for i, d in enumerate(partial):
        if d is None and fallback is not None:
            partial[i] = fallback(i, partial)
        if partial[i] is None:
            raise PirError(f"cannot tell the size of result dim {i} "
                           f"({'?' if t.shape[i] is None else t.shape[i]}) of {t}")
    return tuple(partial)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype to compute float math in: at least f32 (numpy has no f16/bf16/f8 kernels
    for most functions, and a narrow accumulator loses precision)."""
    dtype = np.dtype(dtype)
    kind = DType.from_numpy(dtype)
    if kind.is_float and kind is not DType.F64:
        return np.dtype(np.float32)
    return dtype


def in_compute_dtype(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Wrap ``fn(*arrays)`` to run in :func:`compute_dtype` and give the input dtype back."""

    def run(*arrays: np.ndarray) -> np.ndarray:
        dtype = arrays[0].dtype
        work = compute_dtype(dtype)
        out = fn(*(a.astype(work, copy=False) for a in arrays))
        return np.asarray(out).astype(dtype, copy=False)

    run.__name__ = getattr(fn, "__name__", "run")
    return run

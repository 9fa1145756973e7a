"""Helpers for the data-movement and indexing rules (rules_tensor, rules_indexing, rules_shape).

prim reads and writes at computed positions along one axis only (``prim.gather``,
``prim.scatter_add``, docs/prim.md), with exact, non-negative indices.  Every ONNX indexing
op is reduced to that form the same way: the indexed dims are flattened into one with
``prim.reshape``, a linear index is computed from ``prim.iota`` coordinates with ``mul`` and
``add``, and ONNX's negative indices become ``select(i < 0, i + n, i)``.

Symbolic dims are fine in declared result types (iota, broadcast_in_dim, reshape) as long as
the runtime can size them: :func:`sizable` checks that each symbol is bound by the function's
inputs, the op's operands or a value computed before the op.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from pir.ir import dimexpr
from pir.ir.core import Operation, Value
from pir.ir.dialects.func import FuncOp
from pir.ir.typerules import const_value, tensor
from pir.ir.types import Dim, DType, TensorType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep

__all__ = ["I64", "static_dims", "sizable", "fit", "iota", "wrap_index", "linear_index",
           "take_flat", "put_flat", "const_list", "dim_size"]

I64 = DType.I64


def const_list(v: Value | None, what: str) -> list[int] | None:
    """The elements of a constant integer operand (None when the operand is absent)."""
    if v is None:
        return None
    arr = const_value(v)
    if arr is None:
        raise Keep(f"{what} is computed at run time")
    return [int(x) for x in arr.reshape(-1)]


def static_dims(shape: Sequence[Dim] | None, what: str) -> tuple[int, ...]:
    """``shape`` when every dim is an int; else Keep (strides need sizes)."""
    if shape is None or not all(isinstance(d, int) for d in shape):
        raise Keep(f"{what} needs static dims, got {_show(shape)}")
    return tuple(shape)


def _show(shape) -> str:
    if shape is None:
        return "an unranked shape"
    return "[" + "x".join("?" if d is None else str(d) for d in shape) + "]"


def _symbols(types) -> set[str]:
    return {d for t in types if isinstance(t, TensorType) and t.shape is not None
            for d in t.shape if isinstance(d, str)}


def input_symbols(op: Operation) -> set[str]:
    """The symbols the inputs of the function around ``op`` bind (every run sizes them
    before anything else; a symbol bound only by an intermediate value is sized only if
    that value is still computed after the rewrite)."""
    fn = op
    while fn is not None and not isinstance(fn, FuncOp):
        fn = fn.parent_op
    return _symbols(a.type for a in fn.args) if fn is not None else set()


def _bound_symbols(op: Operation, wanted: set[str]) -> set[str]:
    """The symbols of ``wanted`` the reference runtime has sized when ``op`` runs: those of
    its operands, and of the arguments and results of the values defined before it (it binds
    a symbol at the first value that shows it).  The walk back is taken only when the
    operands do not show them all."""
    bound = _symbols(v.type for v in op.operands) & wanted
    cur = op
    while not wanted <= bound and cur is not None and not isinstance(cur, FuncOp) \
            and cur.parent is not None:
        block = cur.parent
        before = block.ops[:block.ops.index(cur)]
        bound |= _symbols([a.type for a in block.args] +
                          [r.type for prev in before for r in prev.results]) & wanted
        cur = block.parent.parent if block.parent is not None else None
    return bound


def sizable(b: PrimBuilder, shape: Sequence[Dim] | None, what: str,
            unknown: int = 0) -> tuple[Dim, ...]:
    """``shape`` when the runtime can size it: static dims, symbols that the function's
    inputs, the op's operands or earlier values bind, and at most ``unknown`` other dims
    (a reshape's one ``?`` is what the other dims leave over)."""
    if shape is None:
        raise Keep(f"{what} is unranked")
    bound = _bound_symbols(b.root, set().union(*(dimexpr.symbols(d) for d in shape)))
    loose = [d for d in shape if d is None or not dimexpr.symbols(d) <= bound]
    if len(loose) > unknown:
        raise Keep(f"{what} {_show(shape)} has dims only known at run time")
    return tuple(shape)


def fit(b: PrimBuilder, v: Value, want: TensorType) -> Value:
    """``v`` with the op's declared type: prim's type rules may know less than the nn op's
    (a ``?`` where the nn rule kept a symbol), and a reshape declares the rest."""
    if v.type == want:
        return v
    sizable(b, want.shape, "the result type", unknown=1)
    return b.op("reshape", v, result_type=want)


def iota(b: PrimBuilder, shape: Sequence[Dim], dim: int, dtype: DType = I64) -> Value:
    """Counts 0, 1, 2 ... along ``dim`` of ``shape``."""
    shape = sizable(b, shape, "an iota shape")
    return b.op("iota", result_type=TensorType(dtype, shape), dimension=dim)


def dim_size(b: PrimBuilder, d: Dim) -> Value:
    """The size of dim ``d`` as an i64 scalar: a constant, or for a symbol the sum of ones
    broadcast to ``(d,)`` (prim has no shape op; the runtime sizes the symbol)."""
    if isinstance(d, int):
        return b.const(d, I64)
    ones = b.broadcast_to(b.const(1, I64), sizable(b, (d,), "a dim"))
    return b.reduce("sum", ones, [0], keepdims=False)


def wrap_index(b: PrimBuilder, idx: Value, n: Dim) -> Value:
    """``idx`` as i64 indices in [0, n): ONNX counts negative indices from the end.
    Constant indices are wrapped here; others by ``select(i < 0, i + n, i)``."""
    arr = const_value(idx)
    if arr is not None:
        arr = arr.astype(np.int64)
        if not np.any(arr < 0):
            return b.const(arr, I64)
        if isinstance(n, int):
            return b.const(np.where(arr < 0, arr + n, arr), I64)
    idx = b.cast(idx, I64)
    shape = b.known(tensor(idx).shape, "indices")
    negative = b.op("lt", idx, b.zeros_like(idx))
    size = b.broadcast_to(dim_size(b, n), shape)
    return b.op("select", negative, b.add(idx, size), idx)


def linear_index(b: PrimBuilder, coords: Sequence[Value], dims: Sequence[int]) -> Value:
    """sum(coords[i] * stride[i]): the row-major position of ``coords`` in ``dims``."""
    total = None
    for i, c in enumerate(coords):
        stride = math.prod(dims[i + 1:])
        term = c if stride == 1 else b.mul(c, b.scalar_like(stride, c))
        total = term if total is None else b.add(total, term)
    return total


def _flatten_lead(b: PrimBuilder, x: Value, lead: int) -> tuple[Value, int]:
    t = tensor(x)
    rows = math.prod(static_dims(t.shape[:lead], "the indexed dims"))
    return b.reshape(x, (rows,) + tuple(t.shape[lead:])), rows


def take_flat(b: PrimBuilder, x: Value, lead: int, index: Value) -> Value:
    """x[index, ...] with the first ``lead`` dims of x (static) flattened into one:
    index.shape + x.shape[lead:]."""
    flat, _ = _flatten_lead(b, x, lead)
    return b.op("gather", flat, index, axis=0)


def put_flat(b: PrimBuilder, x: Value, lead: int, index: Value, updates: Value,
             reduction: str) -> Value:
    """x with ``updates`` written at ``index`` of its first ``lead`` dims flattened into one,
    added (``reduction='add'``) or stored (``'none'``)."""
    t = tensor(x)
    if not (t.dtype.is_int or t.dtype.is_float):
        raise Keep(f"prim.scatter_add does not take {t.dtype.value}")
    flat, _ = _flatten_lead(b, x, lead)
    if reduction == "add":
        out = b.op("scatter_add", flat, index, updates, axis=0)
    elif reduction == "none":
        out = _store(b, flat, index, updates)
    else:
        raise Keep(f"reduction '{reduction}': prim has scatter_add only")
    return b.reshape(out, t.shape)


def _store(b: PrimBuilder, flat: Value, index: Value, updates: Value) -> Value:
    """flat[index] = updates, from scatter_add: the written places are those a scatter of
    ones counts, and they take the mean of their updates.  ONNX leaves duplicate indices
    undefined; the mean gives equal duplicates (MaxUnpool after overlapping windows) their
    value."""
    t = tensor(flat)
    sums = b.op("scatter_add", b.zeros_like(flat), index, updates, axis=0)
    ones = b.broadcast_to(b.const(1, DType.I32), b.known(tensor(updates).shape))
    zeros = b.broadcast_to(b.const(0, DType.I32), b.known(t.shape))
    counts = b.op("scatter_add", zeros, index, ones, axis=0)
    written = b.op("gt", counts, zeros)
    mean = b.div(sums, b.cast(b.max(counts, b.scalar_like(1, counts)), t.dtype))
    return b.op("select", written, mean, flat)

"""Symbolic shape arithmetic for the type rules of the shape and data-movement ops.

Dims are ints, symbols (``"B"``) or ``None`` (unknown).  :func:`shape_value` reads the value
of a small integer tensor as a tuple of such dims by looking through the ops that exported
models use to compute shapes (``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``, with
``Equal``/``Where`` to replace -1s), so that a reshape or expand to a computed shape keeps
its symbolic dims.  Ops of other families are recognised by name; an op without a rule here
just makes its elements unknown.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.ir.typerules import MAX_RANK, const_value, normalize_axis, tensor
from pir.ir.types import Dim, DType

__all__ = ["I64", "INDEX", "const_ints", "static_length", "dim_product", "infer_dim",
           "shape_value", "shape_operand", "shape_slice", "add_dim", "unify_dims",
           "unique_axes", "split_sizes", "slice_dim", "divide_dim"]

I64 = frozenset({DType.I64})
INDEX = frozenset({DType.I32, DType.I64})


def const_ints(v: Value | None) -> list[int] | None:
    """The elements of a constant integer operand as Python ints, else None."""
    arr = const_value(v)
    if arr is None or arr.dtype.kind not in "iub":
        return None
    return [int(x) for x in arr.reshape(-1)]


def dim_product(dims: Sequence[Dim]) -> Dim:
    """The product of dims: an int when all are static, the symbol when one symbol is
    multiplied by ones, else unknown (``None``)."""
    ints = [d for d in dims if isinstance(d, int)]
    rest = [d for d in dims if not isinstance(d, int)]
    n = math.prod(ints)
    if n == 0:
        return 0
    if not rest:
        return n
    if len(rest) == 1 and rest[0] is not None and n == 1:
        return rest[0]
    return None


def infer_dim(total: Sequence[Dim], known: Sequence[Dim]) -> Dim:
    """The dim ``d`` with ``prod(known) * d == prod(total)`` (a reshape's -1), cancelling
    symbols: ``(B, S, 768)`` reshaped to ``(B, -1, 768)`` gives ``S``."""
    if any(d is None for d in total) or any(d is None for d in known):
        return None
    left = Counter(d for d in total if isinstance(d, str))
    right = Counter(d for d in known if isinstance(d, str))
    if right - left:
        return None  # a symbol of the target that the input lacks
    syms = list((left - right).elements())
    num = math.prod(d for d in total if isinstance(d, int))
    den = math.prod(d for d in known if isinstance(d, int))
    if den == 0 or num % den:
        return None
    if not syms:
        return num // den
    return syms[0] if len(syms) == 1 and num == den else None


def static_length(v: Value) -> int | None:
    """The number of elements of a 0-d or 1-d tensor with a static length."""
    shape = tensor(v).shape
    if shape is None or len(shape) > 1:
        return None
    if not shape:
        return 1
    return shape[0] if isinstance(shape[0], int) else None


def _binary(name: str, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        if name == "nn.add":
            return a + b
        if name == "nn.sub":
            return a - b
        if name == "nn.mul":
            return a * b
        return int(a / b) if b else None  # nn.div truncates toward zero
    if name == "nn.mul" and (a == 1 or b == 1):
        return b if a == 1 else a
    if name in ("nn.add", "nn.sub") and b == 0:
        return a
    if name == "nn.add" and a == 0:
        return b
    return None


def shape_value(v: Value | None, depth: int = 0) -> tuple[Dim, ...] | None:
    """The elements of a small integer tensor ``v`` (0-d or 1-d) as dims, when they can be
    known: constants give ints, ``nn.shape`` gives its input's (maybe symbolic) dims, and
    ops that move, pick or combine elements (concat, gather, slice, unsqueeze ...) pass them
    through.  Elements that are not known are ``None``; None when even the count is not."""
    if v is None or depth > 64:
        return None
    ints = const_ints(v)
    if ints is not None:
        return tuple(ints)
    op = getattr(v, "op", None)
    if op is None or not (tensor(v).dtype.is_int or tensor(v).dtype is DType.BOOL):
        return None
    rule = _SHAPE_VALUE_RULES.get(op.name)
    out = rule(op, depth + 1) if rule is not None else None
    if out is None:
        n = static_length(v)
        # A value longer than any rank is no shape: its elements are not tracked (the length
        # comes from the file and may be 2**40).
        return None if n is None or n > MAX_RANK else (None,) * n
    return out


def _sv_shape(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    shape = tensor(op.operands[0]).shape
    if shape is None:
        return None
    return tuple(shape[slice(*shape_slice(len(shape), op.start, op.end))])


def _sv_concat(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    parts = [shape_value(x, depth) for x in op.operands]
    if any(p is None for p in parts):
        return None
    return tuple(d for p in parts for d in p)


def _sv_same(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    return shape_value(op.operands[0], depth)  # reshapes keep the elements in order


def _sv_gather(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    data = shape_value(op.operands[0], depth)
    idx = const_ints(op.operands[1])
    if data is None or idx is None or op.attributes.get("axis", 0) not in (0, -1):
        return None
    try:
        return tuple(data[i] for i in idx)
    except IndexError:
        return None


def _sv_slice(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    data = shape_value(op.operands[0], depth)
    starts, ends = const_ints(op.starts), const_ints(op.ends)
    steps = const_ints(op.steps) if op.steps is not None else [1]
    if data is None or starts is None or ends is None or steps is None or len(starts) != 1:
        return None
    return tuple(data[slice(starts[0], ends[0], steps[0])])


def _broadcast(*parts: tuple[Dim, ...] | None) -> list[tuple[Dim, ...]] | None:
    """Vectors of equal length from vectors of length n or 1 (numpy broadcasting)."""
    if any(p is None for p in parts):
        return None
    n = max(len(p) for p in parts)
    if any(len(p) not in (1, n) for p in parts):
        return None
    return [p * n if len(p) == 1 else p for p in parts]


def _sv_binary(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    parts = _broadcast(*(shape_value(x, depth) for x in op.operands[:2]))
    return None if parts is None else tuple(_binary(op.name, x, y) for x, y in zip(*parts))


def _equal(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return int(a == b)
    if isinstance(a, str) and a == b:
        return 1
    # A symbol is a dim, never negative: exporters compare shapes with -1 this way.
    if (isinstance(a, str) and isinstance(b, int) and b < 0) or \
            (isinstance(b, str) and isinstance(a, int) and a < 0):
        return 0
    return None


def _sv_equal(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    parts = _broadcast(*(shape_value(x, depth) for x in op.operands[:2]))
    return None if parts is None else tuple(_equal(x, y) for x, y in zip(*parts))


def _sv_where(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    parts = _broadcast(*(shape_value(x, depth) for x in op.operands[:3]))
    if parts is None:
        return None
    return tuple(x if c == 1 else y if c == 0 else (x if x == y else None)
                 for c, x, y in zip(*parts))


_SHAPE_VALUE_RULES = {
    "nn.shape": _sv_shape,
    "nn.concat": _sv_concat,
    "nn.unsqueeze": _sv_same,
    "nn.squeeze": _sv_same,
    "nn.reshape": _sv_same,
    "nn.flatten": _sv_same,
    "nn.cast": _sv_same,
    "nn.gather": _sv_gather,
    "nn.slice": _sv_slice,
    "nn.add": _sv_binary,
    "nn.sub": _sv_binary,
    "nn.mul": _sv_binary,
    "nn.div": _sv_binary,
    "nn.equal": _sv_equal,
    "nn.where": _sv_where,
}


def shape_slice(rank: int, start: int, end: int | None) -> tuple[int, int]:
    """The dims [start, end) that ``nn.shape`` returns, clamped as ONNX does."""
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = rank if end is None else end
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return start, max(start, end)


def shape_operand(v: Value, what: str, allow_negative: bool = False) -> tuple[Dim, ...] | None:
    """A 1-d shape operand's elements as dims (None where unknown); None when its length
    is unknown.  Negative elements are an error unless ``allow_negative`` (a reshape's -1)."""
    t = tensor(v)
    if t.shape is not None and len(t.shape) != 1:
        raise PirError(f"{what} must be a 1-d tensor, got {t}")
    n = static_length(v)
    if n is not None and n > MAX_RANK:
        raise PirError(f"{what} has {n} elements, but a tensor has at most {MAX_RANK} dims")
    dims = shape_value(v)
    if not allow_negative and dims is not None and \
            any(isinstance(d, int) and d < 0 for d in dims):
        raise PirError(f"{what} {list(dims)} has a negative dim")
    return dims


def add_dim(d: Dim, n: int) -> Dim:
    """d + n for a pad or crop: exact for ints, the symbol itself when n is 0."""
    if isinstance(d, int):
        if d + n < 0:
            raise PirError(f"a dim of {d} cannot shrink by {-n}")
        return d + n
    return d if n == 0 else None


def unify_dims(dims: list[Dim], what: str) -> Dim:
    """The one dim that several dims which must be equal stand for."""
    ints = {d for d in dims if isinstance(d, int)}
    if len(ints) > 1:
        raise PirError(f"{what}: dims {sorted(ints)} differ")
    if ints:
        return ints.pop()
    syms = [d for d in dims if d is not None]
    return syms[0] if syms else None


def unique_axes(axes: list[int], rank: int) -> list[int]:
    out = [normalize_axis(a, rank) for a in axes]
    if len(set(out)) != len(out):
        raise PirError(f"axes {axes} repeat an axis")
    return out


def split_sizes(dim: Dim, split: list[int] | None, num_outputs: int | None) -> list[Dim]:
    """The sizes of a split's pieces: given, or num_outputs pieces of ceil(dim / n) with a
    smaller last one."""
    if split is not None:
        if any(s < 0 for s in split):
            raise PirError(f"split {split} has a negative size")
        if isinstance(dim, int) and sum(split) != dim:
            raise PirError(f"split {split} does not add up to the dim {dim}")
        return list(split)
    if not num_outputs or num_outputs < 1:
        raise PirError("needs split sizes or num_outputs")
    if not isinstance(dim, int):
        return [None] * num_outputs
    chunk = -(-dim // num_outputs)
    sizes = [min(chunk, max(dim - chunk * i, 0)) for i in range(num_outputs)]
    return sizes


def slice_dim(dim: Dim, start: Dim, end: Dim, step: int) -> Dim:
    """The length of dim[start:end:step]; ONNX clamps like Python's slices do."""
    if isinstance(dim, int) and isinstance(start, int) and isinstance(end, int):
        return len(range(*slice(start, end, step).indices(dim)))
    whole = end == dim or (isinstance(end, int) and end >= 2**31 - 1)
    if start == 0 and step == 1 and whole:
        return dim  # all of a dim, even a symbolic one
    return None


def divide_dim(d: Dim, n: int, what: str) -> Dim:
    """d / n for a dim that must divide evenly."""
    if not isinstance(d, int):
        return d if n == 1 else None
    if d % n:
        raise PirError(f"{what} {d} is not divisible by {n}")
    return d // n

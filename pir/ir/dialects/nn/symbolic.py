"""Symbolic shape arithmetic for the type rules of the shape and data-movement ops.

Dims are ints, symbols (``"B"``), expressions (:class:`~pir.ir.dimexpr.DimExpr`: ``2*H``,
``(H - 1) floordiv 2 + 1``) or ``None`` (unknown), and all arithmetic on them goes through
:mod:`pir.ir.dimexpr`.  :func:`shape_value` reads the value of a small integer tensor as a
tuple of such dims by looking through the ops that exported models use to compute shapes
(``Shape -> Gather -> Mul/Add/Div -> Unsqueeze -> Concat -> Reshape``, with ``Equal``/
``Where`` to replace -1s), so that a reshape or expand to a computed shape keeps its symbolic
dims.  Ops of other families are recognised by name; an op without a rule here just makes
its elements unknown.

Two assumptions make the rules useful on symbolic dims (docs/decisions.md): integer shape
arithmetic works on sizes, so a symbolic numerator of ``Div`` is non-negative (truncation is
``floordiv``) and a computed slice bound such as ``H - 1`` is a position; and a slice's
start (and a negative end) lies within a symbolic dim, while a positive end may run past it
and is clamped with ``min`` (``x[1:]`` of ``H`` is ``H - 1``, ``x[:4]`` is ``min(H, 4)``).
"""

from __future__ import annotations

from typing import Sequence

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.core import Operation, Value
from pir.ir.typerules import MAX_RANK, const_value, normalize_axis, tensor
from pir.ir.types import Dim, DType

__all__ = ["I64", "INDEX", "const_ints", "static_length", "dim_product", "infer_dim",
           "shape_value", "shape_operand", "shape_slice", "add_dim", "unify_dims",
           "unique_axes", "split_sizes", "slice_dim", "slice_start", "divide_dim",
           "known_nonneg", "INDEX_END"]

I64 = frozenset({DType.I64})
INDEX = frozenset({DType.I32, DType.I64})


def const_ints(v: Value | None) -> list[int] | None:
    """The elements of a constant integer operand as Python ints, else None."""
    arr = const_value(v)
    if arr is None or arr.dtype.kind not in "iub":
        return None
    return [int(x) for x in arr.reshape(-1)]


def dim_product(dims: Sequence[Dim]) -> Dim:
    """The product of dims (``B*S`` for ``(B, S)``); 0 when one is 0, else unknown when one
    is unknown."""
    if any(d == 0 for d in dims):
        return 0
    return de.product(dims)


def known_nonneg(d: Dim) -> bool:
    """True when ``d`` is known to be >= 0 (a symbol is a size, so never negative)."""
    return d is not None and de.maximum(d, 0) == d


def infer_dim(total: Sequence[Dim], known: Sequence[Dim]) -> Dim:
    """The dim ``d`` with ``prod(known) * d == prod(total)`` (a reshape's -1), by exact
    polynomial division after cancelling the factors both sides share: ``(B, S, 768)``
    reshaped to ``(B, -1, 768)`` gives ``S``, ``(B, H+1, 4)`` to ``(H+1, 2, -1)`` gives
    ``2*B``, ``(B, S)`` to ``(B, 2, -1)`` gives ``S floordiv 2``; None when a symbolic
    divisor leaves a remainder, a static count is not divisible, or a dim is unknown."""
    if any(d is None for d in total) or any(d is None for d in known):
        return None
    left, right = list(total), []
    for d in known:
        if not isinstance(d, int) and d in left:
            left.remove(d)  # a factor of both sides cancels, whatever its form
        else:
            right.append(d)
    num, den = de.product(left), de.product(right)
    if den == 0:
        return None
    q = de.exact_div(num, den)
    if q is None and isinstance(den, int) and den > 0 and not isinstance(num, int):
        # the reshape is only valid when den divides the count, so the floor is exact
        q = de.floordiv(num, den)
    return q


def static_length(v: Value) -> int | None:
    """The number of elements of a 0-d or 1-d tensor with a static length."""
    shape = tensor(v).shape
    if shape is None or len(shape) > 1:
        return None
    if not shape:
        return 1
    return shape[0] if isinstance(shape[0], int) else None


def _trunc_div(a: Dim, b: Dim) -> Dim:
    """Integer ``Div``, which truncates toward zero.  An exact quotient is exact whatever
    the signs; by a positive constant, a symbolic numerator is taken to be a size (>= 0),
    so truncation is floordiv (``(H - 1) / 2`` is ``(H - 1) floordiv 2``)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return None
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q
    q = de.exact_div(a, b)
    if q is not None:
        return q
    if isinstance(b, int) and b > 0:
        return de.floordiv(a, b)
    return None


def _mod(a: Dim, b: Dim, fmod: bool) -> Dim:
    """Integer ``Mod`` by a positive constant: the sign of b, or with fmod the sign of a
    (the same for a numerator known to be >= 0)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return None
        if fmod:
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
        return a % b
    if not (isinstance(b, int) and b > 0) or (fmod and not known_nonneg(a)):
        return None
    return de.mod(a, b)


_ARITH = {
    "nn.add": de.add,
    "nn.sub": de.sub,
    "nn.mul": de.mul,
    "nn.div": _trunc_div,
    "nn.max": de.maximum,
    "nn.min": de.minimum,
}


def _binary(op: Operation, a: Dim, b: Dim) -> Dim:
    if op.name == "nn.mod":
        return _mod(a, b, bool(op.attributes.get("fmod", False)))
    return _ARITH[op.name](a, b)


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
    return None if parts is None else tuple(_binary(op, x, y) for x, y in zip(*parts))


def _sv_variadic(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    """nn.max / nn.min of one or more operands (exporters clamp sizes with them)."""
    parts = _broadcast(*(shape_value(x, depth) for x in op.operands))
    if not parts:
        return None
    fn = _ARITH[op.name]
    return tuple(fn(*col) for col in zip(*parts))


def _sv_neg(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    data = shape_value(op.operands[0], depth)
    return None if data is None else tuple(de.neg(d) for d in data)


def _sv_size(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    shape = tensor(op.operands[0]).shape
    return None if shape is None else (dim_product(shape),)


def _equal(a: Dim, b: Dim) -> Dim:
    diff = de.sub(a, b)
    if diff is None:
        return None
    if isinstance(diff, int):
        return int(diff == 0)
    # A dim is never negative: exporters compare shapes with -1 this way (S + 1 >= 1).
    if known_nonneg(de.sub(diff, 1)) or known_nonneg(de.sub(de.neg(diff), 1)):
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


def _sv_reduce(op: Operation, depth: int) -> tuple[Dim, ...] | None:
    """The sum, product, max or min of a 1-D shape value over its one axis: tf2onnx
    flattens dims to one with ``ReduceProd(Gather(Shape(x), [0, 1]))`` (its einsum)."""
    data = shape_value(op.operands[0], depth)
    if data is None or not data or len(tensor(op.operands[0]).shape or ()) != 1:
        return None
    axes = const_ints(op.axes) if op.axes is not None else []
    if axes is None or any(a not in (0, -1) for a in axes) \
            or (not axes and op.noop_with_empty_axes):
        return None
    fn = _REDUCE[op.name]
    out = data[0]
    for d in data[1:]:
        out = fn(out, d)
    return (out,) if op.keepdims else ()


_REDUCE = {"nn.reduce_sum": de.add, "nn.reduce_prod": de.mul,
           "nn.reduce_max": de.maximum, "nn.reduce_min": de.minimum}

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
    "nn.mod": _sv_binary,
    "nn.max": _sv_variadic,
    "nn.min": _sv_variadic,
    "nn.neg": _sv_neg,
    "nn.identity": _sv_same,
    "nn.size": _sv_size,
    "nn.equal": _sv_equal,
    "nn.where": _sv_where,
    **{name: _sv_reduce for name in _REDUCE},
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


def add_dim(d: Dim, n: Dim) -> Dim:
    """d + n for a pad or crop (``H + 2``); an error when a static dim would shrink below 0."""
    out = de.add(d, n)
    if isinstance(out, int) and out < 0:
        raise PirError(f"a dim of {d} cannot shrink by {de.neg(n)}")
    return out


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


def split_sizes(dim: Dim, split: Sequence[Dim] | None, num_outputs: int | None) -> list[Dim]:
    """The sizes of a split's pieces: given (maybe computed from shapes), or num_outputs
    pieces of ceil(dim / n) with a smaller last one (``H floordiv n`` each when ``n``
    divides the dim, as in ``2*H`` cut in 2)."""
    if split is not None:
        if any(isinstance(s, int) and s < 0 for s in split):
            raise PirError(f"split {list(split)} has a negative size")
        diff = de.sub(_sum(split), dim)
        if isinstance(diff, int) and diff != 0:
            raise PirError(f"split {list(split)} does not add up to the dim {dim}")
        return list(split)
    if not num_outputs or num_outputs < 1:
        raise PirError("needs split sizes or num_outputs")
    if dim is None:
        return [None] * num_outputs
    if isinstance(dim, int):
        chunk = -(-dim // num_outputs)
        return [min(chunk, max(dim - chunk * i, 0)) for i in range(num_outputs)]
    even = de.exact_div(dim, num_outputs)
    if even is not None:
        return [even] * num_outputs
    chunk = de.ceildiv(dim, num_outputs)
    if num_outputs == 2:
        return [chunk, de.floordiv(dim, 2)]
    # min(chunk, max(dim - chunk*i, 0)), as for a static dim: the first piece is a whole
    # chunk (ceil(d/n) <= d), the last one what the others leave (never more than a chunk)
    last = num_outputs - 1
    return [chunk] + [de.minimum(chunk, de.maximum(de.sub(dim, de.mul(chunk, i)), 0))
                      for i in range(1, last)] + \
        [de.maximum(de.sub(dim, de.mul(chunk, last)), 0)]


def _sum(dims: Sequence[Dim]) -> Dim:
    total: Dim = 0
    for d in dims:
        total = de.add(total, d)
    return total


#: An end at or past this (``INT_MAX``, ``INT64_MAX``) means "to the end" in exported slices;
#: its negative, "to the start" of a reversed slice.
INDEX_END = 2**31 - 1


#: A constant slice end this large means "to the end" on a symbolic dim: exporters write
#: 1e9 (tf2onnx), 2**31 - 1 or 2**63 - 1 for it, and no dim of a real tensor reaches 1e9.
_HUGE_END = 10**9


def slice_dim(dim: Dim, start: Dim, end: Dim, step: int) -> Dim:
    """The length of dim[start:end:step]; ONNX clamps like Python's slices do.

    On a static dim with static bounds it is exact.  Otherwise the bounds are placed on the
    dim symbolically, taking the bound a slice starts from, and a computed bound it runs to,
    to lie within the dim, and clamping a constant one it runs to with ``min`` where it may
    lie past the dim: ``H[1:]`` is ``H - 1``, ``H[-3:]`` is 3, ``H[:-1]`` is ``H - 1``,
    ``H[:4]`` is ``min(H, 4)``, ``64[:S]`` is ``S``, ``H[:10**9]`` is ``H``,
    ``H[::2]`` is ``H ceildiv 2``, ``H[::-1]`` is ``H``.  A computed bound whose sign is not
    known (it may count from the end) gives None."""
    if isinstance(dim, int) and isinstance(start, int) and isinstance(end, int):
        return len(range(*slice(start, end, step).indices(dim)))
    if dim is None or start is None or end is None or step == 0:
        return None
    if step > 0:  # positions in [0, dim]: from start up to end
        lo, hi = _position(dim, start, False, False), _position(dim, end, True, False)
    else:  # positions in [-1, dim - 1]: from start down to end
        lo, hi = _position(dim, end, False, True), _position(dim, start, True, True)
    if lo is None or hi is None:
        return None
    # hi - lo, with the subtraction taken into a clamp: min(i, top) - lo = min(i - lo, top - lo)
    parts = [de.sub(h, lo) for h in hi]
    if any(isinstance(p, int) and p <= 0 for p in parts):
        return 0
    length = de.ceildiv(de.minimum(*parts) if len(parts) > 1 else parts[0], abs(step))
    return max(length, 0) if isinstance(length, int) else length


def slice_start(dim: Dim, start: Dim, step: int) -> Dim:
    """The position of the first element of dim[start::step], under :func:`slice_dim`'s
    assumptions (``H - 3`` for a start of -3; ``min(4, H - 1)`` for a reversed slice from
    4); None when it is not known."""
    if step == 0:
        return None
    pos = _position(dim, start, step < 0, step < 0)
    if step > 0 or pos is None:
        return pos
    return de.minimum(*pos) if len(pos) > 1 else pos[0]


def _position(dim: Dim, i: Dim, may_pass: bool, reverse: bool):
    """Slice bound ``i`` as a position in ``dim``, clamped into [0, dim] (a forward slice)
    or [-1, dim - 1] (a reversed one); see :func:`slice_dim` for what is assumed of a
    symbolic dim.  A bound that ``may_pass`` the dim's top is a list of the positions whose
    minimum it is (``[i, top]`` when it may lie past the top, else ``[i]``)."""
    bottom, top = (-1, de.sub(dim, 1)) if reverse else (0, dim)
    if isinstance(i, int) and (i >= INDEX_END or (i >= _HUGE_END and not isinstance(dim, int))) \
            or i == dim:
        pos = top
    elif isinstance(i, int) and i <= -INDEX_END:
        pos = bottom
    elif isinstance(i, int) and i < 0:
        pos = de.add(dim, i)  # counts from the end
    elif known_nonneg(i) or known_nonneg(de.sub(i, _constant_term(i))):
        pos = i  # S, or H - 1: shape arithmetic works on sizes (see the module doc)
        if may_pass and not isinstance(i, int):
            # a computed end (x[:, :seq] of a [1, 64] table) is taken to lie within the
            # dim, as ONNX's data propagation and ONNX Runtime take it: a clamp min(seq, 64)
            # would make the value unequal to everything it is added to
            return [i]
        if may_pass and not (isinstance(i, int) and isinstance(top, int)):
            low = de.minimum(i, top)
            return [low] if low in (i, top) else [i, top]
    else:
        return None  # computed, of unknown sign: it may count from the end
    if isinstance(pos, int) and isinstance(top, int):
        pos = min(max(pos, bottom), top)
    return [pos] if may_pass else pos


def _constant_term(d: Dim) -> int:
    if isinstance(d, int):
        return d
    return dict(d.terms).get((), 0) if isinstance(d, de.DimExpr) else 0


def divide_dim(d: Dim, n: int, what: str) -> Dim:
    """d / n for a dim that must divide evenly (``C floordiv 4`` for a symbolic one)."""
    if isinstance(d, int):
        if d % n:
            raise PirError(f"{what} {d} is not divisible by {n}")
        return d // n
    return de.floordiv(d, n)

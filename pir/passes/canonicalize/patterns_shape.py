"""Shape ops on nn: reshape, squeeze/unsqueeze and transpose chains, broadcasts that do
nothing, a concat of one operand, a slice of the whole tensor.

Reshape-like ops (reshape, squeeze, unsqueeze, flatten) keep the elements in row-major order
and only change the shape, so a chain of them is one reshape, and one that gives back the
shape of its input is its input.  A shape is proven equal only by equal types with at most
one unknown dim (the element count fixes that one).
"""

from __future__ import annotations

from pir.passes.canonicalize.matchers import OneOf, const_ints, operand_of, rebuild, same_shape
from pir.passes.drr import Attr, Match, Op, Var, drr


def reshape_like(x: str, tag: str = "") -> list[Op]:
    """Source patterns: each nn reshape-like op of ``x``, whatever its other operands
    (bound to names ending in ``tag``, so that an inner and an outer op do not clash)."""
    return [Op("nn.reshape", Var(x), Var("shape" + tag)),
            Op("nn.squeeze", Var(x)),
            Op("nn.squeeze", Var(x), Var("axes" + tag)),
            Op("nn.unsqueeze", Var(x), Var("axes" + tag)),
            Op("nn.flatten", Var(x))]


def gives_back_x(m: Match) -> bool:
    return same_shape(m.x.type, m.root.results[0].type)


def no_zero_copy(m: Match) -> bool:
    """A 0 in an ONNX shape copies the input's dim (unless allowzero): moved onto another
    input, it would copy another dim."""
    dims = const_ints(m.shape)
    return dims is not None and (m.root.allowzero or 0 not in dims)


def nn_perm(perm, x) -> tuple[int, ...] | None:
    """nn.transpose's permutation: without ``perm`` the dims are reversed."""
    if perm is not None:
        return tuple(perm)
    rank = x.type.rank
    return None if rank is None else tuple(reversed(range(rank)))


def compose(inner: tuple[int, ...], outer: tuple[int, ...]) -> tuple[int, ...]:
    """transpose(transpose(x, inner), outer) = transpose(x, compose(inner, outer))."""
    return tuple(inner[i] for i in outer)


def expand_is_noop(m: Match) -> bool:
    """Broadcasting x with the shape gives x's shape: the shape is no longer than x's rank,
    and each entry is 1 or x's (static) dim."""
    dims, shape = const_ints(m.shape), m.x.type.shape
    if dims is None or shape is None or len(dims) > len(shape):
        return False
    tail = shape[len(shape) - len(dims):]
    return all(d == 1 or (isinstance(e, int) and d == e) for d, e in zip(dims, tail))


def first_fits_second(m: Match) -> bool:
    """expand(expand(x, s1), s2) = expand(x, s2) when s1 broadcasts into s2 (broadcasting is
    associative: broadcast(s1, s2) = s2)."""
    s1, s2 = const_ints(m.s1), const_ints(m.s2)
    if s1 is None or s2 is None or len(s1) > len(s2):
        return False
    return all(a == 1 or a == b for a, b in zip(s1, s2[len(s2) - len(s1):]))


#: ONNX exporters write "to the end" as INT32_MAX or INT64_MAX.
_TO_THE_END = 2**31 - 1


def slice_is_full(m: Match) -> bool:
    """Every sliced axis is taken whole, in order: start 0 (or clamped to 0), end at or past
    the dim (or "to the end"), step 1."""
    op = m.root
    shape = op.data.type.shape
    starts, ends = const_ints(op.starts), const_ints(op.ends)
    if shape is None or starts is None or ends is None:
        return False
    axes = const_ints(op.axes) if op.axes is not None else list(range(len(starts)))
    steps = const_ints(op.steps) if op.steps is not None else [1] * len(starts)
    if axes is None or steps is None:
        return False
    for axis, start, end, step in zip(axes, starts, ends, steps):
        dim = shape[axis + len(shape) if axis < 0 else axis]
        static = isinstance(dim, int)
        if step != 1 or not (start == 0 or (static and start <= -dim)):
            return False
        if not (end >= _TO_THE_END or (static and end >= dim)):
            return False
    return True


#: A squeeze of an unsqueeze and the other way round (nn.squeeze's axes are optional).
SQUEEZE_PAIRS = [
    Op("nn.squeeze", Op("nn.unsqueeze", Var("x"), Var("a")), Var("b")),
    Op("nn.squeeze", Op("nn.unsqueeze", Var("x"), Var("a"))),
    Op("nn.unsqueeze", Op("nn.squeeze", Var("x"), Var("a")), Var("b")),
    Op("nn.unsqueeze", Op("nn.squeeze", Var("x")), Var("b")),
]


def is_identity_perm(m: Match) -> bool:
    perm = nn_perm(m.p, m.x)
    return perm is not None and perm == tuple(range(len(perm)))


PATTERNS = [
    OneOf("reshape-same-type", *(drr("reshape-same-type", src, Var("x"), where=gives_back_x)
                                 for src in reshape_like("x"))),
    OneOf("reshape-reshape", *(
        drr("reshape-reshape", Op("nn.reshape", inner, Var("shape")),
            rebuild("nn.reshape", "x", "shape", allowzero=lambda m: m.root.allowzero),
            where=no_zero_copy)
        for inner in reshape_like("x", tag="_inner"))),
    OneOf("squeeze-unsqueeze", *(drr("squeeze-unsqueeze", src, Var("x"), where=gives_back_x)
                                 for src in SQUEEZE_PAIRS)),
    drr("transpose-transpose",
        Op("nn.transpose", Op("nn.transpose", Var("x"), perm=Attr("p")), perm=Attr("q")),
        rebuild("nn.transpose", "x", perm=lambda m: compose(nn_perm(m.p, m.x), nn_perm(m.q, m.x))),
        where=lambda m: m.x.type.rank is not None),
    drr("transpose-identity", Op("nn.transpose", Var("x"), perm=Attr("p")), Var("x"),
        where=is_identity_perm),
    drr("expand-same-shape", Op("nn.expand", Var("x"), Var("shape")), Var("x"),
        where=expand_is_noop),
    drr("expand-expand", Op("nn.expand", Op("nn.expand", Var("x"), Var("s1")), Var("s2")),
        rebuild("nn.expand", "x", "s2"), where=first_fits_second),
    drr("concat-single", Op("nn.concat", Var("x")), Var("x")),
    drr("slice-full", Op("nn.slice"), operand_of(0), where=slice_is_full),
]

"""What ops require of their operands' dims, for the ``shapes`` pass: one table keyed by op.

A rule returns :class:`Needs`: dim pairs that must be equal (a matmul's contracting dims, a
concat's other dims) and pairs that must be broadcastable (equal, or one of them 1).  Only
what an op's type rule does not already check belongs here: type rules accept two different
symbols where they cannot know the sizes (``same_dim`` keeps the first), and these rules say
that the op only runs when the two are equal.  Ops with the Broadcasting trait and no entry
share :func:`_broadcasting`.  :func:`shaped_like_result` names the operands whose shape the
result has, which lets a declared result type refine its operand's producer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from pir.errors import PirError
from pir.ir.core import Operation
from pir.ir.opdef import Broadcasting, Elementwise
from pir.ir.types import Dim, TensorType

__all__ = ["Needs", "EQUAL_DIMS", "op_needs", "shaped_like_result", "shape_of"]


@dataclass
class Needs:
    """The dims one op requires to be equal, and those it requires to be broadcastable;
    each pair comes with the reason, for ``explain``."""

    equal: list[tuple[Dim, Dim, str]] = field(default_factory=list)
    broadcastable: list[tuple[Dim, Dim, str]] = field(default_factory=list)


def shape_of(v) -> tuple[Dim, ...] | None:
    t = v.type
    return t.shape if isinstance(t, TensorType) else None


def _same(dims: Sequence[Dim], why: str) -> list[tuple[Dim, Dim, str]]:
    """Pairs saying that all of ``dims`` are one dim (unknown dims say nothing)."""
    known = [d for d in dims if d is not None]
    return [(known[0], d, why) for d in known[1:] if d != known[0]]


def _broadcast(shapes: Sequence[tuple[Dim, ...] | None], what: str) -> list[tuple[Dim, Dim, str]]:
    """numpy broadcasting of ``shapes`` (right-aligned): at each position the dims other
    than 1 must be broadcastable against each other."""
    if any(s is None for s in shapes):
        return []
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(1, rank + 1):
        col = [s[-k] for s in shapes if len(s) >= k and s[-k] != 1]
        out += _same(col, f"{what} dim {rank - k}")
    return out


def _broadcasting(op: Operation) -> Needs:
    """Elementwise ops with numpy broadcasting (the Broadcasting trait)."""
    return Needs(broadcastable=_broadcast([shape_of(v) for v in op.operands], "broadcast"))


def _matmul(op: Operation) -> Needs:
    """numpy.matmul: the contracting dims are equal, the batch dims broadcast."""
    a, b = shape_of(op.a), shape_of(op.b)
    if not a or not b:
        return Needs()
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    return Needs(_same([a2[-1], b2[-2]], "contracting dims"),
                 _broadcast([a2[:-2], b2[:-2]], "batch"))


def _gemm(op: Operation) -> Needs:
    """Gemm: the contracting dims of A' and B' are equal; C broadcasts to (M, N)."""
    a, b = shape_of(op.a), shape_of(op.b)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return Needs()
    m, k = reversed(a) if op.trans_a else a
    k2, n = reversed(b) if op.trans_b else b
    c = shape_of(op.c) if op.c is not None else ()
    return Needs(_same([k, k2], "contracting dims"), _broadcast([(m, n), c], "C"))


def _concat(op: Operation) -> Needs:
    """Concat: the inputs agree on every dim but the axis."""
    shapes = [shape_of(v) for v in op.inputs]
    if not shapes or any(s is None or len(s) != len(shapes[0]) for s in shapes):
        return Needs()
    rank = len(shapes[0])
    axis = op.axis % rank if rank else 0
    return Needs([p for i in range(rank) if i != axis
                  for p in _same([s[i] for s in shapes], f"non-axis dim {i}")])


def _einsum(op: Operation) -> Needs:
    """Einsum: dims with one label are equal (or 1, which broadcasts)."""
    from pir.ir.dialects.nn.linalg import parse_einsum

    shapes = [shape_of(v) for v in op.inputs]
    if not shapes or any(s is None for s in shapes):
        return Needs()
    terms, _ = parse_einsum(op.equation, [len(s) for s in shapes])
    by_label: dict[str, list[Dim]] = {}
    for term, s in zip(terms, shapes):
        for label, d in zip(term, s):
            if d != 1:
                by_label.setdefault(label, []).append(d)
    return Needs([p for label, dims in by_label.items()
                  for p in _same(dims, f"einsum label '{label}'")])


def _det(op: Operation) -> Needs:
    """Det: square matrices."""
    s = shape_of(op.x)
    return Needs(_same(s[-2:], "square matrices") if s is not None and len(s) >= 2 else [])


def _attention(op: Operation) -> Needs:
    """Attention over (B, H, S, D) heads: q and k share the batch and head size, k and v
    the batch, sequence length and head count."""
    layout = op._heads_layout()
    if layout is None:
        return Needs()
    (b, _, _, dq), (bk, hk, sk, dk), (bv, hv, sv, _) = layout
    return Needs(_same([b, bk, bv], "batch") + _same([dq, dk], "head sizes of q and k")
                 + _same([sk, sv], "sequence lengths of k and v")
                 + _same([hk, hv], "head counts of k and v"))


def shaped_like_result(op: Operation) -> list:
    """The operands an op's result has the shape of: those of an elementwise op that does
    not broadcast; of nn ops only the first (p_relu's slope broadcasts, clip's bounds are
    scalars), of prim ops all (prim shapes are strict)."""
    if Elementwise not in op.traits or Broadcasting in op.traits or len(op.results) != 1:
        return []
    if op.name.startswith("prim.") or op.name in _ALL_OPERANDS_SHAPED:
        return list(op.operands)
    return list(op.operands[:1])


_ALL_OPERANDS_SHAPED = frozenset({"nn.swiglu"})


#: Op -> what it requires of its operands' dims beyond what its type rule checks.  Ops with
#: the Broadcasting trait and no entry here use :func:`_broadcasting`.
EQUAL_DIMS: dict[str, Callable[[Operation], Needs]] = {
    "nn.matmul": _matmul,
    "nn.gemm": _gemm,
    "nn.concat": _concat,
    "nn.einsum": _einsum,
    "nn.det": _det,
    "nn.attention": _attention,
}


def op_needs(op: Operation) -> Needs:
    """What ``op`` requires (nothing for an op without a rule, or a malformed one)."""
    rule = EQUAL_DIMS.get(op.name)
    if rule is None:
        rule = _broadcasting if Broadcasting in op.traits else None
    if rule is None:
        return Needs()
    try:
        return rule(op)
    except (PirError, ValueError, TypeError, IndexError):
        return Needs()  # a malformed op is the verifier's business, not ours

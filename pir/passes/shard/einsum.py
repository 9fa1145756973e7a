"""The shared solver behind most SPMD rules: einsum-like notations, as Paddle's rules use.

A rule names each dim of each operand and result with a letter (:class:`Notation`): dims
that share a letter must be split the same way.  A letter only in the operands is
*reduced*: when it is split, each rank holds part of the sum (``prim.dot_general``'s
contracting dims) or of the maximum..., so the results are ``Partial`` over its mesh axes;
a reduced letter with no partial kind, and any letter in ``fixed``, must stay whole (the
axis a gather indexes, a convolution's spatial dims).  A letter only in the results is new:
whole, unless a wanted result sharding splits it (backward).

:func:`solve` merges the known shardings letter by letter: the first tensor (operands in
order, then results) that splits a letter decides it; a mesh axis already taken by an
earlier letter is dropped; so are axes that do not divide the letter's static size or that
break mesh order.  Partial operands are then carried by the notation's :class:`Carry` or
reduced: a partial on a mesh axis that also splits a dim is always reduced first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Callable, Mapping, Sequence

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.ir.dialects.dist import REDUCE_KINDS, Mesh
from pir.ir.types import Dim, TensorType
from pir.passes.shard.registry import Known, spmd_rule
from pir.passes.shard.sharding import Axes, Sharding, SpmdDecision

__all__ = ["Carry", "COPY", "ADDITIVE", "LINEAR", "MONOTONE", "Notation", "Letters", "solve",
           "spmd_notation", "shape_of", "fit_axes", "carry_partials"]


@dataclass(frozen=True)
class Carry:
    """How partial operands become partial results.

    ``all``: a result is ``P(k)`` on an axis when the listed operands are ``P(k)`` there
    (the op is linear in them jointly, or copies their elements); a listed operand that is
    whole on that axis is required as ``P(k)`` too (a local step: for ``sum`` the value on
    one rank and zeros on the others).  ``one``: the op is linear in each listed operand
    separately (a product), so one of them may be partial; the others must be whole.
    Operands not listed must never be partial, and partials of other kinds are reduced."""

    mode: str
    kinds: frozenset[str]
    operands: tuple[int, ...] | None = None  # None: every operand

    def on(self, *operands: int) -> Carry:
        return Carry(self.mode, self.kinds, operands)


#: Copies elements (reshape, slice, gather ...): every kind carries.
COPY = Carry("all", frozenset(REDUCE_KINDS))
#: Sums its operands (add, sub, reduce_sum): sums and means carry.
ADDITIVE = Carry("all", frozenset({"sum", "avg"}))
#: Linear in each operand (mul, dot_general, conv): one operand's sum or mean carries.
LINEAR = Carry("one", frozenset({"sum", "avg"}))
#: Monotone non-decreasing (exp, tanh, max ...): maxima and minima carry.
MONOTONE = Carry("all", frozenset({"max", "min"}))


@dataclass(frozen=True)
class Notation:
    """The letters of each operand and result (one per dim), the reduced letters with the
    partial kind splitting them gives, the letters that must stay whole, and how partial
    operands carry."""

    inputs: Sequence[str]
    outputs: Sequence[str]
    reduced: Mapping[str, str] = field(default_factory=dict)
    fixed: frozenset[str] | set[str] = frozenset()
    carry: Carry | None = None


class Letters:
    """Hands out fresh letters for one notation."""

    _ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def __init__(self) -> None:
        self.count = 0

    def new(self, k: int = 1) -> str:
        out = []
        for _ in range(k):
            n = self.count
            out.append(self._ALPHABET[n] if n < len(self._ALPHABET) else chr(0x100 + n))
            self.count += 1
        return "".join(out)

    def fresh(self, v: Value) -> str:
        """One new letter per dim of ``v``."""
        return self.new(len(shape_of(v)))


def shape_of(v: Value) -> tuple[Dim, ...]:
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None:
        raise PirError(f"a ranked tensor is needed to shard, got {t}")
    return t.shape


def fit_axes(axes: Axes, size: Dim, mesh: Mesh) -> Axes:
    """The longest prefix of ``axes`` that is in mesh order and whose sizes divide ``size``
    (a symbolic size is checked at run time)."""
    out: list[str] = []
    last = -1
    for a in axes:
        i = mesh.index(a)
        n = prod(mesh.size(b) for b in out) * mesh.shape[i]
        if i < last or (isinstance(size, int) and size % n):
            break
        out.append(a)
        last = i
    return tuple(out)


def _commute(kinds: set[str]) -> bool:
    return len(kinds) <= 1 or kinds <= {"sum", "avg"}


def solve(op: Operation, n: Notation, ins: Known, outs: Known, mesh: Mesh) -> SpmdDecision:
    """The decision of notation ``n`` for the known operand and result shardings."""
    shapes = [shape_of(v) for v in op.operands] + [shape_of(r) for r in op.results]
    letters = list(n.inputs) + list(n.outputs)
    if len(letters) != len(shapes) or any(len(s) != len(l) for s, l in zip(shapes, letters)):
        raise PirError(f"the notation {','.join(n.inputs)}->{','.join(n.outputs)} does not fit "
                       "the operand and result ranks")
    sizes: dict[str, Dim] = {}
    for word, shape in zip(letters, shapes):
        for c, d in zip(word, shape):
            if sizes.get(c) is None:
                sizes[c] = d
    in_letters, out_letters = set("".join(n.inputs)), set("".join(n.outputs))
    fixed = set(n.fixed) | {c for c in in_letters - out_letters if c not in n.reduced}

    # which mesh axes split each letter: the first tensor that splits it decides
    known = [(w, s) for w, s in zip(n.inputs, ins) if s is not None]
    known += [(w, s) for w, s in zip(n.outputs, outs) if s is not None]
    wanted: dict[str, Axes] = {}
    for word, s in known:
        for c, axes in zip(word, s.dims):
            if axes and c not in wanted and c not in fixed:
                wanted[c] = axes
    split: dict[str, Axes] = {}
    taken: set[str] = set()
    for c, axes in wanted.items():
        axes = fit_axes(tuple(a for a in axes if a not in taken), sizes.get(c), mesh)
        if axes:
            split[c] = axes
            taken.update(axes)

    # partial results: split reduced letters, then operands' partials the op carries
    made = {a: n.reduced[c] for c, axes in split.items() if c in n.reduced for a in axes}
    need: list[dict[str, str]] = [{} for _ in n.inputs]
    carried = carry_partials(n.carry, ins, taken, need, mesh) if n.carry else {}
    if not _commute(set(made.values()) | set(carried.values())):
        carried, need = {}, [{} for _ in n.inputs]

    def sharding(word: str, partial: Mapping[str, str]) -> Sharding:
        return Sharding(tuple(split.get(c, ()) for c in word), partial)

    return SpmdDecision(tuple(sharding(w, p) for w, p in zip(n.inputs, need)),
                        tuple(sharding(w, {**made, **carried}) for w in n.outputs))


def carry_partials(carry: Carry, ins: Known, taken: set[str], need: list[dict[str, str]],
           mesh: Mesh) -> dict[str, str]:
    """The partials the results carry; fills ``need`` with the operands' required ones."""
    listed = carry.operands if carry.operands is not None else tuple(range(len(ins)))
    axes = {a for i in listed if ins[i] is not None for a in ins[i].partial_axes} - taken
    carried: dict[str, str] = {}
    for a in sorted(axes, key=mesh.index):
        present = {i: ins[i].partial_axes[a] for i in listed
                   if ins[i] is not None and a in ins[i].partial_axes}
        kinds = set(present.values())
        if carry.mode == "all" and len(kinds) == 1 and kinds <= carry.kinds:
            carried[a] = kinds.pop()
            for i in listed:
                need[i][a] = carried[a]
        elif carry.mode == "one":
            first = min(present)
            if present[first] in carry.kinds:
                carried[a] = present[first]
                need[first][a] = carried[a]
    return carried


NotationFn = Callable[[Operation, Letters], Notation]


def spmd_notation(*names: str) -> Callable[[NotationFn], NotationFn]:
    """Register ``fn(op, letters) -> Notation`` as the SPMD rule of ``names``."""

    def register(fn: NotationFn) -> NotationFn:
        def rule(op: Operation, ins: Known, outs: Known, mesh: Mesh) -> SpmdDecision:
            return solve(op, fn(op, Letters()), ins, outs, mesh)

        rule.__name__ = rule.__qualname__ = fn.__name__
        rule.__doc__ = fn.__doc__
        rule.notation = fn  # type: ignore[attr-defined]
        spmd_rule(*names)(rule)
        return fn

    return register

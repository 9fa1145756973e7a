"""Symbolic dims that a kernel computes rather than reads: ``[batch, seq, 768] -> [unk, 768]``.

A compiled kernel learns its symbolic sizes from the shapes of its buffers.  A dim that first
appears inside a group, on the result of a reshape (ONNX shape inference names the flattened
``batch * seq`` rows ``unk__12``), is still determined: the reshape keeps the element count,
so when the result has one such dim, it is the source's element count divided by the other
result dims.  :func:`derived_dims` finds those dims once per group; the lowering writes each as
that quotient of TVM size expressions, and the runtime computes its value the same way before
it sizes the kernel's outputs (:func:`solve`).  A dim that no input shows and no reshape
determines (a batch dim that the group's inputs flattened away, ``[batch * seq, 2304] ->
[batch, seq, 3, 768]``) is *free*: the kernel takes its size as a scalar parameter, which the
runtime passes from the sizes it bound at the function's inputs; codegen compiles such a group
only when the dim is one of its function's input dims (:func:`free_dims`).
"""

from __future__ import annotations

from math import prod
from typing import Callable

from pir.errors import PirError
from pir.ir import dimexpr
from pir.ir.core import Block
from pir.ir.dimexpr import DimExpr, FloorDiv, MinMax
from pir.ir.types import TensorType

__all__ = ["derived_dims", "free_dims", "solve", "symbols_of", "shown_of", "to_prim_expr"]

#: a derived dim: (the reshape source's dims, the result's other dims); value = prod / prod
Derived = tuple[tuple, tuple]


def symbols_of(t) -> set[str]:
    """Every symbol the dims of ``t`` mention, bare or inside an expression."""
    shape = getattr(t, "shape", None) or ()
    return set().union(*(dimexpr.symbols(d) for d in shape)) if shape else set()


def shown_of(t) -> set[str]:
    """The symbols that are whole dims of ``t``: a kernel reads their sizes off its buffer
    (a symbol only inside an expression, ``(H + 1) floordiv 2``, cannot be read back)."""
    shape = getattr(t, "shape", None) or ()
    return {d for d in shape if isinstance(d, str)}


def to_prim_expr(d, var: Callable[[str], object]):
    """The TVM expression of dim ``d`` (an int, a symbol or a DimExpr), with ``var(name)``
    giving each symbol's variable."""
    from tvm import tirx

    if isinstance(d, int):
        return d
    if isinstance(d, str):
        return var(d)
    if not isinstance(d, DimExpr):
        raise PirError("tvm codegen: unknown dims (?) are not supported; give the dim a name")
    total = None
    for mono, coeff in d.terms:
        term = tirx.const(coeff, "int32")
        for atom in mono:
            if isinstance(atom, str):
                term = term * var(atom)
            elif isinstance(atom, FloorDiv):
                term = term * tirx.floordiv(to_prim_expr(atom.num, var), atom.den)
            else:
                assert isinstance(atom, MinMax)
                args = [to_prim_expr(a, var) for a in atom.args]
                pick = tirx.min if atom.kind == "min" else tirx.max
                out = args[0]
                for a in args[1:]:
                    out = pick(out, a)
                term = term * out
        total = term if total is None else total + term
    return total


def derived_dims(block: Block, free: list[str] | None = None) -> dict[str, Derived]:
    """The dims of ``block`` that no argument shows, each found from the reshape that makes it.
    A dim that cannot be found that way is appended to ``free`` (then the kernel takes it as a
    parameter); without ``free`` it is a :class:`PirError`.  A symbol that the arguments hold
    only inside expressions is free."""
    known = set().union(*(shown_of(a.type) for a in block.args)) if block.args else set()
    hidden = set().union(*(symbols_of(a.type) for a in block.args)) - known if block.args \
        else set()
    if hidden:
        if free is None:
            raise PirError(f"dim '{sorted(hidden)[0]}' appears only inside expressions, so "
                           "the kernel cannot read its size")
        free.extend(sorted(hidden))
        known |= hidden
    out: dict[str, Derived] = {}
    for op in block.ops:
        for r in op.results:
            new = symbols_of(r.type) - known
            if not new:
                continue
            src = op.operands[0].type if op.operands else None
            if (op.name == "prim.reshape" and len(new) == 1 and isinstance(src, TensorType)
                    and src.shape is not None and None not in src.shape
                    and not (symbols_of(src) - known)):
                (sym,) = new
                if list(r.type.shape).count(sym) == 1 and None not in r.type.shape:
                    out[sym] = (tuple(src.shape), tuple(d for d in r.type.shape if d != sym))
                    known.add(sym)
                    continue
            if free is None:
                raise PirError(f"dim '{sorted(new)[0]}' of %{r.name} is not a dim of any "
                               "input, so the kernel cannot size it")
            free.extend(sorted(new))
            known |= new
    return out


def free_dims(block: Block) -> list[str]:
    """The dims of ``block`` that neither an argument shows nor a reshape determines, in
    order of appearance: the kernel's scalar size parameters."""
    free: list[str] = []
    derived_dims(block, free)
    return free


def solve(derived: dict[str, Derived], sizes: dict[str, int]) -> dict[str, int]:
    """``sizes`` with the value of every derived dim whose source dims it holds added (in
    the order they were found)."""
    sizes = dict(sizes)
    for sym, (src, others) in derived.items():
        if sym in sizes:
            continue
        src_n = [dimexpr.evaluate(d, sizes) for d in src]
        others_n = [dimexpr.evaluate(d, sizes) for d in others]
        if None in src_n or None in others_n:
            continue
        num, den = prod(src_n), prod(others_n)
        sizes[sym] = num // den if den else 0
    return sizes

"""ADBuilder: what JVP and VJP rules write prim ops with.

It appends ops to the block of the derivative function being built, gives them the location
of the primal op whose rule runs (so a derivative op points at the source node it came
from), and names their values after that op's result (``%h.g1``, ``%h.g2`` for reverse
mode, ``%h.t1`` for forward mode).  Shorthands skip ops that would do nothing (a transpose
by the identity, a reduction over no axes), so derivative programs start small.  Unlike
decompose's PrimBuilder nothing broadcasts implicitly here: rules work on operands of one
shape, as prim ops do.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pir.errors import PirError
from pir.ir.core import OPS, Block, Operation, Value
from pir.ir.dialects.builtin import ModuleOp, make_constant
from pir.ir.types import DType, TensorType
from pir.ir.verifier import types_compatible, verify_op

__all__ = ["ADBuilder"]


def ttype(v: Value) -> TensorType:
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None:
        raise PirError(f"autodiff needs ranked tensors, got {t} for %{v.name}")
    return t


class ADBuilder:
    def __init__(self, module: ModuleOp, block: Block):
        self.module = module
        self.block = block
        self.loc: str | None = None
        self.base = "d"
        self.counts: dict[str, int] = {}

    def at(self, op: Operation, tag: str) -> None:
        """Build what follows for ``op`` (its location; names ``<result>.<tag><n>``)."""
        self.loc = op.loc
        name = next((r.name for r in op.results if r.name), None) or op.name.split(".")[-1]
        self.base = f"{name}.{tag}"

    def _name(self) -> str:
        n = self.counts.get(self.base, 0) + 1
        self.counts[self.base] = n
        return f"{self.base}{n}"

    # -- creating ops ------------------------------------------------------------------------

    def append(self, op: Operation) -> Operation:
        for r in op.results:
            if r.name is None:
                r.name = self._name()
        return self.block.append(op)

    def create(self, name: str, *operands: Any, result_types=None, **attrs: Any) -> Operation:
        full = name if "." in name else f"prim.{name}"
        return self.append(OPS[full].build(*operands, result_types=result_types, loc=self.loc,
                                           **attrs))

    def op(self, name: str, *operands: Any, result_type: TensorType | None = None,
           **attrs: Any) -> Value:
        types = [result_type] if result_type is not None else None
        return self.create(name, *operands, result_types=types, **attrs).results[0]

    def same_op(self, op: Operation, operands: Sequence[Value]) -> list[Value]:
        """``op`` again (same attributes and result types) on other operands of the same
        types: the JVP of a linear op applied to tangents."""
        new = type(op)(list(operands), [r.type for r in op.results], dict(op.attributes),
                       loc=self.loc, operand_segments=op.operand_segments,
                       result_segments=op.result_segments)
        verify_op(new)
        return self.append(new).results

    # -- constants ---------------------------------------------------------------------------

    def const(self, value: Any, dtype: DType) -> Value:
        """A rank-0 constant."""
        op = make_constant(self.module, np.asarray(value).astype(dtype.numpy), self._name(),
                           self.loc)
        return self.block.append(op).results[0]

    def full(self, value: Any, t: TensorType) -> Value:
        """A tensor of type ``t`` filled with ``value`` (a broadcast scalar; symbolic dims are
        sized at run time by the function's inputs)."""
        if t.shape is None or any(d is None for d in t.shape):
            raise PirError(f"autodiff needs a tensor of type {t}, whose shape is not known")
        scalar = self.const(value, t.dtype)
        if t.shape == ():
            return scalar
        return self.op("broadcast_in_dim", scalar, result_type=t, broadcast_dimensions=())

    def full_like(self, value: Any, like: Value) -> Value:
        return self.full(value, ttype(like))

    def zeros_like(self, like: Value) -> Value:
        return self.full(0, ttype(like))

    def ones_like(self, like: Value) -> Value:
        return self.full(1, ttype(like))

    def instantiate(self, t: Value | None, like: Value) -> Value:
        """``t``, or zeros of ``like``'s type for a symbolic zero."""
        return t if t is not None else self.zeros_like(like)

    # -- arithmetic (operands of one shape) ----------------------------------------------------

    def add(self, a: Value, b: Value) -> Value: return self.op("add", a, b)
    def sub(self, a: Value, b: Value) -> Value: return self.op("sub", a, b)
    def mul(self, a: Value, b: Value) -> Value: return self.op("mul", a, b)
    def div(self, a: Value, b: Value) -> Value: return self.op("div", a, b)
    def neg(self, a: Value) -> Value: return self.op("neg", a)

    def scale(self, x: Value, c: float) -> Value:
        """``c * x`` for a Python number ``c``."""
        if c == 1:
            return x
        if c == -1:
            return self.neg(x)
        return self.mul(x, self.full_like(c, x))

    def square(self, x: Value) -> Value:
        return self.mul(x, x)

    def add_any(self, a: Value | None, b: Value | None) -> Value | None:
        """``a + b`` where either may be a symbolic zero (None)."""
        if a is None:
            return b
        if b is None:
            return a
        return self.add(a, b)

    def add_all(self, values: Sequence[Value | None]) -> Value | None:
        out = None
        for v in values:
            out = self.add_any(out, v)
        return out

    def sub_any(self, a: Value | None, b: Value | None) -> Value | None:
        if b is None:
            return a
        if a is None:
            return self.neg(b)
        return self.sub(a, b)

    def select(self, pred: Value, a: Value, b: Value) -> Value:
        return self.op("select", pred, a, b)

    def where(self, pred: Value, a: Value | None, b: Value | None, like: Value) -> Value | None:
        """``select(pred, a, b)`` where ``a`` or ``b`` may be a symbolic zero."""
        if a is None and b is None:
            return None
        return self.select(pred, self.instantiate(a, like), self.instantiate(b, like))

    # -- shapes ------------------------------------------------------------------------------

    def cast(self, x: Value, dtype: DType) -> Value:
        return x if ttype(x).dtype == dtype else self.op("cast", x, dtype=dtype)

    def reshape(self, x: Value, t: TensorType) -> Value:
        return x if x.type == t else self.op("reshape", x, result_type=t)

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        perm = tuple(int(p) for p in perm)
        if perm == tuple(range(len(perm))):
            return x
        return self.op("transpose", x, permutation=perm)

    def broadcast(self, x: Value, t: TensorType, dims: Sequence[int]) -> Value:
        dims = tuple(int(d) for d in dims)
        if x.type == t and dims == tuple(range(len(dims))):
            return x
        return self.op("broadcast_in_dim", x, result_type=t, broadcast_dimensions=dims)

    def reduce_sum(self, x: Value, axes: Sequence[int], keepdims: bool = False) -> Value:
        if not axes:
            return x
        return self.op("reduce_sum", x, axes=tuple(sorted(int(a) for a in axes)),
                       keepdims=keepdims)

    def dot_general(self, a: Value, b: Value, lb=(), rb=(), lc=(), rc=()) -> Value:
        return self.op("dot_general", a, b, lhs_batching_dimensions=tuple(lb),
                       rhs_batching_dimensions=tuple(rb), lhs_contracting_dimensions=tuple(lc),
                       rhs_contracting_dimensions=tuple(rc))

    def as_type(self, v: Value, t: TensorType, what: str) -> Value:
        """``v`` with exactly type ``t`` (a reshape records a refinement such as ``?`` ->
        4); anything else is a bug in a rule."""
        if v.type == t:
            return v
        if isinstance(v.type, TensorType) and types_compatible(t, v.type) and \
                t.shape is not None and sum(d is None for d in t.shape) <= 1:
            return self.op("reshape", v, result_type=t)
        raise PirError(f"{what}: the rule gave {v.type} where {t} is expected (a bug in pir)")

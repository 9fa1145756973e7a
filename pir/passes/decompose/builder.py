"""PrimBuilder: what decomposition rules write prim ops with.

It inserts ops before the op being decomposed (with its location), names intermediate values
after the op's first result (``%y.1``, ``%y.2`` ...), and offers the shapes of rule that
recur: numpy-style broadcasting made explicit with ``prim.broadcast_in_dim``, scalar
constants, casts, reductions.  Shapes may hold symbolic dims; a rule that would need a dim
nobody knows (``?``) raises :class:`Keep`.
"""

from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np

from pir.ir import dimexpr
from pir.ir.core import OPS, Block, Operation, Value
from pir.ir.dialects.builtin import enclosing_module, make_constant
from pir.ir.typerules import broadcast_shapes, tensor
from pir.ir.types import Dim, DType, TensorType
from pir.passes.decompose.registry import Keep
from pir.passes.rewriter import Rewriter

__all__ = ["PrimBuilder"]


class PrimBuilder:
    def __init__(self, rewriter: Rewriter, root: Operation):
        self.rw = rewriter
        self.root = root
        self.module = enclosing_module(root)
        base = next((r.name for r in root.results if r.name), None) or root.name.split(".")[1]
        self.base = base
        self._counter = [0]  # shared with the builders of bodies (see ``into``)
        self.made: set[Operation] = set()  # every op this builder inserted
        self.block: Block | None = None  # where ops go: before the root, or into a body

    @property
    def count(self) -> int:
        """How many values this builder (and those of its bodies) named."""
        return self._counter[0]

    def into(self, block: Block) -> "PrimBuilder":
        """A builder that appends to ``block``: the body of a region the rule builds (a
        scan's), its values named in the same sequence as this builder's."""
        sub = copy.copy(self)
        sub.block = block
        return sub

    # -- creating ops ------------------------------------------------------------------------

    def _name(self) -> str:
        self._counter[0] += 1
        return f"{self.base}.{self._counter[0]}"

    def _insert(self, op: Operation) -> Operation:
        self.made.add(op)
        if self.block is not None:
            return self.block.append(op)
        return self.rw.insert(op, self.root)

    def create(self, name: str, *operands: Any, result_types=None, regions=(),
               **attrs: Any) -> Operation:
        """Insert op ``name`` ("prim.add", or "add" for a prim op) before the root."""
        full = name if "." in name else f"prim.{name}"
        op = OPS[full].build(*operands, result_types=result_types, loc=self.root.loc,
                             regions=regions, **attrs)
        for r in op.results:
            r.name = self._name()
        return self._insert(op)

    def op(self, name: str, *operands: Any, result_type: TensorType | None = None,
           **attrs: Any) -> Value:
        """Insert a one-result op and return its value."""
        types = [result_type] if result_type is not None else None
        return self.create(name, *operands, result_types=types, **attrs).results[0]

    # -- constants ---------------------------------------------------------------------------

    def const(self, value: Any, dtype: DType) -> Value:
        """A constant array (a scalar gives a rank-0 tensor)."""
        arr = np.asarray(value).astype(dtype.numpy)
        op = make_constant(self.module, arr, self._name(), self.root.loc)
        return self._insert(op).results[0]

    def scalar_like(self, value: Any, like: Value) -> Value:
        """``value`` broadcast to the type of ``like``."""
        t = tensor(like)
        return self.broadcast_to(self.const(value, t.dtype), t.shape)

    def zeros_like(self, like: Value) -> Value:
        return self.scalar_like(0, like)

    def ones_like(self, like: Value) -> Value:
        return self.scalar_like(1, like)

    # -- shapes ------------------------------------------------------------------------------

    @staticmethod
    def known(shape: Sequence[Dim] | None, why: str = "") -> tuple[Dim, ...]:
        """``shape`` when every dim is static or symbolic; else Keep."""
        if shape is None or any(d is None for d in shape):
            raise Keep(f"needs a known shape{': ' + why if why else ''}")
        return tuple(shape)

    def broadcast_to(self, x: Value, shape: Sequence[Dim]) -> Value:
        """numpy broadcasting of ``x`` to ``shape`` (right-aligned), explicit."""
        t = tensor(x)
        shape = self.known(shape, "broadcast target")
        src = self.known(t.shape, "broadcast operand")
        if src == shape:
            return x
        offset = len(shape) - len(src)
        if offset < 0:
            raise Keep(f"cannot broadcast rank {len(src)} to rank {len(shape)}")
        return self.op("broadcast_in_dim", x, result_type=TensorType(t.dtype, shape),
                       broadcast_dimensions=tuple(range(offset, len(shape))))

    def broadcast_all(self, *values: Value, result: Sequence[Dim] | None = None) -> list[Value]:
        """``values`` broadcast to their common shape.  Where two operands' dims are
        different expressions, ``result``, the op's declared shape, settles it
        (:meth:`_agree_with`), and a dim that may be 1 is read clamped where the other
        can never be."""
        shape = broadcast_shapes(*(tensor(v).shape for v in values))
        if result is not None and (shape is None or tuple(result) != tuple(shape)):
            values = tuple(self._agree_with(v, tuple(result)) for v in values)
            shape = broadcast_shapes(*(tensor(v).shape for v in values))
        if shape is not None and None not in shape:
            values = tuple(self._agree_with(v, tuple(shape)) for v in values)
        return [self.broadcast_to(v, self.known(shape)) for v in values]

    def _agree_with(self, v: Value, result: tuple[Dim, ...]) -> Value:
        """``v`` with each dim that must equal the result's renamed to it: a dim that is never
        1 (``2*((H + 31) floordiv 32)``) cannot be stretched, so where the result is declared
        ``(H + 15) floordiv 16`` the two are equal whenever the program runs at all.  (A dim
        that may be 1, a bare symbol, could be either: it is left, and the op kept.)

        The rename is a gather of the first ``r`` positions (``iota(r)``), not a reshape: a
        reshape between unequal-looking dims is linearized and divided again by symbolic
        sizes in every kernel it reaches, while the gather reads position i at i."""
        shape = tensor(v).shape
        if shape is None or len(shape) > len(result) or None in result:
            return v
        offset = len(result) - len(shape)
        for axis, (d, r) in enumerate(zip(shape, result[offset:])):
            if d == r or d == 1 or d is None:
                continue
            if dimexpr.never_one(d):
                index = self.op("iota", result_type=TensorType(DType.I64, (r,)), dimension=0)
            elif dimexpr.never_one(r) and dimexpr.is_symbolic(d):
                # ``d`` may be 1 (stretched to ``r``) or equal ``r``: position i reads
                # min(i, d - 1), which is both (a pyramid's ``(H + 15) floordiv 16`` added
                # to an upsampled ``2*((H + 31) floordiv 32)``)
                last = self.reduce("max", self.op(
                    "iota", result_type=TensorType(DType.I64, (d,)), dimension=0), [0],
                    keepdims=False)
                index = self.op("min", self.op(
                    "iota", result_type=TensorType(DType.I64, (r,)), dimension=0),
                    self.broadcast_to(last, (r,)))
            else:
                continue
            v = self.op("gather", v, index, axis=axis)
        return v

    def binary(self, name: str, a: Value, b: Value, result: Sequence[Dim] | None = None
               ) -> Value:
        """``prim.<name>(a, b)`` after broadcasting both to their common shape (``result``:
        the op's declared shape, see :meth:`broadcast_all`)."""
        a, b = self.broadcast_all(a, b, result=result)
        return self.op(name, a, b)

    def cast(self, x: Value, dtype: DType) -> Value:
        if tensor(x).dtype == dtype:
            return x
        return self.op("cast", x, dtype=dtype)

    def reshape(self, x: Value, shape: Sequence[Dim]) -> Value:
        t = tensor(x)
        shape = self.known(shape, "reshape target")
        if t.shape == shape:
            return x
        return self.op("reshape", x, result_type=TensorType(t.dtype, shape))

    def reduce(self, name: str, x: Value, axes: Sequence[int], keepdims: bool = True) -> Value:
        """``prim.reduce_<name>`` over non-negative ``axes``."""
        return self.op(f"reduce_{name}", x, axes=tuple(sorted(axes)), keepdims=keepdims)

    # -- arithmetic shorthands (broadcasting) --------------------------------------------------

    def add(self, a, b): return self.binary("add", a, b)
    def sub(self, a, b): return self.binary("sub", a, b)
    def mul(self, a, b): return self.binary("mul", a, b)
    def div(self, a, b): return self.binary("div", a, b)
    def max(self, a, b): return self.binary("max", a, b)
    def min(self, a, b): return self.binary("min", a, b)
    def pow(self, a, b): return self.binary("pow", a, b)

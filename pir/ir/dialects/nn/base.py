"""Base classes shared by the nn op families: the common shapes of op declaration."""

from __future__ import annotations

from pir.ir.core import Operation
from pir.ir.opdef import Broadcasting, Elementwise, Pure, Terminator, operand, result
from pir.ir.typerules import broadcast_shapes, tensor
from pir.ir.types import DType, TensorType

__all__ = ["UnaryOp", "BinaryOp", "CompareOp", "YieldOp", "FLOATS", "INTS", "NUMERIC"]

FLOATS = frozenset(d for d in DType if d.is_float)
INTS = frozenset(d for d in DType if d.is_int)
NUMERIC = FLOATS | INTS


class UnaryOp(Operation):
    """y = f(x), elementwise, same type as x."""

    traits = frozenset({Pure, Elementwise})
    x = operand()
    y = result()

    def infer(self):
        return [tensor(self.x)]


class BinaryOp(Operation):
    """c = f(a, b), elementwise with numpy broadcasting; the result has a's element type."""

    traits = frozenset({Pure, Elementwise, Broadcasting})
    a = operand()
    b = operand()
    c = result()

    def infer(self):
        ta, tb = tensor(self.a), tensor(self.b)
        return [TensorType(ta.dtype, broadcast_shapes(ta.shape, tb.shape))]


class CompareOp(BinaryOp):
    """c = a <op> b, elementwise with broadcasting; the result is boolean."""

    def infer(self):
        ta, tb = tensor(self.a), tensor(self.b)
        return [TensorType(DType.BOOL, broadcast_shapes(ta.shape, tb.shape))]


class YieldOp(Operation):
    """Ends a region of an nn control-flow op, passing values out."""

    name = "nn.yield"
    traits = frozenset({Terminator})
    values = operand(variadic=True)

    def infer(self):
        return []

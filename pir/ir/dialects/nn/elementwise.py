"""Elementwise math: arithmetic with broadcasting, unary math functions."""

from __future__ import annotations

from pir.ir.dialects.nn.base import BinaryOp, UnaryOp
from pir.ir.opdef import Commutative, Pure, Elementwise, Broadcasting


class Add(BinaryOp):
    """c = a + b."""

    name = "nn.add"
    traits = frozenset({Pure, Elementwise, Broadcasting, Commutative})


class Sub(BinaryOp):
    """c = a - b."""

    name = "nn.sub"


class Mul(BinaryOp):
    """c = a * b."""

    name = "nn.mul"
    traits = frozenset({Pure, Elementwise, Broadcasting, Commutative})


class Div(BinaryOp):
    """c = a / b (integer division truncates toward zero, as in ONNX)."""

    name = "nn.div"


class Relu(UnaryOp):
    """y = max(x, 0)."""

    name = "nn.relu"

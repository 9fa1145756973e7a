"""Element type conversions: value-preserving casts and bit reinterpretation.

ONNX's CastLike imports as ``nn.cast`` to the element type of its second input, which is
static in the IR.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, DTYPE, STR
from pir.ir.core import Operation
from pir.ir.opdef import Elementwise, Pure, attr, operand, result
from pir.ir.typerules import tensor
from pir.ir.types import DType

__all__ = ["Cast", "BitCast", "bit_width"]

#: Element types narrower than a byte (numpy stores them one per byte).
_SUB_BYTE_BITS = {DType.I4: 4, DType.U4: 4, DType.F4E2M1FN: 4, DType.I2: 2, DType.U2: 2}


def bit_width(dtype: DType) -> int:
    """The number of bits of one element of ``dtype``."""
    return _SUB_BYTE_BITS.get(dtype, dtype.itemsize * 8)


class Cast(Operation):
    """y = x converted to element type ``to``.

    Floats to float8 round to nearest even and, with ``saturate``, clamp out-of-range values
    (and infinities) to the largest finite value; without it they become inf or NaN.
    ``round_mode`` (up, down, nearest) applies to casts to f8E8M0FNU only.  Strings parse as
    numbers ("INF", "-inf", "NaN" included); numbers print as ``%.8g`` (NaN, INF and -INF for
    the special values, 1 and 0 for booleans), as ONNX Runtime prints them.
    """

    name = "nn.cast"
    traits = frozenset({Pure, Elementwise})
    x = operand()
    to = attr(DTYPE)
    saturate = attr(BOOL, True)
    round_mode = attr(STR, "up")
    y = result()

    def verify_(self):
        if self.round_mode not in ("up", "down", "nearest"):
            raise PirError(f"round_mode must be up, down or nearest, got '{self.round_mode}'")

    def infer(self):
        return [tensor(self.x).with_dtype(self.to)]


class BitCast(Operation):
    """y = the bits of x read as element type ``to``, which must have the same bit width."""

    name = "nn.bit_cast"
    traits = frozenset({Pure, Elementwise})
    x = operand()
    to = attr(DTYPE)
    y = result()

    def infer(self):
        t = tensor(self.x)
        if DType.STRING in (t.dtype, self.to):
            raise PirError("cannot bit-cast strings")
        if bit_width(t.dtype) != bit_width(self.to):
            raise PirError(f"cannot bit-cast {t.dtype.value} ({bit_width(t.dtype)} bits) to "
                           f"{self.to.value} ({bit_width(self.to)} bits): the widths differ")
        return [t.with_dtype(self.to)]

"""Pooling: AveragePool, MaxPool, LpPool (sliding windows) and the global poolings.

The window attributes and their geometry come from :class:`~pir.ir.dialects.nn.conv.WindowOp`;
pools require ``kernel_shape`` and may round their output size up (``ceil_mode``).
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, INT, INTS
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import FLOATS
from pir.ir.dialects.nn.conv import AutoPadWindowOp, spatial_input
from pir.ir.opdef import Pure, Reduction, attr, operand, result
from pir.ir.typerules import tensor
from pir.ir.types import DType, TensorType

__all__ = ["AveragePool", "MaxPool", "LpPool", "GlobalAveragePool", "GlobalMaxPool"]


class _Pool(AutoPadWindowOp):
    """Shared type rule: (N, C, D...) -> (N, C, O...) over a ``kernel_shape`` window."""

    traits = frozenset({Pure})
    kernel_shape = attr(INTS)
    ceil_mode = attr(BOOL, False)

    def pooled_type(self) -> TensorType:
        tx = tensor(self.x)
        spatial = spatial_input(self, tx)
        if not self.kernel_shape:
            raise PirError(f"{self.name}: the kernel_shape attribute is required")
        if spatial is None:
            return tx
        if len(self.kernel_shape) != len(spatial):
            raise PirError(f"{self.name}: kernel_shape {list(self.kernel_shape)} does not match "
                           f"the {len(spatial)} spatial dims of {tx}")
        win = self.window(spatial, self.kernel_dims(None, len(spatial)), ceil=self.ceil_mode)
        return TensorType(tx.dtype, (*tx.shape[:2], *win.out))


class AveragePool(_Pool):
    """Y = the mean of each window (pads counted only with count_include_pad)."""

    name = "nn.average_pool"
    x = operand(dtypes=FLOATS)
    count_include_pad = attr(BOOL, False)
    y = result()

    def infer(self):
        return [self.pooled_type()]


class MaxPool(_Pool):
    """Y = the max of each window; the optional Indices are the flat positions of the maxima
    in X (row-major, or column-major over the spatial dims with storage_order=1)."""

    name = "nn.max_pool"
    x = operand(dtypes=FLOATS | {DType.I8, DType.U8})
    storage_order = attr(INT, 0)
    y = result()
    indices = result(optional=True, dtypes={DType.I64})

    def infer(self):
        # While the op is being built it has no results yet and both types are given; the
        # builder keeps as many as the op produces (one when Indices is not wanted).
        if self.storage_order not in (0, 1):
            raise PirError(f"{self.name}: storage_order must be 0 or 1, got {self.storage_order}")
        y = self.pooled_type()
        types = [y, y.with_dtype(DType.I64)]
        return types[:len(self.results)] if self.results else types


class LpPool(_Pool):
    """Y = the p-norm of each window: (sum |x|^p) ^ (1/p)."""

    name = "nn.lp_pool"
    x = operand(dtypes=FLOATS)
    p = attr(INT, 2)
    y = result()

    def infer(self):
        return [self.pooled_type()]


class _GlobalPool(Operation):
    """(N, C, D...) -> (N, C, 1, ...): reduces all spatial dims, keeping them as size 1."""

    traits = frozenset({Pure, Reduction})
    x = operand(dtypes=FLOATS)
    y = result()

    def infer(self):
        tx = tensor(self.x)
        if tx.shape is None:
            return [tx]
        if len(tx.shape) < 2:
            raise PirError(f"{self.name}: the input must have rank >= 2 (N, C, ...), got {tx}")
        return [TensorType(tx.dtype, (*tx.shape[:2], *(1,) * (len(tx.shape) - 2)))]


class GlobalAveragePool(_GlobalPool):
    """Y = the mean over all spatial dims."""

    name = "nn.global_average_pool"


class GlobalMaxPool(_GlobalPool):
    """Y = the max over all spatial dims."""

    name = "nn.global_max_pool"

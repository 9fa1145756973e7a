"""A convolution over a spatial dim of size 1, with a kernel of size 1 on it and no padding
there, does nothing along it: it is the convolution of one rank less.

RivaGAN's watermark encoder and decoder (invisible-watermark) are PyTorch ``Conv3d`` layers
over ``[N, C, 1, H, W]`` frames with ``1 x 11 x 11`` kernels: as 3-d convolutions they ran
on numpy (codegen compiles 1-d and 2-d ones), 96% of the encoder's time; as 2-d ones they
are ordinary kernels.  Only convolutions of three or more spatial dims are rewritten (a
2-d one over a unit height is already the form the kernels take for 1-d ones).
"""

from __future__ import annotations

from pir.ir.core import Operation
from pir.passes.canonicalize.matchers import derived_name
from pir.passes.rewriter import RewritePattern, Rewriter

__all__ = ["PATTERNS"]

_WINDOW = ("window_strides", "padding_low", "padding_high", "lhs_dilation", "rhs_dilation")


class ConvOverUnitDims(RewritePattern):
    """conv(x [N, C, 1, H, W], k [O, C, 1, R, S]) -> reshape(conv(x [N, C, H, W],
    k [O, C, R, S])): every spatial dim where x, the kernel and the result are 1 and the
    padding is 0 is dropped (down to two spatial dims at least)."""

    name = "prim-conv-unit-spatial-dims"
    root = "prim.conv"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        from pir.ir.dialects.prim.shape import ReshapeOp

        x, k = op.operands[:2]
        xs, ks, ys = x.type.shape, k.type.shape, op.results[0].type.shape
        if xs is None or ks is None or ys is None or len(xs) < 5 or len(op.operands) != 2:
            return False
        n = len(xs) - 2
        w = op.window(n)
        unit = [i for i in range(n) if xs[2 + i] == 1 and ks[2 + i] == 1 and ys[2 + i] == 1
                and w["padding_low"][i] == 0 and w["padding_high"][i] == 0
                and w["lhs_dilation"][i] == 1]
        unit = unit[:n - 2]  # keep two spatial dims
        if not unit:
            return False
        keep = [i for i in range(n) if i not in unit]

        def drop(shape):
            return (*shape[:2], *(shape[2 + i] for i in keep))

        x2 = rw.value(ReshapeOp, x, before=op, result_types=[x.type.with_shape(drop(xs))],
                      name=derived_name(op, 1))
        k2 = rw.value(ReshapeOp, k, before=op, result_types=[k.type.with_shape(drop(ks))],
                      name=derived_name(op, 2))
        attrs = {key: tuple(w[key][i] for i in keep) for key in _WINDOW}
        y2 = rw.value(type(op), x2, k2, before=op,
                      result_types=[op.results[0].type.with_shape(drop(ys))],
                      feature_group_count=op.feature_group_count, name=derived_name(op, 3),
                      **attrs)
        y = rw.value(ReshapeOp, y2, before=op, result_types=[op.results[0].type])
        rw.replace_op(op, [y])
        return True


PATTERNS = [ConvOverUnitDims()]

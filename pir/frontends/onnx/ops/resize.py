"""ONNX Resize, Upsample, GridSample, AffineGrid, RoiAlign and NonMaxSuppression -> nn."""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.ops.indexing import direct
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import resize as rs

@converter("AffineGrid", "NonMaxSuppression")
def direct_op(ctx):
    cls = {"AffineGrid": rs.AffineGrid, "NonMaxSuppression": rs.NonMaxSuppression}[ctx.op_type]
    return [direct(ctx, cls)]


@converter("Resize")
def resize(ctx):
    if ctx.opset < 11:
        return [_resize_v10(ctx, ctx.input(1), ctx.const_input(1))]
    # Resize-11 to 19 differ only by attributes added with defaults of the old behaviour.
    attrs = {name: ctx.attr(name) for name in rs.Resize.signature.attrs}
    roi, scales, sizes = (_nonempty(ctx, i) for i in (1, 2, 3))
    if attrs["coordinate_transformation_mode"] != "tf_crop_and_resize":
        roi = None  # only tf_crop_and_resize reads the roi
    return [ctx.value(rs.Resize, ctx.input(0), roi, scales, sizes, **attrs)]


@converter("Upsample")
def upsample(ctx):
    # Upsample (opsets 7-9) is Resize-10; its scales were an attribute before opset 9.
    if ctx.opset < 9:
        values = np.array(ctx.required_attr("scales"), dtype=np.float32)
        return [_resize_v10(ctx, ctx.constant(values), values)]
    return [_resize_v10(ctx, ctx.input(1), ctx.const_input(1))]


def _nonempty(ctx, i):
    """Input ``i``, or None when it is absent or a constant empty tensor (opsets 11-12 fill
    unused roi/scales inputs with empty tensors)."""
    arr = ctx.const_input(i)
    return None if arr is not None and arr.size == 0 else ctx.input(i)


def _resize_v10(ctx, scales, values):
    """Resize-10 and Upsample: asymmetric coordinates, and nearest rounds down on an axis
    that grows and up on one that shrinks (as ONNX Runtime does for these opsets).  The
    newest Resize has one nearest_mode for all axes, so mixed scales take two Resizes;
    scales known only at run time are taken to grow (Upsample requires scales >= 1)."""
    x, mode = ctx.input(0), ctx.attr("mode", "nearest")
    if values is not None:
        values = np.asarray(values)
        if values.ndim != 1 or values.dtype.kind not in "fiu":
            raise ctx.error(f"scales must be a 1-d tensor of numbers, got shape "
                            f"{list(values.shape)} of {values.dtype}")
    mode = "linear" if mode == "bilinear" else mode  # Upsample-1's spelling
    common = dict(mode=mode, coordinate_transformation_mode="asymmetric")
    if mode != "nearest":
        return ctx.value(rs.Resize, x, None, scales, None, **common)
    up = [] if values is None else [a for a, s in enumerate(values) if s > 1]
    down = [] if values is None else [a for a, s in enumerate(values) if s < 1]
    if not down or not up:
        rounding = "ceil" if down else "floor"
        return ctx.value(rs.Resize, x, None, scales, None, nearest_mode=rounding, **common)
    part = ctx.temp(rs.Resize, x, None, ctx.constant(values[up].astype(np.float32)), None,
                    axes=up, nearest_mode="floor", **common)
    return ctx.value(rs.Resize, part, None, ctx.constant(values[down].astype(np.float32)),
                     None, axes=down, nearest_mode="ceil", **common)


@converter("GridSample")
def grid_sample(ctx):
    mode = ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)  # opset 16 spellings
    return [ctx.value(rs.GridSample, ctx.input(0), ctx.input(1), mode=mode,
                      align_corners=ctx.attr("align_corners"),
                      padding_mode=ctx.attr("padding_mode"))]


@converter("RoiAlign")
def roi_align(ctx):
    attrs = {name: ctx.attr(name) for name in rs.RoiAlign.signature.attrs}
    if ctx.opset < 16:  # RoiAlign-10 did not shift by half a pixel
        attrs["coordinate_transformation_mode"] = "output_half_pixel"
    return [ctx.value(rs.RoiAlign, ctx.input(0), ctx.input(1), ctx.input(2), **attrs)]

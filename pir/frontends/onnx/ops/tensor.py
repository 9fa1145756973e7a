"""ONNX data movement -> nn: Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Concat, Split,
Slice, Expand, Tile, Pad, CenterCropPad, DepthToSpace, SpaceToDepth, ReverseSequence, Col2Im.

Older opsets gave some operands as attributes (Squeeze/Unsqueeze axes before 13, Split's
sizes before 13, Slice's starts/ends/axes before 10, Pad's pads and value before 11); the
converters turn them into constant operands, the newest form.
"""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import tensor as nn


def explicit(cls, **values):
    """The attributes worth writing: those given and different from the op's default."""
    defaults = cls.signature.attrs
    return {k: v for k, v in values.items() if v is not None and v != defaults[k].default}


def ints_operand(ctx, index: int, attr_name: str, since: int):
    """An integer-list operand that was attribute ``attr_name`` before opset ``since``."""
    if ctx.opset >= since:
        return ctx.input(index)
    values = ctx.attr(attr_name)
    return None if values is None else ctx.constant(np.array(values, np.int64))


@converter("Reshape")
def reshape(ctx):
    return [ctx.value(nn.Reshape, ctx.input(0), ctx.input(1),
                      **explicit(nn.Reshape, allowzero=ctx.attr("allowzero")))]


@converter("Flatten")
def flatten(ctx):
    return [ctx.value(nn.Flatten, ctx.input(0), **explicit(nn.Flatten, axis=ctx.attr("axis")))]


@converter("Squeeze")
def squeeze(ctx):
    return [ctx.value(nn.Squeeze, ctx.input(0), ints_operand(ctx, 1, "axes", 13))]


@converter("Unsqueeze")
def unsqueeze(ctx):
    axes = ints_operand(ctx, 1, "axes", 13)
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    return [ctx.value(nn.Unsqueeze, ctx.input(0), axes)]


@converter("Transpose")
def transpose(ctx):
    return [ctx.value(nn.Transpose, ctx.input(0), perm=ctx.attr("perm"))]


@converter("Concat")
def concat(ctx):
    inputs = [v for v in ctx.inputs() if v is not None]
    return [ctx.value(nn.Concat, inputs, axis=ctx.attr("axis"))]


@converter("Split")
def split(ctx):
    sizes = ints_operand(ctx, 1, "split", 13)
    num_outputs = ctx.attr("num_outputs")
    if sizes is None and num_outputs is None:
        num_outputs = ctx.num_outputs  # before opset 18: as many equal pieces as outputs
    op = ctx.emit(nn.Split, ctx.input(0), sizes, num_outputs=num_outputs,
                  **explicit(nn.Split, axis=ctx.attr("axis")))
    if len(op.results) != ctx.num_outputs:
        raise ctx.error(f"splits into {len(op.results)} pieces, but the node has "
                        f"{ctx.num_outputs} outputs")
    return op.results


@converter("Slice")
def slice_(ctx):
    if ctx.opset < 10:
        starts, ends = (ints_operand(ctx, 0, k, 10) for k in ("starts", "ends"))
        return [ctx.value(nn.Slice, ctx.input(0), starts, ends, ints_operand(ctx, 0, "axes", 10))]
    return [ctx.value(nn.Slice, *[ctx.input(i) for i in range(5)])]


@converter("Expand")
def expand(ctx):
    return [ctx.value(nn.Expand, ctx.input(0), ctx.input(1))]


@converter("Tile")
def tile(ctx):
    return [ctx.value(nn.Tile, ctx.input(0), ctx.input(1))]


@converter("Pad")
def pad(ctx):
    mode = explicit(nn.Pad, mode=ctx.attr("mode"))
    if ctx.opset >= 11:
        return [ctx.value(nn.Pad, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), **mode)]
    # Opset 2 to 10: pads and the fill value are attributes.
    x = ctx.input(0)
    listed = ctx.attr("pads", ctx.attr("paddings"))  # Pad-1 called them paddings
    if listed is None:
        raise ctx.error("missing required attribute 'pads'")
    pads = ctx.constant(np.array(listed, np.int64))
    value = ctx.constant(np.array(ctx.attr("value", 0.0), x.type.dtype.numpy))
    return [ctx.value(nn.Pad, x, pads, value, None, **mode)]


@converter("CenterCropPad")
def center_crop_pad(ctx):
    return [ctx.value(nn.CenterCropPad, ctx.input(0), ctx.input(1), axes=ctx.attr("axes"))]


@converter("DepthToSpace", "SpaceToDepth")
def depth_space(ctx):
    cls = nn.DepthToSpace if ctx.op_type == "DepthToSpace" else nn.SpaceToDepth
    return [ctx.value(cls, ctx.input(0), blocksize=ctx.attr("blocksize"),
                      **explicit(cls, mode=ctx.attr("mode")))]


@converter("ReverseSequence")
def reverse_sequence(ctx):
    attrs = explicit(nn.ReverseSequence, batch_axis=ctx.attr("batch_axis"),
                     time_axis=ctx.attr("time_axis"))
    return [ctx.value(nn.ReverseSequence, ctx.input(0), ctx.input(1), **attrs)]


@converter("Col2Im")
def col2im(ctx):
    return [ctx.value(nn.Col2Im, ctx.input(0), ctx.input(1), ctx.input(2),
                      dilations=ctx.attr("dilations"), pads=ctx.attr("pads"),
                      strides=ctx.attr("strides"))]

"""ONNX shape queries and generated tensors -> nn: Shape, Size, ConstantOfShape, Range,
EyeLike, Trilu, OneHot, NonZero, Unique, Compress.

Shape and Size of a value whose (queried) dims are static become constants right away, so
the shape arithmetic of exported models folds at import even when other dims are symbolic.
"""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.importer import dtype_from_onnx
from pir.frontends.onnx.ops.tensor import explicit
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import shape as nn
from pir.ir.dialects.nn.symbolic import shape_slice
from pir.limits import checked_numel


@converter("Shape")
def shape(ctx):
    x = ctx.input(0)
    start, end = ctx.attr("start", 0), ctx.attr("end")
    dims = x.type.shape
    if dims is not None:
        lo, hi = shape_slice(len(dims), start, end)
        if all(isinstance(d, int) for d in dims[lo:hi]):
            return [ctx.constant(np.array(dims[lo:hi], np.int64))]
    return [ctx.value(nn.Shape, x, **explicit(nn.Shape, start=start, end=end))]


@converter("Size")
def size(ctx):
    x = ctx.input(0)
    if x.type.is_static:
        # Size is an int64: a type rule may have made a shape of more elements than that.
        n = checked_numel(x.type.shape, f"the input {x.type}")
        return [ctx.constant(np.array(n, np.int64))]
    return [ctx.value(nn.Size, x)]


@converter("ConstantOfShape")
def constant_of_shape(ctx):
    return [ctx.value(nn.ConstantOfShape, ctx.input(0), value=ctx.attr("value"))]


@converter("Range")
def range_(ctx):
    stash = ctx.attr("stash_type")
    attrs = {} if stash is None else explicit(nn.Range, stash_type=dtype_from_onnx(stash))
    return [ctx.value(nn.Range, ctx.input(0), ctx.input(1), ctx.input(2), **attrs)]


@converter("EyeLike")
def eye_like(ctx):
    dtype = ctx.attr("dtype")
    return [ctx.value(nn.EyeLike, ctx.input(0),
                      dtype=None if dtype is None else dtype_from_onnx(dtype),
                      **explicit(nn.EyeLike, k=ctx.attr("k")))]


@converter("Trilu")
def trilu(ctx):
    return [ctx.value(nn.Trilu, ctx.input(0), ctx.input(1),
                      **explicit(nn.Trilu, upper=ctx.attr("upper")))]


@converter("OneHot")
def one_hot(ctx):
    return [ctx.value(nn.OneHot, ctx.input(0), ctx.input(1), ctx.input(2),
                      **explicit(nn.OneHot, axis=ctx.attr("axis")))]


@converter("NonZero")
def non_zero(ctx):
    return [ctx.value(nn.NonZero, ctx.input(0))]


@converter("Unique")
def unique(ctx):
    op = ctx.emit(nn.Unique, ctx.input(0), axis=ctx.attr("axis"),
                  **explicit(nn.Unique, sorted=ctx.attr("sorted")))
    return op.results


@converter("Compress")
def compress(ctx):
    return [ctx.value(nn.Compress, ctx.input(0), ctx.input(1), axis=ctx.attr("axis"))]

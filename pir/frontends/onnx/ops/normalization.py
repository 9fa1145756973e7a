"""ONNX Softmax/LogSoftmax/Hardmax, the normalisations, and the losses -> nn.

Older opsets are converted to the newest semantics: the softmax family before opset 13 sees
its input as 2-D (a flatten, the op, a reshape back), GroupNormalization before opset 21 has
one scale and bias per group (repeated per channel), and BatchNormalization before opset 14
is in training mode when it has more than one output.
"""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.importer import dtype_from_onnx
from pir.frontends.onnx.ops.reduce import given_attrs
from pir.frontends.onnx.registry import converter
from pir.ir.core import OPS
from pir.ir.dialects.nn import normalization as nm
from pir.ir.typerules import normalize_axis, tensor

_SOFTMAX = {"Softmax": nm.Softmax, "LogSoftmax": nm.LogSoftmax, "Hardmax": nm.Hardmax}


def _stash_attrs(ctx, *names: str) -> dict:
    """``given_attrs``, with ONNX's integer ``stash_type`` turned into an element type."""
    attrs = given_attrs(ctx, *names)
    if "stash_type" in attrs:
        attrs["stash_type"] = dtype_from_onnx(attrs["stash_type"])
    return attrs


def _with_extra_outputs(ctx, cls, *operands, extra: int, **attrs) -> list:
    """Emit an op whose results past the first form one optional group: the whole group when
    the node asks for any of those outputs, none of it otherwise."""
    wanted = list(range(1 + extra)) if ctx.num_outputs > 1 else [0]
    return ctx.emit(cls, *operands, outputs=wanted, **attrs).results


@converter(*_SOFTMAX)
def softmax(ctx):
    cls = _SOFTMAX[ctx.op_type]
    if ctx.opset >= 13:
        return [ctx.value(cls, ctx.input(0), **given_attrs(ctx, "axis"))]
    return [_coerced_2d(ctx, cls)]


def _coerced_2d(ctx, cls):
    """Before opset 13 the input is seen as 2-D, (dims before axis) x (dims from axis on), and
    the op runs over the second dim: in the newest semantics that is a flatten, the op over
    axis 1, and a reshape back (or the op alone when axis is the last dim)."""
    x = ctx.input(0)
    t = tensor(x)
    if t.rank is None:
        raise ctx.error(f"{ctx.op_type} before opset 13 needs an input of known rank")
    axis = normalize_axis(ctx.attr("axis", 1), t.rank)
    if axis >= t.rank - 1:
        return ctx.value(cls, x)  # the 2-D view's rows are the last axis: no reshape
    flatten, reshape, shape = (OPS.get(f"nn.{n}") for n in ("flatten", "reshape", "shape"))
    if flatten is None or reshape is None or shape is None:
        raise ctx.error(f"{ctx.op_type} of opset {ctx.opset} over axis {axis} of a rank-{t.rank} "
                        "input needs nn.flatten, nn.reshape and nn.shape, which are not loaded")
    flat = ctx.temp(flatten, x, axis=axis)
    y = ctx.temp(cls, flat, axis=1)
    target = (ctx.constant(np.array(t.shape, np.int64)) if t.is_static else ctx.temp(shape, x))
    return ctx.value(reshape, y, target)


@converter("LayerNormalization")
def layer_norm(ctx):
    attrs = _stash_attrs(ctx, "axis", "epsilon", "stash_type")
    return _with_extra_outputs(ctx, nm.LayerNorm, ctx.input(0), ctx.input(1), ctx.input(2),
                               extra=2, **attrs)


@converter("RMSNormalization")
def rms_norm(ctx):
    attrs = _stash_attrs(ctx, "axis", "epsilon", "stash_type")
    return [ctx.value(nm.RMSNorm, ctx.input(0), ctx.input(1), **attrs)]


@converter("BatchNormalization")
def batch_norm(ctx):
    attrs = given_attrs(ctx, "epsilon", "momentum", "training_mode")
    if ctx.opset < 9 and ctx.attr("spatial", 1) == 0:
        raise ctx.error("BatchNormalization with spatial=0 (per-activation statistics) is "
                        "not supported")
    if ctx.opset < 14 and ctx.num_outputs > 1:
        # Older opsets had no training_mode: extra outputs meant training.  Their outputs 3
        # and 4 (the batch's mean and variance) are gone from the newest opset.
        if ctx.num_outputs > 3:
            raise ctx.error("the saved_mean and saved_var outputs of BatchNormalization "
                            f"(opset {ctx.opset}) are not supported")
        attrs["training_mode"] = True
    inputs = [ctx.input(i) for i in range(5)]
    return _with_extra_outputs(ctx, nm.BatchNorm, *inputs, extra=2, **attrs)


@converter("InstanceNormalization")
def instance_norm(ctx):
    attrs = given_attrs(ctx, "epsilon")
    return [ctx.value(nm.InstanceNorm, ctx.input(0), ctx.input(1), ctx.input(2), **attrs)]


@converter("GroupNormalization")
def group_norm(ctx):
    attrs = _stash_attrs(ctx, "epsilon", "num_groups", "stash_type")
    scale, bias = ctx.input(1), ctx.input(2)
    if ctx.opset < 21:
        scale, bias = (_per_channel(ctx, i, attrs.get("num_groups")) for i in (1, 2))
    return [ctx.value(nm.GroupNorm, ctx.input(0), scale, bias, **attrs)]


def _per_channel(ctx, i: int, groups: int | None):
    """GroupNormalization-18's per-group parameter ``i`` as opset 21's per-channel one."""
    value = ctx.const_input(i)
    shape = tensor(ctx.input(0)).shape
    channels = shape[1] if shape is not None and len(shape) > 1 else None
    if value is None or not isinstance(channels, int) or not groups or channels % groups:
        raise ctx.error(f"GroupNormalization of opset {ctx.opset} is supported with constant "
                        "per-group scale and bias and a static channel count divisible by "
                        "num_groups")
    return ctx.constant(np.repeat(value.reshape(-1), channels // groups))


@converter("LpNormalization")
def lp_normalization(ctx):
    attrs = given_attrs(ctx, "axis", "p")
    return [ctx.value(nm.LpNormalization, ctx.input(0), **attrs)]


@converter("MeanVarianceNormalization")
def mean_variance_normalization(ctx):
    attrs = given_attrs(ctx, "axes")
    return [ctx.value(nm.MeanVarianceNormalization, ctx.input(0), **attrs)]


@converter("LRN")
def lrn(ctx):
    attrs = given_attrs(ctx, "alpha", "beta", "bias", "size")
    return [ctx.value(nm.LRN, ctx.input(0), **attrs)]


@converter("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(ctx):
    attrs = given_attrs(ctx, "ignore_index", "reduction")
    inputs = [ctx.input(i) for i in range(3)]
    return _with_extra_outputs(ctx, nm.SoftmaxCrossEntropyLoss, *inputs, extra=1, **attrs)


@converter("NegativeLogLikelihoodLoss")
def negative_log_likelihood_loss(ctx):
    attrs = given_attrs(ctx, "ignore_index", "reduction")
    inputs = [ctx.input(i) for i in range(3)]
    return [ctx.value(nm.NegativeLogLikelihoodLoss, *inputs, **attrs)]

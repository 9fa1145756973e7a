"""ONNX If, Loop and Scan -> nn ops with regions (the subgraphs become one-block regions)."""

from __future__ import annotations

from pir.frontends.onnx.registry import converter
from pir.ir.core import Block, Region
from pir.ir.dialects.nn import control_flow as cf
from pir.ir.dialects.nn.base import YieldOp
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.ir.types import DType, TensorType


@converter("If")
def if_(ctx):
    cond = const_value(ctx.input(0))
    if cond is not None and cond.size == 1:
        # Decided at import, as a constant folds: exporters test static facts of shapes
        # (Silero VAD: "is the input one channel?", folded by onnx/shape_facts.py), and
        # only the branch taken is converted, inline, so that what follows is typed from
        # its values and compiled with the rest
        taken = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
        ctx.note(f"the condition is a constant: {taken} is converted inline, the other "
                 "branch dropped")
        return ctx.inline_subgraph(taken)
    then = ctx.subgraph("then_branch", YieldOp)
    other = ctx.subgraph("else_branch", YieldOp)
    return ctx.emit(cf.If, ctx.input(0), regions=(then, other)).results


@converter("Loop")
def loop(ctx):
    carried = [ctx.input(i) for i in range(2, ctx.num_inputs)]
    # A carried value may change shape from one iteration to the next: only its element
    # type and rank are known for an untyped body input.
    arg_types = [TensorType(DType.I64, ()), TensorType(DType.BOOL, ())]
    arg_types += [_any_dims(tensor(v)) for v in carried]
    body = ctx.subgraph("body", YieldOp, arg_types)
    return ctx.emit(cf.Loop, ctx.input(0), ctx.input(1), carried, regions=(body,)).results


def _any_dims(t: TensorType) -> TensorType:
    return t if t.shape is None else t.with_shape([None] * len(t.shape))


def _scan_attrs(ctx) -> dict:
    return {key: ctx.attr(key) for key in ("scan_input_axes", "scan_input_directions",
                                           "scan_output_axes", "scan_output_directions")}


@converter("Scan")
def scan(ctx):
    m = ctx.required_attr("num_scan_inputs")
    if ctx.opset >= 9:
        inputs = ctx.inputs()
        n = len(inputs) - m
        axes = ctx.attr("scan_input_axes") or [0] * m
        slices = [_drop_axis(v, axis) for v, axis in zip(inputs[n:], axes)]
        body = ctx.subgraph("body", YieldOp, [v.type for v in inputs[:n]] + slices)
        return ctx.emit(cf.Scan, inputs, regions=(body,), num_scan_inputs=m,
                        **_scan_attrs(ctx)).results
    return _scan8(ctx, m)


def _drop_axis(v, axis: int = 0) -> TensorType:
    """The type of one slice of ``v`` (a value or a type) along ``axis``."""
    t = v if isinstance(v, TensorType) else tensor(v)
    if t.shape is None:
        return t
    axis = normalize_axis(axis, len(t.shape))
    return t.with_shape(t.shape[:axis] + t.shape[axis + 1:])


def _scan8(ctx, m: int):
    """Scan-8 has a leading batch axis on every input and output (and sequence_lens).

    It is the newest Scan mapped over the batch: an outer nn.scan slices every input along
    axis 0 and runs, per batch entry, an inner nn.scan with the original body; the outer scan
    stacks the inner results back along axis 0.
    """
    if ctx.input(0) is not None:
        raise ctx.error("Scan-8 with sequence_lens is not supported (use opset 9 or later)")
    inputs = [ctx.input(i) for i in range(1, ctx.num_inputs)]
    directions = ctx.attr("directions")
    per_batch = [_drop_axis(v) for v in inputs]
    n = len(inputs) - m
    body = ctx.subgraph("body", YieldOp, per_batch[:n] + [_drop_axis(v) for v in per_batch[n:]])
    outer = Block(per_batch, [f"{v.name}.item" for v in inputs])
    inner = cf.Scan.build(list(outer.args), regions=(body,), loc=ctx.loc, num_scan_inputs=m,
                          scan_input_directions=directions)
    for r, name in zip(inner.results, ctx.node.output):
        r.name = f"{name}.item" if name else None
    outer.append(inner)
    outer.append(YieldOp.build(list(inner.results), loc=ctx.loc))
    return ctx.emit(cf.Scan, inputs, regions=(Region([outer]),),
                    num_scan_inputs=len(inputs)).results

"""ONNX pooling -> nn: AveragePool, MaxPool, LpPool, GlobalAveragePool, GlobalMaxPool.

Attributes that later opsets added (count_include_pad in 7, ceil_mode in 10, dilations in
18/19) are simply absent from older nodes, where the nn op's defaults give the old behaviour.
"""

from __future__ import annotations

from pir.frontends.onnx.ops.conv import window_attrs
from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import pool as nn

#: ONNX op -> (nn op, its own attributes besides the window's).
_POOLS = {
    "AveragePool": (nn.AveragePool, ("auto_pad", "ceil_mode", "count_include_pad")),
    "LpPool": (nn.LpPool, ("auto_pad", "ceil_mode", "p")),
}
_GLOBAL_POOLS = {"GlobalAveragePool": nn.GlobalAveragePool, "GlobalMaxPool": nn.GlobalMaxPool}


@converter(*_POOLS)
def pool(ctx):
    cls, extra = _POOLS[ctx.op_type]
    return [ctx.value(cls, ctx.input(0), **window_attrs(ctx, *extra))]


@converter("MaxPool")
def max_pool(ctx):
    # The Indices output exists only when the node asks for it.
    outputs = [0, 1] if ctx.output_present(1) else [0]
    op = ctx.emit(nn.MaxPool, ctx.input(0), outputs=outputs,
                  **window_attrs(ctx, "auto_pad", "ceil_mode", "storage_order"))
    return op.results


@converter(*_GLOBAL_POOLS)
def global_pool(ctx):
    return [ctx.value(_GLOBAL_POOLS[ctx.op_type], ctx.input(0))]

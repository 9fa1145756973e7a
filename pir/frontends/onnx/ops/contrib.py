"""onnxruntime's contrib ops (domain ``com.microsoft``) that its own tools write into models:
the transformer fusions of its optimizer (FusedMatMul, the GELUs, SkipLayerNormalization,
BiasAdd) -> nn.  Its attention ops are in ``contrib_attention.py``, its quantizer's in
``contrib_quant.py``; docs/onnx.md lists them all with their agreement with onnxruntime.

ONNX has no schemas for this domain, so the checks ONNX's schemas give the default domain
(pir.frontends.onnx.validate) are made here from a small declaration per op, transcribed from
onnxruntime's (onnxruntime/core/graph/contrib_ops): its inputs in order (a trailing ``?``
marks an optional one, ``...`` a variadic tail), and the attributes it defines.  A node with
an attribute the op does not define, too many inputs, or a required input missing is an
error that names it.  Each op is imported as a composition of nn ops where that is exact.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from pir.frontends.onnx.registry import converter
from pir.ir.dialects.nn import activations as act
from pir.ir.dialects.nn import elementwise as ew
from pir.ir.dialects.nn import linalg as la
from pir.ir.dialects.nn import normalization as nm
from pir.ir.dialects.nn import tensor as tn
from pir.ir.typerules import tensor

__all__ = ["MS", "contrib"]

#: onnxruntime's contrib domain.
MS = "com.microsoft"


def contrib(op_type: str, inputs: str, attrs: tuple[str, ...] = ()) -> Callable:
    """Register a converter of ``com.microsoft::op_type`` whose node is first checked against
    ``inputs`` (space separated names) and ``attrs``."""
    names = inputs.split()
    variadic = bool(names) and names[-1].endswith("...")
    required = [i for i, n in enumerate(names) if not n.endswith(("?", "..."))]

    def register(fn: Callable) -> Callable:
        def checked(ctx):
            node = ctx.node
            extra = sorted({a.name for a in node.attribute} - set(attrs))
            if extra:
                raise ctx.error(f"attributes that {MS}::{op_type} does not define: "
                                f"{', '.join(extra)}")
            if not variadic and len(node.input) > len(names):
                raise ctx.error(f"{len(node.input)} inputs, {MS}::{op_type} takes at most "
                                f"{len(names)}")
            for i in required:
                if i >= len(node.input) or not node.input[i]:
                    raise ctx.error(f"missing required input {i} ({names[i]})")
            return fn(ctx)

        checked.__doc__ = fn.__doc__
        return converter(op_type, domain=MS)(checked)

    return register


def _add(ctx, a, b):
    return a if b is None else ctx.temp(ew.Add, a, b)


def _scalar(ctx, value: float, like) -> object:
    """A rank-0 constant of ``like``'s element type."""
    return ctx.constant(np.array(value, dtype=tensor(like).dtype.numpy))


# -- activations -------------------------------------------------------------------------------

@contrib("Gelu", "X")
def gelu(ctx):
    """Gelu: the erf form, nn.gelu."""
    return [ctx.value(act.Gelu, ctx.input(0))]


@contrib("BiasGelu", "A B")
def bias_gelu(ctx):
    """BiasGelu(A, B) = gelu(A + B), erf form."""
    return [ctx.value(act.Gelu, ctx.temp(ew.Add, ctx.input(0), ctx.input(1)))]


@contrib("FastGelu", "X bias?")
def fast_gelu(ctx):
    """FastGelu(X, bias) = gelu(X + bias), tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
    x^3)))."""
    x = _add(ctx, ctx.input(0), ctx.input(1))
    return [ctx.value(act.Gelu, x, approximate="tanh")]


@contrib("QuickGelu", "X", ("alpha",))
def quick_gelu(ctx):
    """QuickGelu(X) = X * sigmoid(alpha * X) (alpha 1.702): nn.swish, whose alpha it is."""
    return [ctx.value(act.Swish, ctx.input(0), alpha=ctx.attr("alpha", 1.702))]


@contrib("BiasAdd", "X bias skip")
def bias_add(ctx):
    """BiasAdd(X, bias, skip) = (X + bias) + skip."""
    return [ctx.value(ew.Add, ctx.temp(ew.Add, ctx.input(0), ctx.input(1)), ctx.input(2))]


# -- matrix products ---------------------------------------------------------------------------

def _fused_operand(ctx, v, trans: bool, trans_batch: bool):
    """FusedMatMul's view of an operand [d0, d1 .. dk, m]: ``trans_batch`` moves its first
    dim behind the batch dims ([d1 .. dk, d0, m], onnxruntime's "transposed on the 1st
    dimension and batch dimensions"), then ``trans`` swaps the last two dims."""
    rank = tensor(v).rank
    if rank is None:
        raise ctx.error("FusedMatMul needs operands of known rank")
    perm = list(range(rank))
    if trans_batch and rank > 2:
        perm = list(range(1, rank - 1)) + [0, rank - 1]
    if trans and rank > 1:  # a vector is not transposed (onnxruntime ignores the flag)
        perm[-2], perm[-1] = perm[-1], perm[-2]
    if perm == list(range(rank)):
        return v
    return ctx.temp(tn.Transpose, v, perm=tuple(perm))


@contrib("FusedMatMul", "A B", ("alpha", "transA", "transB", "transBatchA", "transBatchB"))
def fused_matmul(ctx):
    """FusedMatMul(A, B) = alpha * A' @ B' (A', B' transposed as the attributes ask)."""
    a = _fused_operand(ctx, ctx.input(0), bool(ctx.attr("transA", 0)),
                       bool(ctx.attr("transBatchA", 0)))
    b = _fused_operand(ctx, ctx.input(1), bool(ctx.attr("transB", 0)),
                       bool(ctx.attr("transBatchB", 0)))
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 1.0:
        return [ctx.value(la.MatMul, a, b)]
    y = ctx.temp(la.MatMul, a, b)
    return [ctx.value(ew.Mul, y, _scalar(ctx, alpha, y))]


# -- normalisation -----------------------------------------------------------------------------

@contrib("SkipLayerNormalization", "input skip gamma beta? bias?", ("epsilon",))
def skip_layer_norm(ctx):
    """SkipLayerNormalization: s = input + skip + bias, then layer_norm(s) over the last axis
    with gamma and beta; outputs (output, mean, inv_std_var, s)."""
    s = ctx.temp(ew.Add, ctx.input(0), ctx.input(1))
    s = _add(ctx, s, ctx.input(4))
    eps = ctx.attr("epsilon", 1e-12)
    stats = ctx.output_present(1) or ctx.output_present(2)
    op = ctx.emit(nm.LayerNorm, s, ctx.input(2), ctx.input(3), axis=-1, epsilon=eps,
                  outputs=[0, 1, 2] if stats else [0])
    outs = list(op.results) + [None] * (3 - len(op.results))
    if ctx.output_present(3):
        outs.append(s)
    return [v if ctx.output_present(i) else None for i, v in enumerate(outs)]

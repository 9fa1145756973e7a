"""A batch norm of a convolution, in inference, folded into the convolution's weights.

``batch_norm(conv(x, W, b))`` with constant weights and statistics is one convolution:
per output channel ``o``, with ``f = scale / sqrt(var + epsilon)``,
``W'[o] = W[o] * f[o]`` and ``b'[o] = (b[o] - mean[o]) * f[o] + bias[o]``.  ONNX Runtime
(ConvBNFusion) and TVM (SimplifyInference + FoldScaleAxis) fold it the same way.  Without
it every CNN kernel applied the normalisation in its epilogue, four per-channel loads and
four operations per output element, and a residual block twice (its shortcut's batch norm
too).  The folded weights are computed in float64 and stored in the weights' dtype.
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Operation
from pir.ir.dialects.builtin import ConstantOp, constant_value, enclosing_module, make_constant
from pir.passes.rewriter import RewritePattern, Rewriter

__all__ = ["FoldBatchNormIntoConv"]


def _const(v) -> np.ndarray | None:
    op = getattr(v, "op", None) if v is not None else None
    return np.asarray(constant_value(op)) if isinstance(op, ConstantOp) else None


class FoldBatchNormIntoConv(RewritePattern):
    """nn.conv whose one use is an inference nn.batch_norm, all constants but the input:
    one nn.conv with the normalisation in its weights and bias."""

    name = "conv-batch-norm"
    root = "nn.conv"

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        y = op.results[0]
        if len(y.uses) != 1:
            return False
        bn = y.uses[0].op
        if bn.name != "nn.batch_norm" or bn.training_mode or len(bn.results) != 1 \
                or bn.operands[0] is not y:
            return False
        w = _const(op.operands[1])
        bias = op.operands[2] if len(op.operands) > 2 else None
        b = _const(bias) if bias is not None else None
        stats = [_const(v) for v in bn.operands[1:5]]
        if w is None or (bias is not None and b is None) or any(s is None for s in stats) \
                or w.dtype.kind != "f" or any(s.shape != (w.shape[0],) for s in stats):
            return False
        scale, beta, mean, var = (s.astype(np.float64) for s in stats)
        f = scale / np.sqrt(var + bn.epsilon)
        w2 = (w.astype(np.float64) * f.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
        b0 = b.astype(np.float64) if b is not None else np.zeros(w.shape[0])
        b2 = ((b0 - mean) * f + beta).astype(w.dtype)
        module = enclosing_module(op)
        name = bn.results[0].name or y.name or "conv"
        wc = rewriter.insert(make_constant(module, w2, f"{name}.w", op.loc), before=op)
        bc = rewriter.insert(make_constant(module, b2, f"{name}.b", op.loc), before=op)
        attrs = {k: op.attributes[k] for k in op.attributes}
        conv = rewriter.insert(type(op).build(op.operands[0], wc.results[0], bc.results[0],
                                              result_types=[bn.results[0].type], loc=op.loc,
                                              **attrs), before=op)
        rewriter.replace_op(bn, [conv.results[0]])
        rewriter.erase_op(op)
        return True

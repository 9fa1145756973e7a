"""The weights a product or convolution reads, when codegen can know them: a constant, or a
value computed from constants alone.

onnxruntime's dynamic quantizer writes ``MatMulInteger(x_q, w_q, x_zp, w_zp)``, which the
importer decomposes into a product of ``cast(x_q) - x_zp`` and ``cast(w_q) - w_zp``: the
weights' side is an elementwise group over two constants, which ``fold`` deliberately
leaves unfolded (an int8 model must not become an int32 one on disk, DESIGN's weights rule),
so without this module every run recomputed 8 million centred weights and a library call
multiplied them.  Codegen evaluates such a group once, with the reference rules, and packs
its values like any constant's.  Integer weights are then stored in the narrowest integer
type that holds them (a uint8 weight minus its zero point of 119 needs int16) and widened by
the kernel as it loads them: the compiled file stays near the model's size, and the GEMM
streams 2 bytes a weight, not 4.
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Operation, Value
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.dialects.fusion import GroupOp

__all__ = ["known_weights", "narrowest", "drop_if_dead"]

#: The kinds of group whose value codegen may compute ahead: they read nothing but their
#: operands (a reduction's weights would be as good, but no exporter writes one).
_AHEAD = frozenset({"elementwise", "broadcast", "injective"})


def known_weights(value: Value) -> np.ndarray | None:
    """``value``'s array when codegen can know it: a constant's, or a group's over constants
    only (evaluated with the reference rules); None otherwise."""
    op = getattr(value, "op", None)
    if isinstance(op, ConstantOp):
        return np.asarray(constant_value(op))
    if not isinstance(op, GroupOp) or op.kind not in _AHEAD or not all(
            isinstance(getattr(v, "op", None), ConstantOp) for v in op.operands):
        return None
    from pir.runtimes.reference.interpreter import evaluate_op

    try:
        out = evaluate_op(op, [np.asarray(constant_value(v.op)) for v in op.operands])
    except Exception:  # noqa: BLE001 - an optimisation: the product then reads the value
        return None
    return out[op.results.index(value)]


def narrowest(w: np.ndarray) -> np.ndarray:
    """Integer weights in the narrowest signed integer type that holds all their values (the
    kernel widens them as it loads); other weights as they are."""
    if w.dtype.kind not in "iu" or w.size == 0:
        return w
    lo, hi = int(w.min()), int(w.max())
    for dt in (np.int8, np.int16, np.int32):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return w.astype(dt) if w.dtype != dt else w
    return w


def drop_if_dead(op: Operation | None) -> None:
    """Remove ``op`` (the weights' constant or group, once packed) when nothing reads it,
    and then the constants it read that nothing else does."""
    if op is None or op.parent is None or any(r.uses for r in op.results):
        return
    inputs = [getattr(v, "op", None) for v in op.operands]
    op.parent.remove(op)
    for producer in inputs:
        if isinstance(producer, ConstantOp):
            drop_if_dead(producer)

"""Constant folding through the reference runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pir.ir.builder import Builder
from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, constant_value, make_constant
from pir.ir.dialects.dist import DistTensorType
from pir.ir.opdef import Elementwise, Pure
from pir.passes.base import Pass, function_blocks
from pir.passes.dce import drop_unused_resources, erase_dead_ops
from pir.runtimes.reference.interpreter import evaluate_op, fold_op

__all__ = ["ConstantFolding", "fold_in_place", "replace_by_constants"]


def fold_in_place(module: ModuleOp, op: Operation, limit: int) -> list[Value] | None:
    """If ``op`` is pure and all its operands are constants, evaluate it and replace it by
    constants (each keeps its result's name, so diffs line up); return the new values, or
    None when the op stays (not foldable, or a result larger than ``limit`` elements)."""
    if isinstance(op, ConstantOp) or op.regions or Pure not in op.traits:
        return None
    if any(isinstance(r.type, DistTensorType) for r in op.results):
        return None  # a sharded value: a constant holds the whole value, not its layout
    if all(isinstance(getattr(v, "op", None), ConstantOp) for v in op.operands):
        if _expands(op) or _widens(op):
            return None
        arrays = fold_op(op, limit)
    elif _dense_of_broadcasts(op):
        arrays = fold_op(op, limit, [_broadcast_value(v) for v in op.operands])
    else:
        return None
    if arrays is None:
        return None
    return replace_by_constants(module, op, arrays)


def replace_by_constants(module: ModuleOp, op: Operation, arrays) -> list[Value]:
    """Replace ``op`` by one constant per result (``arrays``), each keeping its result's
    name so that diffs line up; return the constants."""
    builder = Builder(op.parent, before=op)
    values = []
    for r, arr in zip(op.results, arrays):
        new = builder.insert(make_constant(module, arr, r.name or "folded", op.loc)).results[0]
        r.replace_all_uses_with(new)
        new.name = r.name
        values.append(new)
    op.erase()
    return values


#: A broadcast of a constant to more than this many elements stays a broadcast.
EXPAND_LIMIT = 1024


def _expands(op: Operation) -> bool:
    """A broadcast that would turn a small constant into a large one (XLA's constant folding
    skips them too).  The broadcast costs nothing where it is consumed (codegen reads the
    small constant through an index map), while a dense copy fills the file and memory: a
    layer norm's divide-by-768 became a [16384, 1] array, and ResNet-50's fused file grew
    from 137 to 425 MB."""
    if op.name != "prim.broadcast_in_dim":
        return False
    out, src = op.results[0].type.numel, op.operands[0].type.numel
    return out is not None and src is not None and out > max(src, EXPAND_LIMIT)


def _broadcast_of_constant(v: Value) -> bool:
    b = getattr(v, "op", None)
    return b is not None and b.name == "prim.broadcast_in_dim" and \
        isinstance(getattr(b.operands[0], "op", None), ConstantOp)


def _varying_dims(v: Value) -> set[int] | None:
    """The dims of the elementwise operand ``v`` (a constant, or a broadcast of one) along
    which its value can change: those of size above one in the constant it comes from."""
    if isinstance(getattr(v, "op", None), ConstantOp):
        shape = v.type.shape
        return {i for i, d in enumerate(shape) if d != 1} if shape is not None else None
    if _broadcast_of_constant(v):
        src = v.op.operands[0].type.shape
        if src is None:
            return None
        return {d for d, n in zip(v.op.broadcast_dimensions, src) if n != 1}
    return None


def _dense_of_broadcasts(op: Operation) -> bool:
    """An elementwise op on constants, some of them broadcasts left unfolded (``_expands``),
    whose result varies along every dim: dense whatever is done, so folding it costs the
    file nothing the op's consumers would not need anyway.  A resampler's windowed-sinc
    filter, ``sin(pi * (t[160, 1] + idx[475])) / ...``, was computed on every run (0.6 of
    its 0.85 ms) because the broadcasts of ``t`` and ``idx`` stopped the fold."""
    if Elementwise not in op.traits or len(op.results) != 1:
        return False
    out = op.results[0].type.shape
    if out is None or not all(isinstance(d, int) for d in out):
        return False
    varying: set[int] = set()
    for v in op.operands:
        dims = _varying_dims(v)
        if dims is None:
            return False
        varying |= dims
    return varying >= {i for i, d in enumerate(out) if d != 1}


def _broadcast_value(v: Value):
    """The value of a constant, or of a broadcast of one (by the reference rule)."""
    if isinstance(v.op, ConstantOp):
        return constant_value(v.op)
    return evaluate_op(v.op, [constant_value(v.op.operands[0].op)])[0]


def _widens(op: Operation) -> bool:
    """A cast of a large integer constant to a wider integer type (int8 weights to the
    int32 a quantized convolution computes in): the narrow constant stays in the
    file and the cast runs where it is consumed (codegen fuses it into the kernel's read of
    the weights).  Folded, an 8.7 MB int8 model became a 43 MB .pir.  Float casts fold: the
    fast float kernels pack constant weights."""
    if op.name != "prim.cast":
        return False
    src, out = op.operands[0].type, op.results[0].type
    n = src.numel
    return (n is not None and n > EXPAND_LIMIT and src.dtype.is_int and out.dtype.is_int
            and out.dtype.itemsize > src.dtype.itemsize)


def _fold_block(module: ModuleOp, block: Block, limit: int) -> int:
    folded = 0
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                folded += _fold_block(module, inner, limit)
        folded += fold_in_place(module, op, limit) is not None
    return folded


@dataclass(frozen=True)
class ConstantFolding(Pass):
    """Evaluate ops whose operands are all constants, with the reference runtime's rules.

    Results larger than `size-limit` elements are left as ops (folding would bloat the
    file); constants left unused are removed.
    """

    name: ClassVar[str] = "fold"
    size_limit: int = field(default=1 << 20, metadata={"doc": "largest result to fold, in elements"})

    def apply(self, module: ModuleOp) -> bool:
        folded = 0
        for block in function_blocks(module):
            n = _fold_block(module, block, self.size_limit)
            if n:
                folded += n
                erase_dead_ops(block)
        return bool(folded + drop_unused_resources(module))

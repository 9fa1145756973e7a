"""What a reverse-mode derivative keeps between its forward and its backward part, and
rematerialization (``--remat``), which recomputes cheap values instead of keeping them.

A reverse-mode derivative is one function: a copy of the primal program (the **forward**
part), then the ops the VJP rules built (the **backward** part).  Backward ops carry the
discardable attribute ``pir.ad = "backward"`` (:data:`PHASE`), set by :func:`mark_backward`
once the derivative is cleaned up; every other op is forward.  A value is **kept** when a
forward op computes it and a backward op reads it: it is what an executor running the two
parts at different times (as a training framework does) must hold in memory in between.
Inputs and constants are not counted: they exist before the forward part runs.

The mark is an ordinary attribute, so ``cse`` never merges a backward op with a forward one
(their attributes differ).  That is what keeps a rematerialized value recomputed after a
later ``pir optimize``; marks are set only after the cleanup that builds the derivative, so
that cleanup does merge the duplicates the rules made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from pir.ir.core import BlockArgument, Operation, Value
from pir.ir.dialects.builtin import ConstantOp
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir.opdef import Elementwise, Pure
from pir.ir.types import TensorType

__all__ = ["PHASE", "is_backward", "mark_backward", "Kept", "kept", "rematerialize"]

#: The discardable attribute that marks an op of the backward part.
PHASE = "pir.ad"
BACKWARD = "backward"


def is_backward(op: Operation) -> bool:
    """Whether ``op`` belongs to the backward part: it is marked, or it holds a marked op (a
    fusion group made by ``fuse`` from backward ops, or from both parts)."""
    if op.attributes.get(PHASE) == BACKWARD:
        return True
    return bool(op.regions) and any(i.attributes.get(PHASE) == BACKWARD for i in op.walk())


def _top(op: Operation, fn: FuncOp) -> Operation:
    """The op of ``fn``'s entry block that holds ``op`` (``op`` itself, or an ancestor)."""
    while op.parent is not None and op.parent is not fn.entry:
        parent = op.parent_op
        if parent is None:
            break
        op = parent
    return op


def mark_backward(fn: FuncOp, ops: Iterable[Operation], seeds: Iterable[Value] = ()) -> int:
    """Mark as backward the ops of ``fn`` among ``ops`` (those that survived the cleanup),
    and every op that reads, directly or not, a value of a backward op or a ``seed``
    (cleanup rewrites may have replaced a backward op with a new one).  Gives the count."""
    ops = set(ops)
    hot: set[Value] = set(seeds)
    count = 0
    for op in fn.entry.ops:
        if isinstance(op, ReturnOp):
            continue
        reads = {v for inner in op.walk() for v in inner.operands}
        if op in ops or reads & hot:
            op.attributes[PHASE] = BACKWARD
            hot.update(op.results)
            count += 1
    return count


def unmark(fn: FuncOp) -> list[Operation]:
    """Remove the marks of ``fn`` and give the ops that had one."""
    marked = [op for op in fn.entry.ops if op.attributes.get(PHASE) == BACKWARD]
    for op in marked:
        del op.attributes[PHASE]
    return marked


@dataclass
class Kept:
    """The values kept between the forward and the backward part of a function."""

    values: list[Value] = field(default_factory=list)
    nbytes: int = 0  # of the values whose size is known
    unsized: list[Value] = field(default_factory=list)  # sizes depend on unknown dims

    @property
    def count(self) -> int:
        return len(self.values)


def _nbytes(v: Value, dims: dict[str, int]) -> int | None:
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    n = 1
    for d in t.shape:
        d = dims.get(d) if isinstance(d, str) else d
        if d is None:
            return None
        n *= d
    return n * t.dtype.itemsize


def _forward_values_read_by_backward(fn: FuncOp) -> list[Value]:
    out: list[Value] = []
    for op in fn.entry.ops:
        if is_backward(op) or isinstance(op, (ReturnOp, ConstantOp)):
            continue
        for r in op.results:
            if any(is_backward(_top(u, fn)) for u in r.users):
                out.append(r)
    return out


def has_backward(fn: FuncOp) -> bool:
    return any(is_backward(op) for op in fn.entry.ops)


def kept(fn: FuncOp, dims: dict[str, int] | None = None) -> Kept:
    """The values of ``fn`` that a forward op computes and a backward op reads, with their
    total size in bytes (symbolic dims sized by ``dims``; values of unknown size are listed
    in ``unsized`` and not counted in ``nbytes``)."""
    dims = dims or {}
    k = Kept()
    for v in _forward_values_read_by_backward(fn):
        k.values.append(v)
        n = _nbytes(v, dims)
        if n is None:
            k.unsized.append(v)
        else:
            k.nbytes += n
    return k


def _cheap(op: Operation) -> bool:
    return (Elementwise in op.traits and Pure in op.traits and not op.regions
            and len(op.results) == 1)


def rematerialize(fn: FuncOp) -> int:
    """Recompute in the backward part the kept values that cheap ops compute: an op with the
    Elementwise trait whose operands are all inputs, constants or kept values.  The backward
    readers then read a backward copy of the op, so the value is no longer kept, and its
    operands, already kept or available anyway, are what the backward part reads: the kept
    bytes never grow.  Values are visited last first, so a chain of such ops (``y``,
    ``y * y``, ``1 - y * y``) is recomputed whole from its first kept value.  Gives the number
    of ops recomputed."""
    from pir.passes.autodiff.transform import clone_op

    kept_now = set(_forward_values_read_by_backward(fn))
    done = 0
    for v in reversed(_forward_values_read_by_backward(fn)):
        op = v.owner
        if not _cheap(op):
            continue
        if not all(isinstance(o, BlockArgument) or isinstance(o.owner, ConstantOp)
                   or o in kept_now for o in op.operands):
            continue
        readers = [u for u in v.uses if is_backward(_top(u.op, fn))]
        first = min(fn.entry.index(_top(u.op, fn)) for u in readers)
        copy = clone_op(op, {})
        copy.attributes[PHASE] = BACKWARD
        copy.results[0].name = f"{v.name}.remat" if v.name else None
        fn.entry.insert(first, copy)
        for u in readers:
            u.op.set_operand(u.index, copy.results[0])
        kept_now.discard(v)
        done += 1
    return done

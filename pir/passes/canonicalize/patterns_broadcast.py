"""Work moved before a broadcast: a pad or a product of a broadcast value is computed on the
value itself and broadcast after, as XLA's algebraic simplifier does with broadcasts of
scalars.

Reverse mode seeds with ones: the cotangent of ``u`` over N points is ``broadcast(1.0)``,
and ``d/dx`` of an input ``[x, y]`` is ``pad(broadcast(1.0), 0)``, every row ``[1, 0]``.  A
derivative then multiplies such an N-row matrix by a weight matrix, N identical rows: the
PINN's second derivative had three of these [4096, k] x [k, 32] products, each writing
[4096, 32] that its consumer read back.  Moved before the broadcast, each is a [k] x [k, 32]
product, and its consumer reads 32 numbers.

The product of one row is the same sum of the same terms, but numpy (and a kernel) may add
it in another order than the matrix product: results can differ in the last bit.
"""

from __future__ import annotations

from pir.ir.core import Operation
from pir.ir.dialects.prim.linalg import DotGeneralOp
from pir.ir.dialects.prim.shape import BroadcastInDimOp, ConcatOp, PadOp
from pir.ir.types import TensorType
from pir.passes.canonicalize.matchers import derived_name, producer
from pir.passes.rewriter import RewritePattern, Rewriter

__all__ = ["PATTERNS"]


def _broadcast(v) -> Operation | None:
    return producer(v, "prim.broadcast_in_dim")


def _shape(v) -> list | None:
    t = v.type
    return list(t.shape) if isinstance(t, TensorType) and t.shape is not None else None


def _names(op: Operation):
    """Names for the values a rewrite of ``op`` makes, in turn: ``<op's name>.1``, ``.2``..."""
    count = 0

    def next_name() -> str | None:
        nonlocal count
        count += 1
        return derived_name(op, count)

    return next_name


def _narrowed(rw: Rewriter, b: Operation, keep: list[int], before: Operation, name):
    """The value of broadcast ``b`` restricted to its dims ``keep`` (which hold every dim the
    broadcast operand maps to): the operand itself when that is the same, else a smaller
    broadcast of it."""
    out = b.results[0].type
    dims = [keep.index(d) for d in b.broadcast_dimensions]
    shape = [out.shape[d] for d in keep]
    src = b.operands[0]
    if dims == list(range(len(dims))) and _shape(src) == shape:
        return src
    return rw.value(BroadcastInDimOp, src, before=before, broadcast_dimensions=dims,
                    result_types=[TensorType(out.dtype, shape)], name=name())


class PadOfBroadcast(RewritePattern):
    """pad(broadcast(s)) -> broadcast(pad(smaller broadcast of s)) when the broadcast makes
    dims the pad leaves alone: those are added after the pad."""

    name = "prim-pad-of-broadcast"
    root = "prim.pad"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        b = _broadcast(op.operands[0])
        out = op.results[0].type
        if b is None or not isinstance(out, TensorType) or out.shape is None:
            return False
        rank = len(out.shape)
        interior = list(op.interior_padding) or [0] * rank
        padded = {d for d in range(rank)
                  if op.edge_padding_low[d] or op.edge_padding_high[d] or interior[d]}
        made = [d for d in range(rank) if d not in b.broadcast_dimensions and d not in padded]
        if not made:
            return False
        keep = [d for d in range(rank) if d not in made]
        name = _names(op)
        small = _narrowed(rw, b, keep, op, name)
        extra = {"interior_padding": [interior[d] for d in keep]} if op.interior_padding else {}
        padded_small = rw.value(
            PadOp, small, op.operands[1], before=op,
            edge_padding_low=[op.edge_padding_low[d] for d in keep],
            edge_padding_high=[op.edge_padding_high[d] for d in keep],
            result_types=[TensorType(out.dtype, [out.shape[d] for d in keep])], name=name(),
            **extra)
        new = rw.value(BroadcastInDimOp, padded_small, before=op, broadcast_dimensions=keep,
                       result_types=[out])
        rw.replace_op(op, [new])
        return True


class ConcatOfBroadcasts(RewritePattern):
    """concat(broadcast(s1), broadcast(s2), ...) -> broadcast(concat(smaller broadcasts))
    when every operand is a broadcast and some dim is made by all of them and is not the
    concat dim: the concat is built without it, and the dim added after.  Forward mode's
    seed of ``[x, y]`` for ``d/dx`` is the concat of broadcast ones and zeros, an N-row
    matrix of rows ``[1, 0]``; as a broadcast of ``[1, 0]`` its product with the first
    weights is one row (``prim-dot-of-broadcast``)."""

    name = "prim-concat-of-broadcasts"
    root = "prim.concat"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        out = op.results[0].type
        bs = [_broadcast(v) for v in op.operands]
        if len(bs) < 2 or None in bs or not isinstance(out, TensorType) or out.shape is None:
            return False
        d = op.dimension
        keep = sorted({d}.union(*(set(b.broadcast_dimensions) for b in bs)))
        if len(keep) == len(out.shape):
            return False  # no dim made by every operand
        name = _names(op)
        parts = [_narrowed(rw, b, keep, op, name) for b in bs]
        shape = [out.shape[k] for k in keep]
        joined = rw.value(ConcatOp, parts, before=op, dimension=keep.index(d), name=name(),
                          result_types=[TensorType(out.dtype, shape)])
        new = rw.value(BroadcastInDimOp, joined, before=op, broadcast_dimensions=keep,
                       result_types=[out])
        rw.replace_op(op, [new])
        return True


class DotOfBroadcast(RewritePattern):
    """dot_general(broadcast(s), w) whose lhs (or rhs) free dims are all made by the
    broadcast: every row of the product is the same, so the product of one row is
    broadcast.  No batching dims."""

    name = "prim-dot-of-broadcast"
    root = "prim.dot_general"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        if op.lhs_batching_dimensions or not isinstance(op.results[0].type, TensorType):
            return False
        lc, rc = list(op.lhs_contracting_dimensions), list(op.rhs_contracting_dimensions)
        for side in (0, 1):
            b = _broadcast(op.operands[side])
            contracting = (lc, rc)[side]
            if b is None or not set(b.broadcast_dimensions) <= set(contracting) \
                    or len(contracting) == len(_shape(op.operands[side]) or contracting):
                continue  # no broadcast, a dim of s is free, or no free dims to save
            return self._rewrite(op, rw, side, b, lc, rc)
        return False

    @staticmethod
    def _rewrite(op: Operation, rw: Rewriter, side: int, b: Operation, lc, rc) -> bool:
        contracting = (lc, rc)[side]
        name = _names(op)
        small = _narrowed(rw, b, contracting, op, name)  # the contracted dims, in that order
        k = list(range(len(contracting)))
        lhs, rhs = (small, op.operands[1]) if side == 0 else (op.operands[0], small)
        lcs, rcs = (k, rc) if side == 0 else (lc, k)
        out = op.results[0].type
        n_lfree = len(_shape(op.operands[0])) - len(lc)
        # result dims: lhs free dims, then rhs free dims; the broadcast side's free dims go
        kept = list(range(n_lfree, len(out.shape))) if side == 0 else list(range(n_lfree))
        product = rw.value(DotGeneralOp, lhs, rhs, before=op, lhs_contracting_dimensions=lcs,
                           rhs_contracting_dimensions=rcs, name=name(),
                           result_types=[TensorType(out.dtype, [out.shape[d] for d in kept])])
        new = rw.value(BroadcastInDimOp, product, before=op, broadcast_dimensions=kept,
                       result_types=[out])
        rw.replace_op(op, [new])
        return True


class DotOfScaled(RewritePattern):
    """dot_general(x * broadcast(v), w), v along contracted dims only (a scale per
    contracted element): dot_general(x, w * broadcast(v)), the scale moved onto the other
    operand, as TVM's FoldScaleAxis moves a scale into weights.  The product then reads x
    itself: the PINN's derivative had scaled copies of [4096, 32] values (a kernel output
    each) where the scale fits in a [32, 32] weight matrix.  Only onto an operand of fewer
    elements (known statically).  Also when the scaled value has other uses (it then stays
    for them): the rewrite must not depend on uses, or forward mode's ``dot(x * v, w)`` and
    its twin ``dot(x, w * v)`` (the first rewritten before cse made it used twice) stay two
    products that cse can not merge; the PINN's forward second derivative had seven
    [4096, 32] x [32, 32] products instead of five."""

    name = "prim-dot-of-scaled"
    root = "prim.dot_general"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        if op.lhs_batching_dimensions:
            return False
        contracting = (list(op.lhs_contracting_dimensions), list(op.rhs_contracting_dimensions))
        for side in (0, 1):
            scaled = op.operands[side]
            m = getattr(scaled, "op", None)
            if m is None or m.name != "prim.mul":
                continue
            for j in (0, 1):
                b = _broadcast(m.operands[j])
                if b is None or not set(b.broadcast_dimensions) <= set(contracting[side]):
                    continue
                other = op.operands[1 - side]
                oshape = _shape(other)
                small, big = other.type.numel, scaled.type.numel
                if oshape is None or small is None or (big is not None and small >= big):
                    continue  # only onto the smaller operand (else it would move back)
                if b.operands[0].type.dtype != other.type.dtype:
                    continue  # a mixed-type product: the scale can not multiply the other
                # dim d of the scaled operand is contracted with dim pair[d] of the other
                pair = dict(zip(contracting[side], contracting[1 - side]))
                dims = [pair[d] for d in b.broadcast_dimensions]
                name = _names(op)
                scale = rw.value(BroadcastInDimOp, b.operands[0], before=op,
                                 broadcast_dimensions=dims, name=name(),
                                 result_types=[TensorType(other.type.dtype, oshape)])
                moved = rw.value(type(m), other, scale, before=op, name=name(),
                                 result_types=[other.type])
                rw.set_operand(op, side, m.operands[1 - j])
                rw.set_operand(op, 1 - side, moved)
                return True
        return False


PATTERNS = [PadOfBroadcast(), ConcatOfBroadcasts(), DotOfBroadcast(), DotOfScaled()]

"""A common factor comes out of a sum, and a per-column scale out of a product, so that
products which differ only by a scale read one value (and ``prim-dot-of-scaled`` and
``prim-add-of-products`` can merge them), as XLA's algebraic simplifier factors
``A*C + B*C`` into ``(A+B)*C``.

Forward mode's second derivative of ``tanh`` scales by the tangent twice: for the PINN's
Laplacian, ``d²a/dx² = -2 · a · (1 - a²) · v_x²``, with ``v_x`` a per-column scale, was
written ``-((v_x·(1 - a²))·a + (v_x·(1 - a²))·a) · v_x``.  With the scale out in front,
``d²/dx²`` and ``d²/dy²`` multiply one [N, 32] value by differently scaled weights, and
their sum by one matrix.

Factoring adds and multiplies in another order: results can differ in rounding, and near
the ends of the float range in overflow (``b * (s * z)`` may overflow where ``(b * s) * z``
did not).
"""

from __future__ import annotations

from pir.ir.core import Operation
from pir.ir.types import TensorType
from pir.passes.canonicalize.matchers import derived_name, producer
from pir.passes.rewriter import RewritePattern, Rewriter

__all__ = ["PATTERNS"]


def _only_use(v, user: Operation) -> bool:
    """Whether every use of ``v`` is by ``user`` (``add(m, m)`` uses m twice)."""
    return all(u.op is user for u in v.uses)


def _scale(v, out) -> bool:
    """Whether ``v`` is a broadcast of a computed vector (rank 1 or more) with fewer elements
    than ``out``: a scale per row or column.  A broadcast constant or scalar is left where
    it is, so that the usual elementwise code (and reverse mode's seeds) keeps its order."""
    b = producer(v, "prim.broadcast_in_dim")
    if b is None or producer(b.operands[0], "builtin.constant") is not None:
        return False
    small, big = b.operands[0].type, out.type
    if not (isinstance(small, TensorType) and isinstance(big, TensorType)) \
            or not small.shape or big.shape is None:
        return False
    if len(small.shape) < len(big.shape):
        return True  # the broadcast makes a dim (static or symbolic, as a batch of N points)
    return small.numel is not None and big.numel is not None and small.numel < big.numel


class ScaleOutOfProduct(RewritePattern):
    """mul(mul(b, s), z) -> mul(b, mul(s, z)), b a per-row or per-column scale and the
    inner product used only here: the scale ends up outermost."""

    name = "prim-scale-out-of-product"
    root = "prim.mul"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        if _scale(op.operands[0], op.results[0]) or _scale(op.operands[1], op.results[0]):
            return False  # the scale is outermost already
        for i in (0, 1):
            inner = producer(op.operands[i], "prim.mul")
            if inner is None or not _only_use(inner.results[0], op) \
                    or inner.results[0].type != op.results[0].type:
                continue
            for j in (0, 1):
                if not _scale(inner.operands[j], op.results[0]):
                    continue
                rest = rw.value(type(op), inner.operands[1 - j], op.operands[1 - i],
                                before=op, result_types=[op.results[0].type],
                                name=derived_name(op, 1))
                new = rw.value(type(op), inner.operands[j], rest, before=op,
                               result_types=[op.results[0].type])
                rw.replace_op(op, [new])
                return True
        return False


class ScaleOutOfNeg(RewritePattern):
    """neg(mul(b, z)) -> mul(b, neg(z)), b a scale (exact)."""

    name = "prim-scale-out-of-neg"
    root = "prim.neg"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        m = producer(op.operands[0], "prim.mul")
        if m is None or not _only_use(m.results[0], op):
            return False
        for j in (0, 1):
            if _scale(m.operands[j], op.results[0]):
                neg = rw.value(type(op), m.operands[1 - j], before=op,
                               result_types=[m.operands[1 - j].type], name=derived_name(op, 1))
                new = rw.value(type(m), m.operands[j], neg, before=op,
                               result_types=[op.results[0].type])
                rw.replace_op(op, [new])
                return True
        return False


def _common(p: Operation, q: Operation, scale_of=None):
    """(k, x, y) when ``p = k * x`` and ``q = k * y`` (either operand order), else None;
    with ``scale_of`` (a value), only a k that is a scale of it."""
    for i in (0, 1):
        for j in (0, 1):
            k = p.operands[i]
            if k is q.operands[j] and (scale_of is None or _scale(k, scale_of)):
                return k, p.operands[1 - i], q.operands[1 - j]
    return None


class FactorCommon(RewritePattern):
    """add(mul(k, x), mul(k, y)) -> mul(k, add(x, y)); also when the two products are
    terms of two sums, add(add(k*x, b), add(k*y, d)) -> add(k * (x + y), b + d).  The
    products (and sums) used only here, all of one type.  A plain sum of two products is
    factored only when k is a scale, which then comes out in front."""

    name = "prim-factor-common"
    root = "prim.add"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        t = op.results[0].type
        if any(v.type != t for v in op.operands):
            return False
        p, q = (producer(v, "prim.mul") for v in op.operands)
        if p is not None and q is not None and _only_use(p.results[0], op) \
                and _only_use(q.results[0], op) and p.results[0].type == t == q.results[0].type:
            # only to bring a scale out in front (m + m is as many ops as k * (x + x); and
            # reverse mode's g*d + d*g, factored, would be computed before the backward
            # part, which then keeps 2*g*d instead of d: the same bytes, but not the value
            # the rules read); two sums' terms below are factored whatever k is
            found = _common(p, q, scale_of=op.results[0])
            if found is not None:
                rw.replace_op(op, [self._factored(rw, op, p, *found, None)])
                return True
        sums = [producer(v, "prim.add") for v in op.operands]
        if None in sums or sums[0] is sums[1] \
                or not all(_only_use(s.results[0], op) for s in sums):
            return False
        for a in (0, 1):
            for c in (0, 1):
                p, q = producer(sums[0].operands[a], "prim.mul"), producer(sums[1].operands[c], "prim.mul")
                if p is None or q is None or not _only_use(p.results[0], sums[0]) \
                        or not _only_use(q.results[0], sums[1]) \
                        or not p.results[0].type == t == q.results[0].type \
                        or any(v.type != t for s in sums for v in s.operands):
                    continue
                found = _common(p, q)
                if found is None:
                    continue
                factored = self._factored(rw, op, p, *found, derived_name(op, 2))
                rest = rw.value(type(op), sums[0].operands[1 - a], sums[1].operands[1 - c],
                                before=op, result_types=[t], name=derived_name(op, 3))
                new = rw.value(type(op), factored, rest, before=op, result_types=[t])
                rw.replace_op(op, [new])
                return True
        return False

    @staticmethod
    def _factored(rw: Rewriter, op: Operation, mul: Operation, k, x, y, name: str | None):
        """k * (x + y), before ``op``; the product named ``name``."""
        t = op.results[0].type
        total = rw.value(type(op), x, y, before=op, result_types=[t], name=derived_name(op, 1))
        return rw.value(type(mul), k, total, before=op, result_types=[t], name=name)


PATTERNS = [ScaleOutOfProduct(), ScaleOutOfNeg(), FactorCommon()]

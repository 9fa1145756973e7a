"""A product is linear in each operand: the sum of two products that share one operand is
one product of the sum, ``dot(a, w) + dot(b, w) -> dot(a + b, w)``, as XLA's algebraic
simplifier factors a common dot operand out of an add.

A Laplacian in forward mode is the sum of one second derivative per input, each ending in a
product by the last layer's weights: the PINN's ``u_xx + u_yy`` was two [4096, 32] x [32, 1]
products, each reading a [4096, 32] value its kernel wrote.  Summed first, the kernel writes
one value and one product reads it.

The sum is added in another order than before (``(a + b) . w``, not ``a . w + b . w``):
results can differ in the last bits.
"""

from __future__ import annotations

from pir.ir.core import Operation
from pir.passes.canonicalize.matchers import derived_name, producer
from pir.passes.rewriter import RewritePattern, Rewriter

__all__ = ["PATTERNS"]

_DIMS = ("lhs_batching_dimensions", "rhs_batching_dimensions",
         "lhs_contracting_dimensions", "rhs_contracting_dimensions")


def _product(v) -> Operation | None:
    """The dot_general that makes ``v`` when ``v`` has no other use, else None."""
    owner = producer(v, "prim.dot_general")
    return owner if owner is not None and len(v.uses) == 1 else None


class AddOfProducts(RewritePattern):
    """add(dot(a, w), dot(b, w)) -> dot(add(a, b), w), and so for a shared lhs: both
    products the same contraction, a and b of one type, and each product used only by the
    add (else it stays, and the rewrite adds work)."""

    name = "prim-add-of-products"
    root = "prim.add"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        p, q = (_product(v) for v in op.operands)
        if p is None or q is None or p is q \
                or any(getattr(p, a) != getattr(q, a) for a in _DIMS) \
                or not p.results[0].type == q.results[0].type == op.results[0].type:
            return False
        for shared in (1, 0):  # rhs first: weights are the common operand of a layer
            if p.operands[shared] is not q.operands[shared]:
                continue
            a, b = p.operands[1 - shared], q.operands[1 - shared]
            if a.type != b.type:
                return False
            total = rw.value(type(op), a, b, before=op, result_types=[a.type],
                             name=derived_name(op, 1))
            pair = (total, p.operands[1]) if shared == 1 else (p.operands[0], total)
            new = rw.value(type(p), *pair, before=op, result_types=[op.results[0].type],
                           **{attr: getattr(p, attr) for attr in _DIMS})
            rw.replace_op(op, [new])
            return True
        return False


PATTERNS = [AddOfProducts()]

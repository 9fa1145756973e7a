"""Control flow decided before it runs: an ``nn.if`` whose condition is a constant is the
branch it takes.

Exporters test facts of the shapes in ``If`` conditions (Silero VAD: "does the input have
one channel?", "is it longer than 512 samples?"); where the import already folded the test
to a constant (the dims it reads are static), the other branch can never run.  Its ops move
before the ``nn.if``, in order, and the values it yields take the place of the results:
they are compiled with the rest of the function rather than run op by op inside a region,
and their types are the branch's own (often more precise than the join of both branches).
"""

from __future__ import annotations

import numpy as np

from pir.ir.core import Operation
from pir.ir.typerules import const_value
from pir.passes.rewriter import RewritePattern, Rewriter, is_function_output

__all__ = ["PATTERNS"]


class IfOfConstant(RewritePattern):
    """nn.if(constant cond) {then} {else} -> the ops of the branch taken, inline."""

    name = "nn-if-of-constant"
    root = "nn.if"

    def match_and_rewrite(self, op: Operation, rw: Rewriter) -> bool:
        cond = const_value(op.operands[0])
        if cond is None or cond.size != 1:
            return False
        block = (op.regions[0] if bool(np.asarray(cond).reshape(-1)[0]) else op.regions[1]).block
        term = block.terminator
        if term is None or len(term.operands) != len(op.results):
            return False
        yielded = list(term.operands)
        # a function output keeps its name: a yielded value that is an outer value or yielded
        # twice could not take it (rare; the if then stays)
        inner = {r for o in block.ops for r in o.results}
        for r, v in zip(op.results, yielded):
            if is_function_output(r) and (v not in inner or yielded.count(v) > 1):
                return False
        for inner_op in list(block.ops):
            if inner_op is term:
                continue
            block.remove(inner_op)
            rw.insert(inner_op, before=op)
        rw.replace_op(op, yielded)
        return True


PATTERNS = [IfOfConstant()]

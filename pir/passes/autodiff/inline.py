"""Inlining ``func.call`` before differentiating: a derivative goes through a call by
differentiating the callee's body in place (as JAX inlines its sub-jaxprs), so no rule is
needed for ``func.call`` and a function can call derivatives made by ``pir autodiff``, as a
physics-informed loss calls the Laplacian of its network."""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.core import Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import CallOp, FuncOp

__all__ = ["inline_calls"]

_MAX_DEPTH = 32


def inline_calls(module: ModuleOp, fn: FuncOp, depth: int = 0) -> int:
    """Replace every ``func.call`` in ``fn``'s body by a copy of the callee's body (callees
    that call are inlined first); gives the number of calls inlined.  The copies keep their
    names and locations, so derivative ops still point at the source."""
    from pir.passes.autodiff.transform import clone_op

    if depth > _MAX_DEPTH:
        raise PirError(f"calls nest deeper than {_MAX_DEPTH} (at @{fn.sym_name}): is a function "
                       "calling itself?")
    done = 0
    block = fn.entry
    for call in [op for op in block.ops if isinstance(op, CallOp)]:
        callee = module.lookup(call.callee.name)
        if not isinstance(callee, FuncOp):
            raise PirError(f"{call.describe()}: calls @{call.callee.name}, which the module does "
                           "not define")
        body = clone_op(callee, {})  # a private copy, inlined in its turn
        done += inline_calls(module, body, depth + 1)
        mapping: dict[Value, Value] = dict(zip(body.args, call.operands))
        at = block.index(call)
        for op in body.entry.ops[:-1]:
            new = clone_op(op, mapping)
            block.insert(at, new)
            at += 1
        outs = [mapping.get(v, v) for v in body.return_op.operands]
        for r, v in zip(call.results, outs):
            r.replace_all_uses_with(v)
        block.remove(call)
        done += 1
    return done

"""Symbolic dims of a CUDA kernel: those its inputs show, those the program binds, those a
reshape inside the group determines.

Unlike a TVM kernel, which learns every size from its buffers, a CUDA kernel takes its
symbolic dims as arguments, so a group may also use a dim that only the function's signature
binds (a ``[seq]`` broadcast of a scalar, a reshape to ``[batch, seq, 64]`` of ``[unk, 64]``
rows): the runtime knows it from the program's inputs.  Dims a reshape makes are solved as in
:mod:`pir.codegen.tvm.dims` (source count over the result's other dims).
"""

from __future__ import annotations

from pir.codegen.tvm.dims import Derived, symbols_of
from pir.errors import PirError
from pir.ir.core import Block
from pir.ir.types import TensorType

__all__ = ["kernel_dims"]


def kernel_dims(block: Block, bound: set[str]) -> tuple[list[str], dict[str, Derived]]:
    """(the dims passed as arguments, sorted; the dims computed in the kernel) of ``block``,
    where ``bound`` are the dims the program binds from its inputs."""
    shown = set().union(*(symbols_of(a.type) for a in block.args)) if block.args else set()
    passed = set(shown)
    derived: dict[str, Derived] = {}
    for op in block.ops:
        for r in op.results:
            new = symbols_of(r.type) - passed - set(derived)
            if not new:
                continue
            src = op.operands[0].type if op.operands else None
            if (op.name == "prim.reshape" and len(new) == 1 and isinstance(src, TensorType)
                    and src.shape is not None and None not in src.shape
                    and not (symbols_of(src) - passed - set(derived))):
                (sym,) = new
                if list(r.type.shape).count(sym) == 1 and None not in r.type.shape:
                    derived[sym] = (tuple(src.shape), tuple(d for d in r.type.shape if d != sym))
                    continue
            missing = sorted(new - bound)
            if missing:
                raise PirError(f"dim '{missing[0]}' of %{r.name} is neither a dim of an input "
                               "nor one the program binds, so the kernel cannot size it")
            passed |= new
    return sorted(passed), derived

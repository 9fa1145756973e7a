"""The evaluation table of the reference runtime: one numpy rule per op name.

A rule takes the op and its operand arrays (in operand order; an absent optional operand is
simply not there, see :func:`operand_arrays` for named access) and returns one array or a
tuple of arrays, one per result::

    @evaluates("nn.relu")
    def relu(op, x):
        return np.maximum(x, 0)

Rules of ops with regions (control flow) are registered with ``regions=True`` and receive the
interpreter as first argument, to run their blocks.  Rule modules live in
``pir/runtimes/reference/rules/``, one per op family.
"""

from __future__ import annotations

from pir.plugins import import_submodules

from contextvars import ContextVar
from typing import Any, Callable, Mapping

import numpy as np

from pir.ir.core import Operation
from pir.ir.opdef import split_groups

__all__ = ["EVAL", "REGION_EVAL", "evaluates", "operand_arrays", "bound_symbols", "SYMBOLS",
           "load_all"]

Rule = Callable[..., Any]
EVAL: dict[str, Rule] = {}
REGION_EVAL: dict[str, Rule] = {}


def evaluates(*names: str, regions: bool = False) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        table = REGION_EVAL if regions else EVAL
        for n in names:
            if n in EVAL or n in REGION_EVAL:
                raise ValueError(f"two evaluation rules for {n}")
            table[n] = fn
        return fn

    return register


#: The symbolic dims bound so far by the function being run ({"B": 3}), set by the
#: interpreter around each rule.  A rule whose result shape has a symbol that no operand shows
#: (``prim.broadcast_in_dim`` of a tensor<4xf32> to tensor<Bx4xf32>) reads its size here.
SYMBOLS: ContextVar[Mapping[str, int]] = ContextVar("pir_reference_symbols", default={})


def bound_symbols() -> Mapping[str, int]:
    """The sizes of the symbolic dims bound by the running function (empty when folding)."""
    return SYMBOLS.get()


def operand_arrays(op: Operation, arrays: tuple[np.ndarray, ...]) -> dict[str, Any]:
    """The operand arrays by declared operand name: an array, ``None`` for an absent
    optional operand, or a list for a variadic one."""
    defs = op.signature.operands
    spans = split_groups(defs, len(arrays), op.operand_segments)
    out: dict[str, Any] = {}
    for d, (start, stop) in zip(defs, spans):
        group = list(arrays[start:stop])
        out[d.name] = group if d.variadic else (group[0] if group else None)
    return out


def load_all() -> None:
    """Import every rule module (once)."""
    import_submodules("pir.runtimes.reference.rules")

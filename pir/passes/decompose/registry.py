"""The decomposition table: one rule per nn op, writing it with prim ops.

A rule takes a :class:`~pir.passes.decompose.builder.PrimBuilder` (which inserts prim ops
before the op being decomposed) and the op, and returns one value per result::

    @decomposes("nn.relu")
    def relu(b, op):
        return [b.max(op.x, b.zeros_like(op.x))]

A rule that cannot handle one instance (an unknown dim it would need, an attribute value it
does not cover) raises :class:`Keep` with the reason; the op then stays, and the pass says
so under ``decompose{explain}``.  Ops that no rule will ever lower are declared with
:func:`keep` and a reason, which docs/passes.md lists.  Rule modules live next to this file,
one per nn family, and are imported by :func:`load_rules`.
"""

from __future__ import annotations

from pir.plugins import import_submodules

from typing import Callable

__all__ = ["DECOMPOSE", "KEPT", "decomposes", "keep", "Keep", "load_rules"]

Rule = Callable[..., list]
DECOMPOSE: dict[str, Rule] = {}
#: nn ops that stay nn ops after decompose, with the reason.
KEPT: dict[str, str] = {}


class Keep(Exception):
    """Raised by a rule that cannot decompose this particular op; the op stays."""


def decomposes(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for n in names:
            if n in DECOMPOSE or n in KEPT:
                raise ValueError(f"two decomposition entries for {n}")
            DECOMPOSE[n] = fn
        return fn

    return register


def keep(name: str, why: str) -> None:
    if name in DECOMPOSE or name in KEPT:
        raise ValueError(f"two decomposition entries for {name}")
    KEPT[name] = why


def load_rules() -> None:
    """Import every ``rules_*`` module next to this file (once)."""
    import_submodules("pir.passes.decompose", "rules_")

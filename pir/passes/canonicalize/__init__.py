"""The canonicalize pass: algebraic simplification by named rewrite patterns."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import ClassVar

from pir.errors import PirError
from pir.ir.dialects.builtin import ModuleOp
from pir.passes.base import Pass
from pir.passes.canonicalize.registry import all_patterns
from pir.passes.rewriter import apply_patterns

__all__ = ["Canonicalize"]


@dataclass(frozen=True)
class Canonicalize(Pass):
    """Simplify with named rewrite patterns until none applies.

    Algebraic identities (x*1, x+0, --x ...), reshape and transpose chains, broadcasts that
    do nothing, redundant casts; dead ops are removed on the way.  `disable=` switches named
    patterns off; `stats` prints how often each pattern fired.
    """

    name: ClassVar[str] = "canonicalize"
    disable: tuple[str, ...] = field(default=(), metadata={"doc": "pattern names to skip"})
    stats: bool = field(default=False, metadata={"doc": "print how often each pattern fired"})

    def __post_init__(self) -> None:
        # Checked when the pipeline is parsed, before any input is read.
        known = {p.name for p in all_patterns()}
        unknown = [d for d in self.disable if d not in known]
        if unknown:
            raise PirError(f"pass 'canonicalize' option 'disable': unknown pattern "
                           f"'{unknown[0]}' (patterns: {', '.join(sorted(known))})")

    def apply(self, module: ModuleOp) -> bool:
        patterns = all_patterns()
        fired = apply_patterns(module, [p for p in patterns if p.name not in self.disable])
        if self.stats:
            for name, n in sorted(fired.items()):
                print(f"canonicalize: {name}: {n}", file=sys.stderr)
        return bool(fired)

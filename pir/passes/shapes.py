"""Shape inference and symbolic-dim propagation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pir.ir.dialects.builtin import ModuleOp
from pir.passes.base import Pass

__all__ = ["ShapeInference"]


@dataclass(frozen=True)
class ShapeInference(Pass):
    """Refine result types from the ops' type rules (placeholder: refined by a later commit)."""

    name: ClassVar[str] = "shapes"

    def apply(self, module: ModuleOp) -> None:
        return None

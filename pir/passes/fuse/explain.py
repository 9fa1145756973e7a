"""The ``explain`` report: for each producer -> consumer pair of neighbouring ops, whether
the pass fused them and why, then each horizontal attempt.  Deterministic: pairs come in
program order (consumers in order, each with its producers in operand order)."""

from __future__ import annotations

from pir.ir.core import Operation
from pir.passes.fuse.grouping import Decision

__all__ = ["explain_lines"]


def _show(op: Operation) -> str:
    r = op.results[0] if op.results else None
    name = f"%{r.name}" if r is not None and r.name else op.name
    return f"{name} ({op.name})" if r is not None else op.name


def explain_lines(func_name: str, decisions: list[Decision], groups: int) -> list[str]:
    lines = [f"fuse @{func_name}: {groups} group{'s' if groups != 1 else ''}"]
    for d in decisions:
        verdict = "fused" if d.fused else "not fused"
        if d.horizontal is not None:
            lines.append(f"  horizontal {_show(d.producer)} + {_show(d.consumer)} "
                         f"(both read %{d.horizontal.name}): {verdict}: {d.reason}")
        else:
            lines.append(f"  {_show(d.producer)} -> {_show(d.consumer)}: {verdict}: {d.reason}")
    return lines

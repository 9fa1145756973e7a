"""Markdown reference of a dialect's ops, generated from their declarations (docs/nn.md).

The declaration is the single source: ``python -m pir.ir.opdocs nn > docs/nn.md``, and a
test fails when the checked-in file is stale.
"""

from __future__ import annotations

import inspect
import sys

from pir.ir.core import OPS
from pir.ir.dialects import load_dialects
from pir.ir.opdef import REQUIRED
from pir.ir.printer import format_attr

__all__ = ["dialect_markdown"]


def _operand(d) -> str:
    mark = "..." if d.variadic else "?" if d.optional else ""
    types = f" ({', '.join(sorted(t.value for t in d.dtypes))})" if d.dtypes else ""
    return f"`{d.name}{mark}`{types}"


def dialect_markdown(dialect: str) -> str:
    load_dialects()
    ops = sorted((name, cls) for name, cls in OPS.items() if name.startswith(dialect + "."))
    lines = [f"# The `{dialect}` dialect", "",
             f"Generated from the op declarations by `python -m pir.ir.opdocs {dialect}`; "
             "do not edit by hand.", "",
             f"{len(ops)} ops. `x?` is an optional operand, `x...` a variadic one; attributes "
             "without a default are required.", ""]
    for name, cls in ops:
        sig = cls.signature
        doc = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        lines.append(f"## `{name}`")
        lines.append("")
        lines.append(doc or "(undocumented)")
        lines.append("")
        if sig.operands:
            lines.append("- operands: " + ", ".join(_operand(d) for d in sig.operands))
        if sig.attrs:
            attrs = []
            for a in sig.attrs.values():
                default = "" if a.default is REQUIRED or a.default is None else \
                    f" = {format_attr(a.default)}"
                attrs.append(f"`{a.name}`: {a.kind.name}{default}")
            lines.append("- attributes: " + ", ".join(attrs))
        if sig.results:
            lines.append("- results: " + ", ".join(_operand(d) for d in sig.results))
        if sig.regions:
            lines.append("- regions: " + ", ".join(f"`{r.name}`" for r in sig.regions))
        if cls.traits:
            lines.append("- traits: " + ", ".join(sorted(t.name for t in cls.traits)))
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(dialect_markdown(sys.argv[1] if len(sys.argv) > 1 else "nn"))

"""Value names and one-line op text, exactly as ``pir`` prints the function.

A diff line must name values the way the user sees them in the file, so the names come
from the printer's own namer (a value without a name hint, or whose hint clashes, gets the
same fallback name it has in the printed file).
"""

from __future__ import annotations

import io
import json

from pir.ir.core import Operation, Value
from pir.ir.dialects.func import FuncOp
from pir.ir.printer import Printer

__all__ = ["FunctionNames"]


class FunctionNames:
    """Printed names of every value of one function, and one-line renderings of its ops."""

    def __init__(self, fn: FuncOp):
        self._printer = Printer(io.StringIO())
        self._printer.func(fn)  # assigns every name in print order, as the file has them
        self._names = self._printer.namer.names

    def __call__(self, v: Value) -> str:
        name = self._names.get(v)
        return name if name is not None else "%<undefined>"

    def results(self, op: Operation) -> str:
        return ", ".join(self(r) for r in op.results)

    def op_line(self, op: Operation) -> str:
        """The op as its printed line, with any regions elided to ``{...}`` (their ops get
        lines of their own)."""
        p = self._printer
        text = f"{self.results(op)} = " if op.results else ""
        text += f"{op.name}({', '.join(self(v) for v in op.operands)})"
        if op.regions:
            text += " (" + ", ".join("{...}" for _ in op.regions) + ")"
        if op.attributes:
            text += " " + p.attr_dict(op.attributes)
        text += f" : ({p.types([v.type for v in op.operands])}) -> "
        if len(op.results) == 1:
            text += p.t(op.results[0].type)
        else:
            text += "(" + p.types([r.type for r in op.results]) + ")"
        return text + loc_text(op)


def loc_text(op: Operation) -> str:
    return f" loc({json.dumps(op.loc, ensure_ascii=False)})" if op.loc is not None else ""

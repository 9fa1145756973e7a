"""nn.identity: a copy of its operand."""

from __future__ import annotations

from pir.ir.dialects.nn.base import UnaryOp


class Identity(UnaryOp):
    """y = x.  The importer uses it where an output must carry a name of its own (an ONNX
    graph output that is a graph input, or the same value returned twice)."""

    name = "nn.identity"

"""The ONNX converter table: one converter per (domain, op type), filled by the family modules.

A converter takes a :class:`~pir.frontends.onnx.context.NodeContext` and returns the values
of the node's outputs (``None`` for an output the node does not produce).  Converters live in
one module per ONNX op family (``elementwise.py``, ``reduce.py`` ...), registered with::

    @converter("Relu")
    def relu(ctx):
        return [ctx.emit(nn.Relu, ctx.input(0))]

Opset differences are handled inside the converter (``ctx.opset``): every converter produces
the ``nn`` op of the newest ONNX semantics.
"""

from __future__ import annotations

from pir.plugins import import_submodules

from typing import Callable

__all__ = ["CONVERTERS", "converter", "DEFAULT_DOMAINS", "load_all"]

#: ONNX's default domain has two spellings.
DEFAULT_DOMAINS = ("", "ai.onnx")

Converter = Callable[..., list]

#: (domain, op_type) -> converter.  The default domain is stored as "".
CONVERTERS: dict[tuple[str, str], Converter] = {}


def converter(*op_types: str, domain: str = "") -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for t in op_types:
            key = (domain, t)
            if key in CONVERTERS:
                raise ValueError(f"two converters for ONNX {domain or 'ai.onnx'}::{t}")
            CONVERTERS[key] = fn
        return fn

    return register


def load_all() -> None:
    """Import every family module of ``pir.frontends.onnx.ops`` so its converters register."""
    import_submodules("pir.frontends.onnx.ops")

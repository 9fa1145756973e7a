"""Kernel symbols of a bounded length.

Symbols are made from value names, and exporters make long ones: tf2onnx joins a node's
scope path (``model_1_re_lu_3_Relu_..._conv2d_4_Conv2D1``), and fused groups join several.
A symbol also names a file (``pir codegen --emit-sources`` writes ``SYMBOL.cu``), and a
file name may not pass 255 bytes: basic-pitch's transcriber made one that did.  A symbol
longer than MAX_SYMBOL keeps its start and ends in a hash of the whole, so equal names
still give equal symbols and different ones (almost surely) different.
"""

from __future__ import annotations

import hashlib

__all__ = ["MAX_SYMBOL", "bounded"]

#: The most characters of a kernel symbol.
MAX_SYMBOL = 96


def bounded(symbol: str) -> str:
    """``symbol`` itself when short enough, else its first characters, ``_``, and 12 hex
    digits of its sha256 (MAX_SYMBOL in all)."""
    if len(symbol) <= MAX_SYMBOL:
        return symbol
    digest = hashlib.sha256(symbol.encode()).hexdigest()[:12]
    return f"{symbol[:MAX_SYMBOL - 13]}_{digest}"

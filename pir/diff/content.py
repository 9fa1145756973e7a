"""What two ops' attributes and constants *mean*, as hashable keys that ignore spelling.

A diff must not report what does not change a program: a constant moved from an inline
``dense<...>`` to the resource section, a resource renamed, an attribute written out with its
default value.  So constants compare by content (dtype, shape and the SHA-256 of their bytes,
the same digest the resource section stores), and attributes compare with their declared
defaults filled in.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from pir.ir.attributes import DenseAttr, ResourceRef, SymbolRef
from pir.ir.core import Operation, attr_or_default
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.types import DType, Type

__all__ = ["Digest", "Contents"]


@dataclass(frozen=True)
class Digest:
    """A tensor's identity: element type, shape and the SHA-256 of its little-endian bytes."""

    dtype: str
    shape: tuple[int, ...]
    sha256: str

    def header(self) -> str:
        """``f32[784,256] sha256:1a2b3c4d5e6f``, as the resource section spells the header."""
        return f"{self.dtype}[{','.join(map(str, self.shape))}] sha256:{self.sha256[:12]}"


def _digest(array: np.ndarray) -> Digest:
    try:
        dtype = DType.from_numpy(array.dtype).value
    except (TypeError, ValueError):
        dtype = str(array.dtype)
    if array.dtype == object:  # strings: their text is their content
        data = repr(array.tolist()).encode("utf-8", "surrogateescape")
    else:
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        data = np.ascontiguousarray(array).tobytes()
    return Digest(dtype, tuple(int(d) for d in array.shape), hashlib.sha256(data).hexdigest())


class Contents:
    """Digests and canonical attribute keys for the ops of one module (cached: weights are
    hashed once however many constants share them)."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self._resources: dict[str, Digest] = {}

    def resource(self, key: str) -> Digest | None:
        d = self._resources.get(key)
        if d is None and key in self.module.resources:
            d = self._resources[key] = _digest(self.module.resources[key])
        return d

    def tensor(self, value: DenseAttr | ResourceRef) -> Any:
        """A constant's content key; a dangling resource keys on its name."""
        if isinstance(value, DenseAttr):
            return _digest(value.array)
        return self.resource(value.key) or ("missing-resource", value.key)

    def canon(self, v: Any) -> Any:
        """A hashable key equal for two attribute values exactly when they mean the same."""
        if isinstance(v, bool):
            return ("bool", v)
        if isinstance(v, int):
            return ("int", v)
        if isinstance(v, float):
            return ("float", v.hex())  # NaN equals NaN, -0.0 differs from 0.0
        if isinstance(v, str):
            return ("str", v)
        if isinstance(v, tuple):
            return ("list", tuple(self.canon(x) for x in v))
        if isinstance(v, DType):
            return ("dtype", v.value)
        if isinstance(v, Type):
            return ("type", str(v))
        if isinstance(v, (DenseAttr, ResourceRef)):
            return ("tensor", self.tensor(v))
        if isinstance(v, SymbolRef):
            return ("symbol", v.name)
        return ("other", repr(v))

    def attributes(self, op: Operation) -> dict[str, Any]:
        """The op's attributes with declared defaults filled in, as canonical keys."""
        keys = set(op.attributes) | set(op.signature.attrs)
        out = {}
        for k in sorted(keys):
            v = op.attributes[k] if k in op.attributes else attr_or_default(op, k)
            if v is not None:
                out[k] = self.canon(v)
        if op.operand_segments is not None:
            out["operand_segments"] = ("list", tuple(op.operand_segments))
        return out

    def attr_key(self, op: Operation) -> tuple:
        return tuple(self.attributes(op).items())

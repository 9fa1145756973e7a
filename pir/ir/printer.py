"""Prints a module as ``.pir`` text (the grammar is in docs/ir.md).

The output is deterministic: the same module always prints the same bytes.  Value names come
from the values' name hints; a clash or a missing hint gets a deterministic fallback, so a
value that keeps its hint through a pass keeps its printed name.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any, BinaryIO

import numpy as np

from pir.ir.attributes import DenseAttr, ResourceRef, SymbolRef
from pir.ir.core import Block, Operation, Region, Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.opdef import Terminator
from pir.ir.resources import write_resources
from pir.ir.types import DType, Type


__all__ = ["print_module", "write_module", "format_attr", "format_name"]

_BARE_NAME = re.compile(r"[A-Za-z0-9_.$/-]+\Z")
_INDENT = "  "


def format_name(name: str) -> str:
    """A value or symbol name, quoted when it holds characters the lexer would split on."""
    return name if _BARE_NAME.match(name) else json.dumps(name, ensure_ascii=False)


def format_float(v: float, dtype: DType | None = None) -> str:
    """The shortest text that reads back as the same value.

    Elements of f16 and f32 tensors print as their own shortest repr; attribute floats (no
    dtype) that are exact f32 values print as the f32 repr too, since ONNX stores them as f32.
    """
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if dtype is DType.F16:
        return _float_text(str(np.float16(v)))
    if dtype is DType.F32 or (dtype is None and float(np.float32(v)) == v):
        return _float_text(str(np.float32(v)))
    return repr(float(v))


def _float_text(s: str) -> str:
    return s if any(c in s for c in ".eni") else s + ".0"


def _format_scalar(x: Any, dtype: DType) -> str:
    if dtype is DType.BOOL:
        return "true" if x else "false"
    if dtype is DType.STRING:
        return json.dumps(x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else str(x),
                          ensure_ascii=False)
    if dtype in (DType.C64, DType.C128):
        return f"({format_float(float(x.real), DType.F64)}, {format_float(float(x.imag), DType.F64)})"
    if dtype.is_float:
        return format_float(float(x), dtype if dtype in (DType.F16, DType.F64) else DType.F32)
    return str(int(x))


def format_dense(d: DenseAttr) -> str:
    arr = d.array
    dtype = DType.from_numpy(arr.dtype)
    flat = arr.reshape(-1)
    if flat.size > 1 and dtype is not DType.STRING and _all_equal(flat):
        body = _format_scalar(flat[0], dtype)  # splat: one value fills the shape
    elif arr.ndim == 0:
        body = _format_scalar(arr[()], dtype)
    else:
        body = _nested(arr, dtype)
    return f"dense<{body}> : {d.type}"


def _all_equal(flat: np.ndarray) -> bool:
    return flat.tobytes() == np.repeat(flat[:1], flat.size).tobytes()


def _nested(arr: np.ndarray, dtype: DType) -> str:
    if arr.ndim == 1:
        return "[" + ", ".join(_format_scalar(x, dtype) for x in arr) + "]"
    return "[" + ", ".join(_nested(a, dtype) for a in arr) + "]"


def format_attr(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, tuple):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if isinstance(v, DType):
        return v.value
    if isinstance(v, Type):
        return str(v)
    if isinstance(v, DenseAttr):
        return format_dense(v)
    if isinstance(v, ResourceRef):
        return f"resource<{json.dumps(v.key, ensure_ascii=False)}>"
    if isinstance(v, SymbolRef):
        return "@" + format_name(v.name)
    raise TypeError(f"cannot print attribute value {v!r}")


class _Namer:
    """Assigns each value of one function a unique printed name."""

    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def name(self, v: Value) -> str:
        n = self.names.get(v)
        if n is None:
            n = self._assign(v)
        return n

    def _assign(self, v: Value) -> str:
        hint = v.name
        if hint is not None and hint not in self.taken:
            text = hint
        elif hint is not None:
            k = 1
            while f"{hint}_{k}" in self.taken:
                k += 1
            text = f"{hint}_{k}"
        else:
            while str(self.counter) in self.taken:
                self.counter += 1
            text = str(self.counter)
            self.counter += 1
        self.taken.add(text)
        out = "%" + format_name(text)
        self.names[v] = out
        return out


class Printer:
    def __init__(self, out: io.StringIO):
        self.out = out
        self.type_text: dict[Type, str] = {}
        self.namer = _Namer()

    def t(self, ty: Type) -> str:
        s = self.type_text.get(ty)
        if s is None:
            s = self.type_text[ty] = str(ty)
        return s

    def types(self, types: list[Type]) -> str:
        return ", ".join(self.t(x) for x in types)

    def module(self, m: ModuleOp) -> None:
        w = self.out.write
        extra = {k: v for k, v in m.attributes.items() if k != "sym_name"}
        w("module")
        if m.sym_name:
            w(" @" + format_name(m.sym_name))
        if extra:
            w(" attributes " + self.attr_dict(extra))
        w(" {\n")
        for op in m.body.block.ops:
            if isinstance(op, FuncOp):
                self.func(op)
            else:
                self.op(op, 1)
        w("}\n")

    def func(self, fn: FuncOp) -> None:
        self.namer = _Namer()
        w = self.out.write
        args = ", ".join(f"{self.namer.name(a)}: {self.t(a.type)}" for a in fn.entry.args)
        # the outputs keep their names: a value a rewrite named alike (an `x.1` next to an
        # exported `x.1`) takes the suffix, not the output
        ret = fn.entry.ops[-1] if fn.entry.ops else None
        if ret is not None and Terminator in ret.traits:
            for v in ret.operands:
                if v.name is not None:
                    self.namer.name(v)
        outs = self.types(list(fn.function_type.outputs))
        w(f"{_INDENT}func.func @{format_name(fn.sym_name)}({args}) -> ({outs})")
        extra = {k: v for k, v in fn.attributes.items() if k not in ("sym_name", "function_type")}
        if extra:
            w(" attributes " + self.attr_dict(extra))
        if fn.loc is not None:
            w(f" loc({json.dumps(fn.loc, ensure_ascii=False)})")
        w(" {\n")
        for op in fn.entry.ops:
            self.op(op, 2)
        w(f"{_INDENT}}}\n")

    def attr_dict(self, attrs: dict[str, Any]) -> str:
        items = ", ".join(f"{format_name(k)} = {format_attr(v)}" for k, v in attrs.items())
        return "{" + items + "}"

    def op(self, op: Operation, depth: int) -> None:
        w = self.out.write
        name = self.namer.name
        w(_INDENT * depth)
        if op.results:
            w(", ".join(name(r) for r in op.results))
            w(" = ")
        w(op.name)
        w("(")
        w(", ".join(name(v) for v in op.operands))
        w(")")
        if op.regions:
            w(" (")
            for i, r in enumerate(op.regions):
                if i:
                    w(", ")
                self.region(r, depth)
            w(")")
        attrs = op.attributes
        if op.operand_segments is not None or op.result_segments is not None:
            attrs = dict(attrs)
            if op.operand_segments is not None:
                attrs["operand_segments"] = tuple(op.operand_segments)
            if op.result_segments is not None:
                attrs["result_segments"] = tuple(op.result_segments)
        if attrs:
            w(" ")
            w(self.attr_dict(attrs))
        w(" : (")
        w(self.types([v.type for v in op.operands]))
        w(") -> ")
        if len(op.results) == 1:
            w(self.t(op.results[0].type))
        else:
            w("(" + self.types([r.type for r in op.results]) + ")")
        if op.loc is not None:
            w(" loc(")
            w(json.dumps(op.loc, ensure_ascii=False))
            w(")")
        w("\n")

    def region(self, region: Region, depth: int) -> None:
        w = self.out.write
        w("{\n")
        labels = len(region.blocks) > 1 or any(b.args for b in region.blocks)
        for i, block in enumerate(region.blocks):
            if labels:
                self.block_label(block, i, depth)
            for op in block.ops:
                self.op(op, depth + 1)
        w(_INDENT * depth + "}")

    def block_label(self, block: Block, index: int, depth: int) -> None:
        args = ", ".join(f"{self.namer.name(a)}: {self.t(a.type)}" for a in block.args)
        self.out.write(f"{_INDENT * depth}^bb{index}({args}):\n")


def print_module(m: ModuleOp, resources: bool = True) -> str:
    """The module as text; with ``resources``, followed by its resource section."""
    buf = io.StringIO()
    Printer(buf).module(m)
    text = buf.getvalue()
    if resources and m.resources:
        out = io.BytesIO()
        write_resources(m.resources, out)
        text += out.getvalue().decode("utf-8")  # keys may be any text; the data are ASCII
    return text


def write_module(m: ModuleOp, out: BinaryIO) -> None:
    """Write the module, resources included, to a binary stream (the fast path for files)."""
    buf = io.StringIO()
    Printer(buf).module(m)
    out.write(buf.getvalue().encode("utf-8"))
    write_resources(m.resources, out)

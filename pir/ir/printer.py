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

from pir.errors import PirError
from pir.ir.attributes import DenseAttr, ResourceRef, SymbolRef
from pir.ir.core import Block, Operation, Region, Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.opdef import Terminator
from pir.ir.resources import write_resources
from pir.ir.types import DType, FunctionType, Type
from pir.limits import MAX_NESTING


__all__ = ["print_module", "write_module", "format_attr", "format_name"]

_BARE_NAME = re.compile(r"[A-Za-z0-9_.$/-]+\Z")
_INDENT = "  "


def format_name(name: str) -> str:
    """A value or symbol name, quoted when it holds characters the lexer would split on."""
    return name if _BARE_NAME.match(name) else json.dumps(name, ensure_ascii=False)


def format_float(v: float, dtype: DType | None = None) -> str:
    """The shortest text that reads back as the same value.

    Elements of f16 and f32 tensors print as their own shortest repr; attribute floats (no
    dtype) that are exact f32 values print with the f32's shortest digits too, since ONNX
    stores them as f32, but in Python's notation, the one the float they read back as prints
    in: the f32 -106956392.0 prints as -106956390.0 (numpy would write -1.0695639e+08), which
    prints as itself again.
    """
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if dtype is DType.F16:
        return _float_text(str(np.float16(v)))
    if dtype is DType.F32:
        return _float_text(str(np.float32(v)))
    if dtype is None and float(np.float32(v)) == v:
        return repr(float(str(np.float32(v))))
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


def format_dense(d: DenseAttr, depth: int = 0) -> str:
    """``dense<...> : type``; ``depth`` is the nesting around it (see format_attr)."""
    arr = d.array
    dtype = DType.from_numpy(arr.dtype)
    flat = arr.reshape(-1)
    levels = 1 if dtype in (DType.C64, DType.C128) else 0  # a complex element's "(re, im)"
    if flat.size == 0:
        # no elements, whatever the shape: walking the rows of a [2**32, 0] array would
        # print 2**32 "[]"s (the parser takes "[]" for any shape with a zero dim)
        _check_depth(depth + 1)
        return f"dense<[]> : {d.type}"
    if flat.size > 1 and dtype is not DType.STRING and _all_equal(flat):
        _check_depth(depth + levels)
        body = _format_scalar(flat[0], dtype)  # splat: one value fills the shape
    elif arr.ndim == 0:
        _check_depth(depth + levels)
        body = _format_scalar(arr[()], dtype)
    else:
        _check_depth(depth + levels + arr.ndim)
        body = _nested(arr, dtype)
    return f"dense<{body}> : {d.type}"


_TOO_DEEP = (f"cannot print nesting deeper than {MAX_NESTING} levels (regions, arrays and "
             "dense literals together): it could not be parsed back")


def _check_depth(depth: int) -> None:
    """Printing stops where parsing would: what nests deeper than the parser accepts could
    not be read back (and the printer, too, recurses once per level)."""
    if depth > MAX_NESTING:
        raise PirError(_TOO_DEEP)


def _all_equal(flat: np.ndarray) -> bool:
    return flat.tobytes() == np.repeat(flat[:1], flat.size).tobytes()


def _nested(arr: np.ndarray, dtype: DType) -> str:
    if arr.ndim == 1:
        return "[" + ", ".join(_format_scalar(x, dtype) for x in arr) + "]"
    return "[" + ", ".join(_nested(a, dtype) for a in arr) + "]"


def format_attr(v: Any, depth: int = 0) -> str:
    """An attribute value as text; ``depth`` is how many levels (regions, arrays) enclose
    it, counted like the parser counts them (Parser.nest), so as to stop at its limit."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, tuple):
        _check_depth(depth + 1)
        return "[" + ", ".join(format_attr(x, depth + 1) for x in v) + "]"
    if isinstance(v, DType):
        return v.value
    if isinstance(v, Type):
        return str(v)
    if isinstance(v, DenseAttr):
        return format_dense(v, depth)
    if isinstance(v, FunctionType):
        _check_depth(depth + 1)
        return str(v)
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
        self.nesting = 0  # regions open now, counted like the parser counts them

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
        items = []
        for k, v in attrs.items():
            try:
                items.append(f"{format_name(k)} = {format_attr(v, self.nesting)}")
            except PirError as e:
                raise PirError(f"attribute '{k}': {e.message}") from None
        return "{" + ", ".join(items) + "}"

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
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise PirError(f"{region.parent.describe()}: {_TOO_DEEP}")
        w = self.out.write
        w("{\n")
        labels = len(region.blocks) > 1 or any(b.args for b in region.blocks)
        for i, block in enumerate(region.blocks):
            if labels:
                self.block_label(block, i, depth)
            for op in block.ops:
                self.op(op, depth + 1)
        w(_INDENT * depth + "}")
        self.nesting -= 1

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
    try:
        out.write(buf.getvalue().encode("utf-8"))
        write_resources(m.resources, out)
    except UnicodeEncodeError as e:  # a lone surrogate, which no UTF-8 file can hold
        raise PirError(f"cannot write the module as UTF-8 text: {e.object[e.start]!r} is a "
                       "lone surrogate (from a name, location or string that is not "
                       "unicode text)") from None


class _NameRecorder(Printer):
    """A printer that keeps the name it gave each value."""

    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.printed: dict[Value, str] = {}

    def func(self, fn: FuncOp) -> None:
        super().func(fn)
        self.printed.update(self.namer.names)


def settle_names(m: ModuleOp) -> None:
    """Give every value of ``m`` the name it prints with (a region's ``%x`` beside its
    function's ``%x`` prints as ``%x_1``), so that what is made from value names, such as a
    kernel's source, is the same for the module in memory and for the module parsed back
    from its text."""
    recorder = _NameRecorder()
    recorder.module(m)
    for v, text in recorder.printed.items():
        v.name = json.loads(text[1:]) if text.startswith('%"') else text[1:]

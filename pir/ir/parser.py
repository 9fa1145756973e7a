"""Parses ``.pir`` text back into a module (the grammar is in docs/ir.md).

Errors carry ``file:line:col`` and a caret.  The resource section is read straight from the
file's bytes (it can hold hundreds of MB of base64), never through the tokenizer.
"""

from __future__ import annotations

import gc
import json
import mmap
import os
from typing import Any

import numpy as np

from pir.errors import PirError
from pir.ir.attributes import DenseAttr, ResourceRef, SymbolRef
from pir.ir.core import OPS, Block, Operation, Region, Value
from pir.ir.dialects import load_dialects
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.lexer import SourceMap, TextPos, token_kind, tokenize
from pir.ir.resources import read_resources
from pir.ir.types import (
    DIALECT_TYPES,
    DType,
    FunctionType,
    IndexType,
    TensorType,
    Type,
    parse_tensor_body,
)


__all__ = ["parse_module", "parse_file", "parse_file_bytes"]

_SEGMENT_ATTRS = ("operand_segments", "result_segments")


def _unquote(text: str) -> str:
    return json.loads(text) if text.startswith('"') else text


class Parser:
    """Recursive descent over token strings; ``self.i`` indexes the next token, and errors
    name a token by its index (its offset is only computed when an error is raised)."""

    def __init__(self, text: str, filename: str):
        load_dialects()
        self.src = SourceMap(text, filename)
        self.toks, self.offsets = tokenize(text, self.src)
        self.i = 0
        self.type_cache: dict[str, Type] = {}
        self.scopes: list[dict[str, Value]] = []

    # -- token helpers -----------------------------------------------------------------------

    def error(self, message: str, at: int | None = None) -> PirError:
        return self.src.error(message, self.offsets[self.i if at is None else at])

    def peek(self) -> str:
        return self.toks[self.i]

    def next(self) -> str:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.toks[self.i]
        if tok != text:
            found = f"'{tok}'" if tok else "end of input"
            raise self.error(f"expected '{text}', found {found}")
        self.i += 1

    def accept(self, text: str) -> bool:
        if self.toks[self.i] == text:
            self.i += 1
            return True
        return False

    # -- types -------------------------------------------------------------------------------

    def parse_type(self) -> Type:
        tok = self.toks[self.i]
        ty = self.type_cache.get(tok)
        if ty is not None:
            self.i += 1
            return ty
        if tok.startswith("tensor<"):
            ty = self.type_cache[tok] = self._tensor_type(tok)
            self.i += 1
            return ty
        if tok[:1] == "!":
            ty = self.type_cache[tok] = self._dialect_type(tok)
            self.i += 1
            return ty
        if tok == "index":
            self.i += 1
            return IndexType()
        if tok == "(":  # a function type
            ins = self.type_list()
            self.expect("->")
            outs = self.type_list()
            return FunctionType(tuple(ins), tuple(outs))
        raise self.error(f"expected a type, found '{tok}'")

    def _tensor_type(self, tok: str) -> TensorType:
        try:
            return parse_tensor_body(tok[len("tensor<") : -1])
        except (TypeError, ValueError) as e:
            raise self.error(f"bad tensor type '{tok}': {e}") from None

    def _dialect_type(self, tok: str) -> Type:
        """``!dialect.name<body>``, parsed by the dialect that declared it."""
        name, body = tok[1:].split("<", 1)
        parse = DIALECT_TYPES.get(name)
        if parse is None:
            raise self.error(f"unknown type '!{name}'")
        try:
            return parse(body[:-1])
        except (TypeError, ValueError) as e:
            raise self.error(f"bad type '{tok}': {e}") from None

    def type_list(self) -> list[Type]:
        self.expect("(")
        types: list[Type] = []
        if self.accept(")"):
            return types
        while True:
            types.append(self.parse_type())
            if self.accept(")"):
                return types
            self.expect(",")

    def result_types(self) -> list[Type]:
        if self.toks[self.i] == "(":
            return self.type_list()
        return [self.parse_type()]

    # -- attributes --------------------------------------------------------------------------

    def attr_dict(self) -> dict[str, Any]:
        self.expect("{")
        attrs: dict[str, Any] = {}
        if self.accept("}"):
            return attrs
        while True:
            tok = self.peek()
            if token_kind(tok) not in ("IDENT", "STRING"):
                raise self.error(f"expected an attribute name, found '{tok}'")
            self.i += 1
            self.expect("=")
            attrs[_unquote(tok)] = self.attr_value()
            if self.accept("}"):
                return attrs
            self.expect(",")

    def attr_value(self) -> Any:
        t = self.peek()
        k = token_kind(t)
        if k in ("TENSOR", "TYPE") or t == "(":
            return self.parse_type()
        self.i += 1
        if k == "NUMBER":
            return float(t) if ("." in t or "e" in t or "E" in t) else int(t)
        if k == "STRING":
            return json.loads(t)
        if k == "SYMBOL":
            return SymbolRef(_unquote(t[1:]))
        if t == "[":
            items = []
            if self.accept("]"):
                return ()
            while True:
                items.append(self.attr_value())
                if self.accept("]"):
                    return tuple(items)
                self.expect(",")
        if k == "IDENT":
            if t == "true":
                return True
            if t == "false":
                return False
            if t in ("inf", "-inf", "nan"):
                return float(t)
            if t == "dense":
                return self.dense()
            if t == "resource":
                self.expect("<")
                key = self.peek()
                if token_kind(key) != "STRING":
                    raise self.error("expected a resource key string")
                self.i += 1
                self.expect(">")
                return ResourceRef(json.loads(key))
            if t == "index":
                return IndexType()
            try:
                return DType.parse(t)
            except ValueError:
                pass
        raise self.error(f"expected an attribute value, found '{t}'", self.i - 1)

    def dense(self) -> DenseAttr:
        start = self.i
        self.expect("<")
        value = self._dense_elems()
        self.expect(">")
        self.expect(":")
        at = self.i
        ty = self.parse_type()
        if not isinstance(ty, TensorType) or not ty.is_static:
            raise self.error("a dense attribute needs a static tensor type", at)
        try:
            arr = _dense_array(value, ty)
        except (ValueError, TypeError, OverflowError) as e:
            raise self.error(f"bad dense attribute: {e}", start) from None
        return DenseAttr(arr)

    def _dense_elems(self) -> Any:
        tok = self.next()
        if tok == "[":
            items = []
            if self.accept("]"):
                return items
            while True:
                items.append(self._dense_elems())
                if self.accept("]"):
                    return items
                self.expect(",")
        if tok == "(":  # complex: (re, im)
            at = self.i - 1
            re_ = self._dense_elems()
            self.expect(",")
            im = self._dense_elems()
            self.expect(")")
            if not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in (re_, im)):
                raise self.error("a complex element is (real, imaginary), two numbers", at)
            return complex(re_, im)
        kind = token_kind(tok)
        if kind == "NUMBER":
            return float(tok) if ("." in tok or "e" in tok or "E" in tok) else int(tok)
        if kind == "STRING":
            return json.loads(tok)
        if tok in ("true", "false"):
            return tok == "true"
        if tok in ("inf", "-inf", "nan"):
            return float(tok)
        raise self.error(f"expected a tensor element, found '{tok}'", self.i - 1)

    # -- values ------------------------------------------------------------------------------

    def define(self, at: int, value: Value) -> None:
        name = _unquote(self.toks[at][1:])
        scope = self.scopes[-1]
        if name in scope or any(name in s for s in self.scopes[:-1]):
            raise self.error(f"value %{name} is defined twice", at)
        value.name = name
        scope[name] = value

    def lookup(self, at: int) -> Value:
        name = self.toks[at][1:]
        if name[:1] == '"':
            name = json.loads(name)
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                return v
        if self._defined_later(name, at):
            raise self.error(f"value %{name} is used before it is defined", at)
        raise self.error(f"undefined value %{name}", at)

    def _defined_later(self, name: str, start: int) -> bool:
        """Whether %name is defined somewhere after token ``start`` (for a better error)."""
        toks = self.toks
        for j in range(start + 1, len(toks) - 1):
            t = toks[j]
            if t[:1] != "%" or _unquote(t[1:]) != name:
                continue
            k = j + 1
            while toks[k] == "," and toks[k + 1][:1] == "%":
                k += 2  # walk a result list: %a, %b = ...
            if toks[k] in ("=", ":"):
                return True
        return False

    # -- structure ---------------------------------------------------------------------------

    def parse_module(self) -> ModuleOp:
        tok = self.peek()
        if tok != "module":
            raise self.error(f"expected 'module', found '{tok}'")
        self.i += 1
        name = ""
        if self.peek()[:1] == "@":
            name = _unquote(self.next()[1:])
        attrs = {}
        if self.accept("attributes"):
            attrs = self.attr_dict()
        module = ModuleOp.create(name, attrs)
        module.text_pos = TextPos(self.src, self.offsets, 0)
        self.expect("{")
        while not self.accept("}"):
            tok = self.peek()
            if tok == "func.func":
                module.body.block.append(self.parse_func())
            elif not tok:
                raise self.error("expected '}' to close the module")
            else:
                self.scopes = [{}]
                module.body.block.append(self.parse_op())
        if self.peek():
            raise self.error(f"unexpected '{self.peek()}' after the module")
        return module

    def parse_func(self) -> FuncOp:
        start = self.i
        self.i += 1
        if self.peek()[:1] != "@":
            raise self.error("expected a function name like @main")
        sym = self.next()
        self.scopes = [{}]
        self.expect("(")
        arg_at: list[int] = []
        arg_types: list[Type] = []
        if not self.accept(")"):
            while True:
                if self.peek()[:1] != "%":
                    raise self.error(f"expected an argument like %x, found '{self.peek()}'")
                arg_at.append(self.i)
                self.i += 1
                self.expect(":")
                arg_types.append(self.parse_type())
                if self.accept(")"):
                    break
                self.expect(",")
        self.expect("->")
        outs = self.type_list()
        attrs = {}
        if self.accept("attributes"):
            attrs = self.attr_dict()
        loc = self.loc()
        fn = FuncOp.create(_unquote(sym[1:]), arg_types, outs, loc=loc)
        for k, v in attrs.items():
            fn.attributes[k] = v
        fn.text_pos = TextPos(self.src, self.offsets, start)
        for at, arg in zip(arg_at, fn.entry.args):
            self.define(at, arg)
        self.expect("{")
        self.block_body(fn.entry)
        return fn

    def block_body(self, block: Block) -> None:
        while not self.accept("}"):
            tok = self.peek()
            if not tok:
                raise self.error("expected '}' to close the block")
            if tok[:1] == "^":
                raise self.error("a block label must start a region's block")
            block.append(self.parse_op())

    def region(self) -> Region:
        self.expect("{")
        region = Region()
        self.scopes.append({})
        if self.peek()[:1] != "^":
            block = region.add_block(Block())
            self.block_body(block)
        else:
            while self.peek()[:1] == "^":
                self.i += 1
                block = region.add_block(Block())
                self.expect("(")
                if not self.accept(")"):
                    while True:
                        if self.peek()[:1] != "%":
                            raise self.error("expected a block argument like %x")
                        at = self.i
                        self.i += 1
                        self.expect(":")
                        self.define(at, block.add_arg(self.parse_type()))
                        if self.accept(")"):
                            break
                        self.expect(",")
                self.expect(":")
                while self.peek()[:1] != "^" and self.peek() not in ("}", ""):
                    block.append(self.parse_op())
            self.expect("}")
        self.scopes.pop()
        return region

    def loc(self) -> str | None:
        if self.toks[self.i] != "loc":
            return None
        self.i += 1
        self.expect("(")
        tok = self.peek()
        if tok[:1] != '"':
            raise self.error("expected a location string")
        self.i += 1
        self.expect(")")
        return json.loads(tok)

    def parse_op(self) -> Operation:
        toks = self.toks
        result_at: list[int] = []
        if toks[self.i][:1] == "%":
            while True:
                result_at.append(self.i)
                self.i += 1
                if self.accept("="):
                    break
                self.expect(",")
        name_at = self.i
        name = toks[name_at]
        cls = OPS.get(name)
        if cls is None:
            if token_kind(name) != "IDENT":
                raise self.error(f"expected an op name, found '{name}'")
            raise self.error(f"unknown op '{name}'")
        self.i += 1
        self.expect("(")
        operands: list[Value] = []
        if not self.accept(")"):
            lookup = self.lookup
            while True:
                if toks[self.i][:1] != "%":
                    raise self.error(f"expected an operand like %x, found '{toks[self.i]}'")
                operands.append(lookup(self.i))
                self.i += 1
                if self.accept(")"):
                    break
                self.expect(",")
        regions: list[Region] = []
        if toks[self.i] == "(":
            self.i += 1
            while True:
                regions.append(self.region())
                if self.accept(")"):
                    break
                self.expect(",")
        attrs: dict[str, Any] = {}
        if toks[self.i] == "{":
            attrs = self.attr_dict()
        self.expect(":")
        type_at = self.i
        in_types = self.type_list()
        self.expect("->")
        out_types = self.result_types()
        loc = self.loc()
        if len(in_types) != len(operands):
            raise self.error(f"{cls.name} has {len(operands)} operands but its type lists "
                             f"{len(in_types)}", type_at)
        for k, (v, t) in enumerate(zip(operands, in_types)):
            if v.type != t:
                raise self.error(f"operand {k} of {cls.name} is %{v.name} of type {v.type}, "
                                 f"but the op's type says {t}", type_at)
        if len(out_types) != len(result_at):
            raise self.error(f"{cls.name} defines {len(result_at)} results but its type "
                             f"lists {len(out_types)}", type_at)
        segs = [tuple(attrs.pop(k)) if k in attrs else None for k in _SEGMENT_ATTRS]
        try:
            op = cls(operands, out_types, attrs, regions, loc,
                     operand_segments=segs[0], result_segments=segs[1])
        except PirError as e:
            raise self.error(e.message, name_at) from None
        op.text_pos = TextPos(self.src, self.offsets, name_at)
        for at, r in zip(result_at, op.results):
            self.define(at, r)
        return op


def _check_integral(value: Any, ty: TensorType) -> None:
    """Integer and boolean tensors take whole numbers only: numpy would truncate 3.7."""
    if isinstance(value, list):
        for v in value:
            _check_integral(v, ty)
    elif isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{value} is not a whole number, as {ty.dtype.value} elements must be")
    elif isinstance(value, (str, complex)):
        raise ValueError(f"{value!r} is not a {ty.dtype.value} element")


def _dense_array(value: Any, ty: TensorType) -> np.ndarray:
    npdt = ty.dtype.numpy
    if ty.dtype is DType.STRING:
        arr = np.array(value, dtype=object)
    elif ty.dtype.is_float and ty.dtype not in (DType.F32, DType.F64, DType.F16):
        arr = np.array(value, dtype=np.float64).astype(npdt)  # bf16/f8: via a wide float
    else:
        if ty.dtype.is_int or ty.dtype is DType.BOOL:
            _check_integral(value, ty)
        arr = np.array(value, dtype=npdt)
    if arr.ndim == 0 and ty.rank != 0:
        return np.full(ty.shape, arr[()], dtype=arr.dtype)  # splat
    if arr.shape != ty.shape and not (arr.size == 0 and ty.numel == 0):
        raise ValueError(f"{arr.shape} elements given for {ty}")
    return arr.reshape(ty.shape)


def _split_resources(data) -> tuple[str, int | None, int]:
    """The module text, the offset where the resource section starts, and its line."""
    if data[: len(b"resources {")] == b"resources {":
        return "", 0, 1
    idx = data.find(b"\nresources {")
    if idx < 0:
        return data[:].decode("utf-8"), None, 0
    text = data[: idx + 1].decode("utf-8")  # a slice is a copy of just the module text
    return text, idx + 1, text.count("\n") + 1


def parse_file_bytes(data, filename: str = "<input>") -> ModuleOp:
    """Parse a whole ``.pir`` file given as bytes (or an mmap): the module text goes through
    the tokenizer, the resource section is decoded straight from the buffer."""
    from pir.ir.verifier import verify_module

    try:
        text, res_start, res_line = _split_resources(data)
    except UnicodeDecodeError as e:
        raise PirError(f"the file is not UTF-8 text (byte {e.start})", file=filename) from None
    # Parsing allocates hundreds of thousands of objects that all stay alive: pausing the
    # cyclic garbage collector meanwhile saves its repeated, fruitless scans.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        module = Parser(text, filename).parse_module()
        if res_start is not None:
            module.resources = read_resources(data, res_start, filename, res_line)
        verify_module(module)
    finally:
        if gc_was_enabled:
            gc.enable()
    return module


def parse_file(path: str) -> ModuleOp:
    """Parse a ``.pir`` file; its resources are decoded from a memory map, not a copy."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return parse_file_bytes(b"", path)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return parse_file_bytes(mm, path)


def parse_module(text: str, filename: str = "<input>") -> ModuleOp:
    """Parse ``.pir`` text into a verified module."""
    return parse_file_bytes(text.encode("utf-8"), filename)

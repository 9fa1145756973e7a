"""Parses ``.pir`` text back into a module (the grammar is in docs/ir.md).

Errors carry ``file:line:col`` and a caret.  The resource section is read straight from the
file's bytes (it can hold hundreds of MB of base64), never through the tokenizer.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
from typing import Any

import numpy as np

from pir.errors import PirError
from pir.ir.attributes import DenseAttr, ResourceRef, SymbolRef
from pir.ir.core import OPS, Block, Operation, Region, Value
from pir.ir.dialects import load_dialects
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.lexer import SourceMap, Token, tokenize
from pir.ir.types import DType, FunctionType, IndexType, TensorType, Type

try:
    import pybase64 as _b64
except ImportError:  # pragma: no cover
    import base64 as _b64

__all__ = ["parse_module", "parse_file_bytes"]

_DIM = re.compile(r'(\d+|\?|"([A-Za-z_][A-Za-z0-9_]*)"|[A-Za-z_][A-Za-wyz0-9_]*)x')
_RESOURCE_LINE = re.compile(
    rb'\s*("(?:[^"\\\n]|\\.)*")\s*:\s*([A-Za-z0-9]+)\[([0-9,]*)\]\s+sha256=([0-9a-f]{64})\s+base64"'
)
_SEGMENT_ATTRS = ("operand_segments", "result_segments")


def _unquote(text: str) -> str:
    return json.loads(text) if text.startswith('"') else text


class Parser:
    def __init__(self, text: str, filename: str):
        load_dialects()
        self.src = SourceMap(text, filename)
        self.toks = tokenize(text, self.src)
        self.i = 0
        self.type_cache: dict[str, Type] = {}
        self.scopes: list[dict[str, Value]] = []
        self.forward: dict[str, Token] = {}

    # -- token helpers -----------------------------------------------------------------------

    def error(self, message: str, tok: Token | None = None) -> PirError:
        tok = tok or self.toks[self.i]
        return self.src.error(message, tok.pos)

    def peek(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, text: str) -> Token:
        tok = self.toks[self.i]
        if tok.text != text:
            found = "end of input" if tok.kind == "EOF" else f"'{tok.text}'"
            raise self.error(f"expected '{text}', found {found}", tok)
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.toks[self.i].text == text:
            self.i += 1
            return True
        return False

    # -- types -------------------------------------------------------------------------------

    def parse_type(self) -> Type:
        tok = self.next()
        if tok.kind == "TENSOR":
            ty = self.type_cache.get(tok.text)
            if ty is None:
                ty = self.type_cache[tok.text] = self._tensor_type(tok)
            return ty
        if tok.text == "index":
            return IndexType()
        if tok.text == "(":  # a function type
            self.i -= 1
            ins = self.type_list()
            self.expect("->")
            outs = self.type_list()
            return FunctionType(tuple(ins), tuple(outs))
        raise self.error(f"expected a type, found '{tok.text}'", tok)

    def _tensor_type(self, tok: Token) -> TensorType:
        body = tok.text[len("tensor<") : -1]
        pos = 0
        dims: list[Any] = []
        if body.startswith("*x"):
            shape = None
            pos = 2
        else:
            while True:
                m = _DIM.match(body, pos)
                if m is None:
                    break
                d = m.group(1)
                if d == "?":
                    dims.append(None)
                elif d.isdigit():
                    dims.append(int(d))
                else:
                    dims.append(m.group(2) or d)
                pos = m.end()
            shape = tuple(dims)
        try:
            return TensorType(DType.parse(body[pos:]), shape)
        except (TypeError, ValueError) as e:
            raise self.error(f"bad tensor type '{tok.text}': {e}", tok) from None

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
        if self.peek().text == "(":
            return self.type_list()
        return [self.parse_type()]

    # -- attributes --------------------------------------------------------------------------

    def attr_dict(self) -> dict[str, Any]:
        self.expect("{")
        attrs: dict[str, Any] = {}
        if self.accept("}"):
            return attrs
        while True:
            tok = self.next()
            if tok.kind not in ("IDENT", "STRING"):
                raise self.error(f"expected an attribute name, found '{tok.text}'", tok)
            self.expect("=")
            attrs[_unquote(tok.text)] = self.attr_value()
            if self.accept("}"):
                return attrs
            self.expect(",")

    def attr_value(self) -> Any:
        tok = self.next()
        k, t = tok.kind, tok.text
        if k == "NUMBER":
            return float(t) if ("." in t or "e" in t or "E" in t) else int(t)
        if k == "STRING":
            return json.loads(t)
        if k == "SYMBOL":
            return SymbolRef(_unquote(t[1:]))
        if k == "TENSOR":
            self.i -= 1
            return self.parse_type()
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
                key = self.next()
                if key.kind != "STRING":
                    raise self.error("expected a resource key string", key)
                self.expect(">")
                return ResourceRef(json.loads(key.text))
            if t == "index":
                return IndexType()
            try:
                return DType.parse(t)
            except ValueError:
                pass
        if t == "(":
            self.i -= 1
            return self.parse_type()
        raise self.error(f"expected an attribute value, found '{t}'", tok)

    def dense(self) -> DenseAttr:
        start = self.expect("<")
        value = self._dense_elems()
        self.expect(">")
        self.expect(":")
        ty_tok = self.peek()
        ty = self.parse_type()
        if not isinstance(ty, TensorType) or not ty.is_static:
            raise self.error("a dense attribute needs a static tensor type", ty_tok)
        try:
            arr = _dense_array(value, ty)
        except (ValueError, TypeError, OverflowError) as e:
            raise self.error(f"bad dense attribute: {e}", start) from None
        return DenseAttr(arr)

    def _dense_elems(self) -> Any:
        tok = self.next()
        if tok.text == "[":
            items = []
            if self.accept("]"):
                return items
            while True:
                items.append(self._dense_elems())
                if self.accept("]"):
                    return items
                self.expect(",")
        if tok.text == "(":  # complex: (re, im)
            re_, im = self._dense_elems(), None
            self.expect(",")
            im = self._dense_elems()
            self.expect(")")
            return complex(re_, im)
        if tok.kind == "NUMBER":
            t = tok.text
            return float(t) if ("." in t or "e" in t or "E" in t) else int(t)
        if tok.kind == "STRING":
            return json.loads(tok.text)
        if tok.text in ("true", "false"):
            return tok.text == "true"
        if tok.text in ("inf", "-inf", "nan"):
            return float(tok.text)
        raise self.error(f"expected a tensor element, found '{tok.text}'", tok)

    # -- values ------------------------------------------------------------------------------

    def define(self, tok: Token, value: Value) -> None:
        name = _unquote(tok.text[1:])
        scope = self.scopes[-1]
        if name in scope or any(name in s for s in self.scopes[:-1]):
            raise self.error(f"value %{name} is defined twice", tok)
        value.name = name
        scope[name] = value

    def lookup(self, tok: Token) -> Value:
        name = _unquote(tok.text[1:])
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                return v
        if self._defined_later(name):
            raise self.error(f"value %{name} is used before it is defined", tok)
        raise self.error(f"undefined value %{name}", tok)

    def _defined_later(self, name: str) -> bool:
        """Whether %name is defined somewhere after the current token (for a better error)."""
        toks = self.toks
        for j in range(self.i, len(toks) - 1):
            t = toks[j]
            if t.kind != "VALUE" or _unquote(t.text[1:]) != name:
                continue
            k = j + 1
            while toks[k].text == "," and toks[k + 1].kind == "VALUE":
                k += 2  # walk a result list: %a, %b = ...
            if toks[k].text in ("=", ":"):
                return True
        return False

    # -- structure ---------------------------------------------------------------------------

    def parse_module(self) -> ModuleOp:
        tok = self.peek()
        if tok.text != "module":
            raise self.error(f"expected 'module', found '{tok.text}'", tok)
        self.next()
        name = ""
        if self.peek().kind == "SYMBOL":
            name = _unquote(self.next().text[1:])
        attrs = {}
        if self.accept("attributes"):
            attrs = self.attr_dict()
        module = ModuleOp.create(name, attrs)
        self.expect("{")
        while not self.accept("}"):
            tok = self.peek()
            if tok.text == "func.func":
                module.body.block.append(self.parse_func())
            elif tok.kind == "EOF":
                raise self.error("expected '}' to close the module", tok)
            else:
                self.scopes = [{}]
                module.body.block.append(self.parse_op())
        end = self.peek()
        if end.kind != "EOF":
            raise self.error(f"unexpected '{end.text}' after the module", end)
        return module

    def parse_func(self) -> FuncOp:
        start = self.next()
        sym = self.next()
        if sym.kind != "SYMBOL":
            raise self.error("expected a function name like @main", sym)
        self.scopes = [{}]
        self.expect("(")
        arg_toks: list[Token] = []
        arg_types: list[Type] = []
        if not self.accept(")"):
            while True:
                tok = self.next()
                if tok.kind != "VALUE":
                    raise self.error(f"expected an argument like %x, found '{tok.text}'", tok)
                self.expect(":")
                arg_toks.append(tok)
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
        fn = FuncOp.create(_unquote(sym.text[1:]), arg_types, outs, loc=loc)
        for k, v in attrs.items():
            fn.attributes[k] = v
        fn.text_pos = self._pos(start)
        for tok, arg in zip(arg_toks, fn.entry.args):
            self.define(tok, arg)
        self.expect("{")
        self.block_body(fn.entry)
        return fn

    def block_body(self, block: Block) -> None:
        while not self.accept("}"):
            if self.peek().kind == "EOF":
                raise self.error("expected '}' to close the block")
            if self.peek().kind == "LABEL":
                raise self.error("a block label must start a region's block")
            block.append(self.parse_op())

    def region(self) -> Region:
        self.expect("{")
        region = Region()
        self.scopes.append({})
        if self.peek().kind != "LABEL":
            block = region.add_block(Block())
            self.block_body(block)
        else:
            while self.peek().kind == "LABEL":
                self.next()
                block = region.add_block(Block())
                self.expect("(")
                if not self.accept(")"):
                    while True:
                        tok = self.next()
                        if tok.kind != "VALUE":
                            raise self.error("expected a block argument like %x", tok)
                        self.expect(":")
                        self.define(tok, block.add_arg(self.parse_type()))
                        if self.accept(")"):
                            break
                        self.expect(",")
                self.expect(":")
                while self.peek().kind not in ("LABEL", "EOF") and self.peek().text != "}":
                    block.append(self.parse_op())
            self.expect("}")
        self.scopes.pop()
        return region

    def loc(self) -> str | None:
        if self.peek().text != "loc":
            return None
        self.next()
        self.expect("(")
        tok = self.next()
        if tok.kind != "STRING":
            raise self.error("expected a location string", tok)
        self.expect(")")
        return json.loads(tok.text)

    def _pos(self, tok: Token) -> tuple[str, int, int]:
        line, col = self.src.line_col(tok.pos)
        return (self.src.filename, line, col)

    def parse_op(self) -> Operation:
        first = self.peek()
        result_toks: list[Token] = []
        if first.kind == "VALUE":
            while True:
                result_toks.append(self.next())
                if self.accept("="):
                    break
                self.expect(",")
        name_tok = self.next()
        cls = OPS.get(name_tok.text)
        if cls is None:
            if name_tok.kind != "IDENT":
                raise self.error(f"expected an op name, found '{name_tok.text}'", name_tok)
            raise self.error(f"unknown op '{name_tok.text}'", name_tok)
        self.expect("(")
        operands: list[Value] = []
        if not self.accept(")"):
            lookup = self.lookup
            while True:
                tok = self.next()
                if tok.kind != "VALUE":
                    raise self.error(f"expected an operand like %x, found '{tok.text}'", tok)
                operands.append(lookup(tok))
                if self.accept(")"):
                    break
                self.expect(",")
        regions: list[Region] = []
        if self.peek().text == "(":
            self.next()
            while True:
                regions.append(self.region())
                if self.accept(")"):
                    break
                self.expect(",")
        attrs: dict[str, Any] = {}
        if self.peek().text == "{":
            attrs = self.attr_dict()
        self.expect(":")
        type_tok = self.peek()
        in_types = self.type_list()
        self.expect("->")
        out_types = self.result_types()
        loc = self.loc()
        if len(in_types) != len(operands):
            raise self.error(f"{cls.name} has {len(operands)} operands but its type lists "
                             f"{len(in_types)}", type_tok)
        for k, (v, t) in enumerate(zip(operands, in_types)):
            if v.type != t:
                raise self.error(f"operand {k} of {cls.name} is %{v.name} of type {v.type}, "
                                 f"but the op's type says {t}", type_tok)
        if len(out_types) != len(result_toks):
            raise self.error(f"{cls.name} defines {len(result_toks)} results but its type "
                             f"lists {len(out_types)}", type_tok)
        segs = [tuple(attrs.pop(k)) if k in attrs else None for k in _SEGMENT_ATTRS]
        try:
            op = cls(operands, out_types, attrs, regions, loc,
                     operand_segments=segs[0], result_segments=segs[1])
        except PirError as e:
            raise self.error(e.message, name_tok) from None
        op.text_pos = self._pos(name_tok)
        for tok, r in zip(result_toks, op.results):
            self.define(tok, r)
        return op


def _dense_array(value: Any, ty: TensorType) -> np.ndarray:
    npdt = ty.dtype.numpy
    if ty.dtype is DType.STRING:
        arr = np.array(value, dtype=object)
    elif ty.dtype.is_float and ty.dtype not in (DType.F32, DType.F64, DType.F16):
        arr = np.array(value, dtype=np.float64).astype(npdt)  # bf16/f8: via a wide float
    else:
        arr = np.array(value, dtype=npdt)
    if arr.ndim == 0 and ty.rank != 0:
        return np.full(ty.shape, arr[()], dtype=arr.dtype)  # splat
    if arr.shape != ty.shape and not (arr.size == 0 and ty.numel == 0):
        raise ValueError(f"{arr.shape} elements given for {ty}")
    return arr.reshape(ty.shape)


def _split_resources(data: bytes) -> tuple[str, bytes | None, int]:
    """The module text, the resource section's bytes and the line where it starts."""
    idx = data.find(b"\nresources {")
    if data.startswith(b"resources {"):
        idx = -1
        return "", data, 1
    if idx < 0:
        return data.decode("utf-8"), None, 0
    text = data[: idx + 1].decode("utf-8")
    return text, data[idx + 1 :], text.count("\n") + 1


def parse_file_bytes(data: bytes, filename: str = "<input>") -> ModuleOp:
    """Parse a whole ``.pir`` file given as bytes (the fast path for large resources)."""
    from pir.ir.verifier import verify_module

    try:
        text, res, res_line = _split_resources(data)
    except UnicodeDecodeError as e:
        raise PirError(f"the file is not UTF-8 text (byte {e.start})", file=filename) from None
    # Parsing allocates hundreds of thousands of objects that all stay alive: pausing the
    # cyclic garbage collector meanwhile saves its repeated, fruitless scans.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        module = Parser(text, filename).parse_module()
        if res is not None:
            module.resources = _parse_resources(res, filename, res_line)
        verify_module(module)
    finally:
        if gc_was_enabled:
            gc.enable()
    return module


def parse_module(text: str, filename: str = "<input>") -> ModuleOp:
    """Parse ``.pir`` text into a verified module."""
    return parse_file_bytes(text.encode("utf-8"), filename)


def _parse_resources(data: bytes, filename: str, first_line: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    line = first_line

    def fail(msg: str, col: int = 1) -> PirError:
        return PirError(msg, file=filename, line=line, col=col)

    pos = data.index(b"{") + 1
    nl = data.find(b"\n", pos)
    pos = nl + 1
    line += 1
    while True:
        head = data[pos : pos + 64].strip()  # a peek, never a copy of the whole section
        if head == b"}" or not head:
            if head != b"}" or data[pos:].strip() != b"}":
                raise fail("the resource section is not closed with '}'")
            return out
        m = _RESOURCE_LINE.match(data, pos)
        if m is None:
            raise fail("malformed resource entry: expected "
                       '"key": dtype[dims] sha256=<hex> base64"<data>"')
        key = json.loads(m.group(1))
        end = data.find(b'"', m.end())
        if end < 0:
            raise fail(f'resource "{key}": the base64 data is not closed')
        try:
            dtype = DType.parse(m.group(2).decode())
            shape = tuple(int(d) for d in m.group(3).split(b",") if d)
        except ValueError as e:
            raise fail(f'resource "{key}": {e}') from None
        try:
            raw = _b64.b64decode(data[m.end() : end], validate=True)
        except ValueError:
            raise fail(f'resource "{key}": the base64 data is corrupt', m.end() - pos + 1) from None
        expect = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if len(raw) != expect:
            raise fail(f'resource "{key}": {len(raw)} bytes of data for {dtype.value}'
                       f"[{','.join(map(str, shape))}] ({expect} bytes expected)")
        if hashlib.sha256(raw).hexdigest() != m.group(4).decode():
            raise fail(f'resource "{key}": sha256 mismatch, the data is damaged')
        if key in out:
            raise fail(f'resource "{key}" is defined twice')
        out[key] = np.frombuffer(raw, dtype=dtype.numpy.newbyteorder("<")).reshape(shape)
        pos = end + 1
        nl = data.find(b"\n", pos)
        if nl < 0:
            raise fail("the resource section is not closed with '}'")
        pos = nl + 1
        line += 1

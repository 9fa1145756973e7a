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

from pir.errors import PirError
from pir.ir.attributes import DenseAttr, ResourceRef, SymbolRef, dense_array
from pir.ir.core import OPS, Block, Operation, Region, Value
from pir.ir.dialects import load_dialects
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.lexer import SourceMap, TextPos, string_problem, token_kind, tokenize
from pir.ir.resources import read_resources, split_module_text
from pir.limits import MAX_NESTING, check_tensor_bytes
from pir.ir.types import (
    DIALECT_TYPES,
    DType,
    FunctionType,
    IndexType,
    TensorType,
    Type,
    int64_problem,
    parse_tensor_body,
)


__all__ = ["parse_module", "parse_file", "parse_file_bytes"]

_SEGMENT_ATTRS = ("operand_segments", "result_segments")


def _found(tok: str) -> str:
    """``, found 'tok'`` for an error message; nothing at the end of input, which
    :meth:`Parser.error` names itself ("...: unexpected end of input")."""
    return f", found '{tok}'" if tok else ""


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
        self.depth = 0  # regions, arrays and brackets open now (see nest)

    # -- token helpers -----------------------------------------------------------------------

    # The parser never moves past the end-of-input token "" (every ``self.i += 1`` follows a
    # check of the token it skips), so ``self.toks[self.i]`` is always in range.

    def error(self, message: str, at: int | None = None) -> PirError:
        at = self.i if at is None else at
        if at >= len(self.toks) - 1:
            message = f"{message}: unexpected end of input"
        return self.src.error(message, self.offsets[at])

    def peek(self) -> str:
        return self.toks[self.i]

    def expect(self, text: str) -> None:
        tok = self.toks[self.i]
        if tok != text:
            raise self.error(f"expected '{text}'{_found(tok)}")
        self.i += 1

    def accept(self, text: str) -> bool:
        if self.toks[self.i] == text:
            self.i += 1
            return True
        return False

    def nest(self, at: int) -> None:
        """Open one level of nesting (a region, an array or a bracket), opened by token
        ``at``.  The parser and the printer recurse once per level on Python's stack, so
        the levels open at once, of all kinds together, are bounded."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} levels", at)

    def string(self, at: int, skip: int = 0) -> str:
        """The JSON string token ``at`` (after its first ``skip`` characters) decoded; the
        lexer has checked it, so a failure here is still reported at its place."""
        tok = self.toks[at][skip:]
        try:
            return json.loads(tok)
        except json.JSONDecodeError as e:
            problem = string_problem(tok)
            index = problem[0] if problem else e.pos
            raise self.src.error(problem[1] if problem else f"bad string: {e.msg}",
                                 self.offsets[at] + skip + index) from None

    def big_int(self, at: int) -> int:
        """Integer token ``at``, of 20 characters or more (shorter ones always fit): a
        64-bit value (int64, or uint64 for unsigned data), never a bigint that no tensor or
        attribute could hold (and Python will not even convert past 4300 digits)."""
        tok = self.toks[at]
        digits = tok.lstrip("-").lstrip("0")
        if len(digits) <= 20 and -2**63 <= int(tok) < 2**64:
            return int(tok)
        shown = tok if len(tok) <= 40 else f"{tok[:20]}...({len(digits)} digits)"
        raise self.error(f"integer {shown} does not fit in 64 bits", at)

    def name(self, at: int) -> str:
        """The name of value or symbol token ``at`` (``%x``, ``@"a b"``) without its sigil."""
        tok = self.toks[at]
        return self.string(at, 1) if tok[1:2] == '"' else tok[1:]

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
            self.nest(self.i)
            ins = self.type_list()
            self.expect("->")
            outs = self.type_list()
            self.depth -= 1
            return FunctionType(tuple(ins), tuple(outs))
        raise self.error(f"expected a type{_found(tok)}")

    def _tensor_type(self, tok: str) -> TensorType:
        try:
            ty = parse_tensor_body(tok[len("tensor<") : -1])
        except (TypeError, ValueError) as e:
            raise self.error(f"bad tensor type '{tok}': {e}") from None
        problem = int64_problem(ty)  # a type past int64 is an error even where unallocated
        if problem is not None:
            raise self.error(f"tensor type: {problem}")
        return ty

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
                raise self.error(f"expected an attribute name{_found(tok)}")
            key = self.string(self.i) if tok[:1] == '"' else tok
            self.i += 1
            self.expect("=")
            attrs[key] = self.attr_value()
            if self.accept("}"):
                return attrs
            self.expect(",")

    def attr_value(self) -> Any:
        t = self.peek()
        k = token_kind(t)
        if k in ("TENSOR", "TYPE") or t == "(":
            return self.parse_type()
        if not t:
            raise self.error("expected an attribute value")
        self.i += 1
        if k == "NUMBER":
            if "." in t or "e" in t or "E" in t:
                return float(t)
            return int(t) if len(t) < 20 else self.big_int(self.i - 1)
        if k == "STRING":
            return self.string(self.i - 1)
        if k == "SYMBOL":
            return SymbolRef(self.name(self.i - 1))
        if t == "[":
            self.nest(self.i - 1)
            items = []
            if self.accept("]"):
                self.depth -= 1
                return ()
            while True:
                items.append(self.attr_value())
                if self.accept("]"):
                    self.depth -= 1
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
                return ResourceRef(self.string(self.i - 2))
            if t == "index":
                return IndexType()
            try:
                return DType.parse(t)
            except ValueError:
                pass
        raise self.error(f"expected an attribute value{_found(t)}", self.i - 1)

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
        if not isinstance(value, list):  # a splat fills the shape: a few bytes of text
            try:                           # can ask for terabytes
                check_tensor_bytes(ty.shape, ty.dtype.itemsize or 8, "dense attribute")
            except PirError as e:
                raise self.error(e.message, at) from None
        try:
            arr = dense_array(value, ty)
        except (ValueError, TypeError, OverflowError) as e:
            raise self.error(f"bad dense attribute: {e}", start) from None
        return DenseAttr(arr)

    def _dense_elems(self) -> Any:
        tok = self.toks[self.i]
        if not tok:
            raise self.error("expected a tensor element")
        self.i += 1
        if tok == "[":
            self.nest(self.i - 1)
            items = []
            if self.accept("]"):
                self.depth -= 1
                return items
            while True:
                items.append(self._dense_elems())
                if self.accept("]"):
                    self.depth -= 1
                    return items
                self.expect(",")
        if tok == "(":  # complex: (re, im)
            at = self.i - 1
            self.nest(at)
            re_ = self._dense_elems()
            self.expect(",")
            im = self._dense_elems()
            self.expect(")")
            self.depth -= 1
            if not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in (re_, im)):
                raise self.error("a complex element is (real, imaginary), two numbers", at)
            return complex(re_, im)
        kind = token_kind(tok)
        if kind == "NUMBER":
            if "." in tok or "e" in tok or "E" in tok:
                return float(tok)
            return int(tok) if len(tok) < 20 else self.big_int(self.i - 1)
        if kind == "STRING":
            return self.string(self.i - 1)
        if tok in ("true", "false"):
            return tok == "true"
        if tok in ("inf", "-inf", "nan"):
            return float(tok)
        raise self.error(f"expected a tensor element{_found(tok)}", self.i - 1)

    # -- values ------------------------------------------------------------------------------

    def define(self, at: int, value: Value) -> None:
        name = self.toks[at][1:]
        if name[:1] == '"':
            name = self.string(at, 1)
        scope = self.scopes[-1]
        if name in scope or any(name in s for s in self.scopes[:-1]):
            raise self.error(f"value %{name} is defined twice", at)
        value.name = name
        scope[name] = value

    def lookup(self, at: int) -> Value:
        name = self.toks[at][1:]
        if name[:1] == '"':
            name = self.string(at, 1)
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
            if t[:1] != "%" or self.name(j) != name:
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
            raise self.error(f"expected 'module'{_found(tok)}")
        self.i += 1
        name = ""
        if self.peek()[:1] == "@":
            name = self.name(self.i)
            self.i += 1
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
        sym = self.name(self.i)
        self.i += 1
        self.scopes = [{}]
        self.expect("(")
        arg_at: list[int] = []
        arg_types: list[Type] = []
        if not self.accept(")"):
            while True:
                if self.peek()[:1] != "%":
                    raise self.error(f"expected an argument like %x{_found(self.peek())}")
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
        fn = FuncOp.create(sym, arg_types, outs, loc=loc)
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
        self.nest(self.i)
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
        self.depth -= 1
        return region

    def loc(self) -> str | None:
        if self.toks[self.i] != "loc":
            return None
        self.i += 1
        self.expect("(")
        if self.peek()[:1] != '"':
            raise self.error("expected a location string")
        self.i += 1
        self.expect(")")
        return self.string(self.i - 2)

    def parse_op(self) -> Operation:
        toks = self.toks
        result_at: list[int] = []
        if toks[self.i][:1] == "%":
            while True:
                if toks[self.i][:1] != "%":
                    raise self.error(f"expected a result like %x{_found(toks[self.i])}")
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
                raise self.error(f"expected an op name{_found(name)}")
            raise self.error(f"unknown op '{name}'")
        self.i += 1
        self.expect("(")
        operands: list[Value] = []
        if not self.accept(")"):
            lookup = self.lookup
            while True:
                if toks[self.i][:1] != "%":
                    raise self.error(f"expected an operand like %x{_found(toks[self.i])}")
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


def parse_file_bytes(data, filename: str = "<input>") -> ModuleOp:
    """Parse a whole ``.pir`` file given as bytes (or an mmap): the module text goes through
    the tokenizer, the resource section is decoded straight from the buffer."""
    from pir.ir.verifier import verify_module

    text, res_start, res_line = split_module_text(data, filename)
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
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate: no file could hold this text
        line = text.count("\n", 0, e.start) + 1
        col = e.start - (text.rfind("\n", 0, e.start) + 1) + 1
        raise PirError(f"lone surrogate {text[e.start]!r}: the text is not unicode",
                       file=filename, line=line, col=col) from None
    return parse_file_bytes(data, filename)

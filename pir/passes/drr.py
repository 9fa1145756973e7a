"""Declarative rewrites (Paddle's DRR, MLIR's DRR): a source pattern, a result pattern and
constraints, in a few readable lines::

    drr("neg-neg", Op("nn.neg", Op("nn.neg", Var("x"))), Var("x"))
    drr("mul-by-one", Op("nn.mul", Var("x"), Const(1.0)), Var("x"))
    drr("transpose-transpose",
        Op("nn.transpose", Op("nn.transpose", Var("x"), perm=Attr("p")), perm=Attr("q")),
        Op("nn.transpose", Var("x"), perm=lambda m: tuple(m.p[i] for i in m.q)))

Source side: ``Op(name, *operands, **attrs)`` matches an op by name and operand patterns
(each matched against the op defining that operand); attribute patterns are values to
compare with or ``Attr(name)`` to bind; ``Var(name)`` binds any value (the same name twice
must be the same value); ``Const(splat)`` matches a constant, optionally one whose every
element equals ``splat``.  Result side: ``Var`` names a bound value, ``Op`` builds a new op
(attributes are values, ``Attr`` copies, or functions of the match), or a function
``(match, rewriter, root) -> Value`` does anything else.

A rewrite applies only when the replacement has exactly the type of what it replaces, so
``mul-by-one`` never fires where the multiplication broadcasts ``x`` to a larger shape; nor
when it would rename a function output (``x * 1`` returned, with ``x`` an input).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pir.ir.core import OPS, Operation, Value
from pir.ir.typerules import const_value
from pir.passes.rewriter import RewritePattern, Rewriter, keeps_output_names

__all__ = ["Op", "Var", "Const", "Attr", "Match", "drr", "DeclarativePattern"]


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Attr:
    name: str


@dataclass(frozen=True)
class Const:
    """A constant operand; with ``splat``, every element must equal it."""

    splat: float | int | bool | None = None
    bind: str | None = None


@dataclass(frozen=True)
class Op:
    name: str
    operands: tuple = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    bind: str | None = None  # binds the op's (first) result

    def __init__(self, name: str, *operands: Any, bind: str | None = None, **attrs: Any):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "operands", operands)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "bind", bind)

    def __hash__(self) -> int:
        return hash((self.name, self.operands, self.bind))


class Match(dict):
    """The bindings of a match; ``m.x`` reads binding ``x``."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def _match_value(pat: Any, v: Value, m: Match) -> bool:
    if isinstance(pat, Var):
        bound = m.get(pat.name)
        if bound is None:
            m[pat.name] = v
            return True
        return bound is v
    if isinstance(pat, Const):
        arr = const_value(v)
        if arr is None:
            return False
        if pat.splat is not None:
            if arr.size == 0 or arr.dtype == object:
                return False
            if not np.all(arr == np.asarray(pat.splat).astype(arr.dtype)):
                return False
            if np.asarray(pat.splat).astype(arr.dtype) != pat.splat:
                return False  # the splat value is not representable in this dtype
        if pat.bind:
            m[pat.bind] = arr
        return True
    if isinstance(pat, Op):
        owner = getattr(v, "op", None)
        return owner is not None and _match_op(pat, owner, m)
    raise TypeError(f"bad source pattern {pat!r}")


def _match_op(pat: Op, op: Operation, m: Match) -> bool:
    if op.name != pat.name:
        return False
    if pat.operands and len(pat.operands) != len(op.operands):
        return False
    for key, want in pat.attrs.items():
        have = op.attributes.get(key, getattr(op.signature.attrs.get(key), "default", None))
        if isinstance(want, Attr):
            m[want.name] = have
        elif callable(want):
            if not want(have):
                return False
        elif have != want:
            return False
    for sub, v in zip(pat.operands, op.operands):
        if not _match_value(sub, v, m):
            return False
    if pat.bind:
        m[pat.bind] = op.results[0]
    return True


def _build(res: Any, m: Match, rw: Rewriter, root: Operation, made: list[Operation]) -> Value:
    if isinstance(res, Var):
        return m[res.name]
    if isinstance(res, Op):
        operands = [_build(o, m, rw, root, made) for o in res.operands]
        attrs = {}
        for key, spec in res.attrs.items():
            attrs[key] = m[spec.name] if isinstance(spec, Attr) else (
                spec(m) if callable(spec) else spec)
        op = rw.create(OPS[res.name], *operands, before=root, **attrs)
        made.append(op)
        return op.results[0]
    if callable(res):
        return res(m, rw, root)
    raise TypeError(f"bad result pattern {res!r}")


class DeclarativePattern(RewritePattern):
    """A rewrite made by :func:`drr`."""

    def __init__(self, name: str, source: Op, result: Any, where: tuple[Callable, ...]):
        self.name = name
        self.root = source.name
        self.source = source
        self.result = result
        self.where = where

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        m = Match()
        if len(op.results) != 1 or not _match_op(self.source, op, m):
            return False
        m["root"] = op
        if not all(cond(m) for cond in self.where):
            return False
        if isinstance(self.result, Var):  # cheap checks before building anything
            x = m[self.result.name]
            if x.type != op.results[0].type or not keeps_output_names(op.results[0], x):
                return False
        made: list[Operation] = []
        new = _build(self.result, m, rewriter, op, made)
        if (new is None or new.type != op.results[0].type
                or not keeps_output_names(op.results[0], new)):
            for created in reversed(made):  # the replacement would change the type: undo
                if not any(r.uses for r in created.results):
                    rewriter.erase_op(created)
            return False
        rewriter.replace_op(op, [new])
        return True

    def __repr__(self) -> str:
        return f"<drr {self.name}>"


def drr(name: str, source: Op, result: Any, *, where: tuple[Callable, ...] | Callable = ()) -> DeclarativePattern:
    """A declarative rewrite: replace what ``source`` matches by ``result``."""
    if callable(where) and not isinstance(where, tuple):
        where = (where,)
    return DeclarativePattern(name, source, result, tuple(where))

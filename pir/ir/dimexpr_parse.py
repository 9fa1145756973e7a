"""The parser of dim expressions' text grammar (docs/ir.md; printing is
:func:`pir.ir.dimexpr.dim_text`): each rule builds its value with pir.ir.dimexpr's
arithmetic, so what it returns is already canonical."""

from __future__ import annotations

import re

from pir.ir.dimexpr import (KEYWORDS, add, ceildiv, floordiv, maximum, minimum, mod, mul, neg,
                            sub)

__all__ = ["parse_dim_expr"]

_TOKEN = re.compile(r'\s*(?:(\d+)|"([A-Za-z_][A-Za-z0-9_]*)"|([A-Za-z_][A-Za-z0-9_]*)|(.))')


class _ExprParser:
    """The grammar of docs/ir.md:

    expr   := term (('+' | '-') term)*
    term   := unary (('*' unary) | ('floordiv' | 'ceildiv' | 'mod') INT)*
    unary  := '-' unary | INT | SYMBOL | '"' SYMBOL '"' | '(' expr ')'
            | ('min' | 'max') '(' expr (',' expr)+ ')'
    """

    def __init__(self, text: str):
        self.toks: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                break
            if m.group(1) is not None:
                self.toks.append(("int", m.group(1)))
            elif m.group(2) is not None:
                self.toks.append(("sym", m.group(2)))
            elif m.group(3) is not None:
                w = m.group(3)
                self.toks.append(("kw" if w in KEYWORDS else "sym", w))
            else:
                self.toks.append(("op", m.group(4)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, kind: str, value: str | None = None) -> str:
        t = self.peek()
        if t is None or t[0] != kind or (value is not None and t[1] != value):
            want = value or kind
            got = "the end" if t is None else f"'{t[1]}'"
            raise ValueError(f"expected {want} in a dim expression, got {got}")
        self.i += 1
        return t[1]

    def parse(self):
        e = self.expr()
        if self.peek() is not None:
            raise ValueError(f"unexpected '{self.peek()[1]}' in a dim expression")
        return e

    def expr(self):
        e = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take("op")
            e = add(e, self.term()) if op == "+" else sub(e, self.term())
        return e

    def term(self):
        e = self.unary()
        while True:
            t = self.peek()
            if t == ("op", "*"):
                self.take("op")
                e = mul(e, self.unary())
            elif t is not None and t[0] == "kw" and t[1] in ("floordiv", "ceildiv", "mod"):
                self.take("kw")
                k = int(self.take("int"))
                if k <= 0:
                    raise ValueError(f"{t[1]} needs a positive divisor, got {k}")
                e = {"floordiv": floordiv, "ceildiv": ceildiv, "mod": mod}[t[1]](e, k)
            else:
                return e

    def unary(self):
        t = self.peek()
        if t is None:
            raise ValueError("a dim expression ends too early")
        if t == ("op", "-"):
            self.take("op")
            return neg(self.unary())
        if t[0] == "int":
            self.take("int")
            return int(t[1])
        if t[0] == "sym":
            self.take("sym")
            return t[1]
        if t == ("op", "("):
            self.take("op")
            e = self.expr()
            self.take("op", ")")
            return e
        if t[0] == "kw" and t[1] in ("min", "max"):
            self.take("kw")
            self.take("op", "(")
            args = [self.expr()]
            while self.peek() == ("op", ","):
                self.take("op")
                args.append(self.expr())
            self.take("op", ")")
            if len(args) < 2:
                raise ValueError(f"{t[1]} needs two or more arguments")
            return (minimum if t[1] == "min" else maximum)(*args)
        raise ValueError(f"unexpected '{t[1]}' in a dim expression")


def parse_dim_expr(text: str):
    """The canonical dim ``text`` spells in the expression grammar; ValueError when it is
    malformed."""
    return _ExprParser(text).parse()

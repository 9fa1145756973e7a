"""Tokens of the ``.pir`` text format.

One master regular expression splits the text; each token keeps its offset so that errors
point at ``line:col`` with a caret under the offending text.
"""

from __future__ import annotations

import bisect
import re

from pir.errors import PirError

__all__ = ["Token", "tokenize", "SourceMap"]

# Order matters: longer and more specific tokens first.
_SPEC = [
    ("COMMENT", r"//[^\n]*"),
    ("WS", r"[ \t\r\n]+"),
    ("TENSOR", r'tensor<(?:[^<>"\n]|"[^"\n]*")*>'),
    ("VALUE", r'%(?:[A-Za-z0-9_.$/-]+|"(?:[^"\\\n]|\\.)*")'),
    ("SYMBOL", r'@(?:[A-Za-z0-9_.$/-]+|"(?:[^"\\\n]|\\.)*")'),
    ("LABEL", r"\^[A-Za-z0-9_]+"),
    ("STRING", r'"(?:[^"\\\n]|\\.)*"'),
    ("NUMBER", r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)"),
    ("ARROW", r"->"),
    ("IDENT", r"-?[A-Za-z_][A-Za-z0-9_.$]*"),
    ("PUNCT", r"[(){}\[\]<>,:=*?]"),
    ("BAD", r"."),
]
_MASTER = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _SPEC))


class Token:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind = kind
        self.text = text
        self.pos = pos

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.pos})"


class SourceMap:
    """Turns offsets into (line, col) and shows the line with a caret."""

    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, pos: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.line_starts, pos) - 1
        return i + 1, pos - self.line_starts[i] + 1

    def error(self, message: str, pos: int) -> PirError:
        line, col = self.line_col(pos)
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        src = self.text[start : end if end >= 0 else len(self.text)]
        shown = src.expandtabs(1)
        excerpt = f"  {shown}\n  {' ' * (col - 1)}^"
        return PirError(message, file=self.filename, line=line, col=col, excerpt=excerpt)


def tokenize(text: str, srcmap: SourceMap) -> list[Token]:
    tokens = []
    append = tokens.append
    for m in _MASTER.finditer(text):
        kind = m.lastgroup
        if kind == "WS" or kind == "COMMENT":
            continue
        if kind == "BAD":
            raise srcmap.error(f"unexpected character {m.group()!r}", m.start())
        append(Token(kind, m.group(), m.start()))
    append(Token("EOF", "", len(text)))
    return tokens

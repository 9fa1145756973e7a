"""Tokens of the ``.pir`` text format.

One master regular expression splits the text; each token keeps its offset so that errors
point at ``line:col`` with a caret under the offending text.
"""

from __future__ import annotations

import bisect
import re

from pir.errors import PirError

__all__ = ["tokenize", "token_kind", "SourceMap", "TextPos"]

# One alternation without groups, so that ``findall`` returns the token strings straight
# from C; kinds are read off a token's first characters, and offsets (needed only for error
# messages) are computed on demand by a second, slower pass.
_TOKEN = re.compile(
    r"//[^\n]*"                                   # comment
    r'|tensor<(?:[^<>"\n]|"[^"\n]*")*>'           # tensor type
    r'|![A-Za-z_][A-Za-z0-9_.]*<(?:[^<>"\n]|"[^"\n]*"|<[^<>"\n]*>)*>'  # dialect type
    r'|[%@](?:[A-Za-z0-9_.$/-]+|"(?:[^"\\\n]|\\.)*")'  # value or symbol
    r"|\^[A-Za-z0-9_]+"                            # block label
    r'|"(?:[^"\\\n]|\\.)*"'                       # string
    r"|-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)"  # number
    r"|->"
    r"|-?[A-Za-z_][A-Za-z0-9_.$]*"                  # identifier, keyword, op name
    r"|[^ \t\r\n]"                                # punctuation (or a bad character)
)
_PUNCT = frozenset("(){}[]<>,:=*?")


def token_kind(text: str) -> str:
    c = text[:1]
    if c == "%":
        return "VALUE"
    if c == "@":
        return "SYMBOL"
    if c == '"':
        return "STRING"
    if c == "^":
        return "LABEL"
    if not c:
        return "EOF"
    if text.startswith("tensor<"):
        return "TENSOR"
    if c == "!" and len(text) > 1:
        return "TYPE"
    if c.isdigit() or (c == "-" and text[1:2].isdigit()):
        return "NUMBER"
    if text == "->":
        return "ARROW"
    if c.isalpha() or c == "_" or (c == "-" and len(text) > 1):
        return "IDENT"
    if c in _PUNCT:
        return "PUNCT"
    return "BAD"


class _Offsets:
    """Token offsets, computed the first time an error needs one."""

    def __init__(self, text: str):
        self.text = text
        self.table: list[int] | None = None

    def __getitem__(self, index: int) -> int:
        if self.table is None:
            self.table = [m.start() for m in _TOKEN.finditer(self.text)
                          if not m.group().startswith("//")]
        return self.table[index] if index < len(self.table) else len(self.text)


class TextPos:
    """Where an op was parsed from; line and column are worked out only when asked."""

    __slots__ = ("src", "offsets", "index")

    def __init__(self, src: SourceMap, offsets: _Offsets, index: int):
        self.src = src
        self.offsets = offsets
        self.index = index

    def where(self) -> tuple[str, int, int]:
        return (self.src.filename, *self.src.line_col(self.offsets[self.index]))

    def error(self, message: str) -> PirError:
        return self.src.error(message, self.offsets[self.index])

    def __str__(self) -> str:
        return ":".join(map(str, self.where()))


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


def tokenize(text: str, srcmap: SourceMap) -> tuple[list[str], _Offsets]:
    """The token strings (ending with "" for the end of input) and their lazy offsets."""
    offsets = _Offsets(text)
    tokens = [t for t in _TOKEN.findall(text) if t[:2] != "//"]
    singles = {t for t in tokens if len(t) == 1}
    bad = singles - _PUNCT - set("0123456789") - {c for c in singles if c.isalpha() or c == "_"}
    if bad:
        index = next(i for i, t in enumerate(tokens) if t in bad)
        raise srcmap.error(f"unexpected character {tokens[index]!r}", offsets[index])
    tokens.append("")
    return tokens, offsets

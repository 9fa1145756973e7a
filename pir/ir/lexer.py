"""Tokens of the ``.pir`` text format.

One master regular expression splits the text; each token keeps its offset so that errors
point at ``line:col`` with a caret under the offending text.
"""

from __future__ import annotations

import bisect
import re

from pir.errors import PirError

__all__ = ["tokenize", "token_kind", "string_problem", "SourceMap", "TextPos"]

# One alternation without groups, so that ``findall`` returns the token strings straight
# from C; kinds are read off a token's first characters, and offsets (needed only for error
# messages) are computed on demand by a second, slower pass.
#
# Repeats are "unrolled" (``"[^"\\]*(?:\\.[^"\\]*)*"``, not ``"(?:[^"\\]|\\.)*"``): the regex
# engine keeps a backtracking record for every pass through a repeated group, about 120
# bytes each, so a group per character made a 10 MB string token cost 1.2 GB; a repeated
# character class is matched without such records, so memory now grows only per escape.
# The unrolled forms match the same text.  Strings are matched loosely here (any escape, any
# character but a newline) and checked against JSON's rules by :func:`_check_strings`,
# which can then say what is wrong, and where.
_STR = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_TOKEN = re.compile(
    r"//[^\n]*"                                   # comment
    r'|tensor<[^<>"\n]*(?:"[^"\n]*"[^<>"\n]*)*>'  # tensor type
    r'|![A-Za-z_][A-Za-z0-9_.]*<[^<>"\n]*(?:(?:"[^"\n]*"|<[^<>"\n]*>)[^<>"\n]*)*>'  # dialect type
    r"|[%@](?:[A-Za-z0-9_.$/-]+|" + _STR + ")"     # value or symbol
    r"|\^[A-Za-z0-9_]+"                            # block label
    r"|" + _STR +                                  # string
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
    """Token offsets, computed the first time an error needs one.  The end-of-input token
    (and anything past it) sits just after the last token, where the text stopped making
    sense, rather than after trailing blank lines."""

    def __init__(self, text: str, tokens: list[str] | None = None):
        self.text = text
        self.tokens = tokens
        self.table: list[int] | None = None

    def __getitem__(self, index: int) -> int:
        if self.table is None:
            self.table = [m.start() for m in _TOKEN.finditer(self.text)
                          if not m.group().startswith("//")]
        table = self.table
        if index < len(table):
            return table[index]
        if not table:
            return 0
        if self.tokens is None:
            return len(self.text)
        return table[-1] + len(self.tokens[len(table) - 1])


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


_EXCERPT = 60  # characters shown on either side of an error's caret
_BLANK_CONTROLS = {c: " " for c in range(32)}


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
        caret = col - 1
        if len(src) > 2 * _EXCERPT:  # a window around the caret, not a 10 MB line
            left = max(0, caret - _EXCERPT)
            right = caret + _EXCERPT
            src = ("..." if left else "") + src[left:right] + ("..." if right < len(src) else "")
            caret -= left - (3 if left else 0)
        shown = src.translate(_BLANK_CONTROLS)  # a tab or a NUL is shown as one space
        excerpt = f"  {shown}\n  {' ' * caret}^"
        return PirError(message, file=self.filename, line=line, col=col, excerpt=excerpt)


def tokenize(text: str, srcmap: SourceMap) -> tuple[list[str], _Offsets]:
    """The token strings (ending with "" for the end of input) and their lazy offsets."""
    tokens = [t for t in _TOKEN.findall(text) if t[:2] != "//"]
    offsets = _Offsets(text, tokens)
    singles = {t for t in tokens if len(t) == 1}
    bad = singles - _PUNCT - set("0123456789") - {c for c in singles if c.isalpha() or c == "_"}
    if bad:
        index = next(i for i, t in enumerate(tokens) if t in bad)
        if tokens[index] == '"':  # a string token ends on its own line
            raise srcmap.error("unterminated string", offsets[index])
        raise srcmap.error(f"unexpected character {tokens[index]!r}", offsets[index])
    if _SUSPECT.search(text):
        _check_strings(tokens, offsets, srcmap)
    tokens.append("")
    return tokens, offsets


# -- strings -----------------------------------------------------------------------------------
#
# String tokens are JSON strings: the parser decodes them with json.loads, and the printer
# writes them with json.dumps.  A string is valid JSON unless it holds a backslash or a raw
# control character, so a text without either (nearly every file) needs no check at all.

_SUSPECT = re.compile(r"[\\\x00-\x09\x0b-\x1f]")
_STRING_PART = re.compile(r'\\u([0-9a-fA-F]{4})|\\["\\/bfnrt]|(\\.?)|([\x00-\x1f])')
_CONTROL_ESCAPES = {"\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def string_problem(quoted: str) -> tuple[int, str] | None:
    """What makes ``quoted`` (a string with its quotes) not a JSON string that is also
    valid unicode text, and its index: a bad escape, a raw control character, or a lone
    surrogate (``"\\ud800"``, which json.loads accepts but no UTF-8 file can hold)."""
    high: re.Match | None = None  # a \uD800-\uDBFF escape, awaiting its low half
    for m in _STRING_PART.finditer(quoted):
        hexa, bad, control = m.groups()
        code = int(hexa, 16) if hexa else None
        if high is not None:
            if m.start() == high.end() and code is not None and 0xDC00 <= code <= 0xDFFF:
                high = None
                continue
            return high.start(), _lone(high.group())
        if code is not None and 0xD800 <= code <= 0xDBFF:
            high = m
        elif code is not None and 0xDC00 <= code <= 0xDFFF:
            return m.start(), _lone(m.group())
        elif control:
            hint = _CONTROL_ESCAPES.get(control, f"\\u{ord(control):04x}")
            return m.start(), (f"control character U+{ord(control):04X} in a string: write "
                               f"it as the escape {hint}")
        elif bad:
            shown = quoted[m.start():m.end() + 4].split('"')[0] if bad == "\\u" else bad
            return m.start(), (f"bad escape '{shown}' in a string (JSON's escapes are "
                               r"\" \\ \/ \b \f \n \r \t and \uXXXX)")
    if high is not None:
        return high.start(), _lone(high.group())
    return None


def _lone(escape: str) -> str:
    return f"lone surrogate '{escape}' in a string: it is not unicode text"


def _check_strings(tokens: list[str], offsets: _Offsets, srcmap: SourceMap) -> None:
    """Raise a located error for the first string token (a ``"string"``, ``%"value"`` or
    ``@"symbol"``) that is not a valid JSON string."""
    for i, t in enumerate(tokens):
        if t[:1] == '"':
            q = 0  # where the quote is
        elif t[1:2] == '"' and t[:1] in ("%", "@"):
            q = 1
        else:
            continue
        if not _SUSPECT.search(t):
            continue
        problem = string_problem(t[q:])
        if problem is not None:
            index, message = problem
            raise srcmap.error(message, offsets[i] + q + index)

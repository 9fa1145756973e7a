"""A :class:`~pir.diff.changes.ModuleDiff` as text: one line per difference, or a table.

Lines carry a kind (``-``, ``+``, ``~``, or ``head`` for headers) so a terminal front end can
colour them; the text itself is plain and deterministic.  Formats::

    - %probs = nn.softmax(%logits) {axis = -1} : (tensor<Bx10xf32>) -> ... loc("/softmax")
    + %probs.1 = prim.reduce_max(%logits) {...} : ... loc("/softmax")
    ~ %x: nn.add -> prim.add loc("/fc1/Add")
    ~ %fc2 = nn.gemm: alpha: 1.0 -> 2.0 loc("/fc2/Gemm")
    ~ @main input 0 %x: tensor<Bx784xf32> -> tensor<4x784xf32>
    ~ resource "fc1.weight": f32[784,256] sha256:1a2b3c4d5e6f -> f32[784,256] sha256:0f9e8d7c6b5a
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pir.diff.changes import FunctionDiff, ModuleDiff, OpChange
from pir.diff.naming import loc_text

__all__ = ["Line", "diff_lines", "stat_lines", "op_counts"]


@dataclass(frozen=True)
class Line:
    """One line of output; ``kind`` (``-``, ``+``, ``~``, ``!``, ``=``, ``head``) is for
    colouring only, the text is complete."""

    kind: str
    text: str


def _mark(kind: str, text: str) -> Line:
    """A difference line: the text starts with its kind, as in diff(1)."""
    return Line(kind, f"{kind} {text}")


def diff_lines(d: ModuleDiff, label_a: str = "a", label_b: str = "b") -> list[Line]:
    """Every difference, one line each: module, then each function, then resources."""
    out = [Line("head", f"--- {label_a}"), Line("head", f"+++ {label_b}")]
    out += [_mark("~", line) for line in d.module]
    for f in d.functions:
        if f.kind != "=":
            ops = sum(1 for op in f.fn.walk() if op is not f.fn)
            out.append(_mark(f.kind, f"func @{f.name} ({ops} ops)"))
        elif not f.equal:
            out.append(Line("head", f"@{f.name}"))
            out += [_mark(kind, text) for kind, text in f.signature]
            out += [_op_line(c, f) for c in f.ops]
    if d.resources:
        out.append(Line("head", "resources"))
        for r in d.resources:
            if r.kind == "~":
                text = f'resource "{r.key}": {r.before.header()} -> {r.after.header()}'
            else:
                text = f'resource "{r.key}": {(r.before or r.after).header()}'
            out.append(_mark(r.kind, text))
    return out


def _op_line(c: OpChange, f: FunctionDiff) -> Line:
    na, nb = f.match.names_a, f.match.names_b
    if c.kind == "-":
        return _mark("-", na.op_line(c.a))
    if c.kind == "+":
        return _mark("+", nb.op_line(c.b))
    subject = na.results(c.a)
    if subject and nb.results(c.b) != subject:
        subject += f" (now {nb.results(c.b)})"
    if c.a.name == c.b.name:
        subject = f"{subject} = {c.a.name}" if subject else c.a.name
    subject = subject or c.a.name
    return _mark("~", f"{subject}: {'; '.join(c.details)}{loc_text(c.a)}")


# -- the summary table -----------------------------------------------------------------------


def op_counts(d: ModuleDiff) -> dict[str, tuple[int, int, int]]:
    """Per op name: (removed, added, changed).  An op whose name changed counts as one of
    its old name removed and one of its new name added."""
    removed, added, changed = Counter(), Counter(), Counter()
    for f in d.functions:
        if f.kind == "-":
            removed.update(op.name for op in f.fn.walk() if op is not f.fn)
        elif f.kind == "+":
            added.update(op.name for op in f.fn.walk() if op is not f.fn)
        for c in f.ops:
            if c.kind == "-" or (c.kind == "~" and c.a.name != c.b.name):
                removed[c.a.name] += 1
            if c.kind == "+" or (c.kind == "~" and c.a.name != c.b.name):
                added[c.b.name] += 1
            if c.kind == "~" and c.a.name == c.b.name:
                changed[c.a.name] += 1
    names = sorted(set(removed) | set(added) | set(changed))
    return {n: (removed[n], added[n], changed[n]) for n in names}


def stat_lines(d: ModuleDiff) -> list[Line]:
    """Ops removed, added and changed per op and per dialect, then the other differences."""
    counts = op_counts(d)
    dialects: dict[str, list[int]] = {}
    for name, row in counts.items():
        acc = dialects.setdefault(name.split(".", 1)[0], [0, 0, 0])
        for i, n in enumerate(row):
            acc[i] += n
    total = [sum(row[i] for row in counts.values()) for i in range(3)]
    width = max([len(n) for n in counts] + [len("dialect")] + [len(n) + 2 for n in dialects])

    def fmt(label: str, row) -> str:
        return f"{label:<{width}}  {row[0]:>7}  {row[1]:>5}  {row[2]:>7}"

    out = [Line("head", f"{'op':<{width}}  {'removed':>7}  {'added':>5}  {'changed':>7}")]
    out += [Line(_row_kind(row), fmt(name, row)) for name, row in counts.items()]
    if dialects:
        out.append(Line("head", "dialect"))
        out += [Line(_row_kind(row), fmt(f"  {n}", row)) for n, row in sorted(dialects.items())]
    out.append(Line("head", fmt("total", total)))
    sig = sum(len(f.signature) for f in d.functions)
    funcs = Counter(f.kind for f in d.functions if f.kind != "=")
    res = Counter(r.kind for r in d.resources)
    notes = []
    if d.module:
        notes.append(f"module: {len(d.module)} attribute change{'s' * (len(d.module) > 1)}")
    if funcs:
        notes.append(f"functions: {funcs['-']} removed, {funcs['+']} added")
    if sig:
        notes.append(f"signatures: {sig} change{'s' * (sig > 1)}")
    if res:
        notes.append(f"resources: {res['-']} removed, {res['+']} added, {res['~']} changed")
    out += [Line("head", n) for n in notes]
    return out


def _row_kind(row) -> str:
    removed, added, changed = row
    if changed or (removed and added):
        return "~"
    return "-" if removed else "+"

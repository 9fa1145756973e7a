"""``pir diff --numeric``: run both programs on the same inputs and find where they part.

Both functions run on the reference runtime; every value of A that has a twin in B (the
structural matching's value pairing) is compared, in A's program order, and the first pair
that differs beyond the tolerances is the divergence: the op there, or one removed just
before it, is where the two programs stop computing the same thing.  The outputs are
compared position by position, so a renamed output still lines up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from pir.diff.changes import FunctionDiff
from pir.diff.report import Line
from pir.errors import PirError
from pir.ir.dialects.builtin import ConstantOp

__all__ = ["Divergence", "NumericReport", "compare_numerics", "numeric_lines"]


@dataclass
class Divergence:
    value_a: str
    value_b: str
    op_a: str
    op_b: str
    loc: str | None
    max_abs: float
    max_rel: float


@dataclass
class NumericReport:
    outputs: list[tuple[str, float, float, bool]] = field(default_factory=list)
    first: Divergence | None = None

    @property
    def ok(self) -> bool:
        return self.first is None and all(ok for *_, ok in self.outputs)


def errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """Max absolute and relative error (relative to |want|); inf when shapes differ."""
    if got.shape != want.shape:
        return float("inf"), float("inf")
    if got.dtype.kind not in "fcbiu" or want.dtype.kind not in "fcbiu":
        return (0.0, 0.0) if np.array_equal(got, want) else (float("inf"), float("inf"))
    if got.size == 0:
        return 0.0, 0.0
    wide = np.complex128 if "c" in got.dtype.kind + want.dtype.kind else np.float64
    g, w = got.astype(wide), want.astype(wide)
    diff = np.abs(g - w)
    diff = np.where(np.isnan(g) & np.isnan(w), 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    return float(diff.max()), float((diff / np.maximum(np.abs(w), 1e-30)).max())


def close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    if got.shape != want.shape:
        return False
    if got.dtype.kind not in "fc" and want.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))


def _run(module, fn, feeds: Mapping[str, np.ndarray], which: str):
    from pir.runtimes.reference.interpreter import Interpreter

    interp = Interpreter(module, keep_values=True)
    try:
        arrays = [np.asarray(feeds[a.name]) for a in fn.args]
        for a, arr in zip(fn.args, arrays):
            interp.check(a, arr, f"input '{a.name}'")
        outs = interp.call(fn, arrays)
    except KeyError as e:
        raise PirError(f"{which}: no input {e.args[0]} in the inputs") from None
    except PirError as e:
        raise PirError(f"{which}: {e.message}") from None
    return interp, outs


def compare_numerics(fd: FunctionDiff, inputs: Mapping[str, np.ndarray], rtol: float = 1e-4,
                     atol: float = 1e-5) -> NumericReport:
    """Run both versions of a function (matched in ``fd``) on ``inputs``, keyed by A's input
    names; B receives the same arrays position by position."""
    m = fd.match
    if m is None:
        raise PirError(f"@{fd.name} is not in both files")
    if len(m.a.args) != len(m.b.args):
        raise PirError(f"@{fd.name} takes {len(m.a.args)} inputs in the first file and "
                       f"{len(m.b.args)} in the second: they cannot run on the same inputs")
    interp_a, outs_a = _run(m.a.parent_op, m.a, inputs, "the first file")
    by_position = {b.name: inputs[a.name] for a, b in zip(m.a.args, m.b.args) if a.name in inputs}
    interp_b, outs_b = _run(m.b.parent_op, m.b, by_position, "the second file")
    report = NumericReport()
    ret = m.a.return_op.operands
    for i, (x, y) in enumerate(zip(outs_a, outs_b)):
        label = m.names_a(ret[i]) if i < len(ret) else f"output {i}"
        x, y = np.asarray(x), np.asarray(y)
        report.outputs.append((label, *errors(y, x), close(y, x, rtol, atol)))
    for op in m.a_ops:
        if isinstance(op, ConstantOp) or op not in m.ops:
            continue
        for r in op.results:
            twin = m.values.get(r)
            if twin is None or r not in interp_a.values or twin not in interp_b.values:
                continue
            x, y = interp_a.values[r], interp_b.values[twin]
            if not close(y, x, rtol, atol):
                report.first = Divergence(m.names_a(r), m.names_b(twin), op.name, twin.op.name,
                                          op.loc, *errors(y, x))
                return report
    return report


def numeric_lines(report: NumericReport, rtol: float, atol: float) -> list[Line]:
    """Each output's error, then the first divergence if any."""
    out = []
    for name, max_abs, max_rel, ok in report.outputs:
        out.append(Line("=" if ok else "!", f"output {name}: max abs err {max_abs:.3g}, "
                                        f"max rel err {max_rel:.3g}{'' if ok else '  DIFFERENT'}"))
    d = report.first
    if d is not None:
        renamed = "" if d.value_a == d.value_b else f" ({d.value_b} in the second file)"
        ops = d.op_a if d.op_a == d.op_b else f"{d.op_a} -> {d.op_b}"
        where = f" loc({json.dumps(d.loc, ensure_ascii=False)})" if d.loc else ""
        out.append(Line("!", f"first divergence at {d.value_a}{renamed}, the result of {ops}"
                         f"{where}: max abs err {d.max_abs:.3g}, max rel err {d.max_rel:.3g}"))
    elif report.ok:
        out.append(Line("=", "numerically the same on these inputs "
                             f"(rtol={rtol:g}, atol={atol:g})"))
    return out

"""Structural diff of two modules: what a pass, or an edit, changed in a program.

Not a text diff: functions are matched by symbol, ops by the names of their results and then
by location and structure (:mod:`pir.diff.matching`), so renumbered or renamed values are no
difference; constants compare by content, attributes with their defaults filled in.  What
differs is listed by :mod:`pir.diff.changes`, rendered by :mod:`pir.diff.report` (one line
per difference, or a table per op and dialect), and :mod:`pir.diff.numeric` runs both
programs to find the first value where they diverge.

    d = diff_modules(parse_file("00-input.pir"), parse_file("01-decompose.pir"))
    if not d.equal:
        print("\\n".join(line.text for line in diff_lines(d)))
"""

from pir.diff.changes import FunctionDiff, ModuleDiff, OpChange, ResourceChange, diff_modules
from pir.diff.matching import FunctionMatch, match_functions
from pir.diff.numeric import NumericReport, compare_numerics, numeric_lines
from pir.diff.report import Line, diff_lines, op_counts, stat_lines

__all__ = [
    "diff_modules", "ModuleDiff", "FunctionDiff", "OpChange", "ResourceChange",
    "FunctionMatch", "match_functions", "Line", "diff_lines", "stat_lines", "op_counts",
    "NumericReport", "compare_numerics", "numeric_lines", "pipeline_note",
]


def pipeline_note(path: str) -> str | None:
    """The pipeline a ``--dump-dir`` stage file records in its first line, if any."""
    if path == "-":
        return None
    try:
        with open(path, "rb") as f:
            first = f.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    prefix = "// pir-pipeline:"
    return first[len(prefix):].strip() if first.startswith(prefix) else None

"""Rule coverage: which ops each transformation's rule table covers (``pir ops``).

Every transformation keeps one table of rules keyed by op name (DESIGN §3).  A
:class:`Table` here says how to read one of them and which ops it must cover; adding a
transformation to ``pir ops`` is one entry in :data:`TABLES`.  An op a table must cover is
covered by a rule, or by a declared exemption (an nn op that ``decompose`` keeps, an op the
interpreter runs itself), which the matrix shows with a short label instead of a tick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Mapping

from pir.ir.core import OPS
from pir.ir.dialects import load_dialects

__all__ = ["Table", "TABLES", "Cell", "table_names", "get_table", "all_ops", "coverage",
           "Totals", "totals", "missing", "stray_rules", "problems", "kept_markdown", "kept_section",
           "with_kept_section"]


@dataclass(frozen=True)
class Table:
    """One rule table: ``rules()`` gives the op names that have a rule (loading the rule
    modules); ``must_cover(op)`` says whether the table must handle ``op``; ``exempt()``
    maps ops covered without a rule to the label the matrix shows for them."""

    name: str
    doc: str
    rules: Callable[[], Collection[str]]
    must_cover: Callable[[str], bool]
    exempt: Callable[[], Mapping[str, str]] = field(default=dict)
    scope: str = "ops"  # how the totals name the ops it must cover ("nn ops")


def _dialect(op: str) -> str:
    return op.split(".", 1)[0]


# -- evaluate: the reference runtime ---------------------------------------------------------

def _eval_rules() -> Collection[str]:
    from pir.runtimes.reference.registry import EVAL, REGION_EVAL, load_all

    load_all()
    return EVAL.keys() | REGION_EVAL.keys()


def _interpreter_ops() -> dict[str, str]:
    """Ops the interpreter runs itself rather than through a rule (see Interpreter.exec and
    run_block): containers, constants, calls and region terminators."""
    from pir.ir.dialects.builtin import ConstantOp, ModuleOp
    from pir.ir.dialects.func import CallOp, FuncOp
    from pir.ir.opdef import Terminator

    core = (ModuleOp, FuncOp, ConstantOp, CallOp)
    return {name: "core" for name, cls in OPS.items()
            if issubclass(cls, core) or Terminator in cls.traits}


# -- decompose: nn ops into prim ops ---------------------------------------------------------

def _decompose_rules() -> Collection[str]:
    from pir.passes.decompose.registry import DECOMPOSE, load_rules

    load_rules()
    return DECOMPOSE.keys()


def _decompose_kept() -> dict[str, str]:
    """Declared keeps, and nn region terminators, which stay with the op that owns them
    (the pass never looks at ``nn.yield``)."""
    from pir.ir.opdef import Terminator
    from pir.passes.decompose.registry import KEPT, load_rules

    load_rules()
    out = {name: "kept" for name in KEPT}
    out.update({name: "kept" for name, cls in OPS.items()
                if name.startswith("nn.") and Terminator in cls.traits})
    return out


# -- shard: SPMD rules of the prim ops ------------------------------------------------------

def _shard_rules() -> Collection[str]:
    from pir.passes.shard.registry import SPMD, load_rules

    load_rules()
    return SPMD.keys()


def _shard_replicated() -> dict[str, str]:
    """Ops declared to run replicated (no rule can shard them; docs/shard.md says why)."""
    from pir.passes.shard.registry import REPLICATED, load_rules

    load_rules()
    return {name: "replicate" for name in REPLICATED}


# -- vjp, jvp: automatic differentiation ---------------------------------------------------

def _autodiff_rules(table: str) -> Callable[[], Collection[str]]:
    def rules() -> Collection[str]:
        from pir.passes.autodiff.registry import JVP, VJP, load_rules

        load_rules()
        return (VJP if table == "vjp" else JVP).keys()

    return rules


def _autodiff_declared() -> dict[str, str]:
    """Ops whose derivative is declared: ``zero`` (floor, sign ...) or ``nondiff``
    (compares, integer ops, argmax, iota, random numbers)."""
    from pir.passes.autodiff.registry import DECLARED, load_rules

    load_rules()
    return {name: label for name, (label, _) in DECLARED.items()}


#: Every rule table, in the order of the matrix's columns.  Later transformations (vjp, jvp,
#: shard, lower) add one entry each, usually with ``must_cover=_is("prim")``.
TABLES: list[Table] = [
    Table("evaluate", "numpy rules of the reference runtime (pir/runtimes/reference)",
          _eval_rules, lambda op: True, _interpreter_ops),
    Table("decompose", "nn ops written with prim ops (pir/passes/decompose)",
          _decompose_rules, lambda op: _dialect(op) == "nn", _decompose_kept, scope="nn ops"),
    Table("vjp", "reverse-mode rules, transposes of the derivative (pir/passes/autodiff)",
          _autodiff_rules("vjp"), lambda op: _dialect(op) == "prim", _autodiff_declared,
          scope="prim ops"),
    Table("jvp", "forward-mode rules, the derivative (pir/passes/autodiff)",
          _autodiff_rules("jvp"), lambda op: _dialect(op) == "prim", _autodiff_declared,
          scope="prim ops"),
    Table("shard", "SPMD rules of the prim ops (pir/passes/shard)",
          _shard_rules, lambda op: _dialect(op) == "prim", _shard_replicated, scope="prim ops"),
]


def table_names() -> list[str]:
    return [t.name for t in TABLES]


def get_table(name: str) -> Table:
    for t in TABLES:
        if t.name == name:
            return t
    raise KeyError(name)


def all_ops(dialects: Collection[str] = ()) -> list[str]:
    """Every declared op (of ``dialects`` when given), sorted."""
    load_dialects()
    return sorted(n for n in OPS if not dialects or _dialect(n) in dialects)


# -- the matrix ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """How a table stands on one op: ``rule``, ``exempt`` (with ``label``), ``missing`` (a
    gap: the table must cover the op and does not), or ``none`` (not its business)."""

    status: str
    label: str = ""

    @property
    def gap(self) -> bool:
        return self.status == "missing"


def coverage(ops: list[str], tables: list[Table]) -> dict[str, dict[str, Cell]]:
    """``{op: {table: Cell}}`` for every op and table."""
    snapshot = [(t, set(t.rules()), dict(t.exempt())) for t in tables]
    out: dict[str, dict[str, Cell]] = {}
    for op in ops:
        row = {}
        for t, rules, exempt in snapshot:
            if op in rules:
                row[t.name] = Cell("rule")
            elif op in exempt:
                row[t.name] = Cell("exempt", exempt[op])
            elif t.must_cover(op):
                row[t.name] = Cell("missing")
            else:
                row[t.name] = Cell("none")
        out[op] = row
    return out


@dataclass(frozen=True)
class Totals:
    table: str
    scope: str
    must_cover: int
    rules: int  # rules among the ops it must cover
    exempt: dict[str, int]  # label -> count
    missing: int

    @property
    def covered(self) -> int:
        return self.must_cover - self.missing


def totals(matrix: dict[str, dict[str, Cell]], tables: list[Table]) -> list[Totals]:
    out = []
    for t in tables:
        cells = [row[t.name] for op, row in matrix.items() if t.must_cover(op)
                 or row[t.name].status in ("rule", "exempt")]
        exempt: dict[str, int] = {}
        for c in cells:
            if c.status == "exempt":
                exempt[c.label] = exempt.get(c.label, 0) + 1
        out.append(Totals(t.name, t.scope, len(cells), sum(c.status == "rule" for c in cells),
                          exempt, sum(c.gap for c in cells)))
    return out


def missing(table: Table, dialects: Collection[str] = ()) -> list[str]:
    """The ops ``table`` must cover (of ``dialects`` when given) that have neither a rule
    nor an exemption."""
    matrix = coverage(all_ops(dialects), [table])
    return [op for op, row in matrix.items() if row[table.name].gap]


def stray_rules(table: Table) -> list[str]:
    """Rules keyed by a name no op declares (a typo, or a rule for a removed op)."""
    load_dialects()
    return sorted(n for n in set(table.rules()) | set(table.exempt()) if n not in OPS)


def problems(table: Table, dialects: Collection[str] = ()) -> list[str]:
    """What ``pir ops --require`` reports for ``table``: the ops it must cover and does
    not, and rules for ops that do not exist; empty when the table is complete."""
    out = []
    gaps = missing(table, dialects)
    if gaps:
        out.append(f"{table.name}: {len(gaps)} {table.scope} without a rule: {', '.join(gaps)}")
    stray = stray_rules(table)
    if stray:
        out.append(f"{table.name}: rules for ops that do not exist: {', '.join(stray)}")
    return out


# -- docs ------------------------------------------------------------------------------------

def kept_markdown() -> str:
    """The section of docs/passes.md that lists the nn ops decompose keeps, and why."""
    from pir.passes.decompose.registry import KEPT, load_rules

    load_rules()
    lines = ["<!-- generated by `python -m pir.coverage kept`; do not edit by hand -->", ""]
    if not KEPT:
        lines.append("(none yet)")
    for name in sorted(KEPT):
        lines.append(f"- `{name}`: {KEPT[name]}")
    return "\n".join(lines) + "\n"


_BEGIN, _END = "<!-- kept:begin -->\n", "<!-- kept:end -->\n"


def kept_section(doc: str) -> str:
    """The generated section of a docs/passes.md text (between the markers)."""
    start = doc.index(_BEGIN) + len(_BEGIN)
    return doc[start:doc.index(_END, start)]


def with_kept_section(doc: str) -> str:
    """``doc`` with its generated section replaced by the current one."""
    start = doc.index(_BEGIN) + len(_BEGIN)
    return doc[:start] + kept_markdown() + doc[doc.index(_END, start):]


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    if args[:1] != ["kept"]:
        sys.exit("usage: python -m pir.coverage kept [--write docs/passes.md]")
    if args[1:2] == ["--write"]:
        path = args[2]
        with open(path, encoding="utf-8") as f:
            text = with_kept_section(f.read())
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(kept_markdown())

"""``pir ops``: the coverage matrix of ops against rule tables."""

from __future__ import annotations

import sys

import click

from pir.cli.common import run_command

#: How a cell is shown: a rule, a gap, or the exemption's own label ("kept", "core").
_GLYPH = {"rule": "✓", "missing": "–", "none": ""}
_STYLE = {"rule": "green", "missing": "bold red", "exempt": "yellow", "none": ""}


def _text(cell) -> str:
    return cell.label if cell.status == "exempt" else _GLYPH[cell.status]


def _totals_rows(tots) -> list[tuple[str, ...]]:
    rows = []
    for t in tots:
        exempt = ", ".join(f"{n} {label}" for label, n in sorted(t.exempt.items())) or "-"
        rows.append((t.table, f"{t.covered}/{t.must_cover} {t.scope}", str(t.rules), exempt,
                     str(t.missing)))
    return rows


_TOTALS_HEAD = ("table", "covered", "rules", "exempt", "missing")


def _plain(matrix, tables, tots) -> None:
    head = ["op"] + [t.name for t in tables]
    width = max([len(head[0])] + [len(op) for op in matrix]) + 2
    cols = [max([len(t.name), 5] + [len(_text(row[t.name])) for row in matrix.values()]) + 2
            for t in tables]
    header = head[0].ljust(width) + "".join(h.ljust(w) for h, w in zip(head[1:], cols))
    lines = [header.rstrip()]
    for op, row in matrix.items():
        cells = [_text(row[t.name]).ljust(w) for t, w in zip(tables, cols)]
        lines.append((op.ljust(width) + "".join(cells)).rstrip())
    rows = [_TOTALS_HEAD] + _totals_rows(tots)
    widths = [max(len(r[i]) for r in rows) + 2 for i in range(len(_TOTALS_HEAD))]
    lines.append("")
    for r in rows:
        lines.append("".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    click.echo("\n".join(lines))


def _rich(matrix, tables, tots) -> None:
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console(highlight=False)
    grid = RichTable(box=None, header_style="bold", pad_edge=False)
    grid.add_column("op")
    for t in tables:
        grid.add_column(t.name, justify="center")
    for op, row in matrix.items():
        cells = [row[t.name] for t in tables]
        grid.add_row(op, *(f"[{_STYLE[c.status]}]{_text(c)}[/]" if _STYLE[c.status] else _text(c)
                           for c in cells))
    console.print(grid)
    summary = RichTable(box=None, header_style="bold", pad_edge=False)
    for h in _TOTALS_HEAD:
        summary.add_column(h, justify="left" if h in ("table", "exempt") else "right")
    for r in _totals_rows(tots):
        summary.add_row(*r)
    console.print()
    console.print(summary)


@click.command("ops")
@click.option("--dialect", "dialects", multiple=True, metavar="NAME",
              help="Only ops of this dialect (nn, prim, ...); repeatable.")
@click.option("--require", "required", multiple=True, metavar="TABLE",
              help="Exit 1 when an op that TABLE must cover has no rule in it; repeatable.")
@click.option("--missing", "only_missing", is_flag=True, help="Only the rows with a gap.")
@run_command
def ops_cmd(dialects, required, only_missing):
    """Print which ops each rule table covers: a matrix of ops against tables.

    One column per transformation's rule table (evaluate: the reference runtime, must
    cover every op; decompose: must cover every nn op; ...).  A cell shows ✓ for a rule, –
    for a gap (an op the table must cover but does not), a label for an op covered by
    declaration (kept: decompose leaves it an nn op; core: the interpreter runs it itself),
    and nothing where the table has no business.  Totals per table follow.

    \b
    Examples:
      pir ops --dialect nn --missing
      pir ops --require decompose --require evaluate
    """
    from pir.coverage import (TABLES, all_ops, coverage, get_table, problems, table_names,
                              totals)
    from pir.errors import PirError, UsageError

    names = table_names()
    for name in required:
        if name not in names:
            raise UsageError(f"unknown table '{name}' (tables: {', '.join(names)})")
    known = sorted({op.split(".", 1)[0] for op in all_ops()})
    for d in dialects:
        if d not in known:
            raise UsageError(f"unknown dialect '{d}' (dialects: {', '.join(known)})")

    ops = all_ops(dialects)
    matrix = coverage(ops, TABLES)
    tots = totals(matrix, TABLES)
    shown = {op: row for op, row in matrix.items()
             if not only_missing or any(c.gap for c in row.values())}
    (_rich if sys.stdout.isatty() else _plain)(shown, TABLES, tots)

    found = [p for name in required for p in problems(get_table(name), dialects)]
    if found:
        raise PirError("\n  ".join(["missing rules"] + found))

"""``pir diff``: a structural diff of two .pir files (the logic is in :mod:`pir.diff`)."""

from __future__ import annotations

import sys

import click

from pir.cli.common import read_module, run_command

_STYLES = {"-": "red", "+": "green", "~": "yellow", "!": "bold red", "head": "bold", "=": ""}


@click.command("diff")
@click.argument("a", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("b", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--stat", is_flag=True,
              help="Print a table of ops removed, added and changed per op and per dialect.")
@click.option("--numeric", "inputs", type=click.Path(dir_okay=False), metavar="IN.npz",
              help="Also run both on these inputs (reference runtime) and report the first "
                   "value where they diverge.")
@click.option("--func", default="main", show_default=True, help="The function --numeric runs.")
@click.option("--rtol", default=1e-4, show_default=True, help="Relative tolerance of --numeric.")
@click.option("--atol", default=1e-5, show_default=True, help="Absolute tolerance of --numeric.")
def diff_cmd(a, b, stat, inputs, func, rtol, atol):
    """Compare two .pir files structurally: A (before) against B (after).

    Values are matched by name, then by location and structure, so renumbered or renamed
    values are no difference; constants compare by content.  Prints one line per removed
    (-), added (+) or changed (~) op, function signature and resource, or with --stat a
    table per op and dialect.  Exit status: 0 equal, 1 different, 2 error (as diff(1)).

    \b
    Examples:
      pir diff m.pir o.pir
      pir optimize m.pir --dump-dir stages -o o.pir && pir diff stages/00-input.pir stages/01-*.pir
      pir diff m.pir o.pir --stat
      pir diff m.pir o.pir --numeric inputs.npz
    """
    try:
        status = _diff(a, b, stat, inputs, func, rtol, atol)
    except SystemExit as e:  # run_command exits only on errors, which are status 2 here
        raise SystemExit(e.code if e.code in (0, 130) else 2) from None
    sys.exit(status)


@run_command
def _diff(a, b, stat, inputs, func, rtol, atol) -> int:
    from rich.console import Console
    from rich.text import Text

    from pir.diff import compare_numerics, diff_lines, diff_modules, numeric_lines, stat_lines
    from pir.errors import PirError, UsageError
    from pir.runtimes.inputs import load_inputs

    if a == b == "-":
        raise UsageError("only one of the two files can be read from stdin ('-')")
    d = diff_modules(read_module(a), read_module(b))
    lines = []
    if not d.equal:
        if stat:
            lines = stat_lines(d)
        else:
            lines = diff_lines(d, _label(a), _label(b))
    different = not d.equal
    if inputs:
        fd = d.function(func)
        if fd is None or fd.match is None:
            raise PirError(f"--numeric: @{func} is not in both files")
        report = compare_numerics(fd, load_inputs(inputs, ()), rtol, atol)
        lines += numeric_lines(report, rtol, atol)
        different = different or not report.ok
    console = Console(highlight=False, soft_wrap=True)
    for line in lines:
        console.print(Text(line.text, style=_STYLES.get(line.kind, "")))
    return 1 if different else 0


def _label(path: str) -> str:
    from pir.diff import pipeline_note

    note = pipeline_note(path)
    if not note:
        return path
    return f"{path}  {note}" if note.startswith("(") else f"{path}  (pipeline: {note})"

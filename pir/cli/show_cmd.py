"""``pir show``: a summary of a .pir file."""

from __future__ import annotations

import click

from pir.cli.common import read_module, run_command


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@click.command("show")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@run_command
def show_cmd(input: str) -> None:
    """Summarise INPUT: signature with symbolic dims, ops per dialect and per op, parameters.

    \b
    Example:
      pir show m.pir
    """
    from rich.console import Console
    from rich.table import Table

    from pir.ir.summary import summarize

    module = read_module(input)
    console = Console(highlight=False)
    for s in summarize(module):
        console.print(f"[bold]@{s.name}[/bold]: {s.num_ops} ops, {s.num_params} parameters "
                      f"({s.param_elements:,} elements, {_bytes(s.param_bytes)}; "
                      f"{s.resource_params} in resources)")
        sig = Table(box=None, show_header=True, header_style="bold")
        sig.add_column("")
        sig.add_column("name")
        sig.add_column("type")
        for n, t in s.inputs:
            sig.add_row("input", n, t)
        for n, t in s.outputs:
            sig.add_row("output", n, t)
        console.print(sig)
        if s.symbols:
            console.print("symbolic dims: " + ", ".join(s.symbols))
        ops = Table(box=None, show_header=True, header_style="bold")
        ops.add_column("dialect")
        ops.add_column("op")
        ops.add_column("count", justify="right")
        for dialect, count in sorted(s.ops_by_dialect.items()):
            ops.add_row(dialect, "", str(count))
            for name, c in sorted(s.ops_by_name.items()):
                if name.startswith(dialect + "."):
                    ops.add_row("", name, str(c))
        console.print(ops)

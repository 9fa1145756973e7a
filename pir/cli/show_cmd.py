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


def _count(n: float, unit: str) -> str:
    for prefix in ("", "K", "M", "G", "T"):
        if n < 1000 or prefix == "T":
            return f"{n:.3g} {prefix}{unit}"
        n /= 1000
    return str(n)


def _print_kept(console, fn, dims) -> None:
    """For a reverse-mode derivative: what its forward part keeps for its backward part."""
    from pir.passes.autodiff.memory import has_backward, kept

    if fn is None or not has_backward(fn):
        return
    k = kept(fn, dims)
    line = f"kept between forward and backward: {k.count} values, {k.nbytes} bytes"
    if k.unsized:
        line += (f" (not counting {len(k.unsized)} values whose sizes depend on symbolic dims: "
                 "give them with --dim)")
    console.print(line, soft_wrap=True)


def _print_uncompiled(console, module) -> None:
    """For a compiled program: the ops that still run on the host, and why."""
    from pir.codegen.uncompiled import uncompiled_lines

    if any(op.name.startswith("kernel.") for op in module.walk()):
        for line in uncompiled_lines(module):
            console.print(line.strip() if line.startswith("  not") else line, soft_wrap=True,
                          markup=False)


@click.command("show")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--dim", "dims", multiple=True, metavar="SYM=N",
              help="Size of a symbolic dim, for the FLOP and byte estimates (repeatable).")
@run_command
def show_cmd(input: str, dims: tuple[str, ...]) -> None:
    """Summarise INPUT: signature with symbolic dims, ops per dialect and per op, parameters,
    estimated FLOPs and bytes computed, fusion groups and kernels; for a reverse-mode
    derivative (`pir autodiff`), the values its forward part keeps for its backward part.

    FLOPs count a multiply-add as 2 (matrix products and convolutions from their shapes,
    elementwise ops and reductions one per element); ops whose sizes depend on a symbolic
    dim are counted once its size is given with --dim.

    \b
    Examples:
      pir show m.pir
      pir show m.pir --dim B=8
    """
    from rich.console import Console
    from rich.table import Table

    from pir.ir.summary import summarize
    from pir.runtimes.inputs import parse_dims

    module = read_module(input)
    console = Console(highlight=False)
    for s in summarize(module, parse_dims(dims)):
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
        cost = f"compute: {_count(s.flops, 'FLOP')}, {_bytes(s.bytes_computed)} computed"
        if s.unknown_cost_ops:
            cost += (f" (not counting {s.unknown_cost_ops} ops whose sizes depend on symbolic "
                     "dims: give them with --dim)")
        console.print(cost)
        _print_kept(console, module.lookup(s.name), parse_dims(dims))
        _print_uncompiled(console, module)
        if s.groups_by_kind:
            console.print("fusion: " + ", ".join(f"{n} {k}" for k, n in sorted(s.groups_by_kind.items())))
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

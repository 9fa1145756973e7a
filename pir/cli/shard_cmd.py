"""``pir shard``: SPMD sharding of a program over a mesh of ranks."""

from __future__ import annotations

import sys

import click

from pir.cli.common import read_module, run_command, write_module_to


def _dims(pairs) -> dict[str, int]:
    from pir.errors import UsageError

    out = {}
    for p in pairs:
        name, eq, size = p.partition("=")
        if not eq or not size.strip().isdigit():
            raise UsageError(f"bad --dim '{p}': expected SYM=N")
        out[name.strip()] = int(size)
    return out


def _print_report(result) -> None:
    """The plan's costs as rich tables on stderr (plain text when it is not a terminal)."""
    from rich.console import Console
    from rich.table import Table

    from pir.passes.shard.report import human

    console = Console(stderr=True, highlight=False)
    s, mesh = result.summary, result.mesh
    params = Table(title=f"split parameters on {mesh}", box=None, header_style="bold",
                   title_justify="left")
    for h, j in (("parameter", "left"), ("type", "left"), ("placements", "left"),
                 ("per rank", "right")):
        params.add_column(h, justify=j)
    for name, t, placements, n in s.parameters:
        params.add_row(name, t, placements, human(n))
    console.print(params)
    comm = Table(title="collectives per step", box=None, header_style="bold",
                 title_justify="left")
    for h, j in (("collective", "left"), ("axis", "left"), ("value", "left"),
                 ("layouts", "left"), ("bytes", "right")):
        comm.add_column(h, justify=j)
    for c in s.collectives:
        src = "[" + ", ".join(map(str, c.src.placements(mesh))) + "]"
        dst = "[" + ", ".join(map(str, c.dst.placements(mesh))) + "]"
        comm.add_row(c.kind, c.axis, "%" + c.value, f"{src} -> {dst}", f"{c.bytes:,}")
    console.print(comm)
    totals = Table(title="totals (per rank)", box=None, header_style="bold",
                   title_justify="left", show_header=False)
    totals.add_column("what")
    totals.add_column("bytes", justify="right")
    totals.add_column("", justify="left")
    counts = ", ".join(f"{s.count(k)} {k}" for k in
                       ("all_reduce", "all_gather", "reduce_scatter", "all_to_all") if s.count(k))
    totals.add_row("communication per step", f"{s.comm_bytes:,}", counts or "none")
    share = s.weight_bytes / s.weight_bytes_total if s.weight_bytes_total else 1.0
    totals.add_row("parameters", f"{s.weight_bytes:,}",
                   f"{share:.3f} of {human(s.weight_bytes_total)} "
                   f"(1/{mesh.num_ranks} = {1 / mesh.num_ranks:.3f})")
    totals.add_row("activations (peak)", f"{s.activation_bytes:,}", "")
    totals.add_row("memory", f"{s.memory:,}", human(s.memory))
    if result.max_memory is not None:
        what = "memory bound" if result.bound_on == "memory" else "parameter bound"
        totals.add_row(f"{what} (--auto)", f"{result.max_memory:,}", human(result.max_memory))
    console.print(totals)


@click.command("shard")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@click.option("--mesh", required=True, metavar="AXIS=N,...",
              help="The mesh of ranks: named axes with sizes, e.g. tp=2 or dp=2,tp=2.")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), metavar="SPEC.toml",
              help='Placements by value-name glob: "*fc1.w" = ["R", "S(1)"] (one per mesh '
                   "axis; inputs, weights and any value by its name in the .pir file).")
@click.option("--place", "places", multiple=True, metavar="NAME=[P,...]",
              help="One spec entry on the command line, e.g. 'x=[S(0), R]' (repeatable; "
                   "after --spec's entries).")
@click.option("--auto", is_flag=True,
              help="Also choose placements for the parameters the spec leaves open: the "
                   "least estimated communication within --max-memory.")
@click.option("--max-memory", metavar="BYTES",
              help="Memory bound per rank for --auto (e.g. 512MB, 2GiB); default: the "
                   "parameters split evenly over the mesh axes no input is split on.")
@click.option("--dim", "dims", multiple=True, metavar="SYM=N",
              help="Size of a symbolic dim for the cost model (default 1; repeatable).")
@click.option("--report", is_flag=True,
              help="Print memory per rank, each collective with its bytes, and the total "
                   "communication per step (stderr).")
@click.option("--global-view", is_flag=True,
              help="Stop before the per-rank program: write the sharded global-view program "
                   "(global shapes, runs as it is on one process).")
@click.option("--split-weights", "split_weights", type=click.Path(file_okay=False),
              metavar="DIR",
              help="Write each rank's blocks of the split weights to DIR/rank<r>.npz (each "
                   "rank then loads only its own file) instead of keeping the whole weights "
                   "in the program; needs -o FILE (the program names DIR relative to it).")
@click.option("--func", help="The function to shard (default: main).")
@run_command
def shard_cmd(input, output, mesh, spec_path, places, auto, max_memory, dims, report,
              global_view, split_weights, func):
    """Shard INPUT over a mesh of ranks, SPMD style.

    From the placements the spec gives (and, with --auto, those it chooses for the
    parameters), every value gets a layout by propagation through the SPMD rules; where a
    consumer needs another layout than its operand has, the cheapest collectives are
    inserted (all_reduce, all_gather, reduce_scatter, all_to_all; a local slice for R ->
    S), each with a `shard.why` attribute naming the two layouts.  The program must be in
    prim ops (`pir optimize -p decompose` first): every op without an SPMD rule is listed
    at once.  Unannotated inputs are replicated.  A split must divide its dim (no padding).

    The output is the per-rank program (local shapes, weights sliced per rank at load, or
    written per rank with --split-weights); with --global-view, the sharded program in the
    global view, which runs as it is.

    \b
    Examples:
      pir shard m.pir --mesh tp=2 --auto --report -o s.pir
      pir shard m.pir --mesh dp=2,tp=2 --spec s.toml -o s.pir
      pir shard m.pir --mesh tp=2 --place 'w1=[S(1)]' --place 'w2=[S(0)]' --global-view -o g.pir
      pir shard m.pir --mesh tp=2 --auto --split-weights s.weights -o s.pir
    """
    import os

    from pir.errors import UsageError
    from pir.passes.shard.driver import shard_module
    from pir.passes.shard.localize import localize
    from pir.passes.shard.spec import parse_place, read_spec

    if split_weights is not None:
        if global_view:
            raise UsageError("--split-weights writes the per-rank program's weights: it cannot "
                             "be used with --global-view")
        if not output or output == "-":
            raise UsageError("--split-weights needs -o FILE: the program names the weight "
                             "directory relative to its own file")

    spec: list[tuple[str, list[str]]] = []
    if spec_path:
        spec.extend(read_spec(spec_path).items())
    spec.extend(parse_place(p) for p in places)
    module = read_module(input)
    result = shard_module(module, mesh, spec, auto=auto, max_memory=max_memory,
                          dims=_dims(dims), func=func)
    if report:
        _print_report(result)
    if split_weights is not None:
        ref = os.path.relpath(split_weights, os.path.dirname(output) or ".")
        localize(module, split_weights=split_weights, weights_ref=ref)
    elif not global_view:
        localize(module)
    write_module_to(module, output)
    sys.stdout.flush()

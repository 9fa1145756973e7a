"""``pir run --steps N``: iterate a training step, print the loss per step, save what was
trained.  The loop itself is :func:`pir.runtimes.train_loop.train`."""

from __future__ import annotations

import sys

import click
import numpy as np

from pir.cli.common import AtomicOutput


def run_steps(module, fn, feeds, steps: int, runtime: str | None, output: str | None,
              every: int = 1, *, ranks: int | None = None, dist: str | None = None,
              program: str | None = None, kernels=None) -> None:
    """Train for ``steps`` steps: one ``step i/N: loss L  metric M ...`` line (the names
    are the step's output names) for the first step, every ``every`` steps and the last, on
    stdout (and the last one), a progress bar on stderr when it is a terminal; ``output``
    (.npz) receives the final parameters and optimizer state, keyed by input name.

    A sharded step (``pir shard``) runs on ranks, as ``pir run`` runs one (``ranks``,
    ``dist="mpi"``, or a per-rank program): each rank keeps its blocks of the parameters
    from step to step (``pir/runtimes/dist/train.py``); under MPI rank 0 alone prints and
    writes.  ``kernels``: a pir.runtimes.select.KernelPolicy."""
    if ranks or dist or "dist.per_rank" in module.attributes:
        from pir.runtimes.dist.cli import train_distributed

        def train_all(on_step):
            return train_distributed(program, module, feeds, steps, ranks=ranks, backend=dist,
                                     func=fn.sym_name, on_step=on_step)
    else:
        from pir.runtimes.select import KernelPolicy, make_interpreter
        from pir.runtimes.train_loop import train

        interp = make_interpreter(module, runtime, kernels=kernels or KernelPolicy())

        def train_all(on_step):
            return train(module, fn, feeds, steps, interp, on_step)

    width = len(str(steps))

    def line(i: int, values: dict[str, float]) -> str:
        shown = "  ".join(f"{k} {v:.6g}" for k, v in values.items())
        return f"step {i:>{width}}/{steps}: {shown}"

    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        console = Console(stderr=True, highlight=False)
        with Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.description}"), console=console,
                      transient=True) as bar:
            task = bar.add_task("", total=steps)

            # lines for a terminal go above the bar; lines for a pipe or file to stdout
            echo = bar.console.print if sys.stdout.isatty() else click.echo

            def on_step(i: int, values: dict[str, float]) -> None:
                loss = next(iter(values.values()))
                bar.update(task, advance=1, description=f"loss {loss:.6g}")
                if i % every == 0 or i in (1, steps):
                    echo(line(i, values))

            final = train_all(on_step)
    else:
        def on_step(i: int, values: dict[str, float]) -> None:
            if i % every == 0 or i in (1, steps):
                click.echo(line(i, values))

        final = train_all(on_step)
    if final is None:  # an MPI rank other than 0
        return
    if output:
        if not output.endswith(".npz"):
            raise click.UsageError("with --steps, -o writes the trained values to an .npz")
        with AtomicOutput(output) as f:
            np.savez(f, **final)

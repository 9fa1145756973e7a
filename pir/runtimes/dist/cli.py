"""What ``pir run --ranks N`` and ``pir run --dist mpi`` do after the inputs are read: run
the program on ranks, then write, summarise or check the assembled outputs as a plain
``pir run`` does.  Under MPI every rank runs and assembles the outputs, and rank 0 alone
writes and prints; a rank that fails aborts the job (the others would wait at the next
collective forever)."""

from __future__ import annotations

import sys

import click
import numpy as np

from pir.errors import PirError

__all__ = ["run_distributed", "train_distributed"]


def run_distributed(program: str, module, feeds: dict, *, ranks: int | None, backend: str | None,
                    output: str | None, check_model: str | None, rtol: float, atol: float,
                    func: str, repeat: int | None) -> None:
    if backend == "mpi":
        _run_mpi(program, module, feeds, ranks, output, check_model, rtol, atol, func, repeat)
        return
    import time

    from pir.runtimes.dist.runner import RankedRun

    run = RankedRun(module, ranks, func, program)
    outputs = run.run(feeds)
    if repeat:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run.run(feeds)
            times.append(time.perf_counter() - t0)
        _latency(times, f"{run.mesh.num_ranks} ranks in one process")
    _report(outputs, output, check_model, feeds, rtol, atol)


def _mpi_comm(module, ranks):
    """This process's communicator in the MPI job, after every rank has checked that the
    job fits the program's mesh (rank 0 reports a misfit, and all exit 1)."""
    from pir.passes.shard.localize import program_mesh
    from pir.runtimes.dist.mpi import MpiComm, mpi_world

    world = mpi_world()
    mesh = program_mesh(module)
    problem = None
    if mesh is None:
        problem = ("the program is not sharded: it has no !dist.tensor values and no "
                   "dist.per_rank mesh (shard it with `pir shard`)")
    elif mesh.num_ranks != world.Get_size():
        problem = (f"the program's mesh {mesh} has {mesh.num_ranks} ranks, but mpiexec started "
                   f"{world.Get_size()} process{'es' if world.Get_size() > 1 else ''} "
                   f"(mpiexec -n {mesh.num_ranks} ...)")
    elif ranks is not None and ranks != world.Get_size():
        problem = f"--ranks {ranks} but mpiexec started {world.Get_size()} processes"
    if problem:  # every rank finds it: rank 0 says it, all exit 1
        if world.Get_rank() == 0:
            raise PirError(problem)
        sys.exit(1)
    return MpiComm(mesh, world)


def _abort(comm, e: PirError) -> None:
    """A rank failed: say so and end the job (the others may wait at a collective)."""
    if comm.world.Get_size() == 1:
        raise e
    click.echo(f"pir: error: rank {comm.rank}: {e.message}", err=True)
    sys.stderr.flush()
    comm.world.Abort(1)


def _run_mpi(program, module, feeds, ranks, output, check_model, rtol, atol, func, repeat):
    from pir.runtimes.dist.runner import run_rank

    comm = _mpi_comm(module, ranks)
    try:
        outputs, times = run_rank(module, feeds, comm, func, program, repeat or 0)
    except PirError as e:
        _abort(comm, e)
    if comm.rank != 0:
        return
    if repeat:
        _latency(times, f"{comm.mesh.num_ranks} MPI processes")
    _report(outputs, output, check_model, feeds, rtol, atol)


def train_distributed(program: str, module, feeds: dict, steps: int, *, ranks: int | None,
                      backend: str | None, func: str, on_step) -> dict | None:
    """``pir run --steps N`` of a sharded step on ranks (``pir/runtimes/dist/train.py``):
    the trained values, whole; under MPI, None on the ranks other than 0, which neither
    print nor write."""
    from pir.runtimes.dist.train import train_rank, train_ranks

    if backend != "mpi":
        return train_ranks(module, feeds, steps, ranks, func, program, on_step)[0].final
    from pir.runtimes.dist.interpreter import RankInterpreter
    from pir.runtimes.dist.runner import prepare, weights_dir

    comm = _mpi_comm(module, ranks)
    try:
        fn, _ = prepare(module, comm.mesh.num_ranks, func)
        interp = RankInterpreter(module, comm, weights_dir(module, program))
        interp.load(fn, release=True)
        done = train_rank(module, fn, interp, feeds, steps, on_step)
    except PirError as e:
        _abort(comm, e)
    return done.final if comm.rank == 0 else None


def _latency(times: list[float], where: str) -> None:
    median = float(np.median(times)) * 1e3
    click.echo(f"latency: median {median:.3f} ms over {len(times)} runs ({where})", err=True)


def _report(outputs, output, check_model, feeds, rtol, atol) -> None:
    from pir.cli.run_cmd import write_outputs

    if check_model:
        _check(outputs, check_model, feeds, rtol, atol)
    else:
        write_outputs(outputs, output)


def _check(outputs, model_path, feeds, rtol, atol) -> None:
    """Each assembled output against ONNX Runtime's, printed as ``pir run --check`` does."""
    from pir.frontends.onnx.importer import load_model
    from pir.runtimes.ort.check import close, errors, run_onnxruntime

    theirs = run_onnxruntime(load_model(model_path), feeds)
    width = max([len(n) for n in theirs] + [6])
    click.echo(f"{'output':<{width}}  {'max abs err':>12}  {'max rel err':>12}  result")
    ok = True
    for name, want in theirs.items():
        got = outputs.get(name)
        if got is None:
            click.echo(f"{name:<{width}}  {'inf':>12}  {'inf':>12}  MISMATCH  (no such output "
                       "in the .pir program)")
            ok = False
            continue
        abs_err, rel_err = errors(got, want)
        good = close(got, want, rtol, atol)
        ok &= good
        click.echo(f"{name:<{width}}  {abs_err:>12.3g}  {rel_err:>12.3g}  "
                   f"{'ok' if good else 'MISMATCH'}")
    if not ok:
        click.echo(f"pir: error: outputs differ from ONNX Runtime beyond rtol={rtol}, "
                   f"atol={atol}", err=True)
        sys.exit(1)

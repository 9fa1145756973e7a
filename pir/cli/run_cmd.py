"""``pir run``: execute a .pir program, optionally checking it against ONNX Runtime."""

from __future__ import annotations

import io
import sys

import click
import numpy as np

from pir.cli.common import AtomicOutput, read_module, run_command


@click.command("run")
@click.argument("program", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--inputs", "inputs_npz", type=click.Path(dir_okay=False),
              help="An .npz whose keys are the program's input names.")
@click.option("--input", "input_pairs", multiple=True, metavar="NAME=FILE.npy",
              help="One input from an .npy file (repeatable).")
@click.option("-o", "--output", help="Write the outputs to this .npz (keys: output names).")
@click.option("--check", "check_model", type=click.Path(dir_okay=False),
              help="Also run this ONNX model with ONNX Runtime and compare every output.")
@click.option("--seed", default=0, show_default=True,
              help="Seed for the inputs made up when none are given.")
@click.option("--dim", "dims", multiple=True, metavar="SYM=N",
              help="Size of a symbolic dim for made-up inputs (default 2; repeatable).")
@click.option("--rtol", default=1e-3, show_default=True,
              help="Relative tolerance of --check: each element must satisfy |ours - ort| <= "
                   "max(ATOL, ATOL_SCALE * max|ort|) + RTOL * |ort|, max|ort| the largest "
                   "finite magnitude of that output (ONNX's backend tests and onnxruntime's "
                   "model tests use rtol 1e-3 for float32).")
@click.option("--atol", default=1e-7, show_default=True,
              help="Absolute tolerance of --check, a floor under the scaled one (ONNX's "
                   "backend tests use atol 1e-7).")
@click.option("--atol-scale", default=1e-4, show_default=True, metavar="K",
              help="Absolute tolerance of --check relative to each output's scale: "
                   "K * max|ort| (float32 sums over thousands of terms through a dozen layers "
                   "stay within 1e-4 of the scale; 0: --atol alone).")
@click.option("--func", default="main", show_default=True, help="The function to run.")
@click.option("--runtime", type=click.Choice(["reference", "tvm", "cuda"]),
              help="reference (numpy), tvm (compiled kernel.tvm ops) or cuda (kernel.cuda "
                   "ops on a GPU); default: the one the program's kernels are for, else "
                   "reference.")
@click.option("--repeat", type=click.IntRange(min=1), metavar="N",
              help="Run N more times and print their median latency (stderr); the outputs "
                   "written are the last run's.")
@click.option("--threads", type=click.IntRange(min=1), metavar="N",
              help="Run compiled (tvm) kernels on N threads (at most TVM_NUM_THREADS, default "
                   "every CPU).  numpy's BLAS runs on one thread, since its spinning threads "
                   "and TVM's starve each other, unless OPENBLAS_NUM_THREADS or "
                   "OMP_NUM_THREADS is set.")
@click.option("--profile", is_flag=True,
              help="Print time per kernel (by symbol) and per op kind to stderr: calls, "
                   "total ms, share (with --repeat: over the timed runs).")
@click.option("--steps", type=click.IntRange(min=1), metavar="N",
              help="Iterate a training step N times (outputs new_X feed inputs X; inputs not "
                   "given come from @<func>_init), printing the loss per step; -o then saves "
                   "the trained values (.npz).  See `pir autodiff --train`.")
@click.option("--every", type=click.IntRange(min=1), default=1, show_default=True, metavar="K",
              help="With --steps: print the loss every K steps (and at the first and last).")
@click.option("--ranks", type=click.IntRange(min=1), metavar="N",
              help="Run a sharded program (`pir shard`) on N ranks in this process, one "
                   "thread each (N must be the mesh's size); outputs are assembled.")
@click.option("--dist", "dist_backend", type=click.Choice(["mpi"]),
              help="Run as one rank of an MPI job: mpiexec -n N pir run S.pir --dist mpi.")
@click.option("--trust-kernels", is_flag=True,
              help="Build and run the kernel sources stored in PROGRAM as they are, even those "
                   "this pir would not generate from their regions.  They are native code (and "
                   "TVMScript is Python): use only for a file you trust as a binary "
                   "(docs/security.md).")
@click.option("--check-bounds", is_flag=True,
              help="Build the tvm kernels in a debug mode that checks every memory access "
                   "against its buffer's bounds (slower; an access out of bounds is an error "
                   "naming the kernel).")
@run_command
def run_cmd(program, inputs_npz, input_pairs, output, check_model, seed, dims, rtol, atol,
            atol_scale, func, runtime, repeat, threads, profile, steps, ranks, dist_backend,
            every, trust_kernels, check_bounds):
    """Run PROGRAM on the reference runtime (numpy), or on the tvm runtime when it holds
    kernels made by `pir codegen` (kernels cached in $PIR_CACHE_DIR or ~/.cache/pir).

    Inputs come from --inputs/--input; with --check and no inputs, seeded random ones are
    made up from the signature.  Without -o, prints a summary of each output.  With --check,
    prints each output's max absolute and relative error against ONNX Runtime; on a mismatch
    it names the first intermediate value that diverges (as the program computed it) and
    exits 1.  An output matches when every element has

    \b
      |ours - ort| <= max(atol, atol_scale * max|ort|) + rtol * |ort|

    (defaults 1e-7, 1e-4 and 1e-3; NaN matches NaN, integers must be equal).

    \b
    Examples:
      pir run m.pir --inputs in.npz -o out.npz
      pir run m.pir --input x=x.npy
      pir run m.pir --check model.onnx
      pir run k.pir --inputs in.npz --runtime tvm --repeat 20
      pir run k.pir --inputs in.npz --threads 4 --profile
    """
    from pir.errors import PirError
    from pir.ir.dialects.func import FuncOp
    from pir.runtimes.inputs import check_dims, load_inputs, parse_dims, random_inputs
    from pir.runtimes.select import KernelPolicy, default_runtime, make_interpreter

    module = read_module(program)
    kernels = KernelPolicy(trust=trust_kernels, check_bounds=check_bounds)
    fn = module.lookup(func)
    if not isinstance(fn, FuncOp):
        raise PirError(f"the program has no function @{func}", file=program)
    dim_sizes = check_dims(fn, parse_dims(dims))  # usage errors before any input is read
    feeds = load_inputs(inputs_npz, input_pairs)
    if steps:
        from pir.cli.run_steps import run_steps

        run_steps(module, fn, feeds, steps, runtime, output, every, ranks=ranks,
                  dist=dist_backend, program=program, kernels=kernels)
        return
    if not feeds and fn.args:
        if not check_model:
            names = ", ".join(a.name for a in fn.args)
            raise PirError(f"no inputs given: @{func} takes {names} (use --inputs or --input)")
        feeds = random_inputs(fn, seed, dim_sizes)
    if ranks or dist_backend or "dist.per_rank" in module.attributes:  # pir/runtimes/dist
        from pir.runtimes.dist.cli import run_distributed
        from pir.runtimes.ort.check import ATOL_SCALE

        if check_model and atol_scale != ATOL_SCALE:  # (the ranks' check takes the default)
            raise PirError("--atol-scale cannot be used with a sharded program's --check")
        return run_distributed(program, module, feeds, ranks=ranks, backend=dist_backend,
                               output=output, check_model=check_model, rtol=rtol, atol=atol,
                               func=func, repeat=repeat)
    if profile and check_model:
        raise PirError("--profile cannot be used with --check")
    if threads and (runtime or default_runtime(module)) == "tvm":
        from pir.codegen.tvm.build import set_threads

        set_threads(threads)
    if check_model:
        _check(module, check_model, feeds, rtol, atol, func, runtime, kernels, atol_scale)
        return
    prof = {} if profile else None
    interp = make_interpreter(module, runtime, profile=prof, kernels=kernels)
    outputs = interp.run(fn, feeds)
    if repeat:
        if prof is not None:
            prof.clear()  # the first run warms up: profile the timed ones
        outputs = _time(interp, fn, feeds, repeat)
    if prof is not None:
        _print_profile(prof, repeat or 1, type(interp).__name__)
    write_outputs(outputs, output)


def write_outputs(outputs: dict[str, np.ndarray], output: str | None) -> None:
    """The outputs as an .npz at ``output`` ('-': stdout, for pipes), or a summary line per
    output when there is no ``output``."""
    if output == "-":
        buf = io.BytesIO()
        np.savez(buf, **outputs)
        sys.stdout.buffer.write(buf.getvalue())
        sys.stdout.buffer.flush()
    elif output:
        with AtomicOutput(output) as f:
            np.savez(f, **outputs)
    else:
        _summarize(outputs)


def _summarize(outputs: dict[str, np.ndarray]) -> None:
    for name, arr in outputs.items():
        head = f"{name}: {arr.dtype}{list(arr.shape)}"
        if arr.size and arr.dtype.kind in "fiub":
            a = arr.astype(np.float64)
            head += f"  min {a.min():.6g}  max {a.max():.6g}  mean {a.mean():.6g}"
        flat = arr.reshape(-1)[:6]
        more = " ..." if arr.size > 6 else ""
        click.echo(f"{head}\n  [{', '.join(str(x) for x in flat)}{more}]")


def _time(interp, fn, feeds, repeat: int) -> dict[str, np.ndarray]:
    """Run ``repeat`` times, print the median latency, and return the last run's outputs
    (a compiled program's later runs follow its execution plan, not the first run's path:
    those are the outputs worth writing)."""
    import time

    times = []
    for _ in range(repeat):
        interp.values.clear()
        interp.symbols.clear()
        t0 = time.perf_counter()
        outputs = interp.run(fn, feeds)
        times.append(time.perf_counter() - t0)
    median = float(np.median(times)) * 1e3
    click.echo(f"latency: median {median:.3f} ms over {repeat} runs "
               f"({type(interp).__name__})", err=True)
    return outputs


def _print_profile(prof: dict, runs: int, runtime: str) -> None:
    """The profile of an Interpreter (``(kind, name) -> [calls, seconds]``) as a table,
    the most expensive first, on stderr."""
    total = sum(sec for _, sec in prof.values()) or 1.0
    rows = sorted(prof.items(), key=lambda kv: (-kv[1][1], kv[0]))
    width = max([len(name) for (_, name) in prof] + [4])
    lines = [f"profile: {total * 1e3:.3f} ms over {runs} run{'s' if runs > 1 else ''} "
             f"({runtime})",
             f"{'kind':<6}  {'name':<{width}}  {'calls':>7}  {'total ms':>10}  {'share':>6}"]
    for (kind, name), (calls, sec) in rows:
        lines.append(f"{kind:<6}  {name:<{width}}  {calls:>7}  {sec * 1e3:>10.3f}  "
                     f"{100 * sec / total:>5.1f}%")
    if any(kind == "kernel" for kind, _ in prof):  # a compiled program: what is left over
        outside = sum(sec for (kind, name), (_, sec) in prof.items()
                      if kind != "kernel" and name != "builtin.constant")
        lines.append(f"outside kernels (reference runtime, numpy): {outside * 1e3:.3f} ms, "
                     f"{100 * outside / total:.1f}%")
    click.echo("\n".join(lines), err=True)


def _check(module, model_path, feeds, rtol, atol, func, runtime=None, kernels=None,
           atol_scale=1e-4) -> None:
    from pir.frontends.onnx.importer import load_model
    from pir.runtimes.ort import check_against_onnx

    model = load_model(model_path)
    report = check_against_onnx(module, model, feeds, rtol, atol, func, runtime, kernels,
                                atol_scale=atol_scale)
    width = max([len(o.name) for o in report.outputs] + [6])
    click.echo(f"{'output':<{width}}  {'max abs err':>12}  {'max rel err':>12}  result")
    for o in report.outputs:
        verdict = "ok" if o.ok else "MISMATCH"
        note = f"  ({o.note})" if o.note else ""
        click.echo(f"{o.name:<{width}}  {o.max_abs:>12.3g}  {o.max_rel:>12.3g}  {verdict}{note}")
    if not report.ok:
        if report.divergence:
            click.echo(report.divergence)
        click.echo(f"pir: error: outputs differ from ONNX Runtime beyond |ours - ort| <= "
                   f"max(atol, atol_scale * max|ort|) + rtol * |ort| (rtol={rtol}, "
                   f"atol={atol}, atol_scale={atol_scale})", err=True)
        sys.exit(1)

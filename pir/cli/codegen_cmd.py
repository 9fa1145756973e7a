"""``pir codegen``: compile fusion groups into kernels."""

from __future__ import annotations

import os
import sys

import click

from pir.cli.common import read_module, run_command, write_module_to

FUSE_PIPELINE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def _check_target(ctx, param, value: str) -> str:
    """``llvm`` (with TVM's -mcpu= and -num-cores= options) or ``cuda``: a usage error
    otherwise, as a choice would be.  Whether LLVM knows the CPU is codegen's to say."""
    kind = value.split()[:1]
    if kind == ["llvm"] or value == "cuda":
        return value
    raise click.BadParameter(f"'{value}' is not 'llvm' (with -mcpu=NAME, -num-cores=N) or "
                             "'cuda'")


@click.command("codegen")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@click.option("--target", default="llvm", show_default=True, callback=_check_target,
              help="What to generate: llvm = TVM TIR scheduled for this machine's CPU, or "
                   "for another named as TVM writes it ('llvm -mcpu=skylake-avx512 "
                   "-num-cores=8'); cuda = CUDA C kernels (kernel.cuda) and cuBLAS calls "
                   "(kernel.cublas).")
@click.option("--arch", default="sm_90", show_default=True,
              type=click.Choice(["sm_80", "sm_86", "sm_89", "sm_90", "sm_100"]),
              help="The GPU to generate for (--target cuda).")
@click.option("--kernels", default="native", show_default=True,
              type=click.Choice(["native", "tvm"]),
              help="The CUDA kernel generator (--target cuda): native = pir's CUDA C emitter; "
                   "tvm = TVM's CUDA target with DLight schedules.")
@click.option("--emit-sources", "emit_dir", type=click.Path(file_okay=False),
              help="Also write each CUDA kernel as DIR/<symbol>.cu (--target cuda).")
@click.option("--explain", is_flag=True,
              help="Print (stderr) how many groups became kernels, and why others did not.")
@run_command
def codegen_cmd(input, output, target, arch, kernels, emit_dir, explain):
    """Turn each fusion.group of INPUT into a kernel op holding its source: kernel.tvm (TIR)
    for --target llvm, kernel.cuda (CUDA C and its launch configuration) for --target cuda.

    INPUT must already be fused (`fusion.group` ops, made by the `fuse` pass); codegen
    refuses a program without groups rather than guess a pipeline.  Groups a generator cannot
    handle stay fusion.group and run on the reference rules (on the host for cuda); identical
    groups share one kernel.  With --target cuda, matmuls become kernel.cublas calls.  Nothing
    is compiled here: `pir run` compiles and caches the kernels ($PIR_CACHE_DIR or
    ~/.cache/pir).

    \b
    Examples:
      pir optimize m.pir -p decompose,canonicalize,fold,cse,dce,shapes,fuse -o f.pir
      pir codegen f.pir --target llvm -o k.pir --explain
      pir run k.pir --inputs in.npz          # the tvm runtime, by default for kernels
      pir codegen f.pir --target cuda --arch sm_90 --emit-sources cu/ -o g.pir
      pir run g.pir --inputs in.npz --runtime cuda
    """
    from pir.codegen.tvm.codegen import has_groups
    from pir.errors import PirError
    from pir.ir.verifier import verify_module

    module = read_module(input)
    if not has_groups(module) and _unfused(module):
        raise PirError("the program has no fusion.group ops: run "
                       f"`pir optimize -p {FUSE_PIPELINE}` first", file=input)
    if target == "cuda":
        from pir.codegen.cuda.codegen import codegen_cuda

        try:
            report = codegen_cuda(module, arch, kernels)
        except ImportError as e:
            raise PirError(f"--kernels tvm needs TVM, which cannot be imported: {e}") from None
    else:
        from pir.codegen.tvm.codegen import codegen_module

        try:
            report = codegen_module(module, target)
        except ImportError as e:
            raise PirError(f"codegen needs TVM, which cannot be imported: {e}") from None
    verify_module(module)
    if explain:
        from pir.codegen.uncompiled import uncompiled_lines

        lines = report.lines() + uncompiled_lines(module, dict(report.kept))
        click.echo("\n".join(lines), err=True)
    if emit_dir:
        if target != "cuda":
            raise PirError("--emit-sources writes CUDA kernels: use it with --target cuda")
        _emit_sources(module, emit_dir)
    write_module_to(module, output)
    sys.stdout.flush()


def _emit_sources(module, directory: str) -> None:
    from pir.cli.common import AtomicOutput
    from pir.ir.dialects.kernel import CudaKernelOp

    os.makedirs(directory, exist_ok=True)
    seen = set()
    for op in module.walk():
        if isinstance(op, CudaKernelOp) and op.symbol not in seen:
            seen.add(op.symbol)
            with AtomicOutput(os.path.join(directory, f"{op.symbol}.cu")) as f:
                f.write(op.source.encode())


def _unfused(module) -> bool:
    """Whether the program was not run through the fuse pipeline: it holds prim ops that
    `fuse` would have grouped, or nn ops and no prim op at all (not decomposed).  A program
    of constants and library calls only (a Size folded to a constant) has nothing to fuse."""
    from pir.passes.fuse.classify import LIBRARY_OPS

    names = [op.name for op in module.walk()]
    prims = [n for n in names if n.startswith("prim.")]
    if any(n not in LIBRARY_OPS for n in prims):
        return True
    return not prims and any(n.startswith("nn.") and n != "nn.yield" for n in names)

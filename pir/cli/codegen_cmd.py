"""``pir codegen``: compile fusion groups into kernels."""

from __future__ import annotations

import sys

import click

from pir.cli.common import read_module, run_command, write_module_to

FUSE_PIPELINE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


@click.command("codegen")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@click.option("--target", default="llvm", show_default=True, type=click.Choice(["llvm"]),
              help="What to generate: llvm = TVM TIR scheduled for the CPU.")
@click.option("--explain", is_flag=True,
              help="Print (stderr) how many groups became kernels, and why others did not.")
@run_command
def codegen_cmd(input, output, target, explain):
    """Turn each fusion.group of INPUT into a kernel.tvm op holding its TIR source.

    INPUT must already be fused (`fusion.group` ops, made by the `fuse` pass); codegen
    refuses a program without groups rather than guess a pipeline.  Groups TVM cannot lower
    (argmax, sort, scatter, random...) stay fusion.group and run on the reference rules;
    identical groups share one kernel.  Nothing is compiled here: `pir run` builds every
    kernel as one module and caches it ($PIR_CACHE_DIR or ~/.cache/pir).

    \b
    Examples:
      pir optimize m.pir -p decompose,canonicalize,fold,cse,dce,shapes,fuse -o f.pir
      pir codegen f.pir --target llvm -o k.pir --explain
      pir run k.pir --inputs in.npz          # the tvm runtime, by default for kernels
    """
    from pir.codegen.tvm.codegen import codegen_module, has_groups
    from pir.errors import PirError
    from pir.ir.verifier import verify_module

    module = read_module(input)
    if not has_groups(module):
        raise PirError("the program has no fusion.group ops: run "
                       f"`pir optimize -p {FUSE_PIPELINE}` first", file=input)
    try:
        report = codegen_module(module, target)
    except ImportError as e:
        raise PirError(f"codegen needs TVM, which cannot be imported: {e}") from None
    verify_module(module)
    if explain:
        click.echo("\n".join(report.lines()), err=True)
    write_module_to(module, output)
    sys.stdout.flush()

"""``pir optimize``: run a pass pipeline."""

from __future__ import annotations

import sys

import click

from pir.cli.common import read_module, run_command, write_module_to


@click.command("optimize")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@click.option("-p", "--pipeline", help="Pass pipeline, e.g. 'decompose{ops=softmax},cse,dce'.")
@click.option("-O", "level", type=click.Choice(["0", "1", "2"]),
              help="A preset pipeline: -O0 nothing, -O1 cleanups, -O2 the default pipeline.")
@click.option("--no-verify-each", is_flag=True, help="Verify only at the end, not after every pass.")
@click.option("--print-ir-after-all", is_flag=True, help="Print the IR after every pass (stderr).")
@click.option("--print-ir-before", multiple=True, metavar="PASS", help="Print the IR before PASS.")
@click.option("--print-ir-after", multiple=True, metavar="PASS", help="Print the IR after PASS.")
@click.option("--dump-dir", type=click.Path(file_okay=False),
              help="Write every stage to DIR/NN-<pass>.pir, ready for `pir diff`.")
@click.option("--timing", is_flag=True, help="Print time and op-count change per pass (stderr).")
@run_command
def optimize_cmd(input, output, pipeline, level, no_verify_each, print_ir_after_all,
                 print_ir_before, print_ir_after, dump_dir, timing):
    """Run a pass pipeline on INPUT.

    Without -p or -O, runs the default pipeline (`pir passes` shows it and every pass with
    its options).  Each dump file starts with a comment holding the exact pipeline of its
    step, options resolved, so any step can be replayed alone.

    \b
    Examples:
      pir optimize m.pir -o o.pir
      pir optimize m.pir -p 'decompose{ops=softmax,layer_norm},canonicalize,cse,dce' -o o.pir
      pir optimize m.pir -O1 --dump-dir stages --timing -o o.pir
    """
    from pir.ir.verifier import verify_module
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline, resolve_pipeline

    passes = parse_pipeline(resolve_pipeline(pipeline, level))
    module = read_module(input)
    pm = PassManager(passes, verify_each=not no_verify_each,
                     print_before=set(print_ir_before),
                     print_after={"*"} if print_ir_after_all else set(print_ir_after),
                     dump_dir=dump_dir, timing=timing)
    pm.run(module)
    if no_verify_each:
        verify_module(module)
    if timing:
        click.echo(pm.timing_table(), err=True)
    write_module_to(module, output)
    sys.stdout.flush()

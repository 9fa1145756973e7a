"""``pir verify``: parse and verify a .pir file, optionally re-printing it."""

from __future__ import annotations

import click

from pir.cli.common import read_module, run_command, write_module_to


@click.command("verify")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Write the module re-printed here ('-' for stdout).")
@run_command
def verify_cmd(input: str, output: str | None) -> None:
    """Check that INPUT parses and verifies (SSA, types, attributes, resources).

    With -o, write it re-printed: the printer is deterministic, so a round trip of a printed
    file is byte-identical.

    \b
    Example:
      pir verify m.pir -o again.pir && cmp m.pir again.pir
    """
    from pir.passes.manager import count_ops

    module = read_module(input)
    if output is not None:
        write_module_to(module, output)
    n = count_ops(module)
    click.echo(f"{input}: ok ({n} ops, {len(module.resources)} resources)", err=True)

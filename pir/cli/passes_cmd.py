"""``pir passes``: every pass with its options and documentation."""

from __future__ import annotations

import inspect

import click

from pir.cli.common import run_command


@click.command("passes")
@run_command
def passes_cmd():
    """List every pass with its options, and the default pipeline.

    \b
    Example:
      pir passes
    """
    from pir.passes.base import all_pass_classes
    from pir.passes.pipeline import DEFAULT_PIPELINE, PRESETS

    for cls in all_pass_classes():
        click.echo(f"{cls.name}")
        for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
            click.echo(f"    {line}" if line else "")
        for o in cls.options():
            default = ",".join(o.default) if isinstance(o.default, tuple) else o.default
            click.echo(f"    {o.name}={o.type} (default: {default})  {o.doc}")
        click.echo("")
    click.echo(f"default pipeline (-O2): {DEFAULT_PIPELINE}")
    click.echo(f"-O1: {PRESETS['1']}")
    click.echo("-O0: (no passes)")

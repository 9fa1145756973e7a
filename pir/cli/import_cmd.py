"""``pir import``: ONNX model -> .pir text."""

from __future__ import annotations

import click

from pir.cli.common import read_bytes, run_command, write_module_to


@click.command("import")
@click.argument("model", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@run_command
def import_cmd(model: str, output: str | None) -> None:
    """Import an ONNX MODEL into a .pir file, weights included.

    Every ONNX op becomes an `nn` op with the node's name as its location; initializers go to
    the resource section (small ones inline); shape arithmetic on static shapes is folded.
    External-data files must lie in the model's folder.  An unsupported model fails with one
    error that lists every unsupported op.

    \b
    Example:
      pir import mlp.onnx -o mlp.pir
    """
    from pir.frontends.onnx.importer import import_model, load_model_bytes

    if model == "-":
        module = import_model(load_model_bytes(read_bytes("-"), "<stdin>"), filename="<stdin>")
    else:
        module = import_model(model)
    write_module_to(module, output)

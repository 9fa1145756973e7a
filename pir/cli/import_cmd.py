"""``pir import``: ONNX model -> .pir text."""

from __future__ import annotations

import click

from pir.cli.common import read_bytes, run_command, write_module_to


@click.command("import")
@click.argument("model", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@click.option("--dim", "dims", multiple=True, metavar="SYM=N",
              help="Pin a symbolic dim of the inputs to a size (repeatable).")
@click.option("--static", "static", type=click.Path(dir_okay=False), metavar="INPUTS.npz",
              help="Pin every symbolic input dim to the shapes of these inputs.")
@click.option("--explain", is_flag=True,
              help="Print the decisions the import made (stderr): each dim where the type "
                   "rule and ONNX's value_info disagree and which one was kept, each If "
                   "decided at import.")
@run_command
def import_cmd(model: str, output: str | None, dims: tuple[str, ...],
               static: str | None, explain: bool) -> None:
    """Import an ONNX MODEL into a .pir file, weights included.

    Every ONNX op becomes an `nn` op with the node's name as its location; initializers go to
    the resource section (small ones inline); shape arithmetic on static shapes is folded.
    External-data files must lie in the model's folder.  An unsupported model fails with one
    error that lists every unsupported op.

    Unknown dims of the inputs (`?`, `-1`, empty) become symbols named after the input and
    position (`x_2`); exporters' dim expressions (`floor(H/2 - 1/2) + 1`) become dim
    expressions.  `--dim N=1` pins a symbol, `--static in.npz` all of them.

    \b
    Examples:
      pir import mlp.onnx -o mlp.pir
      pir import det.onnx --dim N=1 -o det.pir
      pir import det.onnx --static in.npz -o det_static.pir
    """
    from pir.frontends.onnx.importer import import_model, load_model_bytes
    from pir.runtimes.inputs import load_inputs, parse_dims

    pins = parse_dims(dims)
    shapes = None
    if static is not None:
        shapes = {k: tuple(v.shape) for k, v in load_inputs(static, ()).items()}
    notes: list[str] = []
    if model == "-":
        module = import_model(load_model_bytes(read_bytes("-"), "<stdin>"), filename="<stdin>",
                              dims=pins, static=shapes, notes=notes)
    else:
        module = import_model(model, dims=pins, static=shapes, notes=notes)
    if explain:
        for line in notes or ["nothing: every dim agreed with ONNX's value_info"]:
            click.echo(f"import: {line}", err=True)
    write_module_to(module, output)

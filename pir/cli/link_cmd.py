"""``pir link``: put the functions of several .pir files into one module."""

from __future__ import annotations

import click

from pir.cli.common import read_bytes, run_command, write_module_to


def _parse(path: str):
    """A module parsed but not verified: a file may call functions another file defines."""
    from pir.ir.parser import Parser
    from pir.ir.resources import read_resources, split_module_text

    data = read_bytes(path)
    text, res_start, res_line = split_module_text(data, path)  # a located error if not UTF-8
    module = Parser(text, path).parse_module()
    if res_start is not None:
        module.resources = read_resources(data, res_start, path, res_line)
    return module


def link(modules, names):
    """The first module with the functions (and the resources they read) of the others
    added; a function name defined twice is an error, a resource key taken by another array
    is renamed."""
    import numpy as np

    from pir.errors import PirError
    from pir.ir.attributes import ResourceRef
    from pir.ir.dialects.builtin import ConstantOp

    out = modules[0]
    where = {fn.sym_name: names[0] for fn in out.funcs}
    for module, name in zip(modules[1:], names[1:]):
        moved: dict[str, ResourceRef] = {}  # this module's keys -> keys in ``out``
        for fn in list(module.funcs):
            if fn.sym_name in where:
                raise PirError(f"@{fn.sym_name} is defined in {where[fn.sym_name]} and in {name}")
            where[fn.sym_name] = name
            for op in fn.walk():
                if not (isinstance(op, ConstantOp) and isinstance(op.value, ResourceRef)):
                    continue
                key = op.value.key
                if key not in moved:
                    arr, have = module.resources[key], out.resources.get(key)
                    if have is None:
                        out.resources[key] = arr
                        moved[key] = ResourceRef(key)
                    elif have.dtype == arr.dtype and np.array_equal(have, arr):
                        moved[key] = ResourceRef(key)
                    else:
                        moved[key] = out.add_resource(key, arr)
                op.attributes["value"] = moved[key]
            module.body.block.remove(fn)
            out.body.block.append(fn)
    return out


@click.command("link")
@click.argument("inputs", nargs=-1, required=True,
                type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@run_command
def link_cmd(inputs, output):
    """Put the functions of INPUTS into one module (the first file's, whose name and
    attributes it keeps); calls may refer to functions of any of the files.  The result is
    verified; a function defined in two files is an error.

    \b
    Example (a loss written in .pir text that calls a derivative made by pir autodiff):
      pir autodiff u.pir --wrt x --order 2 --seed ones --name u_xx -o lap.pir
      pir link lap.pir loss.pir -o pinn.pir
    """
    from pir.ir.verifier import verify_module

    module = link([_parse(p) for p in inputs], list(inputs))
    verify_module(module)
    write_module_to(module, output)

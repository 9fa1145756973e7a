"""``pir autodiff``: add the derivative of a function to the module."""

from __future__ import annotations

import click

from pir.cli.common import read_module, run_command, write_module_to


def _names(values: tuple[str, ...]) -> list[str]:
    """``--wrt a,b --wrt c`` -> [a, b, c]."""
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


@click.command("autodiff")
@click.argument("input", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", help="Output .pir file ('-' for stdout).")
@click.option("--wrt", multiple=True, metavar="NAMES",
              help="Inputs (or constants, such as weights) to differentiate with respect to; "
                   "comma-separated or repeated.  With --train: the parameters (default: "
                   "every float constant of rank >= 1).")
@click.option("--mode", type=click.Choice(["rev", "fwd"]), default="rev", show_default=True,
              help="rev: gradients (vector-Jacobian products); fwd: tangents "
                   "(Jacobian-vector products).")
@click.option("--of", "of", multiple=True, metavar="OUTPUTS",
              help="The outputs to differentiate (default: every float output).")
@click.option("--seed", type=click.Choice(["input", "ones"]), default="input",
              show_default=True,
              help="input: the cotangents (rev) or tangents (fwd) are extra inputs; ones: "
                   "they are ones (rev: the gradient of the sum of the outputs).")
@click.option("--order", type=click.IntRange(min=1), default=1, show_default=True,
              help="Apply the transformation N times, each to the previous derivative.")
@click.option("--keep-primal", is_flag=True,
              help="Also return the outputs of the function differentiated.")
@click.option("--func", default="main", show_default=True, help="The function to differentiate.")
@click.option("--name", help="Name of the new function (default: <func>_grad).")
@click.option("--remat", is_flag=True,
              help="rev mode: recompute cheap elementwise values in the backward part instead "
                   "of keeping them from the forward part (`pir show` reports what is kept).")
@click.option("--train", type=click.Choice(["sgd", "adam"]),
              help="Build a training step instead: @<func>_train(params, state, data) -> "
                   "(loss, new_<param>..., new_<state>...) and @<func>_train_init.")
@click.option("--loss", metavar="OUTPUT", help="With --train: the output to minimise.")
@click.option("--lr", type=float, default=1e-3, show_default=True,
              help="With --train: the learning rate.")
@run_command
def autodiff_cmd(input, output, wrt, mode, of, seed, order, keep_primal, func, name, remat,
                 train, loss, lr):
    """Differentiate a function of INPUT and add the derivative to the module.

    nn ops are decomposed into prims first; the derivative is built from the VJP or JVP
    rule of each prim op and cleaned up (canonicalize, fold, cse, dce), so it keeps only
    the forward work it needs.  The new function takes the original inputs, then the
    seeds (cot_<output> in rev mode, tangent_<wrt> in fwd mode, unless --seed ones), and
    returns grad_<wrt> (rev) or tangent_<output> (fwd); order N names them grad<N>_... /
    tangent<N>_....  docs/autodiff.md describes the model.

    \b
    Examples:
      pir autodiff m.pir --wrt x -o g.pir                  # @main_grad(x, cot_y) -> grad_x
      pir autodiff m.pir --wrt fc1.weight,fc1.bias --of loss --seed ones -o g.pir
      pir autodiff m.pir --wrt x --mode fwd -o j.pir       # @main_grad(x, tangent_x) -> tangent_y
      pir autodiff m.pir --wrt x --order 2 --seed ones -o h.pir   # Hessian row sums
      pir autodiff m.pir --train adam --lr 1e-2 --loss loss -o t.pir  # @main_train, @main_train_init
      pir run t.pir --func main_train --steps 100 --inputs data.npz -o trained.npz
    """
    from pir.ir.verifier import verify_module
    from pir.passes.autodiff import differentiate

    module = read_module(input)
    if train or loss:
        if mode != "rev" or order != 1 or of or keep_primal:
            raise click.UsageError("--train builds a reverse-mode step of first order: --mode, "
                                   "--order, --of and --keep-primal do not apply")
        fn = _train(module, train, loss, lr, _names(wrt), func, name, remat)
        verify_module(module)
        _report(fn)
        write_module_to(module, output)
        return
    if not wrt:
        raise click.UsageError("--wrt is required (or --train)")
    if remat and mode != "rev":
        raise click.UsageError("--remat applies to reverse mode: forward mode keeps nothing "
                               "for a backward part")
    fn = differentiate(module, _names(wrt), func=func, mode=mode, of=_names(of), seed=seed,
                       order=order, keep_primal=keep_primal, name=name, remat=remat)
    verify_module(module)
    _report(fn)
    write_module_to(module, output)


def _train(module, train, loss, lr, wrt, func, name, remat):
    from pir.passes.autodiff.train import Optimizer, build_train_step

    if not (train and loss):
        raise click.UsageError("--train and --loss go together")
    return build_train_step(module, loss, Optimizer(train, lr), wrt=wrt, func=func, name=name,
                            remat=remat)


def _report(fn) -> None:
    from pir.runtimes.reference.interpreter import output_names

    ins = ", ".join(a.name for a in fn.args)
    outs = ", ".join(output_names(fn))
    ops = sum(1 for op in fn.walk() if op is not fn)
    click.echo(f"autodiff: @{fn.sym_name}({ins}) -> ({outs}): {ops} ops", err=True)

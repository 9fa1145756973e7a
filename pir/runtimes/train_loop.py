"""Iterating a training-step function (``pir run --steps N``).

A step function is any function whose first output is the loss, and some of whose outputs
are named ``new_X`` for inputs ``X``: each step feeds ``new_X`` back as ``X``.  Its other
one-element outputs are metrics, reported with the loss.  ``pir autodiff --train`` builds
such functions (``@main_train``), with a companion ``@<step>_init`` that returns the
initial parameters and optimizer state; inputs that the caller does not give come from it.
The other inputs (the data) are the same at every step: training is full-batch.

A sharded step runs on ranks by :mod:`pir.runtimes.dist.train`, with the same
:func:`start` and :func:`check_loss`.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.func import FuncOp

__all__ = ["check_loss", "feedback", "initial_values", "start", "train"]

PREFIX = "new_"


def feedback(fn: FuncOp) -> dict[str, str]:
    """``{output name: input name}`` for the outputs fed back: ``new_X`` -> ``X``."""
    from pir.runtimes.reference.interpreter import output_names

    ins = {a.name for a in fn.args}
    return {o: o[len(PREFIX):] for o in output_names(fn)
            if o.startswith(PREFIX) and o[len(PREFIX):] in ins}


def initial_values(module, fn: FuncOp, interp) -> dict[str, np.ndarray]:
    """What ``@<fn>_init`` returns (nothing when the module has no such function)."""
    init = module.lookup(f"{fn.sym_name}_init")
    if not isinstance(init, FuncOp):
        return {}
    if init.args:
        raise PirError(f"@{init.sym_name} takes inputs: an init function takes none")
    return interp.run(init, {})


def start(module, fn: FuncOp, feeds: Mapping[str, np.ndarray], interp
          ) -> tuple[dict[str, str], list[str], dict[str, np.ndarray]]:
    """What a loop over ``fn`` needs before its first step: the outputs fed back
    (:func:`feedback`), the output names, and the whole inputs of step 1 (``feeds``
    completed by ``@<fn>_init``, run on ``interp``).  Errors when ``fn`` is not a training
    step or an input is missing."""
    from pir.runtimes.reference.interpreter import output_names

    back = feedback(fn)
    outs = output_names(fn)
    if not back or not outs or outs[0] in back:
        raise PirError(f"@{fn.sym_name} is not a training step: its first output must be the "
                       "loss and some outputs 'new_X' the next values of inputs 'X' (build one "
                       "with pir autodiff --train)")
    state = {**initial_values(module, fn, interp), **feeds}
    state = {a.name: state[a.name] for a in fn.args if a.name in state}
    missing = [a.name for a in fn.args if a.name not in state]
    if missing:
        raise PirError(f"missing input{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                       f"of @{fn.sym_name} (give them with --inputs or --input)")
    return back, outs, state


def check_loss(step: int, loss: float) -> None:
    if not np.isfinite(loss):
        raise PirError(f"step {step}: the loss is {loss} (lower the learning rate?)")


def train(module, fn: FuncOp, feeds: Mapping[str, np.ndarray], steps: int, interp,
          on_step: Callable[[int, dict[str, float]], None] | None = None
          ) -> dict[str, np.ndarray]:
    """Run ``steps`` steps of ``fn`` from ``feeds`` (completed by ``@<fn>_init``); call
    ``on_step(i, {loss and metrics by output name})`` after step ``i`` (from 1) and give
    the final values of the inputs fed back.  On ranks:
    :func:`pir.runtimes.dist.train.train_rank`."""
    back, outs, state = start(module, fn, feeds, interp)
    for i in range(1, steps + 1):
        result = interp.run(fn, state)
        check_loss(i, float(np.asarray(result[outs[0]]).reshape(-1)[0]))
        for o, name in back.items():
            state[name] = result[o]
        if on_step is not None:
            on_step(i, {o: float(np.asarray(result[o]).reshape(-1)[0]) for o in outs
                        if o not in back and np.size(result[o]) == 1})
    return {name: state[name] for name in back.values()}

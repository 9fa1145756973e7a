"""Reference rules for nn.if, nn.loop and nn.scan: they run their bodies in the interpreter."""

from __future__ import annotations

import numpy as np

from pir.errors import PirError
from pir.ir.types import TensorType
from pir.runtimes.reference.registry import evaluates, operand_arrays


def _empty_stack(t: TensorType, axis: int) -> np.ndarray:
    """A scan output of zero iterations: size 0 on the stacked axis, declared sizes elsewhere
    (an unknown dim of an empty tensor is taken as 0)."""
    dims = [d if isinstance(d, int) else 0 for d in (t.shape or (0,))]
    dims[axis % len(dims)] = 0
    return np.zeros(dims, t.dtype.numpy)


def _stack(items: list[np.ndarray], axis: int, result) -> np.ndarray:
    if not items:
        return _empty_stack(result.type, axis)
    return np.stack(items, axis=axis % (items[0].ndim + 1))


@evaluates("nn.if", regions=True)
def if_(interp, op, cond):
    branch = op.then_branch if bool(np.asarray(cond).reshape(-1)[0]) else op.else_branch
    return tuple(interp.run_block(branch.block, []))


@evaluates("nn.loop", regions=True)
def loop(interp, op, *arrays):
    a = operand_arrays(op, arrays)
    trips = None if a["m"] is None else int(np.asarray(a["m"]).reshape(-1)[0])
    cond = True if a["cond"] is None else bool(np.asarray(a["cond"]).reshape(-1)[0])
    carried = list(a["initial"])
    n = len(carried)
    scans: list[list[np.ndarray]] = [[] for _ in op.results[n:]]
    block = op.body.block
    i = 0
    while cond and (trips is None or i < trips):
        outs = interp.run_block(block, [np.array(i, np.int64), np.array(cond), *carried])
        cond = bool(np.asarray(outs[0]).reshape(-1)[0])
        carried = outs[1:1 + n]
        for acc, x in zip(scans, outs[1 + n:]):
            acc.append(x)
        i += 1
    return tuple(carried) + tuple(_stack(s, 0, r) for s, r in zip(scans, op.results[n:]))


@evaluates("nn.scan", regions=True)
def scan(interp, op, *inputs):
    n, m = op.num_states, op.num_scan_inputs
    states, xs = list(inputs[:n]), inputs[n:]
    in_axes = [op.input_axis(j, x.ndim) for j, x in enumerate(xs)]
    lengths = {x.shape[ax] for x, ax in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise PirError(f"the scan inputs have different sequence lengths {sorted(lengths)}")
    length = lengths.pop()
    native = interp.run_scan(op, states, list(xs))  # (the tvm runtime's, in one call)
    if native is not None:
        return native
    backward = [bool(d) for d in op.scan_input_directions] or [False] * m
    k = len(op.results) - n
    scans: list[list[np.ndarray]] = [[] for _ in range(k)]
    for t in range(length):
        # basic indexing: a view, not np.take's copy (a compiled body reads it in place)
        slices = [x[(slice(None),) * ax + (length - 1 - t if back else t,)]
                  for x, ax, back in zip(xs, in_axes, backward)]
        outs = interp.run_block(op.body.block, states + slices)
        states = list(outs[:n])
        for acc, y in zip(scans, outs[n:]):
            acc.append(y)
    out_axes = list(op.scan_output_axes) or [0] * k
    prepend = [bool(d) for d in op.scan_output_directions] or [False] * k
    stacked = [_stack(acc[::-1] if pre else acc, ax, r)
               for acc, ax, pre, r in zip(scans, out_axes, prepend, op.results[n:])]
    return tuple(states) + tuple(stacked)

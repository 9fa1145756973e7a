"""How a ``kernel.cuda`` op is called, worked out without a GPU: the values of its symbolic
dims, the shapes of its results, its launch configuration and its argument list.

The cuda runtime (device arrays) and the host emulation of the tests
(:mod:`pir.codegen.cuda.emulate`, numpy arrays) both call kernels through these functions,
so the emulation checks the calling convention the runtime uses, not a copy of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pir.ir import dimexpr
from pir.codegen.cuda.emit import splat_value
from pir.codegen.cuda.launch import evaluate_grid
from pir.codegen.cuda.dims import kernel_dims
from pir.codegen.tvm.dims import solve
from pir.errors import PirError
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.types import TensorType

__all__ = ["Call", "region_constants", "prepare_call"]


def region_constants(op) -> list[np.ndarray]:
    """The region's constants that are kernel parameters (``const:K``): the non-splat ones,
    in region order (splats are literals in the source)."""
    out = []
    for c in op.body.block.ops:
        if isinstance(c, ConstantOp):
            arr = np.asarray(constant_value(c))
            if splat_value(arr) is None:
                out.append(np.ascontiguousarray(arr))
    return out


@dataclass
class Call:
    """One launch: ``grid`` and ``block`` (3 sizes each), dynamic shared memory, the
    result shapes, and ``args``: ``("in", K)``, ``("const", K)``, ``("out", K)`` or
    ``("i64" | "i32", value)`` in parameter order."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    out_shapes: list[tuple[int, ...]]
    args: list[tuple[str, int]]
    sizes: dict[str, int]


def prepare_call(op, in_shapes, symbols: dict[str, int]) -> Call:
    """The launch of ``op`` on operands of ``in_shapes`` (dims the program bound in
    ``symbols``)."""
    sizes = dict(symbols)
    for a, shape in zip(op.body.block.args, in_shapes):
        t = a.type
        if isinstance(t, TensorType) and t.shape is not None:
            for d, n in zip(t.shape, shape):
                if isinstance(d, str):
                    sizes.setdefault(d, int(n))
    bound = {a.split(":")[1] for a in op.args if a.startswith("dim:")}
    sizes = solve(kernel_dims(op.body.block, bound)[1], sizes)
    out_shapes = []
    for r in op.results:
        try:
            out_shapes.append(tuple(_size(d, sizes) for d in r.type.shape))
        except KeyError as e:
            raise PirError(f"kernel {op.symbol}: the size of dim {e} is unknown") from None
    args = []
    for a in op.args:
        kind, _, rest = a.partition(":")
        if kind == "dim":
            name, _, ctype = rest.rpartition(":")
            if name not in sizes:
                raise PirError(f"kernel {op.symbol}: the size of dim '{name}' is unknown")
            args.append((ctype, int(sizes[name])))
        else:
            args.append((kind, int(rest)))
    grid = evaluate_grid(op.grid, sizes)
    return Call(grid, tuple(op.block), op.shared_mem, out_shapes, args, sizes)


def _size(d, sizes: dict[str, int]) -> int:
    """The size of dim ``d`` (a KeyError naming the dim when a symbol is unbound)."""
    n = dimexpr.evaluate(d, sizes)
    if n is None:
        raise KeyError(str(d))
    return n

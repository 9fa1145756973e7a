"""Shape and cast chains on prim ops: the rules of ``patterns_shape`` and ``patterns_cast``
for the primitives, where they are simpler (reshape and broadcast_in_dim declare their result
type, so a chain of two is always one).  The algebraic identities of prim ops are in
``patterns_algebra``, next to their nn twins.
"""

from __future__ import annotations

from pir.passes.canonicalize.matchers import exact_in, known_dims, operand_of, rebuild
from pir.passes.canonicalize.patterns_shape import compose, gives_back_x
from pir.passes.drr import Attr, Match, Op, Var, drr


def is_identity(name: str):
    return lambda m: tuple(m[name]) == tuple(range(len(m[name])))


def broadcast_is_noop(m: Match) -> bool:
    """Identity dims onto the operand's own type; with an unknown dim, the result might
    still repeat a dim of size 1, so every dim must be known."""
    return is_identity("dims")(m) and known_dims(m.x.type)


def slice_is_full(m: Match) -> bool:
    """Every sliced axis from 0 to its (static) dim with stride 1."""
    op = m.root
    shape = op.x.type.shape
    starts, limits = op.start_indices, op.limit_indices
    axes = op.axes or range(len(starts))
    strides = op.strides or (1,) * len(starts)
    return shape is not None and all(
        lo == 0 and step == 1 and isinstance(shape[a], int) and hi == shape[a]
        for a, lo, hi, step in zip(axes, starts, limits, strides))


PATTERNS = [
    drr("prim-reshape-same-type", Op("prim.reshape", Var("x")), Var("x"), where=gives_back_x),
    drr("prim-reshape-reshape", Op("prim.reshape", Op("prim.reshape", Var("x"))),
        rebuild("prim.reshape", "x")),
    drr("prim-transpose-transpose",
        Op("prim.transpose", Op("prim.transpose", Var("x"), permutation=Attr("p")),
           permutation=Attr("q")),
        rebuild("prim.transpose", "x", permutation=lambda m: compose(m.p, m.q))),
    drr("prim-transpose-identity", Op("prim.transpose", Var("x"), permutation=Attr("p")),
        Var("x"), where=is_identity("p")),
    drr("prim-broadcast-same-shape",
        Op("prim.broadcast_in_dim", Var("x"), broadcast_dimensions=Attr("dims")), Var("x"),
        where=broadcast_is_noop),
    # Operand dim i goes to dims1[i], which goes to dims2[dims1[i]].
    drr("prim-broadcast-broadcast",
        Op("prim.broadcast_in_dim",
           Op("prim.broadcast_in_dim", Var("x"), broadcast_dimensions=Attr("dims1")),
           broadcast_dimensions=Attr("dims2")),
        rebuild("prim.broadcast_in_dim", "x",
                broadcast_dimensions=lambda m: tuple(m.dims2[d] for d in m.dims1))),
    drr("prim-cast-same-type", Op("prim.cast", Var("x")), Var("x")),
    drr("prim-cast-cast",
        Op("prim.cast", Op("prim.cast", Var("x"), dtype=Attr("mid")), dtype=Attr("to")),
        rebuild("prim.cast", "x", dtype=lambda m: m.to),
        where=lambda m: exact_in(m.x.type.dtype, m.mid)),
    drr("prim-concat-single", Op("prim.concat", Var("x")), Var("x")),
    drr("prim-slice-full", Op("prim.slice"), operand_of(0), where=slice_is_full),
]

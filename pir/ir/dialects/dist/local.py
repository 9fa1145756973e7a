"""The ops of the per-rank program: where a rank's own block meets the distributed value.

``pir.passes.shard.localize`` turns a global-view sharded program into one SPMD program that
every rank runs on its own blocks: its prim ops work on plain ``tensor<...>`` types of
**local** shapes (what one rank holds), while the collectives keep their ``!dist.tensor``
types (global shape and layout), since the layout is what a collective means.  Three ops
join the two views, as PyTorch's ``DTensor.to_local`` / ``DTensor.from_local`` do::

    %h.dist = dist.from_local(%h)
        : (tensor<8x16xf32>) -> !dist.tensor<8x16xf32, mesh<tp=2>, [P(sum)]>
    %y = dist.all_reduce(%h.dist) {mesh_axis = "tp"}
        : (...) -> !dist.tensor<8x16xf32, mesh<tp=2>, [R]>
    %y.local = dist.to_local(%y)
        : (!dist.tensor<8x16xf32, mesh<tp=2>, [R]>) -> tensor<8x16xf32>

- ``dist.to_local``: the block of ``x`` this rank holds; its type is ``x``'s local shape.
- ``dist.from_local``: the blocks the ranks hold, taken together, are the distributed value
  of the result type.
- ``dist.load_shard``: this rank's block of the weight ``key`` laid out as ``layout``, read
  from the rank's own weight file (``pir shard --split-weights DIR``), so a rank never reads
  the other ranks' blocks.

All three are the identity on a rank's block: they change how the program reads, not the
data.  They mean nothing in the global view (a single process holding whole values), which
never contains them.  A split symbolic dim gets a local symbol: ``B`` split by ``dp`` is
``B_dp`` (:func:`local_type`).
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import STR, TYPE
from pir.ir.dialects.dist.ops import DistOp, dist_type
from pir.ir.dialects.dist.types import DistTensorType
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.types import Dim, TensorType

__all__ = ["ToLocalOp", "FromLocalOp", "LoadShardOp", "local_type"]


def local_type(t: TensorType) -> TensorType:
    """The plain type of the block one rank holds of ``t`` (``t`` itself when plain).  A
    split static dim is divided by the number of ranks splitting it; a split symbolic dim
    ``B`` becomes the symbol ``B_<axes>`` (``B_dp``, ``B_dp_tp``), the same in every type of
    the program, so the runner binds it once."""
    if not isinstance(t, DistTensorType):
        return t
    shape = []
    for d, size in enumerate(t.shape):
        axes = t.shard_axes(d)
        if not axes:
            shape.append(size)
        elif isinstance(size, int):
            shape.append(size // t.split(d))
        elif isinstance(size, str):
            shape.append(f"{size}_{'_'.join(axes)}")
        else:
            shape.append(_local_expr(size, t.split(d), axes))
    return TensorType(t.dtype, tuple(shape))


def _local_expr(size, split: int, axes) -> Dim:
    """The local block of a split dim that is an expression: a product ``c * B * S`` (the
    rows of a flattened ``[B, S]``) splits its coefficient when the ranks divide it, else
    its first symbol, which is the outer dim of the flattening (``B_dp * S``); None for
    anything else."""
    from pir.ir import dimexpr

    if not isinstance(size, dimexpr.DimExpr) or len(size.terms) != 1:
        return None
    (mono, coeff), = size.terms
    if coeff % split == 0:
        return dimexpr.canon({mono: coeff // split})
    first = next((a for a in mono if isinstance(a, str)), None)
    if first is None:
        return None
    return dimexpr.substitute(size, {first: f"{first}_{'_'.join(axes)}"})


def _check_local(dist: DistTensorType, local: TensorType, what: str) -> None:
    want = local_type(dist)
    if type(local) is not TensorType or local != want:
        raise PirError(f"{what} must be {want}, the local block of {dist}; got {local}")


class ToLocalOp(DistOp):
    """The block of ``x`` this rank holds, as a plain tensor of the local shape."""

    name = "dist.to_local"
    traits = frozenset({Pure})
    x = operand()
    out = result()

    def infer(self):
        return [local_type(dist_type(self.x))]


class FromLocalOp(DistOp):
    """The distributed value (the declared ``!dist.tensor``) whose blocks the ranks hold:
    ``x`` is this rank's block."""

    name = "dist.from_local"
    traits = frozenset({Pure})
    x = operand()
    out = result()

    def infer(self):
        if len(self.results) != 1:
            raise PirError("the result type must be given: from_local takes it from its "
                           "declaration")
        out = dist_type(self.results[0], "the result")
        _check_local(out, self.x.type, "x")
        return [out]


class LoadShardOp(DistOp):
    """This rank's block of the weight ``key`` laid out as ``layout`` (a ``!dist.tensor``
    type), read from rank r's own file ``<dist.weights>/rank<r>.npz`` (``dist.weights``, a
    module attribute, is a directory relative to the program's file)."""

    name = "dist.load_shard"
    traits = frozenset({Pure})
    key = attr(STR, doc="the weight's name in the per-rank files")
    layout = attr(TYPE, doc="the !dist.tensor type of the whole weight")
    out = result()

    def infer(self):
        if not isinstance(self.layout, DistTensorType):
            raise PirError(f"layout must be a !dist.tensor type, got {self.layout}")
        return [local_type(self.layout)]

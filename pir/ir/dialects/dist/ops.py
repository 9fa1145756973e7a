"""The ops of the ``dist`` dialect: collectives along one mesh axis, point-to-point
send/recv, and ``dist.reshard``.

Every operand and result is a ``!dist.tensor``: a collective changes how a value is laid out
over the ranks, never the value itself, and the types on its line say both layouts::

    %y = dist.all_reduce(%x) {mesh_axis = "tp"}
        : (!dist.tensor<4x8xf32, mesh<tp=2>, [P(sum)]>) -> !dist.tensor<4x8xf32, mesh<tp=2>, [R]>

A collective acts along one mesh axis: the ranks that differ only in their coordinate on that
axis form a *group* (of the axis's size), and each group communicates on its own.  The
attributes say only what the operand's type does not (the axis, the dim a result is sharded
on, a root); the result type follows from them and is checked (:meth:`infer`).  What each op
does to the per-rank values is in its docstring and implemented, on simulated ranks, by
``pir/runtimes/reference/rules/dist.py``.

A dim split by several mesh axes is split by them in mesh order (the first outermost), so a
collective that gathers or creates a shard of a dim must act on the innermost axis that
splits it: gathering an outer axis first would interleave the blocks.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import INT, STR
from pir.ir.core import Operation, Value
from pir.ir.dialects.dist.types import DistTensorType, Partial, Placement, Replicate, Shard
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.types import TensorType
from pir.ir.verifier import verify_op

__all__ = ["DistOp", "CollectiveOp", "AllReduceOp", "AllGatherOp", "ReduceScatterOp",
           "AllToAllOp", "BroadcastOp", "SendOp", "RecvOp", "ReshardOp", "dist_type"]


def dist_type(v: Value, what: str = "x") -> DistTensorType:
    t = v.type
    if not isinstance(t, DistTensorType):
        raise PirError(f"{what} must be a !dist.tensor, got {t}")
    return t


def _make(t: DistTensorType, axis: str, placement: Placement) -> DistTensorType:
    """``t`` with ``placement`` on ``axis``; an impossible layout is a PirError."""
    try:
        return t.with_placement(axis, placement)
    except ValueError as e:
        raise PirError(f"the result would be {placement} on mesh axis '{axis}': {e}") from None


def _check_innermost(t: DistTensorType, axis: str, dim: int, what: str) -> None:
    """Raise unless ``axis`` is the innermost mesh axis splitting ``dim`` of ``t``."""
    axes = t.shard_axes(dim)
    if axes and axes[-1] != axis:
        raise PirError(f"{what}: dim {dim} is split by mesh axes {', '.join(axes)}; a "
                       f"collective may act only on the innermost one ({axes[-1]}), not on "
                       f"'{axis}'")


class DistOp(Operation):
    """Base of the dist ops: ``build`` verifies the new op at once, as prim ops do."""

    @classmethod
    def build(cls, *operands, result_types=None, loc=None, **kwargs):
        try:
            op = super().build(*operands, result_types=result_types, loc=loc, **kwargs)
        except PirError as e:
            if e.message.startswith(cls.name):
                raise
            raise PirError(f"{cls.name}: {e.message}") from None
        verify_op(op)
        return op

    def verify_(self) -> None:
        # The generic check compares only element types and shapes (a prim op's result
        # layout is the SPMD rules' business); a dist op's result layout is its meaning.
        for k, (r, t) in enumerate(zip(self.results, self.run_type_rule())):
            if r.type != t:
                raise PirError(f"result {k} is declared {r.type}, but the op gives {t}")

    def axis_placement(self, t: DistTensorType) -> Placement:
        """The operand's placement on ``mesh_axis`` (which must be an axis of its mesh)."""
        try:
            return t.placement(self.mesh_axis)
        except ValueError as e:
            raise PirError(str(e)) from None

    def axis_size(self, t: DistTensorType) -> int:
        return t.mesh.size(self.mesh_axis)


class CollectiveOp(DistOp):
    """A collective along ``mesh_axis``: one operand, one result of the same global shape.

    Pure: every rank runs the same program, so removing or merging a collective does so on
    all of them at once."""

    traits = frozenset({Pure})
    x = operand()
    mesh_axis = attr(STR, doc="the mesh axis whose groups communicate")
    out = result()


class AllReduceOp(CollectiveOp):
    """P(kind) -> R on ``mesh_axis``: every rank of a group gets the reduction (sum, mean,
    maximum or minimum, the operand's Partial kind) of the group's values.  Local shapes are
    unchanged."""

    name = "dist.all_reduce"

    def infer(self):
        t = dist_type(self.x)
        p = self.axis_placement(t)
        if not isinstance(p, Partial):
            raise PirError(f"x is {p} on mesh axis '{self.mesh_axis}': all_reduce needs a "
                           "partial (P) operand")
        return [_make(t, self.mesh_axis, Replicate())]


class AllGatherOp(CollectiveOp):
    """S(d) -> R on ``mesh_axis``: every rank of a group gets the group's blocks joined along
    dim ``d`` in coordinate order, so its local dim ``d`` grows by the axis size."""

    name = "dist.all_gather"

    def infer(self):
        t = dist_type(self.x)
        p = self.axis_placement(t)
        if not isinstance(p, Shard):
            raise PirError(f"x is {p} on mesh axis '{self.mesh_axis}': all_gather needs a "
                           "sharded (S) operand")
        _check_innermost(t, self.mesh_axis, p.dim, "x")
        return [_make(t, self.mesh_axis, Replicate())]


class ReduceScatterOp(CollectiveOp):
    """P(kind) -> S(dim) on ``mesh_axis``: the group's values are reduced as all_reduce does,
    and the rank at coordinate k keeps block k of ``dim`` (so its local ``dim`` shrinks by the
    axis size, which must divide it)."""

    name = "dist.reduce_scatter"
    dim = attr(INT, doc="the tensor dim the result is sharded on")

    def infer(self):
        t = dist_type(self.x)
        p = self.axis_placement(t)
        if not isinstance(p, Partial):
            raise PirError(f"x is {p} on mesh axis '{self.mesh_axis}': reduce_scatter needs "
                           "a partial (P) operand")
        if not 0 <= self.dim < len(t.shape):
            raise PirError(f"dim {self.dim} is out of range for rank {len(t.shape)}")
        out = _make(t, self.mesh_axis, Shard(self.dim))
        _check_innermost(out, self.mesh_axis, self.dim, "the result")
        return [out]


class AllToAllOp(CollectiveOp):
    """S(s) -> S(dim) on ``mesh_axis``: each rank splits its block into axis-size chunks along
    ``dim`` and sends chunk k to the rank at coordinate k, which joins what it receives along
    ``s`` in the senders' coordinate order."""

    name = "dist.all_to_all"
    dim = attr(INT, doc="the tensor dim the result is sharded on")

    def infer(self):
        t = dist_type(self.x)
        p = self.axis_placement(t)
        if not isinstance(p, Shard):
            raise PirError(f"x is {p} on mesh axis '{self.mesh_axis}': all_to_all needs a "
                           "sharded (S) operand")
        if not 0 <= self.dim < len(t.shape):
            raise PirError(f"dim {self.dim} is out of range for rank {len(t.shape)}")
        if self.dim == p.dim:
            raise PirError(f"x is already S({p.dim}) on mesh axis '{self.mesh_axis}'")
        _check_innermost(t, self.mesh_axis, p.dim, "x")
        out = _make(t, self.mesh_axis, Shard(self.dim))
        _check_innermost(out, self.mesh_axis, self.dim, "the result")
        return [out]


class BroadcastOp(CollectiveOp):
    """R -> R on ``mesh_axis``: every rank of a group gets the value of the rank at
    coordinate ``root``, making the replicas bitwise equal (parameters drawn at random on
    each rank, for one)."""

    name = "dist.broadcast"
    root = attr(INT, 0, doc="the coordinate, along mesh_axis, of the rank that sends")

    def infer(self):
        t = dist_type(self.x)
        p = self.axis_placement(t)
        if not isinstance(p, Replicate):
            raise PirError(f"x is {p} on mesh axis '{self.mesh_axis}': broadcast needs a "
                           "replicated (R) operand")
        if not 0 <= self.root < self.axis_size(t):
            raise PirError(f"root {self.root} is out of range for mesh axis "
                           f"'{self.mesh_axis}' of size {self.axis_size(t)}")
        return [t]


class _PointToPoint(DistOp):
    """What send and recv share: the pair of coordinates along ``mesh_axis`` and a tag."""

    mesh_axis = attr(STR, doc="the mesh axis along which the value travels")
    source = attr(INT, doc="the coordinate of the sending ranks along mesh_axis")
    dest = attr(INT, doc="the coordinate of the receiving ranks along mesh_axis")
    tag = attr(INT, 0, doc="pairs a send with its recv (same axis, source, dest and tag)")

    def check_pair(self, t: DistTensorType) -> None:
        self.axis_placement(t)
        n = self.axis_size(t)
        for what, c in (("source", self.source), ("dest", self.dest)):
            if not 0 <= c < n:
                raise PirError(f"{what} {c} is out of range for mesh axis '{self.mesh_axis}' "
                               f"of size {n}")
        if self.source == self.dest:
            raise PirError(f"source and dest are both {self.source}")


class SendOp(_PointToPoint):
    """On every rank at coordinate ``source`` along ``mesh_axis``, sends its block of ``x``
    to the rank at coordinate ``dest`` with the same other coordinates; other ranks do
    nothing.  The matching ``dist.recv`` has the same axis, source, dest and tag.  Not Pure:
    it must run, and stays in order with its recv."""

    name = "dist.send"
    x = operand()

    def infer(self):
        self.check_pair(dist_type(self.x))
        return []


class RecvOp(_PointToPoint):
    """The other half of ``dist.send``: on the ranks at coordinate ``dest`` the result is the
    block the matching send sent; on every other rank it is zeros.  The result type is
    declared; its local shape must be that of the sent block."""

    name = "dist.recv"
    out = result()

    def infer(self):
        if len(self.results) != 1:
            raise PirError("the result type must be given: recv takes it from its declaration")
        self.check_pair(dist_type(self.results[0], "the result"))
        return [self.results[0].type]


class ReshardOp(DistOp):
    """x laid out as the declared result type says: same global shape, element type and
    mesh, any placements.  The SPMD pass inserts it where a producer's layout differs from
    what a consumer needs, then lowers it to collectives.  On ranks it computes the global
    value and takes the result's blocks of it (for ``P(sum)`` the ranks at coordinate 0 of
    the sum axes hold the value and the others zeros; for the other kinds every rank holds
    it).

    Either side may be a plain tensor, which stands for the whole value held by every rank
    (all ``R`` on the other side's mesh): that is how a constant enters the distributed
    program (each rank then takes its block: a local slice, no communication), and how a
    value leaves it."""

    name = "dist.reshard"
    traits = frozenset({Pure})
    x = operand()
    out = result()

    def infer(self):
        if len(self.results) != 1:
            raise PirError("the result type must be given: reshard takes it from its "
                           "declaration")
        t, out = self.x.type, self.results[0].type
        if not isinstance(t, DistTensorType) and not isinstance(out, DistTensorType):
            raise PirError(f"x ({t}) or the result ({out}) must be a !dist.tensor")
        for what, ty in (("x", t), ("the result", out)):
            if not isinstance(ty, TensorType) or ty.shape is None:
                raise PirError(f"{what} must be a ranked tensor, got {ty}")
        if (out.dtype, out.shape) != (t.dtype, t.shape):
            raise PirError(f"the result {out} must have the element type and shape of x ({t})")
        if isinstance(t, DistTensorType) and isinstance(out, DistTensorType) and t.mesh != out.mesh:
            raise PirError(f"the result's mesh {out.mesh} differs from x's {t.mesh}")
        return [out]

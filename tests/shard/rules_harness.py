"""Builds prim ops for SPMD rule tests, and checks a rule's decision by running it on
simulated ranks: operands laid out as the decision requires, the op run on each rank's
blocks (with local shapes), the results assembled as the decision says and compared with
the op run on the whole arrays."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pir.ir.builder import Builder
from pir.ir.core import OPS, Block, Operation
from pir.ir.dialects import load_dialects
from pir.ir.dialects.dist import DistTensorType, Mesh
from pir.ir.dialects.func import FuncOp
from pir.ir.types import DType, TensorType
from pir.passes.shard import Sharding, SpmdDecision
from pir.runtimes.reference.interpreter import evaluate_op
from pir.runtimes.reference.registry import load_all
from pir.runtimes.reference.rules.dist import assemble
from test_collectives import scatter_randomly

load_dialects()
load_all()
MESH = Mesh.parse("dp=2,tp=2")
RNG = np.random.default_rng(3)


def T(*shape, dtype: str = "f64") -> TensorType:
    return TensorType(DType(dtype), tuple(shape))


def make(name: str, *types: TensorType, variadic: bool = False, result_types=None,
         **attrs) -> Operation:
    """``name`` applied to arguments of ``types`` (as one list when ``variadic``)."""
    fn = FuncOp.create("main", list(types), [])
    args = list(fn.entry.args)
    return Builder(fn.entry).create(OPS[name], *([args] if variadic else args),
                                    result_types=result_types, **attrs)


def S(*dims, **partial) -> Sharding:
    """S("dp", None, tp="sum"): dims mapping, then partial axes with their kinds."""
    return Sharding(dims, partial)


def data(op: Operation) -> list[np.ndarray]:
    """Random operands for ``op``: floats, and valid indices for gather/scatter/slices
    (a symbolic dim is 4)."""
    out = []
    for v in op.operands:
        t = v.type.with_shape([4 if isinstance(d, str) else d for d in v.type.shape])
        if t.dtype.is_int:
            if op.name in ("prim.gather", "prim.scatter_add"):
                high = op.operands[0].type.shape[op.axis]
            else:
                high = 2
            out.append(RNG.integers(0, high, size=t.shape).astype(t.dtype.numpy))
        elif t.dtype is DType.BOOL:
            out.append(RNG.random(t.shape) < 0.5)
        else:
            out.append(RNG.normal(size=t.shape).astype(t.dtype.numpy))
    return out


def _local(t: DistTensorType) -> TensorType:
    return TensorType(t.dtype, t.local_shape())


def local_op(op: Operation, ins: Sequence[DistTensorType], outs: Sequence[DistTensorType]) -> Operation:
    """``op`` on local shapes: what each rank runs (attributes that hold sizes of split dims
    get the local sizes, as the per-rank lowering must do)."""
    args = Block([_local(t) for t in ins]).args
    attrs = dict(op.attributes)
    if op.name == "prim.dynamic_slice":
        attrs["slice_sizes"] = _local(outs[0]).shape
    if op.name == "prim.slice":  # a whole split dim is cut at its local size
        axes = op.axes or tuple(range(len(op.start_indices)))
        attrs["limit_indices"] = tuple(_local(ins[0]).shape[a] if hi == ins[0].shape[a] else hi
                                       for a, hi in zip(axes, op.limit_indices))
    return type(op)(args, [_local(t) for t in outs], attrs,
                    operand_segments=op.operand_segments)


def simulate(op: Operation, d: SpmdDecision, mesh: Mesh = MESH, arrays=None) -> None:
    """Assert that running ``op`` on ranks as ``d`` says gives the single-device result."""
    arrays = data(op) if arrays is None else arrays
    expected = evaluate_op(op, arrays)
    ins = [s.to_type(v.type, mesh) for s, v in zip(d.inputs, op.operands)]
    outs = [s.to_type(r.type, mesh) for s, r in zip(d.outputs, op.results)]
    blocks = []
    for a, t in zip(arrays, ins):
        assert not (t.partial_axes and a.dtype.kind not in "fc"), "partial non-float operand"
        blocks.append([b.astype(a.dtype) for b in scatter_randomly(a, t)])
    local = local_op(op, ins, outs)
    per_rank = [evaluate_op(local, [b[r] for b in blocks]) for r in range(mesh.num_ranks)]
    for k, (t, want) in enumerate(zip(outs, expected)):
        got = assemble([res[k] for res in per_rank], t)
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        else:
            np.testing.assert_array_equal(got, want)

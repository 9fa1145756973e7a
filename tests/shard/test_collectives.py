"""Collectives on simulated ranks: each turns the per-rank blocks of one layout into those of
another, and the global value they stand for never changes."""

import numpy as np
import pytest

from pir.errors import PirError
from pir.ir.core import OPS
from pir.ir.dialects.dist import DistTensorType, Mesh, parse_placements
from pir.ir.parser import parse_module
from pir.ir.types import DType, TensorType
from pir.runtimes.reference.rules.dist import (
    RANK_EVAL,
    all_gather,
    all_reduce,
    all_to_all,
    assemble,
    broadcast,
    distribute,
    reduce_arrays,
    reduce_scatter,
    reshard,
    send_recv,
)
from test_dist_ops import VALID, module

RNG = np.random.default_rng(7)
TP4 = Mesh.parse("tp=4")
DP_TP = Mesh.parse("dp=2,tp=2")


def layout(shape, placements: str, mesh=DP_TP) -> DistTensorType:
    return DistTensorType(DType.F64, tuple(shape), mesh, parse_placements(f"[{placements}]"))


def scatter_randomly(x: np.ndarray, t: DistTensorType) -> list[np.ndarray]:
    """Per-rank blocks of ``x`` laid out as ``t``, with partial values split at random (not
    the one canonical split of ``distribute``), so a collective cannot pass by luck."""
    values = [v.astype(np.float64) for v in distribute(x, t)]
    for axis, kind in t.partial_axes.items():
        done = set()
        for r in range(t.mesh.num_ranks):
            group = tuple(t.mesh.group(r, axis))
            if group in done:
                continue
            done.add(group)
            noise = [RNG.normal(size=values[q].shape) for q in group]
            if kind in ("sum", "avg"):
                mean = sum(noise) / len(noise)
                for q, n in zip(group, noise):
                    values[q] = values[q] + n - mean
            else:  # one rank keeps the value, the others hold less (max) or more (min)
                keep = RNG.integers(len(group))
                sign = -1 if kind == "max" else 1
                for k, (q, n) in enumerate(zip(group, noise)):
                    if k != keep:
                        values[q] = values[q] + sign * np.abs(n)
    return values


# -- the functions ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind, combine", [("sum", np.sum), ("avg", np.mean),
                                           ("max", np.max), ("min", np.min)])
def test_all_reduce_of_partials_is_the_full_reduction(kind, combine):
    values = [RNG.normal(size=(3, 5)) for _ in range(4)]
    out = all_reduce(values, TP4, "tp", kind)
    full = combine(np.stack(values), axis=0)
    assert all(np.allclose(o, full) for o in out)
    assert all(np.array_equal(o, out[0]) for o in out)  # bitwise equal on every rank


def test_all_reduce_stays_in_its_group():
    values = [np.full((2,), float(r)) for r in range(4)]  # rank r holds r
    out = all_reduce(values, DP_TP, "tp", "sum")  # groups {0, 1} and {2, 3}
    assert [o[0] for o in out] == [1.0, 1.0, 5.0, 5.0]
    out = all_reduce(values, DP_TP, "dp", "sum")  # groups {0, 2} and {1, 3}
    assert [o[0] for o in out] == [2.0, 4.0, 2.0, 4.0]


def test_all_gather_of_shards_is_the_full_tensor():
    x = RNG.normal(size=(4, 8))
    blocks = distribute(x, layout((4, 8), "S(1)", TP4))
    assert [b.shape for b in blocks] == [(4, 2)] * 4
    assert all(np.array_equal(g, x) for g in all_gather(blocks, TP4, "tp", 1))


def test_reduce_scatter_gives_each_rank_its_block_of_the_sum():
    values = [RNG.normal(size=(8, 3)) for _ in range(4)]
    total = np.sum(np.stack(values), axis=0)
    out = reduce_scatter(values, TP4, "tp", 0, "sum")
    assert all(np.allclose(o, total[2 * r:2 * r + 2]) for r, o in enumerate(out))
    with pytest.raises(PirError, match=r"dim 1 \(3\) is not divisible by 4"):
        reduce_scatter(values, TP4, "tp", 1, "sum")


def test_all_to_all_moves_the_split_to_another_dim():
    x = RNG.normal(size=(8, 4, 4))
    src, dst = layout((8, 4, 4), "S(0)", TP4), layout((8, 4, 4), "S(2)", TP4)
    out = all_to_all(distribute(x, src), TP4, "tp", 0, 2)
    assert all(np.array_equal(o, e) for o, e in zip(out, distribute(x, dst)))


def test_broadcast_copies_the_root():
    values = [np.full((2, 2), float(r)) for r in range(4)]
    out = broadcast(values, DP_TP, "tp", 1)
    assert [o[0, 0] for o in out] == [1.0, 1.0, 3.0, 3.0]


def test_send_recv_reaches_the_dest_only():
    values = [np.full((2,), float(r + 1)) for r in range(4)]
    out = send_recv(values, DP_TP, "dp", 1, 0)  # dp=1 sends to dp=0
    assert [o[0] for o in out] == [3.0, 4.0, 0.0, 0.0]


def test_reduce_arrays_keeps_the_dtype_and_accumulates_wide():
    a = [np.array([60000.0], np.float16)] * 2
    assert reduce_arrays(a, "avg").dtype == np.float16 and reduce_arrays(a, "avg")[0] == 60000
    assert reduce_arrays([np.array([7]), np.array([2])], "avg")[0] == 4  # integers truncate


# -- layouts ---------------------------------------------------------------------------------

LAYOUTS = ["R, R", "S(0), R", "R, S(1)", "S(1), S(0)", "S(0), S(0)", "P(sum), S(1)",
           "S(1), P(avg)", "P(sum), P(avg)", "P(max), R", "R, P(min)", "P(max), P(max)"]


@pytest.mark.parametrize("placements", LAYOUTS)
def test_distribute_and_assemble_are_inverse(placements):
    x = RNG.normal(size=(4, 8))
    t = layout((4, 8), placements)
    blocks = scatter_randomly(x, t)
    assert all(b.shape == t.local_shape() for b in blocks)
    assert np.allclose(assemble(blocks, t), x)


def test_two_axes_split_one_dim_outer_first():
    x = np.arange(8.0).reshape(8, 1)
    blocks = distribute(x, layout((8, 1), "S(0), S(0)"))  # rank (dp=i, tp=j): block 2i+j
    assert [b[:, 0].tolist() for b in blocks] == [[0, 1], [2, 3], [4, 5], [6, 7]]


@pytest.mark.parametrize("src", LAYOUTS[:8])
@pytest.mark.parametrize("dst", ["R, R", "S(1), S(0)", "P(sum), S(0)", "R, P(max)"])
def test_reshard_keeps_the_value(src, dst):
    x = RNG.normal(size=(4, 8))
    s, d = layout((4, 8), src), layout((4, 8), dst)
    out = reshard(scatter_randomly(x, s), s, d)
    assert all(o.shape == d.local_shape() for o in out)
    assert np.allclose(assemble(out, d), x)


def test_reshard_from_and_to_a_plain_tensor():
    x = RNG.normal(size=(4, 8))
    t = layout((4, 8), "S(1), S(0)")
    plain = TensorType(DType.F64, (4, 8))
    blocks = reshard([x] * 4, plain, t)  # every rank holds x whole: each takes its block
    assert np.array_equal(assemble(blocks, t), x)
    assert all(np.array_equal(o, x) for o in reshard(blocks, t, plain))


# -- the per-rank table ----------------------------------------------------------------------

def test_every_dist_op_has_a_per_rank_rule():
    assert sorted(RANK_EVAL) == sorted(n for n in OPS if n.startswith("dist."))


@pytest.mark.parametrize("op, attrs, x, y", [v for v in VALID if v[2] is not None],
                         ids=[v[0] for v in VALID if v[2] is not None])
def test_each_collective_keeps_the_global_value(op, attrs, x, y):
    fn = parse_module(module(op, attrs, x, y)).funcs[0]
    the_op = fn.entry.ops[0]
    src, dst = fn.entry.args[0].type, the_op.results[0].type
    glob = RNG.normal(size=(4, 8)).astype(np.float32)
    if isinstance(src, DistTensorType):
        blocks = scatter_randomly(glob, src)
        blocks = [b.astype(np.float32) for b in blocks]
    else:
        blocks = [glob] * 4
    (out,) = RANK_EVAL[op](the_op, [blocks], {})
    got = assemble(out, dst) if isinstance(dst, DistTensorType) else out[0]
    assert np.allclose(got, glob, rtol=1e-5, atol=1e-5)
    if isinstance(dst, DistTensorType):
        assert all(o.shape == dst.local_shape() for o in out)


def test_recv_takes_what_the_matching_send_left():
    t = "!dist.tensor<4x8xf32, mesh<dp=2,tp=2>, [R, S(1)]>"
    text = f"""module {{
  func.func @main(%x: {t}) -> ({t}) {{
    dist.send(%x) {{dest = 0, mesh_axis = "dp", source = 1, tag = 3}} : ({t}) -> ()
    %y = dist.recv() {{dest = 0, mesh_axis = "dp", source = 1, tag = 3}} : () -> {t}
    func.return(%y) : ({t}) -> ()
  }}
}}
"""
    send, recv = parse_module(text).funcs[0].entry.ops[:2]
    blocks = [np.full((4, 4), float(r), np.float32) for r in range(4)]
    mailbox: dict = {}
    assert RANK_EVAL["dist.send"](send, [blocks], mailbox) == []
    (got,) = RANK_EVAL["dist.recv"](recv, [], mailbox)
    assert [g[0, 0] for g in got] == [2.0, 3.0, 0.0, 0.0]
    with pytest.raises(PirError, match="no dist.send with mesh_axis 'dp', source 1, dest 0 and tag 3"):
        RANK_EVAL["dist.recv"](recv, [], mailbox)

"""Runs on ranks in one process (``pir run --ranks N``): outputs equal the single-device run
within 1e-5 relative, for an MLP, a transformer block and the GPT-2 test model, with data,
tensor and both kinds of parallelism, on 2 and 4 ranks."""

import threading

import numpy as np
import pytest
from dist_models import BLOCK_TP, MLP_TP, gpt2_program, mlp, prim_program, shard, transformer_block

from pir.errors import PirError
from pir.ir.dialects.dist import Mesh
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.shard.localize import localize
from pir.runtimes.dist import RankedRun, run_ranks
from pir.runtimes.dist.comm import ThreadBoard, ThreadComm
from pir.runtimes.reference import run_function
from pir.runtimes.reference.rules import dist as ref

RNG = np.random.default_rng(7)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def dp_tp(spec: dict, x: str = "x") -> dict:
    """``spec`` (placements on tp) on dp x tp, with the input split by batch along dp."""
    return {x: ["S(0)", "R"], **{k: ["R"] + v for k, v in spec.items()}}


CASES = {
    "mlp-tp2": (mlp, "tp=2", MLP_TP, (8, 16)),
    "mlp-dp2": (mlp, "dp=2", {"x": ["S(0)"]}, (8, 16)),
    "mlp-tp4": (mlp, "tp=4", MLP_TP, (8, 16)),
    "mlp-dp2xtp2": (mlp, "dp=2,tp=2", dp_tp(MLP_TP), (8, 16)),
    "block-tp2": (transformer_block, "tp=2", BLOCK_TP, (2, 8, 16)),
    "block-dp2": (transformer_block, "dp=2", {"x": ["S(0)"]}, (2, 8, 16)),
    "block-tp4": (transformer_block, "tp=4", BLOCK_TP, (2, 8, 16)),
    "block-dp2xtp2": (transformer_block, "dp=2,tp=2", dp_tp(BLOCK_TP), (2, 8, 16)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sharded_equals_single_device(case):
    make, mesh, spec, shape = CASES[case]
    x = RNG.standard_normal(shape).astype(np.float32)
    want = run_function(prim_program(make()), {"x": x})["y"]
    text = print_module(localize(shard(prim_program(make()), mesh, spec)))
    got = run_ranks(parse_module(text), {"x": x}, Mesh.parse(mesh).num_ranks)["y"]
    close(got, want)


GPT2_MLP_TP = {"*mlp.c_fc.weight": ["S(1)"], "*mlp.c_fc.bias": ["S(0)"],
               "*mlp.c_proj.weight": ["S(0)"]}


@pytest.mark.parametrize("mesh,spec", [
    ("dp=2", {"input_ids": ["S(0)"], "attention_mask": ["S(0)"]}),
    ("dp=2,tp=2", {"input_ids": ["S(0)", "R"], "attention_mask": ["S(0)", "R"],
                   **{k: ["R"] + v for k, v in GPT2_MLP_TP.items()}}),
])
def test_gpt2_test_model(mesh, spec):
    module, _, feeds = gpt2_program()
    want = run_function(module, feeds)["logits"]
    module, _, _ = gpt2_program()
    got = run_ranks(shard(module, mesh, spec), feeds)["logits"]  # localized on the way
    close(got, want)


def test_mesh_must_match_the_ranks():
    m = shard(prim_program(mlp()), "tp=2", MLP_TP)
    with pytest.raises(PirError, match=r"mesh mesh<tp=2> has 2 ranks, but it was asked to run "
                                       r"on 4"):
        run_ranks(m, {"x": np.zeros((8, 16), np.float32)}, 4)
    with pytest.raises(PirError, match="the program is not sharded"):
        run_ranks(prim_program(mlp()), {"x": np.zeros((8, 16), np.float32)}, 2)


def test_a_failing_rank_is_reported_and_nobody_hangs():
    run = RankedRun(shard(prim_program(mlp()), "dp=2", {"x": ["S(0)"]}), 2, timeout=30)
    with pytest.raises(PirError, match=r"rank 0: .*dim 0 \(7\).* not divisible"):
        run.run({"x": np.zeros((7, 16), np.float32)})
    good = np.ones((8, 16), np.float32)  # the run is usable again
    close(run.run({"x": good})["y"], run_function(prim_program(mlp()), {"x": good})["y"])


def on_threads(mesh: Mesh, fn):
    """``fn(comm)`` on every rank of ``mesh``, one thread each; the results by rank."""
    board = ThreadBoard(mesh.num_ranks, timeout=30)
    out = [None] * mesh.num_ranks

    def work(r):
        out[r] = fn(ThreadComm(mesh, r, board))

    threads = [threading.Thread(target=work, args=(r,)) for r in range(mesh.num_ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@pytest.mark.parametrize("axis", ["dp", "tp"])
def test_thread_collectives_match_the_reference_semantics(axis):
    mesh = Mesh.parse("dp=2,tp=2")
    xs = [RNG.standard_normal((4, 6)).astype(np.float32) for _ in range(4)]
    checks = [
        (lambda c: c.all_reduce(xs[c.rank], axis, "sum"), ref.all_reduce(xs, mesh, axis, "sum")),
        (lambda c: c.all_reduce(xs[c.rank], axis, "max"), ref.all_reduce(xs, mesh, axis, "max")),
        (lambda c: c.all_gather(xs[c.rank], axis, 1), ref.all_gather(xs, mesh, axis, 1)),
        (lambda c: c.reduce_scatter(xs[c.rank], axis, 0, "avg"),
         ref.reduce_scatter(xs, mesh, axis, 0, "avg")),
        (lambda c: c.all_to_all(xs[c.rank], axis, 0, 1), ref.all_to_all(xs, mesh, axis, 0, 1)),
        (lambda c: c.broadcast(xs[c.rank], axis, 1), ref.broadcast(xs, mesh, axis, 1)),
        (lambda c: c.send_recv(xs[c.rank], axis, 1, 0), ref.send_recv(xs, mesh, axis, 1, 0)),
    ]
    for fn, want in checks:
        for got, w in zip(on_threads(mesh, fn), want):
            np.testing.assert_array_equal(got, w)


SEND_RECV = """module {
  func.func @main(%x: !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> (!dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>) {
    %x2 = prim.mul(%x, %x) : (!dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>, !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
    dist.send(%x2) {dest = 1, mesh_axis = "tp", source = 0} : (!dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> ()
    %r = dist.recv() {dest = 1, mesh_axis = "tp", source = 0} : () -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), P(sum)]>
    %y = dist.all_reduce(%r) {mesh_axis = "tp"} : (!dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), P(sum)]>) -> !dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>
    func.return(%y) : (!dist.tensor<4x6xf32, mesh<dp=2,tp=2>, [S(0), R]>) -> ()
  }
}
"""


def test_send_recv():
    """The recv'd block is on the dest ranks only (zeros elsewhere): as P(sum) it is the
    sent value, which the all_reduce gives every rank."""
    m = localize(parse_module(SEND_RECV))
    text = print_module(m)
    assert "dist.send(%x2.dist)" in text and "tensor<2x6xf32>" in text
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(run_ranks(parse_module(text), {"x": x}, 4)["y"], x * x)

"""``shard_module`` end to end on small models: the collectives each plan inserts (Megatron
MLP and attention: exactly one all-reduce each; data parallelism: none), and that the sharded
program gives the single-device result both in the global view (the reference runtime, where
collectives are identities) and on simulated ranks (each rank on its blocks)."""

import numpy as np
import pytest

from pir.errors import PirError
from pir.ir.dialects.dist import Mesh
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.shard.driver import find_function, parse_memory, shard_module
from pir.runtimes.reference import run_function
from program_harness import run_on_ranks
import shard_models as M

MLP_TP = {"*fc1.w": ["S(1)"], "*fc2.w": ["S(0)"]}
ATTN_TP = {"*.q.w": ["S(1)"], "*.k.w": ["S(1)"], "*.v.w": ["S(1)"], "*proj.w": ["S(0)"]}


def collectives(module) -> list[str]:
    return [op.name for op in find_function(module).entry.ops
            if op.name.startswith("dist.") and op.name != "dist.reshard"]


def check(model, mesh, spec=None, auto=False, **kw):
    """Shard ``model``; check the global view and the simulated ranks against the
    single-device run (1e-5 relative); check the text round trip; return the result."""
    feeds = M.inputs(model)
    want = run_function(model, feeds)
    result = shard_module(model, mesh, spec, auto=auto, **kw)
    text = print_module(model)
    again = parse_module(text)
    assert print_module(again) == text
    got = run_function(again, feeds)
    ranks = run_on_ranks(find_function(model), result.mesh, feeds)
    for name, ref in want.items():
        np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ranks[name], ref, rtol=1e-5, atol=1e-5)
    return result


def test_megatron_mlp_one_all_reduce():
    m = M.mlp()
    r = check(m, "tp=2", MLP_TP)
    assert collectives(m) == ["dist.all_reduce"]
    assert [(c.kind, c.bytes) for c in r.summary.collectives] == [("all_reduce", 4 * 8 * 4)]
    # the hidden activations are split, the biases of fc1 sliced locally
    fc1 = next(op for op in find_function(m).entry.ops if op.results and op.result.name == "l0.fc1")
    assert str(fc1.result.type) == "!dist.tensor<4x16xf32, mesh<tp=2>, [S(1)]>"


def test_megatron_attention_one_all_reduce():
    m = M.attention()
    check(m, "tp=2", ATTN_TP)
    assert collectives(m) == ["dist.all_reduce"]


def test_transformer_block_tp_and_dp():
    m = M.block(batch=4)
    r = check(m, "dp=2,tp=2", {"x": ["S(0)", "R"], **{k: ["R", *v] for k, v in
                                                         {**MLP_TP, **ATTN_TP}.items()}})
    # one all-reduce after attention and one after the MLP, on tp; nothing on dp
    assert [(c.kind, c.axis) for c in r.summary.collectives] == [("all_reduce", "tp")] * 2
    assert collectives(m) == ["dist.all_reduce"] * 2


def test_auto_finds_megatron_mlp():
    m = M.mlp()
    r = check(m, "tp=2", auto=True)
    assert collectives(m) == ["dist.all_reduce"]
    layouts = {name: p for name, _, p, _ in r.summary.parameters}
    assert layouts["l0.fc1.w"] == "[S(1)]" and layouts["l0.fc2.w"] == "[S(0)]"


def test_auto_finds_megatron_attention_and_block():
    m = M.attention()
    check(m, "tp=2", auto=True)
    assert collectives(m) == ["dist.all_reduce"]
    m = M.block()
    r = check(m, "tp=2", auto=True)
    assert collectives(m) == ["dist.all_reduce"] * 2
    assert r.summary.weight_bytes < 0.55 * r.summary.weight_bytes_total


def test_auto_keeps_data_parallelism():
    m = M.block(batch=4)
    r = check(m, "dp=2", {"x": ["S(0)"]}, auto=True)
    assert collectives(m) == [] and r.chosen == {}
    assert str(find_function(m).return_op.operands[0].type).endswith("[S(0)]>")


def test_auto_dp_and_tp():
    m = M.mlp(batch=4)
    r = check(m, "dp=2,tp=2", {"x": ["S(0)", "R"]}, auto=True)
    assert [(c.kind, c.axis) for c in r.summary.collectives] == [("all_reduce", "tp")]


def test_auto_respects_max_memory():
    m = M.mlp()
    free = shard_module(M.mlp(), "tp=2", {}).summary.memory
    r = check(m, "tp=2", auto=True, max_memory=free)  # room for everything: no split
    assert r.chosen == {} and collectives(m) == []
    m = M.mlp()
    r = check(m, "tp=2", auto=True, max_memory=free * 6 // 10)
    assert r.summary.memory <= free * 6 // 10 and r.chosen


def test_partial_used_twice_is_reduced_once():
    """p = x @ w (row-parallel: P(sum)); y = p * p: one all-reduce of p, not two."""
    m = M.mlp()
    r = check(m, "tp=2", {"*fc1.w": ["S(0)"]})
    counts = [(c.kind, c.value) for c in r.summary.collectives]
    assert len(counts) == len(set(counts)) == 1 and counts[0][1] == "l0.fc1"


def test_missing_rules_listed_at_once():
    m = parse_module("""module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>) {
    %a = nn.matmul(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %b = nn.relu(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %c = nn.matmul(%b, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    func.return(%c) : (tensor<4x8xf32>) -> ()
  }
}""")
    with pytest.raises(PirError, match=r"2 ops without an SPMD rule \(shard\): nn.matmul, "
                                       r"nn.relu \(decompose nn ops to prim first"):
        shard_module(m, "tp=2", {"w": ["S(1)"]})


def test_memory_sizes():
    assert parse_memory("64MB") == 64_000_000 and parse_memory("1GiB") == 1 << 30
    assert parse_memory("4096") == 4096
    with pytest.raises(PirError, match="bad memory size"):
        parse_memory("lots")


def test_mesh_errors():
    with pytest.raises(PirError, match="bad --mesh"):
        shard_module(M.mlp(), "tp=two", {})
    assert Mesh.parse("dp=2,tp=2").num_ranks == 4


def test_annotated_weight_moves_by_collectives():
    """A weight annotated S(0) is held as row blocks; a consumer that needs columns gets
    them by an all-to-all of the blocks (not by slicing the whole weight again)."""
    m = parse_module("""module {
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
    %w = builtin.constant() {value = dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<1x8xf32>} : () -> tensor<1x8xf32>
    %wb = prim.broadcast_in_dim(%w) {broadcast_dimensions = [0, 1]} : (tensor<1x8xf32>) -> tensor<4x8xf32>
    %v = prim.neg(%wb) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %y = prim.add(%x, %v) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return(%y) : (tensor<4x8xf32>) -> ()
  }
}""")
    r = check(m, "tp=2", {"x": ["S(1)"], "v": ["S(0)"]})
    assert [c.kind for c in r.summary.collectives] == ["all_to_all"]
    assert collectives(m) == ["dist.all_to_all"]


def test_annotated_constant_keeps_its_blocks():
    """A weight annotated S(0) enters as row blocks (a local slice at load); an add with x
    split by columns needs it by columns: an all-to-all of the blocks, not a second slice
    of the whole weight (the rank holds only its rows)."""
    rows = ", ".join("[" + ", ".join(f"{i * 8 + j}.0" for j in range(8)) + "]" for i in range(4))
    m = parse_module(f"""module {{
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {{
    %w = builtin.constant() {{value = dense<[{rows}]> : tensor<4x8xf32>}} : () -> tensor<4x8xf32>
    %y = prim.add(%x, %w) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return(%y) : (tensor<4x8xf32>) -> ()
  }}
}}""")
    r = check(m, "tp=2", {"x": ["S(1)"], "w": ["S(0)"]})
    assert collectives(m) == ["dist.all_to_all"]
    assert [s[2] for s in r.summary.parameters] == ["[S(0)]"]


def test_data_parallel_training_step(tmp_path):
    """A training step from `pir autodiff --train`, data parallel: only all-reduces on dp
    (the loss and, per parameter, the gradient step), and every rank gets the
    single-device parameters."""
    import onnx

    from helpers import cli, regression_mlp
    from pir.ir.parser import parse_file

    rng = np.random.default_rng(0)
    model = regression_mlp()
    onnx.save(model, tmp_path / "m.onnx")
    assert cli("import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.pir"))[0] == 0
    code, _, err = cli("autodiff", str(tmp_path / "m.pir"), "--train", "sgd", "--lr", "0.1",
                       "--loss", "loss", "-o", str(tmp_path / "t.pir"))
    assert code == 0, err
    m = parse_file(str(tmp_path / "t.pir"))
    fn = m.lookup("main_train")
    feeds = {a.name: rng.normal(size=a.type.shape).astype(np.float32) for a in fn.entry.args}
    want = run_function(m, feeds, func="main_train")
    r = shard_module(m, "dp=2", {"x": ["S(0)"], "t": ["S(0)"]}, func="main_train")
    assert {(c.kind, c.axis) for c in r.summary.collectives} == {("all_reduce", "dp")}
    assert len(r.summary.collectives) == 3  # the loss and two parameters
    got = run_on_ranks(fn, r.mesh, feeds)
    for name, ref in want.items():
        np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-6, err_msg=name)


def test_sharding_twice_is_an_error():
    m = M.mlp()
    shard_module(m, "tp=2", MLP_TP)
    with pytest.raises(PirError, match="@main is already sharded"):
        shard_module(m, "tp=2", MLP_TP)


def test_max_memory_out_of_reach():
    with pytest.raises(PirError, match=r"no plan found within --max-memory 100 B per rank: "
                                       r"the best found needs"):
        shard_module(M.mlp(), "tp=2", auto=True, max_memory="100")


_DOT = ("prim.dot_general(%x, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], "
        "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : "
        "(tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>")


def _partial_then(body: str, out: str) -> object:
    """x (split on its contracted dim) @ w gives %y = P(sum), then ``body``."""
    return parse_module(f"""module {{
  func.func @main(%x: tensor<4x8xf32>) -> ({out}) {{
    %w = builtin.constant() {{value = dense<0.5> : tensor<8x6xf32>}} : () -> tensor<8x6xf32>
    %y = {_DOT}
{body}
  }}
}}""")


def test_conflict_reduce_after_a_reduction():
    """A partial sum carried through reduce_sum is all-reduced after it, where it is 6x
    smaller, not before (the cost model, not the order of the rules, decides)."""
    m = _partial_then("""    %s = prim.reduce_sum(%y) {axes = [1], keepdims = false} : (tensor<4x6xf32>) -> tensor<4xf32>
    %e = prim.exp(%s) : (tensor<4xf32>) -> tensor<4xf32>
    func.return(%e) : (tensor<4xf32>) -> ()""", "tensor<4xf32>")
    r = check(m, "tp=2", {"x": ["S(1)"]})
    assert [(c.kind, c.value, c.bytes) for c in r.summary.collectives] == [("all_reduce", "s", 16)]


def test_conflict_reduce_before_a_broadcast():
    """... and before a broadcast, where it is 3x smaller."""
    m = _partial_then("""    %b = prim.broadcast_in_dim(%y) {broadcast_dimensions = [1, 2]} : (tensor<4x6xf32>) -> tensor<3x4x6xf32>
    %e = prim.exp(%b) : (tensor<3x4x6xf32>) -> tensor<3x4x6xf32>
    func.return(%e) : (tensor<3x4x6xf32>) -> ()""", "tensor<3x4x6xf32>")
    r = check(m, "tp=2", {"x": ["S(1)"]})
    assert [(c.kind, c.value, c.bytes) for c in r.summary.collectives] == [("all_reduce", "y", 96)]


def test_fold_keeps_sharded_constants():
    """Constant folding leaves ops with !dist.tensor results alone: folding the local slice
    of a weight would turn the rank's block back into the whole weight."""
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    m = M.mlp()
    shard_module(m, "tp=2", MLP_TP)
    before = [op.name for op in find_function(m).entry.ops].count("dist.reshard")
    PassManager(parse_pipeline("fold")).run(m)
    assert [op.name for op in find_function(m).entry.ops].count("dist.reshard") == before > 0

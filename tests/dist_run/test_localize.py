"""localize: the per-rank program made from a global-view sharded program."""

import os
import re

import numpy as np
import pytest
from dist_models import MLP_TP, mlp, prim_program, shard

from helpers import roundtrip
from pir.errors import PirError
from pir.ir.dialects.dist import DistTensorType, Mesh
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.shard.localize import localize
from pir.runtimes.dist import run_ranks
from pir.runtimes.reference import run_function

HERE = os.path.dirname(__file__)
X = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)


def sharded_mlp(mesh="tp=2", spec=MLP_TP):
    return shard(prim_program(mlp()), mesh, spec)


def body_lines(module) -> list[str]:
    text = print_module(module)
    return [line.strip() for line in text.split("resources {")[0].splitlines()
            if " = " in line and "builtin.constant" not in line]


def test_megatron_mlp_per_rank_program():
    m = localize(sharded_mlp())
    text = roundtrip(m)
    assert 'dist.per_rank = "mesh<tp=2>"' in text
    ops = [op for op in m.lookup("main").entry.ops]
    # every op but the dist ops works on plain tensors of local shapes
    for op in ops:
        if not op.name.startswith("dist.") and op.name != "func.return":
            types = [v.type for v in op.operands] + [r.type for r in op.results]
            assert not any(isinstance(t, DistTensorType) for t in types), op.name
    assert [op.name for op in ops].count("dist.all_reduce") == 1
    dots = [op for op in ops if op.name == "prim.dot_general"]
    assert [str(op.results[0].type) for op in dots] == ["tensor<8x16xf32>", "tensor<8x16xf32>"]
    assert str(dots[0].operands[1].type) == "tensor<16x16xf32>"  # fc1's column block
    assert str(dots[1].operands[1].type) == "tensor<16x16xf32>"  # fc2's row block
    # the output keeps its name (and so its .npz key)
    assert m.lookup("main").return_op.operands[0].name == "y"


def test_local_sizes_in_attributes():
    text = open(os.path.join(HERE, "local_sizes.pir")).read()
    m = localize(parse_module(text))
    lines = {line.split(" = ")[0]: line for line in body_lines(m)}
    assert "limit_indices = [4, 10]" in lines["%a"]  # a split dim taken whole: its local size
    assert lines["%b"].endswith("-> tensor<4x2x4xf32>")  # reshape's declared type
    assert lines["%c"].endswith("-> tensor<4x2x4xf32>")  # iota's
    assert "slice_sizes = [8, 1, 2]" in lines["%f"]
    assert lines["%g"].endswith("-> tensor<8x3x2xf32>")  # broadcast_in_dim's
    feeds = {"x": np.random.default_rng(0).standard_normal((8, 12)).astype(np.float32),
             "s": np.array([0, 1, 0], np.int32)}
    want = run_function(parse_module(text), feeds)
    got = run_ranks(parse_module(roundtrip(m)), feeds, 4)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-6)


def test_split_weights(tmp_path):
    m = localize(sharded_mlp(), split_weights=tmp_path / "w", weights_ref="w")
    text = roundtrip(m)
    assert 'dist.weights = "w"' in text
    assert "dist.load_shard() {key = \"fc1.weight\"" in text
    assert "fc1.weight" not in m.resources and "fc2.weight" not in m.resources
    for r in range(2):
        with np.load(tmp_path / "w" / f"rank{r}.npz") as f:
            shapes = {k: f[k].shape for k in f.files}
        assert shapes == {"fc1.weight": (16, 16), "fc1.bias": (16,), "fc2.weight": (16, 16)}
    (tmp_path / "mlp.pir").write_text(text)
    want = run_function(prim_program(mlp()), {"x": X})["y"]
    got = run_ranks(parse_module(text), {"x": X}, 2, program_path=str(tmp_path / "mlp.pir"))
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-6)
    # rank 1 reads only its own file
    with np.load(tmp_path / "w" / "rank1.npz") as f:
        w1 = f["fc1.weight"]
    whole = prim_program(mlp()).resources["fc1.weight"]
    np.testing.assert_array_equal(w1, whole[:, 16:])


def test_symbolic_batch_gets_a_local_symbol():
    m = shard(prim_program(mlp(batch="B")), "dp=2", {"x": ["S(0)"]})
    localize(m)
    text = print_module(m)
    assert "tensor<B_dpx16xf32>" in text
    x = np.random.default_rng(2).standard_normal((6, 16)).astype(np.float32)
    want = run_function(prim_program(mlp(batch="B")), {"x": x})["y"]
    got = run_ranks(parse_module(text), {"x": x}, 2)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_errors():
    m = localize(sharded_mlp())
    with pytest.raises(PirError, match="already a per-rank program"):
        localize(m)
    with pytest.raises(PirError, match="sharded over mesh<tp=2>, not mesh<tp=4>"):
        localize(sharded_mlp(), Mesh.parse("tp=4"))
    with pytest.raises(PirError, match="no !dist.tensor values"):
        localize(prim_program(mlp()))


T2 = "!dist.tensor<8x16xf32, mesh<tp=2>, [S(1)]>"


@pytest.mark.parametrize("line,message", [
    (f"%y = dist.from_local(%x) : (tensor<8x16xf32>) -> {T2}",
     "x must be tensor<8x8xf32>, the local block of " + T2),
    ("%y = dist.to_local(%x) : (tensor<8x16xf32>) -> tensor<8x8xf32>",
     "x must be a !dist.tensor, got tensor<8x16xf32>"),
    ('%y = dist.load_shard() {key = "w", layout = tensor<8x16xf32>} : () -> tensor<8x8xf32>',
     "layout must be a !dist.tensor type"),
    (f'%y = dist.load_shard() {{key = "w", layout = {T2}}} : () -> tensor<8x16xf32>',
     "result 0 is declared tensor<8x16xf32>, but the op gives tensor<8x8xf32>"),
])
def test_local_ops_verify(line, message):
    text = ("module {\n  func.func @main(%x: tensor<8x16xf32>) -> () {\n    " + line +
            "\n    func.return() : () -> ()\n  }\n}\n")
    with pytest.raises(PirError, match=re.escape(message)):
        parse_module(text)

"""The fuse pass: group counts and contents, semantics (the reference runtime runs the
groups), options, the explain report, and the fusion.group op's own checks.  The IR-level
shape of the groups is pinned by tests/passes/filecheck/fuse_*.pir."""

import pathlib

import numpy as np
import pytest

from helpers import check_pipeline, node_model
from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.fusion import GroupOp
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline

MODELS = pathlib.Path(__file__).resolve().parents[1] / "models"
PRIM = "decompose,canonicalize,fold,cse,dce"
FILECHECK = pathlib.Path(__file__).parent / "filecheck"


def groups(module) -> list[GroupOp]:
    return [op for fn in module.funcs for op in fn.walk() if isinstance(op, GroupOp)]


def sizes(module) -> list[int]:
    """Ops per group (the yield and the copies of tiny constants not counted), in program
    order."""
    return [sum(op.name not in ("fusion.yield", "builtin.constant") for op in g.body.block.ops)
            for g in groups(module)]


def fuse(text: str, options: str = "") -> tuple[object, str]:
    module = parse_module(text)
    PassManager(parse_pipeline("fuse" + options)).run(module)
    return module, print_module(module)


# -- the composite ops: one group each -------------------------------------------------------

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 8)).astype(np.float32)
G = rng.standard_normal(8).astype(np.float32)
B = rng.standard_normal(8).astype(np.float32)

ONE_GROUP = {
    "softmax": node_model("Softmax", {"x": X}, ["y"], axis=-1),
    "log_softmax": node_model("LogSoftmax", {"x": X}, ["y"], axis=-1),
    "layer_norm": node_model("LayerNormalization", {"x": X}, ["y"],
                             initializers={"g": G, "b": B}, axis=-1),
    "rms_norm": node_model("RMSNormalization", {"x": X}, ["y"], initializers={"g": G},
                           opset=23, axis=-1),
}


@pytest.mark.parametrize("name", sorted(ONE_GROUP))
def test_normalisations_become_one_reduction_group(name):
    module = import_model(ONE_GROUP[name])
    out = check_pipeline(module, {"x": X}, PRIM + ",fuse")
    [g] = groups(out)
    assert g.kind == "reduction"
    inner = [op.name for op in g.body.block.ops]
    assert any(n.startswith("prim.reduce_") for n in inner)
    # nothing but constants is left outside the group
    outside = {op.name for op in out.funcs[0].entry.ops if not isinstance(op, GroupOp)}
    assert outside <= {"builtin.constant", "func.return"}


# -- every test model: same outputs, sane groups ----------------------------------------------

@pytest.mark.parametrize("name", sorted(p.stem for p in MODELS.glob("*.onnx")))
def test_models_keep_their_outputs(name):
    module = import_model(str(MODELS / f"{name}.onnx"))
    feeds = dict(np.load(MODELS / f"{name}.inputs.npz"))
    out = check_pipeline(module, feeds, PRIM + ",fuse", rtol=1e-4, atol=1e-5)
    gs = groups(out)
    assert gs and all(1 <= n <= 64 for n in sizes(out))
    for g in gs:  # library calls never go inside a group
        assert not {"prim.dot_general", "prim.conv"} & {op.name for op in g.body.block.ops}
    # every elementwise or reduction prim op outside a group would be a missed fusion
    loose = [op.name for op in out.funcs[0].entry.ops
             if op.name.startswith("prim.") and op.name not in ("prim.dot_general", "prim.conv")]
    assert loose == []


def test_transformer_block_groups():
    """The filecheck test's transformer: 12 groups (3 layer_norms and the softmax are
    reductions; 8 epilogues of the 8 matmuls)."""
    text = (FILECHECK / "fuse_transformer.pir").read_text()
    module, _ = fuse(text)
    gs = groups(module)
    assert len(gs) == 12
    assert sum(g.kind == "reduction" for g in gs) == 4
    assert sorted(g.epilogue_of for g in gs if g.epilogue_of) == sorted(
        ["h0.q.mm", "h0.k.mm", "h0.v.mm", "h0.scores", "h0.ctx", "h0.proj.mm", "h0.fc1.mm",
         "h0.fc2.mm"])


# -- options ---------------------------------------------------------------------------------

def test_max_group_ops_is_respected():
    module = import_model(ONE_GROUP["layer_norm"])
    out = check_pipeline(module, {"x": X}, PRIM + ",fuse{max-group-ops=4}")
    assert len(groups(out)) > 1 and max(sizes(out)) <= 4


TWO_READERS = """module {
  func.func @main(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
    %a = prim.exp(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %b = prim.neg(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
    func.return(%a, %b) : (tensor<2x8xf32>, tensor<2x8xf32>) -> ()
  }
}
"""


def test_horizontal_fusion_and_disabling_it():
    module, _ = fuse(TWO_READERS)
    assert sizes(module) == [2]
    module, _ = fuse(TWO_READERS, "{disable=horizontal}")
    assert sizes(module) == [1, 1]


def test_disable_epilogue_and_reduce():
    text = (FILECHECK / "fuse_transformer.pir").read_text()
    module, _ = fuse(text, "{disable=epilogue}")
    gs = groups(module)
    assert all(g.epilogue_of is None for g in gs) and len(gs) < 12
    module, _ = fuse((FILECHECK / "fuse_softmax.pir").read_text(), "{disable=reduce}")
    assert all(len(g.body.block.ops) == 2 for g in groups(module) if g.kind == "reduction")


def test_unknown_disable_kind_is_an_error():
    with pytest.raises(PirError, match="unknown kind 'vertical'"):
        fuse(TWO_READERS, "{disable=vertical}")


# -- cycles and explain ----------------------------------------------------------------------

CYCLE = """module {
  func.func @main(%x: tensor<2x2xf32>, %w: tensor<2x2xf32>) -> (tensor<2x2xf32>) {
    %e = prim.exp(%x) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %m = prim.dot_general(%e, %w) {lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %y = prim.add(%e, %m) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    func.return(%y) : (tensor<2x2xf32>) -> ()
  }
}
"""


def test_no_group_creates_a_cycle(capsys):
    """exp feeds the matmul and the add that reads the matmul: fusing exp with the add would
    put the group both before and after the matmul."""
    module, text = fuse(CYCLE, "{explain}")
    assert sizes(module) == [1, 1]
    err = capsys.readouterr().err
    assert "%e (prim.exp) -> %y (prim.add): not fused: fusing would create a cycle through " \
           "%m (prim.dot_general)" in err
    parse_module(text)  # the verifier (dominance) accepts the result
    x, w = rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    from pir.runtimes.reference import run_function
    got = run_function(module, {"x": x.astype(np.float32), "w": w.astype(np.float32)})["y"]
    e = np.exp(x.astype(np.float32))
    np.testing.assert_allclose(got, e + e @ w.astype(np.float32), rtol=1e-6)


def test_explain_is_pinned(capsys):
    fuse((FILECHECK / "fuse_softmax.pir").read_text(), "{explain}")
    assert capsys.readouterr().err == """\
fuse @main: 1 group
  %y.1 (prim.reduce_max) -> %y.2 (prim.broadcast_in_dim): fused: reduction -> broadcast
  %y.2 (prim.broadcast_in_dim) -> %y.3 (prim.sub): fused: broadcast -> elementwise
  %y.3 (prim.sub) -> %y.4 (prim.exp): fused: elementwise -> elementwise
  %y.4 (prim.exp) -> %y.5 (prim.reduce_sum): fused: elementwise -> reduction
  %y.5 (prim.reduce_sum) -> %y.6 (prim.broadcast_in_dim): fused: reduction -> broadcast
  %y.4 (prim.exp) -> %y (prim.div): fused: elementwise -> elementwise
  %y.6 (prim.broadcast_in_dim) -> %y (prim.div): fused: already in one group
"""


def test_fuse_is_deterministic():
    text = (FILECHECK / "fuse_transformer.pir").read_text()
    assert fuse(text)[1] == fuse(text)[1]


# -- the fusion.group op ---------------------------------------------------------------------

def test_group_round_trips_and_checks_itself():
    _, text = fuse(TWO_READERS)
    assert print_module(parse_module(text)) == text
    with pytest.raises(PirError, match="kind must be one of"):
        parse_module(text.replace('kind = "elementwise"', 'kind = "blob"'))
    with pytest.raises(PirError, match="does not dominate"):  # isolated from above
        parse_module(text.replace("prim.neg(%x_1)", "prim.neg(%x)"))

"""Dims as real exporters write them: `?`, `-1`, empty, `DynamicDimension.N`, value_info
expressions, ONNX's `unk__N`; and `pir import --dim / --static`."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from helpers import check_pipeline, cli, run_ort
from pir.errors import PirError
from pir.frontends.onnx.dims import parse_exporter_expr, symbol_for
from pir.frontends.onnx.importer import import_model
from pir.ir import dimexpr
from pir.ir.printer import print_module
from pir.runtimes.reference.interpreter import run_function


def _input(name, dims):
    """A float graph input whose dims are written exactly as given: an int is a dim_value
    (-1 included), a str a dim_param, None a dim with neither field."""
    vi = helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
    shape = vi.type.tensor_type.shape
    vi.type.tensor_type.ClearField("shape")
    shape = vi.type.tensor_type.shape
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d
    return vi


def _relu_model(dims) -> onnx.ModelProto:
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([node], "g", [_input("x", dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _arg_shape(module):
    return module.funcs[0].entry.args[0].type.shape


@pytest.mark.parametrize("spelling", ["?", "-1", "", None, -1])
def test_each_unknown_input_dim_is_its_own_symbol(spelling):
    # one exporter writes '?' for both H and W: they must not be taken for one dim
    dims = [1, 3, spelling, spelling] if spelling is not None else [1, 3, None, None]
    module = import_model(_relu_model(dims))
    assert _arg_shape(module) == (1, 3, "x_2", "x_3")
    x = np.random.default_rng(0).normal(size=(1, 3, 48, 192)).astype(np.float32)
    assert np.array_equal(run_function(module, {"x": x})["y"], np.maximum(x, 0))


def test_fresh_symbols_do_not_take_names_the_model_uses():
    module = import_model(_relu_model(["x_2", 3, "?", "?"]))
    assert _arg_shape(module) == ("x_2", 3, "x_2_1", "x_3")


def test_named_dims_become_symbols():
    module = import_model(_relu_model(["DynamicDimension.0", "batch size", 4, "mod"]))
    assert _arg_shape(module) == ("DynamicDimension_0", "batch_size", 4, "s_mod")


@pytest.mark.parametrize("text, want", [
    ("floor(H/2 - 1/2) + 1", "(H + 1) floordiv 2"),
    ("2*s0", "2*s0"),
    ("((s0 - 1)//2) + 1", "(s0 + 1) floordiv 2"),
    ("s0*s1", "s0*s1"),
    ("ceiling(H/4)", "(H + 3) floordiv 4"),
    ("Max(1, s1)", "max(s1, 1)"),
    ("Mod(s0, 8)", "s0 - 8*(s0 floordiv 8)"),
    ("FloorDiv(s0, 2) + CeilToInt(s1/3)", "s0 floordiv 2 + (s1 + 2) floordiv 3"),
    ("(H + 1)/2*2", "H + 1"),  # rational on the way, integral at the end
    ("H/2", None),  # fractional
    ("H*2/2", "H"),
    ("s0/s1", None),  # a division by a symbol
    ("batch", None),  # a name, not an expression
    ("a.b + 1", "a_b + 1"),
])
def test_exporter_expressions(text, want):
    got = parse_exporter_expr(text)
    if want is None:
        assert got is None
    else:
        assert got == dimexpr.parse_dim_expr(want)


def test_symbol_names_are_identifiers():
    assert symbol_for("DynamicDimension.0") == "DynamicDimension_0"
    assert symbol_for("3d") == "d3d"
    assert symbol_for("f32") == "s_f32"  # spelled like a dtype
    assert symbol_for("") is None


def _conv_model(value_info_dims=None, bias=False) -> onnx.ModelProto:
    w = np.random.default_rng(1).normal(size=(4, 3, 3, 3)).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(onnx.numpy_helper.from_array(np.arange(4, dtype=np.float32), "b"))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["c"], name="conv", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    vi = []
    if value_info_dims is not None:
        vi = [helper.make_tensor_value_info("c", TensorProto.FLOAT, value_info_dims)]
    graph = helper.make_graph(nodes, "g", [_input("x", ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits, value_info=vi)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("value_info", [
    None,  # ONNX's shape inference names the result dims unk__N
    ["N", 4, "floor(H/2 - 1/2) + 1", "floor(W/2 - 1/2) + 1"],  # an exporter's expressions
    ["N", 4, "oh", "ow"],  # opaque names: our rule's expression wins
])
def test_conv_result_dims_are_expressions_of_the_input(value_info, tmp_path):
    model = _conv_model(value_info)
    module = import_model(model)
    text = print_module(module)
    assert "tensor<Nx4x((H + 1) floordiv 2)x((W + 1) floordiv 2)xf32>" in text
    assert "unk__" not in text and "floor_" not in text
    for h, w in [(16, 24), (17, 9)]:
        x = np.random.default_rng(h).normal(size=(2, 3, h, w)).astype(np.float32)
        # decompose writes no `?`: the optimized program sizes every result from N, H, W
        check_pipeline(module, {"x": x}, "decompose,canonicalize,fold,cse,dce,shapes,fuse",
                       rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(run_function(module, {"x": x})["y"],
                                   run_ort(model, {"x": x})["y"], rtol=1e-4, atol=1e-5)


def test_pinned_dims(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_conv_model(), path)
    code, out, err = cli("import", path, "--dim", "N=1", "-o", "-")
    assert code == 0, err
    assert "@main(%x: tensor<1x3xHxWxf32>)" in out
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 3, 16, 24), np.float32))
    code, out, err = cli("import", path, "--static", tmp_path / "in.npz", "-o", "-")
    assert code == 0, err
    assert "@main(%x: tensor<2x3x16x24xf32>) -> (tensor<2x4x8x12xf32>)" in out
    code, out, err = cli("import", path, "--dim", "Q=1", "-o", tmp_path / "o.pir")
    assert code == 1 and "--dim Q: the model's inputs have no dim of that name" in err
    assert "(their symbols: H, N, W)" in err and not (tmp_path / "o.pir").exists()
    np.savez(tmp_path / "bad.npz", x=np.zeros((2, 4, 16, 24), np.float32))
    code, out, err = cli("import", path, "--static", tmp_path / "bad.npz", "-o", "-")
    assert code == 1 and "has shape [2, 4, 16, 24], but the model declares" in err


def test_input_expression_dims_bind_their_symbol():
    # an input dim written as an expression of one symbol binds that symbol
    module = import_model(_relu_model([1, "2*n"]))
    assert _arg_shape(module) == (1, dimexpr.parse_dim_expr("2*n"))
    x = np.ones((1, 6), np.float32)
    assert run_function(module, {"x": x})["y"].shape == (1, 6)
    assert run_function(module, {"x": np.ones((1, 8), np.float32)})["y"].shape == (1, 8)
    with pytest.raises(PirError, match="dim 1 is 2\\*n, which is 7 for no size of n"):
        run_function(module, {"x": np.ones((1, 7), np.float32)})


def test_import_explain_names_each_dim_the_type_rule_overrode(tmp_path):
    """`pir import --explain` lists where our rule and the value_info disagree, and what
    was kept; an expression that agrees once canonical is no disagreement."""
    onnx.save(_conv_model(["N", 4, "oh", "ow"]), tmp_path / "m.onnx")
    code, _, err = cli("import", tmp_path / "m.onnx", "--explain", "-o", tmp_path / "m.pir")
    assert code == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("import: ")]
    assert len(lines) == 4 and lines[2].startswith("import: relu (Relu): output 0 dim 2")
    assert lines[:2] == [
        "import: conv (Conv): output 0 dim 2: the type rule gives (H + 1) floordiv 2, "
        "ONNX's value_info oh; kept (H + 1) floordiv 2",
        "import: conv (Conv): output 0 dim 3: the type rule gives (W + 1) floordiv 2, "
        "ONNX's value_info ow; kept (W + 1) floordiv 2"], err
    onnx.save(_conv_model(["N", 4, "floor(H/2 - 1/2) + 1", "floor(W/2 - 1/2) + 1"]),
              tmp_path / "e.onnx")
    code, _, err = cli("import", tmp_path / "e.onnx", "--explain", "-o", tmp_path / "e.pir")
    assert code == 0 and "import: nothing" in err, err


def test_an_output_dim_the_exporter_guessed_from_its_trace_is_not_a_promise():
    """An AECMOS model (speechmos) declares its Squeeze's output ``[batch_size]``, the name
    of the input's batch dim; for a batch of one the Squeeze (no axes) removes that dim too
    and returns ``[2]``.  The rank comes from the declaration, the input's symbol does not."""
    node = helper.make_node("Squeeze", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [_input("x", ["batch_size", 1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             ["batch_size"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = import_model(model)
    (y,) = module.funcs[0].entry.terminator.operands
    assert y.type.shape == (None,)
    x = np.array([[[1.5, -2.0]]], np.float32)
    got = run_function(module, {"x": x})["y"]
    np.testing.assert_array_equal(got, run_ort(model, {"x": x})["y"])


def test_a_batch_onnx_names_anew_after_a_broadcast_of_two_symbols_decomposes():
    """tf2onnx's BERT (g2p-id) and paddle2onnx's SLANet: a MatMul of [unk__3, M, K] by
    [unk__1, K, N], whose result ONNX's inference names [unk__5, M, N].  The operands'
    batch dims are made one (decompose's `agree`), and the result is that batch renamed,
    not broadcast from it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["unk__3", 4, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["unk__1", 16, 8])
    out = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["unk__5", 4, 8])
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "y"], ["z"])], "g", [x, y],
                              [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = import_model(model)
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((3, 4, 16)).astype(np.float32),
             "y": rng.standard_normal((3, 16, 8)).astype(np.float32)}
    done = check_pipeline(module, feeds, "decompose,canonicalize,shapes")
    assert not [op for op in done.walk() if op.name == "prim.broadcast_in_dim"]
    np.testing.assert_allclose(run_function(done, feeds)["z"], run_ort(model, feeds)["z"],
                               rtol=1e-5, atol=1e-5)

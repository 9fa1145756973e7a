"""If, Loop and Scan: import to ops with regions, round trip, run, compare with ONNX Runtime;
type rules and verifier diagnostics of the region ops."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_model
from onnx import TensorProto, helper

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dialects.func import FuncOp
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.ir.types import TensorType
from pir.runtimes.reference import run_function

rng = np.random.default_rng(0)
F32 = TensorProto.FLOAT


def model_of(node, inputs: dict[str, np.ndarray], outputs: list[str], opset: int = 21,
             infer: bool = True):
    """A model whose graph inputs are ``inputs`` (the node may read only some of them: the
    subgraphs capture the others) and whose one node is ``node``."""
    g_inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                              v.shape) for k, v in inputs.items()]
    g_outputs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    graph = helper.make_graph([node], "cf", g_inputs, g_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return onnx.shape_inference.infer_shapes(model) if infer else model


def vi(name, elem=F32, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def the_op(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


# -- If ---------------------------------------------------------------------------------------

def if_model(then_nodes, else_nodes, then_out, else_out, **inputs):
    then = helper.make_graph(then_nodes, "then", [], [vi(then_out)])
    other = helper.make_graph(else_nodes, "else", [], [vi(else_out)])
    node = helper.make_node("If", ["cond"], ["z"], then_branch=then, else_branch=other)
    return model_of(node, inputs, ["z"])


@pytest.mark.parametrize("cond", [True, False])
@pytest.mark.parametrize("shape", [(3,), (2, 4), ()])
def test_if_branches_capture_outer_values(cond, shape):
    x, y = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    model = if_model([helper.make_node("Add", ["x", "y"], ["s"])],
                     [helper.make_node("Mul", ["x", "y"], ["p"])], "s", "p",
                     cond=np.array(cond), x=x, y=y)
    module = check_model(model, {"cond": np.array(cond), "x": x, "y": y})
    op = the_op(module, "nn.if")
    assert len(op.regions) == 2 and op.results[0].type == TensorType.of(x)


def test_if_branches_of_different_shapes_give_unknown_dims():
    x = rng.standard_normal((2, 3), np.float32)
    model = if_model([helper.make_node("Add", ["x", "x"], ["s"])],
                     [helper.make_node("Transpose", ["x"], ["t"])], "s", "t",
                     cond=np.array(True), x=x)
    for cond in (True, False):
        module = check_model(model, {"cond": np.array(cond), "x": x})
    assert the_op(module, "nn.if").infer()[0].shape == (None, None)


# -- Loop -------------------------------------------------------------------------------------

def loop_model(with_m=True, with_cond=True, limit=None):
    """Carried y += x each iteration and scan output y * 2; the body's cond is
    iter < limit when ``limit`` is given (else it passes cond through)."""
    nodes = [helper.make_node("Add", ["y_in", "x"], ["y_out"]),
             helper.make_node("Add", ["y_out", "y_out"], ["doubled"])]
    if limit is None:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    else:
        nodes += [helper.make_node("Constant", [], ["lim"],
                                   value=helper.make_tensor("lim", TensorProto.INT64, [], [limit])),
                  helper.make_node("Less", ["i", "lim"], ["cond_out"])]
    body = helper.make_graph(nodes, "body",
                             [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                              vi("y_in", F32, [2])],
                             [vi("cond_out", TensorProto.BOOL, []), vi("y_out", F32, [2]),
                              vi("doubled", F32, [2])])
    ins = ["m" if with_m else "", "cond" if with_cond else "", "y0"]
    node = helper.make_node("Loop", ins, ["y", "ys"], body=body)
    inputs = {"x": np.ones(2, np.float32), "y0": np.zeros(2, np.float32)}
    if with_m:
        inputs["m"] = np.array(0, np.int64)
    if with_cond:
        inputs["cond"] = np.array(True)
    return model_of(node, inputs, ["y", "ys"]), inputs


@pytest.mark.parametrize("trips", [1, 4, 7])
@pytest.mark.parametrize("cond", [True, False])
def test_loop_with_trip_count_and_cond(trips, cond):
    model, feeds = loop_model()
    feeds.update(m=np.array(trips, np.int64), cond=np.array(cond),
                 x=rng.standard_normal(2).astype(np.float32))
    module = check_model(model, feeds)
    op = the_op(module, "nn.loop")
    assert op.operand_segments == (1, 1, 1)
    assert op.infer()[1].shape == (None, 2)  # scan outputs grow per iteration


@pytest.mark.parametrize("limit", [0, 3])
def test_loop_stops_when_the_body_cond_turns_false(limit):
    model, feeds = loop_model(with_m=False, limit=limit)
    module = check_model(model, feeds)
    assert the_op(module, "nn.loop").m is None
    assert run_function(module, feeds)["ys"].shape == (limit + 1, 2)


def test_loop_for_loop_without_cond():
    model, feeds = loop_model(with_cond=False)
    feeds["m"] = np.array(5, np.int64)
    module = check_model(model, feeds)
    assert the_op(module, "nn.loop").cond is None


def untyped(name):
    return helper.make_value_info(name, onnx.TypeProto())


@pytest.mark.parametrize("trips", [0, 3])
def test_loop_with_untyped_body_and_a_growing_carried_value(trips):
    body = helper.make_graph([helper.make_node("Concat", ["y_in", "x"], ["y_out"], axis=0),
                              helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
                             [untyped("i"), untyped("c_in"), untyped("y_in")],
                             [untyped("c_out"), untyped("y_out")])
    node = helper.make_node("Loop", ["m", "", "y0"], ["y"], body=body)
    feeds = {"m": np.array(trips, np.int64), "x": np.arange(2, dtype=np.float32),
             "y0": np.ones(1, np.float32)}
    # ONNX Runtime refuses untyped body inputs (ONNX itself allows them)
    want = np.concatenate([feeds["y0"]] + [feeds["x"]] * trips)
    module = check_model(model_of(node, feeds, ["y"], infer=False), feeds, expected={"y": want})
    arg = the_op(module, "nn.loop").body.block.args[2]
    assert arg.type.shape == (None,)  # only the rank of a carried value is fixed


def test_scan_with_untyped_body():
    body = helper.make_graph([helper.make_node("Add", ["s_in", "e"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["o"])], "body",
                             [untyped("s_in"), untyped("e")], [untyped("s_out"), untyped("o")])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1])
    feeds = {"s0": np.zeros(3, np.float32), "x": rng.standard_normal((3, 4)).astype(np.float32)}
    x = feeds["x"]
    want = {"s": x.sum(axis=1), "ys": np.cumsum(x, axis=1).T}
    module = check_model(model_of(node, feeds, ["s", "ys"], infer=False), feeds, expected=want)
    assert [a.type.shape for a in the_op(module, "nn.scan").body.block.args] == [(3,), (3,)]


# -- Scan -------------------------------------------------------------------------------------

def scan_body(state_shape, elem_shape):
    nodes = [helper.make_node("Add", ["s_in", "e"], ["s_out"]),
             helper.make_node("Mul", ["s_out", "e"], ["o"])]
    return helper.make_graph(nodes, "body",
                             [vi("s_in", F32, state_shape), vi("e", F32, elem_shape)],
                             [vi("s_out", F32, state_shape), vi("o", F32, elem_shape)])


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir",
                         [(0, 0, 0, 0), (1, 1, 0, 0), (0, 0, 1, 1), (-1, 1, -1, 0)])
def test_scan_axes_and_directions(in_axis, in_dir, out_axis, out_dir):
    x = rng.standard_normal((4, 5), np.float32)
    elem = (5,) if in_axis == 0 else (4,)
    body = scan_body(list(elem), list(elem))
    node = helper.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body,
                            num_scan_inputs=1, scan_input_axes=[in_axis],
                            scan_input_directions=[in_dir], scan_output_axes=[out_axis],
                            scan_output_directions=[out_dir])
    feeds = {"s0": np.zeros(elem, np.float32), "x": x}
    module = check_model(model_of(node, feeds, ["s", "ys"], opset=16), feeds)
    stacked = the_op(module, "nn.scan").results[1].type.shape
    assert sorted(stacked) == [4, 5]


def test_scan8_has_a_batch_axis():
    x = rng.standard_normal((2, 3, 4), np.float32)
    node = helper.make_node("Scan", ["", "s0", "x"], ["s", "ys"], body=scan_body([4], [4]),
                            num_scan_inputs=1, directions=[1])
    feeds = {"s0": rng.standard_normal((2, 4)).astype(np.float32), "x": x}
    module = check_model(model_of(node, feeds, ["s", "ys"], opset=8), feeds)
    outer = the_op(module, "nn.scan")
    inner = outer.body.block.ops[0]
    assert inner.name == "nn.scan" and inner.scan_input_directions == (1,)
    assert [r.type.shape for r in outer.results] == [(2, 4), (2, 3, 4)]


# -- diagnostics ------------------------------------------------------------------------------

IF_TEXT = """module {{
  func.func @main(%c: tensor<{ctype}>, %x: tensor<2xf32>) -> (tensor<2xf32>) {{
    %z = nn.if(%c) ({{
      nn.yield(%x) : (tensor<2xf32>) -> ()
    }}, {{
      nn.yield({other}) : ({other_type}) -> ()
    }}) : (tensor<{ctype}>) -> tensor<2xf32>
    func.return(%z) : (tensor<2xf32>) -> ()
  }}
}}
"""


def test_if_text_round_trips_and_uses_outer_values():
    text = IF_TEXT.format(ctype="i1", other="%x", other_type="tensor<2xf32>")
    assert print_module(parse_module(text)) == text


@pytest.mark.parametrize("ctype,other,other_type,message", [
    ("f32", "%x", "tensor<2xf32>", "operand 'cond' has element type f32"),
    ("i1", "%x, %x", "tensor<2xf32>, tensor<2xf32>", "then_branch yields 1 values, else_branch 2"),
    ("2xi1", "%x", "tensor<2xf32>", "cond must hold one element"),
    ("i1", "%c", "tensor<i1>", "element types f32 and i1 differ"),
])
def test_if_diagnostics(ctype, other, other_type, message):
    text = IF_TEXT.format(ctype=ctype, other=other, other_type=other_type)
    with pytest.raises(PirError, match=message):
        parse_module(text)


def test_loop_body_must_yield_a_boolean_condition():
    text = """module {
  func.func @main(%m: tensor<i64>, %y: tensor<2xf32>) -> (tensor<2xf32>) {
    %r = nn.loop(%m, %y) ({
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %y_in: tensor<2xf32>):
      nn.yield(%i, %y_in) : (tensor<i64>, tensor<2xf32>) -> ()
    }) {operand_segments = [1, 0, 1]} : (tensor<i64>, tensor<2xf32>) -> tensor<2xf32>
    func.return(%r) : (tensor<2xf32>) -> ()
  }
}
"""
    with pytest.raises(PirError, match="condition.* must be i1"):
        parse_module(text)


def test_body_values_do_not_escape_their_region():
    text = """module {
  func.func @main(%c: tensor<i1>, %x: tensor<2xf32>) -> (tensor<2xf32>) {
    %z = nn.if(%c) ({
      %t = nn.add(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      nn.yield(%t) : (tensor<2xf32>) -> ()
    }, {
      nn.yield(%x) : (tensor<2xf32>) -> ()
    }) : (tensor<i1>) -> tensor<2xf32>
    %w = nn.add(%t, %z) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return(%w) : (tensor<2xf32>) -> ()
  }
}
"""
    with pytest.raises(PirError, match="undefined value %t"):
        parse_module(text)


def test_scan8_with_sequence_lens_is_refused():
    node = helper.make_node("Scan", ["lens", "s0", "x"], ["s", "ys"], body=scan_body([4], [4]),
                            num_scan_inputs=1)
    feeds = {"lens": np.array([3, 3], np.int32), "s0": np.zeros((2, 4), np.float32),
             "x": np.zeros((2, 3, 4), np.float32)}
    with pytest.raises(PirError, match="sequence_lens is not supported"):
        import_model(model_of(node, feeds, ["s", "ys"], opset=8))


@pytest.mark.parametrize("num_scan_inputs,x2_shape,message", [
    (3, (3, 4), "num_scan_inputs is 3, but the op has 2 inputs"),
    (2, (5, 4), r"the scan inputs have different lengths \[3, 5\]"),
])
def test_scan_diagnostics(num_scan_inputs, x2_shape, message):
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["o"])], "body",
                             [vi("a", F32, [4]), vi("b", F32, [4])], [vi("o", F32, [4])])
    ins = ["x1", "x2"]
    node = helper.make_node("Scan", ins, ["ys"], body=body, num_scan_inputs=num_scan_inputs)
    feeds = {"x1": np.zeros((3, 4), np.float32), "x2": np.zeros(x2_shape, np.float32)}
    with pytest.raises(PirError, match=message):
        import_model(model_of(node, feeds, ["ys"], infer=False))


def _slanet_loop() -> onnx.ModelProto:
    """paddle2onnx's SLANet, reduced: a Loop whose body takes Shape of a Slice of a carried
    tensor, the Slice's length computed from the iteration count (a dim no input binds),
    and Expands a row to the carried tensor's own (body-argument) dim."""
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["one"], value=helper.make_tensor(
            "one", TensorProto.INT64, [1], [1])),
         helper.make_node("Constant", [], ["zero"], value=helper.make_tensor(
             "zero", TensorProto.INT64, [1], [0])),
         helper.make_node("Unsqueeze", ["i", "zero"], ["i1"]),
         helper.make_node("Add", ["i1", "one"], ["end"]),
         helper.make_node("Slice", ["s", "zero", "end", "zero"], ["part"]),
         helper.make_node("Shape", ["part"], ["part_shape"]),
         helper.make_node("Shape", ["s"], ["s_shape"]),
         helper.make_node("ReduceSum", ["part", "zero"], ["row"], keepdims=1),
         helper.make_node("Expand", ["row", "s_shape"], ["rows"]),
         helper.make_node("Add", ["s", "rows"], ["s_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["DynamicDimension.7", 3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", TensorProto.FLOAT, ["DynamicDimension.7", 3]),
         helper.make_tensor_value_info("part_shape", TensorProto.INT64, [2])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "x"], ["y", "shapes"], body=body)], "g",
        [helper.make_tensor_value_info("m", TensorProto.INT64, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("shapes", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


@pytest.mark.parametrize("pipeline", ["", "decompose,canonicalize,fold,cse,dce,shapes"])
def test_a_loop_body_sizes_its_argument_and_slice_dims(pipeline):
    """Its ops are sized by the carried tensor's dim (bound from the body's argument, for
    each run of the body) and by a Slice's run-time length (counted from the Slice once
    decompose has only its Shape left): SLANet's optimized program could not tell either."""
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline
    from pir.runtimes.reference import run_function
    import onnxruntime as ort

    model = _slanet_loop()
    module = import_model(model)
    if pipeline:
        PassManager(parse_pipeline(pipeline)).run(module)
        module = parse_module(print_module(module))
    feeds = {"m": np.array(4, np.int64),
             "x": np.arange(15, dtype=np.float32).reshape(5, 3) / 7}
    got = run_function(module, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip(["y", "shapes"], sess.run(None, feeds)))
    np.testing.assert_array_equal(got["shapes"], want["shapes"])
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)

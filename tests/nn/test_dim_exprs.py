"""Type rules give dim expressions where a result's sizes follow from its operands' (concat,
pad, slice, reshape, flatten, expand, tile, split, range, resize, space_to_depth ...), also
through shapes computed in the graph (Shape -> Gather -> Mul/Sub/Div -> Concat), and
``decompose`` then runs on them: each model is imported, its result types are checked as
printed, and the decomposed program is run at two sizes and compared with ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import op_names, run_ort
from onnx import TensorProto, helper

from pir.frontends.onnx.importer import import_model
from pir.ir.dimexpr import parse_dim_expr
from pir.ir.dialects.nn.symbolic import infer_dim, slice_dim, split_sizes
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.ir.types import DType, TensorType
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from pir.runtimes.reference import run_function

rng = np.random.default_rng(0)
I64 = np.int64
F32 = TensorProto.FLOAT
BIG = 2**63 - 1
node = helper.make_node


def model(nodes, inputs: dict[str, list], outputs: list[str], inits=None, opset: int = 21):
    """A float32 model of ``nodes`` whose inputs have the given (symbolic) dims."""
    g_in = [helper.make_tensor_value_info(k, F32, dims) for k, dims in inputs.items()]
    g_out = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    g_init = [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    m = helper.make_model(helper.make_graph(nodes, "dims", g_in, g_out, g_init),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return onnx.shape_inference.infer_shapes(m)


def result_types(module) -> dict[str, str]:
    """The printed type of every value the function returns, by output name."""
    fn = module.funcs[0]
    ret = fn.entry.ops[-1]
    names = fn.attributes["pir.output_names"] if "pir.output_names" in fn.attributes else None
    names = list(names) if names is not None else [v.name for v in ret.operands]
    return {n: str(v.type) for n, v in zip(names, ret.operands)}


def check(m, want: dict[str, str], sizes: list[dict[str, tuple]], atol: float = 1e-6,
          no_nn: bool = True):
    """Import ``m``, check its result types, run ``decompose`` (and cleanups), check that no
    nn op is left (unless ``no_nn`` is False) and that the reference runtime agrees with
    ONNX Runtime at each of ``sizes`` (input name -> shape)."""
    module = import_model(m)
    got = {k: v for k, v in result_types(module).items() if k in want}
    assert got == want
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(module)
    module = parse_module(print_module(module))
    if no_nn:
        left = [n for n in op_names(module) if n.startswith("nn.")]
        assert not left, f"nn ops left after decompose: {left}"
    assert {k: v for k, v in result_types(module).items() if k in want} == want
    for shapes in sizes:
        feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
        out = run_function(module, feeds)
        for name, ref in run_ort(m, feeds).items():
            assert out[name].shape == ref.shape, name
            np.testing.assert_allclose(out[name], ref, atol=atol, err_msg=name)
    return module


def t(*dims) -> str:
    return "tensor<" + "x".join(map(str, dims)) + "xf32>"


def d(text: str) -> str:
    """A dim expression as a tensor type prints it (canonical form, parenthesised)."""
    return str(TensorType(DType.F32, (parse_dim_expr(text),)))[7:-5]


# -- joining, padding, repeating ---------------------------------------------------------------


def test_concat_adds_the_axis_dims():
    m = model([node("Concat", ["x", "y"], ["c"], axis=1)], {"x": ["N", "H"], "y": ["N", "2*H"]},
              ["c"])
    check(m, {"c": "tensor<Nx(3*H)xf32>"}, [{"x": (2, 3), "y": (2, 6)}, {"x": (1, 5), "y": (1, 10)}])


def test_pad_by_constants():
    m = model([node("Pad", ["x", "p"], ["y"]), node("Pad", ["x", "q"], ["z"])],
              {"x": ["N", "H"]}, ["y", "z"],
              {"p": np.array([0, 1, 0, 1], I64), "q": np.array([1, 2, 0, -1], I64)})
    check(m, {"y": t("N", "(H + 2)"), "z": t("(N + 1)", "(H + 1)")},
          [{"x": (2, 3)}, {"x": (3, 6)}])


def test_tile_by_constant_repeats():
    m = model([node("Tile", ["x", "r"], ["y"])], {"x": ["N", "H"]}, ["y"],
              {"r": np.array([2, 3], I64)})
    check(m, {"y": t("(2*N)", "(3*H)")}, [{"x": (2, 3)}, {"x": (1, 4)}])


def test_expand_to_a_computed_shape():
    # y = expand(x[N, 1], [N, 2*H]) with the shape read from z's shape
    nodes = [node("Shape", ["z"], ["s"]), node("Mul", ["s", "two"], ["s2"]),
             node("Gather", ["s2", "one"], ["h2"]), node("Gather", ["s", "zero"], ["n"]),
             node("Concat", ["n", "h2"], ["shape"], axis=0),
             node("Expand", ["x", "shape"], ["y"])]
    m = model(nodes, {"x": ["N", 1], "z": ["N", "H"]}, ["y"],
              {"two": np.array([1, 2], I64), "one": np.array([1], I64),
               "zero": np.array([0], I64)})
    check(m, {"y": t("N", "(2*H)")}, [{"x": (2, 1), "z": (2, 3)}, {"x": (3, 1), "z": (3, 1)}])


# -- slices -------------------------------------------------------------------------------------


@pytest.mark.parametrize("start,end,step,dim", [
    (1, BIG, 1, "H - 1"),              # x[:, 1:]
    (-3, BIG, 1, "3"),                 # x[:, -3:]
    (0, -1, 1, "H - 1"),               # x[:, :-1]
    (0, 4, 1, "min(H, 4)"),            # x[:, :4]: H may be smaller
    (1, -1, 2, "(H - 2) ceildiv 2"),   # x[:, 1:-1:2]
    (0, BIG, 2, "H ceildiv 2"),        # x[:, ::2]
    (-1, -BIG, -1, "H"),               # x[:, ::-1]
    (-2, -BIG, -2, "(H - 1) ceildiv 2"),
])
def test_slice_of_a_symbolic_dim(start, end, step, dim):
    m = model([node("Slice", ["x", "s", "e", "a", "k"], ["y"])], {"x": ["N", "H"]}, ["y"],
              {"s": np.array([start], I64), "e": np.array([end], I64),
               "a": np.array([1], I64), "k": np.array([step], I64)})
    check(m, {"y": t("N", d(dim))}, [{"x": (2, 5)}, {"x": (3, 8)}] +
          ([{"x": (2, 3)}] if end == 4 else []))


def test_slice_to_a_computed_end():
    # x[:, :H - 1] with H read from the shape of x
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["h"]),
             node("Sub", ["h", "one"], ["e"]), node("Slice", ["x", "zero", "e", "one"], ["y"])]
    m = model(nodes, {"x": ["N", "H"]}, ["y"],
              {"one": np.array([1], I64), "zero": np.array([0], I64)})
    check(m, {"y": t("N", "(H - 1)")}, [{"x": (2, 4)}, {"x": (1, 7)}])


def test_slice_dim_rules():
    assert slice_dim("H", 1, BIG, 1) == parse_dim_expr("H - 1")
    assert slice_dim("H", 2, -1, 1) == parse_dim_expr("H - 3")
    assert slice_dim("H", 1, 4, 1) == parse_dim_expr("min(H - 1, 3)")
    assert slice_dim("H", 5, 2, 1) == 0
    assert slice_dim(512, 0, "S", 1) == "S"  # a computed end lies within the dim
    assert slice_dim("H", "S", BIG, 1) == parse_dim_expr("H - S")
    assert slice_dim("H", parse_dim_expr("0 - S"), BIG, 1) is None  # the sign is not known
    assert slice_dim(None, 0, 4, 1) is None


# -- reshapes -----------------------------------------------------------------------------------


def test_reshape_infers_minus_one_by_division():
    m = model([node("Reshape", ["y", "r"], ["a"]), node("Reshape", ["x", "q"], ["b"]),
               node("Flatten", ["z"], ["f"], axis=1), node("Flatten", ["z"], ["g"], axis=0)],
              {"x": ["N", "H", 4], "y": ["N", "2*H"], "z": ["N", "H", "W"]}, ["a", "b", "f", "g"],
              {"r": np.array([0, 2, -1], I64), "q": np.array([-1, 2], I64)})
    check(m, {"a": t("N", 2, "H"), "b": t("(2*H*N)", 2), "f": t("N", "(H*W)"),
              "g": t(1, "(H*N*W)")},
          [{"x": (2, 3, 4), "y": (2, 6), "z": (2, 3, 4)},
           {"x": (3, 2, 4), "y": (3, 4), "z": (3, 2, 5)}])


def test_reshape_to_a_shape_computed_with_arithmetic():
    # exporters compute (H - 1) // 2 + 1 from Shape; a constant_of_shape of that size
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["h"]),
             node("Sub", ["h", "one"], ["h1"]), node("Div", ["h1", "two"], ["h2"]),
             node("Add", ["h2", "one"], ["h3"]), node("Gather", ["s", "zero"], ["n"]),
             node("Concat", ["n", "h3"], ["shape"], axis=0),
             node("ConstantOfShape", ["shape"], ["c"],
                  value=helper.make_tensor("v", F32, [1], [1.5])),
             node("Size", ["x"], ["size"]), node("Unsqueeze", ["size", "zero"], ["flat"]),
             node("Reshape", ["x", "flat"], ["y"])]
    m = model(nodes, {"x": ["N", "H"]}, ["c", "y"],
              {"one": np.array([1], I64), "two": np.array([2], I64),
               "zero": np.array([0], I64)})
    check(m, {"c": t("N", "((H + 1) floordiv 2)"), "y": t("(H*N)")},
          [{"x": (2, 5)}, {"x": (3, 8)}])


def test_reshape_to_dims_flattened_by_reduce_prod():
    # tf2onnx's einsum: Reshape(x, [ReduceProd(Shape(x)[0:2]), -1, 16]); a sum and a max of
    # shape elements give sizes too
    nodes = [node("Shape", ["x"], ["s"], end=2), node("ReduceProd", ["s"], ["bs"], keepdims=1),
             node("Concat", ["bs", "minus1", "sixteen"], ["shape"], axis=0),
             node("Reshape", ["x", "shape"], ["y"]),
             node("ReduceSum", ["s"], ["sum"], keepdims=1),
             node("ConstantOfShape", ["sum"], ["c"],
                  value=helper.make_tensor("v", F32, [1], [2.0])),
             node("ReduceMax", ["s"], ["most"], keepdims=1),
             node("ConstantOfShape", ["most"], ["c2"],
                  value=helper.make_tensor("v", F32, [1], [3.0]))]
    m = model(nodes, {"x": ["B", "S", 2, 16]}, ["y", "c", "c2"],
              {"minus1": np.array([-1], I64), "sixteen": np.array([16], I64)})
    check(m, {"y": t("(B*S)", 2, 16), "c": t("(B + S)"), "c2": t("(max(B, S))")},
          [{"x": (2, 3, 2, 16)}, {"x": (4, 1, 2, 16)}])


def test_infer_dim_cancels_common_factors():
    hp1 = parse_dim_expr("H + 1")
    assert infer_dim(("B", hp1, 4), (hp1, 2)) == parse_dim_expr("2*B")
    assert infer_dim(("B", "S", 768), ("B", 12)) == parse_dim_expr("64*S")
    assert infer_dim(("B", "S"), ("B", 2)) == parse_dim_expr("S floordiv 2")
    assert infer_dim(("B", "S"), ("T",)) is None
    assert infer_dim(("B", None), (2,)) is None


# -- splits -------------------------------------------------------------------------------------


def test_split_in_equal_parts():
    m = model([node("Split", ["y"], ["a", "b"], axis=1, num_outputs=2),
               node("Split", ["x"], ["c", "d"], axis=1, num_outputs=2)],
              {"x": ["N", "H"], "y": ["N", "2*H"]}, ["a", "b", "c", "d"])
    check(m, {"a": t("N", "H"), "b": t("N", "H"), "c": t("N", "((H + 1) floordiv 2)"),
              "d": t("N", "(H floordiv 2)")},
          [{"x": (2, 3), "y": (2, 6)}, {"x": (1, 4), "y": (1, 8)}])


def test_split_by_sizes_computed_from_a_shape():
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["h"]),
             node("Concat", ["h", "h", "h"], ["sizes"], axis=0),
             node("Split", ["y", "sizes"], ["a", "b", "c"], axis=1)]
    m = model(nodes, {"x": ["N", "H"], "y": ["N", "3*H"]}, ["a", "b", "c"],
              {"one": np.array([1], I64)})
    check(m, {"a": t("N", "H"), "b": t("N", "H"), "c": t("N", "H")},
          [{"x": (2, 3), "y": (2, 9)}, {"x": (1, 2), "y": (1, 6)}])


def test_split_sizes_of_a_symbolic_dim():
    h = "H"
    assert split_sizes(parse_dim_expr("4*H"), None, 4) == [h] * 4
    assert split_sizes(h, None, 2) == [parse_dim_expr("H ceildiv 2"), parse_dim_expr("H floordiv 2")]
    assert split_sizes(h, [parse_dim_expr("H - 1"), 1], None) == [parse_dim_expr("H - 1"), 1]


# -- generated tensors, resizing, blocks --------------------------------------------------------


def test_range_from_shapes():
    nodes = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["h"]),
             node("Mul", ["h", "two"], ["h2"]), node("Range", ["zero", "h2", "one"], ["r"]),
             node("Range", ["one", "h", "two"], ["q"]),
             node("Cast", ["r"], ["a"], to=F32), node("Cast", ["q"], ["b"], to=F32)]
    m = model(nodes, {"x": ["N", "H"]}, ["a", "b"],
              {"one": np.array(1, I64), "two": np.array(2, I64), "zero": np.array(0, I64)})
    check(m, {"a": t("(2*H)"), "b": t("(H floordiv 2)")}, [{"x": (1, 3)}, {"x": (2, 6)}])


def test_resize_by_scales_and_computed_sizes():
    nodes = [node("Resize", ["x", "", "scales"], ["a"], mode="nearest"),
             node("Shape", ["x"], ["s"]), node("Mul", ["s", "twice"], ["s2"]),
             node("Resize", ["x", "", "", "s2"], ["b"], mode="nearest")]
    m = model(nodes, {"x": ["N", 3, "H", "W"]}, ["a", "b"],
              {"scales": np.array([1, 1, 2, 0.5], np.float32),
               "twice": np.array([1, 1, 2, 3], I64)})
    check(m, {"a": t("N", 3, "(2*H)", "(W floordiv 2)"), "b": t("N", 3, "(2*H)", "(3*W)")},
          [{"x": (1, 3, 2, 4)}, {"x": (2, 3, 3, 5)}], no_nn=False)


def test_space_to_depth_and_back():
    m = model([node("SpaceToDepth", ["x"], ["y"], blocksize=2),
               node("DepthToSpace", ["y"], ["z"], blocksize=2)],
              {"x": ["N", 3, "H", "W"]}, ["y", "z"], opset=13)
    check(m, {"y": t("N", 12, "(H floordiv 2)", "(W floordiv 2)"),
              "z": t("N", 3, "(2*(H floordiv 2))", "(2*(W floordiv 2))")},
          [{"x": (1, 3, 4, 6)}, {"x": (2, 3, 2, 8)}])


def test_pooling_then_flatten():
    m = model([node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
               node("Flatten", ["p"], ["y"])],
              {"x": ["N", 2, "H", "W"]}, ["y"])
    check(m, {"y": t("N", "(2*(H floordiv 2)*(W floordiv 2))")},
          [{"x": (1, 2, 4, 6)}, {"x": (2, 2, 5, 3)}], no_nn=False)


def test_upsample_by_integer_scales():
    m = model([node("Upsample", ["x", "s"], ["y"], mode="nearest")], {"x": ["N", 2, "H", "W"]},
              ["y"], {"s": np.array([1, 1, 2, 3], np.float32)}, opset=9)
    check(m, {"y": t("N", 2, "(2*H)", "(3*W)")}, [{"x": (1, 2, 2, 3)}, {"x": (2, 2, 3, 1)}],
          no_nn=False)

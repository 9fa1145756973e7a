"""Data movement (Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Concat, Split, Slice, Expand,
Tile, Pad, CenterCropPad, DepthToSpace, SpaceToDepth, ReverseSequence, Col2Im): import, round
trip, run and compare with ONNX Runtime; symbolic type rules and their diagnostics."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import check_model, node_model
from onnx import helper

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.dimexpr import parse_dim_expr
from pir.ir.dialects.func import FuncOp

rng = np.random.default_rng(0)
I64 = np.int64


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def op_of(module, name):
    fn = next(o for o in module.body.block.ops if isinstance(o, FuncOp))
    return next(o for o in fn.walk() if o.name == name)


def result_shape(module, name, index=0):
    return op_of(module, name).results[index].type.shape


def sym_model(nodes, inputs, outputs, inits=None, opset=21):
    """A model whose graph inputs may have symbolic dims: ``inputs`` maps a name to
    (numpy dtype, dims) with dims ints or strings."""
    g_in = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), dims)
            for k, (dt, dims) in inputs.items()]
    g_out = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outputs]
    g_init = [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(nodes, "sym", g_in, g_out, g_init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model


def inferred(module, name):
    """The type rule's own result for the op (not merged with ONNX's inference)."""
    return op_of(module, name).infer()[0].shape


# -- numerics against ONNX Runtime ------------------------------------------------------------


@pytest.mark.parametrize("shape,target,allowzero", [
    ((2, 3, 4), [4, 6], 0), ((2, 3, 4), [0, -1], 0), ((2, 3, 4), [-1], 0),
    ((2, 3, 4), [2, 0, 2, 2], 0), ((0, 3), [3, 0], 1), ((6,), [1, 2, 1, 3], 0)])
def test_reshape(shape, target, allowzero):
    x = randn(*shape)
    model = node_model("Reshape", {"x": x}, ["y"], initializers={"s": np.array(target, I64)},
                       allowzero=allowzero)
    module = check_model(model, {"x": x})
    want = np.empty(shape).reshape([shape[i] if d == 0 and not allowzero else d
                                    for i, d in enumerate(target)]).shape
    assert result_shape(module, "nn.reshape") == want


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1], [1, 0, 2]])
def test_transpose(perm):
    x = randn(2, 3, 4)
    kwargs = {} if perm is None else {"perm": perm}
    module = check_model(node_model("Transpose", {"x": x}, ["y"], **kwargs), {"x": x})
    assert result_shape(module, "nn.transpose") == np.transpose(x, perm).shape


@pytest.mark.parametrize("opset", [11, 21])
@pytest.mark.parametrize("axes", [None, [1], [1, -1]])
def test_squeeze(opset, axes):
    x = randn(2, 1, 3, 1)
    if axes is None:
        model = node_model("Squeeze", {"x": x}, ["y"], opset=opset)
    elif opset < 13:
        model = node_model("Squeeze", {"x": x}, ["y"], opset=opset, axes=axes)
    else:
        model = node_model("Squeeze", {"x": x}, ["y"], opset=opset,
                           initializers={"a": np.array(axes, I64)})
    module = check_model(model, {"x": x})
    assert result_shape(module, "nn.squeeze") == np.squeeze(x, None if axes is None
                                                            else tuple(axes)).shape


@pytest.mark.parametrize("opset", [11, 21])
@pytest.mark.parametrize("axes,want", [([0], (1, 2, 3)), ([1, -1], (2, 1, 3, 1)),
                                       ([3, 0], (1, 2, 3, 1))])
def test_unsqueeze(opset, axes, want):
    x = randn(2, 3)
    if opset < 13:
        model = node_model("Unsqueeze", {"x": x}, ["y"], opset=opset, axes=axes)
    else:
        model = node_model("Unsqueeze", {"x": x}, ["y"], opset=opset,
                           initializers={"a": np.array(axes, I64)})
    module = check_model(model, {"x": x})
    assert result_shape(module, "nn.unsqueeze") == want


@pytest.mark.parametrize("axis,want", [(0, (1, 24)), (1, (2, 12)), (3, (24, 1)), (-1, (6, 4))])
def test_flatten(axis, want):
    x = randn(2, 3, 4)
    module = check_model(node_model("Flatten", {"x": x}, ["y"], axis=axis), {"x": x})
    assert result_shape(module, "nn.flatten") == want


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    a, b, c = randn(2, 3, 4), randn(2, 3, 4), randn(2, 3, 4)
    module = check_model(node_model("Concat", {"a": a, "b": b, "c": c}, ["y"], axis=axis),
                         {"a": a, "b": b, "c": c})
    assert result_shape(module, "nn.concat") == np.concatenate([a, b, c], axis).shape


@pytest.mark.parametrize("opset,split,num_outputs,n", [
    (11, [2, 4], None, 2), (13, [1, 2, 3], None, 3), (13, None, None, 3), (18, None, 4, 4),
    (18, [0, 6], None, 2)])
def test_split(opset, split, num_outputs, n):
    x = randn(3, 6)
    outs = [f"y{i}" for i in range(n)]
    kwargs = {"axis": 1}
    inits = {}
    if split is not None and opset < 13:
        kwargs["split"] = split
    elif split is not None:
        inits["s"] = np.array(split, I64)
    if num_outputs:
        kwargs["num_outputs"] = num_outputs
    model = node_model("Split", {"x": x}, outs, opset=opset, initializers=inits, **kwargs)
    module = check_model(model, {"x": x})
    sizes = [r.type.shape[1] for r in op_of(module, "nn.split").results]
    assert sizes == (split or ([2, 2, 2] if n == 3 else [2, 2, 2, 0]))


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([0, 1], [2, 3], None, None), ([1], [100], [1], None), ([-1], [-100], [0], [-1]),
    ([0, 3], [5, 0], [2, 1], [2, -1]), ([10], [20], [0], None)])
def test_slice(starts, ends, axes, steps):
    x = randn(4, 5, 6)
    inits = {"s": np.array(starts, I64), "e": np.array(ends, I64)}
    if axes is not None:
        inits["a"] = np.array(axes, I64)
    if steps is not None:
        inits["t"] = np.array(steps, I64)
    module = check_model(node_model("Slice", {"x": x}, ["y"], initializers=inits), {"x": x})
    index = [slice(None)] * 3
    for k, a in enumerate(axes or range(len(starts))):
        index[a] = slice(starts[k], ends[k], (steps or [1] * len(starts))[k])
    assert result_shape(module, "nn.slice") == x[tuple(index)].shape


def test_slice_opset9_attributes():
    x = randn(4, 5)
    model = node_model("Slice", {"x": x}, ["y"], opset=9, starts=[1, 0], ends=[3, -1], axes=[0, 1])
    module = check_model(model, {"x": x})
    assert result_shape(module, "nn.slice") == (2, 4)


@pytest.mark.parametrize("shape,target", [((3, 1), [2, 3, 4]), ((1, 4), [3, 1]), ((2,), [2])])
def test_expand(shape, target):
    x = randn(*shape)
    model = node_model("Expand", {"x": x}, ["y"], initializers={"s": np.array(target, I64)})
    module = check_model(model, {"x": x})
    assert result_shape(module, "nn.expand") == np.broadcast_shapes(shape, tuple(target))


@pytest.mark.parametrize("reps", [[1, 1], [2, 3], [3, 0]])
def test_tile(reps):
    x = randn(2, 3)
    model = node_model("Tile", {"x": x}, ["y"], initializers={"r": np.array(reps, I64)})
    module = check_model(model, {"x": x})
    assert result_shape(module, "nn.tile") == np.tile(x, reps).shape


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads,axes", [([1, 2, 2, 1], None), ([0, 1, 0, 2], [0, -1]),
                                       ([2, 0], [1])])
def test_pad(mode, pads, axes):
    x = randn(3, 4)
    inits = {"p": np.array(pads, I64), "v": np.array(1.5, np.float32)}
    if axes is not None:
        inits["a"] = np.array(axes, I64)
    model = node_model("Pad", {"x": x}, ["y"], initializers=inits, mode=mode)
    check_model(model, {"x": x})


def test_pad_negative_pads_crop():
    x = randn(4, 5)
    model = node_model("Pad", {"x": x}, ["y"], initializers={"p": np.array([-1, 1, 2, -2], I64)})
    module = check_model(model, {"x": x})
    assert result_shape(module, "nn.pad") == (5, 4)


def test_pad_opset2_attributes():
    x = randn(2, 3)
    model = node_model("Pad", {"x": x}, ["y"], opset=10, pads=[0, 1, 1, 0], value=2.0)
    module = check_model(model, {"x": x})
    assert result_shape(module, "nn.pad") == (3, 4)


@pytest.mark.parametrize("target,axes", [([2, 3], [0, 1]), ([6, 7], [0, 1]), ([1, 9], None),
                                         ([3], [-1])])
def test_center_crop_pad(target, axes):
    x = randn(4, 5)
    want = {(2, 3): x[1:3, 1:4]}.get(tuple(target))
    kwargs = {} if axes is None else {"axes": axes}
    model = node_model("CenterCropPad", {"x": x}, ["y"], opset=18,
                       initializers={"s": np.array(target, I64)}, **kwargs)
    module = import_model(model)
    from pir.runtimes.reference import run_function

    got = run_function(module, {"x": x})["y"]
    full = list(target) if axes is None or len(axes) == 2 else [4, target[0]]
    assert got.shape == tuple(full)
    if want is not None:
        np.testing.assert_array_equal(got, want)
    if tuple(target) == (6, 7):  # padding puts the input in the middle
        np.testing.assert_array_equal(got[1:5, 1:6], x)
        assert got.sum() == pytest.approx(x.sum(), rel=1e-5)


# ONNX Runtime has no CRD mode for SpaceToDepth (new in opset 28): the round trip covers it.
@pytest.mark.parametrize("op_type,mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"),
                                          ("SpaceToDepth", "DCR")])
def test_depth_space(op_type, mode):
    x = randn(2, 8, 4, 6)
    kwargs = {"mode": mode} if op_type == "DepthToSpace" else {}
    model = node_model(op_type, {"x": x}, ["y"], blocksize=2, **kwargs)
    module = check_model(model, {"x": x})
    want = (2, 2, 8, 12) if op_type == "DepthToSpace" else (2, 32, 2, 3)
    assert result_shape(module, "nn." + ("depth_to_space" if op_type == "DepthToSpace"
                                         else "space_to_depth")) == want


def test_depth_space_round_trip_in_crd():
    x = randn(1, 8, 2, 2)
    nodes = [helper.make_node("DepthToSpace", ["x"], ["t"], blocksize=2, mode="CRD"),
             helper.make_node("SpaceToDepth", ["t"], ["y"], blocksize=2, mode="CRD")]
    module = import_model(sym_model(nodes, {"x": (np.float32, [1, 8, 2, 2])}, ["y"], opset=28))
    from pir.runtimes.reference import run_function

    np.testing.assert_array_equal(run_function(module, {"x": x})["y"], x)


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis, time_axis):
    x = randn(4, 4, 2)
    lens = np.array([4, 1, 0, 2], I64)
    model = node_model("ReverseSequence", {"x": x, "lens": lens}, ["y"],
                       batch_axis=batch_axis, time_axis=time_axis)
    check_model(model, {"x": x, "lens": lens})


@pytest.mark.parametrize("image,block,kwargs", [
    ([5, 5], [2, 2], {}), ([5, 5], [2, 2], {"strides": [2, 2], "pads": [1, 1, 0, 0]}),
    ([6, 4], [3, 2], {"dilations": [2, 1]}), ([4, 4], [1, 1], {})])
def test_col2im(image, block, kwargs):
    strides = kwargs.get("strides", [1, 1])
    pads = kwargs.get("pads", [0, 0, 0, 0])
    dil = kwargs.get("dilations", [1, 1])
    cols = [(image[i] + pads[i] + pads[i + 2] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
            for i in range(2)]
    x = randn(2, 3 * block[0] * block[1], cols[0] * cols[1])
    model = node_model("Col2Im", {"x": x}, ["y"], opset=18,
                       initializers={"i": np.array(image, I64), "b": np.array(block, I64)},
                       **kwargs)
    module = check_model(model, {"x": x}, rtol=1e-5, atol=1e-5)
    assert result_shape(module, "nn.col2im") == (2, 3, *image)


# -- symbolic dims ---------------------------------------------------------------------------


def test_layout_ops_keep_symbols():
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Unsqueeze", ["t", "ax"], ["u"]),
             helper.make_node("Squeeze", ["u", "ax"], ["s"]),
             helper.make_node("Concat", ["s", "s"], ["c"], axis=2),
             helper.make_node("Flatten", ["c"], ["f"], axis=2),
             helper.make_node("Pad", ["f", "pads"], ["p"])]
    model = sym_model(nodes, {"x": (np.float32, ["B", "S", 8])}, ["p"],
                      inits={"ax": np.array([0], I64), "pads": np.array([0, 1, 0, 1], I64)})
    module = import_model(model)
    assert inferred(module, "nn.transpose") == ("S", "B", 8)
    assert inferred(module, "nn.unsqueeze") == (1, "S", "B", 8)
    assert inferred(module, "nn.squeeze") == ("S", "B", 8)
    assert inferred(module, "nn.concat") == ("S", "B", 16)
    assert inferred(module, "nn.flatten") == (parse_dim_expr("B*S"), 16)  # a product
    rows = result_shape(module, "nn.flatten")[0]  # the expression, kept by pad
    assert inferred(module, "nn.pad") == (rows, 18)


@pytest.mark.parametrize("target,want,run", [
    ([0, 0, 2, 4], ("B", "S", 2, 4), (2, 3, 2, 4)), ([0, -1, 8], ("B", "S", 8), (2, 3, 8)),
    ([-1, 4], (parse_dim_expr("2*B*S"), 4), (12, 4)), ([0, 0, -1], ("B", "S", 8), (2, 3, 8))])
def test_reshape_keeps_symbols(target, want, run):
    model = sym_model([helper.make_node("Reshape", ["x", "s"], ["y"])],
                      {"x": (np.float32, ["B", "S", 8])}, ["y"],
                      inits={"s": np.array(target, I64)})
    module = import_model(model)
    assert inferred(module, "nn.reshape") == want
    from pir.runtimes.reference import run_function

    assert run_function(module, {"x": randn(2, 3, 8)})["y"].shape == run


def test_shape_arithmetic_keeps_symbols_through_reshape_and_expand():
    """Exported transformers compute target shapes: Shape -> Gather -> Unsqueeze -> Concat."""
    nodes = [helper.make_node("Shape", ["x"], ["shp"]),
             helper.make_node("Gather", ["shp", "i0"], ["b"], axis=0),
             helper.make_node("Gather", ["shp", "i1"], ["s"], axis=0),
             helper.make_node("Unsqueeze", ["b", "ax"], ["b1"]),
             helper.make_node("Unsqueeze", ["s", "ax"], ["s1"]),
             helper.make_node("Concat", ["b1", "s1", "heads", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"]),
             helper.make_node("Concat", ["b1", "one", "s1", "s1"], ["mask_shape"], axis=0),
             helper.make_node("Expand", ["m", "mask_shape"], ["mask"]),
             helper.make_node("Slice", ["x", "zero", "s1", "one"], ["sl"])]
    inits = {"i0": np.array(0, I64), "i1": np.array(1, I64), "ax": np.array([0], I64),
             "heads": np.array([2], I64), "minus1": np.array([-1], I64),
             "one": np.array([1], I64), "zero": np.array([0], I64)}
    model = sym_model(nodes, {"x": (np.float32, ["B", "S", 8]), "m": (np.bool_, [1, 1, 1, "S"])},
                      ["y", "mask", "sl"], inits=inits)
    module = import_model(model)
    assert inferred(module, "nn.reshape") == ("B", "S", 2, 4)
    assert inferred(module, "nn.expand") == ("B", 1, "S", "S")
    assert inferred(module, "nn.slice") == ("B", "S", 8)
    from pir.runtimes.reference import run_function

    x, m = randn(3, 5, 8), np.ones((1, 1, 1, 5), bool)
    out = run_function(module, {"x": x, "m": m})
    assert out["y"].shape == (3, 5, 2, 4) and out["mask"].shape == (3, 1, 5, 5)


# -- diagnostics -----------------------------------------------------------------------------


def test_reshape_to_wrong_element_count_is_an_error():
    x = randn(2, 3)
    model = node_model("Reshape", {"x": x}, ["y"], initializers={"s": np.array([4, 2], I64)})
    with pytest.raises(PirError,
                       match=r"cannot reshape tensor<2x3xf32> \(6 elements\) to \[4, 2\]"):
        import_model(model)


def test_reshape_with_two_inferred_dims_is_an_error():
    x = randn(2, 3)
    model = node_model("Reshape", {"x": x}, ["y"], initializers={"s": np.array([-1, -1], I64)})
    with pytest.raises(PirError, match="more than one -1"):
        import_model(model)


def test_transpose_with_a_bad_perm_is_an_error():
    x = randn(2, 3)
    model = node_model("Transpose", {"x": x}, ["y"], perm=[0, 0])
    with pytest.raises(PirError, match=r"perm \[0, 0\] is not a permutation"):
        import_model(model)


def test_concat_of_different_ranks_is_an_error():
    a, b = randn(2, 3), randn(2, 3, 1)
    model = node_model("Concat", {"a": a, "b": b}, ["y"], axis=0)
    with pytest.raises(PirError, match="inputs have different ranks"):
        import_model(model)


def test_squeeze_of_a_dim_that_is_not_one_is_an_error():
    x = randn(2, 3)
    model = node_model("Squeeze", {"x": x}, ["y"], initializers={"a": np.array([1], I64)})
    with pytest.raises(PirError, match="cannot squeeze axis 1 of tensor<2x3xf32>"):
        import_model(model)


def test_split_sizes_must_add_up():
    x = randn(6)
    model = node_model("Split", {"x": x}, ["a", "b"], initializers={"s": np.array([2, 3], I64)})
    with pytest.raises(PirError, match=r"split \[2, 3\] does not add up to the dim 6"):
        import_model(model)


def test_unknown_pad_mode_is_an_error_in_text():
    x = randn(2, 3)
    module = import_model(node_model("Pad", {"x": x}, ["y"],
                                     initializers={"p": np.array([1, 1, 1, 1], I64)}))
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module

    text = print_module(module).replace("{operand_segments", '{mode = "mirror", operand_segments')
    with pytest.raises(PirError, match="mode 'mirror' is not one of constant, reflect, edge, wrap"):
        parse_module(text)


def test_declared_type_that_contradicts_the_rule_is_an_error():
    x = randn(2, 3)
    module = import_model(node_model("Transpose", {"x": x}, ["y"]))
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module

    text = print_module(module).replace("tensor<3x2xf32>", "tensor<2x3xf32>")
    with pytest.raises(PirError, match="declared tensor<2x3xf32>, but the type rule infers "
                                       "tensor<3x2xf32>"):
        parse_module(text)

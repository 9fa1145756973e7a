"""The data-movement decompositions (reshape, transpose, squeeze/unsqueeze/flatten, concat,
split, slice, expand, tile, pad, center_crop_pad, depth_to_space/space_to_depth, col2im)
preserve values, and so do the shape computations of real models.

Each case builds a one-node ONNX model (symbolic dims where the op allows), imports it, runs
``decompose`` and checks that the reference runtime gives the same outputs before and after
on random inputs of several shapes, and that no nn op is left.
"""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import pytest
from helpers import check_pipeline, node_model, op_names
from onnx import helper

from pir.frontends.onnx.importer import import_model

I64 = np.int64
BIG = np.iinfo(np.int64).max
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ints(*values):
    return np.array(values, dtype=I64)


def nn_ops(module) -> list[str]:
    return [n for n in op_names(module) if n.startswith("nn.")]


def decomposed(op_type, feeds, shapes=None, initializers=None, outputs=("out",), opset=21,
               **attrs):
    """Check decompose on a one-node model for each feed dict (the first gives the model's
    input shapes, unless ``shapes`` declares symbolic ones); assert no nn op is left."""
    model = node_model(op_type, feeds[0], list(outputs), shapes=shapes,
                       initializers=initializers, opset=opset, **attrs)
    module = import_model(model)
    for f in feeds:
        optimized = check_pipeline(module, f, "decompose")
    assert not nn_ops(optimized), f"{op_type}: nn ops left: {nn_ops(optimized)}"
    return optimized


# -- reshapes ------------------------------------------------------------------------------------

RESHAPES = [  # (input shape, symbolic shape, target)
    ((2, 3, 4), None, ints(0, -1)),
    ((2, 3, 4), None, ints(-1)),
    ((2, 3, 4), None, ints(4, 0, -1)),
    ((2, 3, 4), ["B", 3, 4], ints(0, 12)),
    ((2, 3, 4), ["B", 3, 4], ints(0, -1)),
    ((2, 3, 4), ["B", 3, 4], ints(-1, 4)),  # the result is ?x4: the runtime sizes the ?
    ((2, 3, 4), ["B", "S", 4], ints(0, 0, 2, 2)),
]


@pytest.mark.parametrize("shape,sym,target", RESHAPES)
def test_reshape(shape, sym, target):
    feeds = [{"x": randn(*shape)}]
    if sym:
        feeds.append({"x": randn(5, *shape[1:])})
    out = decomposed("Reshape", feeds, shapes={"x": sym} if sym else None,
                     initializers={"shape": target})
    assert "prim.reshape" in op_names(out)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis):
    decomposed("Flatten", [{"x": randn(2, 3, 4)}, {"x": randn(6, 3, 4)}],
               shapes={"x": ["B", 3, 4]}, axis=axis)


@pytest.mark.parametrize("axes", [ints(0, -2), ints(2), None])
def test_squeeze(axes):
    inits = {"axes": axes} if axes is not None else None
    decomposed("Squeeze", [{"x": randn(1, 3, 1, 4)}], initializers=inits)


def test_squeeze_symbolic():
    decomposed("Squeeze", [{"x": randn(2, 1, 4)}, {"x": randn(7, 1, 4)}],
               shapes={"x": ["B", 1, 4]}, initializers={"axes": ints(1)})


@pytest.mark.parametrize("axes", [ints(0), ints(0, -1), ints(1, 3)])
def test_unsqueeze(axes):
    decomposed("Unsqueeze", [{"x": randn(2, 3)}, {"x": randn(5, 3)}], shapes={"x": ["B", 3]},
               initializers={"axes": axes})


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1], [0, 1, 2]])
def test_transpose(perm):
    """(An identity transpose gives the output a same-type reshape to carry its name.)"""
    attrs = {"perm": perm} if perm is not None else {}
    decomposed("Transpose", [{"x": randn(2, 3, 4)}, {"x": randn(5, 3, 4)}],
               shapes={"x": ["B", 3, 4]}, **attrs)


# -- joining and splitting -----------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for s in shapes:
        s[axis] = {0: 1, 1: 2, -1: 3}[axis] + len(s)  # different sizes along the axis
    feeds = {f"x{i}": randn(*s) for i, s in enumerate(shapes)}
    decomposed("Concat", [feeds], axis=axis)


def test_concat_symbolic():
    feeds = [{"a": randn(2, 3), "b": randn(2, 1)}, {"a": randn(6, 3), "b": randn(6, 1)}]
    decomposed("Concat", feeds, shapes={"a": ["B", 3], "b": ["B", 1]}, axis=-1)


def test_split_sizes():
    out = decomposed("Split", [{"x": randn(2, 3, 4)}, {"x": randn(5, 3, 4)}],
                     shapes={"x": ["B", 3, 4]}, initializers={"split": ints(1, 2)},
                     outputs=("a", "b"), axis=1)
    assert op_names(out).count("prim.slice") == 2


def test_split_num_outputs():
    # 5 into 2 pieces: ceil(5/2) = 3, then 2
    decomposed("Split", [{"x": randn(5, 4)}], outputs=("a", "b"), num_outputs=2, axis=0)


# -- slices --------------------------------------------------------------------------------------

SLICES = [  # (starts, ends, axes, steps) on a 5x6x7 input
    ([1, -1], [4, 100], [0, 2], [1, 2]),
    ([-1], [-BIG], [1], [-1]),  # reversed
    ([4, 5], [0, 1], [0, 2], [-2, -3]),
    ([0, 2], [BIG, 3], [-1, 0], None),
    ([10], [20], [1], None),  # empty
    ([1, 1, 1], [4, 5, 6], None, None),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICES)
def test_slice(starts, ends, axes, steps):
    inits = {"starts": ints(*starts), "ends": ints(*ends)}
    if axes is not None:
        inits["axes"] = ints(*axes)
    if steps is not None:
        inits["steps"] = ints(*steps)
    decomposed("Slice", [{"x": randn(5, 6, 7)}], initializers=inits)


def test_slice_symbolic_dims_kept_whole():
    inits = {"starts": ints(0, 1), "ends": ints(BIG, 3), "axes": ints(0, 1)}
    decomposed("Slice", [{"x": randn(2, 4)}, {"x": randn(7, 4)}], shapes={"x": ["B", 4]},
               initializers=inits)


def graph_model(nodes, inputs, outputs, inits=None, opset=21):
    """A model of several nodes; ``inputs`` maps names to (dtype, shape), ``outputs`` names
    to a declared shape or None.  Other types are left to pir's type rules."""
    def info(name, t, shape):
        return helper.make_tensor_value_info(name, t, shape)

    g_inputs = [info(k, helper.np_dtype_to_tensor_dtype(np.dtype(t)), s)
                for k, (t, s) in inputs.items()]
    g_outputs = [info(k, onnx.TensorProto.FLOAT if s else onnx.TensorProto.UNDEFINED, s)
                 for k, s in outputs.items()]
    g_inits = [onnx.numpy_helper.from_array(v, k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(nodes, "g", g_inputs, g_outputs, g_inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _half_slices():
    """x[..., :d/2] and x[..., d/2:] with d/2 computed from Shape (rotary embeddings)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], start=-1),
        helper.make_node("Div", ["s", "two"], ["half"]),
        helper.make_node("Slice", ["x", "zero", "half", "last"], ["lo"]),
        helper.make_node("Slice", ["x", "half", "big", "last"], ["hi"]),
    ]
    inits = {"two": ints(2), "zero": ints(0), "last": ints(-1), "big": ints(BIG)}
    return graph_model(nodes, {"x": (np.float32, ["B", 3, 8])}, {"lo": None, "hi": None}, inits)


def _window_slices():
    """table[:S] and table[2:S+2] with S the length of another input (position embeddings);
    the model declares their length S, as exporters that write value_info do."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["s"], start=1, end=2),
        helper.make_node("Slice", ["table", "zero", "s", "zero"], ["rows"]),
        helper.make_node("Add", ["s", "two"], ["end"]),
        helper.make_node("Slice", ["table", "two", "end", "zero"], ["later"]),
    ]
    inits = {"table": randn(16, 4), "zero": ints(0), "two": ints(2)}
    return graph_model(nodes, {"ids": (np.int64, ["B", "S"])},
                       {"rows": ["S", 4], "later": ["S", 4]}, inits)


@pytest.mark.parametrize("build,feeds", [
    (_half_slices, [{"x": randn(2, 3, 8)}, {"x": randn(4, 3, 8)}]),
    (_window_slices, [{"ids": np.zeros((2, 5), I64)}, {"ids": np.zeros((1, 3), I64)}]),
], ids=["half", "window"])
def test_slice_bounds_computed_from_shapes(build, feeds):
    """Bounds computed at run time: the result type tells the window (the producers of the
    bounds are prim ops by the time the slice is decomposed)."""
    module = import_model(build())
    for f in feeds:
        out = check_pipeline(module, f, "decompose")
    assert not nn_ops(out)


# -- broadcasting and repetition -----------------------------------------------------------------


@pytest.mark.parametrize("shape,target", [((3, 1), ints(2, 3, 4)), ((2, 3), ints(3, 1, 1)),
                                          ((1,), ints(4)), ((2, 1), ints(1, 5)),
                                          ((2, 3), ints(1))])
def test_expand(shape, target):
    decomposed("Expand", [{"x": randn(*shape)}], initializers={"shape": target})


def test_expand_symbolic():
    decomposed("Expand", [{"x": randn(2, 1, 4)}, {"x": randn(5, 1, 4)}],
               shapes={"x": ["B", 1, 4]}, initializers={"shape": ints(1, 3, 1)})


@pytest.mark.parametrize("shape,sym,reps", [
    ((2, 3), None, ints(2, 3)), ((1, 3), None, ints(4, 1)), ((2, 1, 3), None, ints(1, 2, 2)),
    ((2, 3), ["B", 3], ints(1, 2)),
])
def test_tile(shape, sym, reps):
    feeds = [{"x": randn(*shape)}]
    if sym:
        feeds.append({"x": randn(6, *shape[1:])})
    decomposed("Tile", feeds, shapes={"x": sym} if sym else None, initializers={"repeats": reps})


# -- padding and cropping ------------------------------------------------------------------------

PADS = [  # (mode, pads, axes)
    ("constant", [1, 0, 2, 0, 2, 1], None),
    ("constant", [-1, 2, 1, -2], [0, -1]),
    ("reflect", [2, 1, 0, 1, 2, 3], None),
    ("edge", [3, 0, -1, 1, 0, 4], None),
    ("wrap", [1, 4, 2, 3], [1, 2]),
    ("reflect", [-1, 1], [-1]),
]


@pytest.mark.parametrize("mode,pads,axes", PADS)
def test_pad(mode, pads, axes):
    inits = {"pads": ints(*pads), "value": np.array(1.5, np.float32)}  # used in constant mode
    if axes is not None:
        inits["axes"] = ints(*axes)
    decomposed("Pad", [{"x": randn(3, 4, 5)}], initializers=inits, mode=mode)


def test_pad_symbolic_dim_unpadded():
    decomposed("Pad", [{"x": randn(2, 4)}, {"x": randn(5, 4)}], shapes={"x": ["B", 4]},
               initializers={"pads": ints(0, 1, 0, 2)})


@pytest.mark.parametrize("target,axes", [([3, 8], [0, 2]), ([6, 2, 7], None), ([4], [-2])])
def test_center_crop_pad(target, axes):
    attrs = {"axes": axes} if axes is not None else {}
    decomposed("CenterCropPad", [{"x": randn(5, 6, 7)}], initializers={"shape": ints(*target)},
               opset=18, **attrs)


# -- blocks --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    decomposed("DepthToSpace", [{"x": randn(1, 8, 2, 3)}, {"x": randn(3, 8, 2, 3)}],
               shapes={"x": ["N", 8, 2, 3]}, blocksize=2, mode=mode)


def test_space_to_depth():
    decomposed("SpaceToDepth", [{"x": randn(1, 3, 4, 6)}, {"x": randn(2, 3, 4, 6)}],
               shapes={"x": ["N", 3, 4, 6]}, blocksize=2)


@pytest.mark.parametrize("image,block,attrs", [
    ([5, 5], [1, 5], {}),
    ([5, 5], [2, 2], {"strides": [2, 2]}),
    ([5, 5], [2, 2], {"pads": [0, 1, 0, 1]}),
    ([5, 5], [2, 2], {"dilations": [2, 2]}),
    ([6], [3], {"strides": [2], "pads": [1, 2]}),
])
def test_col2im(image, block, attrs):
    nd = len(image)
    strides, dil = attrs.get("strides", [1] * nd), attrs.get("dilations", [1] * nd)
    pads = attrs.get("pads", [0] * 2 * nd)
    cols = [(image[i] + pads[i] + pads[nd + i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
            for i in range(nd)]
    x = randn(2, 3 * int(np.prod(block)), int(np.prod(cols)))
    decomposed("Col2Im", [{"x": x}], initializers={"image": ints(*image), "block": ints(*block)},
               opset=18, **attrs)


# -- real models -----------------------------------------------------------------------------------

MODELS = pathlib.Path(__file__).parents[1] / "models"
THIS_FAMILY = ("reshape,flatten,squeeze,unsqueeze,transpose,concat,split,slice,expand,tile,pad,"
               "gather,shape,size,constant_of_shape,range")


@pytest.mark.parametrize("name,left", [("gpt2", []), ("llama", []), ("t5", []), ("whisper", []),
                                       ("bert", [])])
def test_model_shape_arithmetic(name, left):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains on symbolic dims decompose
    with the same results.  bert's ``position_ids[:, :seq]`` of 64 is ``min(seq, 64)`` long,
    which the input's ``seq`` sizes: a gather at ``iota(min(seq, 64))``."""
    module = import_model(str(MODELS / f"{name}.onnx"))
    feeds = dict(np.load(MODELS / f"{name}.inputs.npz"))
    out = check_pipeline(module, feeds, f"decompose{{ops={THIS_FAMILY}}}")
    family = set(f"nn.{n}" for n in THIS_FAMILY.split(","))
    assert sorted(set(nn_ops(out)) & family) == left

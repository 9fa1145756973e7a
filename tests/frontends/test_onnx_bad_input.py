"""Bad ONNX input: every malformed model is one clear `pir: error:` line naming the file and
the node (or the graph input, initializer, tensor) that is wrong, exit status 1, no output
file, never a traceback or an "internal error".

Each bad model is built here with onnx.helper, so the test says what is wrong with it; the
reproducers of the robustness audit (fuzz-onnx/*, ext/*) are covered by the same causes.
Strings that are not UTF-8 cannot be set through protobuf's Python API: those models are
serialized with a placeholder that is then replaced by the raw bytes (same length).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import check_model, cli
from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.types import DType, TensorType

F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs=(), outputs=(), inits=(), opset=17, value_info=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", list(inputs), list(outputs), list(inits),
                              value_info=list(value_info))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def relu_model(**kw) -> onnx.ModelProto:
    """x [2, 3] -> Relu -> y, plus what the caller adds."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2, 3])], [vi("y", [2, 3])], **kw)


def empty_huge_model() -> onnx.ModelProto:
    """Also z = Relu(W), W an empty f32 [2**32, 0] initializer: a legal tensor."""
    m = relu_model(inits=[raw_tensor("W", [2**32, 0])])
    m.graph.node.append(helper.make_node("Relu", ["W"], ["z"], name="relu_w"))
    m.graph.output.append(vi("z", None))
    return m


def raw_tensor(name, dims, data=b"", elem=F) -> onnx.TensorProto:
    """A tensor with exactly these dims and raw bytes (helper.make_tensor would check them)."""
    t = onnx.TensorProto(name=name, data_type=elem, raw_data=data)
    t.dims.extend(dims)
    return t


def with_bytes(m: onnx.ModelProto, marker: str, raw: bytes) -> bytes:
    """``m`` serialized, with the string ``marker`` replaced by ``raw`` (as long)."""
    assert len(marker.encode()) == len(raw)
    data = m.SerializeToString()
    assert data.count(marker.encode()) == 1
    return data.replace(marker.encode(), raw)


def if_model(then_nodes, else_nodes, then_out="t", else_out="e", **kw) -> onnx.ModelProto:
    """y = If(c) of two one-output branches over the outer x [3]."""
    branches = {
        "then_branch": helper.make_graph(then_nodes, "then", [], [vi(then_out, [3])]),
        "else_branch": helper.make_graph(else_nodes, "else", [], [vi(else_out, [3])]),
    }
    node = helper.make_node("If", ["c"], ["y"], name="if", **branches)
    return model([node], [vi("c", [], TensorProto.BOOL), vi("x", [3])], [vi("y", [3])], **kw)


def ext_model(**info) -> onnx.ModelProto:
    """y = x + W, W [2, 3] f32 with external data ``info`` (location, offset, length)."""
    w = raw_tensor("W", [2, 3])
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in info.items():
        w.external_data.add(key=key, value=value)
    return model([helper.make_node("Add", ["x", "W"], ["y"], name="add")],
                 [vi("x", [2, 3])], [vi("y", [2, 3])], [w])


# -- the bad models, each with the key part of its message ----------------------------------

def _cases():
    node = helper.make_node
    yield "ssa-two-nodes-define-y", model(
        [node("Relu", ["x"], ["y"], name="n1"), node("Neg", ["x"], ["y"], name="n2")],
        [vi("x", [2])], [vi("y", [2])]), \
        "ONNX node 'n2' (Neg): output 'y' is already defined by ONNX node 'n1' (Relu)"
    yield "ssa-output-named-like-graph-input", model(
        [node("Relu", ["x"], ["x"], name="n1")], [vi("x", [2])], [vi("x", [2])]), \
        "ONNX node 'n1' (Relu): output 'x' is already defined by graph input 'x'"
    yield "ssa-output-named-like-initializer", model(
        [node("Relu", ["w"], ["w"], name="n1")], [], [vi("w", [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "w")]), \
        "ONNX node 'n1' (Relu): output 'w' is already defined by initializer 'w'"
    yield "ssa-subgraph-output-named-like-outer-value", if_model(
        [node("Relu", ["x"], ["x"], name="r")], [node("Neg", ["x"], ["e"], name="n")],
        then_out="x"), \
        "ONNX node 'r' (Relu) in subgraph 'then_branch' of ONNX node 'if' (If): output 'x' " \
        "is already defined by graph input 'x'"
    yield "ssa-graph-input-twice", model(
        [node("Add", ["x", "x"], ["y"], name="add")], [vi("x", [2]), vi("x", [2])],
        [vi("y", [2])]), "graph input 'x' is declared twice"
    yield "ssa-initializer-twice", relu_model(
        inits=[numpy_helper.from_array(np.ones(2, np.float32), "w")] * 2), \
        "initializer 'w' is defined twice"
    yield "graph-output-without-name", model(
        [node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2])], [vi("", [2])]), \
        "graph output 0 has no name"

    # dims: negative, int64 overflow, more than 64, in tensors and declared types
    yield "initializer-negative-dim", model(
        [node("Add", ["x", "W"], ["y"], name="add")], [vi("x", [2, 3])], [vi("y", [2, 3])],
        [raw_tensor("W", [-1, 3], bytes(12))]), "tensor 'W': dim -1 is negative"
    yield "initializer-dims-overflow", relu_model(inits=[raw_tensor("W", [2**40, 2**40])]), \
        "tensor 'W': shape [1099511627776, 1099511627776] has 1208925819614629174706176 " \
        "elements, more than int64 can count"
    yield "initializer-timeout-dims", relu_model(inits=[raw_tensor("W", [2**32, 1, -1, 3])]), \
        "tensor 'W': dim -1 is negative"
    yield "initializer-rank-65", relu_model(inits=[raw_tensor("W", [1] * 65, bytes(4))]), \
        "tensor 'W' has 65 dims, more than the 64 a tensor may have"
    yield "constant-tensor-negative-dim", model(
        [node("Constant", [], ["y"], name="c", value=raw_tensor("v", [-2], bytes(8)))],
        [], [vi("y", None)]), "ONNX node 'c' (Constant): attribute 'value': dim -2 is negative"
    yield "graph-input-dims-overflow", model(
        [node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2**62, 2**62])], [vi("y", None)]), \
        "graph input 'x': shape [4611686018427387904, 4611686018427387904] has"
    yield "graph-output-static-dims-overflow", model(
        [node("Relu", ["x"], ["y"], name="relu")], [vi("x", ["N", 4])],
        [vi("y", ["N", 2**62, 4])]), \
        "graph output 'y': shape [?, 4611686018427387904, 4] has 18446744073709551616 elements"
    yield "graph-input-bytes-overflow", model(
        [node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2**62])], [vi("y", None)]), \
        "graph input 'x': shape [4611686018427387904] takes 18446744073709551616 bytes"
    yield "graph-input-rank-100", model(
        [node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1] * 100)], [vi("y", None)]), \
        "graph input 'x' has 100 dims, more than the 64 a tensor may have"
    yield "shape-operand-longer-than-any-rank", model(
        [node("ConstantOfShape", ["s"], ["y"], name="cos")], [vi("s", [100], TensorProto.INT64)],
        [vi("y", None)]), \
        "ONNX node 'cos' (ConstantOfShape): cannot infer the type of its outputs: the shape has " \
        "100 elements, but a tensor has at most 64 dims"
    yield "einsum-equation-not-an-equation", model(
        [node("Einsum", ["x", "x"], ["y"], name="e", equation="ij@ \n,jk")],
        [vi("x", [2, 2])], [vi("y", None)]), \
        "ONNX node 'e' (Einsum): equation 'ij@ \\n,jk' is not an einsum equation"
    yield "result-of-more-than-int64-bytes", model(
        [node("Expand", ["x", "s"], ["y"], name="ex")], [vi("x", [1], TensorProto.DOUBLE)],
        [vi("y", None)], [numpy_helper.from_array(np.array([2**61, 2], np.int64), "s")]), \
        "ONNX node 'ex' (Expand): result 0: shape [2305843009213693952, 2] takes " \
        "36893488147419103232 bytes, more than int64 can count"
    yield "size-of-more-than-int64-elements", model(
        [node("Expand", ["x", "s"], ["e"], name="expand"), node("Size", ["e"], ["n"], name="size")],
        [vi("x", [2**31, 2**31], TensorProto.UINT8)], [vi("n", None)],
        [numpy_helper.from_array(np.array([4, 2**31, 2**31], np.int64), "s")]), \
        "ONNX node 'expand' (Expand): result 0: shape " \
        "[4, 2147483648, 2147483648] has 18446744073709551616 elements"  # (before the Size)

    # required inputs, outputs and attributes
    yield "pad-without-pads", model(
        [node("Pad", ["x"], ["y"], name="pad")], [vi("x", [2])], [vi("y", None)], opset=18), \
        "ONNX node 'pad' (Pad): required input 1 'pads' is missing"
    yield "pad-7-without-pads", model(
        [node("Pad", ["x"], ["y"], name="pad")], [vi("x", [2])], [vi("y", None)], opset=7), \
        "ONNX node 'pad' (Pad): missing required attribute 'pads'"
    yield "upsample-7-without-scales", model(
        [node("Upsample", ["x"], ["y"], name="up")], [vi("x", [1, 1, 2, 2])], [vi("y", None)],
        opset=7), "ONNX node 'up' (Upsample): missing required attribute 'scales'"
    yield "shape-of-empty-name", model(
        [node("Shape", [""], ["y"], name="shape")], [], [vi("y", None)]), \
        "ONNX node 'shape' (Shape): required input 0 'data' is missing"
    yield "concat-of-nothing", model(
        [node("Concat", [""], ["y"], name="cat", axis=0)], [], [vi("y", None)]), \
        "ONNX node 'cat' (Concat): required input 0 'inputs' is missing (Concat-13 takes at " \
        "least 1)"
    yield "einsum-with-an-empty-input", model(
        [node("Einsum", ["a", ""], ["y"], name="es", equation="i,i->")], [vi("a", [2])],
        [vi("y", None)]), \
        "ONNX node 'es' (Einsum): operand 'inputs' of nn.einsum has an empty input name"
    yield "loop-with-a-hole-in-its-carried-values", model(
        [node("Loop", ["m", "", "", "x"], ["y"], name="loop", body=helper.make_graph(
            [node("Identity", ["v"], ["v_out"], name="id"),
             node("Identity", ["cond"], ["cond_out"], name="cid")], "body",
            [vi("i", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL), vi("v", [2])],
            [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [2])]))],
        [vi("m", [], TensorProto.INT64), vi("x", [2])], [vi("y", None)]), \
        "ONNX node 'loop' (Loop): input 2 (of 'v_initial') is empty"
    yield "relu-without-output", model(
        [node("Relu", ["x"], [], name="relu")], [vi("x", [2])], []), \
        "ONNX node 'relu' (Relu): has 0 outputs, Relu-14 has 1"
    yield "scan-without-num-scan-inputs", model(
        [node("Scan", ["x"], ["y"], name="scan", body=helper.make_graph(
            [node("Identity", ["a"], ["b"], name="id")], "body", [vi("a", [3])],
            [vi("b", [3])]))], [vi("x", [2, 3])], [vi("y", None)]), \
        "ONNX node 'scan' (Scan): missing required attribute 'num_scan_inputs'"
    yield "bit-shift-without-direction", model(
        [node("BitShift", ["a", "b"], ["y"], name="shift")],
        [vi("a", [2], TensorProto.UINT8), vi("b", [2], TensorProto.UINT8)], [vi("y", None)]), \
        "ONNX node 'shift' (BitShift): missing required attribute 'direction'"

    # attributes of the wrong type, or without a value
    bad_if = if_model([helper.make_node("Relu", ["x"], ["t"], name="r")],
                      [helper.make_node("Neg", ["x"], ["e"], name="n")])
    bad_if.graph.node[0].attribute[1].type = onnx.AttributeProto.TYPE_PROTO  # then_branch
    yield "graph-attribute-typed-type-proto", bad_if, \
        "ONNX node 'if' (If): attribute 'then_branch' has type TYPE_PROTO, If-16 defines it as " \
        "GRAPH"
    untyped = relu_model()
    untyped.graph.node[0].op_type = "Softmax"
    untyped.graph.node[0].attribute.add(name="axis", i=1)  # no type
    yield "attribute-without-type", untyped, \
        "ONNX node 'relu' (Softmax): attribute 'axis' has type UNDEFINED, Softmax-13 defines it " \
        "as INT"
    stray = relu_model()
    stray.graph.node[0].op_type = "Softmax"
    stray.graph.node[0].attribute.add(name="axis", type=onnx.AttributeProto.INT, i=1,
                                      g=helper.make_graph([], "g", [], []))
    yield "int-attribute-holding-a-graph", stray, \
        "ONNX node 'relu' (Softmax): attribute 'axis' of type INT holds a value in field 'g'"
    empty_if = if_model([helper.make_node("Relu", ["x"], ["t"], name="r")],
                        [helper.make_node("Neg", ["x"], ["e"], name="n")])
    empty_if.graph.node[0].attribute[0].ClearField("g")  # else_branch: typed GRAPH, no graph
    yield "graph-attribute-without-graph", empty_if, \
        "ONNX node 'if' (If): attribute 'else_branch' of type GRAPH has no value"

    # opsets
    yield "opset-0", relu_model(opset=0), \
        "the model imports opset 0 of ONNX: opset versions start at 1"
    yield "op-newer-than-the-opset", model(
        [node("Resize", ["x", "", "s"], ["y"], name="resize")], [vi("x", [1, 1, 2, 2])],
        [vi("y", None)], [numpy_helper.from_array(np.ones(4, np.float32), "s")], opset=9), \
        "Resize 'resize': ONNX defines Resize from opset 10, the model imports opset 9"
    yield "resize-10-scales-not-1d", model(
        [node("Resize", ["x", "s"], ["y"], name="resize")], [vi("x", [1, 1, 2, 2])],
        [vi("y", None)], [numpy_helper.from_array(np.ones((2, 2), np.float32), "s")], opset=10), \
        "ONNX node 'resize' (Resize): scales must be a 1-d tensor of numbers, got shape [2, 2]"

    # external data
    yield "ext-offset-garbage", ext_model(location="w.bin", offset="abc"), \
        "tensor 'W': external data offset 'abc' is not a non-negative integer"
    yield "ext-offset-negative", ext_model(location="w.bin", offset="-4"), \
        "tensor 'W': external data offset '-4' is not a non-negative integer"
    yield "ext-length-garbage", ext_model(location="w.bin", length="24.0"), \
        "tensor 'W': external data length '24.0' is not a non-negative integer"
    yield "ext-length-wrong", ext_model(location="w.bin", length="8"), \
        "tensor 'W': external data length 8 does not match the 24 bytes of its [2, 3] f32 data"
    yield "ext-nul-in-location", ext_model(location="w.bin\0x"), \
        "tensor 'W': external data location 'w.bin\\x00x' contains a NUL character"
    yield "ext-absolute-location", ext_model(location="/etc/passwd"), \
        "tensor 'W': external data path '/etc/passwd' escapes the model's folder; refused"
    yield "ext-dotdot-location", ext_model(location="../w.bin"), \
        "tensor 'W': external data path '../w.bin' escapes the model's folder; refused"
    yield "ext-symlink-out-of-the-folder", ext_model(location="link.bin"), \
        "tensor 'W': external data path 'link.bin' escapes the model's folder; refused"
    yield "ext-directory", ext_model(location="sub"), \
        "tensor 'W': external data 'sub' is not a regular file"
    yield "ext-fifo", ext_model(location="fifo.bin"), \
        "tensor 'W': external data 'fifo.bin' is not a regular file"
    yield "ext-file-too-short", ext_model(location="w.bin", offset="20"), \
        "tensor 'W': external data 'w.bin' holds 8 bytes from offset 20, 24 expected"
    yield "ext-no-location", ext_model(offset="0"), \
        "tensor 'W': has external data without a location"
    huge = ext_model(location="w.bin")
    del huge.graph.initializer[0].dims[:]
    huge.graph.initializer[0].dims.extend([2**40, 2**40])
    yield "ext-dims-overflow", huge, \
        "tensor 'W': shape [1099511627776, 1099511627776] has 1208925819614629174706176 elements"

    # strings that are not UTF-8 (protobuf hands them over as bytes)
    m = relu_model()
    m.graph.node[0].op_type = "Rel@"
    yield "op-type-not-utf8", with_bytes(m, "Rel@", b"Rel\xff"), \
        "ONNX node 'relu': field 'op_type' is not valid UTF-8 (b'Rel\\xff')"
    m = relu_model()
    m.graph.node[0].name = "@@"
    yield "node-name-not-utf8", with_bytes(m, "@@", b"\xff\xff"), \
        "ONNX node #0: field 'name' is not valid UTF-8 (b'\\xff\\xff')"
    m = relu_model()
    m.graph.node[0].domain = "ai.onnx@@"
    yield "domain-not-utf8", with_bytes(m, "ai.onnx@@", b"ai\xff\xff\xff\xff\xff\xff\x08"), \
        "ONNX node 'relu' (Relu): field 'domain' is not valid UTF-8"
    m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", ["B@", 3])],
              [vi("y", None)])
    yield "dim-param-not-utf8", with_bytes(m, "B@", b"B\xe9"), \
        "graph input 'x': field 'dim_param' is not valid UTF-8 (b'B\\xe9')"
    m = relu_model()
    m.graph.input.append(vi("u@", [2]))  # unused: only the graph input has the name
    yield "graph-input-name-not-utf8", with_bytes(m, "u@", b"u\xd9"), \
        "graph input #1: field 'name' is not valid UTF-8 (b'u\\xd9')"
    m = relu_model()
    m.graph.node[0].attribute.add(name="@@", type=onnx.AttributeProto.INT, i=1)
    yield "attribute-name-not-utf8", with_bytes(m, "@@", b"a\x8d"), \
        "ONNX node 'relu' (Relu): attribute #0: field 'name' is not valid UTF-8"
    m = relu_model()
    m.graph.name = "g@"
    yield "graph-name-not-utf8", with_bytes(m, "g@", b"g\x8c"), \
        "the graph: field 'name' is not valid UTF-8"
    m = model([helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="tan@")],
              [vi("x", [2])], [vi("y", None)], opset=20)
    yield "attribute-string-not-utf8", with_bytes(m, "tan@", b"tan\xff"), \
        "ONNX node 'gelu' (Gelu): attribute 'approximate' is not valid UTF-8"
    m = relu_model()
    m.graph.node[0].attribute.add(name="a\nb", type=onnx.AttributeProto.INT, i=1)
    yield "unknown-attribute-with-a-newline", m, \
        "Relu 'relu' has attributes ONNX does not define for Relu-14: a\\nb"
    yield "node-name-with-a-newline", model([helper.make_node("Pad", ["x"], ["y"], name="a\nb")],
                                            [vi("x", [2])], [vi("y", None)], opset=18), \
        "ONNX node 'a\\nb' (Pad): required input 1 'pads' is missing"


CASES = list(_cases())


@pytest.fixture
def work(tmp_path):
    """A model folder with w.bin (28 bytes), a folder, a FIFO, and a symlink to a file
    outside."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").write_bytes(np.arange(7, dtype=np.float32).tobytes())
    (folder / "sub").mkdir()
    (tmp_path / "secret.bin").write_bytes(bytes(24))
    os.symlink(tmp_path / "secret.bin", folder / "link.bin")
    os.mkfifo(folder / "fifo.bin")  # reading it would wait for a writer forever
    return folder


@pytest.mark.parametrize("name, m, message", CASES, ids=[c[0] for c in CASES])
def test_a_bad_model_is_one_clear_error(work, name, m, message):
    path = work / f"{name}.onnx"
    path.write_bytes(m if isinstance(m, bytes) else m.SerializeToString())
    out = work / "out.pir"
    code, _, err = cli("import", path, "-o", out)
    assert code == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"pir: error: {path}: "), err
    assert message in lines[0], err
    assert not out.exists()


# -- onnx.checker agrees on SSA and dims; valid subgraphs still import ------------------------

@pytest.mark.parametrize("name", ["ssa-two-nodes-define-y", "ssa-output-named-like-graph-input",
                                  "ssa-output-named-like-initializer",
                                  "ssa-subgraph-output-named-like-outer-value",
                                  "ssa-graph-input-twice", "initializer-negative-dim",
                                  "initializer-timeout-dims"])
def test_onnx_checker_rejects_them_too(name):
    m = next(c[1] for c in CASES if c[0] == name)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)
    with pytest.raises(PirError):
        import_model(m)


def _valid_if() -> onnx.ModelProto:
    """Both branches read the outer x; each has an inner value named like the If's own output
    'y', and the two branches use the same inner name: all legal (a subgraph sees the outer
    names defined before its node, and each branch is a scope of its own)."""
    node = helper.make_node
    return if_model([node("Relu", ["x"], ["y"], name="r"), node("Neg", ["y"], ["t"], name="n1")],
                    [node("Neg", ["x"], ["y"], name="n"), node("Abs", ["y"], ["e"], name="a")])


def _valid_loop() -> onnx.ModelProto:
    """A Loop whose body reads the outer w, and whose body input is named like an outer
    value x (a subgraph's inputs may shadow outer names)."""
    node = helper.make_node
    body = helper.make_graph(
        [node("Add", ["x", "w"], ["x_out"], name="add"),
         node("Identity", ["cond"], ["cond_out"], name="cid")], "body",
        [vi("i", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL), vi("x", [3])],
        [vi("cond_out", [], TensorProto.BOOL), vi("x_out", [3])])
    return model([node("Loop", ["m", "", "x"], ["y"], name="loop", body=body)],
                 [vi("m", [], TensorProto.INT64), vi("x", [3])], [vi("y", [3])],
                 [numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")])


@pytest.mark.parametrize("make", [_valid_if, _valid_loop])
def test_subgraphs_reading_outer_names_still_import(make):
    m = make()
    onnx.checker.check_model(m, full_check=True)
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    feeds = {"c": np.array(True), "x": x} if make is _valid_if else \
        {"m": np.array(3, np.int64), "x": x}
    check_model(m, feeds)
    if make is _valid_if:
        check_model(m, dict(feeds, c=np.array(False)))


def test_an_empty_initializer_with_a_huge_dim_is_a_legal_tensor():
    module = import_model(empty_huge_model())
    types = [r.type for op in module.walk() for r in op.results]
    assert TensorType(DType.F32, (2**32, 0)) in types


def test_importing_an_empty_tensor_with_a_huge_dim_ends_quickly(tmp_path):
    """The printer used to walk its 2**32 empty rows (hours, and memory without bound)."""
    onnx.save(empty_huge_model(), tmp_path / "e.onnx")
    pir = os.path.join(os.path.dirname(sys.executable), "pir")
    r = subprocess.run([pir, "import", str(tmp_path / "e.onnx"), "-o", str(tmp_path / "e.pir")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "tensor<4294967296x0xf32>" in (tmp_path / "e.pir").read_text()


def test_a_negative_dim_of_a_declared_type_is_an_unknown_dim():
    # exporters write a dynamic dim as -1: a graph input's or value_info's -1 is unknown,
    # not an error (only a tensor's own dims must be non-negative, as onnx.checker says)
    m = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [-1, 3])],
              [vi("y", None)])
    module = import_model(m)
    (arg,) = module.funcs[0].args
    assert arg.type.shape[1] == 3 and not isinstance(arg.type.shape[0], int)

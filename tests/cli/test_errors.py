"""Bad input gets one clear line with its location, exit status 1, and no output file."""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import cli  # noqa: E402


def add_model() -> onnx.ModelProto:
    node = helper.make_node("Add", ["x", "y"], ["z"], name="/add")
    graph = helper.make_graph(
        [node], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["B", 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])



pir = cli


def error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert lines and lines[0].startswith("pir: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture
def work(tmp_path):
    os.chdir(tmp_path)
    return tmp_path


def test_truncated_onnx(work):
    data = add_model().SerializeToString()
    (work / "t.onnx").write_bytes(data[: len(data) // 2])
    code, _, err = pir("import", "t.onnx", "-o", "t.pir")
    assert code == 1
    assert error_line(err).startswith("pir: error: t.onnx: not a valid ONNX model")
    assert not (work / "t.pir").exists()


def test_not_onnx_at_all(work):
    (work / "notes.onnx").write_text("these are not the weights you are looking for\n")
    code, _, err = pir("import", "notes.onnx", "-o", "n.pir")
    assert code == 1
    assert "notes.onnx: not" in error_line(err)
    assert not (work / "n.pir").exists()


def test_missing_file(work):
    code, _, err = pir("import", "nope.onnx", "-o", "n.pir")
    assert code == 1
    assert error_line(err) == "pir: error: nope.onnx: cannot read model: No such file or directory"


def test_unknown_ops_are_all_listed_in_one_error(work):
    m = add_model()
    m.graph.node.append(helper.make_node("FrobnicateA", ["z"], ["a"], name="/f1"))
    m.graph.node.append(helper.make_node("FrobnicateA", ["a"], ["b"], name="/f2"))
    m.graph.node.append(helper.make_node("Wobble", ["b"], ["c"], name="/w", domain="com.example"))
    m.opset_import.append(helper.make_opsetid("com.example", 3))
    onnx.save(m, work / "u.onnx")
    code, _, err = pir("import", "u.onnx", "-o", "u.pir")
    assert code == 1
    assert error_line(err) == (
        "pir: error: u.onnx: unsupported ONNX ops: FrobnicateA (opset 17; 2 nodes: '/f1', '/f2'); "
        "com.example::Wobble (opset 3; 1 node: '/w')")
    assert not (work / "u.pir").exists()


def test_external_data_outside_the_model_folder_is_refused(work):
    (work / "model").mkdir()
    (work / "secret.bin").write_bytes(np.ones(64, np.float32).tobytes())
    m = add_model()
    w = numpy_helper.from_array(np.ones(64, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="../secret.bin")
    m.graph.initializer.append(w)
    m.graph.node.append(helper.make_node("Identity", ["w"], ["w_out"]))
    m.graph.output.append(helper.make_tensor_value_info("w_out", TensorProto.FLOAT, [64]))
    with open(work / "model" / "m.onnx", "wb") as f:
        f.write(m.SerializeToString())
    code, _, err = pir("import", "model/m.onnx", "-o", "m.pir")
    assert code == 1
    assert error_line(err) == ("pir: error: model/m.onnx: tensor 'w': external data path "
                               "'../secret.bin' escapes the model's folder; refused")
    assert not (work / "m.pir").exists()


def test_external_data_inside_the_folder_is_read(work):
    m = add_model()
    arr = np.arange(64, dtype=np.float32)
    m.graph.initializer.append(numpy_helper.from_array(arr, "w"))
    m.graph.node.append(helper.make_node("Identity", ["w"], ["w_out"]))
    m.graph.output.append(helper.make_tensor_value_info("w_out", TensorProto.FLOAT, [64]))
    onnx.save(m, work / "e.onnx", save_as_external_data=True, location="e.weights",
              size_threshold=0)
    assert (work / "e.weights").exists()
    code, _, err = pir("import", "e.onnx", "-o", "e.pir")
    assert code == 0, err
    np.save(work / "x.npy", np.zeros((2, 3), np.float32))
    np.save(work / "y.npy", np.zeros(3, np.float32))
    code, out, err = pir("run", "e.pir", "--input", "x=x.npy", "--input", "y=y.npy", "-o", "o.npz")
    assert code == 0, err
    np.testing.assert_array_equal(np.load(work / "o.npz")["w_out"], arr)


GOOD_PIR = """module {
  func.func @main(%x: tensor<Bx3xf32>, %y: tensor<3xf32>) -> (tensor<Bx3xf32>) {
    %z = nn.add(%x, %y) : (tensor<Bx3xf32>, tensor<3xf32>) -> tensor<Bx3xf32> loc("/add")
    func.return(%z) : (tensor<Bx3xf32>) -> ()
  }
}
"""


@pytest.mark.parametrize("old,new,message", [
    ("nn.add", "nn.ad", "bad.pir:3:10: unknown op 'nn.ad'"),
    ("-> tensor<Bx3xf32> loc", "-> tensor<Bx3xi32> loc",
     "bad.pir:4:23: operand 0 of func.return is %z of type tensor<Bx3xi32>, "
     "but the op's type says tensor<Bx3xf32>"),
    ([("Bx3", "2x3"), ("-> tensor<2x3xf32> loc", "-> tensor<4x3xf32> loc"),
      ("func.return(%z) : (tensor<2x3xf32>)", "func.return(%z) : (tensor<4x3xf32>)"),
      ("-> (tensor<2x3xf32>)", "-> (tensor<4x3xf32>)")], None,
     'bad.pir:3:10: nn.add "/add": result 0 is declared tensor<4x3xf32>, but the type rule '
     "infers tensor<2x3xf32>"),
    ("nn.add(%x, %y)", "nn.add(%x, %w)", "bad.pir:3:21: undefined value %w"),
    ("func.return(%z)", "func.return(%q)", "bad.pir:4:17: undefined value %q"),
])
def test_malformed_pir(work, old, new, message):
    text = GOOD_PIR
    for a, b in (old if new is None else [(old, new)]):
        text = text.replace(a, b)
    (work / "bad.pir").write_text(text)
    code, _, err = pir("verify", "bad.pir", "-o", "out.pir")
    assert code == 1
    assert error_line(err) == f"pir: error: {message}"
    assert not (work / "out.pir").exists()


def test_use_before_definition(work):
    text = GOOD_PIR.replace(
        '    %z = nn.add(%x, %y) : (tensor<Bx3xf32>, tensor<3xf32>) -> tensor<Bx3xf32> loc("/add")\n',
        '    %w = nn.add(%z, %y) : (tensor<Bx3xf32>, tensor<3xf32>) -> tensor<Bx3xf32>\n'
        '    %z = nn.add(%x, %y) : (tensor<Bx3xf32>, tensor<3xf32>) -> tensor<Bx3xf32> loc("/add")\n')
    (work / "bad.pir").write_text(text)
    code, _, err = pir("verify", "bad.pir")
    assert code == 1
    assert error_line(err) == "pir: error: bad.pir:3:17: value %z is used before it is defined"


def test_broken_resource(work):
    onnx.save(mlp_with_weight(), work / "w.onnx")
    assert pir("import", "w.onnx", "-o", "w.pir")[0] == 0
    text = (work / "w.pir").read_text()
    i = text.index('base64"') + 20
    (work / "w.pir").write_text(text[:i] + ("A" if text[i] != "A" else "B") + text[i + 1:])
    np.save(work / "x.npy", np.ones((5, 4), np.float32))
    code, _, err = pir("run", "w.pir", "--input", "x=x.npy", "-o", "o.npz")
    assert code == 1
    assert error_line(err).startswith('pir: error: w.pir:')
    assert not (work / "o.npz").exists()
    assert 'resource "w": sha256 mismatch, the data is damaged' in err


def mlp_with_weight() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(20, dtype=np.float32).reshape(5, 4) / 3, "w")
    node = helper.make_node("Add", ["x", "w"], ["z"], name="/add")
    graph = helper.make_graph(
        [node], "w", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [5, 4])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def add_pir(work):
    (work / "a.pir").write_text(GOOD_PIR)
    np.save(work / "x.npy", np.ones((2, 3), np.float32))
    np.save(work / "y.npy", np.ones(3, np.float32))
    return work


def test_run_ok_writes_outputs(add_pir):
    code, _, err = pir("run", "a.pir", "--input", "x=x.npy", "--input", "y=y.npy", "-o", "o.npz")
    assert code == 0, err
    np.testing.assert_array_equal(np.load(add_pir / "o.npz")["z"], np.full((2, 3), 2, np.float32))


def test_run_missing_input(add_pir):
    code, _, err = pir("run", "a.pir", "--input", "x=x.npy", "-o", "o.npz")
    assert code == 1
    assert error_line(err) == "pir: error: missing input y"
    assert not (add_pir / "o.npz").exists()


def test_run_unknown_input(add_pir):
    code, _, err = pir("run", "a.pir", "--input", "x=x.npy", "--input", "y=y.npy",
                       "--input", "q=y.npy", "-o", "o.npz")
    assert code == 1
    assert error_line(err) == "pir: error: unknown input q; @main takes x, y"


def test_run_wrong_shape(add_pir):
    np.save(add_pir / "y4.npy", np.ones(4, np.float32))
    code, _, err = pir("run", "a.pir", "--input", "x=x.npy", "--input", "y=y4.npy", "-o", "o.npz")
    assert code == 1
    assert error_line(err) == ("pir: error: input 'y' has shape [4], expected tensor<3xf32> "
                               "(dim 0 must be 3)")
    assert not (add_pir / "o.npz").exists()


def test_run_wrong_dtype(add_pir):
    np.save(add_pir / "yi.npy", np.ones(3, np.int64))
    code, _, err = pir("run", "a.pir", "--input", "x=x.npy", "--input", "y=yi.npy")
    assert code == 1
    assert error_line(err) == "pir: error: input 'y' has element type i64, expected f32"


def test_symbolic_dims_must_agree(add_pir):
    (add_pir / "b.pir").write_text(GOOD_PIR.replace("%y: tensor<3xf32>", "%y: tensor<Bx3xf32>")
                                   .replace("(tensor<Bx3xf32>, tensor<3xf32>)",
                                            "(tensor<Bx3xf32>, tensor<Bx3xf32>)"))
    np.save(add_pir / "y5.npy", np.ones((5, 3), np.float32))
    code, _, err = pir("run", "b.pir", "--input", "x=x.npy", "--input", "y=y5.npy")
    assert code == 1
    assert error_line(err) == "pir: error: input 'y' has shape [5, 3]: dim 0 is B, which is already 2"


def test_debug_shows_the_traceback(work):
    code, _, err = pir("--debug", "import", "nope.onnx", "-o", "n.pir")
    assert code == 1
    assert "Traceback" in err

"""More bad input, each a located one-line error (found in a review of the error paths)."""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from pir.errors import PirError
from pir.ir.parser import parse_module
from pir.passes.pipeline import parse_pipeline
from pir.passes.manager import PassManager
from helpers import cli  # noqa: E402



pir = cli


FN = """  func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>) {
    func.return(%x) : (tensor<2xf32>) -> ()
  }
"""


def parse_error(text: str) -> str:
    with pytest.raises(PirError) as info:
        parse_module(text, "t.pir")
    return str(info.value).splitlines()[0]


def test_a_function_defined_twice():
    assert parse_error("module {\n" + FN + FN + "}\n") == \
        "t.pir:1:1: builtin.module: function @main is defined twice"


def test_a_call_to_an_unknown_function():
    text = FN.replace("    func.return(%x)", "    %y = func.call(%x) {callee = @nope} : "
                      "(tensor<2xf32>) -> tensor<2xf32>\n    func.return(%x)")
    assert parse_error("module {\n" + text + "}\n") == \
        "t.pir:3:10: func.call: calls @nope, which the module does not define"


def test_a_recursive_call_is_an_error_not_a_crash():
    text = FN.replace("    func.return(%x)", "    %y = func.call(%x) {callee = @main} : "
                      "(tensor<2xf32>) -> tensor<2xf32>\n    func.return(%x)")
    from pir.runtimes.reference import run_function

    with pytest.raises(PirError, match="calls nest deeper than 64 .at @main.: is a function "
                                       "calling itself"):
        run_function(parse_module("module {\n" + text + "}\n"), {"x": np.ones(2, np.float32)})


@pytest.mark.parametrize("dense,message", [
    ("dense<[1, 3.7]> : tensor<2xi32>", "bad dense attribute: 3.7 is not a whole number, as "
                                         "i32 elements must be"),
    ("dense<[(1, [2]), 1]> : tensor<2xi32>", "a complex element is (real, imaginary), two "
                                              "numbers"),
])
def test_bad_dense_elements(dense, message):
    text = FN.replace("    func.return(%x)", f"    %c = builtin.constant() {{value = {dense}}} "
                      ": () -> tensor<2xi32>\n    func.return(%x)")
    assert parse_error("module {\n" + text + "}\n").endswith(message)


def test_an_attribute_onnx_does_not_define_is_refused(tmp_path):
    node = helper.make_node("ReduceSum", ["x"], ["y"], name="/sum", axes=[1])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
              tmp_path / "m.onnx")
    code, _, err = pir("import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.pir"))
    assert code == 1
    assert err.strip() == (f"pir: error: {tmp_path / 'm.onnx'}: the model does not follow the "
                           "ONNX spec: ReduceSum '/sum' has attributes ONNX does not define for "
                           "ReduceSum-13: axes")
    assert not (tmp_path / "m.pir").exists()


def test_writing_onto_a_directory_is_an_error_that_leaves_nothing_behind(tmp_path):
    (tmp_path / "a.pir").write_text("module {\n" + FN + "}\n")
    (tmp_path / "out").mkdir()
    code, _, err = pir("verify", str(tmp_path / "a.pir"), "-o", str(tmp_path / "out"))
    assert code == 1
    assert err == f"pir: error: {tmp_path / 'out'}: is a directory\n"
    assert set(os.listdir(tmp_path)) == {"a.pir", "out"}  # no temporary file left behind


def test_decompose_names_only_real_ops():
    with pytest.raises(PirError, match="decompose: ops= names no nn op: softmaks"):
        parse_pipeline("decompose{ops=softmaks}")


def test_print_ir_names_a_pass_of_the_pipeline():
    with pytest.raises(PirError, match="--print-ir-after: no pass named cse in the pipeline "
                                       r"\(dce\)"):
        PassManager(parse_pipeline("dce"), print_after={"cse"})


def test_malformed_input_flag_is_a_usage_error(tmp_path):
    (tmp_path / "a.pir").write_text("module {\n" + FN + "}\n")
    code, _, err = pir("run", str(tmp_path / "a.pir"), "--input", "x.npy")
    assert code == 2
    assert err.strip() == "pir: error: --input expects NAME=FILE.npy, got 'x.npy'"


def test_run_writes_the_npz_to_stdout_with_dash(tmp_path):
    import io

    (tmp_path / "a.pir").write_text("module {\n" + FN + "}\n")
    np.save(tmp_path / "x.npy", np.arange(2, dtype=np.float32))
    code, out, _ = cli("run", tmp_path / "a.pir", "--input", f"x={tmp_path / 'x.npy'}",
                       "-o", "-", binary=True)
    assert code == 0
    np.testing.assert_array_equal(np.load(io.BytesIO(out))["x"], [0.0, 1.0])
    assert not (tmp_path / "-").exists() and not os.path.exists("-")


def test_an_empty_input_file(tmp_path):
    prog = tmp_path / "p.pir"
    prog.write_text("module {\n" + FN + "}\n")
    empty = tmp_path / "x.npy"
    empty.write_bytes(b"")
    code, _, err = pir("run", str(prog), "--input", f"x={empty}")
    assert code == 1
    assert err.strip().splitlines()[0] == f"pir: error: {empty}: cannot read array: the file is empty"

"""Run-time sizes are bounded (pir.limits): an op whose result could never be allocated (a
few bytes of ONNX asking for an Expand to 37 GiB) is an error naming the op before its rule
allocates anything, and `pir --max-tensor-bytes N` lowers the bound for one command."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from helpers import cli


def _expand_model(tmp_path, rows: int, cols: int):
    g = helper.make_graph(
        [helper.make_node("Expand", ["x", "s"], ["y"], name="ex")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([rows, cols], np.int64), "s")])
    path = tmp_path / "expand.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
                     .SerializeToString())
    pir = tmp_path / "expand.pir"
    assert cli("import", path, "-o", pir)[0] == 0
    x = tmp_path / "x.npy"
    np.save(x, np.ones(1, np.float32))
    return pir, x


def test_a_result_larger_than_memory_is_an_error_naming_the_op(tmp_path):
    pir, x = _expand_model(tmp_path, 100000, 100000)
    code, out, err = cli("run", pir, "--input", f"x={x}")
    assert code == 1
    assert err.startswith('pir: error: nn.expand "ex" at ')
    assert "result %y: shape [100000, 100000] takes 37.3 GiB, more than the limit of" in err
    assert "Traceback" not in err and "internal error" not in err


def test_max_tensor_bytes_sets_the_limit_for_one_command(tmp_path):
    pir, x = _expand_model(tmp_path, 4, 8)  # 128 bytes
    assert cli("run", pir, "--input", f"x={x}")[0] == 0
    code, _, err = cli("--max-tensor-bytes", "100", "run", pir, "--input", f"x={x}")
    assert code == 1
    assert "result %y: shape [4, 8] takes 128 bytes, more than the limit of 100 bytes" in err
    assert cli("--max-tensor-bytes", "128", "run", pir, "--input", f"x={x}")[0] == 0


def test_the_limit_of_one_command_does_not_outlive_it(tmp_path):
    from pir.limits import max_tensor_bytes, physical_memory

    pir, x = _expand_model(tmp_path, 4, 8)
    cli("--max-tensor-bytes", "100", "run", pir, "--input", f"x={x}")
    assert max_tensor_bytes() == physical_memory()

"""Bad command-line input to `pir run` and `pir optimize` is one clear line: exit status 2
for a usage error, 1 for a bad input file, never a traceback or "internal error"
(pir/runtimes/inputs.py, pir/passes/pipeline.py, pir/passes/base.py).  The files are the
kind found by a robustness audit, made here: an .npz whose member is a pickled object
array, and one whose header declares 2**80 elements."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import zipfile
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import onnx
import pytest
from numpy.lib import format as npy_format
from onnx import TensorProto, helper, numpy_helper

from helpers import cli  # noqa: E402
from pir.errors import UsageError
from pir.passes.base import Pass
from pir.passes.pipeline import parse_pipeline


def tiny_mlp() -> onnx.ModelProto:
    """relu(x @ W + b), x: [B, 4] (the audit's tiny_mlp.onnx)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "b"], ["y0"], name="add"),
             helper.make_node("Relu", ["y0"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 3])],
        [numpy_helper.from_array(rng.random((4, 3), np.float32), "W"),
         numpy_helper.from_array(rng.random(3, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


@pytest.fixture
def work(tmp_path):
    os.chdir(tmp_path)
    onnx.save(tiny_mlp(), "tiny.onnx")
    code, _, err = cli("import", "tiny.onnx", "-o", "tiny.pir")
    assert code == 0, err
    np.save("x.npy", np.ones((2, 4), np.float32))
    return tmp_path


def fails(code: int, *args) -> str:
    """Run ``pir ARGS``; assert it exits with ``code`` and one error line; return the line."""
    got, out, err = cli(*args)
    assert "Traceback" not in err and "internal error" not in err, err
    assert got == code, (got, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pir: error: "), err
    return lines[0].removeprefix("pir: error: ")


def npz_with_raw_member(path, name: str, data: bytes) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(name, data)


def npy_header(shape, descr: str = "<f4") -> bytes:
    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False,
                                            "shape": tuple(shape)})
    return buf.getvalue()


class Unpickled:
    """Unpickling this makes a folder: the test can tell whether pir unpickled it."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


# -- .npz and .npy files ---------------------------------------------------------------------

def test_an_object_array_in_an_npz_is_refused_unpickled(work):
    np.savez("objects.npz", x=np.array([Unpickled(str(work / "UNPICKLED")), None], dtype=object))
    assert fails(1, "run", "tiny.pir", "--inputs", "objects.npz") == (
        "objects.npz: member 'x': holds Python objects (dtype object), which pir does not "
        "unpickle: save numeric arrays")
    assert not (work / "UNPICKLED").exists()


def test_an_object_array_in_an_npy_is_refused_unpickled(work):
    np.save("objects.npy", np.array([Unpickled(str(work / "UNPICKLED"))], dtype=object))
    assert fails(1, "run", "tiny.pir", "--input", "x=objects.npy") == (
        "objects.npy: input 'x': holds Python objects (dtype object), which pir does not "
        "unpickle: save numeric arrays")
    assert not (work / "UNPICKLED").exists()


def test_a_header_declaring_more_than_int64_elements(work):
    npz_with_raw_member("huge.npz", "x.npy", npy_header((2**40, 2**40)) + bytes(16))
    assert fails(1, "run", "tiny.pir", "--inputs", "huge.npz") == (
        "huge.npz: member 'x': shape [1099511627776, 1099511627776] has "
        f"{2**80} elements, more than int64 can count")


def test_a_header_declaring_more_than_the_memory_limit(work):
    npz_with_raw_member("big.npz", "x.npy", npy_header((1000,)) + bytes(4000))
    assert fails(1, "--max-tensor-bytes", "1000", "run", "tiny.pir", "--inputs", "big.npz") == (
        "big.npz: member 'x': shape [1000] takes 3.9 KiB, more than the limit of 1000 bytes "
        "(pir --max-tensor-bytes N)")


def test_a_header_declaring_more_data_than_follows(work):
    npz_with_raw_member("short.npz", "x.npy", npy_header((1000,)) + bytes(8))
    assert fails(1, "run", "tiny.pir", "--inputs", "short.npz") == (
        "short.npz: member 'x': the header declares float32[1000] (4000 bytes), but only 8 "
        "bytes of data follow")
    (work / "short.npy").write_bytes(npy_header((2, 4)) + bytes(8))
    assert fails(1, "run", "tiny.pir", "--input", "x=short.npy") == (
        "short.npy: input 'x': the header declares float32[2, 4] (32 bytes), but only 8 bytes "
        "of data follow")


def test_a_garbled_header(work):
    header = npy_header((2, 4)).replace(b"'shape'", b"'shapf'")
    npz_with_raw_member("bad.npz", "x.npy", header + bytes(32))
    line = fails(1, "run", "tiny.pir", "--inputs", "bad.npz")
    assert line.startswith("bad.npz: member 'x': ")
    npz_with_raw_member("text.npz", "x.npy", b"not an array at all")
    assert fails(1, "run", "tiny.pir", "--inputs", "text.npz") == (
        "text.npz: member 'x': not an .npy array")


def test_a_truncated_npz(work):
    np.savez("in.npz", x=np.ones((2, 4), np.float32))
    data = (work / "in.npz").read_bytes()
    (work / "cut.npz").write_bytes(data[: len(data) // 2])
    assert fails(1, "run", "tiny.pir", "--inputs", "cut.npz").startswith(
        "cut.npz: cannot read array: ")


def test_good_files_still_load(work):
    np.savez("in.npz", x=np.full((3, 4), 2.0, np.float32))
    code, out, err = cli("run", "tiny.pir", "--inputs", "in.npz")
    assert code == 0 and out.startswith("y: float32[3, 3]"), err
    code, out, err = cli("run", "tiny.pir", "--input", "x=x.npy")
    assert code == 0 and out.startswith("y: float32[2, 3]"), err


def test_an_input_given_twice_is_a_usage_error(work):
    np.savez("in.npz", x=np.ones((2, 4), np.float32))
    assert fails(2, "run", "tiny.pir", "--input", "x=x.npy", "--input", "x=y.npy") == (
        "input 'x' is given twice: --input x=x.npy and --input x=y.npy")
    assert fails(2, "run", "tiny.pir", "--inputs", "in.npz", "--input", "x=x.npy") == (
        "input 'x' is given twice: in --inputs in.npz and by --input x=x.npy")


def test_an_input_the_function_does_not_take(work):
    assert fails(1, "run", "tiny.pir", "--input", "x=x.npy", "--input", "z=x.npy") == (
        "unknown input z; @main takes x")


# -- --dim -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["²", "٣", "-1", "1e3", "0x10", " 4", "4 ", "", "1_000"])
def test_a_dim_must_be_a_non_negative_decimal_integer(work, value):
    assert fails(2, "run", "tiny.pir", "--check", "tiny.onnx", "--dim", f"B={value}") == (
        f"--dim B: the size must be a non-negative decimal integer, got '{value}'")


def test_a_dim_beyond_int64(work):
    assert fails(2, "run", "tiny.pir", "--check", "tiny.onnx", "--dim", f"B={2**63}") == (
        f"--dim B: the size {2**63} is more than int64 can hold")
    assert fails(2, "run", "tiny.pir", "--check", "tiny.onnx", "--dim", "B=" + "9" * 5000
                 ).endswith("is more than int64 can hold")


def test_a_dim_too_big_for_memory(work):
    line = fails(1, "run", "tiny.pir", "--check", "tiny.onnx", "--dim", "B=1000000000000")
    assert line.startswith("input 'x': shape [1000000000000, 4] takes 14.6 TiB, more than the "
                           "limit of ")


def test_the_values_drawn_before_the_cast_count_too(work):
    # x is float32[4, 4], 64 bytes, but its random values are drawn as 128 bytes of float64.
    assert fails(1, "--max-tensor-bytes", "100", "run", "tiny.pir", "--check", "tiny.onnx",
                 "--dim", "B=4") == (
        "input 'x' (drawn as 8-byte values, then cast): shape [4, 4] takes 128 bytes, more "
        "than the limit of 100 bytes (pir --max-tensor-bytes N)")


def test_an_unknown_dim_names_the_known_ones(work):
    assert fails(2, "run", "tiny.pir", "--check", "tiny.onnx", "--dim", "C=4") == (
        "--dim C: no input of @main has a dim named 'C' (symbolic dims: B)")
    # found before any input file is read
    assert fails(2, "run", "tiny.pir", "--input", "x=missing.npy", "--dim", "C=4") == (
        "--dim C: no input of @main has a dim named 'C' (symbolic dims: B)")


def test_a_dim_given_twice_or_malformed(work):
    assert fails(2, "run", "tiny.pir", "--check", "tiny.onnx", "--dim", "B=2", "--dim", "B=3"
                 ) == "--dim B is given twice"
    assert fails(2, "run", "tiny.pir", "--check", "tiny.onnx", "--dim", "B") == (
        "--dim expects SYMBOL=SIZE, got 'B'")


def test_a_good_dim_still_works(work):
    code, out, err = cli("run", "tiny.pir", "--check", "tiny.onnx", "--dim", "B=007")
    assert code == 0, err
    assert "ok" in out


# -- pass pipelines --------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("cse,,dce", "pipeline: empty pass name at pass 2 of 'cse,,dce'"),
    ("cse,", "pipeline: empty pass name at pass 2 of 'cse,'"),
    (",cse", "pipeline: empty pass name at pass 1 of ',cse'"),
    ("{size-limit=3}", "pipeline: options without a pass name in '{size-limit=3}'"),
    ("fold{size-limit=-5}", "pass 'fold' option 'size-limit': must be at least 0 (got '-5')"),
    ("fold{size-limit=٣}", "pass 'fold' option 'size-limit': expects an integer (got '٣')"),
    ("fold{size-limit=1_000}", "pass 'fold' option 'size-limit': expects an integer "
                               "(got '1_000')"),
])
def test_a_bad_pipeline_is_a_usage_error(work, text, message):
    assert fails(2, "optimize", "tiny.pir", "-p", text, "-o", "o.pir") == message
    assert not (work / "o.pir").exists()


def test_blank_pipelines_are_still_no_passes(work):
    assert parse_pipeline("") == [] and parse_pipeline("  ") == []
    code, _, err = cli("optimize", "tiny.pir", "-p", "", "-o", "o.pir")
    assert code == 0, err


@dataclass(frozen=True)
class Ranged(Pass):
    """A pass with ranged options (not registered: only its option parsing is used)."""

    name: ClassVar[str] = "ranged"
    count: int = field(default=4, metadata={"doc": "", "min": 1, "max": 8})
    offset: int = field(default=0, metadata={"doc": "", "min": None})
    ratio: float = field(default=0.5, metadata={"doc": "", "min": 0.0, "max": 1.0})
    size: int = 16  # an int with no metadata: a count, so at least 0


@pytest.mark.parametrize("raw, message", [
    ({"count": "0"}, "pass 'ranged' option 'count': must be between 1 and 8 (got '0')"),
    ({"count": "9"}, "pass 'ranged' option 'count': must be between 1 and 8 (got '9')"),
    ({"ratio": "1.5"}, "pass 'ranged' option 'ratio': must be between 0.0 and 1.0 (got '1.5')"),
    ({"ratio": "nan"}, "pass 'ranged' option 'ratio': expects a finite number (got 'nan')"),
    ({"size": "-1"}, "pass 'ranged' option 'size': must be at least 0 (got '-1')"),
])
def test_option_ranges_are_declared_on_the_fields(raw, message):
    with pytest.raises(UsageError) as e:
        Ranged.from_options(raw)
    assert e.value.message == message and e.value.exit_code == 2


def test_values_in_range_are_taken():
    p = Ranged.from_options({"count": "8", "offset": "-3", "ratio": "1", "size": "0"})
    assert (p.count, p.offset, p.ratio, p.size) == (8, -3, 1.0, 0)
    assert math.isclose(Ranged.from_options({"ratio": "0.25"}).ratio, 0.25)
    ranges = {o.name: (o.min, o.max) for o in Ranged.options()}
    assert ranges == {"count": (1, 8), "offset": (None, None), "ratio": (0.0, 1.0),
                      "size": (0, None)}
    assert dataclasses.is_dataclass(p)

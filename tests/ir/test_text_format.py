"""The .pir text format: round trips, determinism, resources, and parse diagnostics."""

import numpy as np
import pytest

from pir.errors import PirError
from pir.ir import Builder, ConstantOp, DType, FuncOp, ModuleOp, ResourceRef, ReturnOp, TensorType
from pir.ir.core import OPS
from pir.ir.dialects import load_dialects
from pir.ir.parser import parse_module
from pir.ir.printer import format_float, print_module

F32 = DType.F32
load_dialects()
Add, Relu = OPS["nn.add"], OPS["nn.relu"]


def small_module() -> ModuleOp:
    m = ModuleOp.create("t", {"pir.source": "t.onnx"})
    fn = FuncOp.create("main", [TensorType(F32, ("B", 4))], [TensorType(F32, ("B", 4))], ["x"])
    m.body.block.append(fn)
    b = Builder(fn.entry, loc="/layer")
    w = np.arange(64, dtype=np.float32).reshape(16, 4) / 7
    ref = m.add_resource("layer.weight", w)
    wv = b.value(ConstantOp, value=ref, result_types=[TensorType.of(w)], name="layer.weight")
    assert wv.type == TensorType(F32, (16, 4))
    bias = b.value(ConstantOp, value=np.array([0.5, -1.0, 1e-5, 3.0], np.float32), name="onnx::b")
    y = b.value(Add, fn.args[0], bias, name="/layer/Add_output_0")
    z = b.value(Relu, y)
    b.create(ReturnOp, [z])
    return m


def test_round_trip_is_byte_identical():
    text = print_module(small_module())
    assert print_module(parse_module(text)) == text


def test_printing_is_deterministic():
    assert print_module(small_module()) == print_module(small_module())


def test_names_are_kept_and_quoted_when_needed():
    text = print_module(small_module())
    assert '%"onnx::b" = builtin.constant()' in text
    assert "%/layer/Add_output_0 = nn.add(%x, %\"onnx::b\")" in text
    assert "%0 = nn.relu(%/layer/Add_output_0)" in text  # no hint: numbered


def test_an_output_keeps_its_name_when_an_earlier_value_has_the_same_hint():
    # a rewrite names its new values after the op it replaces (`x.1`), which an exporter may
    # already have used for an output: the output keeps the name, the other value is renamed
    text = """module {
  func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>) {
    %x.1 = nn.relu(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %x.1_b = nn.relu(%x.1) : (tensor<4xf32>) -> tensor<4xf32>
    func.return(%x.1_b) : (tensor<4xf32>) -> ()
  }
}
"""
    m = parse_module(text)
    fn = m.funcs[0]
    first, second = fn.entry.ops[0].results[0], fn.entry.ops[1].results[0]
    second.name = "x.1"  # as a pass would leave it: two values hinted alike
    printed = print_module(m)
    assert "%x.1_1 = nn.relu(%a)" in printed
    assert "%x.1 = nn.relu(%x.1_1)" in printed and "func.return(%x.1)" in printed
    assert [v.name for v in parse_module(printed).funcs[0].return_op.operands] == ["x.1"]
    assert first.name == "x.1"  # printing renames nothing in the module itself


def test_resource_section_holds_weights_losslessly():
    m = small_module()
    text = print_module(m)
    assert 'resources {\n  "layer.weight": f32[16,4] sha256=' in text
    again = parse_module(text)
    np.testing.assert_array_equal(again.resources["layer.weight"], m.resources["layer.weight"])


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int8, np.uint64, np.bool_])
def test_resources_of_every_width_round_trip(dtype):
    m = small_module()
    arr = (np.random.default_rng(0).standard_normal((5, 7)) * 100).astype(dtype)
    m.add_resource("extra", arr)
    fn = m.funcs[0]
    b = Builder(fn.entry, before=fn.return_op)
    b.value(ConstantOp, value=ResourceRef("extra"), result_types=[TensorType.of(arr)])
    again = parse_module(print_module(m))
    np.testing.assert_array_equal(again.resources["extra"], arr)
    assert again.resources["extra"].dtype == arr.dtype


@pytest.mark.parametrize("value", [0.1, 1e-5, 3.4028235e38, 1e-45, -0.0, 2.5, 1 / 3])
def test_floats_print_shortest_and_read_back_exactly(value):
    f32 = float(np.float32(value))
    assert float(np.float32(float(format_float(f32, DType.F32)))) == f32
    assert float(format_float(value, DType.F64)) == value


def test_inline_constants_keep_special_values():
    m = small_module()
    fn = m.funcs[0]
    b = Builder(fn.entry, before=fn.return_op)
    arr = np.array([np.inf, -np.inf, np.nan, -0.0], np.float32)
    b.value(ConstantOp, value=arr, name="special")
    text = print_module(m)
    assert "dense<[inf, -inf, nan, -0.0]> : tensor<4xf32>" in text
    assert print_module(parse_module(text)) == text


def test_symbolic_dim_with_an_x_is_quoted():
    t = TensorType(F32, ("max_len", 3, None))
    assert str(t) == 'tensor<"max_len"x3x?xf32>'
    text = print_module(small_module()).replace("tensor<Bx4xf32>", 'tensor<"max_len"x4xf32>')
    again = parse_module(text)
    assert again.funcs[0].args[0].type == TensorType(F32, ("max_len", 4))


def parse_error(text: str) -> PirError:
    with pytest.raises(PirError) as info:
        parse_module(text, "bad.pir")
    return info.value


GOOD = print_module(small_module())


def test_unknown_op_points_at_the_op_name():
    e = parse_error(GOOD.replace("nn.relu", "nn.frobnicate"))
    assert e.message == "unknown op 'nn.frobnicate'"
    assert (e.file, e.line) == ("bad.pir", 6)
    assert e.excerpt.splitlines()[1].strip() == "^"


def test_undefined_value():
    e = parse_error(GOOD.replace("nn.relu(%/layer/Add_output_0)", "nn.relu(%nope)"))
    assert e.message == "undefined value %nope"


def test_use_before_definition():
    lines = GOOD.splitlines()
    add = next(i for i, l in enumerate(lines) if "nn.add" in l)
    relu = next(i for i, l in enumerate(lines) if "nn.relu" in l)
    lines[add], lines[relu] = lines[relu], lines[add]
    e = parse_error("\n".join(lines))
    assert e.message == "value %/layer/Add_output_0 is used before it is defined"


def test_wrong_operand_type():
    e = parse_error(GOOD.replace("nn.relu(%/layer/Add_output_0) : (tensor<Bx4xf32>)",
                                 "nn.relu(%/layer/Add_output_0) : (tensor<Bx5xf32>)"))
    assert "is %/layer/Add_output_0 of type tensor<Bx4xf32>, but the op's type says tensor<Bx5xf32>" in e.message


def test_type_rule_violation_is_reported_with_the_op():
    e = parse_error(GOOD.replace("-> tensor<Bx4xf32> loc(\"/layer\")\n    %0",
                                 "-> tensor<Bx5xf32> loc(\"/layer\")\n    %0", 1)
                    .replace("nn.relu(%/layer/Add_output_0) : (tensor<Bx4xf32>)",
                             "nn.relu(%/layer/Add_output_0) : (tensor<Bx5xf32>)"))
    assert 'nn.add "/layer": result 0 is declared tensor<Bx5xf32>, but the type rule infers tensor<Bx4xf32>' in e.message
    assert e.line == 5


def test_broken_resource_hash():
    i = GOOD.index("sha256=") + len("sha256=")
    flipped = GOOD[:i] + ("0" if GOOD[i] != "0" else "1") + GOOD[i + 1:]
    e = parse_error(flipped)
    assert e.message == 'resource "layer.weight": sha256 mismatch, the data is damaged'


def test_truncated_resource_data():
    i = GOOD.index('base64"') + len('base64"')
    e = parse_error(GOOD[:i + 8] + GOOD[GOOD.index('"', i):])
    assert "bytes of data for f32[16,4]" in e.message


def test_missing_resource():
    e = parse_error(GOOD[: GOOD.index("resources {")])
    assert 'unknown resource "layer.weight"' in e.message


def test_unterminated_module():
    e = parse_error(GOOD[: GOOD.index("  }\n}")])
    assert e.message.startswith("expected '}'")


def test_bad_character():
    e = parse_error(GOOD.replace("nn.relu", "nn.relu#", 1))
    assert e.message == "unexpected character '#'"

"""`pir diff` on real pairs: renamed (equal), optimized, edited attributes, weights and
signatures, numeric divergence, dump-dir stages, and the exit codes 0 / 1 / 2."""

import hashlib
import pathlib
import sys

import numpy as np
import pytest

from pir.diff import diff_lines, diff_modules, op_counts
from pir.frontends.onnx.importer import import_model, load_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from helpers import cli  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "models"



pir = cli


def lines(a_text: str, b_text: str) -> list[str]:
    """The diff's lines without the two header lines."""
    d = diff_modules(parse_module(a_text), parse_module(b_text))
    return [x.text for x in diff_lines(d)][2:]


@pytest.fixture(scope="module")
def mlp() -> str:
    sys.path.insert(0, str(ROOT / "samples" / "mlp"))
    try:
        import make_model
    finally:
        sys.path.remove(str(ROOT / "samples" / "mlp"))
    return print_module(import_model(make_model.build()))


@pytest.fixture
def files(tmp_path, mlp):
    """Write texts to files in tmp_path: files(a=text, ...) -> paths."""

    def write(**texts):
        out = []
        for name, text in texts.items():
            path = tmp_path / f"{name}.pir"
            path.write_text(text)
            out.append(path)
        return out

    return write


def renamed(text: str, numbered: bool = False) -> str:
    """Every value renamed consistently: %v0, %v1 ... (or left to the printer's numbering)."""
    m = parse_module(text)
    n = 0
    for fn in m.funcs:
        for op in fn.walk():  # the function first: its arguments
            values = [a for r in op.regions for b in r.blocks for a in b.args]
            for v in values + (list(op.results) if op is not fn else []):
                v.name = None if numbered else f"v{n}"
                n += 1
    return print_module(m)


# -- equal -----------------------------------------------------------------------------------


@pytest.mark.parametrize("numbered", [False, True], ids=["renamed", "renumbered"])
@pytest.mark.parametrize("model", ["mlp", "gpt2"])
def test_a_model_against_itself_renamed_is_equal(model, numbered, mlp, files):
    text = mlp if model == "mlp" else print_module(import_model(load_model(MODELS / "gpt2.onnx")))
    other = renamed(text, numbered)
    assert other != text
    assert diff_modules(parse_module(text), parse_module(other)).equal
    a, b = files(a=text, b=other)
    assert pir("diff", a, b) == (0, "", "")


def test_defaults_spelled_out_inline_constants_and_renamed_weights_are_no_difference(mlp):
    other = (mlp.replace(" {alpha = 1.0, beta = 1.0, trans_a = false, trans_b = false}", "")
             .replace('"fc1.weight"', '"w1"'))
    assert "nn.gemm(%act1, %fc2.weight, %fc2.bias) :" in other and '"w1": f32' in other
    assert lines(mlp, other) == []


# -- different -------------------------------------------------------------------------------

SOFTMAX = ('    %probs = nn.softmax(%logits) {axis = -1} : (tensor<Bx10xf32>) -> tensor<Bx10xf32> '
           'loc("/softmax")\n    func.return(%probs)')
PRIMS = [
    '%probs.1 = prim.reduce_max(%logits) {axes = [1], keepdims = true} : (tensor<Bx10xf32>) -> tensor<Bx1xf32> loc("/softmax")',
    '%probs.2 = prim.broadcast_in_dim(%probs.1) {broadcast_dimensions = [0, 1]} : (tensor<Bx1xf32>) -> tensor<Bx10xf32> loc("/softmax")',
    '%probs.3 = prim.sub(%logits, %probs.2) : (tensor<Bx10xf32>, tensor<Bx10xf32>) -> tensor<Bx10xf32> loc("/softmax")',
    '%probs.4 = prim.exp(%probs.3) : (tensor<Bx10xf32>) -> tensor<Bx10xf32> loc("/softmax")',
    '%probs.5 = prim.reduce_sum(%probs.4) {axes = [1], keepdims = true} : (tensor<Bx10xf32>) -> tensor<Bx1xf32> loc("/softmax")',
    '%probs.6 = prim.broadcast_in_dim(%probs.5) {broadcast_dimensions = [0, 1]} : (tensor<Bx1xf32>) -> tensor<Bx10xf32> loc("/softmax")',
    '%probs.7 = prim.div(%probs.4, %probs.6) : (tensor<Bx10xf32>, tensor<Bx10xf32>) -> tensor<Bx10xf32> loc("/softmax")',
]


@pytest.fixture(scope="module")
def decomposed(mlp) -> str:
    """The mlp with its softmax written in prims by hand, as decompose writes it."""
    assert SOFTMAX in mlp
    return mlp.replace(SOFTMAX, "".join(f"    {p}\n" for p in PRIMS) + "    func.return(%probs.7)")


def test_decomposition_lists_the_removed_op_then_the_added_prims(mlp, decomposed):
    assert lines(mlp, decomposed) == [
        "@main",
        '- %probs = nn.softmax(%logits) {axis = -1} : (tensor<Bx10xf32>) -> tensor<Bx10xf32> loc("/softmax")',
        *(f"+ {p}" for p in PRIMS),
        "~ func.return: operand 0: %probs -> %probs.7",
    ]
    counts = op_counts(diff_modules(parse_module(mlp), parse_module(decomposed)))
    assert counts == {"func.return": (0, 0, 1), "nn.softmax": (1, 0, 0),
                      "prim.broadcast_in_dim": (0, 2, 0), "prim.div": (0, 1, 0),
                      "prim.exp": (0, 1, 0), "prim.reduce_max": (0, 1, 0),
                      "prim.reduce_sum": (0, 1, 0), "prim.sub": (0, 1, 0)}


def test_stat_table_per_op_and_dialect(mlp, decomposed, files):
    a, b = files(a=mlp, b=decomposed)
    code, out, _ = pir("diff", a, b, "--stat")
    assert code == 1
    assert out.splitlines() == [
        "op                     removed  added  changed",
        "func.return                  0      0        1",
        "nn.softmax                   1      0        0",
        "prim.broadcast_in_dim        0      2        0",
        "prim.div                     0      1        0",
        "prim.exp                     0      1        0",
        "prim.reduce_max              0      1        0",
        "prim.reduce_sum              0      1        0",
        "prim.sub                     0      1        0",
        "dialect",
        "  func                       0      0        1",
        "  nn                         1      0        0",
        "  prim                       0      7        0",
        "total                        1      7        1",
    ]


def test_against_its_optimized_form(tmp_path, mlp):
    """The real pass: decompose{ops=softmax} on the imported mlp."""
    (tmp_path / "m.pir").write_text(mlp)
    code, _, err = pir("optimize", tmp_path / "m.pir", "-p", "decompose{ops=softmax}",
                       "-o", tmp_path / "o.pir")
    assert code == 0, err
    if "nn.softmax" in (tmp_path / "o.pir").read_text():
        pytest.skip("decompose has no rule for nn.softmax yet")
    code, out, _ = pir("diff", tmp_path / "m.pir", tmp_path / "o.pir", "--stat")
    assert code == 1
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert rows["nn.softmax"] == ["1", "0", "0"]
    assert rows["prim.exp"][1] == "1" and rows["prim"][0] == "0" and int(rows["prim"][1]) >= 4
    assert rows["nn"][0] == "1" and rows["nn"][1] == "0"
    code, out, _ = pir("diff", tmp_path / "m.pir", tmp_path / "o.pir")
    softmax = [x for x in out.splitlines() if "nn.softmax" in x]
    assert len(softmax) == 1  # gone, or now another op's value under the same name
    assert softmax[0].startswith(("- %probs = nn.softmax(%logits)", "~ %probs: nn.softmax -> prim."))
    assert sum(x.startswith("+ %probs.") for x in out.splitlines()) >= 4
    np.savez(tmp_path / "in.npz", x=np.random.default_rng(0).standard_normal((3, 784), np.float32))
    code, out, _ = pir("diff", tmp_path / "m.pir", tmp_path / "o.pir", "--numeric",
                       tmp_path / "in.npz")
    assert code == 1  # structurally different, numerically the same
    assert "numerically the same on these inputs" in out


def test_changed_attribute_and_op(mlp):
    other = mlp.replace("alpha = 1.0", "alpha = 2.0").replace("nn.tanh", "nn.sigmoid")
    assert lines(mlp, other) == [
        "@main",
        '~ %fc2 = nn.gemm: alpha: 1.0 -> 2.0 loc("/fc2/Gemm")',
        '~ %act2: nn.tanh -> nn.sigmoid loc("/act2/Tanh")',
    ]


def test_a_changed_op_is_found_by_location_when_every_name_changed(mlp):
    other = renamed(mlp).replace("nn.tanh", "nn.sigmoid")
    assert lines(mlp, other) == ["@main", '~ %act2 (now %v11): nn.tanh -> nn.sigmoid loc("/act2/Tanh")']


def test_changed_resource_is_reported_once_with_key_shape_dtype_and_hashes(mlp):
    m = parse_module(mlp)
    before = m.resources["fc1.weight"]
    after = before.copy()
    after[3, 7] += 1.0
    m.resources["fc1.weight"] = after
    sha = [hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:12] for x in (before, after)]
    assert lines(mlp, print_module(m)) == [
        "resources",
        f'~ resource "fc1.weight": f32[784,256] sha256:{sha[0]} -> f32[784,256] sha256:{sha[1]}',
    ]


SMALL = """module @m {
  func.func @main(%x: tensor<Bx4xf32>) -> (tensor<Bx4xf32>) {
    %y = nn.relu(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/relu")
    func.return(%y) : (tensor<Bx4xf32>) -> ()
  }
}
"""


def test_changed_signature():
    fixed = SMALL.replace("Bx4", "2x4")
    assert lines(SMALL, fixed) == [
        "@main",
        "~ @main input 0 %x: tensor<Bx4xf32> -> tensor<2x4xf32>",
        "~ @main output 0 %y: tensor<Bx4xf32> -> tensor<2x4xf32>",
        '~ %y = nn.relu: type: tensor<Bx4xf32> -> tensor<2x4xf32> loc("/relu")',
    ]
    two = SMALL.replace("%x: tensor<Bx4xf32>)", "%x: tensor<Bx4xf32>, %w: tensor<3xi64>)")
    assert lines(SMALL, two) == ["@main", "+ @main input 1 %w: tensor<3xi64>"]


def test_added_and_removed_functions():
    helper = SMALL.replace("@main", "@helper").replace("module @m {\n", "")[:-2]
    both = SMALL[:-2] + helper + "}\n"
    assert lines(both, SMALL) == ["- func @helper (2 ops)"]
    assert lines(SMALL, both) == ["+ func @helper (2 ops)"]


IF = """module @cf {
  func.func @main(%cond: tensor<i1>, %x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>) {
    %z = nn.if(%cond) ({
      %s = nn.add(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("Add:s")
      nn.yield(%s) : (tensor<3xf32>) -> () loc("If:z")
    }, {
      %p = nn.mul(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("Mul:p")
      nn.yield(%p) : (tensor<3xf32>) -> () loc("If:z")
    }) : (tensor<i1>) -> tensor<3xf32> loc("If:z")
    func.return(%z) : (tensor<3xf32>) -> ()
  }
}
"""


def test_ops_inside_regions_are_matched_too():
    assert lines(IF, renamed(IF)) == []
    assert lines(IF, renamed(IF).replace("nn.mul", "nn.sub")) == [
        "@main", '~ %p (now %v5): nn.mul -> nn.sub loc("Mul:p")']
    edited = IF.replace("nn.add(%x, %y)", "nn.add(%x, %x)")
    assert lines(IF, edited) == ["@main", '~ %s = nn.add: operand 1: %y -> %x loc("Add:s")']


# -- --numeric -------------------------------------------------------------------------------


def test_numeric_finds_the_first_diverging_value(tmp_path, mlp, files):
    a, b = files(a=mlp, b=renamed(mlp).replace("nn.tanh", "nn.sigmoid"))
    np.savez(tmp_path / "in.npz", x=np.random.default_rng(0).standard_normal((3, 784), np.float32))
    code, out, _ = pir("diff", a, b, "--numeric", tmp_path / "in.npz")
    assert code == 1
    last = out.splitlines()[-1]
    assert last.startswith('first divergence at %act2 (%v11 in the second file), the result of '
                           'nn.tanh -> nn.sigmoid loc("/act2/Tanh"): max abs err ')
    assert "output %probs: " in out and "DIFFERENT" in out
    code, out, _ = pir("diff", a, a, "--numeric", tmp_path / "in.npz")
    assert code == 0
    assert out.splitlines() == ["output %probs: max abs err 0, max rel err 0",
                                "numerically the same on these inputs (rtol=0.0001, atol=1e-05)"]


# -- dump-dir stages -------------------------------------------------------------------------


def test_successive_dump_dir_stages(tmp_path):
    src = ROOT / "tests" / "diff" / "filecheck" / "cse_stage.pir"
    stages = tmp_path / "stages"
    code, _, err = pir("optimize", src, "-p", "cse,dce,cse", "--dump-dir", stages,
                       "-o", tmp_path / "o.pir")
    assert code == 0, err
    s = sorted(stages.iterdir())
    assert [p.name for p in s] == ["00-input.pir", "01-cse.pir", "02-dce.pir", "03-cse.pir"]
    code, out, _ = pir("diff", s[1], s[2])
    assert code == 1
    assert out.splitlines() == [
        f"--- {s[1]}  (pipeline: cse)",
        f"+++ {s[2]}  (pipeline: dce)",
        "@main",
        '- %dead = nn.exp(%x) : (tensor<Bx4xf32>) -> tensor<Bx4xf32> loc("/dead")',
    ]
    assert pir("diff", s[2], s[3]) == (0, "", "")  # the second cse changed nothing


# -- errors and colour -----------------------------------------------------------------------


def test_errors_exit_2_with_one_line(tmp_path, files):
    a, bad = files(a=SMALL, bad="module @m {\n  func.func @main(\n")
    code, out, err = pir("diff", a, tmp_path / "nope.pir")
    assert (code, out) == (2, "")
    assert err == f"pir: error: {tmp_path / 'nope.pir'}: cannot read: No such file or directory\n"
    code, _, err = pir("diff", bad, a)
    # (the end of input is reported just after the last token, where something is missing)
    assert code == 2 and err.startswith(f"pir: error: {bad}:2:19: ")
    np.savez(tmp_path / "in.npz", y=np.zeros((2, 4), np.float32))
    code, _, err = pir("diff", a, a, "--numeric", tmp_path / "in.npz")
    assert code == 2
    assert err == "pir: error: the first file: no input x in the inputs\n"


def test_colour_only_on_a_terminal_and_never_with_no_color(files):
    a, b = files(a=SMALL, b=SMALL.replace("nn.relu", "nn.tanh"))
    assert "\x1b[" not in pir("diff", a, b)[1]
    coloured = pir("diff", a, b, env={"FORCE_COLOR": "1"})[1]
    assert "\x1b[33m~ %y: nn.relu -> nn.tanh" in coloured
    plain = pir("diff", a, b, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})[1]
    assert "\x1b[33m" not in plain and '~ %y: nn.relu -> nn.tanh loc("/relu")' in plain

"""Pipelines as text, the pass manager (verification after every pass, IR printing, stage
dumps that replay, timing) and `pir optimize` (presets, options, exit codes, stderr)."""

import io
import pathlib
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.ir.types import DType, TensorType
from pir.ir.verifier import verify_module
from pir.passes.base import PASS_MODULES, Pass
from pir.passes.canonicalize import Canonicalize
from pir.passes.fold import ConstantFolding
from pir.passes.manager import PassManager, count_ops
from pir.passes.pipeline import DEFAULT_PIPELINE, PRESETS, format_pipeline, parse_pipeline

from helpers import check_pipeline, cli

MODELS = pathlib.Path(__file__).resolve().parents[1] / "models"

TEXT = """module {
  func.func @main(%x: tensor<Bx3xf32>) -> (tensor<Bx3xf32>) {
    %one = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %two = builtin.constant() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %four = nn.mul(%two, %two) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32> loc("/exp")
    %a = nn.mul(%e, %one) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %b = nn.add(%a, %four) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %c = nn.add(%four, %a) : (tensor<f32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %y = nn.mul(%b, %c) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%y) : (tensor<Bx3xf32>) -> ()
  }
}
"""


def fresh():
    return parse_module(TEXT, "t.pir")


@dataclass(frozen=True)
class BreakTypes(Pass):
    """A deliberately broken pass: declares a wrong result type on the first nn.exp."""

    name: ClassVar[str] = "break-ir"

    def apply(self, module):
        op = next(op for fn in module.funcs for op in fn.walk() if op.name == "nn.exp")
        op.results[0].type = TensorType(DType.F32, (7,))


@pytest.fixture
def broken_pass(monkeypatch):
    """Registers break-ir (this module defines it) for the duration of one test."""
    monkeypatch.setitem(PASS_MODULES, "break-ir", __name__)


BROKEN = ('nn.exp "/exp": result 0 is declared tensor<7xf32>, but the type rule infers '
          'tensor<Bx3xf32>')


# -- pipeline text ---------------------------------------------------------------------------

def test_options_lists_and_bare_flags():
    passes = parse_pipeline("canonicalize{disable=add-zero,mul-by-one stats}, fold{size-limit=64},"
                            "cse,canonicalize{stats=false disable=neg-neg}")
    assert passes == [Canonicalize(disable=("add-zero", "mul-by-one"), stats=True),
                      ConstantFolding(size_limit=64), parse_pipeline("cse")[0],
                      Canonicalize(disable=("neg-neg",), stats=False)]


def test_a_list_continues_over_spaces_until_the_next_option():
    (p,) = parse_pipeline("canonicalize{disable=add-zero mul-by-one, neg-neg stats=1}")
    assert p == Canonicalize(disable=("add-zero", "mul-by-one", "neg-neg"), stats=True)


def test_formatted_pipelines_parse_back_to_the_same_passes():
    text = "canonicalize{disable=add-zero,neg-neg stats},fold{size-limit=9},cse,dce"
    passes = parse_pipeline(text)
    assert format_pipeline(passes) == ("canonicalize{disable=add-zero,neg-neg stats=true},"
                                       "fold{size-limit=9},cse,dce")
    assert parse_pipeline(format_pipeline(passes)) == passes
    for preset in PRESETS.values():
        assert parse_pipeline(format_pipeline(parse_pipeline(preset))) == parse_pipeline(preset)


@pytest.mark.parametrize("text, message", [
    ("cse{foo=1}", "pass 'cse' has no option 'foo' (options: none)"),
    ("fold{limit=3}", "pass 'fold' has no option 'limit' (options: size-limit)"),
    ("fold{size-limit=big}", "pass 'fold' option 'size-limit': expects an integer (got 'big')"),
    ("fold{size-limit=1 2}", "pass 'fold' option 'size-limit': expects one value (got '1 2')"),
    ("canonicalize{stats=maybe}",
     "pass 'canonicalize' option 'stats': expects true or false (got 'maybe')"),
    ("canonicalize{bogus}",
     "pipeline: pass 'canonicalize': expected name=value, got 'bogus' (options: disable, stats)"),
    ("fold{=3}", "pipeline: pass 'fold': option without a name in '=3'"),
    ("cse}", "pipeline: unbalanced '}' in 'cse}'"),
    ("cse{", "pipeline: unclosed '{' in 'cse{'"),
    ("fold{size-limit=3}x", "pipeline: expected '}' at the end of 'fold{size-limit=3}x'"),
])
def test_pipeline_errors_say_what_is_valid(text, message):
    with pytest.raises(PirError) as e:
        parse_pipeline(text)
    assert e.value.message == message


def test_an_unknown_pass_lists_every_pass():
    with pytest.raises(PirError) as e:
        parse_pipeline("canonicalize,cse,nosuch")
    assert e.value.message == f"unknown pass 'nosuch' (passes: {', '.join(sorted(PASS_MODULES))})"


# -- the pass manager ------------------------------------------------------------------------

def test_verification_after_each_pass_names_the_pass_that_broke_the_ir(broken_pass):
    m = fresh()
    with pytest.raises(PirError) as e:
        PassManager(parse_pipeline("canonicalize,break-ir,cse")).run(m)
    assert e.value.message == f"the IR is invalid after pass 'break-ir': {BROKEN}"


def test_without_verify_each_a_broken_pass_goes_unnoticed(broken_pass):
    m = fresh()
    PassManager(parse_pipeline("break-ir,cse"), verify_each=False).run(m)
    with pytest.raises(PirError, match="result 0 is declared tensor<7xf32>"):
        verify_module(m)


@dataclass(frozen=True)
class Fails(Pass):
    name: ClassVar[str] = "fails"

    def apply(self, module):
        raise PirError("nothing to be done")


def test_errors_inside_a_pass_name_it():
    with pytest.raises(PirError) as e:
        PassManager([parse_pipeline("cse")[0], Fails()]).run(fresh())
    assert e.value.message == "pass 'fails': nothing to be done"


def test_print_ir_before_and_after_chosen_passes():
    pipeline = "canonicalize,fold,cse"
    stages, m = [], fresh()  # the IR after each pass, the passes run one by one
    for p in parse_pipeline(pipeline):
        p.apply(m)
        stages.append(print_module(m, resources=False))
    log = io.StringIO()
    PassManager(parse_pipeline(pipeline), print_before={"fold"}, print_after={"fold", "cse"},
                log=log).run(fresh())
    assert log.getvalue() == ("// ----- IR before fold -----\n" + stages[0]
                              + "// ----- IR after fold -----\n" + stages[1]
                              + "// ----- IR after cse -----\n" + stages[2])
    assert stages[0] != stages[1] != stages[2]


def test_dump_dir_stages_replay_byte_for_byte(tmp_path):
    m = fresh()
    PassManager(parse_pipeline("canonicalize{disable=add-zero},fold,cse,canonicalize,dce"),
                dump_dir=str(tmp_path)).run(m)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["00-input.pir", "01-canonicalize.pir", "02-fold.pir", "03-cse.pir",
                     "04-canonicalize.pir", "05-dce.pir"]
    first = [(tmp_path / f).read_text().split("\n", 1)[0] for f in files]
    assert first == ["// pir-pipeline: (the input, before any pass)",
                     "// pir-pipeline: canonicalize{disable=add-zero stats=false}",
                     "// pir-pipeline: fold{size-limit=1048576}",
                     "// pir-pipeline: cse",
                     "// pir-pipeline: canonicalize{disable= stats=false}",
                     "// pir-pipeline: dce"]
    assert (tmp_path / "00-input.pir").read_text().split("\n", 1)[1] == print_module(fresh())
    for prev, cur in zip(files, files[1:]):
        step = (tmp_path / cur).read_text()
        header, body = step.split("\n", 1)
        replayed = parse_module((tmp_path / prev).read_text(), prev)
        PassManager(parse_pipeline(header.removeprefix("// pir-pipeline: "))).run(replayed)
        assert print_module(replayed) == body, cur
    assert print_module(m) == body  # the last stage is the result


def test_timing_records_time_and_op_counts_per_pass():
    m = fresh()
    pm = PassManager(parse_pipeline("canonicalize,fold,cse,dce"), timing=True)
    pm.run(m)
    assert [(t.name, t.ops_before, t.ops_after) for t in pm.timings] == [
        ("canonicalize", 9, 7), ("fold", 7, 6), ("cse", 6, 5), ("dce", 5, 5)]
    assert all(t.seconds >= 0 for t in pm.timings)
    lines = pm.timing_table().splitlines()
    assert lines[0] == "pass               time (ms)   share  ops before  ops after"
    assert [line.split()[0] for line in lines[1:]] == ["canonicalize", "fold", "cse", "dce", "total"]
    assert lines[1].split()[-2:] == ["9", "7"]
    assert count_ops(m) == 5


@pytest.mark.parametrize("model", ["bert", "gpt2", "llama", "t5", "whisper", "vit", "resnet",
                                   "mobilenet"])
def test_models_compute_the_same_after_the_o1_pipeline(model):
    module = import_model(str(MODELS / f"{model}.onnx"))
    feeds = dict(np.load(MODELS / f"{model}.inputs.npz"))
    check_pipeline(module, feeds, PRESETS["1"])


# -- pir optimize ----------------------------------------------------------------------------


pir = cli


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "t.pir"
    path.write_text(TEXT)
    return str(path)


def test_presets_are_the_documented_pipelines(src):
    assert pir("optimize", src, "-O0", "-o", "-")[1] == print_module(fresh())
    for level, text in (("1", PRESETS["1"]), ("2", DEFAULT_PIPELINE)):
        code, out, err = pir("optimize", src, f"-O{level}", "-o", "-")
        assert code == 0, err
        assert out == pir("optimize", src, "-p", text, "-o", "-")[1]
    assert pir("optimize", src, "-o", "-")[1] == pir("optimize", src, "-O2", "-o", "-")[1]
    assert PRESETS["1"] == "canonicalize,fold,cse,dce"


def test_o1_simplifies(src):
    code, out, _ = pir("optimize", src, "-O1", "-o", "-")
    assert code == 0
    assert "nn.mul(%e, %one)" not in out and "nn.add(%four, %a)" not in out
    assert "%four = builtin.constant() {value = dense<4.0> : tensor<f32>}" in out


def test_p_and_o_together_are_a_usage_error(src):
    code, out, err = pir("optimize", src, "-p", "cse", "-O1", "-o", "-")
    assert (code, out, err) == (2, "", "pir: error: give either -p or -O, not both\n")


def test_a_bad_pipeline_fails_before_reading_the_input(tmp_path):
    code, _, err = pir("optimize", str(tmp_path / "missing.pir"), "-p", "cse,nosuch", "-o", "-")
    assert code == 1
    assert err == f"pir: error: unknown pass 'nosuch' (passes: {', '.join(sorted(PASS_MODULES))})\n"


def test_cli_verify_each_and_no_verify_each(src, broken_pass):
    excerpt = ('      %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32> loc("/exp")\n'
               '           ^\n')
    code, out, err = pir("optimize", src, "-p", "break-ir,cse", "-o", "-")
    assert (code, out) == (1, "")
    assert err == f"pir: error: {src}:6:10: the IR is invalid after pass 'break-ir': {BROKEN}\n" + excerpt
    # Without verification after each pass, the final check still refuses to write it.
    code, out, err = pir("optimize", src, "-p", "break-ir,cse", "--no-verify-each", "-o", "-")
    assert (code, out) == (1, "")
    assert err == f"pir: error: {src}:6:10: {BROKEN}\n" + excerpt


def test_print_ir_after_all_goes_to_stderr(src):
    code, out, err = pir("optimize", src, "-p", "canonicalize,cse", "--print-ir-after-all",
                         "-o", "-")
    assert code == 0
    assert "// ----- IR" not in out
    headers = [line for line in err.splitlines() if line.startswith("// ----- IR")]
    assert headers == ["// ----- IR after canonicalize -----", "// ----- IR after cse -----"]
    last = err.split("// ----- IR after cse -----\n")[1]
    assert last == print_module(parse_module(out), resources=False)


def test_timing_table_goes_to_stderr(src):
    code, out, err = pir("optimize", src, "-O1", "--timing", "-o", "-")
    assert code == 0 and "time (ms)" not in out
    assert err.splitlines()[0] == "pass               time (ms)   share  ops before  ops after"
    assert [line.split()[0] for line in err.splitlines()[1:]] == [
        "canonicalize", "fold", "cse", "dce", "total"]


def test_cli_dump_dir_replays_with_pir_optimize(src, tmp_path):
    stages = tmp_path / "stages"
    assert pir("optimize", src, "-O1", "--dump-dir", str(stages), "-o", "-")[0] == 0
    files = sorted(stages.iterdir())
    for prev, cur in zip(files, files[1:]):
        header, body = cur.read_text().split("\n", 1)
        code, out, err = pir("optimize", str(prev), "-p", header.removeprefix("// pir-pipeline: "),
                             "-o", "-")
        assert code == 0, err
        assert out == body, cur.name

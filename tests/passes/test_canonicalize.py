"""canonicalize: every pattern is tested and can be switched off; the rewrites keep the
values (reference runtime before and after, on random inputs, for every function of the
FileCheck files and for the test models); cast chains are exact where the rule says so."""

import io
import itertools
import pathlib
import re
from contextlib import redirect_stderr

import numpy as np
import pytest

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model
from pir.ir.core import OPS
from pir.ir.dialects import load_dialects
from pir.ir.dialects.func import FuncOp
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.ir.types import DType
from pir.passes.canonicalize import Canonicalize
from pir.passes.canonicalize.matchers import exact_in, rebuild
from pir.passes.canonicalize.registry import all_patterns
from pir.passes.drr import Attr, Op, Var, drr
from pir.passes.pipeline import parse_pipeline
from pir.passes.rewriter import apply_patterns
from pir.runtimes.reference import run_function

from helpers import check_pipeline, roundtrip

HERE = pathlib.Path(__file__).parent
CORPUS = sorted((HERE / "filecheck").glob("canonicalize_*.pir"))
MODELS = HERE.parent / "models"
NAMES = sorted(p.name for p in all_patterns())
#: Functions whose inputs random numbers can not make valid (a shape given as an input).
NOT_RUNNABLE = {("canonicalize_shape.pir", "reshape_two_unknown")}
#: Functions whose rewrite is exact arithmetic but not bit-exact: the product of one row is
#: summed by numpy's vector kernel instead of its matrix kernel, or a scale multiplies the
#: other factor (1 ulp apart).
INEXACT = {("canonicalize_broadcast.pir", "dot_of_broadcast_lhs"),
           ("canonicalize_broadcast.pir", "dot_of_broadcast_rhs"),
           ("canonicalize_broadcast.pir", "dot_of_scaled"),  # x * (v * w), not (x * v) * w
           ("canonicalize_broadcast.pir", "dot_of_scaled_used_twice"),
           ("canonicalize_linear.pir", "add_of_products_rhs"),  # (a + b) . w
           ("canonicalize_linear.pir", "add_of_products_lhs"),
           ("canonicalize_factor.pir", "scale_out_of_product"),  # v * (s * z)
           ("canonicalize_factor.pir", "factor_across_two_sums")}  # k * (x + y)


def corpus() -> list[tuple[str, object]]:
    return [(p.name, parse_module(p.read_text(), p.name)) for p in CORPUS]


def random_inputs(fn: FuncOp, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs for ``fn``: symbols are 2, unknown dims 1 (so that they may broadcast)."""
    feeds = {}
    for arg in fn.args:
        t = arg.type
        shape = tuple(2 if isinstance(d, str) else 1 if d is None else d for d in t.shape)
        dt = t.dtype.numpy
        if t.dtype == DType.BOOL:
            feeds[arg.name] = rng.random(shape) < 0.5
        elif t.dtype.is_int:
            low = 0 if np.issubdtype(dt, np.unsignedinteger) else -4
            feeds[arg.name] = rng.integers(low, 5, shape).astype(dt)
        else:
            feeds[arg.name] = rng.standard_normal(shape).astype(dt)
    return feeds


def canonicalize(module, disable=()) -> dict[str, int]:
    """Run the pass with stats; return how often each pattern fired."""
    err = io.StringIO()
    with redirect_stderr(err):
        Canonicalize(disable=tuple(disable), stats=True).apply(module)
    return {m[1]: int(m[2]) for m in re.finditer(r"canonicalize: (\S+): (\d+)", err.getvalue())}


def test_pattern_names_are_kebab_case_and_roots_are_ops():
    load_dialects()
    assert len(NAMES) == len(set(NAMES))
    for p in all_patterns():
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", p.name), p.name
        roots = [p.root] if p.root else list(p.by_root)
        assert all(r in OPS for r in roots), (p.name, roots)
        assert p.name.startswith("prim-") == all(r.startswith("prim.") for r in roots), p.name


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_every_function_computes_the_same_after_canonicalize(path):
    before = parse_module(path.read_text(), path.name)
    after = parse_module(print_module(before))
    canonicalize(after)
    after = parse_module(roundtrip(after))
    rng = np.random.default_rng(0)
    for fn in before.funcs:
        if (path.name, fn.sym_name) in NOT_RUNNABLE:
            continue
        feeds = random_inputs(fn, rng)
        want = run_function(before, feeds, fn.sym_name)
        got = run_function(after, feeds, fn.sym_name)
        assert list(got) == list(want), fn.sym_name  # the same outputs, by the same names
        for name in want:
            assert got[name].dtype == want[name].dtype, (fn.sym_name, name)
            if (path.name, fn.sym_name) in INEXACT:
                np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6,
                                           err_msg=f"@{fn.sym_name} {name}")
            else:
                np.testing.assert_array_equal(got[name], want[name],
                                              err_msg=f"@{fn.sym_name} {name}")


def test_every_pattern_fires_in_the_filecheck_tests_and_disable_switches_it_off():
    fired = {}
    for _, m in corpus():
        for name, n in canonicalize(m).items():
            fired[name] = fired.get(name, 0) + n
    assert sorted(fired) == NAMES, f"patterns without a test: {sorted(set(NAMES) - set(fired))}"
    for name in NAMES:
        for _, m in corpus():
            assert name not in canonicalize(m, disable=[name]), name


def test_disable_keeps_the_op_in_the_output():
    text = (HERE / "filecheck" / "canonicalize_algebra_nn.pir").read_text()
    on, off = parse_module(text), parse_module(text)
    canonicalize(on)
    canonicalize(off, disable=["mul-by-one", "one-mul"])
    assert "nn.mul(%x, %c)" not in print_module(on)
    assert "%y = nn.mul(%x, %c)" in print_module(off)
    assert "%y = nn.mul(%c, %x)" in print_module(off)


def test_an_unknown_pattern_is_an_error_when_the_pipeline_is_parsed():
    with pytest.raises(PirError) as e:
        parse_pipeline("canonicalize{disable=mul-by-one,mul-by-on}")
    assert e.value.message == (
        "pass 'canonicalize' option 'disable': unknown pattern 'mul-by-on' "
        f"(patterns: {', '.join(NAMES)})")


FLOAT_EDGE = """
module {
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %z = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %m = nn.mul(%x, %z) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %s = nn.sub(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return(%m, %s) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }
}
"""


def test_float_nan_and_inf_survive_what_is_only_an_integer_identity():
    m = parse_module(FLOAT_EDGE)
    assert canonicalize(m) == {}
    out = run_function(m, {"x": np.array([np.nan, np.inf, -np.inf, 2.0], np.float32)})
    assert np.isnan(out["m"][:3]).all() and np.isnan(out["s"][:3]).all()


@pytest.mark.parametrize("model", ["gpt2", "llama", "t5", "whisper"])
def test_models_compute_the_same_after_canonicalize(model):
    module = import_model(str(MODELS / f"{model}.onnx"))
    feeds = dict(np.load(MODELS / f"{model}.inputs.npz"))
    before = len(print_module(module, resources=False).splitlines())
    out = check_pipeline(module, feeds, "canonicalize")
    assert len(print_module(out, resources=False).splitlines()) < before


# -- exact conversions -----------------------------------------------------------------------

NUMERIC = [DType.BOOL, DType.I8, DType.I16, DType.I32, DType.U8, DType.U16, DType.F16,
           DType.BF16, DType.F32, DType.F64]


def samples(dtype: DType) -> np.ndarray:
    """Values of ``dtype`` that test an exact conversion: every one for types of up to 16
    bits, the extremes and their neighbours otherwise."""
    dt = dtype.numpy
    if dtype == DType.BOOL:
        return np.array([False, True])
    if dtype.is_int:
        info = np.iinfo(dt)
        if info.bits <= 16:
            return np.arange(info.min, info.max + 1).astype(dt)
        return np.array([info.min, info.min + 1, -(2**24) - 1, -1, 0, 1, 2**24 + 1, info.max - 1,
                         info.max], dtype=np.int64).astype(dt)
    if dtype.itemsize == 2:  # f16 and bf16: every bit pattern that is a finite number
        values = np.arange(2**16, dtype=np.uint16).view(dt)
        return values[np.isfinite(values.astype(np.float32))]
    info = np.finfo(dt)
    return np.array([info.min, -1.5, -info.tiny, 0.0, info.smallest_subnormal, 1 + info.eps,
                     info.max], dtype=dt)


def keeps_values(src: DType, mid: DType) -> bool:
    """Every sample of ``src`` has the same value after a cast to ``mid`` (compared in f64,
    which holds every value of these types exactly)."""
    x = samples(src)
    with np.errstate(all="ignore"):
        through = x.astype(mid.numpy).astype(np.float64)
    return bool(np.array_equal(through, x.astype(np.float64)))


@pytest.mark.parametrize("src, mid", list(itertools.product(NUMERIC, NUMERIC)),
                         ids=lambda d: d.value)
def test_exact_in_matches_numpy(src, mid):
    """Where the rule says exact, every sample keeps its value; where it says not, some
    sample does not (so the table is not needlessly strict either)."""
    assert exact_in(src, mid) == keeps_values(src, mid)


def test_a_rebuilt_op_whose_type_rule_disagrees_is_not_used():
    m = parse_module("""module {
  func.func @main(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>) {
    %t = nn.transpose(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    func.return(%t) : (tensor<3x2xf32>) -> ()
  }
}
""")
    wrong = drr("wrong", Op("nn.transpose", Var("x"), perm=Attr("p")),
                rebuild("nn.transpose", "x", perm=(0, 1)))  # would infer 2x3, not 3x2
    assert apply_patterns(m, [wrong]) == {}
    assert [op.name for op in m.funcs[0].entry.ops] == ["nn.transpose", "func.return"]

"""The default pipeline preserves what programs compute.

(a) Every model of tests/models gives the same outputs through the reference runtime before
and after ``DEFAULT_PIPELINE``, on its saved inputs and on inputs of another size (every
symbolic dim one larger), so the optimized program must hold for all sizes, not the saved
ones only.
(b) A hypothesis property test builds random valid graphs from nn and prim ops (elementwise,
broadcasting, comparisons and where, reductions, reshapes, slices, transposes, concat,
matmul and gemm, softmax, layer and RMS norm ...) over a few inputs with random static
shapes and sometimes a symbolic batch dim, and checks the same at two batch sizes.
(c) The ONNX node-suite cases of the composite ops that decompose rewrites (softmax, layer
norm, gelu, matmul, gemm, reductions, attention ...) that pass through ``import | run``
(tests/onnx_suite/passing.txt) pass through ``import | optimize | run`` too; ``make
onnx-suite-optimized`` runs the whole suite so.

Tolerance of (a) and (b), float32: ``|after - before| <= 1e-5 * |before| + 1e-5 *
max|before|``: relative 1e-5, with an absolute floor of 1e-5 times the output's largest
magnitude, because the relative error of an element that is almost zero (a sum that cancels)
says nothing about the rewrite.  Integer and boolean outputs must be equal, and output names
must stay.  (c) compares with each case's expected outputs at the case's own tolerances, as
ONNX's backend runner does.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from pir.frontends.onnx.importer import import_model
from pir.ir.builder import Builder
from pir.ir.core import OPS, Value
from pir.ir.dialects import load_dialects
from pir.ir.dialects.builtin import ModuleOp, make_constant
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.ir.types import DType, TensorType
from pir.passes.manager import PassManager
from pir.passes.pipeline import DEFAULT_PIPELINE, parse_pipeline
from pir.runtimes.reference import run_function

load_dialects()
MODELS_DIR = pathlib.Path(__file__).resolve().parents[1] / "models"
MODELS = sorted(p.stem for p in MODELS_DIR.glob("*.onnx"))
RTOL = 1e-5


def assert_same(before: dict[str, np.ndarray], after: dict[str, np.ndarray], what: str) -> None:
    """Outputs equal one by one (in order), then under the same names: the names of the
    returned values are the function's output names, which ``pir run`` writes."""
    assert len(after) == len(before), f"{what}: {len(after)} outputs, was {len(before)}"
    for (name, ref), out in zip(before.items(), after.values()):
        assert out.dtype == ref.dtype and out.shape == ref.shape, \
            f"{what}: {name} is {out.dtype}{list(out.shape)}, was {ref.dtype}{list(ref.shape)}"
        if ref.dtype.kind in "fc":
            floor = RTOL * float(np.abs(ref).max()) if ref.size else 0.0
            np.testing.assert_allclose(out, ref, rtol=RTOL, atol=floor, err_msg=f"{what}: {name}")
        else:
            np.testing.assert_array_equal(out, ref, err_msg=f"{what}: {name}")
    assert list(after) == list(before), f"{what}: the output names changed"


def optimized(module: ModuleOp) -> ModuleOp:
    """The default pipeline on a copy (verifying after every pass), read back from text."""
    copy = parse_module(print_module(module), "<before>")
    PassManager(parse_pipeline(DEFAULT_PIPELINE)).run(copy)
    return parse_module(print_module(copy), "<after>")


# -- (a) the test models ----------------------------------------------------------------------


def resized_feeds(fn: FuncOp, saved: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Inputs where every symbolic dim is one larger than in ``saved``: float inputs from a
    seeded N(0, 1), masks all ones, other integers (token ids) drawn below the largest saved
    value plus one, so they stay valid ids."""
    sizes: dict[str, int] = {}
    for a in fn.args:
        for d, n in zip(a.type.shape, saved[a.name].shape):
            if isinstance(d, str):
                sizes[d] = n + 1
    rng = np.random.default_rng(0)
    out = {}
    for a in fn.args:
        ref = saved[a.name]
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in a.type.shape)
        if ref.dtype.kind == "f":
            out[a.name] = rng.standard_normal(shape).astype(ref.dtype)
        elif "mask" in a.name:
            out[a.name] = np.ones(shape, ref.dtype)
        else:
            out[a.name] = rng.integers(0, int(ref.max()) + 1, size=shape).astype(ref.dtype)
    return out


@pytest.fixture(scope="module", params=MODELS)
def model_pair(request):
    name = request.param
    module = import_model(str(MODELS_DIR / f"{name}.onnx"))
    return name, module, optimized(module)


def test_models_keep_their_outputs(model_pair):
    name, before, after = model_pair
    feeds = dict(np.load(MODELS_DIR / f"{name}.inputs.npz"))
    assert_same(run_function(before, feeds), run_function(after, feeds), name)


def test_models_keep_their_outputs_at_another_size(model_pair):
    name, before, after = model_pair
    saved = dict(np.load(MODELS_DIR / f"{name}.inputs.npz"))
    feeds = resized_feeds(before.funcs[0], saved)
    assert_same(run_function(before, feeds), run_function(after, feeds), f"{name} resized")


# -- (c) node-suite cases through the default pipeline ----------------------------------------

SUITE_PASSING = pathlib.Path(__file__).resolve().parents[1] / "onnx_suite" / "passing.txt"
COMPOSITE_CASES = re.compile(
    r"test_(softmax|log_softmax|layer_normalization|gelu|mish|softplus|hardswish|hardsigmoid"
    r"|matmul|gemm|reduce_(mean|sum|max|min|l1|l2|log_sum)|concat|transpose|where|clip|einsum"
    r"|attention_4d|batchnorm|instancenorm|group_normalization|rms_normalization)")


def test_node_suite_composites_pass_through_the_default_pipeline():
    from pir.testing.onnx_suite import load_cases, run_all

    passing = set(SUITE_PASSING.read_text().split())
    cases = [c for c in load_cases() if c.name in passing and COMPOSITE_CASES.search(c.name)]
    assert len(cases) > 300
    failed = [f"{n}: {why}" for n, ok, why in run_all(cases, jobs=1, pipeline=DEFAULT_PIPELINE)
              if not ok]
    assert not failed, f"{len(failed)} cases fail after the pipeline:\n" + "\n".join(failed)


# -- (b) random graphs ------------------------------------------------------------------------

F32 = DType.F32
UNARY_NN = ["nn.relu", "nn.tanh", "nn.sigmoid", "nn.neg", "nn.abs", "nn.erf", "nn.softplus",
            "nn.softsign", "nn.gelu", "nn.mish", "nn.hard_sigmoid", "nn.hard_swish", "nn.elu",
            "nn.selu", "nn.leaky_relu", "nn.swish", "nn.sin", "nn.cos", "nn.atan"]
UNARY_PRIM = ["prim.tanh", "prim.neg", "prim.abs", "prim.logistic", "prim.sin", "prim.erf"]
#: unary ops that need a positive operand: applied to 1 + |x|
POSITIVE_NN = ["nn.sqrt", "nn.log", "nn.reciprocal"]
BINARY_NN = ["nn.add", "nn.sub", "nn.mul", "nn.max", "nn.min", "nn.div"]
BINARY_PRIM = ["prim.add", "prim.sub", "prim.mul", "prim.max", "prim.min"]
REDUCE_NN = ["nn.reduce_sum", "nn.reduce_mean", "nn.reduce_max", "nn.reduce_min",
             "nn.reduce_sum_square", "nn.reduce_l2", "nn.reduce_log_sum_exp"]
REDUCE_PRIM = ["prim.reduce_sum", "prim.reduce_max"]


class Graph:
    """A function under construction: a pool of values with their concrete shapes (the
    symbolic batch dim ``B`` stands for ``batch`` elements)."""

    def __init__(self, draw, batch: int):
        self.draw = draw
        self.batch = batch
        self.module = ModuleOp.create("random")
        self.inputs: list[tuple[str, tuple]] = []
        self.pool: list[Value] = []
        self.fn: FuncOp | None = None
        self.b: Builder | None = None

    # -- building blocks ------------------------------------------------------------------

    def start(self, input_types: list[TensorType]) -> None:
        names = [f"x{i}" for i in range(len(input_types))]
        self.fn = FuncOp.create("main", input_types, [], names)
        self.module.body.block.append(self.fn)
        self.b = Builder(self.fn.entry)
        self.pool = list(self.fn.args)

    def const(self, array: np.ndarray) -> Value:
        return self.b.insert(make_constant(self.module, array)).results[0]

    def weights(self, shape: tuple[int, ...]) -> Value:
        seed = self.draw(st.integers(0, 2**16))
        return self.const(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32))

    def ints(self, values) -> Value:
        return self.const(np.asarray(values, np.int64))

    def op(self, name: str, *operands, **attrs) -> Value:
        cls = OPS[name]
        if cls.signature.operands[0].variadic:  # nn.max, nn.concat ... take a list
            operands = (list(operands),)
        return self.b.value(cls, *operands, **attrs)

    def pick(self, values: list[Value] | None = None) -> Value:
        values = values if values is not None else self.pool
        return values[self.draw(st.integers(0, len(values) - 1))]

    def shape(self, v: Value) -> tuple:
        return v.type.shape

    # -- one random op ----------------------------------------------------------------------

    def step(self) -> None:
        kind = self.draw(st.sampled_from(sorted(STEPS)))
        v = STEPS[kind](self, self.pick())
        if v is not None:
            self.pool.append(v)


def _unary(g: Graph, x: Value) -> Value:
    return g.op(g.draw(st.sampled_from(UNARY_NN)), x)


def _unary_prim(g: Graph, x: Value) -> Value:
    return g.op(g.draw(st.sampled_from(UNARY_PRIM)), x)


def _positive(g: Graph, x: Value) -> Value:
    """sqrt/log/reciprocal of 1 + |x|, and a division by it."""
    safe = g.op("nn.add", g.op("nn.abs", x), g.const(np.float32(1)))
    name = g.draw(st.sampled_from(POSITIVE_NN + ["div"]))
    if name == "div":
        return g.op("nn.div", g.pick([v for v in g.pool if g.broadcasts(v, safe)]), safe)
    return g.op(name, safe)


def _partner(g: Graph, x: Value) -> Value:
    """A value that broadcasts against x: a pool value that does, or new weights with x's
    trailing dims, some of them 1 (symbolic dims always 1)."""
    fits = [v for v in g.pool if g.broadcasts(x, v)]
    if fits and g.draw(st.booleans()):
        return g.pick(fits)
    shape = g.shape(x)
    keep = g.draw(st.integers(0, len(shape)))
    dims = [d if isinstance(d, int) and g.draw(st.booleans()) else 1
            for d in shape[len(shape) - keep:]]
    return g.weights(tuple(dims))


def _binary(g: Graph, x: Value) -> Value:
    name = g.draw(st.sampled_from(BINARY_NN))
    y = _partner(g, x)
    if name == "nn.div":  # divide by something away from zero
        y = g.op("nn.add", g.op("nn.abs", y), g.const(np.float32(0.5)))
    a, b = (x, y) if g.draw(st.booleans()) else (y, x)
    return g.op(name, a, b)


def _binary_prim(g: Graph, x: Value) -> Value:
    same = [v for v in g.pool if v.type == x.type]
    return g.op(g.draw(st.sampled_from(BINARY_PRIM)), x, g.pick(same))


def _axes(g: Graph, rank: int) -> list[int]:
    return g.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))


def _reduce(g: Graph, x: Value) -> Value | None:
    rank = len(g.shape(x))
    if rank == 0:
        return None
    axes = _axes(g, rank)
    keepdims = g.draw(st.booleans())
    if g.draw(st.booleans()):
        axes_v = g.ints([a - rank if g.draw(st.booleans()) else a for a in axes])
        return g.op(g.draw(st.sampled_from(REDUCE_NN)), x, axes_v, keepdims=keepdims)
    return g.op(g.draw(st.sampled_from(REDUCE_PRIM)), x, axes=tuple(sorted(axes)),
                keepdims=keepdims)


def _reshape(g: Graph, x: Value) -> Value | None:
    """Flatten all dims after the first (0 copies it, so a symbolic batch stays), or all of
    them when static; or insert a unit dim."""
    shape = g.shape(x)
    if g.draw(st.booleans()):
        return g.op("nn.unsqueeze", x, g.ints([g.draw(st.integers(0, len(shape)))]))
    if len(shape) >= 2:
        return g.op("nn.reshape", x, g.ints([0, -1]))
    if shape and all(isinstance(d, int) for d in shape):
        return g.op("nn.reshape", x, g.ints([-1]))
    return None


def _transpose(g: Graph, x: Value) -> Value | None:
    rank = len(g.shape(x))
    if rank < 2:
        return None
    perm = tuple(g.draw(st.permutations(range(rank))))
    if g.draw(st.booleans()):
        return g.op("nn.transpose", x, perm=perm)
    return g.op("prim.transpose", x, permutation=perm)


def _matmul(g: Graph, x: Value) -> Value | None:
    shape = g.shape(x)
    if not shape or not isinstance(shape[-1], int):
        return None
    n = g.draw(st.integers(1, 4))
    w = g.weights((shape[-1], n))
    if len(shape) == 2 and g.draw(st.booleans()):
        return g.op("nn.gemm", x, w, g.weights((n,)), alpha=0.5, beta=2.0)
    return g.op("nn.matmul", x, w)


def _softmax(g: Graph, x: Value) -> Value | None:
    rank = len(g.shape(x))
    if rank == 0:
        return None
    name = g.draw(st.sampled_from(["nn.softmax", "nn.log_softmax"]))
    return g.op(name, x, axis=g.draw(st.integers(-rank, rank - 1)))


def _layer_norm(g: Graph, x: Value) -> Value | None:
    """Normalise over trailing static dims, with scale and bias of their shape."""
    shape = g.shape(x)
    static = 0
    while static < len(shape) and isinstance(shape[len(shape) - 1 - static], int):
        static += 1
    if static == 0:
        return None
    k = g.draw(st.integers(1, static))
    norm = tuple(shape[len(shape) - k:])
    bias = g.weights(norm) if g.draw(st.booleans()) else None
    return g.b.create(OPS["nn.layer_norm"], x, g.weights(norm), bias, axis=-k,
                      epsilon=1e-5, result_types=[x.type]).results[0]


def _concat(g: Graph, x: Value) -> Value | None:
    rank = len(g.shape(x))
    if rank == 0:
        return None
    same = [v for v in g.pool if v.type == x.type]
    return g.op("nn.concat", x, g.pick(same), axis=g.draw(st.integers(-rank, rank - 1)))


def _where(g: Graph, x: Value) -> Value:
    """where(x > y, x, z) with y and z broadcasting against x."""
    cond = g.op(g.draw(st.sampled_from(["nn.greater", "nn.less_or_equal"])), x, _partner(g, x))
    return g.op("nn.where", cond, x, _partner(g, x))


def _clip(g: Graph, x: Value) -> Value:
    low = g.draw(st.floats(-1, 0, width=32))
    return g.op("nn.clip", x, g.const(np.float32(low)), g.const(np.float32(low + 1)))


def _rms_norm(g: Graph, x: Value) -> Value | None:
    shape = g.shape(x)
    if not shape or not isinstance(shape[-1], int):
        return None
    return g.op("nn.rms_norm", x, g.weights(shape[-1:]), axis=-1, epsilon=1e-5)


def _slice(g: Graph, x: Value) -> Value | None:
    """A strided slice of a static axis (steps may be negative)."""
    shape = g.shape(x)
    static = [i for i, d in enumerate(shape) if isinstance(d, int) and d > 1]
    if not static:
        return None
    axis = g.draw(st.sampled_from(static))
    n = shape[axis]
    step = g.draw(st.sampled_from([1, 2, -1]))
    start, end = (0, n) if step > 0 else (n - 1, -n - 1)
    start += g.draw(st.integers(0, 1)) * (1 if step > 0 else -1)
    return g.op("nn.slice", x, g.ints([start]), g.ints([end]), g.ints([axis]), g.ints([step]))


STEPS = {
    "unary": _unary, "unary_prim": _unary_prim, "positive": _positive, "binary": _binary,
    "binary_prim": _binary_prim, "reduce": _reduce, "reshape": _reshape,
    "transpose": _transpose, "matmul": _matmul, "softmax": _softmax,
    "layer_norm": _layer_norm, "concat": _concat, "where": _where, "clip": _clip,
    "rms_norm": _rms_norm, "slice": _slice,
}


def _broadcasts(self: Graph, a: Value, b: Value) -> bool:
    """numpy broadcasting, where a symbolic dim only matches itself or 1."""
    for x, y in zip(reversed(self.shape(a)), reversed(self.shape(b))):
        if not (x == y or x == 1 or y == 1):
            return False
    return True


Graph.broadcasts = _broadcasts


@st.composite
def random_programs(draw):
    """(module, feeds at batch size n, feeds at batch size n + 1)."""
    symbolic = draw(st.booleans())
    batch = draw(st.integers(1, 3))
    g = Graph(draw, batch)
    types = []
    for _ in range(draw(st.integers(1, 3))):
        dims = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
        if symbolic and dims and draw(st.booleans()):
            dims[0] = "B"
        types.append(TensorType(F32, tuple(dims)))
    g.start(types)
    for _ in range(draw(st.integers(2, 10))):
        g.step()
    n_out = draw(st.integers(1, min(3, len(g.pool))))
    outs = g.pool[-n_out:]
    g.b.insert(ReturnOp.build(outs))
    for i, v in enumerate(outs):
        if v.name is None and v not in g.fn.args:
            v.name = f"out{i}"
    g.fn.attributes["function_type"] = g.fn.function_type.__class__(
        tuple(types), tuple(v.type for v in outs))
    seed = draw(st.integers(0, 2**16))

    def feeds(batch: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {a.name: rng.uniform(-2, 2, tuple(batch if d == "B" else d for d in a.type.shape))
                .astype(np.float32) for a in g.fn.args}

    return g.module, feeds(batch), feeds(batch + 1)


@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(random_programs())
def test_random_graphs_keep_their_outputs(program):
    module, feeds, feeds_larger = program
    note(print_module(module))
    after = optimized(module)
    note(print_module(after, resources=False))
    assert_same(run_function(module, feeds), run_function(after, feeds), "random graph")
    assert_same(run_function(module, feeds_larger), run_function(after, feeds_larger),
                "random graph, batch + 1")

"""The transformation as a library: signatures and names, seeds, orders, cleanup, errors."""

from __future__ import annotations

import numpy as np
import pytest

from ad_harness import program
from pir.errors import PirError
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.ir.types import DType, TensorType
from pir.ir.verifier import verify_module
from pir.passes.autodiff import differentiate
from pir.passes.autodiff import registry
from pir.runtimes.reference import run_function
from pir.runtimes.reference.interpreter import output_names

RNG = np.random.default_rng(11)
X, W = RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (4, 2))


def mlp():
    """y0 = sum(tanh(x @ w), axis 1), y1 = exp(x)."""
    def body(p):
        h = p.op("dot_general", p["x"], p["w"], lhs_contracting_dimensions=[1],
                 rhs_contracting_dimensions=[0])
        return [p.op("reduce_sum", p.op("tanh", h), axes=[1]), p.op("exp", p["x"])]
    return program({"x": X, "w": W}, body)


def names(fn):
    return [a.name for a in fn.args], output_names(fn)


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def y0_sum(w):
    return np.sum(np.tanh(X @ w))


def test_reverse_signature_and_value():
    m = mlp()
    fn = differentiate(m, ["w"], of=["y0"])
    assert fn.sym_name == "main_grad"
    assert names(fn) == (["x", "w", "cot_y0"], ["grad_w"])
    got = run_function(m, {"x": X, "w": W, "cot_y0": np.ones(3)}, func="main_grad")["grad_w"]
    np.testing.assert_allclose(got, numeric_grad(y0_sum, W), rtol=1e-7, atol=1e-9)


def test_forward_signature_and_keep_primal():
    m = mlp()
    fn = differentiate(m, ["x", "w"], mode="fwd", keep_primal=True, name="jvp")
    assert names(fn) == (["x", "w", "tangent_x", "tangent_w"],
                         ["y0", "y1", "tangent_y0", "tangent_y1"])
    tx = RNG.standard_normal(X.shape)
    out = run_function(m, {"x": X, "w": W, "tangent_x": tx, "tangent_w": np.zeros_like(W)},
                       func="jvp")
    np.testing.assert_allclose(out["tangent_y1"], np.exp(X) * tx)
    np.testing.assert_allclose(out["y1"], np.exp(X))


def test_seed_ones_is_the_gradient_of_the_sum():
    m = mlp()
    differentiate(m, ["w"], of=["y0"], seed="ones", name="g1")
    differentiate(m, ["w"], of=["y0"], name="g2")
    assert names(m.lookup("g1")) == (["x", "w"], ["grad_w"])
    a = run_function(m, {"x": X, "w": W}, func="g1")["grad_w"]
    b = run_function(m, {"x": X, "w": W, "cot_y0": np.ones(3)}, func="g2")["grad_w"]
    np.testing.assert_allclose(a, b)


def test_order_two_is_the_transformation_applied_twice():
    m = mlp()
    differentiate(m, ["w"], of=["y0"], order=2, name="h")
    assert names(m.lookup("h")) == (["x", "w", "cot_y0", "cot_grad_w"], ["grad2_w"])
    differentiate(m, ["w"], of=["y0"], name="g")
    differentiate(m, ["w"], func="g", name="gg")
    assert names(m.lookup("gg")) == (["x", "w", "cot_y0", "cot_grad_w"], ["grad_w"])
    feeds = {"x": X, "w": W, "cot_y0": RNG.standard_normal(3),
             "cot_grad_w": RNG.standard_normal(W.shape)}
    np.testing.assert_allclose(run_function(m, feeds, func="h")["grad2_w"],
                               run_function(m, feeds, func="gg")["grad_w"], rtol=1e-12)


def test_hessian_vector_products_agree_across_modes():
    """rev over rev with a seed input, fwd over rev, and the Hessian by differences."""
    m = mlp()
    differentiate(m, ["w"], of=["y0"], order=2, name="rr")
    differentiate(m, ["w"], of=["y0"], seed="ones", name="g")
    differentiate(m, ["w"], func="g", mode="fwd", name="fr")
    assert names(m.lookup("fr")) == (["x", "w", "tangent_w"], ["tangent_grad_w"])
    v = RNG.standard_normal(W.shape)
    rr = run_function(m, {"x": X, "w": W, "cot_y0": np.ones(3), "cot_grad_w": v},
                      func="rr")["grad2_w"]
    fr = run_function(m, {"x": X, "w": W, "tangent_w": v}, func="fr")["tangent_grad_w"]
    grad = lambda w: run_function(m, {"x": X, "w": w}, func="g")["grad_w"]  # noqa: E731
    h = 1e-6
    fd = (grad(W + h * v) - grad(W - h * v)) / (2 * h)
    np.testing.assert_allclose(rr, fr, rtol=1e-10)
    np.testing.assert_allclose(rr, fd, rtol=1e-6, atol=1e-8)


def test_forward_order_two_names_and_keeps_every_order():
    m = mlp()
    fn = differentiate(m, ["x"], of=["y1"], mode="fwd", order=2, keep_primal=True)
    assert names(fn) == (["x", "w", "tangent_x", "tangent2_x"],
                         ["y0", "y1", "tangent_y1", "tangent2_y1"])
    t1, t2 = RNG.standard_normal(X.shape), RNG.standard_normal(X.shape)
    out = run_function(m, {"x": X, "w": W, "tangent_x": t1, "tangent2_x": t2},
                       func="main_grad")
    np.testing.assert_allclose(out["tangent2_y1"], np.exp(X) * t1 * t2, rtol=1e-12)


def test_the_derivative_keeps_only_the_work_it_needs():
    m = mlp()
    fn = differentiate(m, ["x"], of=["y1"], seed="ones")
    ops = [op.name for op in fn.walk() if op is not fn]
    # d/dx sum(exp(x)) = exp(x): the matmul and tanh of the other output are gone
    assert "prim.dot_general" not in ops and "prim.tanh" not in ops, ops
    assert ops.count("prim.exp") == 1, ops


def test_an_output_that_no_wrt_input_reaches_has_a_zero_derivative():
    m = mlp()
    fn = differentiate(m, ["w"], of=["y1"])
    out = run_function(m, {"x": X, "w": W, "cot_y1": np.ones(X.shape)}, func="main_grad")
    np.testing.assert_array_equal(out["grad_w"], np.zeros_like(W))
    assert [op.name for op in fn.walk()].count("prim.exp") == 0


def test_the_input_function_is_left_as_it_was_and_the_result_round_trips():
    m = mlp()
    before = print_module(m)
    differentiate(m, ["x", "w"], order=2)
    text = print_module(m)
    assert text.startswith(before.split("\n}\n")[0])
    verify_module(m)
    again = parse_module(text)
    assert print_module(again) == text


def test_gradient_is_its_own_output_even_when_it_is_a_seed():
    """f(x) = x + w: both gradients are the seed itself; each output has its own value."""
    m = program({"x": X, "w": X + 1}, lambda p: p.op("add", p["x"], p["w"]))
    fn = differentiate(m, ["x", "w"])
    assert names(fn) == (["x", "w", "cot_y0"], ["grad_x", "grad_w"])
    cot = RNG.standard_normal(X.shape)
    out = run_function(m, {"x": X, "w": X + 1, "cot_y0": cot}, func="main_grad")
    np.testing.assert_array_equal(out["grad_x"], cot)
    np.testing.assert_array_equal(out["grad_w"], cot)


def test_symbolic_batch_dims():
    text = """module {
  func.func @main(%x: tensor<Bx3xf64>, %w: tensor<3xf64>) -> (tensor<Bx3xf64>) {
    %wb = prim.broadcast_in_dim(%w) {broadcast_dimensions = [1]} : (tensor<3xf64>) -> tensor<Bx3xf64>
    %y = prim.mul(%x, %wb) : (tensor<Bx3xf64>, tensor<Bx3xf64>) -> tensor<Bx3xf64>
    func.return(%y) : (tensor<Bx3xf64>) -> ()
  }
}
"""
    m = parse_module(text)
    fn = differentiate(m, ["w"], seed="ones")
    assert fn.function_type.inputs[0] == TensorType(DType.F64, ("B", 3))
    x = RNG.standard_normal((5, 3))
    got = run_function(m, {"x": x, "w": np.ones(3)}, func="main_grad")["grad_w"]
    np.testing.assert_allclose(got, x.sum(axis=0))


def test_integer_inputs_pass_through():
    m = program({"x": X, "i": np.array([2, 0], np.int64)},
                lambda p: p.op("sin", p.op("gather", p["x"], p["i"], axis=0)))
    fn = differentiate(m, ["x"], seed="ones")
    assert names(fn)[0] == ["x", "i"]
    got = run_function(m, {"x": X, "i": np.array([2, 2], np.int64)}, func="main_grad")
    want = np.zeros_like(X)
    want[2] = 2 * np.cos(X[2])
    np.testing.assert_allclose(got["grad_x"], want)


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"wrt": ["z"]}, "--wrt: @main has no input or constant named 'z' (inputs: x, w; "
                     "constants: none)"),
    ({"wrt": []}, "--wrt: name at least one input"),
    ({"wrt": ["x", "x"]}, "--wrt: x, x names a value twice"),
    ({"wrt": ["x"], "of": ["nope"]}, "--of: @main has no output named 'nope' (outputs: y0, y1)"),
    ({"wrt": ["x"], "func": "f"}, "the module has no function @f (functions: @main)"),
    ({"wrt": ["x"], "name": "main"}, "the module already has a function @main"),
    ({"wrt": ["x"], "mode": "sideways"}, "unknown mode 'sideways' (modes: rev, fwd)"),
    ({"wrt": ["x"], "order": 0}, "--order must be at least 1, got 0"),
])
def test_usage_errors(kwargs, message):
    wrt = kwargs.pop("wrt")
    with pytest.raises(PirError) as e:
        differentiate(mlp(), wrt, **kwargs)
    assert message in e.value.message


def test_a_non_float_input_or_output_cannot_be_differentiated():
    m = program({"x": X, "i": np.array([2, 0], np.int64)},
                lambda p: [p.op("gather", p["x"], p["i"], axis=0), p.op("neg", p["i"])])
    with pytest.raises(PirError, match=r"--wrt: 'i' is tensor<2xi64>, not a float tensor"):
        differentiate(m, ["i"])
    with pytest.raises(PirError, match=r"--of: output 'y1' is tensor<2xi64>, not a float"):
        differentiate(m, ["x"], of=["y1"])
    fn = differentiate(m, ["x"])  # by default only the float outputs
    assert names(fn)[0] == ["x", "i", "cot_y0"]


@pytest.mark.parametrize("mode, table", [("rev", "vjp"), ("fwd", "jvp")])
def test_a_missing_rule_names_the_op_its_location_and_the_table(monkeypatch, mode, table):
    monkeypatch.delitem(registry.VJP if table == "vjp" else registry.JVP, "prim.tanh")
    m = mlp()
    m.lookup("main").entry.ops[1].loc = "/act/Tanh"
    with pytest.raises(PirError) as e:
        differentiate(m, ["w"], mode=mode)
    assert e.value.message.startswith(
        f'prim.tanh "/act/Tanh": no {table} rule for prim.tanh (the \'{table}\' table of '
        "pir/passes/autodiff has none)")
    assert m.lookup("main_grad") is None  # nothing half-built joins the module


def test_an_nn_op_that_decompose_keeps_is_a_missing_rule_with_the_reason():
    text = """module {
  func.func @main(%x: tensor<3x3xf64>) -> (tensor<f64>) {
    %y = nn.det(%x) : (tensor<3x3xf64>) -> tensor<f64> loc("/det")
    func.return(%y) : (tensor<f64>) -> ()
  }
}
"""
    with pytest.raises(PirError) as e:
        differentiate(parse_module(text, "det.pir"), ["x"])
    assert str(e.value).startswith(
        'det.pir:3:10: nn.det "/det": no vjp rule for nn.det (the \'vjp\' table of '
        "pir/passes/autodiff has none; it is an nn op that decompose keeps: a determinant "
        "needs a pivoting LU factorisation")


def test_second_order_gives_the_laplacian_of_independent_points():
    """u(x, y) = sin(x) sin(y) on a batch of points: --order 2 --seed ones gives u_xx (and
    u_yy) at every point, so their sum is the Laplacian -2 sin(x) sin(y)."""
    x, y = RNG.uniform(-2, 2, 16), RNG.uniform(-2, 2, 16)
    m = program({"x": x, "y": y},
                lambda p: p.op("mul", p.op("sin", p["x"]), p.op("sin", p["y"])))
    differentiate(m, ["x"], order=2, seed="ones", name="uxx")
    differentiate(m, ["y"], order=2, seed="ones", name="uyy")
    lap = (run_function(m, {"x": x, "y": y}, func="uxx")["grad2_x"]
           + run_function(m, {"x": x, "y": y}, func="uyy")["grad2_y"])
    np.testing.assert_allclose(lap, -2 * np.sin(x) * np.sin(y), rtol=1e-12, atol=1e-12)

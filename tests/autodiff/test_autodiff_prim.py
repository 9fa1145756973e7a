"""Every prim op's VJP and JVP rules, orders 1 and 2, against central finite differences.

``CASES`` holds, per prim op, small programs that apply it (with inputs in the op's domain:
positive for log, away from integers for floor, integer indices as constants ...), two or
more shapes each, broadcasting included.  The tests enumerate the prim op table: an op with
rules needs cases here, and an op without rules must be declared zero or nondiff, so a new
op without rules (or without a test) fails.  Declared ops that read floats have cases too:
the derivative through them must be zero.
"""

from __future__ import annotations

import numpy as np
import pytest

from ad_harness import check_grads, program
from pir.ir.core import OPS
from pir.ir.types import DType, TensorType
from pir.passes.autodiff import DECLARED, JVP, VJP, load_rules

RNG = np.random.default_rng(7)
F64 = DType.F64


def u(shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape)


def away(shape, low=0.3, high=2.0):
    """Random signs, magnitudes in [low, high): away from 0."""
    return RNG.uniform(low, high, shape) * RNG.choice([-1.0, 1.0], shape)


def off_integer(shape):
    """Away from integers and from halves (floor, ceil, round jump there)."""
    return RNG.integers(-3, 3, shape) + RNG.uniform(0.1, 0.4, shape)


def t(*shape, dtype=F64):
    return TensorType(dtype, shape)


def unary(name, make=u):
    return [({"x": make(())}, lambda p: p.op(name, p["x"])),
            ({"x": make((2, 3))}, lambda p: p.op(name, p["x"]))]


def binary(name, lhs=u, rhs=u):
    """Same shapes; then the lhs broadcast from [3] (dims [1]) and from [2, 1]."""
    return [
        ({"a": lhs((2, 3)), "b": rhs((2, 3))}, lambda p: p.op(name, p["a"], p["b"])),
        ({"a": lhs((3,)), "b": rhs((2, 3))},
         lambda p: p.op(name, p.op("broadcast_in_dim", p["a"], result_type=t(2, 3),
                                   broadcast_dimensions=[1]), p["b"])),
        ({"a": lhs((2, 1)), "b": rhs((2, 3))},
         lambda p: p.op(name, p.op("broadcast_in_dim", p["a"], result_type=t(2, 3),
                                   broadcast_dimensions=[0, 1]), p["b"])),
    ]


def rem_cases():
    b = away((2, 3), 0.7, 1.5)
    q = RNG.integers(-3, 3, (2, 3)) + RNG.uniform(0.2, 0.8, (2, 3))
    b1 = away((3,), 0.7, 1.5)
    q1 = RNG.integers(-3, 3, (2, 3)) + RNG.uniform(0.2, 0.8, (2, 3))
    return [({"a": b * q, "b": b}, lambda p: p.op("rem", p["a"], p["b"])),
            ({"a": b1 * q1, "b": b1},
             lambda p: p.op("rem", p["a"], p.op("broadcast_in_dim", p["b"], result_type=t(2, 3),
                                                broadcast_dimensions=[1])))]


def through(name):
    """A declared op between float values: select(op(a, b), a * b, a - b)."""
    return [({"a": u((2, 3)), "b": u((2, 3))},
             lambda p: p.op("select", p.op(name, p["a"], p["b"]), p.op("mul", p["a"], p["b"]),
                            p.op("sub", p["a"], p["b"])))]


def int_through(name, *operands):
    """An integer op on constants, cast to float, times x: the derivative is that factor."""
    return [({"x": u((4,))},
             lambda p: p.op("mul", p["x"], p.op("cast", p.op(name, *[p.const(o) for o in operands]),
                                              dtype=F64)))]


def _pred(p, name):
    x = p["x"]
    return p.op("select", p.op(name, x), p.op("neg", x), p.op("mul", x, x))


def _argext(p, name):
    idx = p.op(name, p["x"], axis=1, keepdims=True)
    f = p.op("cast", p.op("broadcast_in_dim", idx, result_type=t(3, 4, dtype=DType.I64),
                          broadcast_dimensions=[0, 1]), dtype=F64)
    return p.op("mul", p["x"], f)


def _random(p, name, **attrs):
    r = p.op(name, result_type=t(3), seed=5, **attrs)
    return p.op("mul", p["x"], r)


def _bcast(p, x, shape, dims):
    return p.op("broadcast_in_dim", x, result_type=t(*shape), broadcast_dimensions=dims)


I64 = DType.I64
ints = lambda *v: np.array(v, np.int64)  # noqa: E731

CASES = {
    # -- elementwise unary
    **{f"prim.{n}": unary(n) for n in ("neg", "exp", "expm1", "sin", "cos", "atan", "sinh",
                                       "cosh", "tanh", "asinh", "erf", "logistic")},
    "prim.abs": unary("abs", away),
    "prim.log": unary("log", lambda s: u(s, 0.5, 2.0)),
    "prim.log1p": unary("log1p", lambda s: u(s, -0.5, 2.0)),
    "prim.sqrt": unary("sqrt", lambda s: u(s, 0.5, 2.0)),
    "prim.rsqrt": unary("rsqrt", lambda s: u(s, 0.5, 2.0)),
    "prim.tan": unary("tan", lambda s: u(s, -1.2, 1.2)),
    "prim.asin": unary("asin", lambda s: u(s, -0.8, 0.8)),
    "prim.acos": unary("acos", lambda s: u(s, -0.8, 0.8)),
    "prim.atanh": unary("atanh", lambda s: u(s, -0.8, 0.8)),
    "prim.acosh": unary("acosh", lambda s: u(s, 1.2, 3.0)),
    "prim.reciprocal": unary("reciprocal", away),
    "prim.sign": unary("sign", away),
    "prim.floor": unary("floor", off_integer),
    "prim.ceil": unary("ceil", off_integer),
    "prim.round": unary("round", off_integer),
    # -- elementwise binary
    "prim.add": binary("add"),
    "prim.sub": binary("sub"),
    "prim.mul": binary("mul"),
    "prim.div": binary("div", u, away),
    "prim.pow": binary("pow", lambda s: u(s, 0.5, 2.0), lambda s: u(s, -1.5, 1.5)),
    "prim.max": binary("max"),
    "prim.min": binary("min"),
    "prim.atan2": binary("atan2", away, away),
    "prim.rem": rem_cases(),
    # -- select, cast
    "prim.select": [
        ({"a": u((2, 3)), "b": u((2, 3))},
         lambda p: p.op("select", p.const(RNG.random((2, 3)) < 0.5), p["a"], p["b"])),
        ({"a": u((3,)), "b": u((2, 3))},
         lambda p: p.op("select", p.op("gt", p["b"], p.const(np.zeros((2, 3)))),
                        _bcast(p, p["a"], (2, 3), [1]), p.op("sin", p["b"]))),
    ],
    "prim.cast": [
        ({"x": u((2, 3))}, lambda p: p.op("mul", p.op("cast", p["x"], dtype=F64), p["x"])),
        ({"x": off_integer((4,))},  # through an integer: the derivative stops there
         lambda p: p.op("mul", p["x"], p.op("cast", p.op("cast", p["x"], dtype=I64),
                                              dtype=F64))),
    ],
    # -- shape
    "prim.broadcast_in_dim": [
        ({"x": u((3,))}, lambda p: p.op("sin", _bcast(p, p["x"], (2, 3), [1]))),
        ({"x": u((3, 1))}, lambda p: p.op("sin", _bcast(p, p["x"], (3, 4), [0, 1]))),
        ({"x": u((2, 3))}, lambda p: p.op("sin", _bcast(p, p["x"], (3, 4, 2), [2, 0]))),
        ({"x": u(())}, lambda p: p.op("sin", _bcast(p, p["x"], (2, 2), []))),
        ({"x": u((1, 3))}, lambda p: p.op("sin", _bcast(p, p["x"], (2, 3, 4), [2, 1]))),
    ],
    "prim.reshape": [
        ({"x": u((2, 3))}, lambda p: p.op("sin", p.op("reshape", p["x"], result_type=t(3, 2)))),
        ({"x": u((6,))}, lambda p: p.op("sin", p.op("reshape", p["x"], result_type=t(1, 2, 3)))),
    ],
    "prim.transpose": [
        ({"x": u((2, 3, 4))}, lambda p: p.op("sin", p.op("transpose", p["x"],
                                                         permutation=[2, 0, 1]))),
        ({"x": u((2, 3))}, lambda p: p.op("sin", p.op("transpose", p["x"], permutation=[1, 0]))),
    ],
    "prim.slice": [
        ({"x": u((5, 4))}, lambda p: p.op("sin", p.op("slice", p["x"], start_indices=[1, 0],
                                                      limit_indices=[5, 3], strides=[2, 1]))),
        ({"x": u((3, 6))}, lambda p: p.op("sin", p.op("slice", p["x"], start_indices=[1],
                                                      limit_indices=[6], strides=[2],
                                                      axes=[1]))),
    ],
    "prim.pad": [
        ({"x": u((2, 3)), "v": u(())},
         lambda p: p.op("sin", p.op("pad", p["x"], p["v"], edge_padding_low=[1, -1],
                                    edge_padding_high=[0, 2], interior_padding=[1, 0]))),
        ({"x": u((4,)), "v": u(())},
         lambda p: p.op("sin", p.op("pad", p["x"], p["v"], edge_padding_low=[2],
                                    edge_padding_high=[-1], interior_padding=[2]))),
    ],
    "prim.concat": [
        ({"a": u((2, 3)), "b": u((2, 1))},
         lambda p: p.op("sin", p.op("concat", [p["a"], p["b"]], dimension=1))),
        ({"a": u((1, 2)), "b": u((2, 2))},
         lambda p: p.op("sin", p.op("concat", [p["a"], p["b"], p["a"]], dimension=0))),
    ],
    # -- indexing
    "prim.gather": [
        ({"x": u((4, 3))}, lambda p: p.op("sin", p.op("gather", p["x"], p.const(
            ints([0, 2], [3, 0])), axis=0))),
        ({"x": u((2, 4))}, lambda p: p.op("sin", p.op("gather", p["x"], p.const(ints(3, 1, 3)),
                                                      axis=1))),
    ],
    "prim.scatter_add": [
        ({"x": u((4, 3)), "upd": u((3, 3))},
         lambda p: p.op("sin", p.op("scatter_add", p["x"], p.const(ints(1, 3, 1)), p["upd"],
                                    axis=0))),
        ({"x": u((2, 3)), "upd": u((2, 2, 2))},
         lambda p: p.op("sin", p.op("scatter_add", p["x"], p.const(ints([0, 2], [2, 2])),
                                    p["upd"], axis=1))),
    ],
    "prim.dynamic_slice": [
        ({"x": u((4, 5))}, lambda p: p.op("sin", p.op("dynamic_slice", p["x"],
                                                      p.const(ints(1, 2)), slice_sizes=[2, 3]))),
        ({"x": u((4, 5))}, lambda p: p.op("sin", p.op("dynamic_slice", p["x"],  # clamped
                                                      p.const(ints(3, 4)), slice_sizes=[2, 2]))),
    ],
    "prim.dynamic_update_slice": [
        ({"x": u((4, 5)), "upd": u((2, 3))},
         lambda p: p.op("sin", p.op("dynamic_update_slice", p["x"], p["upd"],
                                    p.const(ints(1, 1))))),
        ({"x": u((4, 5)), "upd": u((2, 2))},
         lambda p: p.op("sin", p.op("dynamic_update_slice", p["x"], p["upd"],
                                    p.const(ints(5, 0))))),
    ],
    # -- reductions
    "prim.reduce_sum": [
        ({"x": u((2, 3, 4))}, lambda p: p.op("sin", p.op("reduce_sum", p["x"], axes=[0, 2]))),
        ({"x": u((2, 3))}, lambda p: p.op("sin", p.op("reduce_sum", p["x"], axes=[1],
                                                      keepdims=True))),
    ],
    "prim.reduce_prod": [
        ({"x": away((2, 3), 0.5, 1.5)}, lambda p: p.op("reduce_prod", p["x"], axes=[1])),
        ({"x": away((2, 2, 2), 0.5, 1.5)},
         lambda p: p.op("reduce_prod", p["x"], axes=[0, 2], keepdims=True)),
    ],
    "prim.reduce_max": [
        ({"x": u((3, 4))}, lambda p: p.op("sin", p.op("reduce_max", p["x"], axes=[1]))),
        ({"x": u((2, 3, 2))}, lambda p: p.op("sin", p.op("reduce_max", p["x"], axes=[0, 2],
                                                         keepdims=True))),
    ],
    "prim.reduce_min": [
        ({"x": u((3, 4))}, lambda p: p.op("sin", p.op("reduce_min", p["x"], axes=[0]))),
        ({"x": u((2, 3))}, lambda p: p.op("sin", p.op("reduce_min", p["x"], axes=[1],
                                                      keepdims=True))),
    ],
    "prim.cumsum": [
        ({"x": u((3, 4))}, lambda p: p.op("sin", p.op("cumsum", p["x"], axis=1))),
        ({"x": u((3, 4))}, lambda p: p.op("sin", p.op("cumsum", p["x"], axis=0, exclusive=True,
                                                      reverse=True))),
    ],
    # -- contractions
    "prim.dot_general": [
        ({"a": u((2, 3)), "b": u((3, 4))},
         lambda p: p.op("dot_general", p["a"], p["b"], lhs_contracting_dimensions=[1],
                        rhs_contracting_dimensions=[0])),
        ({"a": u((2, 3, 4)), "b": u((2, 4, 2))},
         lambda p: p.op("dot_general", p["a"], p["b"], lhs_batching_dimensions=[0],
                        rhs_batching_dimensions=[0], lhs_contracting_dimensions=[2],
                        rhs_contracting_dimensions=[1])),
        ({"a": u((3, 2, 4)), "b": u((4, 3, 2))},
         lambda p: p.op("dot_general", p["a"], p["b"], lhs_contracting_dimensions=[2, 0],
                        rhs_contracting_dimensions=[0, 1])),
        ({"a": u((2, 3)), "b": u((3, 2, 2))},
         lambda p: p.op("dot_general", p["a"], p["b"], lhs_batching_dimensions=[1],
                        rhs_batching_dimensions=[0])),
    ],
    "prim.conv": [
        ({"x": u((2, 2, 6)), "k": u((3, 2, 3))},
         lambda p: p.op("conv", p["x"], p["k"], window_strides=[2], padding_low=[1],
                        padding_high=[0])),
        ({"x": u((1, 4, 5, 5)), "k": u((4, 2, 3, 2))},
         lambda p: p.op("conv", p["x"], p["k"], window_strides=[2, 1], padding_low=[1, 0],
                        padding_high=[0, 1], rhs_dilation=[1, 2], feature_group_count=2)),
        ({"x": u((1, 2, 3)), "k": u((2, 2, 2))},
         lambda p: p.op("conv", p["x"], p["k"], lhs_dilation=[2], padding_low=[1],
                        padding_high=[-1])),
        ({"x": u((2, 3, 4)), "k": u((6, 1, 2))},  # depthwise, strided past the end
         lambda p: p.op("conv", p["x"], p["k"], window_strides=[3], feature_group_count=3)),
    ],
    # -- sort
    "prim.sort": [
        ({"x": u((3, 4))}, lambda p: p.op("sin", p.ops("sort", p["x"], axis=1)[0])),
        ({"x": u((3, 2))}, lambda p: p.op("sin", p.ops("sort", p["x"], axis=0,
                                                       descending=True)[0])),
    ],
    # -- declared: the derivative through them is zero
    **{f"prim.{n}": through(n) for n in ("eq", "ne", "lt", "le", "gt", "ge")},
    "prim.is_nan": [({"x": u((4,))}, lambda p: _pred(p, "is_nan"))],
    "prim.is_inf": [({"x": u((4,))}, lambda p: _pred(p, "is_inf"))],
    "prim.argmax": [({"x": u((3, 4))}, lambda p: _argext(p, "argmax"))],
    "prim.argmin": [({"x": u((3, 4))}, lambda p: _argext(p, "argmin"))],
    "prim.not": int_through("not", ints(1, 2, 3, 4)),
    "prim.and": int_through("and", ints(3, 5, 6, 7), ints(1, 4, 2, 7)),
    "prim.or": int_through("or", ints(3, 5, 6, 7), ints(1, 4, 2, 7)),
    "prim.xor": int_through("xor", ints(3, 5, 6, 7), ints(1, 4, 2, 7)),
    "prim.shift_left": int_through("shift_left", ints(3, 5, 6, 7), ints(1, 2, 0, 1)),
    "prim.shift_right": int_through("shift_right", ints(3, 5, 6, 7), ints(1, 2, 0, 1)),
    "prim.iota": [({"x": u((3,))},
                   lambda p: p.op("mul", p["x"], p.op("iota", result_type=t(3), dimension=0)))],
    "prim.random_uniform": [({"x": u((3,))}, lambda p: _random(p, "random_uniform"))],
    "prim.random_normal": [({"x": u((3,))}, lambda p: _random(p, "random_normal"))],
}


def _prim_ops() -> list[str]:
    return sorted(n for n in OPS if n.startswith("prim."))


def test_every_prim_op_has_both_rules_or_a_declaration():
    load_rules()
    for name in _prim_ops():
        if name in DECLARED:
            assert name not in VJP and name not in JVP, name
            assert DECLARED[name][0] in ("zero", "nondiff")
        else:
            assert name in VJP, f"{name} has no vjp rule"
            assert name in JVP, f"{name} has no jvp rule"


def test_every_prim_op_has_finite_difference_cases():
    load_rules()
    missing = [n for n in _prim_ops() if n not in CASES]
    assert not missing, f"prim ops without a case in CASES: {missing}"
    assert set(CASES) <= set(_prim_ops())
    for name in _prim_ops():
        if name in VJP:
            assert len(CASES[name]) >= 2, f"{name}: give a couple of shapes"


PARAMS = [pytest.param(name, i, id=f"{name[5:]}-{i}")
          for name in sorted(CASES) for i in range(len(CASES[name]))]


@pytest.mark.parametrize("name,index", PARAMS)
def test_derivatives_match_finite_differences(name, index):
    inputs, body = CASES[name][index]
    module = program(inputs, body)
    assert any(op.name == name for op in module.lookup("main").walk()), \
        f"the case of {name} does not use it"
    check_grads(module, inputs)

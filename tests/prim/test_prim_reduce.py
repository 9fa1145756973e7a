"""prim reductions: reduce_sum/prod/max/min, argmax/argmin, cumsum."""

from __future__ import annotations

import numpy as np
import pytest

from prim_harness import check_op, make_module, rand, ttype
from pir.errors import PirError
from pir.ir.core import OPS

REDUCE = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max,
          "reduce_min": np.min}
COVERED = {f"prim.{n}" for n in REDUCE} | {"prim.argmax", "prim.argmin", "prim.cumsum"}


@pytest.mark.parametrize("axes,keepdims", [([1], False), ([0, 2], True), ([0, 1, 2], False),
                                           ([], False), ([2, 0], False)])
@pytest.mark.parametrize("name", REDUCE)
def test_reduce(name, axes, keepdims):
    fn = REDUCE[name]
    x = rand((2, 3, 4), "f32", 0.5, 1.5)

    def want(x):
        return fn(x, axis=tuple(axes), keepdims=keepdims) if axes else x

    check_op(OPS[f"prim.{name}"], [[x]], want, axes=axes, keepdims=keepdims)


@pytest.mark.parametrize("name", REDUCE)
def test_reduce_symbolic_and_integer(name):
    fn = REDUCE[name]
    runs = [[rand((3, 4), "i32", -3, 3)], [rand((1, 4), "i32", -3, 3)]]
    m = check_op(OPS[f"prim.{name}"], runs, lambda x: fn(x, axis=1).astype(np.int32),
                 input_types=[ttype("i32", "B", 4)], axes=[1])
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("i32", "B")
    runs = [[rand((3, 4))], [rand((1, 4))]]
    check_op(OPS[f"prim.{name}"], runs, lambda x: fn(x, axis=0, keepdims=True),
             input_types=[ttype("f32", "B", 4)], axes=[0], keepdims=True)


@pytest.mark.parametrize("name,identity", [("reduce_sum", 0.0), ("reduce_prod", 1.0),
                                           ("reduce_max", -np.inf), ("reduce_min", np.inf)])
def test_reducing_an_empty_axis_gives_the_identity(name, identity):
    check_op(OPS[f"prim.{name}"], [[np.zeros((0, 3), np.float32)]],
             lambda x: np.full((3,), identity, np.float32), axes=[0])


def test_reduce_f16_accumulates_in_f32():
    x = np.full((4096,), 1.0, np.float16)  # an f16 accumulator would stop at 2048
    check_op(OPS["prim.reduce_sum"], [[x]], lambda x: np.array(4096, np.float16), axes=[0])


def _arg_ref(x, axis, largest, last, keepdims):
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape[:-1], np.int64)
    for pos in np.ndindex(out.shape):
        row = list(moved[pos])
        best = max(row) if largest else min(row)
        hits = [i for i, v in enumerate(row) if v == best]
        out[pos] = hits[-1] if last else hits[0]
    return np.expand_dims(out, axis) if keepdims else out


@pytest.mark.parametrize("axis,keepdims,last", [(0, False, False), (1, True, False),
                                                (1, False, True), (0, True, True)])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduce(name, axis, keepdims, last):
    x = rand((5, 6), "i32", 0, 3)  # few values: many ties
    check_op(OPS[f"prim.{name}"], [[x]],
             lambda x: _arg_ref(x, axis, name == "argmax", last, keepdims),
             axis=axis, keepdims=keepdims, select_last_index=last)
    runs = [[rand((3, 6))], [rand((1, 6))]]
    check_op(OPS[f"prim.{name}"], runs,
             lambda x: _arg_ref(x, axis, name == "argmax", last, keepdims),
             input_types=[ttype("f32", "B", 6)], axis=axis, keepdims=keepdims,
             select_last_index=last)


def _cumsum_ref(x, axis, exclusive, reverse):
    out = np.zeros_like(x)
    n = x.shape[axis]
    for i in range(n):
        js = [j for j in range(n) if (j > i if reverse else j < i) or (j == i and not exclusive)]
        index = [slice(None)] * x.ndim
        index[axis] = i
        out[tuple(index)] = np.take(x, js, axis=axis).sum(axis=axis)
    return out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum(axis, exclusive, reverse):
    def want(x):
        return _cumsum_ref(x, axis, exclusive, reverse)

    check_op(OPS["prim.cumsum"], [[rand((4, 5), "i64")]], want, axis=axis, exclusive=exclusive,
             reverse=reverse)
    runs = [[rand((3, 5))], [rand((1, 5))]]
    check_op(OPS["prim.cumsum"], runs, want, input_types=[ttype("f32", "B", 5)], axis=axis,
             exclusive=exclusive, reverse=reverse)


# -- type-rule violations ---------------------------------------------------------------------

@pytest.mark.parametrize("cls,types,attrs,message", [
    ("reduce_sum", [ttype("f32", 3, 4)], dict(axes=[2]), r"prim.reduce_sum: axes entry 2 is out "
                                                         r"of range \[0, 2\)"),
    ("reduce_max", [ttype("f32", 3, 4)], dict(axes=[-1]), r"axes entry -1 is out of range"),
    ("reduce_min", [ttype("f32", 3, 4)], dict(axes=[1, 1]), r"axes \[1, 1\] has repeated"),
    ("reduce_prod", [ttype("i1", 3)], dict(axes=[0]), r"operand 'x' has element type i1"),
    ("reduce_sum", [ttype("f32", 3)], {}, r"prim.reduce_sum: missing required attribute 'axes'"),
    ("argmax", [ttype("f32", 3, 4)], dict(axis=2), r"prim.argmax: axis 2 is out of range"),
    ("argmin", [ttype("f32", 0, 4)], dict(axis=0), r"prim.argmin: axis 0 is empty"),
    ("cumsum", [ttype("f32", 3)], dict(axis=1), r"prim.cumsum: axis 1 is out of range"),
])
def test_type_rule_errors(cls, types, attrs, message):
    with pytest.raises(PirError, match=message):
        make_module(OPS[f"prim.{cls}"], types, **attrs)


def long_terms(n: int) -> np.ndarray:
    """1.0 and then n - 1 terms of 3e-8, each under half an ulp of 1.0: one f32 accumulator
    that takes them in turn stays at 1.0."""
    x = np.full(n, 3e-8, np.float32)
    x[0] = 1.0
    return x


@pytest.mark.parametrize("axis", [0, 1])
def test_long_reduce_sum_is_correctly_rounded(axis):
    # the reference accumulates f32 sums in f64 (rules.reduce.exact_sum): over a strided
    # axis numpy adds row after row, one f32 accumulator; along a contiguous one its
    # pairwise sum still drops the small terms of the lane that holds the 1.0
    x = long_terms(100_000)
    exact = np.float32(np.sum(x.astype(np.float64)))
    sequential = np.cumsum(x, dtype=np.float32)[-1]
    assert abs(float(sequential) - float(exact)) / float(exact) > 1e-3  # visibly wrong
    arr = np.ascontiguousarray(x[:, None] if axis == 0 else x[None, :])
    check_op(OPS["prim.reduce_sum"], [[arr]], lambda a: np.array([exact], np.float32),
             axes=[axis], rtol=0, atol=0)


def test_long_f16_reduce_sum_rounds_once():
    # f16 terms accumulate in f64, rounded to f32 and then to f16 (as the kernels do)
    x = np.full((1, 70_000), 1e-3, np.float16)
    x[0, 0] = 8.0
    exact = np.sum(x.astype(np.float64))
    check_op(OPS["prim.reduce_sum"], [[x]],
             lambda a: np.array([np.float32(exact)], np.float32).astype(np.float16), axes=[1],
             rtol=0, atol=0)

"""prim generators and sort: iota, random_uniform, random_normal, sort."""

from __future__ import annotations

import numpy as np
import pytest

from prim_harness import check_op, make_module, rand, ttype
from pir.errors import PirError
from pir.ir.core import OPS
from pir.ir.opdef import Pure
from pir.runtimes.reference import run_function

COVERED = {"prim.iota", "prim.random_uniform", "prim.random_normal", "prim.sort"}


@pytest.mark.parametrize("shape,dim,dtype", [((5,), 0, "i64"), ((2, 3), 1, "f32"),
                                             ((3, 2, 2), 0, "i32")])
def test_iota(shape, dim, dtype):
    def want():
        index = np.indices(shape)[dim]
        return index.astype(ttype(dtype).dtype.numpy)

    check_op(OPS["prim.iota"], [[]], want, input_types=[], result_types=[ttype(dtype, *shape)],
             dimension=dim)


def test_iota_symbolic():
    # Position ids [B, S] of a batch: the sizes come from the function's input.
    runs = [[rand((2, 5))], [rand((1, 3))]]
    check_op(OPS["prim.iota"], runs, lambda x: np.indices(x.shape)[1],
             input_types=[ttype("f32", "B", "S")], n_operands=0,
             result_types=[ttype("i64", "B", "S")], dimension=1)


def _run_random(name, result, seed=7, **attrs):
    m = make_module(OPS[name], [ttype("f32", "B")], n_operands=0, result_types=[result],
                    seed=seed, **attrs)
    return m, run_function(m, {"x0": np.zeros(3, np.float32)})["out0"]


def test_random_uniform():
    m, out = _run_random("prim.random_uniform", ttype("f32", "B", 4000), low=-2.0, high=3.0)
    assert out.shape == (3, 4000) and out.dtype == np.float32
    assert out.min() >= -2.0 and out.max() < 3.0
    assert abs(out.mean() - 0.5) < 0.05 and abs(out.std() - 5 / 12 ** 0.5) < 0.05
    again = run_function(m, {"x0": np.zeros(3, np.float32)})["out0"]
    np.testing.assert_array_equal(out, again)  # the seed fixes the stream
    _, other = _run_random("prim.random_uniform", ttype("f32", "B", 4000), seed=8)
    assert not np.array_equal(out, other)
    assert Pure not in OPS["prim.random_uniform"].traits


def test_random_normal():
    _, out = _run_random("prim.random_normal", ttype("f64", "B", 5000), mean=1.5, scale=0.5)
    assert out.shape == (3, 5000) and out.dtype == np.float64
    assert abs(out.mean() - 1.5) < 0.02 and abs(out.std() - 0.5) < 0.02
    assert Pure not in OPS["prim.random_normal"].traits


def _sort_ref(x, axis, descending):
    """A stable sort by explicit keys: (value, index), or (-value, index) when descending."""
    moved = np.moveaxis(x, axis, -1)
    vals, idx = np.empty_like(moved), np.empty(moved.shape, np.int64)
    for pos in np.ndindex(moved.shape[:-1]):
        row = moved[pos].tolist()
        order = sorted(range(len(row)), key=lambda i: (-row[i] if descending else row[i], i))
        vals[pos], idx[pos] = [row[i] for i in order], order
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["i32", "f32"])
def test_sort(axis, descending, dtype):
    x = rand((4, 6), dtype, 0, 3)
    if dtype == "f32":
        x = np.round(x)  # ties, to check stability
    check_op(OPS["prim.sort"], [[x]], lambda x: _sort_ref(x, axis, descending), axis=axis,
             descending=descending)
    runs = [[x[:3]], [x[:1]]]
    check_op(OPS["prim.sort"], runs, lambda x: _sort_ref(x, axis, descending),
             input_types=[ttype(dtype, "B", 6)], axis=axis, descending=descending)


# -- type-rule violations ---------------------------------------------------------------------

@pytest.mark.parametrize("cls,types,attrs,message", [
    ("iota", [], dict(dimension=0), r"prim.iota: the result type must be given"),
    ("iota", [], dict(dimension=2, result_types=[ttype("i64", 3, 2)]),
     r"prim.iota: dimension 2 is out of range \[0, 2\)"),
    ("iota", [], dict(dimension=0, result_types=[ttype("i1", 3)]),
     r"prim.iota.*result 'out' has element type i1"),
    ("random_uniform", [], dict(seed=1, result_types=[ttype("i32", 3)]),
     r"prim.random_uniform.*result 'out' has element type i32"),
    ("random_uniform", [], dict(seed=1, low=2.0, high=1.0, result_types=[ttype("f32", 3)]),
     r"low \(2.0\) must not exceed high \(1.0\)"),
    ("random_normal", [], dict(result_types=[ttype("f32", 3)]),
     r"prim.random_normal: missing required attribute 'seed'"),
    ("sort", [ttype("f32", 3)], dict(axis=1), r"prim.sort: axis 1 is out of range"),
])
def test_type_rule_errors(cls, types, attrs, message):
    with pytest.raises(PirError, match=message):
        make_module(OPS[f"prim.{cls}"], types, **attrs)

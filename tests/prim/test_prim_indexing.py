"""prim indexing ops: gather, scatter_add, dynamic_slice, dynamic_update_slice."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prim_harness import RNG, check_op, make_module, rand, ttype
from pir.errors import PirError
from pir.ir.core import OPS
from pir.runtimes.reference import run_function

COVERED = {"prim.gather", "prim.scatter_add", "prim.dynamic_slice", "prim.dynamic_update_slice"}


def _gather_ref(x, idx, axis):
    """out[a..., i..., b...] = x[a..., idx[i...], b...], by explicit loops."""
    out = np.empty(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)
    for pos in itertools.product(*map(range, out.shape)):
        a, i, b = pos[:axis], pos[axis:axis + idx.ndim], pos[axis + idx.ndim:]
        out[pos] = x[a + (idx[i],) + b]
    return out


@pytest.mark.parametrize("shape,idx_shape,axis,dtype", [
    ((5, 3), (4,), 0, "i64"),
    ((2, 6, 3), (2, 2), 1, "i32"),
    ((4, 3), (), 1, "i64"),
    ((7,), (3, 1, 2), 0, "i32"),
])
def test_gather(shape, idx_shape, axis, dtype):
    x = rand(shape)
    idx = RNG.integers(0, shape[axis], idx_shape).astype(np.dtype(dtype.replace("i", "int")))
    check_op(OPS["prim.gather"], [[x, idx]], lambda x, i: _gather_ref(x, i, axis), axis=axis)


def test_gather_symbolic_embedding():
    # An embedding lookup: table [V, D] indexed by token ids [B, S].
    table = rand((10, 4))
    runs = [[table, RNG.integers(0, 10, (3, 5))], [table, RNG.integers(0, 10, (1, 5))]]
    m = check_op(OPS["prim.gather"], runs, lambda t, i: _gather_ref(t, i, 0),
                 input_types=[ttype("f32", 10, 4), ttype("i64", "B", 5)], axis=0)
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("f32", "B", 5, 4)


def test_gather_rejects_out_of_range_indices_at_run_time():
    m = make_module(OPS["prim.gather"], [ttype("f32", 3), ttype("i64", 2)], axis=0)
    with pytest.raises(PirError, match=r"prim.gather.*index 3 is out of range \[0, 3\)"):
        run_function(m, {"x0": rand((3,)), "x1": np.array([0, 3])})
    with pytest.raises(PirError, match=r"index -1 is out of range"):
        run_function(m, {"x0": rand((3,)), "x1": np.array([-1, 0])})


def _scatter_add_ref(x, idx, upd, axis):
    out = x.copy()
    for pos in itertools.product(*map(range, upd.shape)):
        a, i, b = pos[:axis], pos[axis:axis + idx.ndim], pos[axis + idx.ndim:]
        out[a + (idx[i],) + b] += upd[pos]
    return out


@pytest.mark.parametrize("shape,idx,axis", [
    ((5, 3), [0, 2, 2, 4, 0], 0),          # repeated indices accumulate
    ((2, 4, 3), [[3, 1], [1, 1]], 1),
    ((4,), [], 0),
])
def test_scatter_add(shape, idx, axis):
    x, idx = rand(shape), np.array(idx, np.int64)
    upd = rand(shape[:axis] + idx.shape + shape[axis + 1:])
    check_op(OPS["prim.scatter_add"], [[x, idx, upd]],
             lambda x, i, u: _scatter_add_ref(x, i, u, axis), axis=axis)


def test_scatter_add_symbolic_is_the_transpose_of_gather():
    # d(table) of an embedding lookup: scatter the [B, S, D] gradient back into [V, D].
    types = [ttype("f32", 6, 2), ttype("i32", "B", 3), ttype("f32", "B", 3, 2)]
    runs = [[np.zeros((6, 2), np.float32), RNG.integers(0, 6, (b, 3)).astype(np.int32),
             rand((b, 3, 2))] for b in (4, 1)]
    check_op(OPS["prim.scatter_add"], runs, lambda x, i, u: _scatter_add_ref(x, i, u, 0),
             input_types=types, axis=0)


def _window(x, starts, sizes):
    """The index of x's [sizes] window at ``starts``, each clamped into [0, dim - size]."""
    at = [min(max(v, 0), d - n) for v, d, n in zip(np.asarray(starts).tolist(), x.shape, sizes)]
    return tuple(slice(a, a + n) for a, n in zip(at, sizes))


@pytest.mark.parametrize("starts,sizes", [([1, 2], [2, 2]), ([5, -3], [3, 1]), ([0, 0], [4, 5])])
def test_dynamic_slice_clamps_starts(starts, sizes):
    check_op(OPS["prim.dynamic_slice"], [[rand((4, 5)), np.array(starts, np.int64)]],
             lambda x, s: x[_window(x, s, sizes)], slice_sizes=sizes)


def test_dynamic_slice_symbolic():
    types = [ttype("f32", "B", 6), ttype("i32", 2)]
    runs = [[rand((3, 6)), np.array([1, 2], np.int32)], [rand((2, 6)), np.array([0, 4], np.int32)]]
    check_op(OPS["prim.dynamic_slice"], runs, lambda x, s: x[_window(x, s, [1, 3])],
             input_types=types, slice_sizes=[1, 3])


@pytest.mark.parametrize("starts", [[1, 1], [9, -2], [0, 3]])
def test_dynamic_update_slice(starts):
    x, u = rand((4, 5)), rand((2, 2))

    def want(x, u, s):
        out = x.copy()
        out[_window(x, s, u.shape)] = u
        return out

    check_op(OPS["prim.dynamic_update_slice"], [[x, u, np.array(starts, np.int64)]], want)
    types = [ttype("f32", "B", 5), ttype("f32", 2, 2), ttype("i64", 2)]
    runs = [[x, u, np.array(starts)], [x[:3], u, np.array(starts)]]
    check_op(OPS["prim.dynamic_update_slice"], runs, want, input_types=types)


# -- type-rule violations ---------------------------------------------------------------------

@pytest.mark.parametrize("cls,types,attrs,message", [
    ("gather", [ttype("f32", 3), ttype("f32", 2)], dict(axis=0),
     r"prim.gather.*operand 'indices' has element type f32"),
    ("gather", [ttype("f32", 3), ttype("i64", 2)], dict(axis=1),
     r"prim.gather: axis 1 is out of range \[0, 1\)"),
    ("gather", [ttype("f32", 3), ttype("i64", 2)], dict(axis=-1),
     r"axis -1 is out of range"),
    ("scatter_add", [ttype("f32", 3, 2), ttype("i64", 4), ttype("f32", 4, 3)], dict(axis=0),
     r"prim.scatter_add: updates must have the gathered shape .*: dim 1 is 3, expected 2"),
    ("scatter_add", [ttype("f32", 3), ttype("i64", 4), ttype("i32", 4)], dict(axis=0),
     r"operands must have one element type: x is f32, updates is i32"),
    ("dynamic_slice", [ttype("f32", 3, 4), ttype("i64", 3)], dict(slice_sizes=[1, 1]),
     r"prim.dynamic_slice: start_indices has 3 entries for an operand of rank 2"),
    ("dynamic_slice", [ttype("f32", 3, 4), ttype("i64", 2)], dict(slice_sizes=[4, 1]),
     r"axis 0: slice size 4 is not in \[0, 3\]"),
    ("dynamic_update_slice", [ttype("f32", 3), ttype("f32", 4), ttype("i64", 1)], {},
     r"prim.dynamic_update_slice: axis 0: the update \(4\) is larger than x \(3\)"),
])
def test_type_rule_errors(cls, types, attrs, message):
    with pytest.raises(PirError, match=message):
        make_module(OPS[f"prim.{cls}"], types, **attrs)

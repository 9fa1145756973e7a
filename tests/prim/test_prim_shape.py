"""prim shape ops: broadcast_in_dim, reshape, transpose, slice, pad, concat."""

from __future__ import annotations

import numpy as np
import pytest

from prim_harness import check_op, make_module, rand, ttype
from pir.errors import PirError
from pir.ir.core import OPS
from pir.runtimes.reference import run_function

COVERED = {"prim.broadcast_in_dim", "prim.reshape", "prim.transpose", "prim.slice", "prim.pad",
           "prim.concat"}

BCAST = OPS["prim.broadcast_in_dim"]
RESHAPE = OPS["prim.reshape"]


@pytest.mark.parametrize("src,dims,dst", [
    ((4,), [1], (3, 4)),
    ((), [], (2, 3)),
    ((3, 1), [0, 2], (3, 5, 2)),
    ((2, 3), [1, 0], (3, 2)),          # unsorted dims transpose as they broadcast
    ((1, 4), [0, 2], (3, 2, 4)),
])
def test_broadcast_in_dim_static(src, dims, dst):
    x = rand(src)
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    shape = [1] * len(dst)
    for i in order:
        shape[dims[i]] = src[i]

    def want(x):
        return np.broadcast_to(np.transpose(x, order).reshape(shape), dst)

    check_op(BCAST, [[x]], want, result_types=[ttype("f32", *dst)], broadcast_dimensions=dims)


def test_broadcast_in_dim_symbolic():
    # A bias tensor<4xf32> broadcast to the batch of another input: B comes from %x1.
    types = [ttype("f32", 4), ttype("f32", "B", 4)]
    bias = rand((4,))
    runs = [[bias, rand((3, 4))], [bias, rand((1, 4))]]
    check_op(BCAST, runs, lambda b, x: np.broadcast_to(b, x.shape), input_types=types,
             n_operands=1, result_types=[ttype("f32", "B", 4)], broadcast_dimensions=[1])
    # A symbolic operand dim carries over to the result.
    runs = [[rand((3, 1))], [rand((2, 1))]]
    check_op(BCAST, runs, lambda x: np.broadcast_to(x[:, None, :], (len(x), 2, 5)),
             input_types=[ttype("f32", "B", 1)], result_types=[ttype("f32", "B", 2, 5)],
             broadcast_dimensions=[0, 2])


@pytest.mark.parametrize("src,dst", [((2, 3, 4), (6, 4)), ((12,), (3, 2, 2)), ((1,), ()),
                                     ((2, 3), (3, 2)), ((0, 3), (3, 0))])
def test_reshape_static(src, dst):
    check_op(RESHAPE, [[rand(src)]], lambda x: x.reshape(dst), result_types=[ttype("f32", *dst)])


def test_reshape_symbolic():
    runs = [[rand((3, 2, 4))], [rand((1, 2, 4))]]
    check_op(RESHAPE, runs, lambda x: x.reshape(len(x), 8), input_types=[ttype("f32", "B", 2, 4)],
             result_types=[ttype("f32", "B", 8)])
    # An unknown result dim is what the others leave over.
    check_op(RESHAPE, runs, lambda x: x.reshape(-1, 4), input_types=[ttype("f32", "B", 2, 4)],
             result_types=[ttype("f32", None, 4)])


@pytest.mark.parametrize("shape,perm", [((2, 3, 4), [2, 0, 1]), ((5,), [0]), ((2, 3), [1, 0]),
                                        ((), [])])
def test_transpose(shape, perm):
    check_op(OPS["prim.transpose"], [[rand(shape)]], lambda x: np.transpose(x, perm),
             permutation=perm)


def test_transpose_symbolic():
    m = check_op(OPS["prim.transpose"], [[rand((3, 4))], [rand((1, 4))]], lambda x: x.T,
                 input_types=[ttype("f32", "B", 4)], permutation=[1, 0])
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("f32", 4, "B")


@pytest.mark.parametrize("attrs,index", [
    (dict(start_indices=[1, 0], limit_indices=[3, 4]), (slice(1, 3), slice(0, 4))),
    (dict(start_indices=[0, 1], limit_indices=[4, 4], strides=[2, 2]),
     (slice(0, 4, 2), slice(1, 4, 2))),
    (dict(start_indices=[2], limit_indices=[2], axes=[1]), (slice(None), slice(2, 2))),
    (dict(start_indices=[1], limit_indices=[5], strides=[3], axes=[0]), (slice(1, 5, 3),)),
])
def test_slice(attrs, index):
    check_op(OPS["prim.slice"], [[rand((5, 4))]], lambda x: x[index], **attrs)


def test_slice_keeps_symbolic_axes_whole():
    m = check_op(OPS["prim.slice"], [[rand((3, 6))], [rand((2, 6))]], lambda x: x[:, 1:5:2],
                 input_types=[ttype("f32", "B", 6)], start_indices=[1], limit_indices=[5],
                 strides=[2], axes=[1])
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("f32", "B", 2)


def _pad_ref(x, value, low, high, interior):
    out = x
    for a, (lo, hi, mid) in enumerate(zip(low, high, interior)):
        parts = []
        for i in range(out.shape[a]):
            parts.append(np.take(out, [i], axis=a))
            if i + 1 < out.shape[a] and mid:
                gap = list(out.shape)
                gap[a] = mid
                parts.append(np.full(gap, value, out.dtype))
        shape = list(out.shape)
        shape[a] = 0
        out = np.concatenate(parts, axis=a) if parts else np.zeros(shape, out.dtype)
        edge = list(out.shape)
        edge[a] = max(lo, 0)
        before = np.full(edge, value, out.dtype)
        edge[a] = max(hi, 0)
        after = np.full(edge, value, out.dtype)
        out = np.concatenate([before, out, after], axis=a)
        n = out.shape[a]
        out = np.take(out, np.arange(max(-lo, 0), n - max(-hi, 0)), axis=a)
    return out


@pytest.mark.parametrize("low,high,interior", [
    ([1, 0], [2, 3], [0, 0]),
    ([0, 1], [0, 1], [1, 2]),
    ([-1, 2], [1, -2], [0, 1]),
    ([0, 0], [0, 0], [0, 0]),
])
def test_pad(low, high, interior):
    x, v = rand((3, 4)), np.array(-7.5, np.float32)
    check_op(OPS["prim.pad"], [[x, v]], lambda x, v: _pad_ref(x, v, low, high, interior),
             edge_padding_low=low, edge_padding_high=high, interior_padding=interior)


def test_pad_symbolic():
    types = [ttype("i32", "B", 4), ttype("i32")]
    runs = [[rand((3, 4), "i32"), np.array(9, np.int32)], [rand((1, 4), "i32"), np.array(0, np.int32)]]
    m = check_op(OPS["prim.pad"], runs, lambda x, v: _pad_ref(x, v, [0, 2], [0, 1], [0, 0]),
                 input_types=types, edge_padding_low=[0, 2], edge_padding_high=[0, 1])
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("i32", "B", 7)


def test_concat():
    a, b, c = rand((2, 3)), rand((2, 1)), rand((2, 0))
    check_op(OPS["prim.concat"], [[a, b, c]], lambda *xs: np.concatenate(xs, axis=1),
             variadic=True, dimension=1)
    check_op(OPS["prim.concat"], [[a]], lambda x: x, variadic=True, dimension=0)
    types = [ttype("f32", "B", 3), ttype("f32", "B", 2)]
    runs = [[rand((4, 3)), rand((4, 2))], [rand((1, 3)), rand((1, 2))]]
    m = check_op(OPS["prim.concat"], runs, lambda *xs: np.concatenate(xs, axis=1),
                 input_types=types, variadic=True, dimension=1)
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("f32", "B", 5)


# -- type-rule violations ---------------------------------------------------------------------

@pytest.mark.parametrize("cls,types,attrs,message", [
    ("broadcast_in_dim", [ttype("f32", 3)], dict(broadcast_dimensions=[1],
                                                 result_types=[ttype("f32", 2, 4)]),
     r"prim.broadcast_in_dim.*operand dim 0 \(3\) can not broadcast to result dim 1 \(4\)"),
    ("broadcast_in_dim", [ttype("f32", "B")], dict(broadcast_dimensions=[0],
                                                   result_types=[ttype("f32", "C")]),
     r"operand dim 0 \(B\) can not broadcast to result dim 0 \(C\)"),
    ("broadcast_in_dim", [ttype("f32", 3)], dict(broadcast_dimensions=[0, 1],
                                                 result_types=[ttype("f32", 3, 4)]),
     r"broadcast_dimensions has 2 entries for an operand of rank 1"),
    ("broadcast_in_dim", [ttype("f32", 3)], dict(broadcast_dimensions=[0]),
     r"prim.broadcast_in_dim: the result type must be given"),
    ("reshape", [ttype("f32", 2, 3)], dict(result_types=[ttype("f32", 5)]),
     r"prim.reshape.*cannot reshape \[2x3\] to \[5\]"),
    ("reshape", [ttype("f32", "B", 4)], dict(result_types=[ttype("f32", "B", 3)]),
     r"cannot reshape \[Bx4\] to \[Bx3\]"),
    ("reshape", [ttype("f32", 6)], dict(result_types=[ttype("i32", 6)]),
     r"result element type i32 differs from x's f32"),
    ("transpose", [ttype("f32", 2, 3)], dict(permutation=[0, 0]),
     r"prim.transpose: permutation \[0, 0\] is not a permutation of the 2 dims"),
    ("slice", [ttype("f32", 5)], dict(start_indices=[0], limit_indices=[6]),
     r"prim.slice: axis 0: limit 6 is past the dim \(5\)"),
    ("slice", [ttype("f32", 5)], dict(start_indices=[-1], limit_indices=[3]),
     r"needs 0 <= start <= limit"),
    ("slice", [ttype("f32", 5, 2)], dict(start_indices=[0], limit_indices=[3]),
     r"without axes, start_indices needs one entry per dim \(2\)"),
    ("pad", [ttype("f32", 3), ttype("f32", 1)], dict(edge_padding_low=[0], edge_padding_high=[0]),
     r"prim.pad: padding_value must be a scalar"),
    ("pad", [ttype("f32", 3), ttype("f32")], dict(edge_padding_low=[-2], edge_padding_high=[-2]),
     r"crops more than the dim holds"),
    ("concat", [ttype("f32", 2, 3), ttype("f32", 3, 3)], dict(dimension=1, variadic=True),
     r"prim.concat: operand 1 has dim 0 = 3, operand 0 2: only dim 1 may differ"),
    ("concat", [ttype("f32", 2), ttype("f32", 2)], dict(dimension=1, variadic=True),
     r"dimension 1 is out of range \[0, 1\)"),
])
def test_type_rule_errors(cls, types, attrs, message):
    with pytest.raises(PirError, match=message):
        make_module(OPS[f"prim.{cls}"], types, **attrs)


def test_runtime_rejects_a_symbol_it_cannot_size():
    m = make_module(BCAST, [ttype("f32", 4)], result_types=[ttype("f32", "B", 4)],
                    broadcast_dimensions=[1])
    with pytest.raises(PirError, match=r"prim.broadcast_in_dim.*cannot tell the size of result "
                                       r"dim 0 \(B\)"):
        run_function(m, {"x0": rand((4,))})

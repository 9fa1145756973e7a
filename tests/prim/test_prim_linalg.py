"""prim contractions: dot_general and conv."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prim_harness import check_op, make_module, rand, ttype
from pir.errors import PirError
from pir.ir.core import OPS

COVERED = {"prim.dot_general", "prim.conv"}
DOT = OPS["prim.dot_general"]
CONV = OPS["prim.conv"]


@pytest.mark.parametrize("ls,rs,dims,einsum", [
    ((3, 4), (4, 5), dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]),
     "mk,kn->mn"),
    ((2, 3, 4), (2, 4, 5), dict(lhs_batching_dimensions=[0], rhs_batching_dimensions=[0],
                                lhs_contracting_dimensions=[2], rhs_contracting_dimensions=[1]),
     "bmk,bkn->bmn"),
    ((4, 3), (5, 4), dict(lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[1]),
     "km,nk->mn"),
    ((3,), (4,), {}, "m,n->mn"),                                     # outer product
    ((2, 3, 4), (3, 2, 4), dict(lhs_batching_dimensions=[0, 2], rhs_batching_dimensions=[1, 2],
                                lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]),
     "bkh,kbh->bh"),
    ((2, 3), (3, 2), dict(lhs_contracting_dimensions=[0, 1], rhs_contracting_dimensions=[1, 0]),
     "ab,ba->"),
])
def test_dot_general(ls, rs, dims, einsum):
    check_op(DOT, [[rand(ls), rand(rs)]], lambda a, b: np.einsum(einsum, a, b), rtol=1e-5,
             atol=1e-5, **dims)


def test_dot_general_integer_and_symbolic():
    matmul = dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    check_op(DOT, [[rand((3, 4), "i32"), rand((4, 2), "i32")]], np.matmul, **matmul)
    types = [ttype("f32", "B", 8), ttype("f32", 8, 3)]
    runs = [[rand((5, 8)), rand((8, 3))], [rand((1, 8)), rand((8, 3))]]
    m = check_op(DOT, runs, np.matmul, input_types=types, rtol=1e-5, atol=1e-5, **matmul)
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("f32", "B", 3)


def _conv_ref(x, k, strides, low, high, lhs_dil, rhs_dil, groups):
    """Direct definition: out[n, o, p...] = sum over c, t... of xd[n, g*C/G + c, p*s + t*d - low]
    * k[o, c, t...], where xd is x dilated by lhs_dil and zero outside."""
    n, c = x.shape[:2]
    o, cg = k.shape[:2]
    dil = [(s - 1) * d + 1 for s, d in zip(x.shape[2:], lhs_dil)]
    xd = np.zeros((n, c, *dil), np.float64)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = x
    span = [(t - 1) * d + 1 for t, d in zip(k.shape[2:], rhs_dil)]
    out_sp = [(s + lo + hi - w) // st + 1 for s, lo, hi, w, st in zip(dil, low, high, span, strides)]
    out = np.zeros((n, o, *out_sp))
    for b, oc in itertools.product(range(n), range(o)):
        g = oc // (o // groups)
        for p in itertools.product(*map(range, out_sp)):
            acc = 0.0
            for ci, t in itertools.product(range(cg), itertools.product(*map(range, k.shape[2:]))):
                pos = [pi * st + ti * d - lo for pi, st, ti, d, lo in
                       zip(p, strides, t, rhs_dil, low)]
                if all(0 <= q < s for q, s in zip(pos, dil)):
                    acc += xd[(b, g * cg + ci, *pos)] * k[(oc, ci, *t)]
            out[(b, oc, *p)] = acc
    return out.astype(x.dtype)


CONV_CASES = [
    # x shape, kernel shape, strides, low, high, lhs dilation, rhs dilation, groups
    ((1, 2, 5), (3, 2, 3), [1], [0], [0], [1], [1], 1),
    ((2, 3, 5, 6), (4, 3, 3, 2), [2, 1], [1, 0], [1, 2], [1, 1], [1, 2], 1),
    ((1, 4, 5, 5), (6, 2, 3, 3), [1, 2], [1, 1], [1, 1], [1, 1], [1, 1], 2),
    ((1, 2, 3, 4), (2, 2, 2, 2), [1, 1], [1, 0], [1, 1], [2, 2], [1, 1], 1),   # transposed conv
    ((1, 1, 6, 5), (1, 1, 2, 2), [1, 1], [-1, 0], [0, -1], [1, 1], [1, 1], 1),  # negative pads
    ((1, 2, 3, 3, 3), (2, 1, 2, 2, 2), [1, 1, 1], [0, 0, 0], [0, 0, 0], [1, 1, 1], [1, 1, 1], 2),
    ((1, 1, 3), (1, 1, 1), [1], [5], [-4], [1], [1], 1),  # a crop into the padding: zeros
    ((1, 2, 6), (2, 2, 2), [1], [-2], [3], [1], [1], 1),  # cropped below, padded above
    ((2, 5, 3, 4), (7, 5, 1, 1), [1, 1], [0, 0], [0, 0], [1, 1], [1, 1], 1),  # pointwise
    ((2, 5, 4), (3, 5, 1), [2], [0], [0], [1], [1], 1),  # 1x1 but strided: windows
]


@pytest.mark.parametrize("xs,ks,strides,low,high,lhs_dil,rhs_dil,groups", CONV_CASES)
def test_conv(xs, ks, strides, low, high, lhs_dil, rhs_dil, groups):
    args = (strides, low, high, lhs_dil, rhs_dil, groups)
    check_op(CONV, [[rand(xs), rand(ks)]], lambda x, k: _conv_ref(x, k, *args), rtol=1e-5,
             atol=1e-5, window_strides=strides, padding_low=low, padding_high=high,
             lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, feature_group_count=groups)


def test_conv_defaults_and_symbolic_batch():
    types = [ttype("f32", "N", 3, 6, 6), ttype("f32", 2, 3, 3, 3)]
    runs = [[rand((2, 3, 6, 6)), rand((2, 3, 3, 3))], [rand((1, 3, 6, 6)), rand((2, 3, 3, 3))]]
    m = check_op(CONV, runs, lambda x, k: _conv_ref(x, k, [1, 1], [0, 0], [0, 0], [1, 1], [1, 1], 1),
                 input_types=types, rtol=1e-5, atol=1e-5)
    assert m.lookup("main").entry.ops[0].results[0].type == ttype("f32", "N", 2, 4, 4)


# -- type-rule violations ---------------------------------------------------------------------

@pytest.mark.parametrize("cls,types,attrs,message", [
    ("dot_general", [ttype("f32", 3, 4), ttype("f32", 5, 6)],
     dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]),
     r"prim.dot_general: contracting dims differ: lhs dim 1 is 4, rhs dim 0 is 5"),
    ("dot_general", [ttype("f32", "B", 4), ttype("f32", "C", 4)],
     dict(lhs_batching_dimensions=[0], rhs_batching_dimensions=[0]),
     r"batch dims differ: lhs dim 0 is B, rhs dim 0 is C"),
    ("dot_general", [ttype("f32", 3, 4), ttype("f32", 4, 6)],
     dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[]),
     r"different numbers of batch \(0 vs 0\) or contracting \(1 vs 0\) dims"),
    ("dot_general", [ttype("f32", 3, 4), ttype("f32", 4, 6)],
     dict(lhs_batching_dimensions=[1], rhs_batching_dimensions=[0],
          lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[1]),
     r"lhs batching \+ contracting dims \[1, 1\] has repeated entries"),
    ("dot_general", [ttype("f32", 3), ttype("f16", 3)], {},
     r"operands must have one element type: lhs is f32, rhs is f16"),
    ("conv", [ttype("f32", 1, 3, 5, 5), ttype("f32", 2, 2, 3, 3)], {},
     r"prim.conv: x has 3 channels, kernel expects 2 x 1 groups"),
    ("conv", [ttype("f32", 1, 4, 5, 5), ttype("f32", 3, 2, 3, 3)], dict(feature_group_count=2),
     r"kernel has 3 output channels, not divisible by 2 groups"),
    ("conv", [ttype("f32", 1, 2, 5), ttype("f32", 2, 2, 3, 3)], {},
     r"need one rank of at least 3, got 3 and 4"),
    ("conv", [ttype("f32", 1, 2, 2), ttype("f32", 2, 2, 3)], {},
     r"the window \(3\) is larger than the padded input \(2\)"),
    ("conv", [ttype("f32", 1, 2, 5), ttype("f32", 2, 2, 3)], dict(window_strides=[1, 1]),
     r"window_strides has 2 entries for 1 spatial dims"),
    ("conv", [ttype("f32", 1, 2, 5), ttype("f32", 2, 2, 3)], dict(rhs_dilation=[0]),
     r"rhs_dilation \[0\] must be positive"),
])
def test_type_rule_errors(cls, types, attrs, message):
    with pytest.raises(PirError, match=message):
        make_module(OPS[f"prim.{cls}"], types, **attrs)

"""prim type rules give dim expressions: a pad of ``H`` is ``H + 3``, a concat of ``H`` and
``2*H`` is ``3*H``; a reshape cancels expressions on both sides when it checks the counts.
Each op is run at two sizes against numpy (prim_harness.check_op)."""

from __future__ import annotations

import numpy as np
import pytest

from prim_harness import check_op, make_module, rand, ttype
from pir.errors import PirError
from pir.ir.core import OPS
from pir.ir.dimexpr import parse_dim_expr as e


def _result(m):
    return m.lookup("main").entry.ops[0].results[0].type


def test_pad_of_a_symbolic_dim():
    runs = [[rand((2, 3)), np.array(1.5, np.float32)], [rand((1, 5)), np.array(0, np.float32)]]
    m = check_op(OPS["prim.pad"], runs,
                 lambda x, v: np.pad(x, ((0, 0), (1, 2)), constant_values=v)[:, :],
                 input_types=[ttype("f32", "B", "H"), ttype("f32")],
                 edge_padding_low=[0, 1], edge_padding_high=[0, 2])
    assert str(_result(m)) == "tensor<Bx(H + 3)xf32>"


def test_pad_crops_and_interior():
    def want(x, v):
        wide = np.full((x.shape[0], 2 * x.shape[1] - 1), v, x.dtype)
        wide[:, ::2] = x
        return wide[:, 1:]

    runs = [[rand((2, 3)), np.array(-1, np.float32)], [rand((2, 4)), np.array(2, np.float32)]]
    m = check_op(OPS["prim.pad"], runs, want, input_types=[ttype("f32", 2, "H"), ttype("f32")],
                 edge_padding_low=[0, -1], edge_padding_high=[0, 0], interior_padding=[0, 1])
    assert _result(m) == ttype("f32", 2, e("H + max(0, H - 1) - 1"))


def test_concat_adds_expressions():
    types = [ttype("f32", "N", "H"), ttype("f32", "N", e("2*H")), ttype("f32", "N", 1)]
    runs = [[rand((2, 3)), rand((2, 6)), rand((2, 1))], [rand((1, 2)), rand((1, 4)), rand((1, 1))]]
    m = check_op(OPS["prim.concat"], runs, lambda *xs: np.concatenate(xs, axis=1),
                 input_types=types, variadic=True, dimension=1)
    assert str(_result(m)) == "tensor<Nx(3*H + 1)xf32>"


def test_concat_with_an_unknown_part():
    m = make_module(OPS["prim.concat"], [ttype("f32", "H"), ttype("f32", None)], variadic=True,
                    dimension=0)
    assert _result(m) == ttype("f32", None)


def test_reshape_cancels_expressions():
    hp1 = e("H + 1")
    runs = [[rand((2, 4))], [rand((4, 4))]]
    check_op(OPS["prim.reshape"], runs, lambda x: x.reshape(-1, 2, 2),
             input_types=[ttype("f32", hp1, 4)], result_types=[ttype("f32", hp1, 2, 2)])
    with pytest.raises(PirError, match=r"cannot reshape \[\(H \+ 1\)x4\] to \[\(H \+ 1\)x3\]"):
        make_module(OPS["prim.reshape"], [ttype("f32", hp1, 4)],
                    result_types=[ttype("f32", hp1, 3)])


def test_slice_keeps_an_expression_dim_whole():
    m = check_op(OPS["prim.slice"], [[rand((2, 6))], [rand((3, 6))]], lambda x: x[:, 1:4],
                 input_types=[ttype("f32", e("H + 1"), 6)], start_indices=[1],
                 limit_indices=[4], axes=[1])
    assert _result(m) == ttype("f32", e("H + 1"), 3)


def test_iota_of_an_expression_dim():
    # iota's size comes from its declared type: the runtime evaluates 2*H - 1 from x0's H
    m = check_op(OPS["prim.iota"], [[rand((3,))], [rand((1,))]],
                 lambda x: np.arange(2 * len(x) - 1, dtype=np.int64),
                 input_types=[ttype("f32", "H")], n_operands=0,
                 result_types=[ttype("i64", e("2*H - 1"))], dimension=0)
    assert str(_result(m)) == "tensor<(2*H - 1)xi64>"

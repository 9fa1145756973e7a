"""Contractions: dot_general (batched matmul and any tensor contraction) and N-D convolution.

Both follow StableHLO, in a small form: dot_general names batch and contracting dims, and the
result is batch dims, then lhs free dims, then rhs free dims.  conv has a fixed layout (ONNX's:
x is N, C, spatial...; the kernel is O, C / groups, spatial...; out is N, O, spatial...) and
window attributes, with ``lhs_dilation`` so that the transposed convolution (the VJP of a
strided one) is a conv too.
"""

from __future__ import annotations

from typing import Sequence

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import INT, INTS
from pir.ir.dialects.prim.base import NUMERIC, PrimOp, check_axes, merge_dim, same_dtype
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.types import Dim, TensorType

__all__ = ["DotGeneralOp", "ConvOp", "conv_out_dim"]


class DotGeneralOp(PrimOp):
    """out = the contraction of lhs and rhs: lhs_batching_dimensions pair with
    rhs_batching_dimensions, lhs_contracting_dimensions with rhs_contracting_dimensions (paired
    dims must have one size).  Result dims: the batch dims (in lhs order), the other lhs dims,
    then the other rhs dims.  A matmul of [M, K] by [K, N] contracts lhs dim 1 with rhs dim 0.
    Floats narrower than f32 accumulate in f32."""

    name = "prim.dot_general"
    traits = frozenset({Pure})
    lhs = operand(dtypes=NUMERIC)
    rhs = operand(dtypes=NUMERIC)
    lhs_batching_dimensions = attr(INTS, ())
    rhs_batching_dimensions = attr(INTS, ())
    lhs_contracting_dimensions = attr(INTS, ())
    rhs_contracting_dimensions = attr(INTS, ())
    out = result()

    def infer(self):
        dtype = same_dtype([("lhs", self.lhs), ("rhs", self.rhs)])
        lb, rb = self.lhs_batching_dimensions, self.rhs_batching_dimensions
        lc, rc = self.lhs_contracting_dimensions, self.rhs_contracting_dimensions
        if len(lb) != len(rb) or len(lc) != len(rc):
            raise PirError(f"lhs and rhs name different numbers of batch ({len(lb)} vs {len(rb)})"
                           f" or contracting ({len(lc)} vs {len(rc)}) dims")
        ls, rs = self.lhs.type.shape, self.rhs.type.shape
        check_axes(lb + lc, None if ls is None else len(ls), "lhs batching + contracting dims")
        check_axes(rb + rc, None if rs is None else len(rs), "rhs batching + contracting dims")
        if ls is None or rs is None:
            return [TensorType(dtype, None)]
        batch = [_pair(ls, rs, a, b, "batch") for a, b in zip(lb, rb)]
        for a, b in zip(lc, rc):
            _pair(ls, rs, a, b, "contracting")
        lfree = [d for i, d in enumerate(ls) if i not in lb + lc]
        rfree = [d for i, d in enumerate(rs) if i not in rb + rc]
        return [TensorType(dtype, tuple(batch + lfree + rfree))]


def _pair(ls, rs, a: int, b: int, what: str) -> Dim:
    try:
        return merge_dim(ls[a], rs[b])
    except PirError:
        raise PirError(f"{what} dims differ: lhs dim {a} is {ls[a]}, rhs dim {b} is "
                       f"{rs[b]}") from None


def conv_out_dim(size: Dim, k: Dim, stride: int, low: int, high: int, lhs_dil: int,
                 rhs_dil: int) -> Dim:
    """One spatial result dim: floor((dilated padded input - dilated kernel) / stride) + 1."""
    if size is None or k is None:
        return None
    if not (isinstance(size, int) and isinstance(k, int)):  # a symbolic size: its expression
        # ((size - 1) * lhs_dil + 1 is size itself when lhs_dil is 1, and no input is empty)
        padded = de.add(de.mul(de.sub(size, 1), lhs_dil), 1 + low + high)
        window = de.add(de.mul(de.sub(k, 1), rhs_dil), 1)
        return de.add(de.floordiv(de.sub(padded, window), stride), 1)
    padded = (size - 1) * lhs_dil + 1 + low + high if size else low + high
    window = (k - 1) * rhs_dil + 1 if k else 0
    if padded < window:
        raise PirError(f"the window ({window}) is larger than the padded input ({padded})")
    return (padded - window) // stride + 1


class ConvOp(PrimOp):
    """out = the N-D cross-correlation of x [N, C, S...] with kernel [O, C / G, K...] into
    [N, O, S'...], G = ``feature_group_count`` (output channel group g reads input channel
    group g).  Per spatial dim: x is dilated by ``lhs_dilation`` (zeros between elements),
    padded by ``padding_low`` / ``padding_high`` (negative crops), and the kernel, dilated by
    ``rhs_dilation``, slides with ``window_strides``.  Empty window attributes mean 1 (0 for
    padding) in every spatial dim."""

    name = "prim.conv"
    traits = frozenset({Pure})
    x = operand(dtypes=NUMERIC)
    kernel = operand(dtypes=NUMERIC)
    window_strides = attr(INTS, ())
    padding_low = attr(INTS, ())
    padding_high = attr(INTS, ())
    lhs_dilation = attr(INTS, ())
    rhs_dilation = attr(INTS, ())
    feature_group_count = attr(INT, 1)
    out = result()

    def window(self, n: int) -> dict[str, tuple[int, ...]]:
        """The window attributes with defaults filled in, for ``n`` spatial dims."""
        spec = {"window_strides": 1, "padding_low": 0, "padding_high": 0, "lhs_dilation": 1,
                "rhs_dilation": 1}
        out = {}
        for key, default in spec.items():
            value: Sequence[int] = getattr(self, key) or (default,) * n
            if len(value) != n:
                raise PirError(f"{key} has {len(value)} entries for {n} spatial dims")
            if key not in ("padding_low", "padding_high") and any(v < 1 for v in value):
                raise PirError(f"{key} {list(value)} must be positive")
            out[key] = tuple(value)
        return out

    def infer(self):
        dtype = same_dtype([("x", self.x), ("kernel", self.kernel)])
        xs, ks = self.x.type.shape, self.kernel.type.shape
        groups = self.feature_group_count
        if groups < 1:
            raise PirError(f"feature_group_count {groups} must be positive")
        if xs is None or ks is None:
            return [TensorType(dtype, None)]
        if len(xs) < 3 or len(xs) != len(ks):
            raise PirError(f"x [N, C, spatial...] and kernel [O, C/groups, spatial...] need one "
                           f"rank of at least 3, got {len(xs)} and {len(ks)}")
        n, c, o, ci = xs[0], xs[1], ks[0], ks[1]
        if isinstance(c, int) and isinstance(ci, int) and c != ci * groups:
            raise PirError(f"x has {c} channels, kernel expects {ci} x {groups} groups")
        if isinstance(o, int) and o % groups:
            raise PirError(f"kernel has {o} output channels, not divisible by {groups} groups")
        w = self.window(len(xs) - 2)
        spatial = [conv_out_dim(s, k, *args) for s, k, *args in
                   zip(xs[2:], ks[2:], w["window_strides"], w["padding_low"], w["padding_high"],
                       w["lhs_dilation"], w["rhs_dilation"])]
        return [TensorType(dtype, (n, o, *spatial))]

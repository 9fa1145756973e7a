"""Derivatives of the contractions: dot_general and conv are bilinear.

Their transposes follow JAX's (``_dot_general_transpose_lhs``/``_rhs`` and
``_conv_general_dilated_transpose_lhs``/``_rhs`` in ``jax/_src/lax``), specialised to the
fixed prim layouts:

- ``dot_general``: the cotangent contracted with the other operand over that operand's
  free dims, then transposed into the operand's dim order.
- ``conv`` with respect to ``x``: a convolution of the cotangent with the flipped kernel,
  input and output channels swapped, strides and lhs dilation exchanged, padded so that
  the result has x's shape (the transposed convolution).
- ``conv`` with respect to the kernel: a convolution of x by the cotangent, batch and
  channels swapped.  JAX spells grouped filter gradients with ``batch_group_count``, which
  prim does not have; the groups move into the channels (``[I, G*N]`` by ``[O, N]``) and
  become the feature groups of an ordinary grouped conv.
"""

from __future__ import annotations

import numpy as np

from pir.errors import PirError
from pir.ir.types import DType, TensorType
from pir.passes.autodiff.builder import ttype
from pir.passes.autodiff.registry import defbilinear


# -- dot_general -------------------------------------------------------------------------------

def _ranges_like(*lists):
    out, start = [], 0
    for x in lists:
        out.append(list(range(start, start + len(x))))
        start += len(x)
    return out


def _remaining(n: int, *removed) -> list[int]:
    gone = {i for r in removed for i in r}
    return [i for i in range(n) if i not in gone]


def _dot_transpose(b, ct, x_type: TensorType, y, x_contract, y_contract, x_batch, y_batch,
                   swap_ans: bool = False):
    """The cotangent of dot_general's operand x (the lhs; the rhs with ``swap_ans``)."""
    x_kept = _remaining(len(x_type.shape), x_contract, x_batch)
    y_kept = _remaining(len(ttype(y).shape), y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract, kind="stable")]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_by_y, kind="stable")
    swapped = np.argsort(list(x_batch) + x_contract_by_y + x_kept, kind="stable")
    if _is_identity(swapped) and not _is_identity(out_axes):
        # y first gives x's dim order directly (dW = x^T g rather than (g^T x)^T)
        return b.dot_general(y, ct, lb=y_batch, rb=ans_batch, lc=y_kept, rc=ans_y)
    r = b.dot_general(ct, y, lb=ans_batch, rb=y_batch, lc=ans_y, rc=y_kept)
    return b.transpose(r, out_axes)


def _is_identity(perm) -> bool:
    return list(perm) == list(range(len(perm)))


def _dot_lhs(b, op, ct):
    return _dot_transpose(b, ct, ttype(op.lhs), op.rhs, op.lhs_contracting_dimensions,
                          op.rhs_contracting_dimensions, op.lhs_batching_dimensions,
                          op.rhs_batching_dimensions)


def _dot_rhs(b, op, ct):
    return _dot_transpose(b, ct, ttype(op.rhs), op.lhs, op.rhs_contracting_dimensions,
                          op.lhs_contracting_dimensions, op.rhs_batching_dimensions,
                          op.lhs_batching_dimensions, swap_ans=True)


defbilinear("prim.dot_general", _dot_lhs, _dot_rhs)


# -- conv --------------------------------------------------------------------------------------

def _dilate(d: int, r: int) -> int:
    return 0 if d == 0 else 1 + r * (d - 1)


def _static(op, shape, what: str) -> list[int]:
    if not all(isinstance(d, int) for d in shape):
        raise PirError(f"{op.describe()}: the derivative of a conv needs static {what}, got "
                       f"[{'x'.join(map(str, shape))}]")
    return list(shape)


def _flip(b, v, axes):
    """``v`` reversed along ``axes`` (a gather by a descending index list: prim has no
    reverse op)."""
    shape = ttype(v).shape
    for a in axes:
        if shape[a] > 1:
            idx = b.const(np.arange(shape[a] - 1, -1, -1), DType.I64)
            v = b.op("gather", v, idx, axis=a)
    return v


def _conv_geometry(op, ct):
    """What both transposes of a convolution need: the number of spatial dims, the static
    input, kernel and output spatial sizes, the window attributes, and the spatial axes."""
    xs, ks = ttype(op.x).shape, ttype(op.kernel).shape
    n_sp = len(xs) - 2
    spatial, taps = _static(op, xs[2:], "spatial dims"), _static(op, ks, "kernel dims")
    out_sp = _static(op, ttype(ct).shape[2:], "spatial dims")
    return n_sp, spatial, taps, out_sp, op.window(n_sp), list(range(2, 2 + n_sp))


def _conv_lhs(b, op, ct):
    """The transposed convolution: ct [N, O, S'] with the flipped kernel [C, O/G, K]."""
    n_sp, spatial, taps, out_sp, w, rest = _conv_geometry(op, ct)
    g = op.feature_group_count
    o, i = taps[0], taps[1]
    kern = op.kernel
    if g > 1:  # [O, I, K] -> [O/G, G*I, K]: the group moves into the input channels
        dt = ttype(kern).dtype
        kern = b.reshape(kern, TensorType(dt, (g, o // g, i, *taps[2:])))
        kern = b.transpose(kern, [1, 0] + list(range(2, 3 + n_sp)))
        kern = b.reshape(kern, TensorType(dt, (o // g, g * i, *taps[2:])))
    kern = _flip(b, b.transpose(kern, [1, 0] + rest), rest)
    low, high = [], []
    for s, k, out, stride, lo, ld, rd in zip(spatial, taps[2:], out_sp, w["window_strides"],
                                             w["padding_low"], w["lhs_dilation"],
                                             w["rhs_dilation"]):
        before = _dilate(k, rd) - lo - 1
        low.append(before)
        high.append(_dilate(s, ld) + _dilate(k, rd) - 1 - _dilate(out, stride) - before)
    return b.op("conv", ct, kern, window_strides=w["lhs_dilation"], padding_low=tuple(low),
                padding_high=tuple(high), lhs_dilation=w["window_strides"],
                rhs_dilation=w["rhs_dilation"], feature_group_count=g)


def _conv_rhs(b, op, ct):
    """x [N, C, S] by ct [N, O, S'] with batch and channels swapped: [I, O, K] -> [O, I, K]."""
    n_sp, spatial, taps, out_sp, w, rest = _conv_geometry(op, ct)
    g = op.feature_group_count
    o, i = taps[0], taps[1]
    n = ttype(op.x).shape[0]
    dt = ttype(ct).dtype
    if g == 1:
        lhs = b.transpose(op.x, [1, 0] + rest)
        kern = b.transpose(ct, [1, 0] + rest)
    else:  # groups into the channels: lhs [I, G*N, S], kernel [O, N, S']
        gn = g * n if isinstance(n, int) else None
        lhs = b.reshape(op.x, TensorType(dt, (n, g, i, *spatial)))
        lhs = b.transpose(lhs, [2, 1, 0] + [a + 1 for a in rest])
        lhs = b.reshape(lhs, TensorType(dt, (i, gn, *spatial)))
        kern = b.reshape(ct, TensorType(dt, (n, g, o // g, *out_sp)))
        kern = b.transpose(kern, [1, 2, 0] + [a + 1 for a in rest])
        kern = b.reshape(kern, TensorType(dt, (o, n, *out_sp)))
    high = []
    for s, k, out, stride, lo, ld, rd in zip(spatial, taps[2:], out_sp, w["window_strides"],
                                             w["padding_low"], w["lhs_dilation"],
                                             w["rhs_dilation"]):
        high.append(_dilate(out, stride) - _dilate(s, ld) + _dilate(k, rd) - lo - 1)
    r = b.op("conv", lhs, kern, window_strides=w["rhs_dilation"],
             padding_low=tuple(w["padding_low"]), padding_high=tuple(high),
             lhs_dilation=w["lhs_dilation"], rhs_dilation=w["window_strides"],
             feature_group_count=g)
    return b.transpose(r, [1, 0] + rest)


defbilinear("prim.conv", _conv_lhs, _conv_rhs)

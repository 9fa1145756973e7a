"""Reference rules for dot_general (one batched matmul) and conv (einsum-based), accumulating
in at least f32."""

from __future__ import annotations

import string

import numpy as np

from pir.runtimes.reference.registry import evaluates
from pir.runtimes.reference.rules.prim_common import compute_dtype


@evaluates("prim.dot_general")
def dot_general(op, lhs, rhs):
    lb, rb = list(op.lhs_batching_dimensions), list(op.rhs_batching_dimensions)
    lc, rc = list(op.lhs_contracting_dimensions), list(op.rhs_contracting_dimensions)
    dtype, work = lhs.dtype, compute_dtype(lhs.dtype)
    lhs, rhs = lhs.astype(work, copy=False), rhs.astype(work, copy=False)
    if work.kind != "f":
        if not _exact_in_f64(lhs, rhs, lc):
            return _dot_einsum(lhs, rhs, lb, rb, lc, rc).astype(dtype, copy=False)
        # integers whose every sum float64 holds exactly (a quantized model's centred int8
        # operands): BLAS on them as floats, where numpy's integer matmul has no BLAS and
        # ran ddddocr's [T, 1024] x [1024, 8210] product at a few hundred MFLOP/s
        lhs, rhs = lhs.astype(np.float64), rhs.astype(np.float64)
    # As XLA's DotDecomposer: batch dims first, then the free dims, then the contracted
    # ones, each group merged into one dim, and one batched matmul (BLAS).  The result is
    # contiguous, which einsum's is not always (its transposed outputs cost a copy later).
    lf = [d for d in range(lhs.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.ndim) if d not in rb + rc]
    batch = [lhs.shape[d] for d in lb]
    b, m, n = _prod(batch), _prod(lhs.shape[d] for d in lf), _prod(rhs.shape[d] for d in rf)
    k = _prod(lhs.shape[d] for d in lc)
    a = lhs.transpose(lb + lf + lc).reshape(b, m, k)
    c = rhs.transpose(rb + rc + rf).reshape(b, k, n)
    out = np.matmul(a, c).reshape(batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf])
    return out.astype(dtype, copy=False)


def _exact_in_f64(lhs: np.ndarray, rhs: np.ndarray, contracted) -> bool:
    """Whether every sum of an integer product is exact in float64: |a| |b| K < 2**53."""
    if lhs.dtype.kind not in "iu" or not lhs.size or not rhs.size:
        return False
    k = _prod(lhs.shape[d] for d in contracted)
    return int(np.abs(lhs).max()) * int(np.abs(rhs).max()) * max(k, 1) < 2**53


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _dot_einsum(lhs, rhs, lb, rb, lc, rc):
    """dot_general of integers and booleans: einsum's own loops."""
    letters = iter(string.ascii_letters)
    lsub = [next(letters) for _ in range(lhs.ndim)]
    rsub = [""] * rhs.ndim
    for a, b in zip(lb + lc, rb + rc):  # paired dims share a letter
        rsub[b] = lsub[a]
    rsub = [s or next(letters) for s in rsub]
    out = ([lsub[a] for a in lb] + [s for i, s in enumerate(lsub) if i not in lb + lc]
           + [s for i, s in enumerate(rsub) if i not in rb + rc])
    return np.asarray(np.einsum(f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}", lhs, rhs))


def _dilate(x: np.ndarray, factors) -> np.ndarray:
    """Insert factor - 1 zeros between neighbouring elements of each spatial dim."""
    if all(f == 1 for f in factors):
        return x
    shape = list(x.shape[:2]) + [(s - 1) * f + 1 if s else 0 for s, f in zip(x.shape[2:], factors)]
    out = np.zeros(shape, x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(None, None, f) for f in factors)] = x
    return out


def _pad(x: np.ndarray, low, high) -> np.ndarray:
    """Pad the spatial dims with zeros; negative amounts crop (a crop may reach into the
    other side's padding: 3 elements padded by 5 below and cropped by 4 above are 4 zeros)."""
    if not any(low) and not any(high):
        return x
    sizes = [n + lo + hi for n, lo, hi in zip(x.shape[2:], low, high)]
    # zeros and one assignment of the part of x that survives: np.pad took 20 us on a
    # [2, 16, 32] input
    out = np.zeros(x.shape[:2] + tuple(max(m, 0) for m in sizes), x.dtype)
    src, dst = [slice(None), slice(None)], [slice(None), slice(None)]
    for n, lo, m in zip(x.shape[2:], low, sizes):
        first, at = max(-lo, 0), max(lo, 0)  # the first element kept, and where it goes
        count = max(min(n - first, m - at), 0)
        src.append(slice(first, first + count))
        dst.append(slice(at, at + count))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _windows(x: np.ndarray, span) -> np.ndarray:
    """The view ``[N, C, out..., span...]`` of every window of ``span`` over the spatial
    dims (numpy's sliding_window_view, without its 10 us of argument checks)."""
    out = tuple(max(n - k + 1, 0) for n, k in zip(x.shape[2:], span))
    return np.lib.stride_tricks.as_strided(
        x, x.shape[:2] + out + tuple(span), x.strides + x.strides[2:], writeable=False)


def _conv_as_matmul(win: np.ndarray, kernel: np.ndarray, n_sp: int) -> np.ndarray:
    """An ungrouped convolution as one matrix product (im2col): the windows ``[N, C,
    out..., taps...]`` as rows ``[N, out..., C * taps]`` times the kernel as ``[C * taps,
    O]``.  einsum over the strided windows planned its contraction on every call, which
    cost more than the product for the small convolutions of a test model."""
    n, c = win.shape[:2]
    out_sp = win.shape[2:2 + n_sp]
    o = kernel.shape[0]
    positions = int(np.prod(out_sp, dtype=np.int64))
    order = (0,) + tuple(range(2, 2 + n_sp)) + (1,) + tuple(range(2 + n_sp, 2 + 2 * n_sp))
    rows = win.transpose(order).reshape(n, positions, -1)  # a copy unless already rows
    res = np.matmul(rows, kernel.reshape(o, -1).T)  # [N, positions, O]
    return res.transpose(0, 2, 1).reshape((n, o) + tuple(out_sp))


@evaluates("prim.conv")
def conv(op, x, kernel):
    n_sp = x.ndim - 2
    w = op.window(n_sp)
    work = compute_dtype(x.dtype)
    if op.feature_group_count == 1 and all(k == 1 for k in kernel.shape[2:]) \
            and all(s == 1 for s in w["window_strides"]) and x.size and kernel.size \
            and not any(w["padding_low"]) and not any(w["padding_high"]) \
            and all(d == 1 for d in w["lhs_dilation"]):
        # a pointwise (1x1) convolution is one product per image: [O, C] x [C, positions]
        n, c = x.shape[:2]
        res = np.matmul(kernel.astype(work, copy=False).reshape(kernel.shape[0], c),
                        x.astype(work, copy=False).reshape(n, c, -1))
        return res.reshape((n, kernel.shape[0]) + x.shape[2:]).astype(x.dtype, copy=False)
    xp = _pad(_dilate(x.astype(work), w["lhs_dilation"]), w["padding_low"], w["padding_high"])
    span = [(k - 1) * d + 1 for k, d in zip(kernel.shape[2:], w["rhs_dilation"])]
    # windows: [N, C, out..., span...], then strided positions and dilated taps.
    win = _windows(xp, span)
    win = win[(slice(None), slice(None))
              + tuple(slice(None, None, s) for s in w["window_strides"])
              + tuple(slice(None, None, d) for d in w["rhs_dilation"])]
    g = op.feature_group_count
    n, c = x.shape[:2]
    o = kernel.shape[0]
    if g == 1 and win.size and kernel.size:
        return _conv_as_matmul(win, kernel.astype(work), n_sp).astype(x.dtype, copy=False)
    win = win.reshape((n, g, c // g) + win.shape[2:])
    ker = kernel.astype(work).reshape((g, o // g) + kernel.shape[1:])
    sp, taps = "abcdefgh"[:n_sp], "pqrstuvw"[:n_sp]
    res = np.einsum(f"NGC{sp}{taps},GOC{taps}->NGO{sp}", win, ker, optimize=True)
    return res.reshape((n, o) + res.shape[3:]).astype(x.dtype, copy=False)

"""Decomposition rules for data movement (pir/ir/dialects/nn/tensor.py): reshape, transpose,
squeeze/unsqueeze/flatten, concat, split, slice, expand, tile, pad, center_crop_pad,
depth_to_space/space_to_depth, col2im.

The nn type rules have already worked out each result shape, symbols included, from shape
operands that exported models often compute at run time (``Shape -> Gather -> Concat ->
Reshape``).  These rules therefore read sizes from the op's result type where they can, not
from its shape operands: by the time a rule runs, the ops that computed an operand may have
become prim ops already (the driver works in program order), and only constants are read
through.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from pir.ir import dimexpr as de
from pir.ir.dialects.nn.symbolic import slice_start, static_length
from pir.ir.dimexpr import DimExpr
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.passes.decompose.index_math import (
    I64,
    const_list,
    dim_size,
    fit,
    iota,
    sizable,
    static_dims,
)
from pir.passes.decompose.registry import Keep, decomposes

# -- reshapes ------------------------------------------------------------------------------------


@decomposes("nn.reshape", "nn.flatten", "nn.squeeze", "nn.unsqueeze")
def reshape(b, op):
    """Reshape-like ops are a prim.reshape to their result type, which the type rule worked
    out (0s and -1s, axes, computed shapes).  One dim it could not know (``?``) is what the
    other dims leave over at run time (docs/prim.md)."""
    x, out = op.operands[0], op.results[0].type
    if tensor(x).shape is None:
        raise Keep("the input is unranked")
    sizable(b, out.shape, "the result shape", unknown=1)
    return [x if x.type == out else b.op("reshape", x, result_type=out)]


@decomposes("nn.transpose")
def transpose(b, op):
    """prim.transpose; ONNX's default permutation reverses the dims."""
    rank = len(b.known(tensor(op.data).shape, "input"))
    perm = tuple(op.perm) if op.perm is not None else tuple(reversed(range(rank)))
    if perm == tuple(range(rank)):
        return [op.data]
    return [fit(b, b.op("transpose", op.data, permutation=perm), op.transposed.type)]


# -- joining and splitting -----------------------------------------------------------------------


def _axis(b, v, axis):
    return normalize_axis(axis, len(b.known(tensor(v).shape, "input")))


@decomposes("nn.concat")
def concat(b, op):
    """prim.concat, whose operands must agree on every other dim.  ONNX's shape inference
    gives one dim different names in different operands (``unk__3`` and ``unk__5``, or
    ``unk__58`` where another operand says 1); Concat requires them equal at run time, so
    an operand that names one otherwise is first reshaped (free) to the best-known name."""
    axis = _axis(b, op.inputs[0], op.axis)
    shapes = [tensor(v).shape for v in op.inputs]
    inputs = list(op.inputs)
    if all(s is not None and len(s) == len(shapes[0]) for s in shapes):
        best = [_best_dim([s[k] for s in shapes]) for k in range(len(shapes[0]))]
        for i, (v, s) in enumerate(zip(inputs, shapes)):
            want = tuple(d if k == axis else best[k] for k, d in enumerate(s))
            if want != tuple(s) and None not in want:
                sizable(b, want, "a concat operand", unknown=1)
                inputs[i] = b.op("reshape", v, result_type=tensor(v).with_shape(want))
    return [fit(b, b.op("concat", inputs, dimension=axis), op.concat_result.type)]


def _best_dim(dims):
    """The most precise of dims that must be equal: a size, an expression, a named symbol,
    ONNX's placeholder ``unk__N`` last (pir.passes.shapes ranks them the same way)."""
    def rank(d):
        if d is None:
            return (4, "")
        if isinstance(d, int):
            return (0, str(d))
        if isinstance(d, str):
            return (3 if d.startswith("unk__") else 2, d)
        return (1, str(d))

    return min(dims, key=rank)


@decomposes("nn.split")
def split(b, op):
    """One prim.slice per piece, at offsets from the pieces' sizes; a piece of symbolic size
    or offset (``H floordiv 2``) is a gather at ``offset + iota(size)``."""
    axis = _axis(b, op.input, op.axis)
    if len(op.results) == 1:
        return [fit(b, op.input, op.results[0].type)]
    sizes = [b.known(r.type.shape, "a piece")[axis] for r in op.results]
    outs, start = [], 0
    for r, n in zip(op.results, sizes):
        if isinstance(start, int) and isinstance(n, int):
            piece = b.op("slice", op.input, start_indices=(start,), limit_indices=(start + n,),
                         axes=(axis,))
        else:
            piece = b.op("gather", op.input, _positions(b, start, 1, n), axis=axis)
        outs.append(fit(b, piece, r.type))
        start = de.add(start, n)
    return outs


def _dim_value(b, d):
    """The value of dim ``d`` as an i64 scalar: ``H - 3`` is the size of H, minus 3."""
    const = dict(d.terms).get((), 0) if isinstance(d, DimExpr) else 0
    if isinstance(d, int):
        return b.const(d, I64)
    v = dim_size(b, de.sub(d, const))
    return b.add(v, b.scalar_like(const, v)) if const else v


def _positions(b, start, step, n):
    """The i64 vector start, start + step, ... of ``n`` elements (``start`` a dim)."""
    idx = iota(b, (n,), 0)
    if step != 1:
        idx = b.mul(idx, b.scalar_like(step, idx))
    if start != 0:
        idx = b.add(idx, b.broadcast_to(_dim_value(b, start), (n,)))
    return idx


# -- slices --------------------------------------------------------------------------------------


def _bounds(v, n):
    """A slice bound operand's n elements, None where computed at run time."""
    arr = const_value(v)
    return [int(x) for x in arr.reshape(-1)] if arr is not None else [None] * n


def _clamp(i, d, step):
    """ONNX (Python) slice-bound normalisation of ``i`` for a dim of static size ``d``."""
    if i < 0:
        i += d
    return min(max(i, 0), d) if step > 0 else min(max(i, -1), d - 1)


@decomposes("nn.slice")
def slice_(b, op):
    """prim.slice for positive steps with known bounds, a gather at constant indices for
    negative steps, and, for bounds computed at run time, what the result type tells:
    a whole dim, ``n`` elements from a known start (or up to a known end), or a symbolic
    number ``S`` of elements from a known start (a gather at ``start + step * iota(S)``).
    On a symbolic dim the start is placed as the type rule placed it (``H - 3`` for -3)."""
    t, out = tensor(op.data), op.output.type
    shape, res = b.known(t.shape, "input"), out.shape
    if res is None:
        raise Keep("the result is unranked")
    n = len(const_list(op.axes, "axes")) if op.axes is not None else static_length(op.starts)
    if n is None:
        raise Keep("the number of sliced axes is not static")
    axes = const_list(op.axes, "axes") or list(range(n))
    steps = const_list(op.steps, "steps") or [1] * n
    starts, ends = _bounds(op.starts, n), _bounds(op.ends, n)
    window: dict[int, tuple[int, int, int]] = {}
    picks: dict[int, object] = {}
    for a, s, e, k in zip(axes, starts, ends, steps):
        a = normalize_axis(a, len(shape))
        d, m = shape[a], res[a]
        if isinstance(d, int) and s is not None and e is not None:
            r = range(*slice(s, e, k).indices(d))
            if k < 0:
                picks[a] = np.array(r, dtype=np.int64)
            elif len(r):
                window[a] = (r.start, r[-1] + 1, k)
            else:
                window[a] = (0, 0, 1)
        elif m == d and k == 1:
            continue  # the whole dim
        elif isinstance(d, int) and isinstance(m, int) and k == 1 and (s, e) != (None, None):
            lo = _clamp(s, d, 1) if s is not None else _clamp(e, d, 1) - m
            if not 0 <= lo <= lo + m <= d:
                raise Keep(f"axis {a}: {m} elements from {lo} do not fit in a dim of {d}")
            window[a] = (lo, lo + m, 1)
        elif m is not None and s is not None and slice_start(d, s, k) is not None:
            start = slice_start(d, s, k)
            if isinstance(start, int) and isinstance(m, int) and k > 0:
                window[a] = (start, start + (m - 1) * k + 1, k) if m else (0, 0, 1)
            else:
                picks[a] = (start, k, m)  # a gather at start + k * iota(m)
        else:
            raise Keep(f"axis {a}: cannot tell the slice of a dim of {d} with bounds computed "
                       "at run time")
    v = op.data
    if window:
        lo, hi, st = zip(*(window[a] for a in sorted(window)))
        strided = {"strides": st} if any(k != 1 for k in st) else {}
        v = b.op("slice", v, start_indices=lo, limit_indices=hi, axes=tuple(sorted(window)),
                 **strided)
    for a, pick in sorted(picks.items(), key=lambda p: p[0]):
        if isinstance(pick, tuple):  # start + step * iota(S)
            idx = _positions(b, *pick)
        else:
            idx = b.const(pick, I64)
        v = b.op("gather", v, idx, axis=a)
    return [fit(b, v, out)]


# -- broadcasting and repetition -----------------------------------------------------------------


@decomposes("nn.expand")
def expand(b, op):
    """broadcast_in_dim to the result type (numpy broadcasting, right-aligned)."""
    src = b.known(tensor(op.input).shape, "input")
    out = op.output.type
    dst = sizable(b, out.shape, "the result shape")
    offset = len(dst) - len(src)
    for d, r in zip(src, dst[offset:]):
        if d != 1 and d != r:
            raise Keep(f"cannot tell that a dim of {d} broadcasts to {r}")
    if src == dst:
        return [op.input]
    return [b.op("broadcast_in_dim", op.input, result_type=out,
                 broadcast_dimensions=tuple(range(offset, len(dst))))]


def _repeat(d, o, r):
    """How a tile repeats a dim of ``d`` into ``o``: 1, or r > 1 (None: cannot tell)."""
    if r is not None:
        return r
    if d == o:
        return 1
    if isinstance(d, int) and isinstance(o, int) and d and o % d == 0:
        return o // d
    return None


@decomposes("nn.tile")
def tile(b, op):
    """Each repeated dim d gets a new dim of r copies in front (broadcast_in_dim), then a
    reshape merges [r, d] into r * d; a dim of 1 just broadcasts to its result size."""
    src = b.known(tensor(op.input).shape, "input")
    out = op.output.type
    dst = sizable(b, out.shape, "the result shape")
    reps = const_list(op.repeats, "repeats") if const_value(op.repeats) is not None else None
    wide, where = [], []
    for i, (d, o) in enumerate(zip(src, dst)):
        r = _repeat(d, o, reps[i] if reps else None)
        if d == 1:
            wide.append(o)
        elif r == 1:
            wide.append(d)
        elif r is not None:
            wide += [r, d]
        else:
            raise Keep(f"cannot tell how often a dim of {d} repeats into {o}")
        where.append(len(wide) - 1)
    wide_t = out.with_shape(wide)
    v = op.input if tuple(wide) == src else b.op(
        "broadcast_in_dim", op.input, result_type=wide_t, broadcast_dimensions=tuple(where))
    return [fit(b, v, out)]


# -- padding and cropping ------------------------------------------------------------------------


def _pad_value(b, op, dtype):
    v = op.constant_value
    if v is None or tensor(v).shape == (0,):
        return b.const(0, dtype)
    if b.known(tensor(v).shape, "constant_value") != ():
        return b.reshape(v, ())
    return v


@decomposes("nn.pad")
def pad(b, op):
    """Constant mode is prim.pad (negative pads crop).  Reflect, edge and wrap modes gather
    each padded axis at constant indices: numpy's pad of ``arange(d)`` in that mode."""
    t = tensor(op.data)
    shape = b.known(t.shape, "input")
    rank = len(shape)
    pads = const_list(op.pads, "pads")
    axes = [normalize_axis(a, rank) for a in (const_list(op.axes, "axes") or range(rank))]
    lo, hi = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        lo[a], hi[a] = pads[k], pads[k + len(axes)]
    if op.mode == "constant":
        v = b.op("pad", op.data, _pad_value(b, op, t.dtype), edge_padding_low=tuple(lo),
                 edge_padding_high=tuple(hi))
        return [fit(b, v, op.output.type)]
    v = op.data
    for a in range(rank):
        if lo[a] == hi[a] == 0:
            continue
        if not isinstance(shape[a], int) and lo[a] >= 0 and hi[a] >= 0:
            idx = _symbolic_pad_index(b, shape[a], lo[a], hi[a], op.mode)
            v = b.op("gather", v, idx, axis=a)
            continue
        d = static_dims((shape[a],), f"padded axis {a}")[0]
        kept = np.arange(d)[max(-lo[a], 0):d - max(-hi[a], 0)]
        idx = np.pad(kept, (max(lo[a], 0), max(hi[a], 0)), mode=op.mode)
        v = b.op("gather", v, b.const(idx, I64), axis=a)
    return [fit(b, v, op.output.type)]


def _symbolic_pad_index(b, d, lo: int, hi: int, mode: str):
    """The source index of each position of a dim ``d`` (symbolic) padded by ``lo`` and
    ``hi`` in ``mode``, computed at run time from s = position - lo: reflect folds s at 0
    and at d - 1 (``|s|``, then ``(d - 1) - |(d - 1) - s|``: right while the pads are below
    d, as ONNX requires), edge clamps it to [0, d - 1], wrap takes it mod d.  An audio front
    end pads its frames this way before an STFT convolution."""
    i = iota(b, (de.add(d, lo + hi),), 0)
    s = b.sub(i, b.const(lo, I64))
    n = dim_size(b, d)
    last = b.sub(n, b.const(1, I64))
    if mode == "reflect":
        return b.sub(last, b.op("abs", b.sub(last, b.op("abs", s))))
    if mode == "edge":
        return b.min(b.max(s, b.const(0, I64)), last)
    return b.binary("rem", b.add(b.binary("rem", s, n), n), n)  # wrap: s mod d


@decomposes("nn.center_crop_pad")
def center_crop_pad(b, op):
    """One prim.pad: negative edge padding crops.  The odd element of a crop or a pad goes
    to the end."""
    t = tensor(op.input_data)
    shape = b.known(t.shape, "input")
    target = b.known(op.output_data.type.shape, "result")
    lo, hi = [0] * len(shape), [0] * len(shape)
    for a, (d, s) in enumerate(zip(shape, target)):
        if d == s:
            continue
        if not (isinstance(d, int) and isinstance(s, int)):
            raise Keep(f"axis {a}: cannot crop or pad a dim of {d} to {s}")
        front = abs(d - s) // 2
        lo[a], hi[a] = (front, s - d - front) if s > d else (-front, s - d + front)
    v = b.op("pad", op.input_data, b.const(0, t.dtype), edge_padding_low=tuple(lo),
             edge_padding_high=tuple(hi))
    return [fit(b, v, op.output_data.type)]


# -- blocks --------------------------------------------------------------------------------------


def _blocks(b, op, split, perm):
    """reshape to ``split`` -> transpose ``perm`` -> reshape to the result type."""
    x = b.reshape(op.input, split)
    x = b.op("transpose", x, permutation=perm)
    out = op.output.type
    sizable(b, out.shape, "the result shape", unknown=1)
    return [b.op("reshape", x, result_type=out)]


@decomposes("nn.depth_to_space")
def depth_to_space(b, op):
    n, c, h, w = b.known(tensor(op.input).shape, "input")
    k = op.blocksize
    c = static_dims((c,), "channels")[0] // (k * k)
    if op.mode == "DCR":
        return _blocks(b, op, (n, k, k, c, h, w), (0, 3, 4, 1, 5, 2))
    return _blocks(b, op, (n, c, k, k, h, w), (0, 1, 4, 2, 5, 3))


@decomposes("nn.space_to_depth")
def space_to_depth(b, op):
    n, c, h, w = b.known(tensor(op.input).shape, "input")
    k = op.blocksize
    perm = (0, 3, 5, 1, 2, 4) if op.mode == "DCR" else (0, 1, 3, 5, 2, 4)
    split = (n, c, de.floordiv(h, k), k, de.floordiv(w, k), k)
    sizable(b, split, "the blocks")
    return _blocks(b, op, split, perm)


@decomposes("nn.col2im")
def col2im(b, op):
    """The sum, over the kernel offsets o, of the block grid of offset o spread out by the
    stride (prim.pad's interior padding), placed at o * dilation, with the image padding
    cropped away (negative edge padding)."""
    t = tensor(op.input)
    image = const_list(op.image_shape, "image_shape")
    block = const_list(op.block_shape, "block_shape")
    nd = len(image)
    n, ck, _ = static_dims(t.shape, "input")
    dil = list(op.dilations or [1] * nd)
    strides = list(op.strides or [1] * nd)
    pads = list(op.pads or [0] * (2 * nd))
    cols = [(image[i] + pads[i] + pads[nd + i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
            for i in range(nd)]
    c = ck // math.prod(block)
    grid = b.reshape(op.input, (n, c, *block, *cols))
    total = None
    zero = b.const(0, t.dtype)
    for offset in itertools.product(*[range(k) for k in block]):
        piece = b.op("slice", grid, start_indices=offset,
                     limit_indices=tuple(o + 1 for o in offset), axes=tuple(range(2, 2 + nd)))
        piece = b.reshape(piece, (n, c, *cols))
        low = [o * d - p for o, d, p in zip(offset, dil, pads)]
        high = [image[i] - low[i] - (strides[i] * (cols[i] - 1) + 1) for i in range(nd)]
        piece = b.op("pad", piece, zero, edge_padding_low=(0, 0, *low),
                     edge_padding_high=(0, 0, *high),
                     interior_padding=(0, 0, *(s - 1 for s in strides)))
        total = piece if total is None else b.add(total, piece)
    return [fit(b, total, op.output.type)]

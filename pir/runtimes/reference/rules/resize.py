"""Reference rules for resizing and spatial sampling (Resize, GridSample, AffineGrid,
RoiAlign) and NonMaxSuppression.

Resize is separable: each resized axis is one product with an (out, in) weight matrix, built
from the 1-D kernel of the mode (nearest axes gather instead, exactly, in any dtype).
"""

from __future__ import annotations

import math

import numpy as np

from pir.ir.dialects.nn.resize import resize_plan
from pir.runtimes.reference.registry import evaluates, operand_arrays

# -- Resize --------------------------------------------------------------------------------


def _source_coords(mode: str, out_len: int, in_len: int, scale: float,
                   roi: tuple[float, float]) -> np.ndarray:
    """The input coordinate of each output position along one axis.

    As in ONNX's reference, the output length in these formulas is ``scale * in_len``
    (not rounded), which matters for align_corners with scales that do not divide."""
    y = np.arange(out_len, dtype=np.float64)
    length = scale * in_len
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_len / 2 * (1 - out_len / length)
        return offset + (y + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return np.full(out_len, -0.5) if length == 1 else (y + 0.5) / scale - 0.5
    if mode == "align_corners":
        return np.zeros(out_len) if length == 1 else y * (in_len - 1) / (length - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    start, end = roi  # tf_crop_and_resize
    if length == 1:
        return np.full(out_len, (end - start) * (in_len - 1) / 2 + start * (in_len - 1))
    return y * (end - start) * (in_len - 1) / (length - 1) + start * (in_len - 1)


def _nearest_index(x: np.ndarray, mode: str, in_len: int) -> np.ndarray:
    rounded = {"round_prefer_floor": lambda v: np.ceil(v - 0.5),
               "round_prefer_ceil": lambda v: np.floor(v + 0.5),
               "floor": np.floor, "ceil": np.ceil}[mode](x)
    return np.clip(rounded, 0, in_len - 1).astype(np.int64)


def _cubic_kernel(a: float):
    def kernel(t: np.ndarray) -> np.ndarray:
        t = np.abs(t)
        near = ((a + 2) * t - (a + 3)) * t * t + 1
        far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
        return np.where(t <= 1, near, np.where(t < 2, far, 0.0))

    return kernel


def _linear_kernel(t: np.ndarray) -> np.ndarray:
    return np.clip(1 - np.abs(t), 0, 1)


def _weights(op, x: np.ndarray, in_len: int, scale: float) -> np.ndarray:
    """The (out, in) interpolation matrix of one axis for the linear and cubic modes.

    Taps beyond the edges take the edge value (their weight moves to the edge column), or
    are dropped with ``exclude_outside``.  With ``antialias`` a shrinking axis stretches the
    kernel by 1 / scale and the weights are normalized to sum to 1."""
    kernel, support = (_linear_kernel, 1) if op.mode == "linear" else \
        (_cubic_kernel(op.cubic_coeff_a), 2)
    stretch = min(scale, 1.0) if op.antialias else 1.0
    reach = math.ceil(support / stretch) + 1
    taps = np.floor(x)[:, None] + np.arange(-reach, reach + 1)[None, :]
    w = kernel(stretch * (taps - x[:, None]))
    if op.antialias:
        w = w / w.sum(axis=1, keepdims=True)
    if op.exclude_outside:
        w = np.where((taps < 0) | (taps >= in_len), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    matrix = np.zeros((len(x), in_len))
    rows = np.broadcast_to(np.arange(len(x))[:, None], taps.shape)
    np.add.at(matrix, (rows, np.clip(taps, 0, in_len - 1).astype(np.int64)), w)
    return matrix


def _resize_axis(op, data: np.ndarray, axis: int, out_len: int, scale: float,
                 roi: tuple[float, float]) -> np.ndarray:
    in_len = data.shape[axis]
    x = _source_coords(op.coordinate_transformation_mode, out_len, in_len, scale, roi)
    if op.mode == "nearest":
        out = np.take(data, _nearest_index(x, op.nearest_mode, in_len), axis=axis)
    else:
        out = np.moveaxis(np.tensordot(_weights(op, x, in_len, scale), data, ([1], [axis])),
                          0, axis)
    if op.coordinate_transformation_mode == "tf_crop_and_resize":
        outside = (x < 0) | (x > in_len - 1)
        mask = outside.reshape((-1,) + (1,) * (data.ndim - axis - 1))
        out = np.where(mask, np.asarray(op.extrapolation_value, dtype=out.dtype), out)
    return out


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Interpolated values back to the input's type; integers round and saturate."""
    if values.dtype == dtype:
        return values
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.round(values), info.min, info.max).astype(dtype)
    return values.astype(dtype)


@evaluates("nn.resize")
def resize(op, *arrays):
    a = operand_arrays(op, arrays)
    x = a["x"]
    scales, sizes, roi = (a[k] if a[k] is not None and a[k].size else None
                          for k in ("scales", "sizes", "roi"))
    sizes = None if sizes is None else [int(s) for s in sizes.ravel()]
    shape, scale_of = resize_plan(x.shape, scales, sizes, op.axes, op.keep_aspect_ratio_policy)
    r = x.ndim
    axes = [ax % r for ax in op.axes] if op.axes else list(range(r))
    bounds = {ax: (0.0, 1.0) for ax in axes}
    if roi is not None:
        roi = roi.astype(np.float64).ravel()
        bounds = {ax: (roi[i], roi[i + len(axes)]) for i, ax in enumerate(axes)}
    out = x if op.mode == "nearest" else x.astype(np.float64)
    for ax in axes:
        if scale_of[ax] == 1.0 and shape[ax] == x.shape[ax] and bounds[ax] == (0.0, 1.0):
            continue  # nothing moves along this axis
        out = _resize_axis(op, out, ax, shape[ax], scale_of[ax], bounds[ax])
    return _cast(out, x.dtype)


# -- GridSample ----------------------------------------------------------------------------


def _reflect(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflects coordinates at the borders lo and hi until they fall in [lo, hi]."""
    span = hi - lo
    if span <= 0:
        return np.full_like(v, lo)
    below, dist = v < lo, np.where(v < lo, lo - v, v - hi)
    n = np.floor(dist / span)
    rest = dist - n * span
    even = n % 2 == 0
    low_side = np.where(even, lo + rest, hi - rest)  # reflected from below lo
    high_side = np.where(even, hi - rest, lo + rest)  # reflected from above hi
    return np.where(below, low_side, np.where(v > hi, high_side, v))


def _grid_coords(op, grid: np.ndarray, dims: tuple[int, ...], borders) -> list[np.ndarray]:
    """Input coordinates of every sample, per spatial axis of X, with the padding mode's
    treatment of coordinates outside the borders (clamped or reflected)."""
    g = grid.astype(np.result_type(grid.dtype, np.float32))
    r, coords = len(dims), []
    for i, d in enumerate(dims):
        n = g[..., r - 1 - i]  # the grid lists coordinates innermost axis first: x, y, (z)
        c = (n + 1) / 2 * (d - 1) if op.align_corners else ((n + 1) * d - 1) / 2
        if op.mode == "nearest":
            c = np.rint(c)  # halves to even, as PyTorch
        lo, hi = borders[i]
        if op.padding_mode == "border":
            c = np.where((c < lo) | (c > hi), np.clip(c, 0, d - 1), c)
        elif op.padding_mode == "reflection":
            c = _reflect(c, lo, hi)
        coords.append(c)
    return coords


def _grid_taps(mode: str, c: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (integer position, weight) pairs that interpolate at coordinates ``c``."""
    if mode == "nearest":
        return [(np.trunc(c), np.ones_like(c))]
    base = np.floor(c)
    t = c - base
    if mode == "linear":
        return [(base, 1 - t), (base + 1, t)]
    kernel = _cubic_kernel(-0.75)
    return [(base + k - 1, kernel(t + 1 - k)) for k in range(4)]


@evaluates("nn.grid_sample")
def grid_sample(op, x, grid):
    dims = x.shape[2:]
    borders = [(0.0, d - 1.0) if op.align_corners else (-0.5, d - 0.5) for d in dims]
    taps = [_grid_taps(op.mode, c) for c in _grid_coords(op, grid, dims, borders)]
    batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))
    out = np.zeros(grid.shape[:-1] + (x.shape[1],), dtype=np.float64)
    # Sum over every combination of one tap per axis (2^r for linear, 4^r for cubic).
    for combo in np.ndindex(*(len(t) for t in taps)):
        weight, index, valid = 1.0, [], True
        for axis, k in enumerate(combo):
            pos, w = taps[axis][k]
            pos, ok = _pixel_index(pos, dims[axis], borders[axis], op.padding_mode)
            weight, valid = weight * w, valid & ok
            index.append(pos)
        values = x[(batch, slice(None), *index)]  # (N, D1..Dr, C): advanced axes first
        out += values * np.where(valid, weight, 0.0)[..., None]
    return np.moveaxis(out, -1, 1).astype(x.dtype)


def _pixel_index(pos: np.ndarray, d: int, border: tuple[float, float], padding: str):
    """Integer positions for fetching pixels, and where they are valid (zeros padding)."""
    if padding == "zeros":
        valid = (pos >= 0) & (pos < d)
        return np.clip(pos, 0, d - 1).astype(np.int64), valid
    if padding == "reflection":
        pos = np.trunc(_reflect(pos, *border))
    return np.clip(pos, 0, d - 1).astype(np.int64), True


# -- AffineGrid ----------------------------------------------------------------------------


@evaluates("nn.affine_grid")
def affine_grid(op, theta, size):
    spatial = [int(d) for d in size[2:]]

    def axis_points(d: int) -> np.ndarray:
        if op.align_corners:
            return np.linspace(-1.0, 1.0, d)
        return (2 * np.arange(d) + 1) / d - 1

    # Homogeneous base coordinates ordered innermost axis first: (x, y, [z,] 1).
    mesh = np.meshgrid(*(axis_points(d) for d in spatial), indexing="ij")
    base = np.stack([*mesh[::-1], np.ones(spatial)], axis=-1)
    grid = np.einsum("nij,...j->n...i", theta.astype(np.float64), base)
    return grid.astype(theta.dtype)


# -- RoiAlign ------------------------------------------------------------------------------


def _bilinear_axis(v: np.ndarray, size: int):
    """Low and high neighbours, the fraction towards high, and validity of sample
    coordinates along one axis (samples more than one pixel outside are dropped)."""
    valid = (v >= -1.0) & (v <= size)
    v = np.maximum(v, 0.0)
    low = np.floor(v).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    frac = np.where(edge, 0.0, v - low)
    return low, high, frac, valid


@evaluates("nn.roi_align")
def roi_align(op, x, rois, batch_indices):
    _, channels, height, width = x.shape
    oh, ow = op.output_height, op.output_width
    out = np.zeros((len(rois), channels, oh, ow), dtype=np.float64)
    half_pixel = op.coordinate_transformation_mode == "half_pixel"
    for k, (roi, b) in enumerate(zip(rois.astype(np.float64), batch_indices)):
        x0, y0, x1, y1 = roi * op.spatial_scale - (0.5 if half_pixel else 0.0)
        rw, rh = x1 - x0, y1 - y0
        if not half_pixel:  # the legacy mode makes every roi at least one pixel
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = op.sampling_ratio or math.ceil(rh / oh)
        gw = op.sampling_ratio or math.ceil(rw / ow)
        if gh <= 0 or gw <= 0:
            continue
        # Sample positions: (bins, samples per bin) along each axis.
        bh, bw = rh / oh, rw / ow
        ys = y0 + np.arange(oh)[:, None] * bh + (np.arange(gh)[None, :] + 0.5) * bh / gh
        xs = x0 + np.arange(ow)[:, None] * bw + (np.arange(gw)[None, :] + 0.5) * bw / gw
        ylo, yhi, ly, yok = _bilinear_axis(ys, height)
        xlo, xhi, lx, xok = _bilinear_axis(xs, width)
        valid = yok[:, :, None, None] & xok[None, None, :, :]
        img = x[int(b)].astype(np.float64)
        corners = []
        for yi, wy in ((ylo, 1 - ly), (yhi, ly)):
            for xi, wx in ((xlo, 1 - lx), (xhi, lx)):
                w = wy[:, :, None, None] * wx[None, None, :, :] * valid
                corners.append(img[:, yi[:, :, None, None], xi[None, None, :, :]] * w)
        # corners: 4 x (C, oh, gh, ow, gw)
        if op.mode == "avg":
            out[k] = sum(corners).sum(axis=(2, 4)) / max(gh * gw, 1)
        else:
            out[k] = np.max(np.maximum.reduce(corners), axis=(2, 4))
    return out.astype(x.dtype)


# -- NonMaxSuppression ---------------------------------------------------------------------


def _corners(boxes: np.ndarray, center: bool) -> np.ndarray:
    """(…, 4) boxes as (y_min, x_min, y_max, x_max), in the boxes' own precision."""
    if center:  # (x_center, y_center, width, height)
        xc, yc, w, h = np.moveaxis(boxes, -1, 0)
        two = boxes.dtype.type(2)
        return np.stack([yc - h / two, xc - w / two, yc + h / two, xc + w / two], axis=-1)
    y1, x1, y2, x2 = np.moveaxis(boxes, -1, 0)
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2),
                     np.maximum(x1, x2)], axis=-1)


def _overlaps(box: np.ndarray, others: np.ndarray, threshold) -> np.ndarray:
    """Which of ``others`` overlap ``box`` with an IoU above ``threshold``."""
    ih = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0])
    iw = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1])
    inter = ih * iw
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    ok = (ih > 0) & (iw > 0) & (area > 0) & (areas > 0) & (union > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ok & (inter / np.where(ok, union, 1) > threshold)


@evaluates("nn.non_max_suppression")
def non_max_suppression(op, *arrays):
    a = operand_arrays(op, arrays)
    boxes, scores = a["boxes"], a["scores"]

    def scalar(name):
        v = a[name]
        return None if v is None or v.size == 0 else v.ravel()[0]

    limit = scalar("max_output_boxes_per_class")
    limit = 0 if limit is None else max(int(limit), 0)
    iou = scalar("iou_threshold")
    iou = boxes.dtype.type(0) if iou is None else iou
    min_score = scalar("score_threshold")
    corners = _corners(boxes, op.center_point_box)
    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = np.argsort(-s, kind="stable")  # best first, ties by box index
            if min_score is not None:
                order = order[s[order] > min_score]
            kept: list[int] = []
            for i in order:
                if len(kept) >= limit:
                    break
                if not kept or not _overlaps(corners[b, i], corners[b, kept], iou).any():
                    kept.append(int(i))
            selected += [(b, c, i) for i in kept]
    return np.array(selected, dtype=np.int64).reshape(-1, 3)

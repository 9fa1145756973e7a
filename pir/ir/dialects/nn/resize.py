"""Resizing and spatial sampling: Resize, GridSample, AffineGrid, RoiAlign, and the detection
op NonMaxSuppression."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import BOOL, FLOAT, INT, INTS, STR
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import FLOATS
from pir.ir.dialects.nn.indexing import INDEX_DTYPES, check_choice
from pir.ir.dialects.nn.shape import shape_value
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import const_value, normalize_axis, tensor
from pir.ir.types import DType, TensorType

__all__ = ["Resize", "GridSample", "AffineGrid", "RoiAlign", "NonMaxSuppression",
           "resize_plan", "scaled_dim"]

RESIZE_MODES = ("nearest", "linear", "cubic")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
# "tf_half_pixel_for_nn" only exists in opset 11; it is kept so old models import exactly.
COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


def resize_plan(in_shape: tuple, scales, sizes, axes: tuple[int, ...] | None,
                policy: str) -> tuple[list, list[float | None]]:
    """Resize's output shape and the scale of every axis (1.0 for axes not resized).

    ``scales`` is an array and ``sizes`` a sequence of dims (ints, symbols or None), each
    None when absent or unknown; unknown input dims give unknown output dims.  The scale of
    a ``sizes`` axis is out / in, and ``keep_aspect_ratio_policy`` replaces the sizes by one
    common scale (the smallest for not_larger, the largest for not_smaller), rounded half up.
    """
    r = len(in_shape)
    axes = tuple(range(r)) if not axes else tuple(normalize_axis(a, r) for a in axes)
    if len(set(axes)) != len(axes):
        raise PirError(f"axes {list(axes)} has duplicates")
    out, scale_of = list(in_shape), [1.0] * r
    if scales is not None and len(scales):
        scales = np.asarray(scales, dtype=np.float64).reshape(-1)
        if len(scales) != len(axes):
            raise PirError(f"scales has {len(scales)} values for {len(axes)} axes")
        if np.any(scales <= 0):
            raise PirError(f"scales must be positive, got {scales.tolist()}")
        for a, s in zip(axes, scales):
            d = in_shape[a]
            out[a] = int(math.floor(d * s)) if isinstance(d, int) else scaled_dim(d, float(s))
            scale_of[a] = float(s)
        return out, scale_of
    if sizes is None or not len(sizes):
        for a in axes:  # the scales or sizes are only known at run time
            out[a], scale_of[a] = None, None
        return out, scale_of
    if len(sizes) != len(axes):
        raise PirError(f"sizes has {len(sizes)} values for {len(axes)} axes")
    static = all(isinstance(in_shape[a], int) and in_shape[a] > 0 and isinstance(s, int)
                 for a, s in zip(axes, sizes))
    if policy == "stretch" or not static:
        for a, s in zip(axes, sizes):
            d = in_shape[a]
            out[a] = s if policy == "stretch" else None
            scale_of[a] = s / d if isinstance(s, int) and isinstance(d, int) and d else None
        return out, scale_of
    ratios = [s / in_shape[a] for a, s in zip(axes, sizes)]
    common = min(ratios) if policy == "not_larger" else max(ratios)
    for a in axes:
        out[a] = int(common * in_shape[a] + 0.5)
        scale_of[a] = common
    return out, scale_of


def scaled_dim(d, scale: float):
    """floor(d * scale) for a symbolic dim and a scale that is a fraction p/q with a small q,
    or lies just above one (as f32 spells 1/3): ``(p*H) floordiv q`` (``2*H``,
    ``H floordiv 2``, ``(3*H) floordiv 2``), which equals the floor for any H below 2**20;
    else None."""
    if d is None or not math.isfinite(scale):
        return None
    frac = Fraction(scale).limit_denominator(64)
    p, q = frac.numerator, frac.denominator
    if not 0 <= scale - p / q < 2.0**-20 / q:
        return None
    return de.floordiv(de.mul(d, p), q)


class Resize(Operation):
    """Resizes X by interpolation (nearest, N-linear or N-cubic) to ``sizes`` or by
    ``scales`` along ``axes``, mapping output to input coordinates by
    ``coordinate_transformation_mode`` (``roi`` is used by tf_crop_and_resize only)."""

    name = "nn.resize"
    traits = frozenset({Pure})
    x = operand()
    roi = operand(optional=True, dtypes=FLOATS)
    scales = operand(optional=True, dtypes=frozenset({DType.F32}))
    sizes = operand(optional=True, dtypes=frozenset({DType.I64}))
    antialias = attr(BOOL, False)
    axes = attr(INTS, ())
    coordinate_transformation_mode = attr(STR, "half_pixel")
    cubic_coeff_a = attr(FLOAT, -0.75)
    exclude_outside = attr(BOOL, False)
    extrapolation_value = attr(FLOAT, 0.0)
    keep_aspect_ratio_policy = attr(STR, "stretch")
    mode = attr(STR, "nearest")
    nearest_mode = attr(STR, "round_prefer_floor")
    y = result()

    def infer(self):
        check_choice(self, "mode", RESIZE_MODES)
        check_choice(self, "nearest_mode", NEAREST_MODES)
        check_choice(self, "coordinate_transformation_mode", COORD_MODES)
        check_choice(self, "keep_aspect_ratio_policy", ASPECT_POLICIES)
        if self.antialias and self.mode == "nearest":
            raise PirError("antialias applies to the linear and cubic modes, not nearest")
        scales, sizes = const_value(self.scales), shape_value(self.sizes)
        has_scales = self.scales is not None and (scales is None or scales.size > 0)
        has_sizes = self.sizes is not None and (sizes is None or len(sizes) > 0)
        if has_scales and has_sizes:
            raise PirError("give scales or sizes, not both")
        if self.scales is None and self.sizes is None:
            raise PirError("one of scales and sizes is needed")
        tx = tensor(self.x)
        if tx.shape is None:
            return [tx]
        out, _ = resize_plan(tx.shape, scales, sizes, self.axes, self.keep_aspect_ratio_policy)
        return [tx.with_shape(out)]


class GridSample(Operation):
    """Samples X (N, C, d1..dr) at the normalized [-1, 1] positions of grid (N, D1..Dr, r),
    whose last axis lists coordinates innermost axis first (x, y, ...); gives (N, C, D1..Dr)."""

    name = "nn.grid_sample"
    traits = frozenset({Pure})
    x = operand()
    grid = operand(dtypes=FLOATS)
    align_corners = attr(BOOL, False)
    mode = attr(STR, "linear")
    padding_mode = attr(STR, "zeros")
    y = result()

    def infer(self):
        check_choice(self, "mode", ("linear", "nearest", "cubic"))
        check_choice(self, "padding_mode", ("zeros", "border", "reflection"))
        tx, tg = tensor(self.x), tensor(self.grid)
        if tx.shape is not None and len(tx.shape) < 3:
            raise PirError(f"X must have rank >= 3 (N, C, spatial...), got {tx}")
        if tg.shape is None:
            return [tx.with_shape(None)]
        if tx.shape is not None:
            r = len(tx.shape) - 2
            last = tg.shape[-1] if tg.shape else None
            if len(tg.shape) != r + 2 or (isinstance(last, int) and last != r):
                raise PirError(f"grid must have shape (N, D1..D{r}, {r}) for X {tx}, got {tg}")
        n = tx.shape[0] if tx.shape is not None else tg.shape[0]
        c = tx.shape[1] if tx.shape is not None else None
        return [tx.with_shape((n, c) + tg.shape[1:-1])]


class AffineGrid(Operation):
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps theta (N, 2, 3)
    or (N, 3, 4), for an output of ``size`` (N, C, H, W) or (N, C, D, H, W)."""

    name = "nn.affine_grid"
    traits = frozenset({Pure})
    theta = operand(dtypes=FLOATS)
    size = operand(dtypes=frozenset({DType.I64}))
    align_corners = attr(BOOL, False)
    grid = result()

    def infer(self):
        tt = tensor(self.theta)
        spatial = None  # the number of spatial dims, 2 or 3
        if tt.shape is not None:
            pair = tuple(tt.shape[1:])
            static = all(isinstance(d, int) for d in pair)
            if len(tt.shape) != 3 or (static and pair not in ((2, 3), (3, 4))):
                raise PirError(f"theta must have shape (N, 2, 3) or (N, 3, 4), got {tt}")
            spatial = pair[0] if static else None
        size = shape_value(self.size)
        if size is not None:
            if len(size) not in (4, 5) or (spatial and len(size) != spatial + 2):
                raise PirError(f"size must hold {spatial + 2 if spatial else '4 or 5'} dims "
                               f"(N, C, spatial...) for theta {tt}, got {len(size)}")
            return [tt.with_shape((size[0],) + tuple(size[2:]) + (len(size) - 2,))]
        if spatial is None:
            return [tt.with_shape(None)]
        return [tt.with_shape((tt.shape[0],) + (None,) * spatial + (spatial,))]


class RoiAlign(Operation):
    """Pools each region of interest of X (N, C, H, W) into (output_height, output_width)
    bins by averaging (or taking the max of) bilinearly interpolated samples."""

    name = "nn.roi_align"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    rois = operand(dtypes=FLOATS)
    batch_indices = operand(dtypes=INDEX_DTYPES)
    coordinate_transformation_mode = attr(STR, "half_pixel")
    mode = attr(STR, "avg")
    output_height = attr(INT, 1)
    output_width = attr(INT, 1)
    sampling_ratio = attr(INT, 0)
    spatial_scale = attr(FLOAT, 1.0)
    y = result()

    def infer(self):
        check_choice(self, "mode", ("avg", "max"))
        check_choice(self, "coordinate_transformation_mode", ("half_pixel", "output_half_pixel"))
        if self.output_height < 1 or self.output_width < 1 or self.sampling_ratio < 0:
            raise PirError("output_height and output_width must be >= 1, sampling_ratio >= 0")
        tx, tr, tb = tensor(self.x), tensor(self.rois), tensor(self.batch_indices)
        if tx.shape is not None and len(tx.shape) != 4:
            raise PirError(f"X must have rank 4 (N, C, H, W), got {tx}")
        if tr.shape is not None and (len(tr.shape) != 2 or _not(tr.shape[1], 4)):
            raise PirError(f"rois must have shape (num_rois, 4), got {tr}")
        if tb.shape is not None and len(tb.shape) != 1:
            raise PirError(f"batch_indices must have rank 1, got {tb}")
        num = tr.shape[0] if tr.shape is not None else None
        if not isinstance(num, int) and tb.shape is not None:
            num = tb.shape[0]
        c = tx.shape[1] if tx.shape is not None else None
        return [tx.with_shape((num, c, self.output_height, self.output_width))]


class NonMaxSuppression(Operation):
    """Greedy per-class selection of boxes by descending score, dropping boxes whose IoU with
    a selected one exceeds iou_threshold; gives (selected, 3) rows of (batch, class, box)."""

    name = "nn.non_max_suppression"
    traits = frozenset({Pure})
    boxes = operand(dtypes=FLOATS)
    scores = operand(dtypes=FLOATS)
    max_output_boxes_per_class = operand(optional=True, dtypes=frozenset({DType.I64}))
    iou_threshold = operand(optional=True, dtypes=FLOATS)
    score_threshold = operand(optional=True, dtypes=FLOATS)
    center_point_box = attr(BOOL, False)
    selected_indices = result()

    def infer(self):
        tb, ts = tensor(self.boxes), tensor(self.scores)
        if tb.shape is not None and (len(tb.shape) != 3 or _not(tb.shape[2], 4)):
            raise PirError(f"boxes must have shape (batches, boxes, 4), got {tb}")
        if ts.shape is not None and len(ts.shape) != 3:
            raise PirError(f"scores must have shape (batches, classes, boxes), got {ts}")
        return [TensorType(DType.I64, (None, 3))]


def _not(dim, size: int) -> bool:
    """True when ``dim`` is static and differs from ``size``."""
    return isinstance(dim, int) and dim != size

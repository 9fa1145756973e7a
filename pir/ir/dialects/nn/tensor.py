"""Data movement: reshape, transpose, squeeze/unsqueeze, flatten, concat, split, slice,
expand, tile, pad, center_crop_pad, depth_to_space/space_to_depth, reverse_sequence, col2im.

The type rules keep symbolic dims wherever the op only moves them (a transpose of
``BxSx768`` is ``768xSxB``), compute the dims it changes as expressions (a concat of
``NxH`` and ``Nx(2*H)`` is ``Nx(3*H)``, a pad by 1 on each side ``(H + 2)``), and read shape
operands through :func:`~pir.ir.dialects.nn.symbolic.shape_value`, so that shapes computed
in the graph from ``nn.shape`` keep their symbols too.
"""

from __future__ import annotations

import math

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import BOOL, INT, INTS, STR
from pir.ir.core import Operation
from pir.ir.dialects.nn.symbolic import (
    I64,
    INDEX,
    add_dim,
    const_ints,
    dim_product,
    divide_dim,
    infer_dim,
    shape_operand,
    shape_value,
    slice_dim,
    split_sizes,
    static_length,
    unify_dims,
    unique_axes,
)
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import broadcast_shapes, normalize_axis, tensor
from pir.ir.types import Dim, TensorType

# -- reshapes -------------------------------------------------------------------------------------


class Reshape(Operation):
    """reshaped = data with the given shape; 0 copies the input's dim (unless allowzero),
    -1 is inferred from the element count."""

    name = "nn.reshape"
    traits = frozenset({Pure})
    data = operand()
    shape = operand(dtypes=I64)
    allowzero = attr(BOOL, False)
    reshaped = result()

    def infer(self):
        t = tensor(self.data)
        target = shape_operand(self.shape, "the shape", allow_negative=True)
        if target is None:
            return [t.with_shape(None)]
        if sum(1 for d in target if d == -1) > 1:
            raise PirError(f"shape {list(target)} has more than one -1")
        if any(isinstance(d, int) and d < -1 for d in target):
            raise PirError(f"shape {list(target)} has a dim below -1")
        if self.allowzero and -1 in target and 0 in target:
            raise PirError("with allowzero, the shape may not hold both 0 and -1")
        dims = []
        for i, d in enumerate(target):
            if d == 0 and not self.allowzero:
                if t.shape is not None and i >= len(t.shape):
                    raise PirError(f"shape {list(target)} copies dim {i} of a rank-"
                                   f"{len(t.shape)} input")
                d = t.shape[i] if t.shape is not None else None
            dims.append(d)
        if -1 in dims:
            i = dims.index(-1)
            rest = dims[:i] + dims[i + 1:]
            dims[i] = None if t.shape is None else infer_dim(t.shape, rest)
        elif t.is_static and all(isinstance(d, int) for d in dims) and \
                math.prod(dims) != t.numel:
            raise PirError(f"cannot reshape {t} ({t.numel} elements) to {dims}")
        return [t.with_shape(dims)]


class Flatten(Operation):
    """output = input as a matrix: dims [0, axis) form the rows, dims [axis, rank) the
    columns."""

    name = "nn.flatten"
    traits = frozenset({Pure})
    input = operand()
    axis = attr(INT, 1)
    output = result()

    def infer(self):
        t = tensor(self.input)
        if t.shape is None:
            return [t.with_shape((None, None))]
        rank = len(t.shape)
        if not -rank <= self.axis <= rank:
            raise PirError(f"axis {self.axis} is out of range for rank {rank}")
        axis = self.axis + rank if self.axis < 0 else self.axis
        return [t.with_shape((dim_product(t.shape[:axis]), dim_product(t.shape[axis:])))]


class Squeeze(Operation):
    """squeezed = data without the size-1 dims listed in axes (all size-1 dims when absent)."""

    name = "nn.squeeze"
    traits = frozenset({Pure})
    data = operand()
    axes = operand(optional=True, dtypes=I64)
    squeezed = result()

    def infer(self):
        t = tensor(self.data)
        if t.shape is None:
            return [t]
        if self.axes is None:
            if not all(d == 1 or de.never_one(d) for d in t.shape):
                return [t.with_shape(None)]  # which dims are 1 is not known
            return [t.with_shape(d for d in t.shape if d != 1)]
        axes = const_ints(self.axes)
        if axes is None:
            return [t.with_shape(None)]
        axes = unique_axes(axes, len(t.shape))
        for a in axes:
            if isinstance(t.shape[a], int) and t.shape[a] != 1:
                raise PirError(f"cannot squeeze axis {a} of {t}: its size is not 1")
        return [t.with_shape(d for i, d in enumerate(t.shape) if i not in axes)]


class Unsqueeze(Operation):
    """expanded = data with size-1 dims inserted at axes (axes of the output)."""

    name = "nn.unsqueeze"
    traits = frozenset({Pure})
    data = operand()
    axes = operand(dtypes=I64)
    expanded = result()

    def infer(self):
        t = tensor(self.data)
        axes = const_ints(self.axes)
        if t.shape is None:
            return [t]
        if axes is None:
            n = static_length(self.axes)
            return [t.with_shape(None if n is None else (None,) * (len(t.shape) + n))]
        axes = unique_axes(axes, len(t.shape) + len(axes))
        rest = iter(t.shape)
        return [t.with_shape(1 if i in axes else next(rest)
                             for i in range(len(t.shape) + len(axes)))]


class Transpose(Operation):
    """transposed = data with its dims permuted: dim i of the result is dim perm[i] of data
    (reversed when perm is absent)."""

    name = "nn.transpose"
    traits = frozenset({Pure})
    data = operand()
    perm = attr(INTS, None)
    transposed = result()

    def infer(self):
        t = tensor(self.data)
        if t.shape is None:
            return [t]
        perm = self.perm if self.perm is not None else tuple(reversed(range(len(t.shape))))
        if sorted(perm) != list(range(len(t.shape))):
            raise PirError(f"perm {list(perm)} is not a permutation of the {len(t.shape)} "
                           f"dims of {t}")
        return [t.with_shape(t.shape[p] for p in perm)]


# -- joining and splitting ------------------------------------------------------------------------


class Concat(Operation):
    """concat_result = the inputs joined along axis."""

    name = "nn.concat"
    traits = frozenset({Pure})
    inputs = operand(variadic=True)
    axis = attr(INT)
    concat_result = result()

    def infer(self):
        ts = [tensor(v) for v in self.inputs]
        if not ts:
            raise PirError("needs at least one input")
        if len({t.dtype for t in ts}) > 1:
            raise PirError(f"inputs have different element types: {', '.join(map(str, ts))}")
        shapes = [t.shape for t in ts if t.shape is not None]
        if not shapes:
            return [ts[0]]
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes):
            raise PirError(f"inputs have different ranks: {', '.join(map(str, ts))}")
        axis = normalize_axis(self.axis, rank)
        dims: list[Dim] = []
        for i in range(rank):
            col = [s[i] for s in shapes]
            if i != axis:
                dims.append(unify_dims(col, f"dim {i} of the inputs"))
            elif len(shapes) < len(ts):
                dims.append(None)  # an unranked input: its share is not known
            else:
                total: Dim = 0
                for d in col:
                    total = de.add(total, d)
                dims.append(total)
        return [ts[0].with_shape(dims)]


class Split(Operation):
    """outputs = input cut along axis into pieces of the sizes in split, or into
    num_outputs pieces of ceil(dim / num_outputs) (the last one smaller)."""

    name = "nn.split"
    traits = frozenset({Pure})
    input = operand()
    split = operand(optional=True, dtypes=I64)
    axis = attr(INT, 0)
    num_outputs = attr(INT, None)
    outputs = result(variadic=True)

    def infer(self):
        t = tensor(self.input)
        split = shape_value(self.split) if self.split is not None else None  # maybe computed
        if self.split is None:
            count = self.num_outputs
        else:
            count = len(split) if split is not None else static_length(self.split)
        if not count:
            raise PirError("the number of pieces is unknown: give split sizes of static "
                           "length or num_outputs")
        if t.shape is None:
            return [t] * count
        axis = normalize_axis(self.axis, len(t.shape))
        if self.split is not None and split is None:
            sizes = [None] * count  # sizes computed at run time
        else:
            sizes = split_sizes(t.shape[axis], split, count)
        return [t.with_shape(t.shape[:axis] + (s,) + t.shape[axis + 1:]) for s in sizes]


class Slice(Operation):
    """output = data[starts:ends:steps] along axes (all axes in order when absent)."""

    name = "nn.slice"
    traits = frozenset({Pure})
    data = operand()
    starts = operand(dtypes=INDEX)
    ends = operand(dtypes=INDEX)
    axes = operand(optional=True, dtypes=INDEX)
    steps = operand(optional=True, dtypes=INDEX)
    output = result()

    def infer(self):
        t = tensor(self.data)
        if t.shape is None:
            return [t]
        rank = len(t.shape)
        # Bounds may come from shape arithmetic (x[:, :S] with S = shape(y)[1]).
        starts, ends = shape_value(self.starts), shape_value(self.ends)
        axes = const_ints(self.axes) if self.axes is not None else None
        steps = const_ints(self.steps) if self.steps is not None else None
        if self.axes is None:
            n = static_length(self.starts)
            axes = list(range(n)) if n is not None else None
        if axes is None:
            return [t.with_shape((None,) * rank)]  # which axes are sliced is not known
        axes = unique_axes(axes, rank)
        if self.steps is None:
            steps = [1] * len(axes)
        dims = list(t.shape)
        for k, a in enumerate(axes):
            if starts is None or ends is None or steps is None:
                dims[a] = None
                continue
            if steps[k] == 0:
                raise PirError("slice steps must not be zero")
            dims[a] = slice_dim(t.shape[a], starts[k], ends[k], steps[k])
        return [t.with_shape(dims)]


# -- broadcasting and repetition -------------------------------------------------------------


class Expand(Operation):
    """output = input broadcast (numpy rules, both ways) with shape."""

    name = "nn.expand"
    traits = frozenset({Pure})
    input = operand()
    shape = operand(dtypes=I64)
    output = result()

    def infer(self):
        t = tensor(self.input)
        dims = shape_operand(self.shape, "the shape")
        if dims is None or t.shape is None:
            return [t.with_shape(None)]
        return [t.with_shape(broadcast_shapes(t.shape, dims))]


class Tile(Operation):
    """output = input repeated repeats[i] times along each dim i."""

    name = "nn.tile"
    traits = frozenset({Pure})
    input = operand()
    repeats = operand(dtypes=I64)
    output = result()

    def infer(self):
        t = tensor(self.input)
        if t.shape is None:
            return [t]
        reps = shape_operand(self.repeats, "repeats")  # may be computed from shapes too
        if reps is None:
            return [t.with_shape((None,) * len(t.shape))]
        if len(reps) != len(t.shape):
            raise PirError(f"repeats has {len(reps)} elements for the {len(t.shape)} dims of {t}")
        return [t.with_shape(dim_product((d, r)) for d, r in zip(t.shape, reps))]


# -- padding and cropping ----------------------------------------------------------------------

PAD_MODES = ("constant", "reflect", "edge", "wrap")


class Pad(Operation):
    """output = data padded by pads ([begins..., ends...] for axes, all axes when absent;
    negative pads crop) with constant_value, or by reflecting, repeating the edge, or
    wrapping around."""

    name = "nn.pad"
    traits = frozenset({Pure})
    data = operand()
    pads = operand(dtypes=I64)
    constant_value = operand(optional=True)
    axes = operand(optional=True, dtypes=INDEX)
    mode = attr(STR, "constant")
    output = result()

    def verify_(self):
        if self.mode not in PAD_MODES:
            raise PirError(f"mode '{self.mode}' is not one of {', '.join(PAD_MODES)}")

    def infer(self):
        t = tensor(self.data)
        if t.shape is None:
            return [t]
        rank = len(t.shape)
        pads = shape_value(self.pads)  # constant, or computed from shapes
        axes = const_ints(self.axes) if self.axes is not None else list(range(rank))
        if pads is None or axes is None:
            return [t.with_shape((None,) * rank)]
        axes = unique_axes(axes, rank)
        if len(pads) != 2 * len(axes):
            raise PirError(f"pads has {len(pads)} elements for {len(axes)} axes, expected "
                           f"{2 * len(axes)}")
        dims = list(t.shape)
        for k, a in enumerate(axes):
            dims[a] = add_dim(dims[a], de.add(pads[k], pads[k + len(axes)]))
        return [t.with_shape(dims)]


class CenterCropPad(Operation):
    """output_data = input_data centre-cropped or zero-padded to shape along axes."""

    name = "nn.center_crop_pad"
    traits = frozenset({Pure})
    input_data = operand()
    shape = operand(dtypes=INDEX)
    axes = attr(INTS, None)
    output_data = result()

    def infer(self):
        t = tensor(self.input_data)
        if t.shape is None:
            return [t]
        rank = len(t.shape)
        axes = unique_axes(list(self.axes) if self.axes is not None else list(range(rank)), rank)
        target = shape_operand(self.shape, "the shape")
        if target is not None and len(target) != len(axes):
            raise PirError(f"shape has {len(target)} elements for {len(axes)} axes")
        dims = list(t.shape)
        for k, a in enumerate(axes):
            dims[a] = target[k] if target is not None else None
        return [t.with_shape(dims)]


# -- blocks -----------------------------------------------------------------------------------

_BLOCK_MODES = ("DCR", "CRD")


class _BlockOp(Operation):
    traits = frozenset({Pure})
    input = operand()
    blocksize = attr(INT)
    mode = attr(STR, "DCR")
    output = result()

    def verify_(self):
        if self.mode not in _BLOCK_MODES:
            raise PirError(f"mode '{self.mode}' is not DCR or CRD")
        if self.blocksize < 1:
            raise PirError(f"blocksize must be positive, got {self.blocksize}")

    def _nchw(self) -> tuple[TensorType, tuple[Dim, ...]]:
        t = tensor(self.input)
        if t.shape is not None and len(t.shape) != 4:
            raise PirError(f"input must be 4-d (NCHW), got {t}")
        return t, t.shape if t.shape is not None else (None,) * 4


class DepthToSpace(_BlockOp):
    """output = input with blocks of channels moved into blocksize x blocksize spatial
    tiles (depth-column-row order for DCR, column-row-depth for CRD)."""

    name = "nn.depth_to_space"

    def infer(self):
        t, (n, c, h, w) = self._nchw()
        b = self.blocksize
        return [t.with_shape((n, divide_dim(c, b * b, "channels"), dim_product((h, b)),
                              dim_product((w, b))))]


class SpaceToDepth(_BlockOp):
    """output = input with blocksize x blocksize spatial tiles moved into channels (the
    inverse of depth_to_space in the same mode)."""

    name = "nn.space_to_depth"

    def infer(self):
        t, (n, c, h, w) = self._nchw()
        b = self.blocksize
        return [t.with_shape((n, dim_product((c, b * b)), divide_dim(h, b, "height"),
                              divide_dim(w, b, "width")))]


class ReverseSequence(Operation):
    """Y = input with the first sequence_lens[i] elements along time_axis reversed, for
    each batch entry i along batch_axis."""

    name = "nn.reverse_sequence"
    traits = frozenset({Pure})
    input = operand()
    sequence_lens = operand(dtypes=I64)
    batch_axis = attr(INT, 1)
    time_axis = attr(INT, 0)
    y = result()

    def infer(self):
        t = tensor(self.input)
        if t.shape is not None and len(t.shape) < 2:
            raise PirError(f"input must have rank >= 2, got {t}")
        if sorted((self.batch_axis, self.time_axis)) != [0, 1]:
            raise PirError("batch_axis and time_axis must be 0 and 1, one each")
        return [t]


class Col2Im(Operation):
    """output = the sliding blocks of input (N x C*prod(block_shape) x L) summed back into
    an image of image_shape (the inverse of im2col)."""

    name = "nn.col2im"
    traits = frozenset({Pure})
    input = operand()
    image_shape = operand(dtypes=I64)
    block_shape = operand(dtypes=I64)
    dilations = attr(INTS, None)
    pads = attr(INTS, None)
    strides = attr(INTS, None)
    output = result()

    def infer(self):
        t = tensor(self.input)
        if t.shape is not None and len(t.shape) != 3:
            raise PirError(f"input must be 3-d (N x C*prod(block_shape) x L), got {t}")
        image = shape_operand(self.image_shape, "image_shape")
        block = const_ints(self.block_shape)
        n, c = (t.shape[0], t.shape[1]) if t.shape is not None else (None, None)
        if block is not None:
            c = divide_dim(c, math.prod(block), "input dim 1")
        if image is None:
            return [t.with_shape(None)]
        for name in ("dilations", "strides"):
            if getattr(self, name) is not None and len(getattr(self, name)) != len(image):
                raise PirError(f"{name} needs {len(image)} elements")
        return [t.with_shape((n, c) + tuple(image))]

"""Reference rules for data movement (reshape, transpose, concat, split, slice, pad ...)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from pir.ir.dialects.nn.symbolic import split_sizes
from pir.ir.typerules import normalize_axis
from pir.runtimes.reference.registry import evaluates, operand_arrays


def _ints(a) -> list[int]:
    return [int(x) for x in np.asarray(a).reshape(-1)]


@evaluates("nn.reshape")
def reshape(op, x, shape):
    target = [x.shape[i] if s == 0 and not op.allowzero else s for i, s in enumerate(_ints(shape))]
    return x.reshape(target)


@evaluates("nn.flatten")
def flatten(op, x):
    axis = op.axis + x.ndim if op.axis < 0 else op.axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@evaluates("nn.squeeze")
def squeeze(op, x, axes=None):
    return np.squeeze(x) if axes is None else np.squeeze(x, axis=tuple(_ints(axes)))


@evaluates("nn.unsqueeze")
def unsqueeze(op, x, axes):
    axes = _ints(axes)
    return np.expand_dims(x, tuple(normalize_axis(a, x.ndim + len(axes)) for a in axes))


@evaluates("nn.transpose")
def transpose(op, x):
    return np.transpose(x, op.perm)


@evaluates("nn.concat")
def concat(op, *xs):
    return np.concatenate(xs, axis=op.axis)


@evaluates("nn.split")
def split(op, x, sizes=None):
    axis = normalize_axis(op.axis, x.ndim)
    count = op.num_outputs if sizes is None else None
    sizes = split_sizes(x.shape[axis], None if sizes is None else _ints(sizes), count)
    return tuple(np.split(x, list(itertools.accumulate(sizes))[:-1], axis=axis))


@evaluates("nn.slice")
def slice_(op, *arrays):
    a = operand_arrays(op, arrays)
    x = a["data"]
    starts, ends = _ints(a["starts"]), _ints(a["ends"])
    axes = _ints(a["axes"]) if a["axes"] is not None else list(range(len(starts)))
    steps = _ints(a["steps"]) if a["steps"] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        index[normalize_axis(axis, x.ndim)] = slice(start, end, step)  # clamps as ONNX does
    return x[tuple(index)]


@evaluates("nn.expand")
def expand(op, x, shape):
    return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(_ints(shape)))).copy()


@evaluates("nn.tile")
def tile(op, x, repeats):
    return np.tile(x, _ints(repeats))


_NUMPY_PAD_MODE = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


@evaluates("nn.pad")
def pad(op, *arrays):
    a = operand_arrays(op, arrays)
    x, pads = a["data"], _ints(a["pads"])
    axes = _ints(a["axes"]) if a["axes"] is not None else list(range(x.ndim))
    widths = [[0, 0] for _ in range(x.ndim)]
    for k, axis in enumerate(axes):
        widths[normalize_axis(axis, x.ndim)] = [pads[k], pads[k + len(axes)]]
    # Negative pads crop: cut first, then pad what is left.
    crop = tuple(slice(-min(b, 0), x.shape[i] + min(e, 0)) for i, (b, e) in enumerate(widths))
    x = x[crop]
    grow = [(max(b, 0), max(e, 0)) for b, e in widths]
    if op.mode == "constant":
        value = a["constant_value"]
        fill = np.asarray(value).reshape(-1)[0] if value is not None and np.size(value) else 0
        return np.pad(x, grow, mode="constant", constant_values=fill).astype(x.dtype)
    return np.pad(x, grow, mode=_NUMPY_PAD_MODE[op.mode])


@evaluates("nn.center_crop_pad")
def center_crop_pad(op, x, shape):
    axes = op.axes if op.axes is not None else range(x.ndim)
    src = [slice(None)] * x.ndim
    dst = [slice(None)] * x.ndim
    out_shape = list(x.shape)
    for axis, size in zip(axes, _ints(shape)):
        axis = normalize_axis(axis, x.ndim)
        dim = x.shape[axis]
        out_shape[axis] = size
        if size < dim:  # crop: the extra element of an odd difference goes to the end
            start = (dim - size) // 2
            src[axis] = slice(start, start + size)
        elif size > dim:  # pad with zeros, the same way round
            start = (size - dim) // 2
            dst[axis] = slice(start, start + dim)
    out = np.zeros(out_shape, x.dtype)
    out[tuple(dst)] = x[tuple(src)]
    return out


@evaluates("nn.depth_to_space")
def depth_to_space(op, x):
    n, c, h, w = x.shape
    b = op.blocksize
    if op.mode == "DCR":
        tmp = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        tmp = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return tmp.reshape(n, c // (b * b), h * b, w * b)


@evaluates("nn.space_to_depth")
def space_to_depth(op, x):
    n, c, h, w = x.shape
    b = op.blocksize
    tmp = x.reshape(n, c, h // b, b, w // b, b)
    perm = (0, 3, 5, 1, 2, 4) if op.mode == "DCR" else (0, 1, 3, 5, 2, 4)
    return tmp.transpose(perm).reshape(n, c * b * b, h // b, w // b)


@evaluates("nn.reverse_sequence")
def reverse_sequence(op, x, lens):
    out = x.copy()
    for i, n in enumerate(_ints(lens)):
        src = [slice(None)] * x.ndim
        dst = [slice(None)] * x.ndim
        src[op.batch_axis] = dst[op.batch_axis] = i
        dst[op.time_axis] = slice(0, n)
        src[op.time_axis] = slice(n - 1, None, -1) if n > 0 else slice(0, 0)
        out[tuple(dst)] = x[tuple(src)]
    return out


@evaluates("nn.col2im")
def col2im(op, x, image_shape, block_shape):
    image, block = _ints(image_shape), _ints(block_shape)
    nd = len(image)
    dil = list(op.dilations or [1] * nd)
    strides = list(op.strides or [1] * nd)
    pads = list(op.pads or [0] * (2 * nd))
    begin, end = pads[:nd], pads[nd:]
    cols = [(image[i] + begin[i] + end[i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
            for i in range(nd)]
    n, ck = x.shape[0], x.shape[1]
    c = ck // math.prod(block)
    if x.shape[2] != math.prod(cols):
        raise ValueError(f"input has {x.shape[2]} blocks, the image shape gives {cols}")
    blocks = x.reshape(n, c, *block, *cols)
    # Sum every kernel offset's block grid into a padded image, then cut the padding away.
    padded = np.zeros((n, c, *[image[i] + begin[i] + end[i] for i in range(nd)]), x.dtype)
    for offset in itertools.product(*[range(k) for k in block]):
        where = tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                      for o, d, s, m in zip(offset, dil, strides, cols))
        padded[(slice(None), slice(None)) + where] += blocks[(slice(None), slice(None)) + offset]
    crop = tuple(slice(b, b + size) for b, size in zip(begin, image))
    return padded[(slice(None), slice(None)) + crop]

"""Decomposition of nn.resize where it is a repetition: nearest-neighbour upsampling by whole
factors (the ``Upsample(scale_factor=2)`` of every FPN and U-Net neck).

Output index ``i = k*s + j`` (``0 <= j < s``) of an axis upsampled by an integer ``s`` reads
input ``k`` whenever the coordinate mode and the rounding agree on it:

- ``asymmetric``: ``i / s = k + j/s``, so ``floor`` gives k (the rounding modes do not: j/s
  reaches 1/2);
- ``half_pixel``, ``half_pixel_symmetric`` and ``pytorch_half_pixel``: ``(i + 1/2)/s - 1/2``
  lies strictly within ``k +- 1/2``, so both ``round_prefer_*`` modes give k (``floor`` and
  ``ceil`` do not);
- ``tf_half_pixel_for_nn``: ``(i + 1/2)/s`` lies strictly within ``(k, k + 1)``: ``floor``.

Then the result is the input broadcast along a new axis of length ``s`` after each upsampled
axis and reshaped to merge each pair, ``[N, C, H, W] -> [N, C, H, 2, W, 2] -> [N, C, 2H, 2W]``
(``jnp.repeat``'s form): two data-movement prims the fuser folds into the consumer, for any
symbolic H and W.  Every other resize stays an nn op.
"""

from __future__ import annotations

from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.resize import resize_plan
from pir.ir.dialects.nn.shape import shape_value
from pir.ir.typerules import const_value, tensor
from pir.ir.types import TensorType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes

#: coordinate mode -> the nearest modes under which an integer upsampling repeats (above)
_REPEATS = {
    "asymmetric": {"floor"},
    "half_pixel": {"round_prefer_floor", "round_prefer_ceil"},
    "half_pixel_symmetric": {"round_prefer_floor", "round_prefer_ceil"},
    "pytorch_half_pixel": {"round_prefer_floor", "round_prefer_ceil"},
    "tf_half_pixel_for_nn": {"floor"},
}

_KEPT = "interpolation other than nearest upsampling by whole factors; no prim form yet"


def repeat_factors(op: Operation) -> list[int] | None:
    """The whole factor of every axis when ``op`` is a nearest upsampling that repeats its
    input (module docstring), else None."""
    if op.mode != "nearest" or op.antialias:
        return None
    x = tensor(op.x)
    if x.shape is None:
        return None
    _, scale_of = resize_plan(x.shape, const_value(op.scales), shape_value(op.sizes),
                              op.axes, op.keep_aspect_ratio_policy)
    if any(s is None or s < 1 or s != int(s) for s in scale_of):
        return None
    factors = [int(s) for s in scale_of]
    if any(s > 1 for s in factors) and \
            op.nearest_mode not in _REPEATS.get(op.coordinate_transformation_mode, ()):
        return None
    return factors


@decomposes("nn.resize")
def resize(b: PrimBuilder, op: Operation) -> list[Value]:
    factors = repeat_factors(op)
    if factors is None:
        raise Keep(_KEPT)
    x = tensor(op.x)
    shape = b.known(x.shape, "resize input")
    spread, dims = [], []
    for d, s in zip(shape, factors):
        dims.append(len(spread))
        spread.append(d)
        if s > 1:
            spread.append(s)
    y = b.op("broadcast_in_dim", op.x, broadcast_dimensions=tuple(dims),
             result_type=TensorType(x.dtype, tuple(spread)))
    return [b.reshape(y, b.known(tensor(op.y).shape, "resize result"))]

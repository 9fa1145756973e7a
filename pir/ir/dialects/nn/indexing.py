"""Gather and scatter: reading and writing tensor elements at computed indices.

Index operands hold i32 or i64; a negative index counts from the end of its axis (ONNX).
The scatter ops are functional: they return an updated copy of ``data``.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir import dimexpr as de
from pir.ir.attributes import INT, INTS, STR
from pir.ir.core import Operation
from pir.ir.dialects.nn.shape import shape_value
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import normalize_axis, tensor
from pir.ir.types import DType

__all__ = [
    "INDEX_DTYPES", "check_choice", "Gather", "GatherElements", "GatherND", "ScatterElements",
    "ScatterND", "TensorScatter", "MaxUnpool",
]

INDEX_DTYPES = frozenset({DType.I32, DType.I64})
REDUCTIONS = ("none", "add", "mul", "max", "min")


def check_choice(op: Operation, attr_name: str, choices: tuple[str, ...]) -> str:
    """The value of a string attribute, which must be one of ``choices``."""
    value = getattr(op, attr_name)
    if value not in choices:
        raise PirError(f"{attr_name} must be one of {', '.join(repr(c) for c in choices)}, "
                       f"got {value!r}")
    return value


def _rank(v, what: str, rank: int | None = None, at_least: int = 0) -> int | None:
    """The rank of operand ``v`` (None when unranked), checked against ``rank``/``at_least``."""
    shape = tensor(v).shape
    if shape is None:
        return None
    if rank is not None and len(shape) != rank:
        raise PirError(f"{what} must have rank {rank}, got {tensor(v)}")
    if len(shape) < at_least:
        raise PirError(f"{what} must have rank >= {at_least}, got {tensor(v)}")
    return len(shape)


class Gather(Operation):
    """out = take(data, indices, axis): data.shape[:axis] + indices.shape + data.shape[axis+1:]."""

    name = "nn.gather"
    traits = frozenset({Pure})
    data = operand()
    indices = operand(dtypes=INDEX_DTYPES)
    axis = attr(INT, 0)
    out = result()

    def infer(self):
        td, ti = tensor(self.data), tensor(self.indices)
        if td.shape is None:
            return [td.with_shape(None)]
        if not td.shape:
            raise PirError("data must have rank >= 1, got a scalar")
        axis = normalize_axis(self.axis, len(td.shape))
        if ti.shape is None:
            return [td.with_shape(None)]
        return [td.with_shape(td.shape[:axis] + ti.shape + td.shape[axis + 1:])]


class GatherElements(Operation):
    """out[i][j][k] = data[index][j][k] with index = indices[i][j][k] on ``axis`` (and so on)."""

    name = "nn.gather_elements"
    traits = frozenset({Pure})
    data = operand()
    indices = operand(dtypes=INDEX_DTYPES)
    axis = attr(INT, 0)
    out = result()

    def infer(self):
        td, ti = tensor(self.data), tensor(self.indices)
        r = _rank(self.data, "data", at_least=1)
        if r is not None:
            normalize_axis(self.axis, r)
            _rank(self.indices, "indices", rank=r)
        return [td.with_shape(ti.shape)]


class GatherND(Operation):
    """Gathers slices of data at the index tuples held in the last axis of ``indices``,
    the first ``batch_dims`` axes being batch axes shared by data and indices."""

    name = "nn.gather_nd"
    traits = frozenset({Pure})
    data = operand()
    indices = operand(dtypes=INDEX_DTYPES)
    batch_dims = attr(INT, 0)
    out = result()

    def infer(self):
        td, ti = tensor(self.data), tensor(self.indices)
        b = self.batch_dims
        r = _rank(self.data, "data", at_least=1)
        q = _rank(self.indices, "indices", at_least=1)
        if b < 0 or (r is not None and b >= r) or (q is not None and b >= q):
            raise PirError(f"batch_dims {b} must be >= 0 and less than the ranks of data and "
                           f"indices ({td}, {ti})")
        if r is None or q is None or not isinstance(ti.shape[-1], int):
            return [td.with_shape(None)]
        k = ti.shape[-1]
        if k < 1 or k > r - b:
            raise PirError(f"indices.shape[-1] = {k} must be in [1, {r - b}] (rank of data "
                           f"minus batch_dims)")
        return [td.with_shape(ti.shape[:-1] + td.shape[b + k:])]


class _Scatter(Operation):
    """Shared shape of the scatter ops: data, indices, updates -> a copy of data."""

    traits = frozenset({Pure})
    data = operand()
    indices = operand(dtypes=INDEX_DTYPES)
    updates = operand()
    reduction = attr(STR, "none")
    out = result()

    def infer(self):
        check_choice(self, "reduction", REDUCTIONS)
        td, tu = tensor(self.data), tensor(self.updates)
        if tu.dtype != td.dtype:
            raise PirError(f"updates have element type {tu.dtype.value}, data "
                           f"{td.dtype.value}")
        self.check_shapes()
        return [td]

    def check_shapes(self) -> None:
        """Rank checks specific to each scatter op."""


class ScatterElements(_Scatter):
    """out = data, then out[.., indices[i, j], ..] (reduction)= updates[i, j] on ``axis``."""

    name = "nn.scatter_elements"
    axis = attr(INT, 0)

    def check_shapes(self) -> None:
        r = _rank(self.data, "data", at_least=1)
        if r is None:
            return
        normalize_axis(self.axis, r)
        _rank(self.indices, "indices", rank=r)
        ti, tu = tensor(self.indices), tensor(self.updates)
        if ti.shape is not None and tu.shape is not None and _conflict(ti.shape, tu.shape):
            raise PirError(f"updates {tu} must have the shape of indices {ti}")


class ScatterND(_Scatter):
    """out = data, then out[indices[i, :]] (reduction)= updates[i] for each index tuple."""

    name = "nn.scatter_nd"

    def check_shapes(self) -> None:
        td, ti, tu = tensor(self.data), tensor(self.indices), tensor(self.updates)
        r = _rank(self.data, "data", at_least=1)
        q = _rank(self.indices, "indices", at_least=1)
        if r is None or q is None or tu.shape is None or not isinstance(ti.shape[-1], int):
            return
        k = ti.shape[-1]
        if k > r:
            raise PirError(f"indices.shape[-1] = {k} exceeds the rank of data {td}")
        want = ti.shape[:-1] + td.shape[k:]
        if _conflict(want, tu.shape):
            raise PirError(f"updates {tu} must have shape indices.shape[:-1] + "
                           f"data.shape[{k}:] = {td.with_shape(want)}")


class TensorScatter(Operation):
    """A KV-cache update: writes ``update`` into ``past_cache`` along ``axis`` at each batch
    row's ``write_indices`` (0 when absent), wrapping around in "circular" mode."""

    name = "nn.tensor_scatter"
    traits = frozenset({Pure})
    past_cache = operand()
    update = operand()
    write_indices = operand(optional=True, dtypes=INDEX_DTYPES)
    axis = attr(INT, -2)
    mode = attr(STR, "linear")
    present_cache = result()

    def infer(self):
        check_choice(self, "mode", ("linear", "circular"))
        tc, tu = tensor(self.past_cache), tensor(self.update)
        r = _rank(self.past_cache, "past_cache", at_least=2)
        if r is not None:
            axis = normalize_axis(self.axis, r)
            if axis == 0:
                raise PirError("axis cannot be 0, the batch axis")
            _rank(self.update, "update", rank=r)
            if tu.shape is not None:
                others = [i for i in range(r) if i != axis]
                if _conflict([tc.shape[i] for i in others], [tu.shape[i] for i in others]):
                    raise PirError(f"update {tu} must match past_cache {tc} except on axis "
                                   f"{axis}")
        return [tc]


class MaxUnpool(Operation):
    """The partial inverse of MaxPool: zeros, with X's values written at the flat positions
    ``I`` (MaxPool's indices) of the unpooled shape, padded up to ``output_shape`` if given."""

    name = "nn.max_unpool"
    traits = frozenset({Pure})
    x = operand()
    i = operand(dtypes=frozenset({DType.I64}))
    output_shape = operand(optional=True, dtypes=frozenset({DType.I64}))
    kernel_shape = attr(INTS)
    pads = attr(INTS, ())
    strides = attr(INTS, ())
    y = result()

    def infer(self):
        tx = tensor(self.x)
        if self.output_shape is not None:
            return [tx.with_shape(shape_value(self.output_shape))]
        if tx.shape is None:
            return [tx]
        return [tx.with_shape(unpooled_shape(self, tx.shape))]


def unpooled_shape(op: MaxUnpool, x_shape: tuple) -> tuple:
    """MaxUnpool's shape from its attributes: (in - 1) * stride - pads + kernel per axis."""
    k = op.kernel_shape
    if len(x_shape) != len(k) + 2:
        raise PirError(f"X must have rank {len(k) + 2} for a kernel of {len(k)} dims, got "
                       f"rank {len(x_shape)}")
    strides = op.strides or (1,) * len(k)
    pads = op.pads or (0,) * (2 * len(k))
    if len(strides) != len(k) or len(pads) != 2 * len(k):
        raise PirError(f"strides {list(strides)} and pads {list(pads)} do not match "
                       f"kernel_shape {list(k)}")
    out = list(x_shape[:2])
    for a, d in enumerate(x_shape[2:]):
        out.append(de.add(de.mul(de.sub(d, 1), strides[a]), k[a] - pads[a] - pads[a + len(k)]))
    return tuple(out)


def _conflict(a, b) -> bool:
    """True when two shapes certainly differ (different rank, or two static dims differ)."""
    if len(a) != len(b):
        return True
    return any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a, b))

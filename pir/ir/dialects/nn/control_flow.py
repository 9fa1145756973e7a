"""Control flow: ONNX If, Loop and Scan, with their bodies as regions.

Each body is a one-block region ending with ``nn.yield``; its block arguments are the values
the op passes in each iteration, and it may use any value of the enclosing blocks (the ONNX
subgraphs' captured outer values).  Result types come from the yielded values' types.
None of these ops is Pure: their bodies may hold random ops.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import INT, INTS
from pir.ir.core import Operation, Region, Value
from pir.ir.dialects.nn.base import YieldOp
from pir.ir.opdef import attr, operand, region, result
from pir.ir.typerules import normalize_axis, tensor
from pir.ir.types import DType, TensorType

__all__ = ["If", "Loop", "Scan", "yielded", "join_types"]


def yielded(region: Region, what: str) -> list[Value]:
    """The values the region's ``nn.yield`` passes out."""
    if len(region.blocks) != 1:
        raise PirError(f"the {what} region must have exactly one block")
    term = region.block.terminator
    if not isinstance(term, YieldOp):
        raise PirError(f"the {what} region must end with nn.yield")
    return list(term.operands)


def join_types(a: TensorType, b: TensorType, what: str) -> TensorType:
    """The most precise type covering both ``a`` and ``b`` (dims that differ become unknown)."""
    if a.dtype != b.dtype:
        raise PirError(f"{what}: element types {a.dtype.value} and {b.dtype.value} differ")
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return TensorType(a.dtype, None)
    return TensorType(a.dtype, tuple(x if x == y else None for x, y in zip(a.shape, b.shape)))


def _is_scalar_like(t: TensorType) -> bool:
    """A one-element tensor (rank 0, or every dim 1), as ONNX accepts for conditions."""
    return t.shape is None or all(d in (1, None) for d in t.shape)


def _stacked(t: TensorType, axis: int, length) -> TensorType:
    """``t`` with a new axis of size ``length`` inserted at ``axis`` (per-iteration outputs)."""
    if t.shape is None:
        return t
    axis = normalize_axis(axis, len(t.shape) + 1)
    return TensorType(t.dtype, t.shape[:axis] + (length,) + t.shape[axis:])


class If(Operation):
    """Runs then_branch when cond is true, else else_branch; the results are what it yields."""

    name = "nn.if"
    cond = operand(dtypes={DType.BOOL})
    then_branch = region()
    else_branch = region()
    outputs = result(variadic=True)

    def infer(self):
        then = yielded(self.then_branch, "then_branch")
        other = yielded(self.else_branch, "else_branch")
        if len(then) != len(other):
            raise PirError(f"then_branch yields {len(then)} values, else_branch {len(other)}")
        return [join_types(tensor(a), tensor(b), f"branch output {i}")
                for i, (a, b) in enumerate(zip(then, other))]

    def verify_(self):
        if not _is_scalar_like(tensor(self.cond)):
            raise PirError(f"cond must hold one element, got {self.cond.type}")
        for r, what in ((self.then_branch, "then_branch"), (self.else_branch, "else_branch")):
            if r.block.args:
                raise PirError(f"the {what} block takes no arguments")


class Loop(Operation):
    """A loop of at most m iterations that runs while cond holds (ONNX Loop).

    The body's block arguments are (iteration number: i64, cond: i1, carried...); it yields
    (cond, carried..., scan outputs...).  The results are the final carried values, then each
    scan output stacked over the iterations along a new leading axis.  As in ONNX Runtime, an
    absent ``cond`` starts true and the body's cond is always honoured.
    """

    name = "nn.loop"
    m = operand(optional=True, dtypes={DType.I64})
    cond = operand(optional=True, dtypes={DType.BOOL})
    initial = operand(variadic=True)
    body = region()
    outputs = result(variadic=True)

    def infer(self):
        outs = yielded(self.body, "body")
        n = len(self.initial)
        if len(outs) < 1 + n:
            raise PirError(f"the body yields {len(outs)} values; it must yield the condition "
                           f"and the {n} carried values")
        carried = [join_types(tensor(v), tensor(o), f"carried value {i}")
                   for i, (v, o) in enumerate(zip(self.initial, outs[1:1 + n]))]
        scans = [_stacked(tensor(o), 0, None) for o in outs[1 + n:]]
        return carried + scans

    def verify_(self):
        args = self.body.block.args
        n = len(self.initial)
        if len(args) != 2 + n:
            raise PirError(f"the body takes {len(args)} arguments, expected {2 + n} "
                           "(iteration number, condition, carried values)")
        for v, what in ((self.m, "m"), (self.cond, "cond")):
            if v is not None and not _is_scalar_like(tensor(v)):
                raise PirError(f"{what} must hold one element, got {v.type}")
        if tensor(yielded(self.body, "body")[0]).dtype is not DType.BOOL:
            raise PirError("the body's first yielded value (the condition) must be i1")


class Scan(Operation):
    """Iterates the body over slices of the scan inputs, carrying state (ONNX Scan).

    ``inputs`` are the N initial states then the ``num_scan_inputs`` scan inputs; the body takes
    (states..., one slice of each scan input...) and yields (states..., scan output slices...).
    The results are the final states, then each scan output stacked along its output axis.
    Empty axis/direction lists mean axis 0 and forward for every input or output.
    """

    name = "nn.scan"
    inputs = operand(variadic=True)
    num_scan_inputs = attr(INT)
    scan_input_axes = attr(INTS, ())
    scan_input_directions = attr(INTS, ())
    scan_output_axes = attr(INTS, ())
    scan_output_directions = attr(INTS, ())
    body = region()
    outputs = result(variadic=True)

    @property
    def num_states(self) -> int:
        m = self.num_scan_inputs
        if not 1 <= m <= len(self.inputs):
            raise PirError(f"num_scan_inputs is {m}, but the op has {len(self.inputs)} inputs")
        return len(self.inputs) - m

    def input_axis(self, i: int, rank: int) -> int:
        axes = self.scan_input_axes
        return normalize_axis(axes[i] if axes else 0, rank)

    def sequence_length(self):
        """The number of iterations: the scanned dim of the first scan input (None if unknown)."""
        t = tensor(self.inputs[self.num_states])
        if t.shape is None:
            return None
        return t.shape[self.input_axis(0, len(t.shape))]

    def infer(self):
        outs = yielded(self.body, "body")
        n = self.num_states
        if len(outs) < n:
            raise PirError(f"the body yields {len(outs)} values, fewer than the {n} states")
        states = [join_types(tensor(v), tensor(o), f"state {i}")
                  for i, (v, o) in enumerate(zip(self.inputs, outs[:n]))]
        axes = self.scan_output_axes
        length = self.sequence_length()
        scans = [_stacked(tensor(o), axes[k] if axes else 0, length)
                 for k, o in enumerate(outs[n:])]
        return states + scans

    def verify_(self):
        m = self.num_scan_inputs
        k = len(yielded(self.body, "body")) - self.num_states
        for key, count in (("scan_input_axes", m), ("scan_input_directions", m),
                           ("scan_output_axes", k), ("scan_output_directions", k)):
            value = getattr(self, key)
            if value and len(value) != count:
                raise PirError(f"{key} has {len(value)} entries, expected {count}")
        lengths = set()
        for j, v in enumerate(self.inputs[self.num_states:]):
            t = tensor(v)
            if t.shape is not None:
                d = t.shape[self.input_axis(j, len(t.shape))]
                lengths.update([d] if isinstance(d, int) else [])
        if len(lengths) > 1:
            raise PirError(f"the scan inputs have different lengths {sorted(lengths)} on their "
                           "scanned axes")
        if len(self.body.block.args) != len(self.inputs):
            raise PirError(f"the body takes {len(self.body.block.args)} arguments, expected "
                           f"{len(self.inputs)} (states, then one slice per scan input)")

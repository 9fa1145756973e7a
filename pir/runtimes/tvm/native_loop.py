"""A scan whose body is compiled kernels only, run in one native call (native_loop.c).

After ``decompose``, an LSTM or GRU is an ``nn.scan`` whose body is three or four small
kernels a step.  Run by the interpreter, each iteration costs a body plan's run
(pir.runtimes.tvm.plan), 10-15 us of Python for 2-3 us of kernels: PLCMOS's GRUs (hidden
size 32, 4 x 245 steps) took 14 ms where ONNX Runtime's took 0.75.  A :class:`ScanLoop`
prepares, once per body plan, the argument list of every kernel call of an iteration
(constants, the plan's slots, integer dims), with one ``DLTensor`` for each value that
changes per iteration; a run then gives those their memory and runs every iteration in C:

* the rows of each scan input, read in place (a copy of the input where it is not 64-byte
  aligned, as TVM needs, or where dims above 1 come before its scan axis: the axis moved
  to the front);
* the rows of each scan output, written in place into the stacked result (moved to its
  axis after the loop, in one copy, where dims above 1 come before that axis);
* each state: the row of the scan output it also is (a GRU's output is its state), else two
  buffers used in turn, so that an iteration never overwrites the state it reads.

What this cannot express runs as before, one plan run per iteration: a body with an op that
is no kernel, rows whose size is no multiple of 64 bytes, a body output that is one of its
arguments or two of its outputs, dims a run must learn, runs that keep every value (``pir run
--check``) and kernels built with bounds checks.  The C file is compiled once per machine
into the kernel cache, with the compiler TVM links kernels with; where that fails, every
scan takes the interpreter's path.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

import tvm
import tvm_ffi

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.ir.dialects.kernel import TvmKernelOp
from pir.ir.types import bound_shape
from pir.runtimes.aligned import ALIGN, address, aligned_empty
from pir.runtimes.tvm.buffers import as_tvm
from pir.runtimes.tvm.ffi_abi import (ANY_INT, ANY_TENSOR, ANY_TENSOR_PTR, CPU,
                                      SEQ_PREVIOUS, SEQ_ROWS, SEQ_SWAP, DLTensor, Seq,
                                      TVMFFIAny, dl_dtype, native_loops, take_error)

__all__ = ["ScanLoop"]

class ScanLoop:
    """The iterations of one ``nn.scan`` under one plan of its body: :meth:`run` them, or
    None from :meth:`build` where the body or the scan is not of the form this runs."""

    @classmethod
    def build(cls, op: Operation, plan) -> ScanLoop | None:
        if native_loops() is None or plan.assumed or plan.unsized:
            return None
        n, m = op.num_states, op.num_scan_inputs
        block = op.body.block
        steps = [o for o, _ in plan.steps]
        if not steps or not all(isinstance(o, TvmKernelOp) for o in steps) \
                or any(o.parent is not block for o in steps):
            return None
        outs = list(block.ops[-1].operands)
        produced = {r for o in steps for r in o.results}
        if any(v not in produced or not plan.slots[plan.slot_of[v]].fresh for v in outs) \
                or len(set(outs[n:])) != len(outs[n:]) or len(set(outs[:n])) != n:
            return None  # an output that is an argument, a constant, or two scan outputs
        self = cls(op, plan, n, m)
        return self if self._prepare() else None

    def __init__(self, op: Operation, plan, n: int, m: int):
        self.op, self.plan, self.n, self.m = op, plan, n, m
        self.block = op.body.block
        self.keep: list = []  # what the argument list points into, alive as long as it is
        self.runs = 0  # runs of the whole scan in C (what the tests count)

    def _tensor_for(self, v: Value, shape: tuple[int, ...], dtype: np.dtype) -> DLTensor | None:
        """The one DLTensor of a value that changes per iteration (its data set per run)."""
        t = self.patched.get(v)
        if t is None:
            code = dl_dtype(dtype)
            if code is None:
                return None
            dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            t = DLTensor(None, CPU, len(shape), code, dims, None, 0)
            self.keep.append(dims)
            self.patched[v] = t
            self.shapes[v] = tuple(shape)
            self.row_bytes[v] = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return t

    def _prepare(self) -> bool:
        plan, block = self.plan, self.block
        self.patched: dict[Value, DLTensor] = {}
        self.shapes: dict[Value, tuple[int, ...]] = {}
        self.row_bytes: dict[Value, int] = {}
        self.dtypes: dict[Value, np.dtype] = {}
        for a in block.args:
            shape = bound_shape(a.type, plan.symbols)
            if shape is None:
                return False
            self.dtypes[a] = np.dtype(a.type.dtype.numpy)
            if self._tensor_for(a, shape, self.dtypes[a]) is None:
                return False
        funcs, starts, args = [], [0], []
        self.outer: list[tuple[int, Value]] = []  # argument positions of enclosing values
        for op in (o for o, _ in plan.steps):
            k = plan.program.kernel(op)
            fn = k.function(plan.symbols)
            if not isinstance(fn, tvm_ffi.Function):
                return False  # a Python stand-in (a test's wrapped kernel): the plan's path
            funcs.append(fn.__chandle__())
            self.keep.append(fn)
            for v in op.operands:
                if v in self.patched:
                    args.append(("ptr", self.patched[v]))
                elif plan._tensor(v) is not None:
                    args.append(("tensor", plan._tensor(v)))
                else:  # a value of the enclosing block: its tensor a run
                    self.outer.append((len(args), v))
                    args.append(("outer", v))
            args += [("tensor", p) for p in k.params]
            args += [("int", plan.symbols[d]) for d in k.free]
            for r in op.results:
                if plan.slots[plan.slot_of[r]].fresh:
                    view = plan.views[r]
                    self.dtypes[r] = view.dtype
                    t = self._tensor_for(r, view.shape, view.dtype)
                    if t is None:
                        return False
                    args.append(("ptr", t))
                else:
                    args.append(("tensor", plan._tensor(r)))
            starts.append(len(args))
        outs = block.ops[-1].operands
        axes = list(self.op.scan_output_axes) or [0] * (len(outs) - self.n)
        self.out_axes = [ax % (len(plan.views[v].shape) + 1)
                         for v, ax in zip(outs[self.n:], axes)]
        rows = [*block.args[self.n:], *outs[self.n:]]
        if any(self.row_bytes[v] % ALIGN for v in rows):
            return False  # a row of a scan input or output would be misaligned (states
            # live in buffers of their own)
        self.any_args = (TVMFFIAny * len(args))()
        for i, (kind, x) in enumerate(args):
            a = self.any_args[i]
            if kind == "ptr":
                a.type_index, a.value = ANY_TENSOR_PTR, ctypes.addressof(x)
            elif kind == "tensor":
                a.type_index, a.value = ANY_TENSOR, x.__chandle__()
                self.keep.append(x)
            elif kind == "int":
                a.type_index, a.value = ANY_INT, int(x) & (2 ** 64 - 1)
        self.funcs = (ctypes.c_void_p * len(funcs))(*funcs)
        self.starts = (ctypes.c_int32 * len(starts))(*starts)
        self.n_calls = len(funcs)
        values = list(self.patched)
        self.patch_list = (ctypes.POINTER(DLTensor) * len(values))(
            *(ctypes.pointer(self.patched[v]) for v in values))
        self.patch_values = values
        self._layout()
        return True

    def _layout(self) -> None:
        """The sequences of pointers (native_loop.c's ``pir_seq``), fixed for the loop: the
        scan outputs' rows, the scan inputs' rows, each state's pair of buffers (where it is
        no scan output) and its first value's buffer.  A run only sets the rows' bases."""
        op, n, block = self.op, self.n, self.block
        outs = list(block.ops[-1].operands)
        backward = [bool(d) for d in op.scan_input_directions] or [False] * self.m
        prepend = [bool(d) for d in op.scan_output_directions] or [False] * len(outs[n:])
        seqs, seq_of = [], {}
        for k, v in enumerate(outs[n:]):
            seq_of[v] = len(seqs)
            seqs.append(Seq(SEQ_ROWS, prepend[k], 0, None, None, self.row_bytes[v]))
        for j, a in enumerate(block.args[n:]):
            seq_of[a] = len(seqs)
            seqs.append(Seq(SEQ_ROWS, backward[j], 0, None, None, self.row_bytes[a]))
        self.firsts, self.swap = [], {}
        for a, v in zip(block.args[:n], outs[:n]):
            if v not in seq_of:  # a state that is no scan output: two buffers in turn
                shape, dtype = self.plan.views[v].shape, self.dtypes[v]
                pair = self.swap[v] = (aligned_empty(shape, dtype), aligned_empty(shape, dtype))
                seq_of[v] = len(seqs)
                seqs.append(Seq(SEQ_SWAP, 0, 0, address(pair[0]), address(pair[1]), 0))
            first = aligned_empty(self.shapes[a], self.dtypes[a])  # the state's first value
            self.firsts.append(first)
            seq_of[a] = len(seqs)
            seqs.append(Seq(SEQ_PREVIOUS, 0, seq_of[v], address(first), None, 0))
        self.table = (Seq * len(seqs))(*seqs)
        self.order = (ctypes.c_int32 * len(self.patch_values))(
            *(seq_of[v] for v in self.patch_values))
        self.finals = [(seq_of[v], outs[n:].index(v) if v in outs[n:] else None, v)
                       for v in outs[:n]]
        self.stacked_views = [self.plan.views[v] for v in outs[n:]]

    def run(self, interp, states: list[np.ndarray], xs: list[np.ndarray]) -> tuple | None:
        """The scan's results (its final states, then its stacked outputs), or None when
        these arrays do not fit the prepared form (the caller then runs the plan)."""
        op, n, block = self.op, self.n, self.block
        steps, axes = None, []
        for j, (a, x) in enumerate(zip(block.args[n:], xs)):
            if x.ndim == 0:
                return None
            ax = op.input_axis(j, x.ndim)
            axes.append(ax)
            if x.dtype != self.dtypes[a] or x.shape[:ax] + x.shape[ax + 1:] != self.shapes[a] \
                    or steps not in (None, x.shape[ax]):
                return None
            steps = x.shape[ax]
        if not steps:
            return None
        for a, s in zip(block.args[:n], states):
            if s.shape != self.shapes[a] or s.dtype != self.dtypes[a]:
                return None
        table, keep = self.table, []
        pool = self.plan.outputs  # the stacked outputs are returned: pooled, fresh each run
        stacked = []
        for k, view in enumerate(self.stacked_views):  # the scan outputs' rows, in place
            y, at = pool.empty_at((steps, *view.shape), view.dtype)  # (moved to its axis after)
            stacked.append(y)
            table[k].base = at
        for j, (x, ax) in enumerate(zip(xs, axes), start=len(stacked)):  # the inputs' rows
            # rows along an axis with only unit dims before it are contiguous as they are (a
            # [1, frames, 160] signal); other axes are moved first, in one copy
            x, at = _aligned_at(x if math.prod(x.shape[:ax]) == 1 else np.moveaxis(x, ax, 0))
            keep.append(x)
            table[j].base = at
        for first, s in zip(self.firsts, states):
            np.copyto(first, s)
        for pos, v in self.outer:  # values of the enclosing block, fixed for the whole scan
            arr = interp.values[v]
            known = interp.shared_tensors.get(v)
            t = known[1] if known is not None and known[0] is arr else \
                _as_tensor(arr, keep)
            keep.append(t)
            self.any_args[pos].type_index, self.any_args[pos].value = ANY_TENSOR, t.__chandle__()
        run, call, _ = native_loops()
        failed_at = ctypes.c_int64(0)
        rc = run(call, steps, self.n_calls, self.funcs, self.starts, self.any_args, table,
                 len(self.patch_values), self.patch_list, self.order, ctypes.byref(failed_at))
        self.runs += 1
        if rc:
            take_error()
            kernel = [o for o, _ in self.plan.steps][rc - 1]
            raise PirError(f"{op.describe()}: kernel {kernel.symbol} failed at iteration "
                           f"{failed_at.value} of the scan")
        last = []
        for s, k, v in self.finals:  # the last iteration's states, copied out of the buffers
            if k is None:
                last.append(np.array(self.swap[v][(steps - 1) & 1]))
            else:
                last.append(np.array(stacked[k][0 if table[s].reverse else steps - 1]))
        return tuple(last) + tuple(_at_axis(y, ax, pool) for y, ax in zip(stacked, self.out_axes))


def _at_axis(y: np.ndarray, axis: int, pool) -> np.ndarray:
    """The ``[steps, ...]`` rows of a scan output stacked along ``axis`` instead: ``y`` itself
    where only unit dims come before it, else a copy (in pooled memory, as ``y`` is)."""
    if axis == 0 or math.prod(y.shape[1:axis + 1]) == 1:
        return y.reshape(*y.shape[1:axis + 1], y.shape[0], *y.shape[axis + 1:])
    moved = np.moveaxis(y, 0, axis)
    out = pool.empty_at(moved.shape, moved.dtype)[0]
    np.copyto(out, moved)
    return out


def _aligned_at(x: np.ndarray) -> tuple[np.ndarray, int]:
    """``x``, or a 64-byte aligned C-ordered copy of it, and its address."""
    if x.flags.c_contiguous and x.flags.writeable:
        at = address(x)
        if not at % ALIGN:
            return x, at
    copy = aligned_empty(x.shape, x.dtype)
    np.copyto(copy, x)
    return copy, address(copy)


def _as_tensor(arr: np.ndarray, keep: list) -> tvm.runtime.Tensor:
    t, shared = as_tvm(arr, tvm.cpu())
    keep.append(shared)
    return t

"""Runs of consecutive kernel steps of a plan, called in one native call.

A small model is many small kernels: openWakeWord's wake-word heads unroll a 16-step LSTM
into 135 kernel calls of well under a microsecond of work each, and the plan's Python steps
(pir.runtimes.tvm.plan) cost 1.5-2.5 us a call, so the model took 2.5x ONNX Runtime's time.
A :class:`KernelRun` takes a run of a plan's kernel steps and prepares, once, every call's
arguments as TVM's C ABI takes them (pir.runtimes.tvm.ffi_abi): constants and the plan's
slots as tensor handles, dims as integers.  A run of the plan then only sets what changes
from one run to the next (the tensors of the function's inputs and of values made by steps
outside the run, the buffers of results the caller keeps), and ``native_loop.c`` calls
every kernel in C, once.

The plan keeps its per-op steps for what needs them: profiles (an entry per kernel), runs
that keep every value (``pir run --check``), kernels built with bounds checks (a failure
names the index), and kernels sized by dims a run learns (checked before each call).
"""

from __future__ import annotations

import ctypes

import numpy as np

import tvm
import tvm_ffi

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.runtimes.tvm.buffers import as_tvm
from pir.runtimes.tvm.ffi_abi import (ANY_INT, ANY_TENSOR, ANY_TENSOR_PTR, CPU, DLTensor,
                                      TVMFFIAny, dl_dtype, native_loops, take_error)

__all__ = ["KernelRun"]


class KernelRun:
    """The kernel steps ``ops`` of ``plan``, in order, as one step: call it to run them."""

    @classmethod
    def build(cls, plan, ops: list[Operation]) -> KernelRun | None:
        """The run, or None where the C loop does not build here or a result's dtype has no
        DLPack code (booleans: their kernels keep their Python steps)."""
        if native_loops() is None:
            return None
        run = cls(plan, ops)
        return run if run._prepare() else None

    def __init__(self, plan, ops: list[Operation]):
        self.plan, self.ops = plan, ops
        self.values = plan.interp.values
        self.shared = plan.interp.shared_tensors
        self.keep: list = []  # what the argument list points into, alive as long as it is
        self.calls = 0  # runs in C (what the tests count)

    def _prepare(self) -> bool:
        plan = self.plan
        inputs = set(plan.block.args)
        funcs, starts, args = [], [0], []
        self.inputs: list[tuple[int, Value]] = []  # argument positions of function inputs
        self.dynamic: list[tuple[int, Value]] = []  # of values other steps make
        self.fresh: list[tuple[DLTensor, Value, tuple[int, ...], np.dtype]] = []
        self.fixed: list[tuple[Value, np.ndarray]] = []  # results in reused slots
        made: dict[Value, DLTensor] = {}  # fresh results of this run, for later operands
        for op in self.ops:
            k = plan.program.kernel(op)
            fn = k.function(plan.symbols)
            if not isinstance(fn, tvm_ffi.Function):
                return False  # a Python stand-in (a test's wrapped kernel): its own step
            funcs.append(fn.__chandle__())
            self.keep.append(fn)
            for v in op.operands:
                t = plan._tensor(v)
                if t is not None:
                    args.append(("tensor", t))
                elif v in made:
                    args.append(("ptr", made[v]))
                else:
                    (self.inputs if v in inputs else self.dynamic).append((len(args), v))
                    args.append(("later", None))
            args += [("tensor", p) for p in k.params]
            args += [("int", plan.symbols[d]) for d in k.free]
            for r in op.results:
                view = plan.views[r]
                if plan.slots[plan.slot_of[r]].fresh:
                    code = dl_dtype(view.dtype)
                    if code is None:
                        return False
                    dims = (ctypes.c_int64 * max(view.ndim, 1))(*view.shape)
                    dl = DLTensor(None, CPU, view.ndim, code, dims, None, 0)
                    self.keep += [dims, dl]
                    made[r] = dl
                    self.fresh.append((dl, r, view.shape, view.dtype))
                    args.append(("ptr", dl))
                else:
                    self.fixed.append((r, view))
                    args.append(("tensor", plan._tensor(r)))
            starts.append(len(args))
        self.args = (TVMFFIAny * len(args))()
        for a, (kind, x) in zip(self.args, args):
            if kind == "ptr":
                a.type_index, a.value = ANY_TENSOR_PTR, ctypes.addressof(x)
            elif kind == "tensor":
                a.type_index, a.value = ANY_TENSOR, x.__chandle__()
                self.keep.append(x)
            elif kind == "int":
                a.type_index, a.value = ANY_INT, int(x) & (2 ** 64 - 1)
            else:  # a tensor handle set by each call
                a.type_index = ANY_TENSOR
        self.funcs = (ctypes.c_void_p * len(funcs))(*funcs)
        self.starts = (ctypes.c_int32 * len(starts))(*starts)
        return True

    def __call__(self) -> None:
        plan, values, args = self.plan, self.values, self.args
        keep = []  # tensors made for this call, alive until it returns
        arg_tensors = plan.arg_tensors
        for pos, v in self.inputs:
            args[pos].value = arg_tensors[v].__chandle__()
        shared = self.shared
        for pos, v in self.dynamic:
            arr = values[v]
            known = shared.get(v)
            if known is not None and known[0] is arr:
                t = known[1]
            else:
                t = as_tvm(arr, tvm.cpu())[0]
                keep.append(t)
            args[pos].value = t.__chandle__()
        pool = plan.outputs
        for dl, r, shape, dtype in self.fresh:
            arr, dl.data = pool.empty_at(shape, dtype)
            values[r] = arr
        for r, view in self.fixed:
            values[r] = view
        run, call, _ = native_loops()
        failed_at = ctypes.c_int64(0)
        rc = run(call, 1, len(self.ops), self.funcs, self.starts, args, None, 0, None, None,
                 ctypes.byref(failed_at))
        self.calls += 1
        if rc:
            take_error()
            op = self.ops[rc - 1]
            raise PirError(f"{op.describe()}: kernel {op.symbol} failed")

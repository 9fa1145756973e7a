"""The inputs of an execution plan's runs, as TVM tensors: sharing the caller's arrays
where TVM can, else staged in 64-byte aligned copies kept from run to run.

TVM shares only C-ordered, 64-byte aligned memory of a dtype DLPack knows (pir.runtimes.tvm
.buffers).  A plan (pir.runtimes.tvm.plan) gives each input a kernel reads its tensor once a
run; a loop body's plan runs once per iteration, so the check costs as much as the kernels
of a small recurrent step: DLPack's own (0.3 us) is tried before numpy's address (2 us).
"""

from __future__ import annotations

import numpy as np

import tvm

from pir.ir.types import DType
from pir.runtimes.aligned import address
from pir.runtimes.tvm.buffers import ALIGN, aligned_empty, as_tvm, shareable

__all__ = ["InputStaging"]


class InputStaging:
    """Per input position: its aligned staging copy and the copy's TVM tensor, made when an
    input first needs one and reused while the input keeps its shape and dtype."""

    def __init__(self) -> None:
        self.staging: dict[int, np.ndarray] = {}  # aligned copies of misaligned inputs
        self._staged_tensors: dict[int, tvm.runtime.Tensor] = {}  # and their TVM tensors
        self._misaligned: set[int] = set()  # the inputs staged in the last run

    def kernel_input(self, i: int, arr) -> tuple[np.ndarray, tvm.runtime.Tensor]:
        """Input ``i``, which a kernel reads, and its TVM tensor: sharing the caller's array
        where TVM can, else over an aligned staging copy (:meth:`aligned`).  Asking numpy
        for an array's address costs 2 us, DLPack's own check 0.3: a loop body's run, which
        takes its inputs afresh every iteration, tries DLPack first unless the input was
        misaligned the last time."""
        arr = np.asarray(arr)
        if i not in self._misaligned and arr.size and arr.flags.c_contiguous \
                and arr.flags.writeable:
            try:
                return arr, tvm.runtime.from_dlpack(arr)
            except (BufferError, RuntimeError, TypeError, ValueError):
                self._misaligned.add(i)  # (or a dtype DLPack cannot carry: staged below)
        arr = self.aligned(i, arr)
        if arr is not self.staging.get(i):
            self._misaligned.discard(i)  # aligned again: try DLPack first next time
        return arr, self.input_tensor(i, arr)

    def input_tensor(self, i: int, arr: np.ndarray) -> tvm.runtime.Tensor:
        """The TVM tensor of input ``i`` (``arr``, as :meth:`aligned` gave it): the staging
        copy's, made with the copy; else one sharing ``arr`` (DLPack) where TVM can."""
        staged = self._staged_tensors.get(i)
        if staged is not None and arr is self.staging.get(i):
            return staged
        if arr.size and arr.flags.writeable and arr.flags.c_contiguous:
            try:
                return tvm.runtime.from_dlpack(arr)
            except (BufferError, RuntimeError, TypeError, ValueError):
                pass  # misaligned, or a dtype numpy can not export
        return as_tvm(arr, tvm.cpu())[0]

    def own(self, arr):
        """``arr``, or a copy of it where it views a staging copy (the next run overwrites
        it): a function output that is a reshaped input."""
        if any(np.may_share_memory(arr, s) for s in self.staging.values()):
            return np.array(arr)
        return arr

    def aligned(self, i: int, arr) -> np.ndarray:
        """Input ``i``, or a copy of it in 64-byte aligned memory kept for the next run.
        numpy aligns large arrays to 16 bytes; a kernel needs 64 (``buffers.as_tvm``), and a
        fresh aligned copy per run costs a page fault per 4 KB: for a [16384, 768] float32
        input that was 4.4 ms against a 2.6 ms kernel (bench/kernels.py, "pir run")."""
        arr = np.asarray(arr)
        if not arr.size or not arr.flags.c_contiguous:
            return arr
        at = address(arr) if arr.flags.writeable else arr.ctypes.data  # (0.4 us against 1)
        if not at % ALIGN:
            return arr
        copy = self.staging.get(i)
        if copy is None or copy.shape != arr.shape or copy.dtype != arr.dtype:
            copy = self.staging[i] = aligned_empty(arr.shape, arr.dtype)
            self._staged_tensors.pop(i, None)
            if shareable(DType.from_numpy(arr.dtype), arr.shape):
                self._staged_tensors[i] = tvm.runtime.from_dlpack(copy)
        np.copyto(copy, arr)
        return copy

"""The cuda runtime: kernel.cuda ops launched on the GPU, kernel.cublas ops as cuBLAS GEMMs
(cupy.matmul), everything else (groups left as fusion.group, gathers of shapes, convolutions)
on the host with the reference rules.

* **Compile.**  Every distinct kernel source is compiled once with NVRTC for the device's
  architecture, cached by content (:mod:`.build`), and loaded as a cupy RawModule.
* **Memory.**  The values kernels and cuBLAS make live in one device arena per function and
  binding of the symbolic dims, planned by liveness (:mod:`.memory`); the region constants
  kernels take as parameters are uploaded once per op.
* **Launch.**  The launch configuration and argument list come from the op's attributes
  through :func:`pir.runtimes.cuda.abi.prepare_call`, the calling convention the host
  emulation of the tests also uses.
* **Host ops.**  An op that runs on the host gets its device operands copied down (once per
  value and run) and its results stay on the host until a kernel needs them.  The function's
  outputs are copied to the host at the end (which also waits for the GPU).

bfloat16 device arrays are cupy uint16 arrays (cupy has no bfloat16 type; a kernel only sees
the bits), viewed as ml_dtypes' bfloat16 on the host; a bfloat16 matmul runs on the host.
"""

from __future__ import annotations

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.kernel import CublasOp, CudaKernelOp
from pir.ir.types import DType
from pir.runtimes.cuda.abi import prepare_call, region_constants
from pir.runtimes.cuda.device import require_gpu
from pir.runtimes.cuda.memory import MemoryPlan
from pir.runtimes.reference.interpreter import Interpreter

__all__ = ["CudaInterpreter"]


def _device_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.uint16) if dtype.name == "bfloat16" else dtype


class _HostValues(dict):
    """The values of the last run as the reference runtime would hold them: device arrays are
    copied to the host when read (``--check`` reads intermediates to find a divergence)."""

    def __init__(self, values: dict, host):
        super().__init__(values)
        self._host = host

    def __getitem__(self, key):
        return self._host(dict.__getitem__(self, key), key)


class CudaInterpreter(Interpreter):
    """The reference interpreter with kernel.cuda and kernel.cublas ops run on the GPU."""

    def __init__(self, module: ModuleOp, keep_values: bool = False,
                 profile: dict | None = None, trust_kernels: bool = False):
        from pir.codegen.provenance import check_kernels

        check_kernels(module, trust=trust_kernels)  # before anything is compiled or loaded
        self.cp = require_gpu()
        super().__init__(module, keep_values, profile)
        # a profile times each op on the host clock: wait for the GPU after each one (the
        # interpreter clears self.profile while an op runs, so remember it here)
        self._sync = profile is not None
        from pir.runtimes.cuda.build import compile_cubin
        from pir.runtimes.cuda.device import arch_of_device

        self.arch = arch_of_device()
        self.functions = {}
        modules = {}
        for op in module.walk():
            if isinstance(op, CudaKernelOp) and op.symbol not in self.functions:
                if op.source not in modules:
                    binary = compile_cubin(self.cp, op.source, op.symbol, self.arch)
                    mod = self.cp.cuda.function.Module()
                    mod.load(binary)
                    modules[op.source] = mod
                self.functions[op.symbol] = modules[op.source].get_function(op.symbol)
        self._consts: dict = {}
        self._plans: dict = {}
        self._arena = None
        self._host_copies: dict = {}
        self._dev: dict = {}  # value -> its device array (while the run lasts)

    # -- values between host and device ------------------------------------------------------

    def _is_device(self, arr) -> bool:
        return isinstance(arr, self.cp.ndarray)

    def _to_device(self, arr: np.ndarray):
        arr = np.asarray(arr)
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
            arr = arr.copy()
        return self.cp.asarray(arr.view(_device_dtype(arr.dtype)))

    def _to_host(self, arr, v=None) -> np.ndarray:
        if not self._is_device(arr):
            return arr
        hit = self._host_copies.get(v) if v is not None else None
        if hit is not None:
            return hit
        out = self.cp.asnumpy(arr)
        if v is not None and v.type.dtype is DType.BF16:
            out = out.view(v.type.dtype.numpy)
        if v is not None:
            self._host_copies[v] = out
        return out

    # -- running -----------------------------------------------------------------------------

    def profile_key(self, op) -> tuple[str, str]:
        if isinstance(op, CudaKernelOp):
            return ("kernel", op.symbol)
        if isinstance(op, CublasOp):
            return ("cublas", op.results[0].name or "matmul")
        return super().profile_key(op)

    def run(self, fn, inputs):
        self._host_copies, self._dev = {}, {}
        out = super().run(fn, inputs)
        term = fn.entry.terminator
        host = {k: self._to_host(arr, v) for (k, arr), v in zip(out.items(), term.operands)}
        self.values = _HostValues(self.values, self._to_host)
        return host

    def call(self, fn, arrays):
        if self.depth == 0:
            self.values = dict(self.values)  # a plain dict while running
            block = fn.entry
            for a, arr in zip(block.args, arrays):
                self.check(a, np.asarray(arr), f"input '{a.name}'")
            key = (fn, tuple(sorted(self.symbols.items())))
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = MemoryPlan(block, self.symbols)
            if self._arena is None or self._arena.size < plan.size:
                self._arena = self.cp.empty(max(plan.size, 256), self.cp.uint8)
            self._plan = plan
        return super().call(fn, arrays)

    def _output(self, v, shape):
        dtype = _device_dtype(v.type.dtype.numpy)
        plan = getattr(self, "_plan", None)
        if plan is not None and v in plan.offset and plan.shape[v] == tuple(shape):
            n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            off = plan.offset[v]
            return self._arena[off:off + n].view(dtype).reshape(shape)
        return self.cp.empty(shape, dtype)

    def exec(self, op) -> None:
        if isinstance(op, CudaKernelOp):
            return self._launch(op)
        if isinstance(op, CublasOp) and op.operands[0].type.dtype is not DType.BF16:
            return self._matmul(op)
        # a host op: its device operands come down (the reference rules are numpy); the
        # device array stays in _dev for the kernels that read the value later
        for v in op.operands:
            arr = self.values.get(v)
            if arr is not None and self._is_device(arr):
                self._dev[v] = arr
                self.values[v] = self._to_host(arr, v)
        return super().exec(op)

    def _device_operand(self, v):
        arr = self._dev.get(v)
        if arr is None:
            arr = self.values[v]
            if not self._is_device(arr):
                arr = self._to_device(np.asarray(arr))
            self._dev[v] = arr
        return arr

    def _launch(self, op: CudaKernelOp) -> None:
        cp = self.cp
        ins = [self._device_operand(v) for v in op.operands]
        call = prepare_call(op, [a.shape for a in ins], self.symbols)
        for d, n in call.sizes.items():
            self.symbols.setdefault(d, n)
        consts = self._consts.get(op)
        if consts is None:
            consts = self._consts[op] = [self._to_device(c) for c in region_constants(op)]
        outs = [self._output(r, s) for r, s in zip(op.results, call.out_shapes)]
        args = []
        for kind, v in call.args:
            if kind == "i64":
                args.append(np.int64(v))
            elif kind == "i32":
                args.append(np.int32(v))
            else:
                args.append({"in": ins, "const": consts, "out": outs}[kind][v])
        try:
            self.functions[op.symbol](call.grid, call.block, tuple(args),
                                      shared_mem=call.shared_mem)
        except Exception as e:  # noqa: BLE001 - CUDA errors
            raise PirError(f"{op.describe()}: kernel {op.symbol} failed to launch: "
                           f"{str(e).strip().splitlines()[0]}") from None
        if self._sync:
            cp.cuda.Device().synchronize()  # the profile times the kernel, not its launch
        for r, arr in zip(op.results, outs):
            self.values[r] = self._dev[r] = arr

    def _matmul(self, op: CublasOp) -> None:
        a, b = (self._device_operand(v) for v in op.operands)
        r = op.results[0]
        out = self._output(r, tuple(a.shape[:-1]) + (b.shape[-1],))
        self.cp.matmul(a, b, out=out)  # cuBLAS (cupy picks the GEMM / batched GEMM)
        if self._sync:
            self.cp.cuda.Device().synchronize()
        self.values[r] = self._dev[r] = out

"""Build a lowered (and scheduled) group with TVM for the CPU, and run it on numpy arrays."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

# TVM sizes its thread pool once, from TVM_NUM_THREADS, and without it uses half the
# hardware threads (it assumes hyper-threading): on a 2-CPU machine that is one thread.  Size
# the pool to every CPU this process may use; set_threads() can then lower it.
os.environ.setdefault("TVM_NUM_THREADS", str(len(os.sched_getaffinity(0))))

import tvm  # noqa: E402

from pir.codegen.tvm.lower import LoweredKernel, lower_block  # noqa: E402
from pir.codegen.tvm.schedule import schedule_cpu  # noqa: E402
from pir.codegen.tvm.target import host_cpu  # noqa: E402
from pir.ir import dimexpr  # noqa: E402
from pir.errors import PirError  # noqa: E402
from pir.ir.core import Block  # noqa: E402

__all__ = ["CompiledKernel", "build", "compile_block", "host_target", "set_threads",
           "threads", "use_threads"]

_threads = [int(os.environ["TVM_NUM_THREADS"])]  # what parallel loops may run on
_pool = [_threads[0]]  # what TVM's pool is set to now (see use_threads)


def host_target() -> tvm.target.Target:
    """LLVM for this machine's CPU (its vector extensions: AVX2, AVX-512...)."""
    return tvm.target.Target({"kind": "llvm", "mcpu": host_cpu()})


def set_threads(n: int) -> None:
    """Run parallel loops on ``n`` threads (at most the pool size, see TVM_NUM_THREADS)."""
    _threads[0] = int(n)
    use_threads(n)


def use_threads(n: int) -> None:
    """Set TVM's pool to ``n`` threads for the kernels called next, unless it is set so
    already (a change costs about 2 us).  A plan lowers it to one over its small kernels
    and leaves it there: the next kernel that wants more raises it again (the plan's steps
    and the interpreter's kernel calls ask for what they want before they run)."""
    if _pool[0] != int(n):
        # args: affinity mode (1 = "big" cores, i.e. all of them on a uniform CPU), threads
        tvm.get_global_func("runtime.config_threadpool")(1, int(n))
        _pool[0] = int(n)


def threads() -> int:
    """The threads parallel loops may run on (set_threads' last value, else the pool's
    size); the pool may be on fewer just now (use_threads)."""
    return _threads[0]


@dataclass
class CompiledKernel:
    """A built kernel: call it with numpy arrays (one per block argument) to get the outputs."""

    kernel: LoweredKernel
    module: tvm.runtime.Module
    mod: tvm.IRModule  # the scheduled TIR, kept for printing (``.script()``)

    def __post_init__(self) -> None:
        self.device = tvm.cpu()
        self.fn = self.module[self.kernel.name]
        # constants are uploaded once, not per call
        self.params = [tvm.runtime.tensor(a, self.device) for _, a in self.kernel.params]

    def bind_sizes(self, arrays) -> dict[str, int]:
        """The value of each symbolic dim, read from the input shapes."""
        sizes: dict[str, int] = {}
        for ph, a in zip(self.kernel.inputs, arrays):
            if len(ph.shape) != a.ndim:
                raise PirError(f"kernel input {ph.name}: rank {a.ndim}, expected {len(ph.shape)}")
            for d, n in zip(ph.shape, a.shape):
                if isinstance(d, tvm.tirx.Var):
                    if sizes.setdefault(d.name, n) != n:
                        raise PirError(f"symbolic dim {d.name} is both {sizes[d.name]} and {n}")
                elif int(d) != n:
                    raise PirError(f"kernel input {ph.name}: shape {a.shape}, expected "
                                   f"{[str(x) for x in ph.shape]}")
        return sizes

    def output_shapes(self, sizes: dict[str, int]) -> list[tuple[int, ...]]:
        return [tuple(dimexpr.evaluate(d, sizes) for d in t.shape)
                for t in self.kernel.output_types]

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        if len(arrays) != len(self.kernel.inputs):
            raise PirError(f"kernel takes {len(self.kernel.inputs)} inputs, got {len(arrays)}")
        arrays = [np.ascontiguousarray(a) for a in arrays]
        sizes = self.bind_sizes(arrays)
        ins = [tvm.runtime.tensor(a, self.device) for a in arrays]
        outs = [tvm.runtime.empty(s, o.dtype, self.device)
                for s, o in zip(self.output_shapes(sizes), self.kernel.outputs)]
        self.fn(*ins, *self.params, *outs)
        return [o.numpy() for o in outs]

    def run_tensors(self, ins, outs) -> None:
        """Run on TVM tensors already on the device (no copies: for timing)."""
        self.fn(*ins, *self.params, *outs)


def build(kernel: LoweredKernel, target=None, schedule: bool = True) -> CompiledKernel:
    """Schedule ``kernel`` for the CPU (unless ``schedule`` is False) and build it as the
    runtime does (the build options its schedule asks for included)."""
    from pir.runtimes.tvm.library import build_module, flags_of

    mod = schedule_cpu(kernel) if schedule else tvm.IRModule({kernel.name: kernel.func})
    lib = build_module(mod, target or host_target(), flags_of(mod))
    return CompiledKernel(kernel, lib, mod)


def compile_block(block: Block, name: str = "main", target=None,
                  schedule: bool = True) -> CompiledKernel:
    """lower_block + build."""
    return build(lower_block(block, name), target, schedule)

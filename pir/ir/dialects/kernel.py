"""The ``kernel`` dialect: compiled kernels, made by ``pir codegen`` from ``fusion.group`` ops.

``kernel.tvm`` is a fusion group that TVM compiled: same operands, results and region (the
prim ops, isolated from above, ending in ``fusion.yield``), plus the kernel's C ``symbol``,
the scheduled TIR ``source`` (TVMScript text, readable and diffable) and the ``target`` it
was scheduled for.  The region stays, so the reference runtime and ``pir diff`` still
understand the op; the ``tvm`` runtime builds ``source`` instead (binaries live in the
content-addressed cache, never in the file)::

    %y = kernel.tvm(%x) ({
    ^bb0(%x_1: tensor<2x8xf32>):
      ...
      fusion.yield(%y_1) : (tensor<2x8xf32>) -> ()
    }) {kind = "reduction", symbol = "y", source = "# from tvm.script ...", target = "llvm",
        pir.name = "y"} : (tensor<2x8xf32>) -> tensor<2x8xf32>

Kernels that compute the same thing (the same region up to value names) share one symbol
and one source: they are compiled once.

``kernel.cuda`` is the same for ``pir codegen --target cuda``: ``source`` is CUDA C (from
pir's own emitter, or TVM's CUDA target), plus the launch configuration (``grid``, an
expression of the symbolic dims; ``block``; ``shared_mem``) and ``args``, the kernel's
parameters in order.  ``kernel.cublas`` is a matmul run by cuBLAS: its region holds the one
``prim.dot_general``.  See docs/cuda.md.
"""

from __future__ import annotations

import re

from pir.errors import PirError
from pir.ir.attributes import INT, INTS, STR, STRS
from pir.ir.dialects.fusion import GROUP_KINDS, RegionGroup
from pir.ir.opdef import attr

__all__ = ["TvmKernelOp", "CudaKernelOp", "CublasOp", "SYMBOL_RE"]

#: A legal C identifier.
SYMBOL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _SourceKernel(RegionGroup):
    """What kernel.tvm and kernel.cuda check alike: a kind, a C symbol, a source."""

    def verify_(self) -> None:
        if self.kind is not None and self.kind not in GROUP_KINDS:
            raise PirError(f"kind must be one of {', '.join(GROUP_KINDS)}, got '{self.kind}'")
        if not SYMBOL_RE.match(self.symbol):
            raise PirError(f"symbol '{self.symbol}' is not a C identifier")
        if not self.source.strip():
            raise PirError("source is empty")
        self.check_body()


class TvmKernelOp(_SourceKernel):
    """A fusion group compiled by TVM: ``source`` is the scheduled TIR (TVMScript) of one
    PrimFunc named ``symbol``, whose parameters are the block arguments, then any constant
    arrays of the region (in region order), then the sizes of the symbolic dims no argument
    shows (int32, in order of appearance; pir.codegen.tvm.dims.free_dims), then the results.

    ``symbol`` is a C identifier made from the first result's name (``gpu_0/data_0`` ->
    ``gpu_0_data_0``), unique in the module unless two kernels share their source; the
    original name is kept in the discardable attribute ``pir.name``.  ``target`` is the CPU
    the source was scheduled for, as TVM writes a target (``llvm -mcpu=znver3
    -num-cores=2``, see pir.codegen.tvm.target; ``pir run`` builds it for the CPU it runs
    on).  ``kind`` is the fusion group's kind.
    """

    name = "kernel.tvm"
    kind = attr(STR, None)
    symbol = attr(STR)
    source = attr(STR)
    target = attr(STR)


#: what an entry of kernel.cuda's ``args`` may be: an operand, a non-splat constant of the
#: region, a result, or a symbolic dim passed by value (i64: long long, i32: int)
_ARG_RE = re.compile(r"(in|const|out):\d+\Z|dim:[^:]+:(i64|i32)\Z")
GENERATORS = ("native", "tvm")


class CudaKernelOp(_SourceKernel):
    """A fusion group compiled to CUDA C: ``source`` defines the ``extern "C" __global__``
    function ``symbol``, launched on ``grid`` blocks (an expression of the symbolic dims, see
    pir.codegen.cuda.launch) of ``block`` threads with ``shared_mem`` bytes of dynamic shared
    memory, its parameters being ``args`` in order (``in:K``, ``const:K``, ``out:K``,
    ``dim:NAME:i64``).  ``generator`` is ``native`` (pir.codegen.cuda) or ``tvm`` (TVM's CUDA
    target with DLight schedules); ``arch`` the GPU it was generated for (``sm_90``)."""

    name = "kernel.cuda"
    kind = attr(STR, None)
    symbol = attr(STR)
    source = attr(STR)
    arch = attr(STR)
    generator = attr(STR)
    grid = attr(STR)
    block = attr(INTS)
    shared_mem = attr(INT, 0)
    args = attr(STRS)

    def verify_(self) -> None:
        super().verify_()
        if self.generator not in GENERATORS:
            raise PirError(f"generator must be one of {', '.join(GENERATORS)}, "
                           f"got '{self.generator}'")
        if len(self.block) != 3 or any(b < 1 for b in self.block) or \
                self.block[0] * self.block[1] * self.block[2] > 1024:
            raise PirError(f"block {list(self.block)} must be 3 sizes >= 1 of at most 1024 "
                           "threads in all")
        if self.shared_mem < 0:
            raise PirError("shared_mem must not be negative")
        for a in self.args:
            if not _ARG_RE.match(a):
                raise PirError(f"args entry '{a}' is not in:K, const:K, out:K or dim:NAME:i64")
        if f"{self.symbol}(" not in self.source:
            raise PirError(f"the source does not define {self.symbol}")


class CublasOp(RegionGroup):
    """A matmul (``prim.dot_general`` of matmul form: ``[..., M, K] x [..., K, N]`` or
    ``[K, N]`` weights) run by cuBLAS through cupy on the GPU.  The region holds the one
    dot_general, so the reference runtime and ``pir diff`` still read it; an elementwise
    epilogue (bias, activation) is the next kernel.cuda, since cuBLAS cannot fuse it."""

    name = "kernel.cublas"

    def verify_(self) -> None:
        self.check_body()
        ops = [op.name for op in self.body.block.ops]
        if ops != ["prim.dot_general", "fusion.yield"]:
            raise PirError(f"the body must be one prim.dot_general, got {', '.join(ops)}")

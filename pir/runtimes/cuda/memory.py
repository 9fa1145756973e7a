"""Device memory of one run, planned once per binding of the symbolic dims, by liveness.

Every result of a kernel or cuBLAS call whose size the binding fixes gets a slot in one
device arena: slots are 256-byte aligned (what 16-byte vector loads and cuBLAS want) and
reused, first fit, once the value they hold is dead (after its last use; values the function
returns live to the end, when they are copied to the host).  Values only host ops read are
copied down; nothing on the device is a view of another value (host ops work on copies), so
the liveness of a slot is that of its one value.  Sizes come from the result types under the
binding, including the dims kernels compute (pir.codegen.cuda.dims); a result whose size the
binding does not fix is allocated when it is made (cupy's pool).
"""

from __future__ import annotations

import numpy as np

from pir.codegen.cuda.dims import kernel_dims
from pir.codegen.tvm.dims import solve
from pir.ir.core import Block, Value
from pir.ir.dialects.kernel import CublasOp, CudaKernelOp
from pir.ir.opdef import Terminator
from pir.ir.types import bound_shape

__all__ = ["MemoryPlan", "ALIGN"]

ALIGN = 256


class MemoryPlan:
    """``offset[v]`` / ``shape[v]`` for every planned device value; ``size`` of the arena."""

    def __init__(self, block: Block, symbols: dict[str, int]):
        self.symbols = dict(symbols)
        self.offset: dict[Value, int] = {}
        self.shape: dict[Value, tuple[int, ...]] = {}
        self.size = 0
        ops = [op for op in block.ops if Terminator not in op.traits]
        term = block.ops[-1] if block.ops else None
        returned = set(term.operands) if term is not None else set()
        last: dict[Value, int] = {}
        for i, op in enumerate(ops):
            for v in op.operands:
                last[v] = i
        free: list[tuple[int, int]] = []  # (offset, bytes) of dead slots
        live: dict[Value, tuple[int, int]] = {}
        for i, op in enumerate(ops):
            if isinstance(op, (CudaKernelOp, CublasOp)):
                if isinstance(op, CudaKernelOp):
                    bound = {a.split(":")[1] for a in op.args if a.startswith("dim:")}
                    self.symbols = solve(kernel_dims(op.body.block, bound)[1], self.symbols)
                for r in op.results:
                    shape = bound_shape(r.type, self.symbols)
                    if shape is None:
                        continue
                    n = int(np.prod(shape, dtype=np.int64)) * r.type.dtype.numpy.itemsize
                    n = max(ALIGN, -(-n // ALIGN) * ALIGN)
                    slot = self._take(free, n)
                    self.offset[r], self.shape[r] = slot[0], shape
                    live[r] = slot
                    if r not in last and r not in returned:
                        free.append(live.pop(r))
            for v in set(op.operands):
                if last.get(v) == i and v in live and v not in returned:
                    free.append(live.pop(v))

    def _take(self, free: list[tuple[int, int]], n: int) -> tuple[int, int]:
        best = None
        for k, (off, size) in enumerate(free):
            if size >= n and (best is None or size < free[best][1]):
                best = k
        if best is not None:
            off, size = free.pop(best)
            if size > n:  # the rest stays free
                free.append((off + n, size - n))
            return off, n
        off = self.size
        self.size += n
        return off, n

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
"""

from __future__ import annotations

import re

from pir.errors import PirError
from pir.ir.attributes import STR
from pir.ir.dialects.fusion import GROUP_KINDS, RegionGroup
from pir.ir.opdef import attr

__all__ = ["TvmKernelOp", "SYMBOL_RE"]

#: A legal C identifier.
SYMBOL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class TvmKernelOp(RegionGroup):
    """A fusion group compiled by TVM: ``source`` is the scheduled TIR (TVMScript) of one
    PrimFunc named ``symbol``, whose parameters are the block arguments, then any constant
    arrays of the region (in region order), then the sizes of the symbolic dims no argument
    shows (int32, in order of appearance; pir.codegen.tvm.dims.free_dims), then the results.

    ``symbol`` is a C identifier made from the first result's name (``gpu_0/data_0`` ->
    ``gpu_0_data_0``), unique in the module unless two kernels share their source; the
    original name is kept in the discardable attribute ``pir.name``.  ``target`` is the TVM
    target kind (``llvm``).  ``kind`` is the fusion group's kind.
    """

    name = "kernel.tvm"
    kind = attr(STR, None)
    symbol = attr(STR)
    source = attr(STR)
    target = attr(STR)

    def verify_(self) -> None:
        if self.kind is not None and self.kind not in GROUP_KINDS:
            raise PirError(f"kind must be one of {', '.join(GROUP_KINDS)}, got '{self.kind}'")
        if not SYMBOL_RE.match(self.symbol):
            raise PirError(f"symbol '{self.symbol}' is not a C identifier")
        if not self.source.strip():
            raise PirError("source is empty")
        self.check_body()

"""How compiled kernels add up long float sums (docs/codegen.md, "Long sums").

One float32 accumulator that takes n terms in turn loses up to n/2 ulp of the total: a softmax
over 18,710 classes with one confident class came out 8.4e-4 off, and 1.0 followed by 20,000
terms of 3e-8 summed to exactly 1.0 (every term is under half an ulp of 1.0, so each add
rounds back to 1.0).  A float64 accumulator is exact enough for any length, but converting
and adding every element in f64 made the CPU row kernels 1.2-1.5x slower when their rows
sit in the caches (RMSNorm and LayerNorm over [64, 4096]).

So a long sum is taken in blocks: ``lanes`` float32 partial sums side by side (one vector:
element i of a block goes to lane i % lanes), each of at most ``terms`` terms, and each
block's partials are added into a float64 total, which is rounded to float32 once.  An f32
partial of 16 terms is 15 roundings of half an ulp at most from its exact value, the f64 adds
lose nothing a float32 result could show, and the cost is one f64 add per lane per
``terms`` elements.  A sum of at most ``size`` (terms x lanes) elements, whose length is
known, is one block: it keeps the float32 accumulators it had (on the CPU the row
schedule's four 16-lane vectors then take at most 16 terms each where the rows sit in the
caches, and its one 16-lane vector at most 64 where they stream from memory).

This module holds the parameters only; each code generator reads the instance it is passed
(``lower_block(..., sums=)``, ``emit_kernel(..., sums=)``).  It imports no TVM.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SumBlocks", "CPU_SUMS", "CUDA_SUMS", "TVM_CUDA_SUMS"]


@dataclass(frozen=True)
class SumBlocks:
    """Blocked float32 summation: ``lanes`` partial sums of at most ``terms`` terms each per
    block, every block added into a float64 total.  ``blocked=False``: a long sum is one
    f64 accumulator instead (each term converted and added in f64)."""

    terms: int
    lanes: int = 1
    blocked: bool = True

    def __post_init__(self) -> None:
        if self.terms < 1 or self.lanes < 1:
            raise ValueError(f"SumBlocks needs terms >= 1 and lanes >= 1, got {self}")

    @property
    def size(self) -> int:
        """Elements of one block."""
        return self.terms * self.lanes

    def is_long(self, count: int | None) -> bool:
        """Whether a sum of ``count`` terms (None: not known before the run) takes blocks."""
        return count is None or count > self.size


#: The CPU (TVM) kernels: 64 lanes (four AVX-512 vectors of f32, pir.codegen.tvm.schedule's
#: VECTOR_BYTES: LLVM keeps them in four registers, which accumulate side by side) of 16
#: terms each, so blocks of 1024 elements.  16 terms keep the reproducer of 1.0 + 20,000 x
#: 3e-8 within 4.8e-7 (a lane adds its 15 other terms onto the 1.0 and loses them) and the
#: 18,710-class softmax within 7.2e-7; 32 came within 9.3e-7 on the first, too close to
#: the 1e-6 the compiled kernels are held to, and 8 cost 4-13% more at [64, 4096] than 16
#: for no gain there.  Rows of up to 1024 (bench/kernels.py's 768) are one block and keep
#: the kernels they had.  Measurements: docs/codegen.md, "Long sums".
CPU_SUMS = SumBlocks(terms=16, lanes=64)

#: The CUDA C kernels: a thread's partial sum takes 16 of its terms before it is added
#: into the thread's f64 total (one f64 add per 16 elements, cheap even where f64 runs at
#: 1/64 of the f32 rate); the threads of a row are the lanes.
CUDA_SUMS = SumBlocks(terms=16)

#: CUDA from TVM (``--kernels tvm``): the lowering above, scheduled by TVM's DLight rules,
#: which make several kernels of the blocked form (a kernel.cuda holds one), so a sum of
#: more than a CPU block accumulates in f64: DLight spreads it over a block's threads and
#: adds their totals by a tree, each thread's share in f64.
TVM_CUDA_SUMS = SumBlocks(terms=16, lanes=64, blocked=False)

"""A CPU schedule for a lowered prim group, written with TVM's TensorIR schedule.

Untuned TIR is one scalar loop nest per compute, run on one thread.  The schedule here is
the hand-written one that memory-bound groups (elementwise chains, softmax, layer_norm,
rms_norm) need, with no search:

1. **Inline** every compute that is not an output or a reduction.  Index maps (broadcast,
   transpose, reshape) and elementwise chains then cost nothing: they become expressions in
   their consumers.  A compute that is not a pure load and has several consumers is kept
   (when the group has the row form below), so that exp(x - max) in softmax is computed once
   per element, not once per consumer.
2. **Rows.**  When every reduction reduces the trailing dims (``reduce_inner``, found by the
   lowering), the output's leading loops are the rows: they are fused into one loop, which
   runs in parallel, and every remaining compute (the reductions and the kept values) is
   moved under it with ``compute_at``.  Each row then computes its statistics once (max and
   sum; mean and variance) into a scalar, and its kept values into a row-sized buffer that
   stays in L1, and the input is read from memory once.
3. **Vectorise** the inner loops.  A reduction is vectorised with ``rfactor``: it is split
   into lanes that accumulate side by side and a short final reduction over the lanes.  A
   row reduction whose data the caches hold keeps four vector accumulators, so that its
   adds do not wait on each other; the pass that streams a row in from memory keeps one
   (see :func:`row_accumulators`).  A one-accumulator sum of a kept row is taken in the
   loop that makes the row (:meth:`_Scheduler.sum_as_made`).

Anything the schedule can not do for a block (a symbolic inner extent, a shape that does not
divide by the vector width...) leaves that block correct but slower: scheduling is an
optimisation, so a ``ScheduleError`` never fails the build.
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx
from tvm.s_tir import Schedule, ScheduleError
from tvm.sym import Analyzer

from pir.codegen.tvm.direct import split_off_last
from pir.codegen.tvm.fast_schedule import FastSchedule
from pir.codegen.tvm import long_sums
from pir.codegen.tvm.inplace import reuse_output
from pir.codegen.tvm.prefetch import prefetch_rows
from pir.codegen.tvm.rfactor import Rfactors
from pir.codegen.tvm.lower import LoweredKernel

__all__ = ["schedule_cpu", "VECTOR_BYTES", "NO_UNROLL", "NONTEMPORAL"]

#: TIR expression nodes that count as one arithmetic op (loads, casts, constants do not).
_ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "Mod", "Min",
                         "Max", "Select", "Call", "EQ", "NE", "LT", "LE", "GT", "GE", "And",
                         "Or", "Not"})

#: Bytes per vector the inner loops are split to: one AVX-512 register.  On AVX2 LLVM splits
#: each 64-byte vector into two, which costs nothing, so one width serves both.
VECTOR_BYTES = 64

#: A computed (not pure-load) value with more consumers than this is not inlined.
_MAX_INLINE_CONSUMERS = 2

#: A row kernel whose arguments and results take more bytes than this streams them from
#: memory: the last-level cache of the machine the schedule was measured on (32 MiB).
STREAMING_BYTES = 32 << 20

#: The PrimFunc attribute of a kernel whose loops LLVM must not unroll (the runtime builds
#: it with LLVM's unroll thresholds at 0: pir.runtimes.tvm.library).  A heavy row kernel
#: that streams from memory gets it.  Fully unrolled, each load and store of a row pass is an
#: instruction of its own, run once per row at the row's stride; softmax over [16384, 768]
#: then took 5.2-5.6 ms when its input started on a 4 KB boundary (as the runtime's buffers
#: do) and 2.9-3.3 ms one cache line past it; with its loops kept, 2.8-3.0 ms at both
#: (bench/kernels.py's op, A/B in one process; a C version reproduced it: a fully unrolled
#: max pass alone 5.8 ms, a loop 2.9).  RMSNorm and LayerNorm, light, measured as fast or
#: faster unrolled, and rows the caches hold do not show it.
NO_UNROLL = "pir.no_unroll"

#: The PrimFunc attribute of a kernel whose stores into an output it never reads back are
#: non-temporal (the runtime rewrites them in TVM's LLVM IR: pir.runtimes.tvm.nontemporal).
#: A row kernel that streams from memory gets it: its output is gone from the caches by the
#: time anything reads it, and a plain store reads every output line in before writing it
#: (RMSNorm over [16384, 768] 2.64 -> 2.38 ms; rows the caches hold would lose).
NONTEMPORAL = "pir.nontemporal"

#: Arithmetic ops per element (summed over a row kernel's blocks) up to which a kernel that
#: streams from memory counts as light: RMSNorm has 7, LayerNorm 13, softmax (its exp a
#: polynomial) 179.
LIGHT_OPS = 32


def row_accumulators(nbytes: int | None, ops: int, lanes: int, first: bool) -> tuple[int, int]:
    """(accumulators, lanes each) for a reduction of a row kernel that moves ``nbytes`` (None:
    a symbolic size) and computes ``ops`` arithmetic ops per element, on vectors of
    ``lanes``; ``first``: the row's first reduction, the pass that brings the row in.
    Measured on [N, 768] float32 rows, one thread, A/B in one process (docs/codegen.md):

    - rows the caches hold (N <= 1024): four accumulators, so that the adds of a row do not
      wait on each other: RMSNorm 10 -> 7 us at N = 128, LayerNorm 15 -> 10.5, softmax 22
      -> 19;
    - rows streamed from memory (N = 16384, 96 MiB): the first pass of a light kernel takes
      one half-width accumulator (RMSNorm 3.4 -> 3.0 ms) and its later passes, which read the
      row from L1, four (LayerNorm 3.9 -> 3.2 with both).  Four on the first pass were
      slower: the memory sets its pace, and a pass that finishes sooner only bunches the
      row's loads and stores.  A heavy kernel (softmax, whose exp keeps the core busy) was
      slower with any change from one full-width accumulator per pass (by 10-25%).
    """
    if nbytes is None or nbytes <= STREAMING_BYTES:
        return 4, lanes
    if ops > LIGHT_OPS:
        return 1, lanes
    return (1, max(1, lanes // 2)) if first else (4, lanes)


def schedule_cpu(kernel: LoweredKernel, vector_bytes: int = VECTOR_BYTES) -> tvm.IRModule:
    """The scheduled IRModule of ``kernel`` (its one PrimFunc named ``kernel.name``)."""
    sch = FastSchedule(tvm.IRModule({kernel.name: kernel.func}))
    sch.work_on(kernel.name)
    scheduler = _Scheduler(sch, kernel, vector_bytes)
    scheduler.run()
    mod = scheduler.sch.mod  # a failed step may have swapped in a saved copy
    if scheduler.row_loops:
        func = reuse_output(mod[kernel.name], scheduler.row_loops)
        if func.same_as(mod[kernel.name]):
            # softmax written in place measured 1.6x slower with the prefetches (3.4 vs
            # 5.4 ms, bench/kernels.py): its exp keeps the core busy, and the extra loads
            # only compete with the output row's
            func = prefetch_rows(func, len(kernel.inputs), scheduler.row_loops)
        if scheduler.streams_heavy:
            func = func.with_attr(NO_UNROLL, True)
        if scheduler.streams:
            func = func.with_attr(NONTEMPORAL, True)
        mod = tvm.IRModule({kernel.name: func})
    return mod


def _count_ops(expr, seen: set) -> int:
    """Arithmetic nodes in ``expr``, each shared subexpression once (as LLVM computes it);
    index arithmetic inside loads is not counted.  A walk with a stack of its own: a long
    fused chain nests deeper than Python's recursion limit."""
    count, stack = 0, [expr]
    while stack:
        e = stack.pop()
        if not isinstance(e, tvm.ir.expr.Expr) or e in seen:
            continue
        seen.add(e)
        count += type(e).__name__ in _ARITHMETIC
        stack.extend(getattr(e, f, None) for f in ("a", "b", "value", "condition",
                                                  "true_value", "false_value"))
        stack.extend(getattr(e, "args", ()))
    return count


#: Iterations the parallel loop of an elementwise or injective stage needs at least: the
#: leading loops fused into it, and no more.
PARALLEL_ITERATIONS = 64


def _parallel_prefix(sch: Schedule, loops: list) -> list:
    """The leading ``loops`` to fuse into one parallel loop: the fewest whose iterations
    reach PARALLEL_ITERATIONS (a symbolic extent, a batch that may be 1, counts as 1).  The
    loops after them stay nested: a fused loop indexes each of its dims by a division and a
    remainder of the fused index, which for a blocked max pool's padded copy ([1, 4, 113,
    113, 16]: one 16-lane vector per iteration) cost more than the copy."""
    n = 1
    for i, loop in enumerate(loops):
        extent = sch.get(loop).extent
        n *= int(extent.value) if isinstance(extent, tirx.IntImm) else 1
        if n >= PARALLEL_ITERATIONS:
            return loops[:i + 1]
    return loops


def _uncast(value):
    while isinstance(value, tirx.Cast):
        value = value.value
    return value


class _Scheduler(Rfactors):
    def __init__(self, sch: Schedule, kernel: LoweredKernel, vector_bytes: int):
        self.sch = sch
        self.kernel = kernel
        self.vector_bytes = vector_bytes
        self.row_loops = 0  # how many dims the parallel row loop fuses (fuse_rows), or 0
        self.streams = False  # a row kernel that streams from memory
        self.streams_heavy = False  # ... and is not light
        # rfactor's partial-result buffers -> (accumulators, lanes), and the buffers that fold
        # several accumulators into one, both found again by buffer after compute_at
        self.partials: list[tuple[tirx.Buffer, tuple[int, int]]] = []
        self.folds: list[tirx.Buffer] = []

    # -- queries -------------------------------------------------------------------------

    def blocks(self):
        return self.sch.get_child_blocks(self.sch.get_sblock("root"))

    def is_reduction(self, block) -> bool:
        return any(iv.iter_type == tirx.IterVar.CommReduce for iv in self.sch.get(block).iter_vars)

    def is_output(self, block) -> bool:
        outs = {self.sch.get(b).name_hint for b in self.sch.get_output_blocks("root")}
        return self.sch.get(block).name_hint in outs

    def store(self, block):
        """The one store of ``block``, or None for a block that writes several buffers (an
        arg reduction's index and value), which the steps below leave alone."""
        body = self.sch.get(block).body
        return body if hasattr(body, "buffer") and hasattr(body, "value") else None

    def is_pure_load(self, block) -> bool:
        """A block that only moves data (an index map) or writes its own position (an iota):
        inlining it never repeats work, and an iota kept in a buffer turns every gather it
        indexes into a gather of loads, which nothing can vectorise or prove in bounds."""
        store = self.store(block)
        if store is None:
            return False
        # TVM 0.27 represents a buffer read as ``tvm.ir.expr.TensorLoad`` (tirx.BufferLoad is
        # a constructor function there, not a class), so test by name
        return type(_uncast(store.value)).__name__ in ("TensorLoad", "BufferLoad", "IntImm",
                                                       "FloatImm", "Var")

    def is_one_op(self, block) -> bool:
        """A block computing one add, subtract or multiply of loads and immediates (layer
        norm's ``x - mean``): redoing it in each consumer costs one vector op, while keeping
        it costs a row buffer, which TVM allocates from its workspace pool on every row once
        it is over 1 KB (a call and a free per row)."""
        store = self.store(block)
        if store is None or type(store.value).__name__ not in ("Add", "Sub", "Mul"):
            return False
        leaves = (store.value.a, store.value.b)
        return all(type(_uncast(v)).__name__ in ("TensorLoad", "BufferLoad", "IntImm",
                                                 "FloatImm") for v in leaves)

    def is_empty(self, block) -> bool:
        """A block with a loop of static extent 0: it runs no iteration."""
        return any(isinstance(e, tirx.IntImm) and e.value == 0
                   for e in (self.sch.get(loop).extent for loop in self.sch.get_loops(block)))

    def writes_bool(self, block) -> bool:
        store = self.store(block)
        return store is not None and str(store.buffer.dtype) == "bool"

    def is_row_value(self, block) -> bool:
        """A value per row (its reduced dims have size 1), e.g. rsqrt(var + eps): computed
        once per row under the row loop rather than inlined into every element."""
        inner = self.kernel.reduce_inner or 0
        store = self.store(block)
        if store is None:
            return False
        shape = store.buffer.shape
        rank = len(self.kernel.outputs[0].shape)
        return inner > 0 and len(shape) == rank and all(
            isinstance(d, tirx.IntImm) and d.value == 1 for d in shape[rank - inner:])

    def written(self, block, buffers) -> bool:
        store = self.store(block)
        return store is not None and any(store.buffer.same_as(b) for b in buffers)

    def nbytes(self) -> int | None:
        """Bytes of the kernel's arguments and results, None when a dim is symbolic."""
        total = 0
        for t in (*self.kernel.inputs, *self.kernel.outputs):
            if not all(isinstance(d, tirx.IntImm) for d in t.shape):
                return None
            total += math.prod(int(d) for d in t.shape) * tvm.DataType(str(t.dtype)).bits // 8
        return total

    def ops_per_element(self) -> int:
        """Arithmetic ops in the stores of all blocks (after inlining): the work a row kernel
        does per element, give or take its per-row statistics."""
        seen: set = set()
        return sum(_count_ops(self.store(b).value, seen) for b in self.blocks()
                   if self.store(b) is not None)

    def lanes(self, block) -> int:
        store = self.store(block)
        if store is None:
            return 1
        dtype = store.buffer.dtype
        return max(1, self.vector_bytes // max(1, tvm.DataType(str(dtype)).bits // 8))

    # -- steps ---------------------------------------------------------------------------

    def run(self) -> None:
        if any(self.is_empty(b) for b in self.blocks()):
            # a kernel with an empty output (the lowering drops other empty values) has
            # nothing to speed up, and fusing a loop of extent 0 divides by 0 in TVM
            return
        fused = self.kernel.reduce_inner is not None and len(self.kernel.outputs) == 1
        self.inline(keep_shared=fused)
        if fused and self.kernel.reduce_inner > 0 and self.fuse_rows():
            return
        split = long_sums.split_totals(self.sch, self.kernel, self.vector_bytes // 8)
        done = long_sums.schedule_alone(self.sch, split, self._parallel)
        for b in self.blocks():  # each stage on its own: parallel outside, vector inside
            if self.sch.get(b).name_hint not in done:
                self.schedule_alone(b)

    def inline(self, keep_shared: bool) -> None:
        # consumers counted before any inlining: inlining the consumers first merges them
        # into one block, which would hide that the value is read many times
        readers = {self.sch.get(b).name_hint: len(self.sch.get_consumers(b))
                   for b in self.blocks()}
        for b in reversed(self.blocks()):
            if self.is_output(b) or self.is_reduction(b):
                continue
            consumers = readers[self.sch.get(b).name_hint]
            shared = len(self.sch.get_consumers(b)) > 1
            # i1 values are always inlined (a compare is cheap to redo): TVM's vectorised
            # loads of an i1 buffer break its build (a Not of a non-i1 value in a Select)
            cheap = self.is_pure_load(b) or self.writes_bool(b) or self.is_one_op(b)
            if keep_shared and (shared or self.is_row_value(b)) and not cheap:
                continue
            if consumers > _MAX_INLINE_CONSUMERS and not cheap:
                # a value read by many consumers (the padded input of a max-pool's 9 window
                # slices) is computed once into a buffer: inlined, its expression would be
                # recomputed per consumer, and TVM's inlining slows to minutes on such trees
                continue
            try:
                self.sch.compute_inline(b)
            except ScheduleError:
                pass  # e.g. a block TVM can not inline: it stays a stage of its own

    def fuse_rows(self) -> bool:
        """Steps 2 and 3 for the row form; False (schedule untouched) if it does not apply."""
        sch = self.sch
        anchor = sch.get_output_blocks("root")[0]
        nrow = len(sch.get_loops(anchor)) - self.kernel.reduce_inner
        if nrow < 1:
            return False  # a full reduction to a scalar: no rows to share out
        saved = sch.copy()
        try:
            # rfactor first, while each reduction still has its own loop nest: the partial
            # (lane) sums and the final sum over the lanes then both move under the row loop
            nbytes, ops = self.nbytes(), self.ops_per_element()
            self.streams = nbytes is not None and nbytes > STREAMING_BYTES
            self.streams_heavy = self.streams and ops > LIGHT_OPS
            # a long sum's f64 totals split over their lanes (pir.codegen.tvm.long_sums,
            # which schedules their blocks below)
            split = long_sums.split_totals(sch, self.kernel, self.vector_bytes // 8)
            internal = long_sums.internal_blocks(sch, split)
            reductions = [b for b in self.blocks() if self.is_reduction(b)
                          and sch.get(b).name_hint not in internal]
            lanes = self.lanes(anchor)
            for i, b in enumerate(reductions):
                if self.rfactor(b, *row_accumulators(nbytes, ops, lanes, i == 0)) is None:
                    self.rfactor_short(b)
            sch = self.sch  # (a failed rfactor_short put back a saved copy)
            loops = sch.get_loops(anchor)
            row = sch.fuse(*loops[:nrow]) if nrow > 1 else loops[0]
            anchor_name = sch.get(anchor).name_hint
            others = [b for b in self.blocks() if sch.get(b).name_hint != anchor_name]
            for b in reversed(others):  # consumers first: compute_at needs them placed
                sch.compute_at(b, row, preserve_unit_loops=False)
            if self.recomputes(row, others):
                raise ScheduleError("a row reads other rows' values")
            sch.parallel(row)
        except ScheduleError:
            self.sch = saved
            self.partials, self.folds = [], []
            return False
        self.row_loops = nrow
        partials = [buf for buf, _ in self.partials]
        for b in sch.get_child_blocks(row):
            if self.written(b, partials):
                # compute_at orders the new loops as the block's iter vars: lanes (the
                # rfactor'ed spatial var) first, then chunks; the lanes must be innermost
                lanes, chunks = sch.get_loops(b)[-2:]
                self._try(lambda: sch.reorder(chunks, lanes))
                count, width = next(shape for buf, shape in self.partials
                                    if self.written(b, [buf]))
                if count > 1:  # one unrolled vector per accumulator
                    self._try(lambda: self.unroll_vectors(b, count, width))
                else:
                    self.vectorize_lanes(b, skip=1)
            elif self.written(b, self.folds):
                lanes, accs = sch.get_loops(b)[-2:]
                self._try(lambda: sch.reorder(accs, lanes))
                self.vectorize_lanes(b, skip=1)
            elif not self.is_reduction(b):
                self.vectorize_inner(b, skip=1)
        long_sums.schedule_rows(sch, row, split)
        for b in sch.get_child_blocks(row):
            self.sum_as_made(b)
        return True

    def recomputes(self, row, blocks) -> bool:
        """Whether a block moved under the row loop runs more than twice its own work: the
        output's rows are not the reductions' (a softmax whose result is written transposed,
        YOLOv8's PSA attention: each output row needs every row's sums, and the kernel
        computed the whole softmax 400 times, 330 ms for a 1 ms kernel).  Static extents
        only; a symbolic one is taken on trust."""
        sch = self.sch
        rows = sch.get(row).extent
        if not isinstance(rows, tirx.IntImm):
            return False
        for b in blocks:
            work = 1
            for iv in sch.get(b).iter_vars:
                if not isinstance(iv.dom.extent, tirx.IntImm):
                    return False
                work *= int(iv.dom.extent.value)
            loops = sch.get_loops(b)
            at = next((i for i, lp in enumerate(loops) if sch.get(lp).same_as(sch.get(row))),
                      None)
            if at is None:
                continue
            runs = int(rows.value)
            for lp in loops[at + 1:]:
                extent = sch.get(lp).extent
                if not isinstance(extent, tirx.IntImm):
                    return False
                runs *= int(extent.value)
            if runs > 2 * work:
                return True
        return False

    def sum_as_made(self, rf) -> None:
        """Move a one-accumulator partial sum (or other reduction) of a kept row value into
        the loop that makes the value, so that each vector is added while it is in a
        register: softmax's exponentials are summed as they are written, one pass over the
        row fewer, as ONNX Runtime's MLAS does (its SumExp kernel).  Only where the two
        loops meet vector for vector (same chunks, same lanes)."""
        sch = self.sch
        if not self.written(rf, [buf for buf, shape in self.partials if shape[0] == 1]):
            return
        made = [p for p in sch.get_producers(rf) if not self.is_reduction(p)]
        if len(made) != 1:
            return
        theirs, ours = sch.get_loops(made[0])[-2:], sch.get_loops(rf)[-2:]
        same = Analyzer().can_prove_equal
        if len(sch.get_loops(made[0])) != len(sch.get_loops(rf)) or not all(
                same(sch.get(a).extent, sch.get(b).extent) for a, b in zip(theirs, ours)):
            return
        saved = sch.copy()
        try:
            sch.reverse_compute_at(rf, theirs[0], preserve_unit_loops=False)
            inner = sch.get_loops(rf)[-1]
            if not isinstance(sch.get(inner).extent, tirx.IntImm):
                raise ScheduleError("a symbolic lanes loop")  # (see _vectorize_static)
            sch.vectorize(inner)
        except ScheduleError:
            self.sch = saved

    def schedule_alone(self, block) -> None:
        sch = self.sch
        loops = sch.get_loops(block)
        if not loops:
            return
        n_spatial = sum(iv.iter_type == tirx.IterVar.DataPar for iv in sch.get(block).iter_vars)
        if self.is_reduction(block):
            # TE puts spatial loops before reduce loops: run the spatial ones in parallel
            if n_spatial:
                self._try(lambda: sch.parallel(sch.fuse(*loops[:n_spatial]) if n_spatial > 1
                                               else loops[0]))
                self.vectorize_reduction(block, skip=1)
            else:
                self.vectorize_reduction(block, skip=0)
            return
        if len(loops) > 1:
            outer = _parallel_prefix(sch, loops[:-1])
            self._try(lambda: sch.parallel(sch.fuse(*outer) if len(outer) > 1 else outer[0]))
            self.vectorize_inner(block, skip=1)
        else:
            self.vectorize_inner(block, skip=0)

    def vectorize_inner(self, block, skip: int) -> None:
        """Vectorise the innermost loop when its extent is static: in vectors of the target's
        width, the last one of a remainder in a loop of its own (direct.split_off_last: a
        predicated vector is written a lane at a time).
        A softmax over 6906 classes (an OCR recogniser's head) computed its exponentials
        one float at a time while only multiples of the width were vectorised."""
        sch = self.sch
        loops = sch.get_loops(block)[skip:]
        if not loops:
            return
        inner = loops[-1]
        extent = sch.get(inner).extent
        lanes = self.lanes(block)
        if not isinstance(extent, tirx.IntImm):
            return
        n = extent.value
        if n % lanes == 0 and n > lanes:
            self._try(lambda: sch.vectorize(sch.split(inner, [None, lanes])[1]))
        elif n > lanes:
            def tail() -> None:
                outer, vector = sch.split(inner, [None, lanes])
                split_off_last(sch, outer)
                sch.vectorize(vector)
            self._try(tail)
        elif n > 1:
            self._try(lambda: sch.vectorize(inner))

    def unroll_vectors(self, rf, count: int, lanes: int) -> None:
        """The partial-result block of ``count`` accumulators: its innermost loop (count x
        lanes) split into an unrolled loop over the accumulators and a vector of lanes."""
        accs, vector = self.sch.split(self.sch.get_loops(rf)[-1], [count, lanes])
        self.sch.unroll(accs)
        self.sch.vectorize(vector)

    def vectorize_lanes(self, rf, skip: int) -> None:
        """Vectorise the lanes loop (the innermost) of the partial-result block.  Its init
        stays in the block (TVM lowers it to ``if chunk == 0``, which does not depend on the
        lane): after decompose_reduction the update block would not be a complete or
        reduction block any more, and TVM then refuses to vectorise it."""
        self._vectorize_static(self.sch.get_loops(rf)[-1])

    def _vectorize_static(self, loop) -> None:
        """Vectorise ``loop`` when its extent is static.  TVM vectorises a symbolic one only
        for scalable-vector targets and fails the build otherwise (a softmax over 32
        channels between two transposes of a [b, 32, 1, H, W] map left the lanes loop
        W long: RivaGAN's decoder)."""
        if isinstance(self.sch.get(loop).extent, tirx.IntImm):
            self._try(lambda: self.sch.vectorize(loop))

    def _parallel(self, loops) -> None:
        """Run ``loops`` (leading loops of one block) as one parallel loop."""
        self.sch.parallel(self.sch.fuse(*loops) if len(loops) > 1 else loops[0])

    def _try(self, step) -> None:
        try:
            step()
        except ScheduleError:
            pass

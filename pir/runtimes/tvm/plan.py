"""The execution plan of a compiled function: buffers planned once by liveness, one step per op.

Interpreting a compiled program op by op costs tens of microseconds an op in Python (type
checks, wrapping numpy arrays for TVM, allocating every result).  A :class:`Plan` does that
work once per function and binding of its symbolic dims (the sizes the inputs fix):

* **Buffers.**  Every result of a kernel or library call whose size the binding fixes gets a
  slot: a 64-byte aligned byte buffer (TVM shares aligned memory only) that is allocated once
  and reused, by liveness, for later results of a size it holds: a slot is free again after
  the last use of its value and of every value that may be a view of it (a reshape or
  transpose the reference rules compute as a numpy view).  TVM tensors over the slots and the
  constants are made once too.  Slots that a function output may view are not reused across
  runs (the caller keeps the arrays it got): they come from an :class:`OutputPool`, which
  lends a buffer again once the caller has dropped every array of it.
* **Steps.**  A kernel is one call of its compiled function on prepared tensors (a function
  input's tensor is made once a run, whichever kernels read it); a matmul
  (``prim.dot_general`` in matmul form, float32) is ``np.matmul`` into its slot; every other
  op runs on the reference rules, checked as in the reference runtime.  With the
  interpreter's ``keep_values`` (``pir run --check`` looking for the first divergence), the
  values a step makes in (or as views of) reusable slots are copied as it makes them, and
  the run ends with those copies in ``values``, not with what the slots hold by then.
  A run that neither profiles nor keeps values calls each stretch of consecutive kernel
  steps in one native call instead (``fast``, pir.runtimes.tvm.native_plan).

Anything a plan cannot size (a dim bound only by a value computed inside the run) runs as the
interpreter would run it, so a plan is an optimisation, never a change of meaning.  When such
a dim leaves kernels unsized, the executor interprets the first run and plans the next ones
with the sizes it bound (``learned`` dims), checked on every run (``DimConflict``).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

import tvm

from pir.codegen.tvm.build import threads, use_threads
from pir.codegen.tvm.dims import solve
from pir.runtimes.hugepages import SMALL_CHUNK, Arena
from pir.runtimes.tvm.buffers import OutputPool, as_tvm, shareable
from pir.runtimes.tvm.signature import kernel_failure
from pir.runtimes.tvm.staging import InputStaging
from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.dialects.kernel import TvmKernelOp
from pir.ir.opdef import Terminator
from pir.ir.types import DType, TensorType, bound_shape
from pir.runtimes.reference.interpreter import CONTROL_FLOW, DimConflict

__all__ = ["Plan"]

#: Kernel steps touching fewer elements than this run on one thread (see Plan._small).
SMALL_STEP = 1 << 16


def matmul_form(op: Operation) -> tuple[bool, bool] | None:
    """For a float32 dot_general numpy's matmul computes, ``[..., M, K] x [..., K, N]`` (or
    ``[K, N]`` weights), batch dims leading and in order, with either operand's last two
    dims possibly swapped (a transposed view, which BLAS reads as is): whether each operand
    is transposed.  None for any other op."""
    if op.name != "prim.dot_general":
        return None
    lt, rt = op.operands[0].type, op.operands[1].type
    if not (isinstance(lt, TensorType) and isinstance(rt, TensorType)) or lt.shape is None \
            or rt.shape is None or lt.dtype != DType.F32 or rt.dtype != DType.F32:
        return None
    lr, rr = len(lt.shape), len(rt.shape)
    lb, rb = list(op.lhs_batching_dimensions), list(op.rhs_batching_dimensions)
    lc, rc = list(op.lhs_contracting_dimensions), list(op.rhs_contracting_dimensions)
    nb = len(lb)
    if lb != list(range(nb)) or rb != list(range(nb)) or len(lc) != 1 or len(rc) != 1:
        return None
    if rr != nb + 2 or (nb and lr != nb + 2) or lr < nb + 1:
        return None
    if lc == [lr - 1]:
        lhs_t = False
    elif lc == [lr - 2] and lr == nb + 2:
        lhs_t = True  # [..., K, M]
    else:
        return None
    if rc == [nb]:
        return lhs_t, False
    if rc == [nb + 1]:
        return lhs_t, True  # [..., N, K]
    return None


def _reads(op: Operation) -> list[Value]:
    """The values ``op`` reads: its operands, and those its regions' ops read from outside
    them (a branch of an nn.if uses the enclosing block's values without naming them as
    operands of the nn.if)."""
    if not op.regions:
        return list(op.operands)
    nested = list(op.walk())[1:]
    inner = {v for o in nested for v in o.results}
    inner.update(a for o in [op, *nested] for r in o.regions for b in r.blocks for a in b.args)
    outer = [v for o in nested for v in o.operands if v not in inner]
    return list(dict.fromkeys([*op.operands, *outer]))


def _escaping(ops: list[Operation], reads: list[list[Value]], returned,
              planned: Callable[[Operation], bool]) -> set[Value]:
    """The values of a block (its ``ops``, each with what it reads) that a value it returns
    may be or view: the returned ones, and what an op the plan does not run itself reads to
    make one of those (a reference rule may return a view of its operand; an nn.if only
    its branches' yields, see ``_viewed``).  A planned kernel writes a buffer of its own."""
    escaping = set(returned)
    for op, read in zip(reversed(ops), reversed(reads)):
        if not planned(op) and any(r in escaping for r in op.results):
            escaping.update(_viewed(op, read, planned))
    return escaping


def _viewed(op: Operation, read: list[Value], planned: Callable[[Operation], bool]) -> list[Value]:
    """The values of those ``op`` reads that its results may be or view.  Any of them for
    most ops; for an nn.if, the enclosing block's values its branches return, as
    ``_escaping`` finds them in each branch."""
    if op.name != "nn.if":
        return read
    outer = set(read)
    found: set[Value] = set()
    for region in op.regions:
        inner = [o for o in region.block.ops if Terminator not in o.traits]
        term = region.block.terminator
        found |= _escaping(inner, [_reads(o) for o in inner],
                           term.operands if term is not None else (), planned) & outer
    return [v for v in read if v in found]


class _Slot:
    __slots__ = ("nbytes", "buf", "fresh")

    def __init__(self, nbytes: int, arena: Arena):
        self.nbytes = nbytes
        self.buf = arena.empty((max(nbytes, 1),), np.uint8)
        self.fresh = False  # a function output may view it: a new buffer every run


class Plan:
    """Steps and buffers for one function entry block under one binding of its dims."""

    def __init__(self, interp, block: Block, symbols: dict[str, int],
                 learned: frozenset[str] = frozenset()):
        self.interp = interp
        # dims of ``symbols`` that a run showed, not the inputs or the kernels' reshapes (see
        # executor.call).  A run binds them as it makes the values that show them (a
        # reference rule's result, checked); a kernel or matmul step sized by one first
        # checks that this run bound it to the size the plan has, else raises DimConflict
        self.learned = frozenset(learned)
        self.assumed = bool(self.learned)
        self.unsized = False  # a kernel or matmul waits for a dim the binding lacks
        self.program = interp.program
        self.block = block
        self.symbols = dict(symbols)
        self.slots: list[_Slot] = []
        # the slots' memory: the big ones on huge pages (pir.runtimes.hugepages)
        self.arena = Arena(SMALL_CHUNK, huge_chunks=False)
        self.slot_of: dict[Value, int] = {}  # results written into a slot
        self.views: dict[Value, np.ndarray] = {}  # and their arrays (views of the slot)
        self.tensors: dict[Value, tvm.runtime.Tensor] = {}  # TVM tensors made once
        self.constants: dict[Value, np.ndarray] = {}
        self.steps: list[tuple[Operation, Callable[[], None]]] = []
        self.outputs = OutputPool()  # buffers of the arrays a run returns
        self.inputs = InputStaging()  # the inputs' TVM tensors, aligned copies where needed
        # the TVM tensor of each input a kernel reads, made once a run (not once a use)
        self.arg_tensors: dict[Value, tvm.runtime.Tensor] = {}
        self._kernel_args: set[Value] = set()
        # per step: True when it is small enough that one thread beats waking the others
        # (None: a step that runs no planned kernel)
        self.small: list[bool | None] = []
        self._native: set[Operation] = set()  # kernel steps a KernelRun may call
        self.kernel_runs: list = []  # the KernelRuns of ``fast``
        self._assign_slots()
        self._make_steps()
        # the TVM tensors of this block's values, for the plans of its regions: a branch's
        # kernel that reads one checks that this run's array is the one the tensor views
        shared = interp.shared_tensors
        for v in self.views:
            t = self._tensor(v)
            if t is not None:
                shared[v] = (self.views[v], t)
        # what a run binds before its steps: all but the learned dims
        self.bind = {d: n for d, n in self.symbols.items() if d not in self.learned}

    # -- planning ----------------------------------------------------------------------------

    def _planned(self, op: Operation) -> bool:
        return isinstance(op, TvmKernelOp) or matmul_form(op) is not None

    def _assign_slots(self) -> None:
        ops = [op for op in self.block.ops if Terminator not in op.traits]
        term = self.block.ops[-1] if self.block.ops else None
        reads = [_reads(op) for op in ops]
        last = {}
        for i, op in enumerate(ops):
            for v in reads[i]:
                last[v] = i
        returned = set(term.operands) if term is not None else set()
        escaping = _escaping(ops, reads, returned, self._planned)
        roots: dict[Value, set[int]] = {}  # value -> slots it may view
        holders: dict[int, list[Value]] = {}  # slot -> values that may view it
        free: list[int] = []
        for i, op in enumerate(ops):
            if isinstance(op, ConstantOp):
                continue
            if self._planned(op):
                if isinstance(op, TvmKernelOp):  # dims the kernel computes (a flatten)
                    self.symbols = solve(self.program.kernel(op).derived, self.symbols)
                for r in op.results:
                    shape = bound_shape(r.type, self.symbols)
                    if shape is None or not shareable(r.type.dtype, shape):
                        continue  # run as the interpreter runs it
                    nbytes = int(np.prod(shape, dtype=np.int64)) * r.type.dtype.numpy.itemsize
                    if r in escaping:  # a slot of its own, a new buffer every run
                        self.slots.append(_Slot(nbytes, self.arena))
                        self.slots[-1].fresh = True
                        s = len(self.slots) - 1
                    else:
                        s = self._take(free, nbytes)
                    self.slot_of[r] = s
                    roots[r] = {s}
                    holders.setdefault(s, []).append(r)
            else:
                # a reference rule may return a view of any value it reads (numpy reshape,
                # transpose; a branch that yields a value of this block)
                shared = set().union(*(roots.get(v, set()) for v in reads[i])) \
                    if reads[i] else set()
                for r in op.results:
                    if shared:
                        roots[r] = shared
                        for s in shared:
                            holders[s].append(r)
            # free the slots whose every holder is dead after this op
            for v in reads[i]:
                if last.get(v) == i:
                    for s in roots.get(v, ()):
                        if not self.slots[s].fresh and s not in free and \
                                all(last.get(h, -1) <= i for h in holders[s]):
                            free.append(s)
            for r in op.results:  # a result nobody reads frees its slot at once
                if r not in last and r not in returned:
                    for s in roots.get(r, ()):
                        if not self.slots[s].fresh and s not in free and \
                                all(last.get(h, -1) <= i for h in holders[s]):
                            free.append(s)
        for v, s in self.slot_of.items():
            self.views[v] = self._view(s, v)

    def _take(self, free: list[int], nbytes: int) -> int:
        """The smallest free slot that holds ``nbytes``, else a new one."""
        best = None
        for k, s in enumerate(free):
            n = self.slots[s].nbytes
            if n >= nbytes and (best is None or n < self.slots[free[best]].nbytes):
                best = k
        if best is not None:
            return free.pop(best)
        self.slots.append(_Slot(nbytes, self.arena))
        return len(self.slots) - 1

    def _view(self, s: int, v: Value) -> np.ndarray:
        t = v.type
        shape = bound_shape(t, self.symbols)
        dtype = t.dtype.numpy
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return self.slots[s].buf[:n].view(dtype).reshape(shape)

    # -- steps -------------------------------------------------------------------------------

    def _make_steps(self) -> None:
        # the enclosing blocks' constants that a region's ops read (a weight the function
        # defines, used in a branch) get their TVM tensors once too, not a copy a run
        # (a constant's array is read-only, which DLPack cannot share)
        for op in self.block.ops:
            for v in _reads(op):
                owner = getattr(v, "op", None)
                if isinstance(owner, ConstantOp) and owner.parent is not self.block:
                    self.constants[v] = constant_value(owner)
        args = set(self.block.args)
        for op in self.block.ops:
            if op.regions:  # a region's kernels read these through the shared tensors
                self._kernel_args.update(v for v in _reads(op) if v in args)
        for op in self.block.ops:
            if Terminator in op.traits:
                break
            if isinstance(op, ConstantOp):
                self.constants[op.results[0]] = constant_value(op)
                continue
            if isinstance(op, TvmKernelOp) and all(r in self.slot_of for r in op.results) \
                    and all(d in self.symbols for d in self.program.kernel(op).free):
                step = self._kernel_step(op)
                checked = self._checked(op, step)
                if checked is step:
                    self._native.add(op)
                self.steps.append((op, checked))
                self.small.append(self._small(op))
                continue
            if matmul_form(op) is not None and op.results[0] in self.slot_of:
                self.steps.append((op, self._checked(op, self._matmul_step(op))))
            else:
                if self._planned(op) and not self._sized(op):
                    self.unsized = True
                self.steps.append((op, self._reference_step(op)))
            self.small.append(self._small_region(op) if op.regions else None)
        self._any_small = any(self.small)
        self._any_big = any(s is False for s in self.small)
        self.fast = self._kernel_runs()

    def _kernel_runs(self) -> list[tuple[Callable[[], None], bool | None]]:
        """The steps of a run that neither profiles nor keeps values, with their ``small``
        flags: each stretch of two or more kernel steps on one thread count called in one
        native call (a :class:`KernelRun`), the other steps as they are."""
        from pir.runtimes.tvm.native_plan import KernelRun

        out: list[tuple[Callable[[], None], bool | None]] = []
        stretch: list[int] = []

        def close() -> None:
            made = KernelRun.build(self, [self.steps[i][0] for i in stretch]) \
                if len(stretch) > 1 else None
            if made is not None:
                self.kernel_runs.append(made)
                out.append((made, self.small[stretch[0]]))
            else:
                out.extend((self.steps[i][1], self.small[i]) for i in stretch)
            stretch.clear()

        for i, (op, step) in enumerate(self.steps):
            native = op in self._native and not self.interp.check_bounds
            if stretch and (not native or self.small[i] != self.small[stretch[0]]):
                close()
            if native:
                stretch.append(i)
            else:
                out.append((step, self.small[i]))
        if stretch:
            close()
        return out

    def _checked(self, op: Operation, step: Callable[[], None]) -> Callable[[], None]:
        """``step``, first checking the learned dims that size it (see ``learned``)."""
        from pir.codegen.tvm.dims import symbols_of

        dims = set().union(*(symbols_of(r.type) for r in op.results))
        if isinstance(op, TvmKernelOp):
            dims.update(self.program.kernel(op).free)
        sizes = [(d, self.symbols[d]) for d in sorted(dims & self.learned)]
        if not sizes:
            return step
        bound = self.interp.symbols

        def checked() -> None:
            for d, n in sizes:
                if bound.get(d) != n:
                    raise DimConflict(f"{op.describe()}: dim {d} is {bound.get(d, 'unbound')} "
                                      f"in this run, {n} in the run the plan learned it from")
            step()

        checked.__qualname__ = step.__qualname__  # the kind of step it is, for profiles
        return checked

    def _small(self, op: Operation) -> bool:
        """Whether the planned kernel ``op`` touches fewer than SMALL_STEP elements (operands,
        results and the weights it holds together): waking the pool's other threads for a
        parallel loop costs 3-5 us here, more than such a kernel takes on one thread.  (A
        recurrent step's product of one row by a [512, 2048] weight reads 4 MB: not small.)"""
        total = sum(int(np.prod(t.shape, dtype=np.int64)) for t in self.program.kernel(op).params)
        for v in [*op.operands, *op.results]:
            shape = bound_shape(v.type, self.symbols) if isinstance(v.type, TensorType) else ()
            if shape is None:
                return False
            total += int(np.prod(shape, dtype=np.int64))
        return total < SMALL_STEP

    def _small_region(self, op: Operation) -> bool | None:
        """For a control-flow op, True when every kernel of its regions is small at this
        binding: the op then runs on one thread as a whole, so that the plan of a loop body
        does not switch the pool to one thread and back on every iteration (4 us of a GRU
        step's 14 in PLCMOS, at two threads); False when some are not (the pool gets all
        its threads first), None when it holds no kernel (the pool stays as it is)."""
        kernels = [o for o in op.walk() if isinstance(o, TvmKernelOp)]
        return all(self._small(k) for k in kernels) if kernels else None

    def _sized(self, op: Operation) -> bool:
        """Whether the binding fixes the size of every result of ``op`` and of every dim
        its kernel takes as a parameter."""
        if isinstance(op, TvmKernelOp) and \
                not all(d in self.symbols for d in self.program.kernel(op).free):
            return False
        return all(bound_shape(r.type, self.symbols) is not None for r in op.results)

    def _tensor(self, v: Value) -> tvm.runtime.Tensor | None:
        """The TVM tensor of a planned or constant value, made once; None for others."""
        t = self.tensors.get(v)
        if t is None:
            if v in self.views and not self.slots[self.slot_of[v]].fresh:
                t = tvm.runtime.from_dlpack(self.views[v])
            elif v in self.constants:
                t = as_tvm(np.array(self.constants[v]), tvm.cpu())[0]
            else:
                return None
            self.tensors[v] = t
        return t

    def _kernel_step(self, op: TvmKernelOp) -> Callable[[], None]:
        k = self.program.kernel(op)
        fn, params = k.function(self.symbols), [*k.params, *(self.symbols[d] for d in k.free)]
        values = self.interp.values
        ins = [self._tensor(v) for v in op.operands]
        inputs = set(self.block.args)
        dynamic = [i for i, t in enumerate(ins) if t is None and op.operands[i] not in inputs]
        given = [i for i, t in enumerate(ins) if t is None and op.operands[i] in inputs]
        self._kernel_args.update(op.operands[i] for i in given)
        arg_tensors = self.arg_tensors
        shared = self.interp.shared_tensors
        operands = list(op.operands)
        outs = list(op.results)
        fresh = [self.slots[self.slot_of[r]].fresh for r in outs]
        out_tensors = [None if f else self._tensor(r) for r, f in zip(outs, fresh)]
        device = tvm.cpu()

        def step() -> None:
            args = list(ins)
            for i in given:
                args[i] = arg_tensors[operands[i]]
            for i in dynamic:
                arr = values[operands[i]]
                known = shared.get(operands[i])
                args[i] = known[1] if known is not None and known[0] is arr \
                    else as_tvm(arr, device)[0]
            result_tensors = list(out_tensors)
            for j, r in enumerate(outs):
                if fresh[j]:
                    arr = self.outputs.empty(self.views[r].shape, self.views[r].dtype)
                    values[r] = arr
                    result_tensors[j] = tvm.runtime.from_dlpack(arr)
                else:
                    values[r] = self.views[r]
            try:
                fn(*args, *params, *result_tensors)
            except Exception as e:  # noqa: BLE001 - a failed assertion (--check-bounds)
                raise kernel_failure(op, e) from None

        return step

    def _matmul_step(self, op: Operation) -> Callable[[], None]:
        values = self.interp.values
        lhs, rhs = op.operands
        lhs_t, rhs_t = matmul_form(op)
        r = op.results[0]
        fresh = self.slots[self.slot_of[r]].fresh
        out = self.views[r]

        def step() -> None:
            dst = self.outputs.empty(out.shape, out.dtype) if fresh else out
            a, b = values[lhs], values[rhs]
            a = np.swapaxes(a, -1, -2) if lhs_t else a
            b = np.swapaxes(b, -1, -2) if rhs_t else b
            if a.shape[-1] == 1 and a.ndim >= 2 and b.ndim >= 2:
                # an outer product ([M, 1] x [1, N]: a derivative's tangent times a weight
                # row): 3.6x faster as a broadcast multiply than through BLAS
                np.multiply(a, b, out=dst)
            else:
                np.matmul(a, b, out=dst)
            values[r] = dst

        return step

    def _reference_step(self, op: Operation) -> Callable[[], None]:
        # the interpreter's own path: the reference rules (checked), or for a kernel the
        # plan could not size, its compiled code with outputs sized from the inputs
        return lambda: self.interp.exec(op)

    # -- running -----------------------------------------------------------------------------

    def run(self, args: list[np.ndarray]) -> list[np.ndarray]:
        values = self.interp.values
        shared = self.interp.shared_tensors
        for i, (a, arr) in enumerate(zip(self.block.args, args)):
            if a in self._kernel_args:
                arr, t = self.inputs.kernel_input(i, arr)
                self.arg_tensors[a] = t
                shared[a] = (arr, t)
            values[a] = arr  # (only kernels need 64-byte aligned memory)
        values.update(self.constants)
        # the dims the planned kernels compute, for the reference rules that need them
        self.interp.symbols.update(self.bind)
        interp = self.interp
        prof = interp.profile
        many = threads()
        kept = {} if interp.keep_values else None
        # a profile times each op, kept values are copied after each op: the per-op steps
        pairs = self.fast if prof is None and kept is None else \
            [(step, small) for (_, step), small in zip(self.steps, self.small)]
        if many > 1 and self._any_small:
            steps = self._on_fewer_threads(many, pairs)
        else:
            if self._any_big:  # (an earlier plan may have left the pool on one thread)
                use_threads(many)
            steps = (step for step, _ in pairs)
        if kept is not None:
            steps = self._keeping(steps, kept)
        try:
            if prof is None:
                for step in steps:
                    step()
            else:
                # each step is one entry: ops nested in a group it runs are not timed apart;
                # a control-flow op is none, the ops of the region it runs are
                interp.profile = None
                try:
                    for (op, _), step in zip(self.steps, steps):
                        if op.name in CONTROL_FLOW:
                            interp.profile = prof
                            try:
                                step()
                            finally:
                                interp.profile = None
                            continue
                        t0 = time.perf_counter()
                        step()
                        entry = prof.setdefault(interp.profile_key(op), [0, 0.0])
                        entry[0] += 1
                        entry[1] += time.perf_counter() - t0
                finally:
                    interp.profile = prof
        finally:
            if hasattr(steps, "close"):
                steps.close()  # a step that raised: the pool gets its threads back now
        if kept is not None:
            values.update(kept)
        term = self.block.ops[-1]
        given = dict(zip(self.block.args, args))
        # an input returned as it is: the caller's array; a view of a staging copy (a
        # reshaped input): a copy, since the next run overwrites the staging buffer (a
        # kernel's result, written into a slot, views no input)
        return [given[v] if v in given else values[v] if v in self.slot_of
                else self.inputs.own(values[v]) for v in term.operands]

    def _keeping(self, steps, kept: dict):
        """``steps``, each followed by a copy, into ``kept``, of the values its op made in
        (or as a view of) a slot a later step may write.  With ``keep_values`` (``pir run
        --check`` looking for the first divergence), a run ends with every value as its step
        made it, not as its slot holds it after a later step reused the slot.  (The values
        of fresh slots, a function output's, and the arrays a reference rule made are
        written once a run: they are not copied.)"""
        values = self.interp.values
        reused = [s.buf for s in self.slots if not s.fresh]
        try:
            for (op, _), step in zip(self.steps, steps):
                def keep(step=step, results=op.results) -> None:
                    step()
                    for r in results:
                        a = values.get(r)
                        if isinstance(a, np.ndarray) and \
                                any(np.may_share_memory(a, b) for b in reused):
                            kept[r] = np.array(a)

                keep.__qualname__ = step.__qualname__
                yield keep
        finally:
            if hasattr(steps, "close"):
                steps.close()

    def _on_fewer_threads(self, many: int, pairs):
        """The steps of ``pairs`` (step, small), each kernel or control-flow step after
        setting the pool to one thread if it is small, else to ``many`` (a change costs
        about 2 us, a parallel launch on a woken pool 3-5 us).  The pool stays as the last
        of them left it, also after the run: a small model's runs then switch no more after
        the first, and the next step that wants more threads asks for them (use_threads)."""
        for step, small in pairs:
            if small is not None:
                use_threads(1 if small else many)
            yield step

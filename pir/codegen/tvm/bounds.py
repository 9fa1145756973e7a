"""Bounds assertions for a debug build of the kernels (``pir run --check-bounds``).

pir builds its kernels without TVM's argument checks and without bounds checks: the runtime
makes every argument from the op's types and checks each op against its kernel's signature
once (pir.runtimes.tvm.signature).  An index that is wrong (a bug in a lowering rule or a
schedule, or a kernel from a file the user chose to trust) then reads or writes outside its
buffer silently.  TVM's own ``instrument_bound_checkers`` finds no bounds to check in the
scheduled TIR that pir builds, so this module adds them itself: before every buffer store of
the scheduled function, an ``assert`` that each index of the store, and of every load that
the stored value reads, lies inside its buffer's shape.

What it does not check: a load under a ``T.if_then_else`` branch (its guard is what keeps
it in bounds, as for the padded reads of a convolution, and the assertion before the store
would not see the guard).  Loops are made serial: TVM vectorizes no loop holding an
assertion, and a failed assertion inside a parallel loop does not reach the caller.  The
kernels are slower for both, which a debug build may be.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.ir.expr import StringImm, TensorLoad

__all__ = ["with_bound_checks"]

_IF_THEN_ELSE = tvm.ir.Op.get("prim.if_then_else")


def with_bound_checks(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` with every buffer access asserted in bounds and every loop serial."""
    return tvm.IRModule({gv: _checked(f) if isinstance(f, tirx.PrimFunc) else f
                         for gv, f in mod.functions.items()})


def _checked(func: tirx.PrimFunc) -> tirx.PrimFunc:
    return tvm_ffi.structural_map(func, [(tirx.stmt.BufferStore, _assert_store),
                                         (tirx.For, _serial)])


def _serial(loop: tirx.For) -> tirx.For:
    if loop.kind in (tirx.ForKind.VECTORIZED, tirx.ForKind.PARALLEL):
        return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.SERIAL, loop.body,
                        loop.thread_binding, loop.annotations)
    return loop


def _assert_store(store: tirx.stmt.BufferStore) -> tirx.Stmt:
    accesses = [("write", store.buffer, list(store.indices))]
    accesses += [("read", load.source, list(load.indices)) for load in _unguarded_loads(store)]
    checks = []
    for what, buf, indices in accesses:
        for k, (i, n) in enumerate(zip(indices, buf.shape)):
            checks.append(_assert(tirx.all(i >= 0, i < n), "IndexError",
                                  f"{what} of buffer {buf.name} out of bounds in dim {k}"))
    return tirx.SeqStmt([*checks, store]) if checks else store


def _assert(condition, kind: str, message: str) -> tirx.AssertStmt:
    # TVM 0.27's AssertStmt names its first two parameters (kind, condition) but hands them
    # in that order to a constructor that takes (condition, kind): pass what the
    # constructor takes
    return tirx.AssertStmt(condition, StringImm(kind), [StringImm(message)])


def _unguarded_loads(store: tirx.stmt.BufferStore) -> list:
    """The loads of a store's value and indices, less those under an if_then_else branch."""
    loads: list = []
    guarded: list = []

    def guard(call) -> None:
        if call.op.same_as(_IF_THEN_ELSE):
            for branch in call.args[1:]:
                tvm_ffi.structural_walk(branch, [(TensorLoad, guarded.append)])

    for expr in [store.value, *store.indices]:
        tvm_ffi.structural_walk(expr, [(TensorLoad, loads.append), (tvm.ir.expr.Call, guard)])
    return [load for load in loads
            if not any(tvm_ffi.structural_equal(load, g) for g in guarded)]

"""The huge-page arena (pir/runtimes/hugepages.py) that holds the TVM runtime's weights and plan
slots: aligned, non-overlapping buffers of any shape and dtype, big ones on a huge page, and
the runtime's buffers taken from it."""

from __future__ import annotations

import numpy as np
import pytest

from pir.runtimes.hugepages import ALIGN, BIG, HUGE_PAGE, Arena


def test_buffers_are_aligned_disjoint_and_hold_their_values():
    arena = Arena(chunk=4 << 20)
    shapes = [(3,), (1000,), (7, 5), (BIG // 4,), (17,), (3 * BIG // 4,), (2,)]
    arrays = [arena.empty(s, np.float32) for s in shapes]
    for i, a in enumerate(arrays):
        assert a.shape == shapes[i] and a.dtype == np.float32 and a.flags.c_contiguous
        assert a.ctypes.data % ALIGN == 0
        if a.nbytes >= BIG:
            assert a.ctypes.data % HUGE_PAGE == 0
        a[...] = i
    spans = sorted((a.ctypes.data, a.ctypes.data + a.nbytes) for a in arrays)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    assert [float(a.flat[0]) for a in arrays] == list(range(len(arrays)))


def test_a_request_bigger_than_a_chunk_gets_its_own():
    arena = Arena(chunk=1 << 20)
    small = arena.empty((10,), np.int64)
    big = arena.empty((3 << 20,), np.uint8)
    big[-1] = 7
    assert big.nbytes == 3 << 20 and big[-1] == 7 and small.shape == (10,)


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_, np.uint16])
def test_copy_and_odd_dtypes(dtype):
    arena = Arena()
    a = (np.arange(24) % 3).astype(dtype).reshape(2, 3, 4)
    b = arena.copy(a)
    assert b.dtype == a.dtype and b.shape == a.shape and (b == a).all()
    assert arena.empty((0, 5), dtype).shape == (0, 5)


def test_the_runtime_keeps_weights_and_slots_in_arenas():
    pytest.importorskip("tvm")
    from pir.frontends.onnx.importer import import_model
    from pir.codegen.tvm.codegen import codegen_module
    from pir.ir.dialects.kernel import TvmKernelOp
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline
    from pir.runtimes.tvm import TvmInterpreter
    from helpers import node_model

    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 96)).astype(np.float32)
    model = node_model("MatMul", {"x": np.zeros((2, 64), np.float32)}, ["y"],
                       initializers={"w": w}, shapes={"x": [2, 64]})
    module = import_model(model)
    PassManager(parse_pipeline("decompose,canonicalize,fold,cse,dce,shapes,fuse")).run(module)
    codegen_module(module, "llvm")
    (op,) = [o for o in module.walk() if isinstance(o, TvmKernelOp)]
    interp = TvmInterpreter(module)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    y = interp.run(module.funcs[0], {"x": x})["y"]
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-4)

    def inside(arena, array) -> bool:
        chunk = arena._buf
        return chunk.ctypes.data <= array.ctypes.data < chunk.ctypes.data + chunk.nbytes

    kernel = interp.program.kernel(op)  # its weights: the program's arena, shared with TVM
    assert kernel.params
    assert all(inside(interp.program.weights, np.from_dlpack(t)) for t in kernel.params)
    (plan,) = interp._plans.values()  # the plan's slots: its own arena
    assert plan.slots and all(inside(plan.arena, slot.buf) for slot in plan.slots)


def test_a_plan_arena_keeps_small_buffers_plain_and_maps_big_ones_alone():
    arena = Arena(chunk=64 << 10, huge_chunks=False)
    small = [arena.empty((100,), np.float32) for _ in range(3)]
    big = arena.empty((BIG // 4 + 5,), np.float32)
    chunk = arena._buf  # the plain chunk the small ones share, not grown by the big one
    assert chunk.nbytes == 64 << 10
    assert all(chunk.ctypes.data <= a.ctypes.data < chunk.ctypes.data + chunk.nbytes
               for a in small)
    assert not chunk.ctypes.data <= big.ctypes.data < chunk.ctypes.data + chunk.nbytes
    assert big.ctypes.data % HUGE_PAGE == 0
    big[-1] = 3.0
    assert big[-1] == 3.0

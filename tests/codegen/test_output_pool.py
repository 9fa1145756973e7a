"""The tvm runtime's output pool: a returned array's buffer is lent again only once every
array and view of it is gone, so results survive later runs."""

import ml_dtypes
import numpy as np

from pir.runtimes.tvm.buffers import ALIGN, OutputPool


def test_a_buffer_is_reused_only_after_its_last_view_is_gone():
    pool = OutputPool()
    a = pool.empty((4, 4), np.float32)
    a[...] = 1
    addr = a.ctypes.data
    view = a[1:]
    del a
    b = pool.empty((4, 4), np.float32)  # the view still holds the first buffer
    assert b.ctypes.data != addr
    b[...] = 2
    assert (view == 1).all()
    del view
    c = pool.empty((2, 8), np.float32)  # same size: the first buffer comes back
    assert c.ctypes.data == addr and c.ctypes.data % ALIGN == 0
    assert c.shape == (2, 8) and c.flags.c_contiguous and c.flags.writeable


def test_dtypes_numpy_cannot_name_keep_their_type():
    arr = OutputPool().empty((3, 2), ml_dtypes.bfloat16)
    assert arr.dtype == ml_dtypes.bfloat16 and arr.shape == (3, 2)


def test_anything_that_holds_the_array_keeps_its_buffer():
    # not only views: a memoryview, or a list holding the array itself
    pool = OutputPool()
    a = pool.empty((8,), np.float32)
    addr = a.ctypes.data
    mem = memoryview(a)
    kept = [a]
    del a
    assert pool.empty((8,), np.float32).ctypes.data != addr
    del mem
    assert pool.empty((8,), np.float32).ctypes.data != addr  # the list still has it
    kept.clear()
    again = pool.empty((8,), np.float32)
    assert again.ctypes.data == addr


def test_a_caller_that_keeps_every_result_gets_new_buffers_and_they_come_back():
    pool = OutputPool()
    results = [pool.empty((16,), np.float32) for _ in range(10)]
    for k, r in enumerate(results):
        r[...] = k
    assert len({r.ctypes.data for r in results}) == 10
    assert all((r == k).all() for k, r in enumerate(results))  # none overwritten
    addrs = {r.ctypes.data for r in results}
    del results, r
    assert pool.empty((16,), np.float32).ctypes.data in addrs  # reused, not a new one


def test_results_a_caller_keeps_do_not_stand_in_front_of_free_buffers():
    # the first results kept for good, every later one dropped: the pool lends one more
    # buffer again and again, it does not allocate one a request
    pool = OutputPool()
    kept = [pool.empty((16,), np.float32) for _ in range(6)]
    seen = set()
    for _ in range(50):
        seen.add(pool.empty((16,), np.float32).ctypes.data)
    assert len(seen) == 1
    assert all(k.ctypes.data not in seen for k in kept)

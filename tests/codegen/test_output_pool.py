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

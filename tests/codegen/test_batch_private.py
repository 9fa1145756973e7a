"""Register tiles without the batch dim (pir/codegen/tvm/batch_private.py): a local buffer
that every access indexes by one batch loop variable loses that dim; one that two
iterations share keeps it; the kernels compute what they did, for several batch sizes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

import tvm  # noqa: E402
from tvm.script import tirx as T  # noqa: E402

from pir.codegen.tvm.batch_private import drop_batch_dims  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import codegen_kernels  # noqa: E402
from test_winograd import FUSE, _model  # noqa: E402


def test_a_conv_kernels_register_tile_has_no_batch_dim():
    module, before, kernels = codegen_kernels(_model(8, stride=2), FUSE)  # a direct conv
    src = kernels["b"].source
    assert 'scope="local"' in src
    local = [line for line in src.splitlines() if 'scope="local"' in line]
    assert local and all("(N," not in line for line in local), local
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, 16, 8, 8)).astype(np.float32)
        got = TvmInterpreter(module).run(module.funcs[0], {"x": x})["y.cv"]
        want = run_function(before, {"x": x})["y.cv"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _shared_across_batches():
    """acc[b] is written in one batch iteration and read in the next: it must keep its
    batch dim."""
    @T.prim_func(s_tir=True)
    def f(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n, 4), "float32")
        C = T.match_buffer(c, (n, 4), "float32")
        with T.sblock("root"):
            acc = T.sblock_alloc_buffer((n, 4), scope="local")
            for b, i in T.grid(n, 4):
                with T.sblock("w"):
                    vb, vi = T.axis.remap("SS", [b, i])
                    acc[vb, vi] = A[vb, vi]
            for b, i in T.grid(n - 1, 4):
                with T.sblock("r"):
                    vb, vi = T.axis.remap("SS", [b, i])
                    C[vb, vi] = acc[vb + 1, vi]
    return f


def _private_to_a_batch():
    @T.prim_func(s_tir=True)
    def f(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n, 4), "float32")
        C = T.match_buffer(c, (n, 4), "float32")
        with T.sblock("root"):
            acc = T.sblock_alloc_buffer((n, 4), scope="local")
            for b in range(n):
                for i in range(4):
                    with T.sblock("w"):
                        vb, vi = T.axis.remap("SS", [b, i])
                        acc[vb, vi] = A[vb, vi] * T.float32(2)
                for i in range(4):
                    with T.sblock("r"):
                        vb, vi = T.axis.remap("SS", [b, i])
                        C[vb, vi] = acc[vb, vi] + T.float32(1)
    return f


def test_a_buffer_two_batch_iterations_share_keeps_its_dim():
    f = _shared_across_batches()
    assert drop_batch_dims(f).same_as(f)


def test_a_buffer_private_to_a_batch_iteration_drops_it_and_computes_the_same():
    f = _private_to_a_batch()
    g = drop_batch_dims(f)
    (acc,) = g.body.block.alloc_buffers
    assert [int(d) for d in acc.shape] == [4]
    built = tvm.compile(tvm.IRModule({"main": g}), target="llvm")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = tvm.runtime.tensor(np.zeros((3, 4), np.float32))
    built["main"](tvm.runtime.tensor(a), c)
    np.testing.assert_array_equal(c.numpy(), a * 2 + 1)

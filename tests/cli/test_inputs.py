"""Program inputs as `pir run` reads or makes them: 64-byte aligned, so compiled kernels read
them in place (pir/runtimes/inputs.py, pir/runtimes/aligned.py)."""

from __future__ import annotations

import numpy as np

from pir.ir.parser import parse_module
from pir.runtimes.aligned import ALIGN, aligned
from pir.runtimes.inputs import load_inputs, random_inputs


def test_loaded_and_made_up_inputs_are_aligned_and_unchanged(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"a": rng.standard_normal((300, 17)).astype(np.float32),
              "b": rng.integers(0, 9, (5, 3)).astype(np.int64), "e": np.zeros((0, 4))}
    np.savez(tmp_path / "in.npz", **arrays)
    np.save(tmp_path / "c.npy", arrays["a"][:, :5])
    got = load_inputs(str(tmp_path / "in.npz"), (f"c={tmp_path / 'c.npy'}",))
    for k, v in {**arrays, "c": arrays["a"][:, :5]}.items():
        np.testing.assert_array_equal(got[k], v)
        assert got[k].dtype == v.dtype
        assert not got[k].size or got[k].ctypes.data % ALIGN == 0
    module = parse_module("""module @m {
  func.func @main(%x: tensor<Nx3xf32>, %i: tensor<7xi32>) -> (tensor<Nx3xf32>) {
    func.return(%x) : (tensor<Nx3xf32>) -> ()
  }
}""")
    made = random_inputs(module.funcs[0], dims={"N": 1000})
    assert made["x"].shape == (1000, 3) and all(v.ctypes.data % ALIGN == 0 for v in made.values())


def test_aligned_copies_only_what_it_must():
    buf = np.zeros(1024 + 64, np.float32)
    start = (-buf.ctypes.data % ALIGN) // 4
    ok = buf[start:start + 1024]
    assert aligned(ok) is ok
    off = buf[start + 1:start + 1025]
    moved = aligned(off)
    assert moved is not off and moved.ctypes.data % ALIGN == 0
    np.testing.assert_array_equal(moved, off)
    strided = buf[start:start + 1024:2]
    assert aligned(strided).flags.c_contiguous

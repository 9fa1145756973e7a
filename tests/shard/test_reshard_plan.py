"""Reshard planning (``comm.reshard_steps``): the collective sequence for each kind of layout
change, n-d meshes axis by axis (innermost first), the fallback, and that every plan between
any two layouts on a 2x2 mesh moves the data right on simulated ranks."""

from itertools import product

import numpy as np
import pytest

from pir.ir.dialects.dist import Mesh
from pir.ir.parser import parse_module
from pir.ir.types import DType
from pir.passes.shard.comm import reshard_bytes, reshard_steps
from pir.passes.shard.driver import find_function, shard_module
from program_harness import run_on_ranks
from rules_harness import S

TP = Mesh.parse("tp=2")
MESH = Mesh.parse("dp=2,tp=2")
F32 = DType("f32")


def kinds(src, dst, mesh=MESH, shape=(8, 8)):
    return [(s.kind, s.axis, s.dim) for s in reshard_steps(shape, F32, src, dst, mesh)]


@pytest.mark.parametrize("src, dst, want", [
    (S(None, None, tp="sum"), S(None, None), [("all_reduce", "tp", None)]),
    (S(None, "tp"), S(None, None), [("all_gather", "tp", None)]),
    (S(None, None, tp="sum"), S("tp", None), [("reduce_scatter", "tp", 0)]),
    (S("tp", None), S(None, "tp"), [("all_to_all", "tp", 1)]),
    (S(None, None), S("tp", None), [("local", None, None)]),
    (S(None, None), S(None, None, tp="sum"), [("local", None, None)]),
    (S("tp", None), S(None, None, tp="max"), [("all_gather", "tp", None), ("local", None, None)]),
    (S(None, None, tp="max"), S(None, None, tp="sum"), [("all_reduce", "tp", None),
                                                      ("local", None, None)]),
])
def test_one_axis(src, dst, want):
    assert kinds(src, dst, TP) == want


def test_two_axes_innermost_first():
    # a dim split by dp then tp is gathered tp first
    assert kinds(S(("dp", "tp"), None), S(None, None)) == [("all_gather", "tp", None),
                                                          ("all_gather", "dp", None)]
    assert kinds(S("dp", None, tp="sum"), S(None, None)) == [("all_reduce", "tp", None),
                                                            ("all_gather", "dp", None)]
    # an outer split whose inner split stays: gather both, slice tp back locally
    assert kinds(S(("dp", "tp"), None), S("tp", None)) == [
        ("all_gather", "tp", None), ("all_gather", "dp", None), ("local", None, None)]


def test_bytes_per_rank():
    # all_reduce of a [8, 8] f32 block: 256 bytes; all_gather counts the gathered block
    assert reshard_bytes((8, 8), F32, S(None, None, tp="sum"), S(None, None), MESH) == 256
    assert reshard_bytes((8, 8), F32, S("tp", None), S(None, None), MESH) == 256
    assert reshard_bytes((8, 8), F32, S("dp", "tp"), S("dp", None), MESH) == 128
    assert reshard_bytes((8, 8), F32, S(None, None), S("tp", "dp"), MESH) == 0


_PROGRAM = """module {
  func.func @main(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
    %y = prim.neg(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    func.return(%y) : (tensor<8x8xf32>) -> ()
  }
}"""


def _layouts():
    one = ["R", "S(0)", "S(1)", "P(sum)"]
    return [list(p) for p in product(one, repeat=2)]


def test_every_pair_on_ranks():
    """x laid out as A, y = -x laid out as B: the inserted steps move the blocks right."""
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    for a, b in product(_layouts(), repeat=2):
        m = parse_module(_PROGRAM)
        try:
            shard_module(m, MESH, {"x": a, "y": b})
        except Exception as e:  # noqa: BLE001 - name the pair
            raise AssertionError(f"{a} -> {b}: {e}") from e
        got = run_on_ranks(find_function(m), MESH, {"x": x})["y"]
        np.testing.assert_allclose(got, -x, rtol=1e-6, err_msg=f"{a} -> {b}")

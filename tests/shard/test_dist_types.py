"""The dist dialect's types: meshes, placements, !dist.tensor and its text form."""

import pytest

from helpers import roundtrip
from pir.errors import PirError
from pir.ir.dialects.dist import (
    DistTensorType,
    Mesh,
    Partial,
    Replicate,
    Shard,
    parse_placement,
    parse_placements,
)
from pir.ir.parser import parse_module
from pir.ir.types import DType, TensorType

MESH = Mesh.parse("dp=2,tp=3")


def dt(shape, *placements, mesh=MESH, dtype=DType.F32):
    return DistTensorType(dtype, tuple(shape), mesh, tuple(placements))


# -- meshes ----------------------------------------------------------------------------------

def test_mesh_ranks_are_row_major():
    assert MESH.names == ("dp", "tp") and MESH.shape == (2, 3) and MESH.num_ranks == 6
    assert [MESH.coords(r) for r in range(6)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert all(MESH.rank(MESH.coords(r)) == r for r in range(6))
    assert MESH.group(4, "tp") == [3, 4, 5]
    assert MESH.group(4, "dp") == [1, 4]
    assert str(MESH) == "mesh<dp=2,tp=3>" and Mesh.parse(str(MESH)) == MESH


@pytest.mark.parametrize("text, message", [
    ("dp=2,dp=2", "mesh axis 'dp' appears twice"),
    ("dp=0", "sizes are positive integers"),
    ("dp", "expected axes like dp=2,tp=2"),
    ("2x=2", "is not an identifier"),
])
def test_bad_meshes(text, message):
    with pytest.raises(ValueError, match=message):
        Mesh.parse(text)


def test_unknown_mesh_axis_names_the_mesh():
    with pytest.raises(ValueError, match=r"the mesh mesh<dp=2,tp=3> has no axis 'pp'"):
        MESH.index("pp")


# -- placements ------------------------------------------------------------------------------

def test_placements_parse_and_print():
    assert parse_placements("[R, S(1), P(max)]") == (Replicate(), Shard(1), Partial("max"))
    assert parse_placement("P") == Partial("sum")  # P alone is a sum
    assert [str(p) for p in (Replicate(), Shard(0), Partial("avg"))] == ["R", "S(0)", "P(avg)"]
    with pytest.raises(ValueError, match="bad placement 'Q'"):
        parse_placement("Q")
    with pytest.raises(ValueError, match="one of sum, avg, max, min"):
        parse_placement("P(prod)")


# -- the type --------------------------------------------------------------------------------

def test_type_prints_mesh_and_placements_and_knows_its_blocks():
    t = dt((12, "B", 5), Shard(0), Shard(1))
    assert str(t) == "!dist.tensor<12xBx5xf32, mesh<dp=2,tp=3>, [S(0), S(1)]>"
    assert t.local_shape() == (6, None, 5)  # a split symbol is known at run time only
    assert t.shard_axes(0) == ("dp",) and t.split(1) == 3
    assert t.tensor == TensorType(DType.F32, (12, "B", 5))
    two = dt((12, 4), Shard(0), Shard(0))
    assert two.shard_axes(0) == ("dp", "tp") and two.local_shape() == (2, 4)
    assert dt((4,), Partial("sum"), Partial("avg")).partial_axes == {"dp": "sum", "tp": "avg"}


def test_type_differs_from_the_plain_tensor_and_from_other_layouts():
    t = dt((6, 4), Shard(0), Replicate())
    assert t != t.tensor and t.tensor != t
    assert t != dt((6, 4), Replicate(), Shard(0))
    assert t == dt((6, 4), Shard(0), Replicate()) and hash(t) == hash(dt((6, 4), Shard(0), Replicate()))
    assert isinstance(t, TensorType) and t.numel == 24  # global shape for shape-based code
    assert type(t.with_shape((3, 4))) is TensorType  # type rules give plain tensors


@pytest.mark.parametrize("shape, placements, message", [
    ((4, 6), (Replicate(),), "1 placements for the 2 axes of mesh<dp=2,tp=3>"),
    ((4, 6), (Shard(2), Replicate()), r"S\(2\) on mesh axis 'dp': the tensor has rank 2"),
    ((4, 4), (Replicate(), Shard(1)), r"dim 1 \(4\) is not divisible by 3, the ranks of mesh axes tp"),
    ((9, 4), (Shard(0), Shard(0)), r"dim 0 \(9\) is not divisible by 6"),
    ((4,), (Partial("sum"), Partial("max")), "partial placements max, sum do not commute"),
])
def test_bad_types(shape, placements, message):
    with pytest.raises(ValueError, match=message):
        dt(shape, *placements)


def test_unranked_dist_tensor_is_rejected():
    with pytest.raises(ValueError, match="must be ranked"):
        DistTensorType(DType.F32, None, MESH, (Replicate(), Replicate()))


# -- text ------------------------------------------------------------------------------------

TEXT = """\
module {
  func.func @main(%x: !dist.tensor<8x"max_len"xf32, mesh<dp=2,tp=3>, [S(0), P(sum)]>, %w: tensor<3xi64>) -> (!dist.tensor<8x"max_len"xf32, mesh<dp=2,tp=3>, [S(0), R]>) {
    %y = dist.all_reduce(%x) {mesh_axis = "tp", pir.note = !dist.tensor<2xf32, mesh<a=2>, [R]>} : (!dist.tensor<8x"max_len"xf32, mesh<dp=2,tp=3>, [S(0), P(sum)]>) -> !dist.tensor<8x"max_len"xf32, mesh<dp=2,tp=3>, [S(0), R]> loc("/ar")
    func.return(%y) : (!dist.tensor<8x"max_len"xf32, mesh<dp=2,tp=3>, [S(0), R]>) -> ()
  }
}
"""


def test_text_round_trip():
    m = parse_module(TEXT)
    assert roundtrip(m) == TEXT
    x = m.funcs[0].entry.args[0]
    assert x.type == dt((8, "max_len"), Shard(0), Partial("sum"))
    # a dist type is also an attribute value
    assert m.funcs[0].entry.ops[0].attributes["pir.note"] == DistTensorType(
        DType.F32, (2,), Mesh((("a", 2),)), (Replicate(),))


def test_spacing_inside_the_type_is_normalised():
    loose = TEXT.replace("[S(0), P(sum)]", "[ S( 0 ),P ]").replace("mesh<dp=2,tp=3>", "mesh<dp=2, tp=3>")
    assert roundtrip(parse_module(loose)) == TEXT


@pytest.mark.parametrize("old, new, message", [
    ("!dist.tensor<8", "!dist.tensr<8", "unknown type '!dist.tensr'"),
    ("P(sum)]>, %w", "P(mean)]>, %w", "a partial reduces with one of sum, avg, max, min, got 'mean'"),
    ("!dist.tensor<8", "!dist.tensor<7", "dim 0 (7) is not divisible by 2"),
    ("[S(0), P(sum)]>, %w", "[S(0)]>, %w", "1 placements for the 2 axes"),
    ("mesh<dp=2,tp=3>, [S(0), P(sum)]>, %w", "[S(0), P(sum)]>, %w", "expected SHAPExDTYPE, mesh<"),
])
def test_parse_errors_point_at_the_type(old, new, message):
    with pytest.raises(PirError) as e:
        parse_module(TEXT.replace(old, new, 1), "t.pir")
    assert (e.value.line, e.value.col) == (2, 23)  # the caret is under the type
    assert message in e.value.message

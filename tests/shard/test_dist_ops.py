"""The dist ops: what each verifies, and how a single process runs them (the global view)."""

import numpy as np
import pytest

from helpers import roundtrip
from pir.errors import PirError
from pir.ir.builder import Builder
from pir.ir.dialects.dist import (
    AllReduceOp,
    DistTensorType,
    Mesh,
    ReduceScatterOp,
    Replicate,
    ReshardOp,
    parse_placements,
)
from pir.ir.dialects.func import FuncOp
from pir.ir.parser import parse_module
from pir.ir.types import DType
from pir.runtimes.reference import run_function

M = "mesh<dp=2,tp=2>"


def T(placements: str, shape: str = "4x8") -> str:
    return f"!dist.tensor<{shape}xf32, {M}, [{placements}]>"


def module(op: str, attrs: str, x: str | None, y: str | None) -> str:
    """@main(%x) applying ``op`` to %x (to nothing when ``x`` is None; then %x has type y)
    and returning its result (%x when ``y`` is None: the op has no result)."""
    arg = x if x is not None else y
    lhs, ret, rtype = ("%y = ", "%y", y) if y is not None else ("", "%x", x)
    operands, types = ("%x", x) if x is not None else ("", "")
    attrs = attrs + " " if attrs else ""
    return f"""module {{
  func.func @main(%x: {arg}) -> ({rtype}) {{
    {lhs}{op}({operands}) {attrs}: ({types}) -> {y if y is not None else "()"}
    func.return({ret}) : ({rtype}) -> ()
  }}
}}
"""


VALID = [
    ("dist.all_reduce", '{mesh_axis = "tp"}', T("R, P(sum)"), T("R, R")),
    ("dist.all_reduce", '{mesh_axis = "dp"}', T("P(max), S(1)"), T("R, S(1)")),
    ("dist.all_gather", '{mesh_axis = "tp"}', T("R, S(1)"), T("R, R")),
    ("dist.all_gather", '{mesh_axis = "tp"}', T("S(0), S(0)"), T("S(0), R")),
    ("dist.reduce_scatter", '{dim = 1, mesh_axis = "tp"}', T("R, P(avg)"), T("R, S(1)")),
    ("dist.reduce_scatter", '{dim = 0, mesh_axis = "tp"}', T("S(0), P(sum)"), T("S(0), S(0)")),
    ("dist.all_to_all", '{dim = 0, mesh_axis = "tp"}', T("R, S(1)"), T("R, S(0)")),
    ("dist.broadcast", '{mesh_axis = "dp", root = 1}', T("R, S(1)"), T("R, S(1)")),
    ("dist.reshard", "", T("S(0), R"), T("R, P(sum)")),
    ("dist.reshard", "", "tensor<4x8xf32>", T("S(1), S(0)")),
    ("dist.reshard", "", T("S(1), S(0)"), "tensor<4x8xf32>"),
    ("dist.recv", '{dest = 0, mesh_axis = "dp", source = 1}', None, T("R, S(1)")),
]


@pytest.mark.parametrize("op, attrs, x, y", VALID, ids=[f"{v[0]}-{i}" for i, v in enumerate(VALID)])
def test_valid_ops_round_trip(op, attrs, x, y):
    text = module(op, attrs, x, y)
    assert roundtrip(parse_module(text)) == text


def test_send_has_no_result():
    text = module("dist.send", '{dest = 1, mesh_axis = "tp", source = 0, tag = 7}', T("R, S(1)"),
                  None)
    assert roundtrip(parse_module(text)) == text


INVALID = [
    ("dist.all_reduce", '{mesh_axis = "tp"}', T("R, S(1)"), T("R, R"),
     "x is S(1) on mesh axis 'tp': all_reduce needs a partial (P) operand"),
    ("dist.all_reduce", '{mesh_axis = "pp"}', T("R, P(sum)"), T("R, R"),
     "the mesh mesh<dp=2,tp=2> has no axis 'pp'"),
    ("dist.all_reduce", '{mesh_axis = "tp"}', "tensor<4x8xf32>", "tensor<4x8xf32>",
     "x must be a !dist.tensor, got tensor<4x8xf32>"),
    ("dist.all_reduce", '{mesh_axis = "tp"}', T("R, P(sum)"), T("P(sum), R"),
     f"result 0 is declared {T('P(sum), R')}, but the op gives {T('R, R')}"),
    ("dist.all_gather", '{mesh_axis = "dp"}', T("S(0), S(0)"), T("R, S(0)"),
     "x: dim 0 is split by mesh axes dp, tp; a collective may act only on the innermost one "
     "(tp), not on 'dp'"),
    ("dist.all_gather", '{mesh_axis = "tp"}', T("R, P(sum)"), T("R, R"),
     "x is P(sum) on mesh axis 'tp': all_gather needs a sharded (S) operand"),
    ("dist.reduce_scatter", '{dim = 0, mesh_axis = "dp"}', T("P(sum), S(0)"), T("S(0), S(0)"),
     "the result: dim 0 is split by mesh axes dp, tp; a collective may act only on the "
     "innermost one (tp), not on 'dp'"),
    ("dist.reduce_scatter", '{dim = 2, mesh_axis = "tp"}', T("R, P(sum)"), T("R, R"),
     "dim 2 is out of range for rank 2"),
    ("dist.all_to_all", '{dim = 1, mesh_axis = "tp"}', T("R, S(1)"), T("R, S(1)"),
     "x is already S(1) on mesh axis 'tp'"),
    ("dist.broadcast", '{mesh_axis = "tp", root = 2}', T("R, R"), T("R, R"),
     "root 2 is out of range for mesh axis 'tp' of size 2"),
    ("dist.broadcast", '{mesh_axis = "tp"}', T("R, S(0)"), T("R, S(0)"),
     "x is S(0) on mesh axis 'tp': broadcast needs a replicated (R) operand"),
    ("dist.reshard", "", T("S(0), R"), T("R, R", "8x4"),
     f"the result {T('R, R', '8x4')} must have the element type and shape of x ({T('S(0), R')})"),
    ("dist.reshard", "", T("S(0), R"), "!dist.tensor<4x8xf32, mesh<dp=4>, [R]>",
     "the result's mesh mesh<dp=4> differs from x's mesh<dp=2,tp=2>"),
    ("dist.reshard", "", "tensor<4x8xf32>", "tensor<4x8xf32>",
     "x (tensor<4x8xf32>) or the result (tensor<4x8xf32>) must be a !dist.tensor"),
]


@pytest.mark.parametrize("op, attrs, x, y, message", INVALID,
                         ids=[f"{v[0]}-{i}" for i, v in enumerate(INVALID)])
def test_verifier_errors_name_the_op(op, attrs, x, y, message):
    with pytest.raises(PirError) as e:
        parse_module(module(op, attrs, x, y), "t.pir")
    assert e.value.message == f"{op}: {message}"
    assert (e.value.line, e.value.col) == (3, 10)


@pytest.mark.parametrize("attrs, message", [
    ('{dest = 1, mesh_axis = "tp", source = 1}', "source and dest are both 1"),
    ('{dest = 2, mesh_axis = "tp", source = 0}', "dest 2 is out of range for mesh axis 'tp' of size 2"),
    ('{mesh_axis = "tp", source = 0}', "missing required attribute 'dest'"),
])
def test_send_checks_its_pair(attrs, message):
    with pytest.raises(PirError, match=message):
        parse_module(module("dist.send", attrs, T("R, R"), None))


def test_build_checks_at_once():
    mesh = Mesh.parse("dp=2,tp=2")
    partial = DistTensorType(DType.F32, (4, 5), mesh, parse_placements("[R, P(sum)]"))
    fn = FuncOp.create("main", [partial], [])
    b = Builder(fn.entry)
    y = b.value(AllReduceOp, fn.entry.args[0], mesh_axis="tp")
    assert y.type == partial.with_placement("tp", Replicate())
    with pytest.raises(PirError, match="dist.all_reduce: x is R on mesh axis 'tp'"):
        b.value(AllReduceOp, y, mesh_axis="tp")
    with pytest.raises(PirError, match="dist.reshard: the result type must be given"):
        b.value(ReshardOp, y)
    with pytest.raises(PirError, match=r"dist.reduce_scatter: the result would be S\(1\) on "
                                       r"mesh axis 'tp': dim 1 \(5\) is not divisible by 2"):
        b.value(ReduceScatterOp, fn.entry.args[0], mesh_axis="tp", dim=1)


# -- the global view -------------------------------------------------------------------------

PROGRAM = f"""module {{
  func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {{
    %a = dist.reshard(%x) : (tensor<4x8xf32>) -> {T("S(0), S(1)")}
    %b = dist.all_to_all(%a) {{dim = 0, mesh_axis = "tp"}} : ({T("S(0), S(1)")}) -> {T("S(0), S(0)")}
    %c = dist.all_gather(%b) {{mesh_axis = "tp"}} : ({T("S(0), S(0)")}) -> {T("S(0), R")}
    %d = dist.reshard(%c) : ({T("S(0), R")}) -> {T("P(sum), R")}
    %e = dist.all_reduce(%d) {{mesh_axis = "dp"}} : ({T("P(sum), R")}) -> {T("R, R")}
    %f = dist.broadcast(%e) {{mesh_axis = "tp"}} : ({T("R, R")}) -> {T("R, R")}
    %g = dist.reshard(%f) : ({T("R, R")}) -> {T("R, P(avg)")}
    %h = dist.reduce_scatter(%g) {{dim = 1, mesh_axis = "tp"}} : ({T("R, P(avg)")}) -> {T("R, S(1)")}
    dist.send(%h) {{dest = 1, mesh_axis = "dp", source = 0}} : ({T("R, S(1)")}) -> ()
    %y = dist.reshard(%h) : ({T("R, S(1)")}) -> tensor<4x8xf32>
    func.return(%y) : (tensor<4x8xf32>) -> ()
  }}
}}
"""


def test_a_single_process_holds_global_values_so_collectives_keep_them():
    m = parse_module(PROGRAM)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    assert np.array_equal(run_function(m, {"x": x})["y"], x)


def test_recv_needs_ranks():
    text = module("dist.recv", '{dest = 0, mesh_axis = "dp", source = 1}', None, T("R, R"))
    with pytest.raises(PirError, match="dist.recv receives a block from another rank"):
        run_function(parse_module(text), {"x": np.zeros((4, 8), np.float32)})


def D(shape: str, placement: str) -> str:
    return f"!dist.tensor<{shape}xf32, mesh<tp=2>, [{placement}]>"


MLP = f"""module {{
  func.func @main(%x: {D("4x8", "R")}, %w1: {D("8x6", "S(1)")}, %w2: {D("6x8", "S(0)")}) -> ({D("4x8", "R")}) {{
    %h = prim.dot_general(%x, %w1) {{lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]}} : ({D("4x8", "R")}, {D("8x6", "S(1)")}) -> {D("4x6", "S(1)")}
    %a = prim.tanh(%h) : ({D("4x6", "S(1)")}) -> {D("4x6", "S(1)")}
    %p = prim.dot_general(%a, %w2) {{lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]}} : ({D("4x6", "S(1)")}, {D("6x8", "S(0)")}) -> {D("4x8", "P(sum)")}
    %y = dist.all_reduce(%p) {{mesh_axis = "tp"}} : ({D("4x8", "P(sum)")}) -> {D("4x8", "R")}
    func.return(%y) : ({D("4x8", "R")}) -> ()
  }}
}}
"""


def test_prim_ops_take_dist_types_and_run_in_the_global_view():
    """A Megatron MLP written with layouts: prim type rules check global shapes, and one
    process computes the unsharded result."""
    m = parse_module(MLP)
    assert roundtrip(m) == MLP
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.normal(size=s).astype(np.float32) for s in ((4, 8), (8, 6), (6, 8)))
    y = run_function(m, {"x": x, "w1": w1, "w2": w2})["y"]
    np.testing.assert_allclose(y, np.tanh(x @ w1) @ w2, rtol=1e-5, atol=1e-6)

"""The matrix-product and transformer-block decompositions preserve values.

Each case builds a one-node ONNX model, imports it, runs ``decompose`` and checks that the
reference runtime gives the same outputs before and after (rtol 1e-5) on random inputs of
several shapes, symbolic dims included, and that no nn op is left.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_pipeline, decomposed, node_model, op_names

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module

F32 = np.float32


def normal(*shape, dtype=F32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def computed(module) -> list[str]:
    return [n for n in op_names(module) if n not in ("builtin.constant", "func.return")]


def find(module, name):
    return [op for fn in module.funcs for op in fn.walk() if op.name == name]


# -- matmul and gemm ---------------------------------------------------------------------------

MATMUL = [
    ((3, 4), (4, 5), None),
    ((2, 3, 4), (4, 5), {"a": ["B", "S", 4]}),  # weights contract in place
    ((3, 4), (2, 4, 5), {"b": ["B", 4, 5]}),  # a 2-D left operand against a batch
    ((2, 3, 4), (2, 4, 5), {"a": ["B", 3, 4], "b": ["B", 4, 5]}),  # batched, same batch
    ((2, 1, 3, 4), (5, 4, 2), None),  # batch dims broadcast
    ((1, 3, 4), (2, 4, 5), None),
    ((4,), (2, 4, 3), None),  # 1-D operands: their dim is gone from the result
    ((2, 3, 4), (4,), {"a": ["B", 3, 4]}),
    ((4,), (4,), None),
]


@pytest.mark.parametrize("a_shape,b_shape,shapes", MATMUL)
@pytest.mark.parametrize("dtype", [F32, np.float64, np.int64])
def test_matmul(a_shape, b_shape, shapes, dtype):
    feeds = {"a": (normal(*a_shape) * 3).astype(dtype),
             "b": (normal(*b_shape, seed=1) * 3).astype(dtype)}
    out = decomposed("MatMul", feeds, shapes=shapes)
    assert computed(out).count("prim.dot_general") == 1


def test_matmul_contracts_weights_without_broadcasting():
    out = decomposed("MatMul", {"a": normal(2, 3, 4), "b": normal(4, 5)},
                     shapes={"a": ["B", "S", 4]})
    assert computed(out) == ["prim.dot_general"]
    (dot,) = find(out, "prim.dot_general")
    assert dot.lhs_contracting_dimensions == (2,) and dot.rhs_contracting_dimensions == (0,)
    assert str(dot.results[0].type) == "tensor<BxSx5xf32>"


GEMM = [
    ({}, (3, 5), (5, 4), None),
    ({}, (3, 5), (5, 4), ()),
    ({}, (3, 5), (5, 4), (4,)),
    ({"beta": 0.5}, (3, 5), (5, 4), (3, 1)),
    ({"alpha": 0.25, "beta": 2.0}, (3, 5), (5, 4), (3, 4)),
    ({"transA": 1}, (5, 3), (5, 4), (1, 4)),
    ({"transB": 1}, (3, 5), (4, 5), (4,)),
    ({"transA": 1, "transB": 1, "alpha": 1.5, "beta": 0.35}, (5, 3), (4, 5), (1, 4)),
    ({"beta": 0.0}, (3, 5), (5, 4), (3, 4)),
]


@pytest.mark.parametrize("attrs,a_shape,b_shape,c_shape", GEMM)
def test_gemm(attrs, a_shape, b_shape, c_shape):
    feeds = {"a": normal(*a_shape), "b": normal(*b_shape, seed=1)}
    if c_shape is not None:
        feeds["c"] = normal(*c_shape, seed=2)
    out = decomposed("Gemm", feeds, opset=13, **attrs)
    # transA/transB only choose the contracted dims: no transpose is ever made
    assert "prim.transpose" not in computed(out)
    assert ("prim.add" in computed(out)) == (c_shape is not None and attrs.get("beta") != 0.0)


def test_gemm_symbolic_rows():
    feeds = {"a": normal(6, 5), "b": normal(5, 4), "c": normal(4)}
    decomposed("Gemm", feeds, shapes={"a": ["N", 5]}, opset=13, alpha=2.0)


# -- einsum ------------------------------------------------------------------------------------

EINSUM = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 6)]),
    ("bij->jb", [(2, 3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 5)]),  # ellipsis dims broadcast
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),  # implicit output
    ("ii->i", [(4, 4)]),  # a diagonal
    ("ii", [(4, 4)]),  # a trace
    ("bii->bi", [(2, 3, 3)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(equation, shapes):
    feeds = {f"x{i}": normal(*s, seed=i) for i, s in enumerate(shapes)}
    decomposed("Einsum", feeds, opset=12, equation=equation)


def test_einsum_symbolic_batch():
    feeds = {"x0": normal(2, 3, 4), "x1": normal(2, 4, 5, seed=1)}
    out = decomposed("Einsum", feeds, shapes={"x0": ["B", 3, 4], "x1": ["B", 4, 5]}, opset=12,
                     equation="bij,bjk->bik")
    assert computed(out) == ["prim.dot_general"]


# -- attention ---------------------------------------------------------------------------------

ATTENTION = [
    ("plain", {"q": (2, 4, 3, 8), "k": (2, 4, 5, 8), "v": (2, 4, 5, 6)}, {}),
    ("causal-gqa-symbolic", {"q": (2, 4, 3, 8), "k": (2, 2, 5, 8), "v": (2, 2, 5, 6)},
     {"is_causal": 1}),
    ("3d-softcap", {"q": (2, 3, 32), "k": (2, 5, 16), "v": (2, 5, 16)},
     {"q_num_heads": 4, "kv_num_heads": 2, "softcap": 2.0, "qk_matmul_output_mode": 1}),
    ("window", {"q": (1, 2, 6, 4), "k": (1, 2, 6, 4), "v": (1, 2, 6, 4)},
     {"left_window_size": 2, "right_window_size": 1, "scale": 0.5}),
    ("causal-window", {"q": (1, 2, 6, 4), "k": (1, 2, 6, 4), "v": (1, 2, 6, 4)},
     {"is_causal": 1, "left_window_size": 1, "qk_matmul_output_mode": 2}),
]
SYMBOLIC = {"q": ["B", 4, "S", 8], "k": ["B", 2, "T", 8], "v": ["B", 2, "T", 6]}


@pytest.mark.parametrize("name,shapes,attrs", ATTENTION, ids=[a[0] for a in ATTENTION])
def test_attention(name, shapes, attrs):
    feeds = {k: normal(*s, seed=i) for i, (k, s) in enumerate(shapes.items())}
    sym = SYMBOLIC if "symbolic" in name else None
    # (ONNX's shape inference gives qk's key dim 0 when the key length is symbolic)
    outputs = ("y", "pk", "pv") if sym else ("y", "pk", "pv", "qk")
    # sliding windows came with Attention-25
    opset = 25 if {"left_window_size", "right_window_size"} & set(attrs) else 23
    decomposed("Attention", feeds, outputs=outputs, shapes=sym, opset=opset, **attrs)


def test_attention_masks_and_past():
    rng = np.random.default_rng(3)
    base = {"q": normal(2, 4, 3, 8), "k": normal(2, 4, 3, 8, seed=1),
            "v": normal(2, 4, 3, 8, seed=2)}
    # a boolean mask shorter than the keys (the past makes 7): the keys past it are masked
    feeds = dict(base, m=rng.random((3, 5)) > 0.3, pk=normal(2, 4, 4, 8, seed=4),
                 pv=normal(2, 4, 4, 8, seed=5))
    decomposed("Attention", feeds, outputs=("y", "presk", "presv", "qk"), opset=23,
               is_causal=1, qk_matmul_output_mode=3)
    # an additive mask, softmax in f64
    feeds = dict(base, m=normal(2, 1, 3, 3, seed=6))
    decomposed("Attention", feeds, outputs=("y", "presk", "presv", "qk"), opset=23,
               qk_matmul_output_mode=2, softmax_precision=11)


def test_attention_external_cache():
    """nonpad_kv_seqlen masks each batch's padding and offsets its causal frontier."""
    feeds = {"q": normal(2, 2, 3, 4), "k": normal(2, 2, 6, 4, seed=1),
             "v": normal(2, 2, 6, 4, seed=2)}
    model = node_model("Attention", feeds, ["y"], opset=24,  # nonpad_kv_seqlen: Attention-24
                       initializers={"n": np.array([4, 6], np.int64)}, is_causal=1)
    model.graph.node[0].input[:] = ["q", "k", "v", "", "", "", "n"]  # the 7th input
    out = check_pipeline(import_model(model), feeds, "decompose")
    assert not [n for n in computed(out) if n.startswith("nn.")]


def test_attention_present_outputs_keep_their_names():
    feeds = {"q": normal(1, 2, 3, 4), "k": normal(1, 2, 3, 4, seed=1),
             "v": normal(1, 2, 3, 4, seed=2)}
    out = decomposed("Attention", feeds, outputs=("y", "present_k", "present_v"), opset=23)
    ret = out.funcs[0].return_op
    assert [v.name for v in ret.operands] == ["y", "present_k", "present_v"]


# -- rotary embedding, SwiGLU ------------------------------------------------------------------

ROTARY = [
    ("4d", (2, 3, 5, 8), {}, False),
    ("4d-interleaved-partial", (2, 3, 5, 8), {"interleaved": 1, "rotary_embedding_dim": 4}, False),
    ("3d-positions", (2, 5, 24), {"num_heads": 3}, True),
    ("3d-interleaved-positions", (2, 5, 24), {"num_heads": 3, "interleaved": 1}, True),
]


@pytest.mark.parametrize("name,x_shape,attrs,positions", ROTARY, ids=[r[0] for r in ROTARY])
def test_rotary_embedding(name, x_shape, attrs, positions):
    rot = attrs.get("rotary_embedding_dim") or (
        x_shape[3] if len(x_shape) == 4 else x_shape[2] // attrs["num_heads"])
    b, s = x_shape[0], x_shape[2] if len(x_shape) == 4 else x_shape[1]
    cache = (10, rot // 2) if positions else (b, s, rot // 2)
    feeds = {"x": normal(*x_shape), "cos": normal(*cache, seed=1),
             "sin": normal(*cache, seed=2)}
    if positions:
        feeds["pos"] = np.random.default_rng(0).integers(0, 10, (b, s))
    decomposed("RotaryEmbedding", feeds, opset=23, **attrs)


def test_rotary_embedding_symbolic_sequence():
    feeds = {"x": normal(2, 3, 5, 8), "cos": normal(2, 5, 4, seed=1),
             "sin": normal(2, 5, 4, seed=2)}
    decomposed("RotaryEmbedding", feeds, opset=23,
               shapes={"x": ["B", 3, "S", 8], "cos": ["B", "S", 4], "sin": ["B", "S", 4]})


@pytest.mark.parametrize("alpha,muls", [(1.0, 2), (1.702, 3)])
def test_swiglu(alpha, muls):
    feeds = {"a": normal(3, 4) * 4, "b": normal(3, 4, seed=1)}
    out = decomposed("SwiGLU", feeds, shapes={"a": ["B", 4], "b": ["B", 4]}, opset=28,
                     alpha=alpha)
    assert computed(out).count("prim.mul") == muls


def test_matmul_renames_dims_the_importer_spelled_differently():
    """nn accepts two symbols (or a symbol and a size) for dims that must be equal; prim
    needs one spelling, so a reshape renames one side (as ONNX's unk__N dims need)."""
    module = parse_module("""module {
  func.func @main(%p: tensor<Bx2xSxTxf32>, %v: tensor<Bx2xUx3xf32>, %x: tensor<BxKxf32>, %w: tensor<4x5xf32>) -> (tensor<Bx2xSx3xf32>, tensor<Bx5xf32>) {
    %y = nn.matmul(%p, %v) : (tensor<Bx2xSxTxf32>, tensor<Bx2xUx3xf32>) -> tensor<Bx2xSx3xf32>
    %z = nn.matmul(%x, %w) : (tensor<BxKxf32>, tensor<4x5xf32>) -> tensor<Bx5xf32>
    func.return(%y, %z) : (tensor<Bx2xSx3xf32>, tensor<Bx5xf32>) -> ()
  }
}""")
    feeds = {"p": normal(2, 2, 3, 5), "v": normal(2, 2, 5, 3, seed=1), "x": normal(2, 4),
             "w": normal(4, 5, seed=2)}
    out = check_pipeline(module, feeds, "decompose")
    assert computed(out) == ["prim.reshape", "prim.dot_general"] * 2
    renamed = [op.results[0].type for op in find(out, "prim.reshape")]
    assert [str(t) for t in renamed] == ["tensor<Bx2xTx3xf32>", "tensor<Bx4xf32>"]

"""Decomposition of the matrix products (nn.matmul, nn.gemm, nn.einsum) into prim.dot_general.

Every product becomes one ``prim.dot_general`` that names its batch and contracting dims, so
no operand is transposed or broadcast that does not have to be: ``[B, S, K] @ [K, N]``
contracts in place, a 2-D left operand against a batch is one dot_general and a transpose,
and only two batched operands whose batch dims differ are broadcast first (numpy matmul
broadcasts them).  The helpers here (:func:`dot`, :func:`matmul`, :func:`transpose`,
:func:`conform`) serve the other rule modules too (attention, the quantised products).
"""

from __future__ import annotations

from typing import Sequence

from pir.ir.core import Operation, Value
from pir.ir.dialects.nn.linalg import parse_einsum
from pir.ir.typerules import broadcast_shapes, tensor
from pir.ir.types import Dim, DType, TensorType
from pir.passes.decompose.builder import PrimBuilder
from pir.passes.decompose.registry import Keep, decomposes, keep

__all__ = ["dot", "matmul", "transpose", "conform", "shape", "agree"]

keep("nn.det", "a determinant needs a pivoting LU factorisation, which prim cannot express "
               "without loops")


def shape(b: PrimBuilder, v: Value, why: str = "") -> tuple[Dim, ...]:
    """The shape of ``v`` with every dim static or symbolic (else Keep)."""
    return b.known(tensor(v).shape, why)


def dot(b: PrimBuilder, lhs: Value, rhs: Value, contract: tuple[Sequence[int], Sequence[int]],
        batch: tuple[Sequence[int], Sequence[int]] = ((), ())) -> Value:
    """``prim.dot_general``: result dims are batch, then lhs free, then rhs free dims.
    Paired dims spelled differently (two symbols) are made to agree first."""
    for i, j in zip([*batch[0], *contract[0]], [*batch[1], *contract[1]]):
        lhs, rhs = agree(b, lhs, i, rhs, j)
    return b.op("dot_general", lhs, rhs,
                lhs_batching_dimensions=tuple(batch[0]), rhs_batching_dimensions=tuple(batch[1]),
                lhs_contracting_dimensions=tuple(contract[0]),
                rhs_contracting_dimensions=tuple(contract[1]))


def transpose(b: PrimBuilder, x: Value, perm: Sequence[int]) -> Value:
    """``prim.transpose``, or ``x`` itself for the identity permutation."""
    if list(perm) == list(range(len(perm))):
        return x
    return b.op("transpose", x, permutation=tuple(perm))


def conform(b: PrimBuilder, v: Value, want: TensorType) -> Value:
    """``v`` reshaped to ``want`` when they differ only by unit dims (``[1, M, N]`` against
    ``[M, N]``), or broadcast to it when a dim of 1 stands for a larger one."""
    have = tensor(v)
    if have == want:
        return v
    shape_ = b.known(want.shape, "result")
    have_shape = b.known(have.shape)
    src = [d for d in have_shape if d != 1]
    if src == [d for d in shape_ if d != 1]:
        return b.reshape(v, shape_)
    if len(have_shape) == len(shape_) and all(
            a == c or (a != 1 and not (isinstance(a, int) and isinstance(c, int)))
            for a, c in zip(have_shape, shape_)):
        # the same dims spelled differently (two symbols for one size: ONNX's inference
        # names a broadcast of unk__3 and unk__1 unk__5, as `agree` renames operands)
        return b.reshape(v, shape_)
    return b.broadcast_to(v, shape_)


def agree(b: PrimBuilder, x: Value, i: int, y: Value, j: int) -> tuple[Value, Value]:
    """``x`` and ``y`` with dim ``i`` of x and dim ``j`` of y spelled alike.  nn type rules
    accept two different symbols (or a symbol and a size) for dims that must be equal, prim
    compares them strictly: a reshape renames the symbolic one (to the size, if one is)."""
    sx, sy = shape(b, x), shape(b, y)
    if sx[i] == sy[j] or (isinstance(sx[i], int) and isinstance(sy[j], int)) \
            or 1 in (sx[i], sy[j]):
        return x, y  # equal, or for the caller to broadcast (or reject)
    if isinstance(sy[j], str):
        return x, b.reshape(y, (*sy[:j], sx[i], *sy[j + 1:]))
    return b.reshape(x, (*sx[:i], sy[j], *sx[i + 1:])), y


def matmul(b: PrimBuilder, x: Value, y: Value) -> Value:
    """numpy.matmul as one dot_general: 1-D operands contract their only dim, batch dims of
    one operand stay free dims when the other has none, else both broadcast to one batch."""
    sx, sy = shape(b, x, "matmul operand"), shape(b, y, "matmul operand")
    rx, ry = len(sx), len(sy)
    for k in range(1, min(rx, ry) - 1):  # batch dims, right-aligned
        x, y = agree(b, x, rx - 2 - k, y, ry - 2 - k)
    sx, sy = shape(b, x), shape(b, y)
    if rx == 1 or ry == 1:  # a vector: its dim is contracted and gone from the result
        return dot(b, x, y, ([0 if rx == 1 else rx - 1], [0 if ry == 1 else ry - 2]))
    bx, by = sx[:-2], sy[:-2]
    if all(d == 1 for d in by):  # [batch.., M, K] @ [K, N] -> [batch.., M, N]
        return dot(b, x, b.reshape(y, sy[-2:]), ([rx - 1], [0]))
    if all(d == 1 for d in bx):  # [M, K] @ [batch.., K, N] -> [M, batch.., N] -> transpose
        out = dot(b, b.reshape(x, sx[-2:]), y, ([1], [ry - 2]))
        nb = len(by)
        return transpose(b, out, [*range(1, nb + 1), 0, nb + 1])
    batch = b.known(broadcast_shapes(bx, by), "matmul batch dims")
    x = b.broadcast_to(x, (*batch, *sx[-2:]))
    y = b.broadcast_to(y, (*batch, *sy[-2:]))
    nb = len(batch)
    return dot(b, x, y, ([nb + 1], [nb]), (range(nb), range(nb)))


@decomposes("nn.matmul")
def matmul_rule(b: PrimBuilder, op: Operation) -> list[Value]:
    return [conform(b, matmul(b, op.a, op.b), op.c.type)]


@decomposes("nn.gemm")
def gemm(b: PrimBuilder, op: Operation) -> list[Value]:
    """alpha * A' @ B' + beta * C: the transposes are only which dims the dot contracts."""
    dtype = tensor(op.a).dtype
    if not dtype.is_float and not (float(op.alpha).is_integer() and float(op.beta).is_integer()):
        raise Keep(f"integer gemm with fractional alpha {op.alpha} or beta {op.beta}")
    y = dot(b, op.a, op.b, ([0 if op.trans_a else 1], [1 if op.trans_b else 0]))
    if op.alpha != 1:
        y = b.mul(y, b.const(op.alpha, dtype))
    if op.c is not None and op.beta != 0:  # beta = 0 ignores C, even its NaNs
        c = op.c if op.beta == 1 else b.mul(op.c, b.const(op.beta, dtype))
        y = b.add(y, c)
    return [y]


# -- einsum ------------------------------------------------------------------------------------


def _sum_labels(b: PrimBuilder, v: Value, term: str, drop: set[str]) -> tuple[Value, str]:
    """Sum ``v`` over the labels of ``term`` in ``drop``."""
    axes = [i for i, c in enumerate(term) if c in drop]
    if not axes:
        return v, term
    return b.reduce("sum", v, axes, keepdims=False), "".join(c for c in term if c not in drop)


def _diagonal(b: PrimBuilder, v: Value, term: str) -> tuple[Value, str]:
    """Take the diagonal of every label repeated in ``term`` (``ii`` -> ``i``): zero the
    elements off it (an iota compare) and sum the second occurrence away."""
    while len(set(term)) != len(term):
        i = next(k for k, c in enumerate(term) if term.count(c) > 1)
        j = term.index(term[i], i + 1)
        grid = TensorType(DType.I64, shape(b, v))
        on = b.op("eq", b.op("iota", result_type=grid, dimension=i),
                  b.op("iota", result_type=grid, dimension=j))
        v = b.reduce("sum", b.op("select", on, v, b.zeros_like(v)), [j], keepdims=False)
        term = term[:j] + term[j + 1:]
    return v, term


def _contract(b: PrimBuilder, x: Value, tx: str, y: Value, ty: str,
              needed: set[str]) -> tuple[Value, str]:
    """One pairwise step: shared labels still ``needed`` are batch dims, the other shared
    ones are contracted.  A label of size 1 on one side is broadcast to the other's size."""
    sx, sy = shape(b, x), shape(b, y)
    size = {c: d for c, d in zip(tx, sx)}
    for c, d in zip(ty, sy):
        if c not in size or size[c] == 1:
            size[c] = d
    x = b.broadcast_to(x, [size[c] for c in tx])
    y = b.broadcast_to(y, [size[c] for c in ty])
    shared = [c for c in tx if c in ty]
    batch = [c for c in shared if c in needed]
    summed = [c for c in shared if c not in needed]
    z = dot(b, x, y, ([tx.index(c) for c in summed], [ty.index(c) for c in summed]),
            ([tx.index(c) for c in batch], [ty.index(c) for c in batch]))
    free_x = [c for c in tx if c not in shared]
    free_y = [c for c in ty if c not in shared]
    return z, "".join(batch + free_x + free_y)


@decomposes("nn.einsum")
def einsum(b: PrimBuilder, op: Operation) -> list[Value]:
    """Left to right, each pair of operands is one dot_general; a label is summed as soon as
    no later operand and not the output needs it, and the result is transposed at the end.
    A label repeated within a term takes the diagonal first."""
    values = list(op.inputs)
    terms, out = parse_einsum(op.equation, [len(shape(b, v, "einsum operand")) for v in values])
    pending = [_diagonal(b, v, t) for v, t in zip(values, terms)]

    def needed_after(i: int) -> set[str]:
        return set(out).union(*(t for _, t in pending[i:]))

    x, tx = pending[0]
    for i in range(1, len(pending)):
        y, ty = pending[i]
        keep_ = needed_after(i + 1)
        x, tx = _sum_labels(b, x, tx, set(tx) - keep_ - set(ty))
        y, ty = _sum_labels(b, y, ty, set(ty) - keep_ - set(tx))
        x, tx = _contract(b, x, tx, y, ty, keep_)
    x, tx = _sum_labels(b, x, tx, set(tx) - set(out))
    x = transpose(b, x, [tx.index(c) for c in out])
    return [conform(b, x, op.output.type)]

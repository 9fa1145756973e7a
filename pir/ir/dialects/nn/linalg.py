"""Linear algebra: matrix products (matmul, gemm, einsum) and the determinant."""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, FLOAT, STR
from pir.ir.core import Operation
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import broadcast_shapes, tensor
from pir.ir.types import Dim, DType, TensorType

__all__ = ["MatMul", "Gemm", "Einsum", "Det", "matmul_shape", "parse_einsum"]

_F = {DType.F16, DType.BF16, DType.F32, DType.F64}
# ONNX MatMul and Gemm take these element types (Einsum adds the narrow integers).
MATMUL_DTYPES = frozenset(_F | {DType.I32, DType.I64, DType.U32, DType.U64})
EINSUM_DTYPES = frozenset(MATMUL_DTYPES | {DType.I8, DType.I16, DType.U8, DType.U16})


def same_dim(a: Dim, b: Dim, what: str) -> Dim:
    """Two dims that must be equal: the more precise one, or an error when both are static
    and differ."""
    if isinstance(a, int) and isinstance(b, int) and a != b:
        raise PirError(f"{what}: {a} and {b} differ")
    if isinstance(a, int):
        return a
    return a if a is not None else b


def matmul_shape(a: tuple[Dim, ...] | None, b: tuple[Dim, ...] | None) -> tuple[Dim, ...] | None:
    """The result shape of numpy.matmul: batch dims broadcast, a 1-D operand is a row (a) or a
    column (b) vector whose dim is dropped from the result."""
    if a is None or b is None:
        return None
    if len(a) == 0 or len(b) == 0:
        raise PirError("matmul operands must have rank 1 or more, got a scalar")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    same_dim(a2[-1], b2[-2], f"contracting dims of {list(a)} and {list(b)}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = list(batch) + ([a2[-2]] if len(a) > 1 else []) + ([b2[-1]] if len(b) > 1 else [])
    return tuple(out)


class MatMul(Operation):
    """c = a @ b with numpy.matmul semantics (batched, broadcast batch dims, 1-D operands)."""

    name = "nn.matmul"
    traits = frozenset({Pure})
    a = operand(dtypes=MATMUL_DTYPES)
    b = operand(dtypes=MATMUL_DTYPES)
    c = result()

    def infer(self):
        ta, tb = tensor(self.a), tensor(self.b)
        if ta.dtype != tb.dtype:
            raise PirError(f"operands have element types {ta.dtype.value} and {tb.dtype.value}")
        return [TensorType(ta.dtype, matmul_shape(ta.shape, tb.shape))]


class Gemm(Operation):
    """y = alpha * A' @ B' + beta * C, A' = A^T if trans_a, B' = B^T if trans_b; C broadcasts
    to (M, N)."""

    name = "nn.gemm"
    traits = frozenset({Pure})
    a = operand(dtypes=MATMUL_DTYPES)
    b = operand(dtypes=MATMUL_DTYPES)
    c = operand(optional=True, dtypes=MATMUL_DTYPES)
    alpha = attr(FLOAT, 1.0)
    beta = attr(FLOAT, 1.0)
    trans_a = attr(BOOL, False)
    trans_b = attr(BOOL, False)
    y = result()

    def infer(self):
        ta, tb = tensor(self.a), tensor(self.b)
        for name, t in (("a", ta), ("b", tb)):
            if t.shape is not None and len(t.shape) != 2:
                raise PirError(f"operand '{name}' must have rank 2, got {t}")
        if ta.shape is None or tb.shape is None:
            return [TensorType(ta.dtype, (None, None))]
        m, k = reversed(ta.shape) if self.trans_a else ta.shape
        k2, n = reversed(tb.shape) if self.trans_b else tb.shape
        same_dim(k, k2, "contracting dims of A' and B'")
        if self.c is not None:
            _check_unidirectional(tensor(self.c), (m, n))
        return [TensorType(ta.dtype, (m, n))]


def _check_unidirectional(tc: TensorType, shape: tuple[Dim, Dim]) -> None:
    """C broadcasts one way only: to (M, N), never the other way round."""
    if tc.shape is None:
        return
    ok = len(tc.shape) <= 2 and all(
        c == 1 or c == o or not isinstance(c, int) or not isinstance(o, int)
        for c, o in zip(reversed(tc.shape), reversed(shape)))
    if not ok:
        dims = ", ".join("?" if d is None else str(d) for d in shape)
        raise PirError(f"C of type {tc} does not broadcast to ({dims})")


def parse_einsum(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The equation's input terms and its output term, with each ``...`` replaced by as many
    upper-case-free placeholder labels (digits) as the term's operand needs.

    The implicit output (no ``->``) is the broadcast dims followed by the labels that occur
    exactly once, in ASCII order."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise PirError(f"einsum equation '{equation}' has {len(terms)} input terms for "
                       f"{len(ranks)} operands")
    n_ell = 0
    out_terms = []
    for term, rank in zip(terms, ranks):
        letters = term.replace("...", "")
        if not all(c.isalpha() for c in letters) or term.count("...") > 1:
            raise PirError(f"einsum term '{term}' is malformed")
        if "..." in term:
            k = rank - len(letters)
            if k < 0:
                raise PirError(f"einsum term '{term}' has more labels than its operand's rank {rank}")
            n_ell = max(n_ell, k)
            # Ellipsis dims are right-aligned across operands, so label them from the right.
            term = term.replace("...", "".join(str(9 - i) for i in reversed(range(k))))
        elif len(term) != rank:
            raise PirError(f"einsum term '{term}' has {len(term)} labels for an operand of "
                           f"rank {rank}")
        out_terms.append(term)
    ell = "".join(str(9 - i) for i in reversed(range(n_ell)))
    if arrow:
        if not all(c.isalpha() for c in rhs.replace("...", "")):
            raise PirError(f"einsum output term '{rhs}' is malformed")
        out = rhs.replace("...", ell)
    else:
        letters = [c for c in lhs if c.isalpha()]
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return out_terms, out


class Einsum(Operation):
    """output = sum over the labels missing from the output of the product of the inputs,
    indexed by the Einstein-summation ``equation``."""

    name = "nn.einsum"
    traits = frozenset({Pure})
    inputs = operand(variadic=True, dtypes=EINSUM_DTYPES)
    equation = attr(STR)
    output = result()

    def infer(self):
        types = [tensor(v) for v in self.inputs]
        if not types:
            raise PirError("einsum needs at least one operand")
        if any(t.shape is None for t in types):
            return [TensorType(types[0].dtype, None)]
        terms, out = parse_einsum(self.equation, [len(t.shape) for t in types])
        dims: dict[str, Dim] = {}
        for term, t in zip(terms, types):
            for label, d in zip(term, t.shape):
                if label not in dims or dims[label] == 1:
                    dims[label] = d
                elif d != 1:
                    dims[label] = same_dim(dims[label], d, f"einsum label '{label}'")
        missing = [c for c in out if c not in dims]
        if missing:
            raise PirError(f"einsum output label '{missing[0]}' is not in any input term")
        return [TensorType(types[0].dtype, tuple(dims[c] for c in out))]


class Det(Operation):
    """y = the determinant of each square matrix in the last two dims of x."""

    name = "nn.det"
    traits = frozenset({Pure})
    x = operand(dtypes=_F)
    y = result()

    def infer(self):
        t = tensor(self.x)
        if t.shape is None:
            return [t]
        if len(t.shape) < 2:
            raise PirError(f"det needs a matrix or a batch of matrices, got {t}")
        same_dim(t.shape[-2], t.shape[-1], "det needs square matrices: the last two dims")
        return [TensorType(t.dtype, t.shape[:-2])]

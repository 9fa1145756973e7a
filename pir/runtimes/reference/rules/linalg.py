"""Reference rules for matrix products and the determinant."""

from __future__ import annotations

import numpy as np

from pir.runtimes.reference.registry import evaluates, operand_arrays


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype numpy computes a product in: ml_dtypes' narrow floats (bfloat16 ...) have no
    BLAS kernels, so they accumulate in float32 and are rounded back afterwards."""
    return np.dtype(np.float32) if dtype.kind == "V" else dtype


@evaluates("nn.matmul")
def matmul(op, a, b):
    ct = compute_dtype(a.dtype)
    return np.matmul(a.astype(ct), b.astype(ct)).astype(a.dtype)


@evaluates("nn.gemm")
def gemm(op, *arrays):
    args = operand_arrays(op, arrays)
    a, b, c = args["a"], args["b"], args["c"]
    ct = compute_dtype(a.dtype)
    a = a.astype(ct).T if op.trans_a else a.astype(ct)
    b = b.astype(ct).T if op.trans_b else b.astype(ct)
    y = np.matmul(a, b) * op.alpha
    if c is not None and op.beta != 0:  # beta = 0 must ignore C, even NaN or inf in it
        y = y + c.astype(ct) * op.beta
    return y.astype(args["a"].dtype)


@evaluates("nn.einsum")
def einsum(op, *inputs):
    dtype = inputs[0].dtype
    ct = compute_dtype(dtype)
    out = np.einsum(op.equation.replace(" ", ""), *(x.astype(ct) for x in inputs))
    return np.asarray(out).astype(dtype)


@evaluates("nn.det")
def det(op, x):
    # numpy's linalg has no float16 kernels: compute in float32 and round back.
    ct = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    return np.asarray(np.linalg.det(x.astype(ct))).astype(x.dtype)

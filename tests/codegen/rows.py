"""Row kernels over rows of 768 floats for the codegen tests: softmax and RMSNormalization
as one-node ONNX models, and their kernels compiled from the decomposed block."""

from __future__ import annotations

import numpy as np

from pir.codegen.tvm import compile_block
from pir.frontends.onnx.importer import import_model
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from helpers import node_model

D = 768


def row_model(kind: str, rows: int):
    """Softmax ("softmax") or RMSNormalization ("rms", seeded scale) over [rows, D]."""
    x = np.zeros((2, D), np.float32)
    if kind == "softmax":
        return node_model("Softmax", {"x": x}, ["y"], axis=-1, shapes={"x": [rows, D]})
    s = np.random.default_rng(0).standard_normal(D).astype(np.float32)
    return node_model("RMSNormalization", {"x": x}, ["y"], opset=23, axis=-1,
                      initializers={"s": s}, shapes={"x": [rows, D]})


def row_kernel(kind: str, rows: int):
    """The compiled kernel of :func:`row_model`'s decomposed block."""
    module = import_model(row_model(kind, rows))
    PassManager(parse_pipeline("decompose,canonicalize,cse,dce")).run(module)
    return compile_block(module.funcs[0].entry, kind)

"""ONNX Constant and Identity."""

from __future__ import annotations

import numpy as np

from pir.frontends.onnx.registry import converter


@converter("Constant")
def constant(ctx):
    for key in ("value", "sparse_value"):
        if ctx.has_attr(key):
            if key == "sparse_value":
                raise ctx.error("sparse constants are not supported")
            arr = ctx.attr(key)
            break
    else:
        scalars = {"value_float": np.float32, "value_int": np.int64, "value_string": object,
                   "value_floats": np.float32, "value_ints": np.int64, "value_strings": object}
        for key, dtype in scalars.items():
            if ctx.has_attr(key):
                arr = np.array(ctx.attr(key), dtype=dtype)
                break
        else:
            raise ctx.error("Constant has no value attribute")
    v = ctx.graph.importer.constant(ctx.graph.builder, np.asarray(arr), ctx.node.output[0], ctx.loc)
    return [v]


@converter("Identity")
def identity(ctx):
    return [ctx.input(0)]

"""Shared test helpers: build one-node ONNX models, and check pir against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.runtimes.reference import run_function


def node_model(op_type: str, inputs: dict[str, np.ndarray], outputs: list[str],
               opset: int = 21, domain: str = "", initializers: dict[str, np.ndarray] | None = None,
               **attrs) -> onnx.ModelProto:
    """A model with one node; ``inputs`` are graph inputs (their arrays give dtype and shape),
    ``initializers`` become constant inputs.  Output types are left to shape inference."""
    inits = initializers or {}
    node = helper.make_node(op_type, list(inputs) + list(inits), outputs, domain=domain or None,
                            name=f"/{op_type.lower()}", **attrs)
    g_inputs = [helper.make_tensor_value_info(
        k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()]
    g_outputs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outputs]
    g_inits = [onnx.numpy_helper.from_array(v, k) for k, v in inits.items()]
    graph = helper.make_graph([node], f"test_{op_type.lower()}", g_inputs, g_outputs, g_inits)
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model = onnx.shape_inference.infer_shapes(model)
    model.ir_version = min(model.ir_version, 10)
    return model


def roundtrip(module) -> str:
    """Print, parse and print again; assert the two texts are identical; return the text."""
    text = print_module(module)
    again = print_module(parse_module(text, "<roundtrip>"))
    assert again == text, "print(parse(print(m))) differs from print(m)"
    return text


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def check_model(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 1e-5,
                atol: float = 1e-6, expected: dict[str, np.ndarray] | None = None):
    """Import ``model``, check the text round trip, run the reference runtime and compare its
    outputs with ``expected`` (default: ONNX Runtime's).  Returns the module."""
    module = import_model(model)
    text = roundtrip(module)
    module = parse_module(text)
    got = run_function(module, feeds)
    want = expected if expected is not None else run_ort(model, feeds)
    for name, ref in want.items():
        assert name in got, f"missing output {name}"
        out = got[name]
        assert out.dtype == ref.dtype, f"{name}: dtype {out.dtype}, expected {ref.dtype}"
        assert out.shape == ref.shape, f"{name}: shape {out.shape}, expected {ref.shape}"
        if ref.dtype.kind in "fc":
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(out, ref, err_msg=name)
    return module

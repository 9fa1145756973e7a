"""Shared by the tests of onnxruntime's contrib ops (domain com.microsoft): one-node models and
onnxruntime run on one thread (its quantised LSTM groups batch entries per thread)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pir.frontends.onnx.importer import import_model
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.runtimes.reference import run_function

MS = "com.microsoft"


def ms_model(op_type: str, inputs: dict[str, np.ndarray], outputs: list[str],
             initializers: dict[str, np.ndarray] | None = None, order: list[str] | None = None,
             out_types: dict[str, int] | None = None, **attrs) -> onnx.ModelProto:
    """A model of one com.microsoft node.  Its inputs are ``order`` (names, "" for an absent
    one; default: the graph inputs then the initializers); output types are float unless
    ``out_types`` says otherwise (onnxruntime needs them, ONNX cannot infer them)."""
    inits = initializers or {}
    order = order if order is not None else list(inputs) + list(inits)
    node = helper.make_node(op_type, order, outputs, domain=MS, name=f"/{op_type}", **attrs)
    out_types = out_types or {}
    graph = helper.make_graph(
        [node], f"test_{op_type.lower()}",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, out_types.get(o, onnx.TensorProto.FLOAT), None)
         for o in outputs if o],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(MS, 1)])
    model.ir_version = 9
    return model


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def run_pir(model: onnx.ModelProto, feeds: dict[str, np.ndarray]):
    """Import (checking the text round trip) and run on the reference runtime: (module,
    outputs)."""
    module = import_model(model)
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    module = parse_module(text)
    return module, run_function(module, feeds)


def compare(got: dict, want: dict, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    for name, ref in want.items():
        out = got[name]
        assert out.dtype == ref.dtype and out.shape == ref.shape, \
            f"{name}: {out.dtype}{list(out.shape)}, expected {ref.dtype}{list(ref.shape)}"
        if ref.dtype.kind == "f":
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(out, ref, err_msg=name)


def check_ort(model, feeds, rtol: float = 1e-5, atol: float = 1e-6):
    """pir's reference runtime against onnxruntime; returns the module."""
    module, got = run_pir(model, feeds)
    compare(got, run_ort(model, feeds), rtol, atol)
    return module

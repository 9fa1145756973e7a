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
               shapes: dict[str, list] | None = None, **attrs) -> onnx.ModelProto:
    """A model with one node; ``inputs`` are graph inputs (their arrays give dtype and shape,
    unless ``shapes`` declares one, e.g. ``{"x": ["B", 4]}`` for a symbolic batch dim),
    ``initializers`` become constant inputs.  Output types are left to shape inference."""
    inits = initializers or {}
    node = helper.make_node(op_type, list(inputs) + list(inits), outputs, domain=domain or None,
                            name=f"/{op_type.lower()}", **attrs)
    shapes = shapes or {}
    g_inputs = [helper.make_tensor_value_info(
        k, helper.np_dtype_to_tensor_dtype(v.dtype), shapes.get(k, v.shape))
        for k, v in inputs.items()]
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


def graph_model(nodes, inputs: dict[str, list], outputs: list[str],
                initializers: dict[str, np.ndarray], opset: int = 17) -> onnx.ModelProto:
    """A float32 model of ``nodes``: ``inputs`` maps each graph input to its shape
    (symbolic dims as names), output types are left to shape inference."""
    graph = helper.make_graph(
        nodes, "test", [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, shape)
                        for k, shape in inputs.items()],
        [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outputs],
        [onnx.numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return onnx.shape_inference.infer_shapes(model)


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


def check_pipeline(module, feeds: dict[str, np.ndarray], pipeline: str, rtol: float = 1e-5,
                   atol: float = 1e-6):
    """Run ``pipeline`` on a copy of ``module`` (verifying after every pass), check the text
    round trip of the result, and check that the reference runtime gives the same outputs
    before and after.  Returns the optimized module."""
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    before = run_function(module, feeds)
    optimized = parse_module(print_module(module))
    PassManager(parse_pipeline(pipeline)).run(optimized)
    optimized = parse_module(roundtrip(optimized))
    after = run_function(optimized, feeds)
    assert set(after) == set(before)
    for name, ref in before.items():
        out = after[name]
        assert out.dtype == ref.dtype and out.shape == ref.shape, name
        if ref.dtype.kind in "fc":
            np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(out, ref, err_msg=name)
    return optimized


def op_names(module) -> list[str]:
    """The names of the ops in a module's functions, in order (functions excluded)."""
    return [op.name for fn in module.funcs for op in fn.walk() if op is not fn]


def decomposed(op_type: str, inputs: dict[str, np.ndarray], outputs=("y",), shapes=None,
               initializers=None, opset: int = 21, domain: str = "", atol: float = 1e-6,
               **attrs):
    """Import a one-node model, run `decompose`, check the reference runtime gives the same
    outputs before and after, assert no nn op is left, and return the optimized module."""
    from pir.frontends.onnx.importer import import_model

    model = node_model(op_type, inputs, list(outputs), shapes=shapes, initializers=initializers,
                       opset=opset, domain=domain, **attrs)
    optimized = check_pipeline(import_model(model), inputs, "decompose", atol=atol)
    left = [n for n in op_names(optimized) if n.startswith("nn.")]
    assert not left, f"{op_type}: nn ops left after decompose: {left}"
    return optimized


def cli(*args, input=None, env=None, binary: bool = False):
    """Run ``pir ARGS`` in-process: (exit status, stdout (bytes when ``binary``), stderr)."""
    from click.testing import CliRunner

    from pir.cli.main import main

    r = CliRunner(env=env).invoke(main, [str(a) for a in args], input=input,
                                  catch_exceptions=False)
    return r.exit_code, r.stdout_bytes if binary else r.stdout, r.stderr


def cli_run(program, feeds: dict[str, np.ndarray], tmp) -> dict[str, np.ndarray]:
    """``pir run PROGRAM`` on ``feeds`` (through .npz files in ``tmp``): its outputs; the
    run must succeed."""
    np.savez(tmp / "in.npz", **feeds)
    code, _, err = cli("run", program, "--inputs", tmp / "in.npz", "-o", tmp / "out.npz")
    assert code == 0, err
    return dict(np.load(tmp / "out.npz"))


def regression_mlp() -> onnx.ModelProto:
    """x [8, 8] @ fc1.w -> tanh -> @ fc2.w, loss = sum((y - t)^2): a small model to train
    (seeded weights; tests of training steps, sharded or not)."""
    from onnx import TensorProto, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.normal(size=s) * 0.3).astype(np.float32), n)
             for n, s in (("fc1.w", (8, 16)), ("fc2.w", (16, 4)))]
    nodes = [helper.make_node("MatMul", ["x", "fc1.w"], ["h"], name="/fc1"),
             helper.make_node("Tanh", ["h"], ["a"], name="/act"),
             helper.make_node("MatMul", ["a", "fc2.w"], ["y"], name="/fc2"),
             helper.make_node("Sub", ["y", "t"], ["d"], name="/d"),
             helper.make_node("Mul", ["d", "d"], ["d2"], name="/d2"),
             helper.make_node("ReduceSum", ["d2"], ["loss"], name="/loss", keepdims=0)]
    io = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8]),
          helper.make_tensor_value_info("t", TensorProto.FLOAT, [8, 4])]
    g = helper.make_graph(nodes, "train", io,
                          [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    return model


def sample_mlp() -> onnx.ModelProto:
    """The demo's model (samples/mlp/make_model.py): a 784-256-128-10 MLP, batch dim B."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "samples" / "mlp" / "make_model.py"
    spec = importlib.util.spec_from_file_location("sample_mlp_make_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build()


#: A CPU target with AVX-512, for tests of the tiles and layouts codegen chooses, which
#: must not depend on the CPU the tests run on (pir.codegen.tvm.target).
AVX512 = "llvm -mcpu=skylake-avx512 -num-cores=4"
#: An AVX2 one: 16 vector registers of 8 floats.
AVX2 = "llvm -mcpu=znver3 -num-cores=4"


def codegen_kernels(model: onnx.ModelProto, pipeline: str, target: str = AVX512):
    """``model`` imported, run through ``pipeline`` and compiled for the CPU ``target``
    (TVM kernels): (the module, a parsed copy of it before codegen, its kernel ops by first
    result name)."""
    from pir.codegen.tvm.codegen import codegen_module
    from pir.ir.dialects.kernel import TvmKernelOp
    from pir.ir.verifier import verify_module
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    module = import_model(model)
    PassManager(parse_pipeline(pipeline)).run(module)
    before = parse_module(print_module(module))
    codegen_module(module, target)
    verify_module(module)
    kernels = {op.results[0].name: op for op in module.funcs[0].entry.ops
               if isinstance(op, TvmKernelOp)}
    return module, before, kernels

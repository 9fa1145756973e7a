"""Fuzzing pir's input readers: the ``.pir`` parser, the ONNX importer and ``pir run``'s
input loading (docs/fuzzing.md).

``python -m pir.testing.fuzz TARGET --seconds N`` fuzzes one target (``make fuzz`` all
three); :func:`pir.testing.fuzz.harness.run_one` runs one input under the oracle, which is
what ``tests/fuzz/test_regressions.py`` replays the saved findings with.
"""

from pir.testing.fuzz.harness import TARGETS, Outcome, run_one

__all__ = ["TARGETS", "Outcome", "run_one"]

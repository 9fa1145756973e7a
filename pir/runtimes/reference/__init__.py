"""The numpy reference runtime (the oracle for tests)."""

from pir.runtimes.reference.interpreter import Interpreter, run_function

__all__ = ["Interpreter", "run_function"]

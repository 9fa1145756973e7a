"""Choosing a runtime for a program: ``reference`` (numpy), ``tvm`` (compiled CPU kernels) or
``cuda`` (CUDA kernels on a GPU)."""

from __future__ import annotations

from pir.errors import PirError

__all__ = ["RUNTIMES", "default_runtime", "make_interpreter"]

RUNTIMES = ("reference", "tvm", "cuda")


def default_runtime(module) -> str:
    """``tvm`` when the program holds CPU kernels (``kernel.tvm``), ``cuda`` when it holds
    CUDA kernels (``kernel.cuda`` / ``kernel.cublas``), else ``reference``."""
    names = {op.name for op in module.walk()}
    if "kernel.tvm" in names:
        return "tvm"
    if names & {"kernel.cuda", "kernel.cublas"}:
        return "cuda"
    return "reference"


def make_interpreter(module, runtime: str | None = None, keep_values: bool = False,
                     profile: dict | None = None):
    """An interpreter of ``module`` for ``runtime`` (None: :func:`default_runtime`);
    ``profile``: a dict to fill in with time per op (see ``Interpreter``)."""
    runtime = runtime or default_runtime(module)
    if runtime == "reference":
        from pir.runtimes.reference.interpreter import Interpreter

        return Interpreter(module, keep_values, profile)
    if runtime == "tvm":
        try:
            from pir.runtimes.tvm import TvmInterpreter
        except ImportError as e:
            raise PirError(f"the tvm runtime needs TVM, which cannot be imported: {e}") from None
        return TvmInterpreter(module, keep_values, profile=profile)
    if runtime == "cuda":
        from pir.runtimes.cuda import CudaInterpreter

        return CudaInterpreter(module, keep_values, profile=profile)
    raise PirError(f"unknown runtime '{runtime}' (runtimes: {', '.join(RUNTIMES)})")

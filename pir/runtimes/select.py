"""Choosing a runtime for a program: ``reference`` (numpy), ``tvm`` (compiled CPU kernels) or
``cuda`` (CUDA kernels on a GPU)."""

from __future__ import annotations

from dataclasses import dataclass

from pir.errors import PirError

__all__ = ["RUNTIMES", "KernelPolicy", "default_runtime", "make_interpreter"]

RUNTIMES = ("reference", "tvm", "cuda")


@dataclass(frozen=True)
class KernelPolicy:
    """How a runtime treats the kernels a file brings (docs/security.md): ``trust`` runs the
    stored sources as they are (``--trust-kernels``), rather than only those this pir
    generates from the kernels' regions; ``check_bounds`` builds them with bounds
    assertions (``--check-bounds``, tvm runtime)."""

    trust: bool = False
    check_bounds: bool = False


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
                     profile: dict | None = None, kernels: KernelPolicy = KernelPolicy()):
    """An interpreter of ``module`` for ``runtime`` (None: :func:`default_runtime`);
    ``profile``: a dict to fill in with time per op (see ``Interpreter``); ``kernels``: how
    the file's kernels are checked and built."""
    runtime = runtime or default_runtime(module)
    if runtime == "reference":
        from pir.runtimes.reference.interpreter import Interpreter

        return Interpreter(module, keep_values, profile)
    if runtime == "tvm":
        try:
            from pir.runtimes.tvm import TvmInterpreter
        except ImportError as e:
            raise PirError(f"the tvm runtime needs TVM, which cannot be imported: {e}") from None
        return TvmInterpreter(module, keep_values, profile=profile, trust_kernels=kernels.trust,
                              check_bounds=kernels.check_bounds)
    if runtime == "cuda":
        from pir.runtimes.cuda import CudaInterpreter

        if kernels.check_bounds:
            raise PirError("--check-bounds is for the tvm runtime (CUDA kernels: run them "
                           "under compute-sanitizer)")
        return CudaInterpreter(module, keep_values, profile=profile, trust_kernels=kernels.trust)
    raise PirError(f"unknown runtime '{runtime}' (runtimes: {', '.join(RUNTIMES)})")

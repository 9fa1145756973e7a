"""Shared by the CUDA tests (tests/cuda): programs fused and code-generated for CUDA, and
their check on the host emulation (pir.codegen.cuda.emulate) against the reference runtime."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

PIPELINE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None,
                               reason="g++ is not on PATH: the host emulation cannot run")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="nvcc is not on PATH: CUDA C is not compiled")


def fused(module):
    """``module`` after the fuse pipeline."""
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    PassManager(parse_pipeline(PIPELINE)).run(module)
    return module


def parse(text: str):
    from pir.ir.parser import parse_module

    return parse_module(text, "<test>")


def emulate_and_compare(module, feeds, kernels: str = "native", rtol=1e-5, atol=1e-5,
                        min_kernels: int = 1):
    """Fuse ``module`` (when it has no groups yet), generate CUDA, run it on the host
    emulation and compare every output with the reference runtime on the fused program;
    returns the code-generated module."""
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.codegen.cuda.emulate import EmulatedInterpreter
    from pir.ir.printer import print_module
    from pir.runtimes.reference import run_function

    if not any(op.name == "fusion.group" for op in module.walk()):
        fused(module)
    want = run_function(module, feeds)
    report = codegen_cuda(module, "sm_90", kernels)
    assert report.kernels >= min_kernels, report.lines()
    module = parse(print_module(module))  # what `pir run` would read
    interp = EmulatedInterpreter(module)
    got = interp.run(module.funcs[0], feeds)
    assert interp.launches >= min_kernels
    for name, w in want.items():
        g = got[name]
        assert g.shape == w.shape and g.dtype == w.dtype, name
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=rtol, atol=atol, err_msg=name)
    return module, report

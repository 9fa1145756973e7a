"""Every kernel generated for every test model compiles with nvcc, for sm_90 and sm_80.

The models (tests/models) go through ``import | optimize -p <fuse pipeline> | codegen
--target cuda`` with both generators; the kernels of a model are batched into few
translation units (pir.codegen.cuda.nvcc) compiled to PTX in parallel workers.  Skipped, with
the reason shown, when nvcc is not on PATH.

Both generators are checked on every model in ``make test`` (about 30 s on 2 cores; TVM's
generator takes a few seconds a model: lowering, DLight, TVM's build).
"""

from __future__ import annotations

import pathlib

import pytest
from cuda_helpers import fused, needs_nvcc

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = sorted(p.stem for p in (ROOT / "tests" / "models").glob("*.onnx"))
ARCHS = ("sm_90", "sm_80")

pytestmark = needs_nvcc


def _kernels(name: str, generator: str) -> dict[str, str]:
    from pir.codegen.cuda.codegen import codegen_cuda
    from pir.frontends.onnx.importer import import_model
    from pir.ir.dialects.kernel import CudaKernelOp

    module = fused(import_model(str(ROOT / "tests" / "models" / f"{name}.onnx")))
    report = codegen_cuda(module, "sm_90", generator)
    assert report.kernels > 0, report.lines()
    return {op.symbol: op.source for op in module.walk() if isinstance(op, CudaKernelOp)}


def _check(sources: dict[str, str]) -> None:
    from pir.codegen.cuda.nvcc import compile_units, translation_units

    units = translation_units(sources)
    assert len(units) <= 4, "kernels must be batched"
    failures = [r for r in compile_units(units, ARCHS, jobs=2) if not r.ok]
    assert not failures, "\n".join(f"unit {r.unit} ({r.arch}):\n{r.log}" for r in failures)


@pytest.mark.parametrize("name", MODELS)
def test_native_kernels_compile(name):
    _check(_kernels(name, "native"))


@pytest.mark.parametrize("name", MODELS)
def test_tvm_kernels_compile(name):
    _check(_kernels(name, "tvm"))


def test_a_broken_kernel_is_reported():
    from pir.codegen.cuda.nvcc import compile_units

    (r,) = compile_units(['extern "C" __global__ void k(float* p) { p[0] = undefined; }'])
    assert not r.ok and "undefined" in r.log

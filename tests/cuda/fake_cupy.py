"""A stand-in for cupy that runs "device" code on the host emulation, so the cuda runtime
(pir.runtimes.cuda) is exercised end to end without a GPU: device arrays are a numpy
subclass, kernels loaded from a "binary" (the CUDA C source, since NVRTC is replaced too)
are compiled by g++ with pir.codegen.cuda.emulate and launched there, matmul is numpy's."""

from __future__ import annotations

import types

import numpy as np


class ndarray(np.ndarray):  # noqa: N801 - cupy's name
    pass


def asarray(a):
    return np.array(a, copy=True).view(ndarray)


def asnumpy(a):
    return np.array(a, copy=True, subok=False)


def empty(shape, dtype):
    out = np.empty(shape, dtype).view(ndarray)
    out.view(np.uint8)[...] = 0xFF  # poison: what no kernel writes is NaN or -1
    return out


def matmul(a, b, out=None):
    return np.matmul(a, b, out=out)


class _Function:
    def __init__(self, lib, name):
        self.lib, self.name = lib, name

    def __call__(self, grid, block, args, shared_mem=0):
        from pir.codegen.cuda.emulate import launch

        stats["launches"] += 1
        launch(self.lib, self.name, list(args), grid, block[0])


class _Module:
    def load(self, binary: bytes):
        self.source = binary.decode()

    def get_function(self, name):
        from pir.codegen.cuda.emulate import compile_host, wrapper

        lib = compile_host({name: self.source}, [wrapper(self.source, name)])
        return _Function(lib, name)


class _Device:
    compute_capability = "90"

    def synchronize(self):
        pass


class _Event:
    def record(self):
        import time

        self.t = time.perf_counter()

    def synchronize(self):
        pass


def _elapsed_ms(start, end):
    return (end.t - start.t) * 1e3


def copyto(dst, src):
    np.copyto(dst, src)


def empty_like(a):
    return empty(a.shape, a.dtype)


stats = {"launches": 0}
uint8 = np.uint8
cuda = types.SimpleNamespace(
    runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
    Device=_Device,
    Event=_Event,
    get_elapsed_time=_elapsed_ms,
    function=types.SimpleNamespace(Module=_Module),
)


def install(monkeypatch):
    """Make ``import cupy`` give this module and NVRTC give the source back."""
    import sys

    from pir.runtimes.cuda import build, device

    monkeypatch.setitem(sys.modules, "cupy", sys.modules[__name__])
    monkeypatch.setattr(build, "compile_cubin", lambda cp, source, name, arch: source.encode())
    device._probe.cache_clear()
    stats["launches"] = 0

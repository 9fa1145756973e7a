"""Run generated CUDA C on the CPU: the host emulation that checks kernels without a GPU.

The kernel source is compiled unchanged by g++ (C++20) with a small header that plays the GPU:
``threadIdx`` / ``blockIdx`` are thread-local, a launch runs each block's threads as real OS
threads (blocks one after another), ``__syncthreads`` is a barrier of the block and
``__shfl_xor_sync`` an exchange through a barrier of the warp, ``__shared__`` arrays are
statics (one block runs at a time), ``__half`` is ``_Float16`` and ``__nv_bfloat16`` is 16 bits
rounded to nearest even, as the device does.  Index arithmetic, vector loads and stores, the
tails, the warp and block reductions and the launch configuration all run as written, so a
wrong index or a lane that is never written shows up as a wrong number against the reference
runtime.  What it cannot show: timing, races the real memory model would expose, and libm
differences between the device and glibc (the tolerances of the tests cover these).

:class:`EmulatedInterpreter` is the reference interpreter with every ``kernel.cuda`` op run
this way, through the same calling convention as the cuda runtime
(:mod:`pir.runtimes.cuda.abi`).  Needs g++ on PATH.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import numpy as np

from pir.errors import PirError
from pir.ir.dialects.kernel import CudaKernelOp
from pir.runtimes.cuda.abi import prepare_call, region_constants
from pir.runtimes.reference.interpreter import Interpreter

__all__ = ["EmulatedInterpreter", "compile_host", "wrapper", "launch", "HEADER", "have_compiler"]

HEADER = r"""
#pragma once
#include <cmath>
#include <cstring>
#include <cstdint>
#include <barrier>
#include <thread>
#include <vector>
#include <memory>
#include <algorithm>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
struct dim3 { unsigned x = 0, y = 0, z = 0; };
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
struct uint4 { unsigned x, y, z, w; };  // no alignment: copies of them never fault
struct uint2 { unsigned x, y; };
using std::isnan; using std::isinf; using std::max; using std::min;
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __int_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline double __longlong_as_double(unsigned long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
struct pir_warp { std::barrier<> bar{32}; alignas(8) unsigned char slot[32][8]; };
inline std::unique_ptr<std::barrier<>> pir_block_bar;
inline std::vector<std::unique_ptr<pir_warp>> pir_warps;
inline void __syncthreads() { pir_block_bar->arrive_and_wait(); }
template <class T> T __shfl_xor_sync(unsigned, T v, int o) {
  unsigned lane = threadIdx.x % 32; pir_warp& w = *pir_warps[threadIdx.x / 32];
  std::memcpy(w.slot[lane], &v, sizeof(T)); w.bar.arrive_and_wait();
  T r; std::memcpy(&r, w.slot[lane ^ o], sizeof(T)); w.bar.arrive_and_wait(); return r;
}
template <class T> T pir_exchange(T v, unsigned src, bool take) {
  unsigned lane = threadIdx.x % 32; pir_warp& w = *pir_warps[threadIdx.x / 32];
  std::memcpy(w.slot[lane], &v, sizeof(T)); w.bar.arrive_and_wait();
  T r = v; if (take) std::memcpy(&r, w.slot[src % 32], sizeof(T)); w.bar.arrive_and_wait();
  return r;
}
template <class T> T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
  unsigned lane = threadIdx.x % 32, seg = lane % width;
  return pir_exchange(v, lane + d, seg + d < (unsigned)width);
}
template <class T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
  unsigned lane = threadIdx.x % 32;
  return pir_exchange(v, lane - lane % width + src % width, true);
}
inline unsigned __activemask() { return 0xffffffffu; }
inline void __syncwarp(unsigned = 0xffffffffu) { pir_warps[threadIdx.x / 32]->bar.arrive_and_wait(); }
// `__shared__ alignas(64) float x[8]` (TVM) would read `static alignas(64) ...`, which C++
// rejects: alignment does not matter here, so alignas goes (the standard headers are in)
#include <cstdint>
#include <type_traits>
#include <limits>
#define alignas(n)
template <class F> void pir_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, F f) {
  blockDim = dim3{bx, 1, 1}; gridDim = dim3{gx, gy, gz};
  for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y)
  for (unsigned b = 0; b < gx; ++b) {
    pir_block_bar = std::make_unique<std::barrier<>>(bx);
    pir_warps.clear();
    for (unsigned w = 0; w < (bx + 31) / 32; ++w) pir_warps.push_back(std::make_unique<pir_warp>());
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < bx; ++t)
      ts.emplace_back([=] { threadIdx = dim3{t, 0, 0}; blockIdx = dim3{b, y, z}; f(); });
    for (auto& t : ts) t.join();
  }
}
"""

_FP16 = r"""
#pragma once
struct __half { _Float16 v; };
typedef __half half;
inline float __half2float(__half h) { return (float)h.v; }
inline __half __float2half_rn(float f) { __half h; h.v = (_Float16)f; return h; }
"""

_BF16 = r"""
#pragma once
#include <cstdint>
#include <cstring>
struct __nv_bfloat16 { uint16_t bits; };
typedef __nv_bfloat16 nv_bfloat16;
inline float __bfloat162float(__nv_bfloat16 b) {
  uint32_t u = (uint32_t)b.bits << 16; float f; std::memcpy(&f, &u, 4); return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{(uint16_t)((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return __nv_bfloat16{(uint16_t)(u >> 16)};
}
"""

_MATH_CONSTANTS = r"""
#pragma once
#include <limits>
#define CUDART_INF_F std::numeric_limits<float>::infinity()
#define CUDART_NAN_F std::numeric_limits<float>::quiet_NaN()
#define CUDART_INF std::numeric_limits<double>::infinity()
#define CUDART_NAN std::numeric_limits<double>::quiet_NaN()
"""

def have_compiler() -> bool:
    return shutil.which("g++") is not None


def _param_types(source: str, symbol: str) -> list[str]:
    """The C types of ``symbol``'s parameters, read from its definition."""
    m = re.search(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?" + symbol +
                  r"\s*\(([^)]*)\)\s*\{", source)
    if m is None:
        raise PirError(f"kernel {symbol}: no definition of it in its source")
    inside = m.group(1)
    types = []
    for p in inside.split(","):
        p = p.strip()
        types.append(p[:p.rfind(" ")].replace("__restrict__", "").strip())
    return types


def wrapper(source: str, symbol: str) -> str:
    """``emu_<symbol>(ptrs, dims, grid, block)``: calls the kernel on one emulated launch;
    parameter i is ``ptrs[i]`` for a pointer, ``dims[i]`` for a scalar."""
    actual = []
    for i, t in enumerate(_param_types(source, symbol)):
        actual.append(f"({t})ptrs[{i}]" if "*" in t else f"({t})dims[{i}]")
    return (f'extern "C" void emu_{symbol}(void** ptrs, const long long* dims, unsigned gx, '
            f"unsigned gy, unsigned gz, unsigned bx) {{\n"
            f"  pir_launch(gx, gy, gz, bx, [&] {{ {symbol}({', '.join(actual)}); }});\n}}\n")


def launch(lib, symbol: str, args, grid, block_x: int) -> None:
    """Run ``symbol`` of an emulation library on ``args`` (numpy arrays for pointers, ints
    for scalars, in parameter order)."""
    n = len(args)
    ptrs = (ctypes.c_void_p * n)()
    dims = (ctypes.c_longlong * n)()
    keep = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):  # a buffer (a dim is an int or a numpy scalar)
            arr = a if a.size else np.zeros(1, a.dtype)
            keep.append(arr)
            ptrs[i] = arr.ctypes.data
        else:
            dims[i] = int(a)
    fn = getattr(lib, f"emu_{symbol}")
    fn(ptrs, dims, *map(ctypes.c_uint, grid), ctypes.c_uint(block_x))


def compile_host(sources: dict[str, str], wrappers: list[str], workdir: str | None = None):
    """Compile kernel sources (symbol -> CUDA C) and their wrappers into one shared library
    with g++; returns the loaded ctypes library.  Cached by content under a temporary dir."""
    text = "\n".join(sources[k] for k in sorted(sources)) + "\n" + "\n".join(wrappers)
    h = hashlib.sha256((HEADER + _FP16 + _BF16 + _MATH_CONSTANTS + text).encode()
                       ).hexdigest()[:24]
    root = pathlib.Path(workdir or os.path.join(tempfile.gettempdir(), "pir-cuda-emu"))
    inc = root / "include"
    inc.mkdir(parents=True, exist_ok=True)
    for name, body in (("pir_cuda_emu.h", HEADER), ("cuda_fp16.h", _FP16),
                       ("cuda_bf16.h", _BF16), ("cuda.h", "#pragma once\n"),
                       ("math_constants.h", _MATH_CONSTANTS)):
        path = inc / name
        if not path.exists() or path.read_text() != body:
            path.write_text(body)
    lib = root / f"{h}.so"
    if not lib.exists():
        src = root / f"{h}.cpp"
        src.write_text(text)
        tmp = root / f".{h}.{os.getpid()}.so"
        cmd = ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-w", "-pthread",
               f"-I{inc}", "-include", str(inc / "pir_cuda_emu.h"), str(src), "-o", str(tmp)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            raise PirError("g++ could not compile the emulated kernels:\n" +
                           res.stderr[-3000:])
        os.replace(tmp, lib)
    return ctypes.CDLL(str(lib))


class EmulatedInterpreter(Interpreter):
    """The reference interpreter with kernel.cuda ops run by the host emulation."""

    def __init__(self, module, keep_values: bool = False):
        super().__init__(module, keep_values)
        ops = [op for op in module.walk() if isinstance(op, CudaKernelOp)]
        sources, wrappers = {}, []
        for op in ops:
            if op.symbol not in sources:
                sources[op.symbol] = op.source
                wrappers.append(wrapper(op.source, op.symbol))
        self.lib = compile_host(sources, wrappers) if ops else None
        self.launches = 0

    def exec(self, op) -> None:
        if not isinstance(op, CudaKernelOp):
            return super().exec(op)
        ins = [np.ascontiguousarray(self.values[v]) for v in op.operands]
        call = prepare_call(op, [a.shape for a in ins], self.symbols)
        consts = region_constants(op)
        outs = [np.zeros(s, r.type.dtype.numpy) for s, r in zip(call.out_shapes, op.results)]
        # poison the outputs: an element the kernel never writes cannot pass as 0
        for o in outs:
            if o.dtype.kind == "f":
                o.fill(np.nan)
            elif o.dtype.kind in "iu":
                o.fill(np.iinfo(o.dtype).max // 3)
        args = []
        for kind, v in call.args:
            args.append(v if kind in ("i64", "i32") else
                        {"in": ins, "const": consts, "out": outs}[kind][v])
        launch(self.lib, op.symbol, args, call.grid, call.block[0])
        self.launches += 1
        for r, arr in zip(op.results, outs):
            self.check(r, arr, f"result %{r.name} of {op.describe()}")
            self.values[r] = arr

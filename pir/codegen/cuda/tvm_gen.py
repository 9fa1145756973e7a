"""``--kernels tvm``: a fusion group as CUDA C from TVM, scheduled by DLight.

The group is lowered by pir's own TVM rules (:func:`pir.codegen.tvm.lower.lower_block`), the
PrimFunc is scheduled by TVM's DLight GPU rules (``tvm.s_tir.dlight``: Matmul, GEMV,
Reduction, GeneralReduction, then Fallback for whatever is left) for
``Target({"kind": "cuda", "arch": ...})``, and TVM's CUDA code generator prints the kernel.
Building the CUDA *source* needs no GPU (apache-tvm 0.27's wheel does it; compiling it to a
binary is the runtime's job, NVRTC).  TVM's host code, which would launch the kernel, is not
used: the launch configuration is read from the scheduled function's thread bindings and the
parameters from the kernel's signature, and both go into the kernel.cuda op as for the
native generator.  A function TVM splits into several kernels is refused (the group stays).
"""

from __future__ import annotations

import re

from pir.codegen.cuda.schedule import CudaKernel
from pir.errors import PirError
from pir.ir.core import Block

__all__ = ["tvm_kernel", "cuda_target"]

_KERNEL_RE = re.compile(r'extern "C" __global__ void __launch_bounds__\((\d+)\) (\w+)\(([^)]*)\)\s*\{')


def cuda_target(arch: str):
    import tvm

    return tvm.target.Target({"kind": "cuda", "arch": arch})


def _schedule(mod, target):
    from tvm.s_tir import dlight as dl

    with target:
        return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                       dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)


_BINDING_RE = re.compile(r'T\.thread_binding\((?:0, )?(.+?), thread="((?:blockIdx|threadIdx)\.[xyz])"')
_TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _extents(script: str, names: dict[str, str]) -> dict[str, str]:
    """thread tag (blockIdx.x, threadIdx.x, ...) -> extent as a launch expression, read from
    the thread bindings of the scheduled function's script."""
    found: dict[str, str] = {}
    for extent, tag in _BINDING_RE.findall(script):
        text = extent.replace("T.int64", "").replace("T.int32", "")

        def sub(m):
            word = m.group(0)
            if word in ("min", "max"):
                return word
            if word not in names:
                raise PirError(f"tvm cuda: the launch extent '{extent}' depends on '{word}'")
            return "{" + names[word] + "}"

        found.setdefault(tag, _TOKEN_RE.sub(sub, text))
    return found


def tvm_kernel(block: Block, symbol: str, arch: str) -> CudaKernel:
    """The TVM-generated CUDA kernel of a group's block."""
    import tvm

    from pir.codegen.sums import TVM_CUDA_SUMS
    from pir.codegen.tvm.lower import lower_block
    from pir.codegen.tvm.target import cpu_target

    # The lowering's few CPU choices (which products of computed operands take the padded
    # batched form: pir.codegen.tvm.gemm) are made for one fixed CPU, AVX-512 as before
    # targets existed, so that a CUDA kernel never depends on the machine that made it
    lowered = lower_block(block, symbol, TVM_CUDA_SUMS, cpu=cpu_target("skylake-avx512", 4))
    target = cuda_target(arch)
    mod = _schedule(tvm.IRModule({symbol: lowered.func}), target)
    func = mod[symbol]
    try:
        # no common-subexpression elimination: it hoists index products into host code and
        # passes them as extra kernel parameters this launcher could not compute
        with tvm.transform.PassContext(config={"tirx.disable_cse_tir": True}):
            lib = tvm.tirx.build(mod, target=target)
    except Exception as e:  # noqa: BLE001 - TVM raises many kinds
        msg = str(e).strip().splitlines()
        raise PirError(f"tvm cuda: build failed: {msg[-1] if msg else type(e).__name__}") from None
    source = "".join(m.inspect_source() for m in lib.imports if m.kind == "cuda")
    kernels = _KERNEL_RE.findall(source)
    if len(kernels) != 1:
        raise PirError(f"tvm cuda: TVM made {len(kernels)} kernels of the group (one "
                       "kernel.cuda holds one)")
    threads, name, params = kernels[0]
    names = {v.name: k for k, v in lowered.sizes.items() if isinstance(v, tvm.tirx.Var)}
    ext = _extents(func.script(), names)
    grid = ", ".join(ext[t] for t in ("blockIdx.x", "blockIdx.y", "blockIdx.z")
                     if t in ext) or "1"
    if ext.keys() & {"threadIdx.y", "threadIdx.z"} or not ext.get("threadIdx.x", "1").isdigit():
        raise PirError("tvm cuda: only one-dimensional, static blocks are launched")
    block_x = int(ext.get("threadIdx.x", "1"))
    roles = {}
    for k, t in enumerate(lowered.inputs):
        roles[t.name] = f"in:{k}"
    for k, (t, _) in enumerate(lowered.params):
        roles[t.name] = f"const:{k}"
    for k, t in enumerate(lowered.outputs):
        roles[t.name] = f"out:{k}"
    args = []
    for p in params.split(","):
        p = p.strip()
        pname = p.split()[-1]
        if "*" in p:
            buf = pname[:-4] if pname.endswith("_ptr") else pname
            if buf not in roles:
                raise PirError(f"tvm cuda: kernel parameter '{pname}' is no buffer of the group")
            args.append(roles[buf])
        elif pname in names:
            ctype = p[:p.rfind(" ")].strip()
            args.append(f"dim:{names[pname]}:{'i64' if '64' in ctype or 'long' in ctype else 'i32'}")
        else:
            raise PirError(f"tvm cuda: kernel parameter '{p}' is not understood")
    # the entry point takes pir's symbol (TVM names it <symbol>_kernel)
    source = re.sub(r"(__global__\s+void\s+(?:__launch_bounds__\(\d+\)\s+)?)" + name + r"\(",
                    lambda m: m.group(1) + symbol + "(", source)
    return CudaKernel(symbol, source, grid, block_x, 0, args, f"tvm dlight, {threads} threads")

"""``pir codegen --target cuda``: every ``fusion.group`` that can be emitted becomes a
``kernel.cuda`` op holding CUDA C and its launch configuration; matmuls become ``kernel.cublas``.

Two generators, chosen per program: ``native`` (pir's own emitter, :mod:`.schedule`) and
``tvm`` (the group lowered by pir's TVM rules, scheduled by TVM's DLight GPU rules, and
printed by TVM's CUDA code generator, :mod:`.tvm_gen`).  Groups a generator cannot handle stay
``fusion.group`` (the cuda runtime runs them on the host with the reference rules) and the
report says why.  Groups that compute the same thing share one symbol and one source, as
for the CPU (:func:`pir.codegen.tvm.codegen.group_key`); symbols are C identifiers made from
the first result's name, always prefixed ``k_`` (:func:`cuda_symbol`).  Nothing is compiled
here: the cuda runtime compiles each source with NVRTC (cached by content).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pir.codegen.symbols import bounded
from pir.codegen.tvm.codegen import group_key
from pir.errors import PirError, one_line
from pir.ir.core import Operation
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.fusion import GroupOp, YieldOp
from pir.ir.dialects.kernel import CublasOp, CudaKernelOp, TvmKernelOp
from pir.ir.printer import settle_names
from pir.ir.types import DType, TensorType

__all__ = ["CudaReport", "codegen_cuda", "cuda_symbol", "matmul_form", "regenerate", "KERNELS",
           "ARCHS", "CUDA_SYMBOL_PREFIX"]

KERNELS = ("native", "tvm")
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100")
_MATMUL_TYPES = (DType.F32, DType.F16, DType.BF16, DType.F64)


@dataclass
class CudaReport:
    """What codegen did: kernels made, distinct sources, cuBLAS calls, groups left alone."""

    generator: str = "native"
    kernels: int = 0
    sources: int = 0
    cublas: int = 0
    kept: list[tuple[str, str]] = field(default_factory=list)  # (group name, reason)
    schedules: dict[str, int] = field(default_factory=dict)  # schedule -> distinct kernels

    def lines(self) -> list[str]:
        out = [f"codegen (cuda, {self.generator}): {self.kernels} fusion groups -> kernel.cuda "
               f"({self.sources} distinct kernels), {self.cublas} matmuls -> kernel.cublas, "
               f"{len(self.kept)} left as fusion.group (run on the host)"]
        out += [f"  {n} x {s}" for s, n in sorted(self.schedules.items())]
        out += [f"  kept %{name}: {reason}" for name, reason in self.kept]
        return out


def matmul_form(op: Operation) -> bool:
    """A dot_general cuBLAS computes as a (batched) GEMM: ``[..., M, K] x [..., K, N]`` with
    the batch dims leading and in order, or ``[..., M, K] x [K, N]``; float types alike."""
    if op.name != "prim.dot_general":
        return False
    lt, rt = op.operands[0].type, op.operands[1].type
    if not (isinstance(lt, TensorType) and isinstance(rt, TensorType)) or lt.shape is None \
            or rt.shape is None or lt.dtype != rt.dtype or lt.dtype not in _MATMUL_TYPES:
        return False
    lr, rr = len(lt.shape), len(rt.shape)
    lb, rb = list(op.lhs_batching_dimensions), list(op.rhs_batching_dimensions)
    nb = len(lb)
    if lb != list(range(nb)) or rb != list(range(nb)) or lr < nb + 2 - (nb == 0):
        return False
    if list(op.lhs_contracting_dimensions) != [lr - 1]:
        return False
    if nb == 0:
        return rr == 2 and list(op.rhs_contracting_dimensions) == [0] and lr >= 1
    return rr == nb + 2 and list(op.rhs_contracting_dimensions) == [nb] and lr == nb + 2


def form_cublas_calls(module: ModuleOp) -> int:
    """Replace every matmul-form dot_general outside groups by a kernel.cublas op."""
    from pir.ir.core import Block, Region

    n = 0
    for func in module.funcs:
        block = func.entry
        for op in [o for o in block.ops if matmul_form(o)]:
            operands = list(op.operands)
            inner = Block([v.type for v in operands])
            for a, v in zip(inner.args, operands):
                a.name = f"{v.name}_1" if v.name else None
            at = block.index(op)
            dot = op.__class__([*inner.args], [r.type for r in op.results], dict(op.attributes),
                               [], loc=op.loc, result_names=[f"{op.results[0].name}_1"
                                                             if op.results[0].name else None])
            inner.append(dot)
            inner.append(YieldOp([dot.results[0]], [], loc=op.loc))
            attrs = {"pir.name": op.results[0].name} if op.results[0].name else {}
            call = CublasOp(operands, [r.type for r in op.results], attrs, [Region([inner])],
                            loc=op.loc, result_names=[r.name for r in op.results])
            block.insert(at, call)
            op.results[0].replace_all_uses_with(call.results[0])
            block.remove(op)
            n += 1
    return n


def codegen_cuda(module: ModuleOp, arch: str = "sm_90", kernels: str = "native") -> CudaReport:
    """Replace each group of ``module`` that ``kernels`` can emit by a kernel.cuda op (in
    place), and each matmul by a kernel.cublas op."""
    if kernels not in KERNELS:
        raise PirError(f"unknown kernel generator '{kernels}' (generators: {', '.join(KERNELS)})")
    if arch not in ARCHS:
        raise PirError(f"unknown arch '{arch}' (archs: {', '.join(ARCHS)})")
    if any(isinstance(op, TvmKernelOp) for op in module.walk()):
        raise PirError("the program already holds kernel.tvm ops (codegen for llvm ran): "
                       "generate CUDA from the fused program instead")
    report = CudaReport(generator=kernels)
    report.cublas = form_cublas_calls(module)
    # the sources are made from value names: those the file will show, so that `pir run`
    # makes the same sources again from the parsed file (pir.codegen.provenance)
    settle_names(module)
    used = {op.symbol for op in module.walk() if isinstance(op, CudaKernelOp)}
    made: dict[str, object] = {}
    failed: dict[str, str] = {}
    for group in [op for op in module.walk() if isinstance(op, GroupOp)]:
        first = group.results[0].name if group.results else None
        bound = _bound(group)
        key = group_key(group.body.block) + f"\nbound {sorted(bound)}"
        if key in failed:
            report.kept.append((first or "?", failed[key]))
            continue
        if key not in made:
            base = cuda_symbol(first)
            symbol, k = base, 1
            while symbol in used:
                symbol, k = f"{base}_{k}", k + 1
            try:
                kernel = _generate(group, symbol, arch, kernels, bound)
            except Exception as e:  # noqa: BLE001 - any failure keeps the group
                reason = one_line(e)
                failed[key] = reason
                report.kept.append((first or "?", reason))
                continue
            used.add(symbol)
            made[key] = kernel
            report.sources += 1
            report.schedules[kernel.schedule] = report.schedules.get(kernel.schedule, 0) + 1
        _replace(group, made[key], arch, kernels, first)
        report.kernels += 1
    return report


#: Every CUDA kernel symbol starts with this.  A kernel is compiled with the CUDA headers,
#: which declare the C library, POSIX (``select``, ``read``, ``time`` ...), CUDA's math API
#: and C++'s keywords and operators in the global namespace, a set that changes with the glibc
#: and CUDA versions; a list of names to avoid was always one short (``xor``, then
#: ``select``).  No C, POSIX, CUDA or C++ name begins with ``k_``, so a prefixed symbol can
#: clash with none of them, and it stays readable (``select`` -> ``k_select``).
CUDA_SYMBOL_PREFIX = "k_"


def cuda_symbol(name: str | None) -> str:
    """The CUDA C kernel symbol for a group whose first result is ``name``:
    ``gpu_0/data_0`` -> ``k_gpu_0_data_0``, ``select`` -> ``k_select``.  Runs of characters
    that are not C identifier characters, and of underscores, become one underscore (C++
    reserves every name holding ``__``); ``None`` or nothing left gives ``k_kernel``."""
    base = re.sub(r"[\W_]+", "_", name or "", flags=re.ASCII).strip("_") or "kernel"
    return bounded(CUDA_SYMBOL_PREFIX + base)


def _bound(group: GroupOp | CudaKernelOp) -> set[str]:
    """The symbolic dims the function holding ``group`` binds from its arguments."""
    from pir.codegen.tvm.dims import symbols_of

    op = group.parent_op
    while op is not None and op.name != "func.func":
        op = op.parent_op
    if op is None:
        return set()
    return set().union(*(symbols_of(a.type) for a in op.entry.args)) if op.entry.args else set()


def regenerate(op: CudaKernelOp):
    """The kernel this pir generates for a kernel.cuda op's region, symbol, arch and
    generator: what ``pir run`` requires the stored one to be (pir.codegen.provenance)."""
    return _generate(op, op.symbol, op.arch, op.generator, _bound(op))


def _generate(group: GroupOp | CudaKernelOp, symbol: str, arch: str, kernels: str,
              bound: set[str]):
    if kernels == "native":
        from pir.codegen.cuda.schedule import emit_kernel

        return emit_kernel(group.body.block, symbol, bound)
    from pir.codegen.cuda.tvm_gen import tvm_kernel

    return tvm_kernel(group.body.block, symbol, arch)


def _replace(group: GroupOp, kernel, arch: str, generator: str, name: str | None) -> None:
    attrs = {"kind": group.kind, "symbol": kernel.symbol, "source": kernel.source,
             "arch": arch, "generator": generator, "grid": kernel.grid,
             "block": (kernel.block, 1, 1), "shared_mem": kernel.shared_mem,
             "args": tuple(kernel.args)}
    if name is not None:
        attrs["pir.name"] = name
    region = group.regions[0]
    group.regions = []
    region.parent = None
    op = CudaKernelOp(list(group.operands), [r.type for r in group.results], attrs, [region],
                      loc=group.loc, result_names=[r.name for r in group.results])
    block = group.parent
    block.insert(block.index(group), op)
    for old, new in zip(group.results, op.results):
        old.replace_all_uses_with(new)
    block.remove(group)

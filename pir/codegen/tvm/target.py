"""The CPU a kernel is scheduled for: its vector width and core count, and the register
tiles and work split that follow from them.

The register tiles were sized for AVX-512 (32 vector registers of 16 floats): an 8 x 32
GEMM tile and a 16 x 16 direct-convolution tile hold sixteen accumulators.  On an AVX2 CPU
(16 registers of 8 floats) the same tiles are 32 accumulators and spill: one GEMM kernel
made 609 stack accesses per tile, and ran a 64 -> 128 channel 3x3 convolution at 2.9x
ONNX Runtime's time, where a 6 x 16 tile (12 accumulators, the classic AVX2 micro-kernel
that MLAS and OpenBLAS use) ran it at 1.07x.  So the tiles come from the target, as TVM's
schedules take theirs from ``target.mcpu`` and ``num-cores``.

A target is written as TVM writes one, ``llvm -mcpu=znver3 -num-cores=2``.  ``llvm`` alone
is this machine (its CPU as LLVM names it, the cores this process may use).  The vector
width is LLVM's answer for the named CPU, not the host's, so a named target gives the same
kernels on every machine (docs/decisions.md, "The CPU target").  Only the schedule depends on
the target: ``pir run`` builds every kernel for the CPU it runs on, so kernels scheduled for
one CPU run correctly, if slower, on another.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from pir.errors import PirError

__all__ = ["CpuTarget", "cpu_target", "parse_target", "host_cpu", "has_vnni"]

#: Cores assumed when a target names its CPU but not its cores: what the work split was
#: tuned on (the parallel loops get at least this many chunks).
DEFAULT_CORES = 4


@dataclass(frozen=True)
class CpuTarget:
    """A CPU to schedule kernels for.  ``vector_bits``: its widest float vector (512 for
    AVX-512, 256 for AVX2, 128 for SSE or NEON); ``vnni``: whether it has AVX-512 VNNI's
    uint8 x int8 dot instruction (pir.codegen.tvm.dot4)."""

    mcpu: str
    cores: int
    vector_bits: int
    vnni: bool = False

    def __str__(self) -> str:
        return f"llvm -mcpu={self.mcpu} -num-cores={self.cores}"

    @property
    def lanes(self) -> int:
        """float32 lanes of one vector register."""
        return self.vector_bits // 32

    @property
    def wide(self) -> bool:
        """32 vector registers (AVX-512) rather than 16: room for tiles of 16 accumulators."""
        return self.vector_bits >= 512

    # -- the GEMM (pir.codegen.tvm.gemm) --------------------------------------------------

    @property
    def panel_width(self) -> int:
        """Columns of a packed weight panel and of a register tile: two vectors."""
        return 2 * self.lanes

    def panel(self, n: int) -> int | None:
        """Columns per panel for ``n`` columns: two vectors, or one; None when one vector
        does not divide ``n``."""
        return self.panel_width if n % self.panel_width == 0 else \
            self.lanes if n % self.lanes == 0 else None

    @property
    def gemm_rows(self) -> int:
        """Rows of the GEMM's register tile: 8 x 2 vectors (16 accumulators of 32 registers)
        with AVX-512, 6 x 2 (12 of 16) otherwise.  Measured on an AVX2 Zen 3, one thread, a
        32 -> 64 channel 1x1 convolution with GELU over 56 x 80: 8 x 32 (spilling) 0.92 ms,
        4 x 16 0.62, 6 x 16 0.75; 64 -> 128 3x3 over 28 x 40: 5.6 / 2.08 / 2.03; 256 -> 256
        1x1 over 14 x 14: 0.84 / 0.51 / 0.51."""
        return 8 if self.wide else 6

    @property
    def small_rows(self) -> int:
        """A matmul of fewer rows than this runs its one-row kernel (``gemm.ROWS1``): a
        tile of ``gemm_rows`` computes mostly padding (a recurrent step's batch of one, 8
        rows for 1), one row reads the weights once per row.  Measured on Rocket Lake, one
        thread, [M, 512] x [512, 2048]: M = 1, 8 rows 161 us, one row ~25."""
        return self.gemm_rows // 2

    @property
    def min_chunks(self) -> int:
        """The fewest chunks of panels the GEMM's parallel loop gets: one per core, at
        least 4."""
        return max(4, self.cores)

    # -- the direct convolution (pir.codegen.tvm.direct) ----------------------------------

    @property
    def direct_tile_floats(self) -> int:
        """Accumulators of a direct-convolution tile, in floats: 16 registers with AVX-512
        (16 x 16, as the GEMM's 8 x 32: enough independent FMAs to hide their latency on
        two FMA units; a 64 -> 64 channel 3x3 convolution of a symbolic 40 x 40 input ran
        at 103 GFLOP/s with 4 x 16, 153 with 8 x 16 and 167 with 16 x 16), 12 otherwise
        (6 channels x 2 vectors, as the GEMM's tile; 64 -> 64 3x3 stride 2 at 56 x 56 ran
        1.92 ms with 16 x 16 on AVX2, 0.94 with 4 x 16)."""
        return 256 if self.wide else 12 * self.lanes

    @property
    def direct_rows(self) -> tuple[int, ...]:
        """The output channels a direct-convolution tile may take, most first: one of them
        divides the channels (the packed weights are whole tiles of them).  On AVX2, 6 x 16
        tiles for channels that 6 divides (PaddleOCR's 96, 192, 384, 768) against 4 x 16:
        symbolic 1x1 and 3x3 convolution pairs at 1.31x ORT's time against 1.44x (the mean
        of ten runs over five shapes); over seven OCR and detector models of the corpus,
        side by side, 4 x 16 took 0.96x-1.08x the time of 6 x 16, 1.02x on average."""
        return (16, 8, 4, 2, 1) if self.wide else (6, 4, 2, 1)

    @property
    def flat_rows(self) -> int:
        """Most output channels a tile of the flat form takes (of ``direct_rows``): its
        runs of positions are long, so its tiles are two vectors wide."""
        return self.direct_tile_floats // self.panel_width

    @property
    def direct_max_lanes(self) -> int:
        """Most output positions a direct tile takes: four vectors."""
        return 4 * self.lanes


def host_cpu() -> str:
    """This machine's CPU, as LLVM names it (``znver3``, ``skylake-avx512``...)."""
    from tvm.target import codegen

    return str(codegen.llvm_get_system_cpu())


@functools.lru_cache(maxsize=None)
def cpu_target(mcpu: str | None = None, cores: int | None = None) -> CpuTarget:
    """The target for ``mcpu`` (None: this machine's CPU) with ``cores`` (None: those this
    process may use for this machine, DEFAULT_CORES for a named CPU)."""
    import tvm
    from tvm.target import codegen

    if mcpu is None:
        mcpu = host_cpu()
        if cores is None:
            cores = len(os.sched_getaffinity(0))
    if cores is None:
        cores = DEFAULT_CORES
    if cores < 1:
        raise PirError(f"target: -num-cores must be at least 1, not {cores}")
    # (TVM only logs an unknown CPU, and then schedules for a generic one)
    if not codegen.llvm_is_valid_cpu(mcpu, codegen.llvm_get_system_triple()):
        raise PirError(f"target: LLVM does not know the CPU '{mcpu}' (for example znver3, "
                       "skylake-avx512, haswell, x86-64-v3)")
    llvm = tvm.target.Target({"kind": "llvm", "mcpu": mcpu})
    bits = 512 if codegen.llvm_cpu_has_features(["avx512f"], llvm) else \
        256 if codegen.llvm_cpu_has_features(["avx"], llvm) else 128
    return CpuTarget(mcpu, cores, bits, has_vnni(llvm))


def has_vnni(llvm_target) -> bool:
    """Whether an LLVM target's CPU has AVX-512 VNNI (``vpdpbusd``)."""
    from tvm.target import codegen

    return bool(codegen.llvm_cpu_has_features(["avx512vnni"], llvm_target))


def parse_target(text: str) -> CpuTarget:
    """A CPU target from its text: ``llvm``, with ``-mcpu=NAME`` and ``-num-cores=N`` as
    TVM writes them (``llvm -mcpu=znver3 -num-cores=8``)."""
    kind, *options = text.split()
    if kind != "llvm":
        raise PirError(f"target '{text}': a CPU target starts with 'llvm'")
    found: dict[str, str] = {}
    for opt in options:
        key, eq, value = opt.partition("=")
        if key not in ("-mcpu", "-num-cores") or not eq or not value:
            raise PirError(f"target '{text}': unknown option '{opt}' (options: -mcpu=NAME, "
                           "-num-cores=N)")
        if key in found:
            raise PirError(f"target '{text}': {key} given twice")
        found[key] = value
    cores = found.get("-num-cores")
    if cores is not None and not cores.isdigit():
        raise PirError(f"target '{text}': -num-cores must be a whole number, not '{cores}'")
    return cpu_target(found.get("-mcpu"), int(cores) if cores is not None else None)

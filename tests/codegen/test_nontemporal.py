"""Non-temporal stores for row kernels that stream from memory (schedule.NONTEMPORAL,
pir/runtimes/tvm/nontemporal.py): which kernels ask for them, which stores the LLVM IR pass
changes, and that the kernels built with them compute the same values."""

from __future__ import annotations

import platform

import numpy as np
import pytest

pytest.importorskip("tvm")

import tvm  # noqa: E402

from pir.codegen.tvm import schedule  # noqa: E402
from pir.codegen.tvm.build import set_threads, threads  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import executor, library, nontemporal  # noqa: E402
from rows import D, row_kernel, row_model  # noqa: E402

x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                         reason="non-temporal stores are built for x86 only")

_IR = """\
target triple = "x86_64-unknown-linux-gnu"

define void @f(ptr %x, ptr %y) {
entry:
  %v = load <16 x float>, ptr %x, align 64, !tbaa !1
  store <16 x float> %v, ptr %y, align 64, !dbg !9, !tbaa !2
  store <16 x float> %v, ptr %x, align 64, !tbaa !1
  store <16 x float> %v, ptr %y, align 4, !tbaa !2
  store float 1.0, ptr %y, align 4, !tbaa !2
  %c = icmp eq ptr %x, %y
  br i1 %c, label %a, label %b
a:
  ret void
b:
  ret void
}

define void @g(ptr %x, ptr %y) {
  %v = load <8 x float>, ptr %x, align 32, !tbaa !1
  store <8 x float> %v, ptr %x, align 32, !tbaa !1
  ret void
}

!0 = !{!"tvm-tbaa"}
!1 = !{!3, !3, i64 0}
!2 = !{!4, !4, i64 0}
!3 = !{!"0x1", !0, i64 0}
!4 = !{!"0x2", !0, i64 0}
!9 = !{}
"""


def test_only_aligned_vector_stores_into_a_buffer_never_read_become_non_temporal():
    out, marked = nontemporal.mark_nontemporal(_IR)
    assert marked == 1
    lines = out.splitlines()
    # the one store into y (whose tag no load carries), as a whole 64-byte vector
    nt = [line for line in lines if "!nontemporal" in line]
    assert nt == ["  store <16 x float> %v, ptr %y, align 64, !dbg !9, !tbaa !2, "
                  "!nontemporal !10"]
    assert "!10 = !{i32 1}" in lines and "declare void @llvm.x86.sse.sfence()" in lines
    # every return of @f is fenced, @g (nothing marked) is as it was
    f = lines[lines.index("define void @f(ptr %x, ptr %y) {"):lines.index("}")]
    rets = [i for i, line in enumerate(f) if line.strip() == "ret void"]
    assert len(rets) == 2 and all(f[i - 1] == "  call void @llvm.x86.sse.sfence()" for i in rets)
    g = out[out.index("define void @g"):]
    assert "sfence()\n  ret" not in g[:g.index("}")]


def test_ir_without_a_write_only_buffer_is_returned_as_it_was():
    ir = _IR.replace("ptr %y, align 64, !dbg !9, !tbaa !2", "ptr %y, align 64, !tbaa !1")
    assert nontemporal.mark_nontemporal(ir) == (ir, 0)
    # a buffer read through an intrinsic (a masked load) is read all the same
    masked = _IR.replace("  ret void\n}\n\ndefine void @g", "  %m = call <16 x float> "
                         "@llvm.masked.load.v16f32.p0(ptr %y, i32 4, <16 x i1> splat (i1 true), "
                         "<16 x float> poison), !tbaa !2\n  ret void\n}\n\ndefine void @g")
    assert masked != _IR and nontemporal.mark_nontemporal(masked)[1] == 0


def _rms(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-5) * s


@pytest.mark.parametrize("kind, rows, asks", [("rms", 80, True), ("rms", 8, False),
                                              ("softmax", 80, True)])
def test_a_streamed_row_kernel_asks_for_non_temporal_stores(streaming, kind, rows, asks):
    k = row_kernel(kind, rows)
    assert bool(k.mod[k.kernel.name].attrs.get(schedule.NONTEMPORAL, False)) == asks
    assert library.wants_nontemporal(k.mod.script()) == asks


@x86
def test_a_streamed_rms_norm_stores_its_rows_non_temporally_and_computes_the_same(streaming):
    k = row_kernel("rms", 80)
    plain = tvm.tirx.build(k.mod, target=executor.host_target())
    assert "movnt" not in plain.inspect_source("asm")
    asm = k.module.inspect_source("asm")
    assert "movntps" in asm and "sfence" in asm
    x = np.random.default_rng(3).standard_normal((80, D)).astype(np.float32)
    s = k.kernel.params[0][1]
    before = threads()
    try:
        for n in (1, 2):  # the rows shared out over threads: each fences its own stores
            set_threads(n)
            (got,) = k(x)
            np.testing.assert_allclose(got, _rms(x, s), rtol=2e-6, atol=1e-6)
    finally:
        set_threads(before)
    y = tvm.runtime.empty((80, D), "float32", tvm.cpu())
    plain[k.kernel.name](tvm.runtime.tensor(x), tvm.runtime.tensor(s), y)
    np.testing.assert_array_equal(got, y.numpy())


@x86
def test_a_softmax_that_rereads_its_output_keeps_plain_stores(streaming):
    # softmax writes its exponentials into the output row and scales them in place: the
    # output is read back, so no store of it may bypass the cache
    k = row_kernel("softmax", 80)
    assert bool(k.mod[k.kernel.name].attrs.get(schedule.NONTEMPORAL, False))
    plain = tvm.tirx.build(k.mod, target=executor.host_target())
    assert nontemporal.mark_nontemporal(plain.inspect_source("ll"))[1] == 0
    assert "movnt" not in k.module.inspect_source("asm")


def _program(kind: str, rows: int):
    module = import_model(row_model(kind, rows))
    PassManager(parse_pipeline("decompose,canonicalize,fold,cse,dce,shapes,fuse")).run(module)
    codegen_module(module, "llvm")
    (sym, src), = executor.kernel_sources(module).items()
    return sym, src


def _strip(src: str) -> str:
    for attr in (schedule.NONTEMPORAL, schedule.NO_UNROLL):
        src = src.replace(f'"{attr}": True, ', "")
    return src


def _call(lib, name: str, src: str) -> list[np.ndarray]:
    """Every buffer of kernel ``name`` after one call on seeded random ones."""
    func = tvm.script.from_source(src)[name]
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal([int(d) for d in p.shape]).astype(np.float32)
              for p in func.params]
    tensors = [tvm.runtime.tensor(a) for a in arrays]
    lib.get_function(name, query_imports=True)(*tensors)
    return [t.numpy() for t in tensors]


@x86
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_library_holds_plain_non_temporal_and_kept_loop_kernels(streaming, monkeypatch,
                                                                  cache, jobs):
    # three build groups in one library: the streamed RMSNorm (non-temporal stores), a small
    # one (plain), the streamed softmax (loops kept; asks for non-temporal stores too, and
    # gets none); each kernel computes what it computes built plain
    monkeypatch.setenv("PIR_BUILD_JOBS", jobs)
    kinds = {"big_rms": ("rms", 80), "small_rms": ("rms", 8), "big_softmax": ("softmax", 80)}
    sources = {}
    for name, (kind, rows) in kinds.items():
        sym, src = _program(kind, rows)
        sources[name] = src.replace(f"def {sym}(", f"def {name}(")
    assert [(library.wants_loops(s), library.wants_nontemporal(s))
            for s in sources.values()] == [(False, True), (False, False), (True, True)]
    plain = library.build_sources({n: _strip(s) for n, s in sources.items()},
                                  executor.host_target())
    in_memory = library.build_sources(sources, executor.host_target())
    # one module per group, the first importing the others; the streamed RMSNorm's has movnt
    asm = [m.inspect_source("asm") for m in [in_memory, *in_memory.imports]]
    assert len(asm) == 3 and sum("movntps" in a for a in asm) == 1
    path = cache / "tvm" / "mixed.so"
    library.build_library(sources, executor.host_target(), path)
    for lib in (tvm.runtime.load_module(str(path)), in_memory):
        for name, src in sources.items():
            for got, want in zip(_call(lib, name, src), _call(plain, name, src)):
                np.testing.assert_array_equal(got, want)

"""Non-temporal stores for the kernels that stream their output past the caches: a pass over
the LLVM IR that TVM built.

A row kernel over [16384, 768] float32 reads 48 MiB and writes 48 MiB.  A plain store first
reads each output line into the cache (a read for ownership) and later writes it back: 144 MiB
move for the 96 MiB the kernel needs.  A non-temporal store (``vmovntps``) writes whole lines
through write-combining buffers and reads nothing.  Measured on this machine (one thread, A/B
in one process, bench/kernels.py's ops): RMSNorm 2.64 -> 2.38 ms (ONNX Runtime's fused op
2.78), LayerNorm with its input on a 4 KB boundary 4.28 -> 2.45 ms (ORT 4.94); the same C
kernel 2.50 -> 2.13 ms.  Where the output is read again soon (rows the caches hold), a
non-temporal store is a loss: the reader then misses every line.  So the scheduler marks only
kernels that stream (``pir.codegen.tvm.schedule.NONTEMPORAL``), and this pass changes only
the stores into a buffer the kernel never reads back.

TIR has no non-temporal store and TVM 0.27's LLVM code generator attaches no such hint, so
this works on the optimised LLVM IR TVM prints: each buffer's accesses carry a TBAA tag of
their own (TVM gives one per buffer variable), a tag that no load carries is a write-only
buffer, and its naturally aligned vector stores get LLVM's ``!nontemporal`` metadata, which
the x86 back end lowers to ``movnt``.  Non-temporal stores are weakly ordered, so every
function with one ends in an ``sfence`` before it returns: a parallel loop's threads then
publish their rows before the join.  The module is then read back from the IR
(``tvm.runtime.load_module`` on a ``.ll`` file) and built to machine code as any other.
"""

from __future__ import annotations

import os
import re
import tempfile

import tvm

__all__ = ["mark_nontemporal", "with_nontemporal_stores"]

#: Bytes of the element types a kernel stores in vectors.
_BYTES = {"float": 4, "double": 8, "half": 2, "bfloat": 2, "i8": 1, "i16": 2, "i32": 4,
          "i64": 8}

#: ``store <16 x float> %v, ptr %p, align 64, !dbg !46, !tbaa !50``: the vector shape, the
#: alignment and the metadata attachments (the stored value may be a constant with commas).
_STORE = re.compile(r"^\s+store <(\d+) x (\w+)> .*, ptr %[\w.]+, align (\d+)"
                    r"((?:, ![\w.]+ !\d+)*)$")
_TAG = re.compile(r"!tbaa !(\d+)")
_METADATA_ID = re.compile(r"^!(\d+) = ", re.M)
_SFENCE = "  call void @llvm.x86.sse.sfence()"


def mark_nontemporal(ll: str) -> tuple[str, int]:
    """(``ll`` with the vector stores into write-only buffers non-temporal and an ``sfence``
    before every return of a function that has one, how many stores were marked)."""
    lines = ll.split("\n")
    # a tag on anything but a plain store (a load, a masked load's call) is a buffer read
    read = {m.group(1) for line in lines
            if (m := _TAG.search(line)) and not line.lstrip().startswith("store ")}
    hint = max((int(i) for i in _METADATA_ID.findall(ll)), default=-1) + 1
    out: list[str] = []
    body: list[str] | None = None  # the lines of the function being read
    marked = marked_here = 0
    for line in lines:
        if body is None:
            if line.startswith("define "):
                body, marked_here = [line], 0
            else:
                out.append(line)
            continue
        if _streams(line, read):
            line += f", !nontemporal !{hint}"
            marked_here += 1
        body.append(line)
        if line == "}":
            out.extend(_fence_every_return(body) if marked_here else body)
            marked += marked_here
            body = None
    if not marked:
        return ll, 0
    if "@llvm.x86.sse.sfence()" not in ll:
        out.append("declare void @llvm.x86.sse.sfence()")
    out += [f"!{hint} = !{{i32 1}}", ""]
    return "\n".join(out), marked


def _streams(line: str, read: set[str]) -> bool:
    """Whether ``line`` is a naturally aligned vector store into a buffer nothing reads."""
    m = _STORE.match(line)
    if m is None:
        return False
    lanes, elem, align, attached = m.groups()
    size = int(lanes) * _BYTES.get(elem, 0)
    tag = _TAG.search(attached)
    return (tag is not None and tag.group(1) not in read and size in (16, 32, 64)
            and int(align) >= size and "!nontemporal" not in attached)


def _fence_every_return(body: list[str]) -> list[str]:
    fenced: list[str] = []
    for line in body:
        if line.lstrip().startswith("ret "):
            fenced.append(_SFENCE)
        fenced.append(line)
    return fenced


def with_nontemporal_stores(lib: tvm.runtime.Module) -> tvm.runtime.Module:
    """``lib`` (an LLVM module TVM built for an x86 target) with :func:`mark_nontemporal`
    applied; ``lib`` itself when no store qualifies or the target is not x86."""
    ll = lib.inspect_source("ll")
    if "target triple = \"x86_64" not in ll:
        return lib  # movnt and sfence are x86's; elsewhere the plain stores stay
    marked_ll, marked = mark_nontemporal(ll)
    if not marked:
        return lib
    with tempfile.TemporaryDirectory(prefix="pir-nt-") as work:
        path = os.path.join(work, "kernels.ll")
        with open(path, "w") as f:
            f.write(marked_ll)
        return tvm.runtime.load_module(path)

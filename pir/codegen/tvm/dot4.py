"""uint8 x int8 products in four-wide dot instructions (AVX-512 VNNI's ``vpdpbusd``).

A quantized model multiplies 8-bit activations by 8-bit weights: onnxruntime's quantizer
writes ``MatMulInteger`` or ``DequantizeLinear`` pairs around a MatMul, which pir's importer
and ``fold`` turn into a product of whole numbers (``cast(q) - zero_point`` times centred
weights).  The float32 FMA computes such a product exactly, one multiply per lane; VNNI's
``vpdpbusd`` multiplies 64 unsigned by 64 signed bytes and adds each four into one of 16
int32 lanes, four times the products per instruction (the [400, 384] x [384, 1536] product
of a quantized Whisper encoder: 4.4 ms in float32, 0.8 ms in u8 x s8).

A GEMM takes the route when the weights are known whole numbers in [-128, 127] (int8) and
the activations provably whole numbers in a range of 256 (``[lo, lo + 255]``):
``sum_k x w = sum_k (x - lo) w + lo * colsum(w)``, with ``x - lo`` a uint8 and the second
term a constant per column.  pir.codegen.tvm.gemm writes the region (the uint8 stage
``*_xu8`` of ``[rows, K/4, 4]``, the weights packed ``[N/BN, K/4, BN, 4]``, the int32
product, the correction); the GEMM schedule puts each 16 columns x 4 products innermost,
and :func:`use_vnni` makes those two loops the one instruction.  A kernel so made carries
``USES_VNNI``; built for a CPU without VNNI (``pir run`` builds for the machine it runs on)
:func:`without_vnni` spells the instruction out in plain vector operations.
"""

from __future__ import annotations

import math

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx
from tvm.s_tir.stmt import SBlockRealize
from tvm.sym import Analyzer

from pir.codegen.tvm.int_range import integral, value_range
from pir.ir.core import Value

__all__ = ["dot4_offset", "pack_dot4", "use_vnni", "without_vnni", "USES_VNNI", "VNNI"]

#: The intrinsic: ``acc[i] + sum_j a[4i + j] * b[4i + j]`` over 16 int32 lanes (a: uint8,
#: b: int8), no saturation.
VNNI = "llvm.x86.avx512.vpdpbusd.512"

#: The attribute of a kernel whose TIR calls VNNI.
USES_VNNI = "pir.uses_vnni"

#: Columns one instruction computes, and products it adds into each.
LANES, DEPTH = 16, 4


def dot4_offset(x: Value, w: np.ndarray) -> int | None:
    """``lo`` when ``x [..., K] x w [K, N]`` may run as ``(x - lo)`` uint8 times ``w`` int8:
    the weights whole numbers in [-128, 127], K a multiple of 4, the activations provably
    whole numbers within ``[lo, lo + 255]``; else None."""
    if w.ndim != 2 or w.shape[0] % DEPTH or not w.size or w.dtype.kind not in "iuf":
        return None
    if w.dtype.kind == "f" and not (np.isfinite(w).all() and (w == np.round(w)).all()):
        return None
    if w.min() < -128 or w.max() > 127 or not integral(x):
        return None
    r = value_range(x)
    if r is None or not all(map(math.isfinite, r)):
        return None
    lo = math.floor(r[0])
    return lo if r[1] - lo <= 255 else None


def pack_dot4(panels: np.ndarray) -> np.ndarray:
    """Weights packed as the GEMM's ``[N/BN, K, BN]`` panels, as int8 ``[N/BN, K/4, BN, 4]``:
    each four rows of a panel interleaved, so that one instruction's 64 bytes (16 columns x
    4 rows) are contiguous."""
    nb, k, bn = panels.shape
    quads = panels.reshape(nb, k // DEPTH, DEPTH, bn).transpose(0, 1, 3, 2)
    return np.ascontiguousarray(quads.astype(np.int8))


# -- the TIR rewrite -------------------------------------------------------------------------

def use_vnni(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each ``for lane in 16: for j in 4: acc[.., lane] += i32(x[.., j]) *
    i32(w[.., lane, j])`` (uint8 x, int8 w) made one VNNI instruction; ``func`` itself when
    there is none."""
    found = []

    def visit(loop):
        new = _vnni_store(loop)
        if new is None:
            return loop
        found.append(new)
        return new

    body = tvm_ffi.structural_map(func.body, [(tirx.For, visit)])
    return func.with_body(body).with_attr(USES_VNNI, True) if found else func


def _vnni_store(loop) -> tirx.Stmt | None:
    inner = loop.body
    if not (isinstance(inner, tirx.For) and isinstance(inner.body, SBlockRealize)
            and _extent(loop) == LANES and _extent(inner) == DEPTH):
        return None
    realize = inner.body
    block = realize.block
    if not _true(realize.predicate) or block.init is not None:
        return None
    store = block.body
    if not isinstance(store, tirx.stmt.BufferStore) or str(store.buffer.dtype) != "int32":
        return None
    loads = _products(store)
    if loads is None:
        return None
    x, w = loads
    if str(x.source.dtype) != "uint8" or str(w.source.dtype) != "int8":
        return None
    binding = list(zip([iv.var for iv in block.iter_vars], realize.iter_values))
    lane, j = loop.loop_var, inner.loop_var

    def at(indices, lane_at, j_at):
        fix = binding + [(lane, lane_at), (j, j_at)]
        return [_substitute(_substitute(i, binding), fix) for i in indices]

    zero = tirx.const(0, "int32")
    one = tirx.const(1, "int32")
    base = {"x": at(x.indices, zero, zero), "w": at(w.indices, zero, zero),
            "c": at(store.indices, zero, zero)}
    # the accesses must be: x contiguous in j, the same for every lane; w[.., lane, j] with
    # j its last dim of 4 (so lane-major, 64 contiguous bytes); acc contiguous in the lane
    steps = {
        "x": (at(x.indices, one, zero), at(x.indices, zero, one), [0], [1]),
        "w": (at(w.indices, one, zero), at(w.indices, zero, one), [1, 0], [0, 1]),
        "c": (at(store.indices, one, zero), at(store.indices, zero, one), [1], [0]),
    }
    same = Analyzer().can_prove_equal
    for key, (by_lane, by_j, lane_step, j_step) in steps.items():
        b = base[key]
        tail = len(lane_step)
        for moved, want in ((by_lane, lane_step), (by_j, j_step)):
            if not all(same(m, o) for m, o in zip(moved[:-tail], b[:-tail])):
                return None
            if not all(same(m - o, s) for m, o, s in zip(moved[-tail:], b[-tail:], want)):
                return None
    if int(w.source.shape[-1]) != DEPTH:
        return None
    simplify = Analyzer().simplify
    xi, wi, ci = ([simplify(i) for i in base[key]] for key in ("x", "w", "c"))
    xi[-1] = tirx.Ramp(xi[-1], 1, DEPTH)
    wi[-1] = tirx.Ramp(wi[-1], 1, LANES * DEPTH)
    ci[-1] = tirx.Ramp(ci[-1], 1, LANES)
    quad = tirx.reinterpret("int32", tirx.BufferLoad(x.source, xi))
    a = tirx.reinterpret("int8x64", tirx.Broadcast(quad, LANES))
    acc = tirx.BufferLoad(store.buffer, ci)
    dot = tirx.call_llvm_pure_intrin("int32x16", VNNI, acc, a,
                                     tirx.BufferLoad(w.source, wi))
    return tirx.BufferStore(store.buffer, dot, ci)


def _products(store):
    """The two loads of ``c[..] = c[..] + cast(x[..]) * cast(w[..])``, else None."""
    value = store.value
    if not isinstance(value, tirx.Add) or not isinstance(value.b, tirx.Mul):
        return None
    loads = []
    for factor in (value.b.a, value.b.b):
        if not isinstance(factor, tirx.Cast) or \
                not isinstance(factor.value, tvm.ir.expr.TensorLoad):
            return None
        loads.append(factor.value)
    acc = value.a
    if not (isinstance(acc, tvm.ir.expr.TensorLoad) and acc.source.same_as(store.buffer)):
        return None
    return tuple(loads)


def _extent(loop) -> int | None:
    return int(loop.extent.value) if isinstance(loop.extent, tirx.IntImm) else None


def _true(predicate) -> bool:
    return isinstance(predicate, tirx.IntImm) and bool(predicate.value)


def _substitute(expr, pairs):
    def swap(v):
        return next((e for w, e in pairs if w.same_as(v)), v)

    return tvm_ffi.structural_map(expr, [(tvm.ir.expr.Var, swap)])


# -- a CPU without VNNI -----------------------------------------------------------------------

def without_vnni(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each VNNI instruction written as the vector operations it stands for
    (four byte shuffles of each operand, widened, multiplied and added): the kernel runs on
    any CPU, at the plain integer products' speed."""

    def spell(call):
        if not _is_vnni(call):
            return call
        acc, a, b = call.args[-3:]
        a = tirx.reinterpret("uint8x64", a)
        total = acc
        for j in range(DEPTH):
            pick = [tirx.const(DEPTH * i + j, "int32") for i in range(LANES)]
            aj = tirx.Cast("int32x16", tirx.Shuffle([a], pick))
            bj = tirx.Cast("int32x16", tirx.Shuffle([b], pick))
            total = total + aj * bj
        return total

    body = tvm_ffi.structural_map(func.body, [(tvm.ir.expr.Call, spell)])
    return func.with_body(body).without_attr(USES_VNNI)


def _is_vnni(call) -> bool:
    if getattr(call.op, "name", None) != "tirx.call_llvm_pure_intrin" or not call.args:
        return False
    first = call.args[0]
    return isinstance(first, tirx.IntImm) and first.value == _vnni_id()


def _vnni_id() -> int:
    """LLVM's number for the intrinsic, as the call holds it (the text form names it)."""
    return int(tirx.call_llvm_pure_intrin("int32x16", VNNI).args[0].value)

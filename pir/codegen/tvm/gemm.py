"""Matmuls by weights as TVM kernels: packed weights, a register-tiled schedule, and
the elementwise epilogue (bias, activation) fused into the write-back of each tile.

A ``prim.dot_general`` whose right operand is a 2-d float32 constant (a layer's weights) and
that contracts the last dim of its left operand is a GEMM: ``[..., K] x [K, N]``.  Codegen
turns it, with the elementwise group ``fuse`` marked as its epilogue (``epilogue_of``), into
a ``fusion.group`` of kind ``matmul`` whose region says exactly what the kernel computes::

    %wp = builtin.constant : tensor<N/BN x K x BN xf32>       (the weights, packed once)
    %d  = prim.dot_general(%x, %wp) {contracting: x[-1], wp[1]} : tensor<... x N/BN x BN>
    %c  = prim.reshape(%d) : tensor<... x N>
    ... the epilogue's ops on %c ...

Packing puts each panel of BN output columns in one contiguous ``K x BN`` slab, so the inner
loop streams it with no stride.  The schedule (pir.codegen.tvm.gemm_schedule) computes an
``MI x BN`` tile of the output in registers (``MI`` rows of two vectors each, sized for the
target CPU: pir.codegen.tvm.target), loops over K with broadcast-FMA, and writes the tile
back through the epilogue while it is still in registers.  On an AVX-512 machine it runs a
[128, 768] x [768, 3072] float32 product at ONNX Runtime's MLAS speed (bench/kernels.py),
about 2x numpy's OpenBLAS.

A computed right operand (a function that takes its weights as inputs: a derivative, a
training step) is packed by the kernel itself: the region holds the reshape and transpose
(after a transpose of ``[N, K]`` weights) that make the panels, as a stage (``*_wpack``) the
schedule computes into a buffer before the GEMM, K x N copies against M x K x N products.

The region is ordinary prim IR: the reference runtime runs it, and ``pir diff`` reads it.

A product whose right operand is neither (attention's batched ``Q . K^T``, symbolic sizes)
is a ``matmul`` group too, its region the product and its epilogue as they were; the kernel
packs and pads the right operand itself (pir.codegen.tvm.bmm).
"""

from __future__ import annotations

import numpy as np

from tvm import te

from pir.codegen.tvm.bmm import batched_compute, why_not_batched
from pir.codegen.tvm.dot4 import dot4_offset, pack_dot4
from pir.codegen.tvm.int_range import exact_dtype
from pir.codegen.tvm.lower import RULES, tvm_dtype
from pir.codegen.tvm.target import CpuTarget
from pir.codegen.tvm.weights import drop_if_dead, known_weights, narrowest
from pir.ir import dimexpr
from pir.ir.core import Block, Operation, Region, Value
from pir.ir.dialects.builtin import ConstantOp, enclosing_module, make_constant
from pir.ir.dialects.fusion import GroupOp, YieldOp
from pir.ir.types import DType, TensorType

__all__ = ["form_matmul_groups", "MATMUL", "why_not_compiled", "form_group"]

MATMUL = "matmul"

def padded_width(n: int) -> int:
    """``n`` output columns (or channels) rounded up to whole 16-wide vectors: a kernel pads
    the weights with zeros to that many, computes them, and slices the extra ones off."""
    return -(-n // 16) * 16


# -- the lowering rule -----------------------------------------------------------------------

def _dot_general(op, ins, ctx, name):
    """out[batch, lhs free, rhs free] = sum over the contracted pairs of lhs * rhs (a product
    of two computed operands: pir.codegen.tvm.bmm's padded form)."""
    if _batched(op, ctx.cpu):
        return batched_compute(op, *ins, ctx, name)
    lhs, rhs = ins
    lb, rb = list(op.lhs_batching_dimensions), list(op.rhs_batching_dimensions)
    lc, rc = list(op.lhs_contracting_dimensions), list(op.rhs_contracting_dimensions)
    ls = ctx.shape(op.operands[0].type)
    lfree = [i for i in range(len(ls)) if i not in lb + lc]
    rfree = [i for i in range(len(op.operands[1].type.shape)) if i not in rb + rc]
    ks = [te.reduce_axis((0, ls[a]), name=f"{name}_k{j}") for j, a in enumerate(lc)]
    out_dtype = tvm_dtype(op.results[0].type.dtype)

    def index(*i):
        li, ri = [None] * len(ls), [None] * (len(rb) + len(rc) + len(rfree))
        for j, (a, b) in enumerate(zip(lb, rb)):
            li[a] = ri[b] = i[j]
        for j, a in enumerate(lfree):
            li[a] = i[len(lb) + j]
        for j, b in enumerate(rfree):
            ri[b] = i[len(lb) + len(lfree) + j]
        for k, a, b in zip(ks, lc, rc):
            li[a] = ri[b] = k.var
        prod = lhs(*li).astype(out_dtype) * rhs(*ri).astype(out_dtype)
        return te.sum(prod, axis=ks) if ks else prod

    return te.compute(ctx.shape(op.results[0].type), index, name=name)


RULES["prim.dot_general"] = _dot_general


# -- forming the groups ----------------------------------------------------------------------

def _gemm_weights(op: Operation, cpu: CpuTarget) -> np.ndarray | Value | None:
    """The right operand of a dot_general this module compiles, as ``[K, N]`` weights: an
    array when codegen knows it (a constant, or a value computed from constants only,
    pir.codegen.tvm.weights; its free dims flattened into N), packed at codegen; the value
    itself when it is a computed float32 ``[K, N]`` matrix (packed by index arithmetic in the
    kernel: each panel row is BN contiguous floats); else None."""
    if op.name != "prim.dot_general" or op.lhs_batching_dimensions:
        return None
    lhs, rhs = op.operands
    lt, rt = lhs.type, rhs.type
    if not (isinstance(lt, TensorType) and isinstance(rt, TensorType) and lt.shape
            and rt.shape is not None and len(rt.shape) >= 2):
        return None
    if not _compiled_types(lt.dtype, rt.dtype, op.results[0].type.dtype):
        return None
    if list(op.lhs_contracting_dimensions) != [len(lt.shape) - 1] \
            or len(op.rhs_contracting_dimensions) != 1:
        return None
    (rc,) = op.rhs_contracting_dimensions
    w = known_weights(rhs)
    if w is None:
        # a computed [K, N] or [N, K] matrix (the weights of a function that takes them as
        # inputs, as a derivative or a training step does).  A short K is taken too: the
        # product of a PINN's [N, 2] input with its first layer is then computed in the
        # kernel of its tanh epilogue, not written to memory by numpy and read back (the
        # residual went from 0.465-0.471 to 0.441-0.453 ms, bench/autodiff.py's network)
        if len(rt.shape) != 2 or rt.dtype != DType.F32:
            return None
        k, n = rt.shape if rc == 0 else rt.shape[::-1]
        ok = isinstance(k, int) and isinstance(n, int) and cpu.panel(n) is not None and k >= 2
        return rhs if ok else None
    w = np.moveaxis(w, rc, 0)  # [N, K] weights (ONNX Gemm with transB) become [K, N]
    w = w.reshape(w.shape[0], -1)
    if (w.shape[1] < 16 or w.shape[0] < 16) and w.dtype.kind == "f":
        # (an N that 16 does not divide is padded, at most doubled: _pack).  An integer
        # product has no BLAS to go to: numpy's integer matmul is a plain loop
        return None
    return w if w.size else None


def _compiled_types(lhs: DType, rhs: DType, out: DType) -> bool:
    """float32 products, and integer products that accumulate in int32 (a quantized
    model's centred operands: MatMulInteger)."""
    if lhs == rhs == out == DType.F32:
        return True
    return lhs.is_int and rhs.is_int and out == DType.I32


#: From this many columns on, weights are padded to whole 32-wide panels, not 16.
WIDE_PANEL_COLUMNS = 256


def _pack(w: np.ndarray, cpu: CpuTarget) -> np.ndarray:
    """[K, N] weights as [N/BN, K, BN] panels; columns that 16 does not divide are padded
    with zeros, computed and sliced off.  From WIDE_PANEL_COLUMNS on they are padded to
    whole panels of two vectors (a classifier's 1000 outputs: 1024, not 1008):
    each k step then reads 128 bytes of the panel, not 64, and over a batch of one, whose
    weights stream from memory once, ResNet-50's classifier took 0.55-0.67 ms against
    0.76-0.78 (ONNX Runtime: 0.32-0.39) for 1.6% more products."""
    k, n = w.shape
    wide = max(cpu.panel_width, 16)
    n_pad = padded_width(n) if n < WIDE_PANEL_COLUMNS else -(-n // wide) * wide
    if n_pad != n:
        w = np.concatenate([w, np.zeros((k, n_pad - n), w.dtype)], axis=1)
    bn = cpu.panel(n_pad)
    return np.ascontiguousarray(w.reshape(k, n_pad // bn, bn).transpose(1, 0, 2))


def _epilogue(dot: Operation) -> GroupOp | None:
    """The elementwise group that is the only user of ``dot``'s result, when every op in it
    has a lowering rule."""
    users = {u.op for u in dot.results[0].uses}
    if len(users) != 1:
        return None
    (g,) = users
    if not isinstance(g, GroupOp) or g.kind != "elementwise" or g.parent is not dot.parent:
        return None
    if any(op.name not in RULES for op in g.body.block.ops[:-1]
           if not isinstance(op, ConstantOp)):
        return None
    return g


def _batched(op: Operation, cpu: CpuTarget) -> bool:
    """A product of two computed operands that pir.codegen.tvm.bmm computes: one free dim on
    each side (the GEMM path's packed weights have two, ``[N/BN, K, BN]``).  Constant
    weights are the GEMM path's to take or leave to BLAS."""
    return op.name == "prim.dot_general" and _gemm_weights(op, cpu) is None \
        and not isinstance(getattr(op.operands[1], "op", None), ConstantOp) \
        and why_not_batched(op) is None


def form_matmul_groups(block: Block, cpu: CpuTarget) -> int:
    """Replace each GEMM of ``block`` (and its epilogue group) by one ``matmul`` group, its
    weights packed in ``cpu``'s panels, and each other product pir.codegen.tvm.bmm computes
    too."""
    count = 0
    for op in list(block.ops):
        w = _gemm_weights(op, cpu)
        if w is not None:
            _form(op, w, _epilogue(op), cpu)
            count += 1
        elif _batched(op, cpu):
            _form_batched(op)
            count += 1
    return count


def _form_batched(dot: Operation) -> GroupOp:
    """``dot`` (two computed operands) and its epilogue as one ``matmul`` group: the product
    as it is, both operands block arguments."""
    from pir.ir.dialects.prim.linalg import DotGeneralOp

    attrs = {k: dot.attributes[k] for k in dot.attributes}

    def core(body: Block, x_arg: Value, y_arg: Value) -> Value:
        return body.append(DotGeneralOp.build(
            x_arg, y_arg, result_types=[dot.results[0].type], loc=dot.loc,
            result_names=[dot.results[0].name or "mm"], **attrs)).results[0]

    return form_group(dot, core, _epilogue(dot), MATMUL, inputs=[dot.operands[1]])


def why_not_compiled(op: Operation) -> str:
    """Why a product codegen left outside the kernels stays a library call."""
    why = why_not_batched(op)
    if why is None and isinstance(getattr(op.operands[1], "op", None), ConstantOp):
        lt, rt = op.operands[0].type, op.operands[1].type
        if op.lhs_batching_dimensions or len(rt.shape) != 2:
            return "constant weights with batch dims stay a BLAS call"
        if list(op.lhs_contracting_dimensions) != [len(lt.shape) - 1]:
            return "constant weights contracted with other than the last dim of the input"
        return "constant weights fewer than 16 wide or deep stay a BLAS call"
    return why or "not compiled"


def _form(dot: Operation, w: np.ndarray | Value, epi: GroupOp | None,
          cpu: CpuTarget) -> GroupOp:
    from pir.ir.dialects.prim.linalg import DotGeneralOp
    from pir.ir.dialects.prim.shape import ReshapeOp, SliceOp, TransposeOp

    x = dot.operands[0]
    out_t: TensorType = dot.results[0].type
    name = dot.results[0].name or "mm"
    computed = isinstance(w, Value)

    def core(body: Block, x_arg: Value, *w_arg: Value) -> Value:
        if computed:
            # ([N, K] ->) [K, N] -> [K, N/BN, BN] -> [N/BN, K, BN]: packed in the kernel, into
            # a buffer of its own (the ``_wpack`` stage, see schedule_matmul) before the GEMM
            dt, wv = w.type.dtype, w_arg[0]
            if dot.rhs_contracting_dimensions[0] == 1:
                n, k = w.type.shape
                wv = body.append(TransposeOp.build(
                    wv, permutation=[1, 0], result_types=[TensorType(dt, (k, n))],
                    loc=dot.loc, result_names=[f"{name}.wt"])).results[0]
            else:
                k, n = w.type.shape
            bn = cpu.panel(n)
            split = body.append(ReshapeOp.build(
                wv, result_types=[TensorType(dt, (k, n // bn, bn))], loc=dot.loc,
                result_names=[f"{name}.panels"]))
            packed_v = body.append(TransposeOp.build(
                split.results[0], permutation=[1, 0, 2], loc=dot.loc,
                result_types=[TensorType(dt, (n // bn, k, bn))],
                result_names=[f"{name}.wpack"])).results[0]
            packed_shape = (n // bn, k, bn)
        elif lo is not None:
            panels = _pack(w, cpu)
            packed_shape = panels.shape
            packed_v = body.append(make_constant(enclosing_module(dot), pack_dot4(panels),
                                                 f"{name}.packed", dot.loc)).results[0]
        else:
            packed = _pack(narrowest(w), cpu)
            packed_v = body.append(make_constant(enclosing_module(dot), packed,
                                                 f"{name}.packed", dot.loc)).results[0]
            packed_shape = packed.shape
        if packed_v.type.dtype != compute:
            # narrowed integer weights, widened as the GEMM loads them (the cast is inlined)
            packed_v = _cast(body, packed_v, compute, f"{name}.widened", dot.loc)
        lead = tuple(x.type.shape[:-1])  # the input's free dims; N follows them
        rows = tuple(d for d in lead if d != 1) or lead[-1:]
        if lo is not None and sum(not isinstance(d, int) for d in rows) > 1:
            # several symbolic row dims ([seq, batch, K]: a recurrent layer's input
            # projection) are one: the tile's rows run over all of them, not over the last
            # alone (a batch of 1 padded to 8, the weights read again for each step: a
            # quantized LSTM's [24, 1, 512] x [512, 2048] took 1.4 ms, 18 GMAC/s, and
            # 0.13 ms so).  Only where the rows go through the uint8 stage, which takes
            # the reshape's index arithmetic: inlined into a float32 GEMM's loads it cost
            # GPT-2's products 6x (the schedule no longer fits)
            rows = (dimexpr.product(rows),)
        if rows != lead:
            # unit dims dropped: the tile's rows are then a sequence's steps, not the one
            # batch row of a [T, 1, K] input (which read all the weights again at each step)
            x_arg = body.append(ReshapeOp.build(
                x_arg, result_types=[x.type.with_shape([*rows, x.type.shape[-1]])],
                loc=dot.loc, result_names=[f"{name}.rows"])).results[0]
            lead = rows
        d_t = TensorType(compute, lead + packed_shape[::2])
        if lo is not None:
            d = _dot4_product(body, x_arg, packed_v, lead, d_t, w, lo, name, dot)
        else:
            if x_arg.type.dtype != compute:
                # (a stage of its own, ``*_xf``: converted once, not at every broadcast load)
                x_arg = _cast(body, x_arg, compute, f"{name}.xf", dot.loc)
            d = body.append(DotGeneralOp.build(
                x_arg, packed_v, result_types=[d_t], loc=dot.loc,
                lhs_contracting_dimensions=[len(lead)], rhs_contracting_dimensions=[1],
                result_names=[f"{name}.tiles"])).results[0]
        n_pad = packed_shape[0] * packed_shape[2]
        n = n_pad if computed else w.shape[1]
        c_t = out_t.with_dtype(compute)
        steps = []  # (op class, attributes, result type, name) from the tiles to the result
        if n_pad != n:
            steps += [(ReshapeOp, {}, c_t.with_shape([*lead, n_pad]), f"{name}.pad"),
                      (SliceOp, {"start_indices": [0], "limit_indices": [n],
                                 "axes": [len(lead)]}, c_t.with_shape([*lead, n]),
                       f"{name}.cut")]
        if not steps or steps[-1][2] != c_t:
            # (several free dims of the weights: [2, K, 4H], both directions of an LSTM)
            steps.append((ReshapeOp, {}, c_t, f"{name}.split"))
        for i, (cls, attrs, t, step_name) in enumerate(steps):
            last = i == len(steps) - 1 and compute == out_t.dtype
            d = body.append(cls.build(d, result_types=[t], loc=dot.loc,
                                      result_names=[name if last else step_name],
                                      **attrs)).results[0]
        if compute != out_t.dtype:
            d = _cast(body, d, out_t.dtype, name, dot.loc)  # exact: float32_exact
        return d

    lo = dot4_offset(x, w) if cpu.vnni and not computed else None
    compute = out_t.dtype if computed else DType.I32 if lo is not None else \
        exact_dtype(x, w, out_t.dtype)
    return form_group(dot, core, epi, MATMUL, inputs=[w] if computed else [])


def _dot4_product(body: Block, x: Value, packed: Value, lead: tuple, d_t: TensorType,
                  w: np.ndarray, lo: int, name: str, dot: Operation) -> Value:
    """``x [*lead, K] x w`` as uint8 x int8 quads (pir.codegen.tvm.dot4): ``x - lo`` made
    uint8 ``[*lead, K/4, 4]`` (a stage of its own, ``*_xu8``), its int32 product with the
    packed weights ``[N/BN, K/4, BN, 4]`` (widened from int8), plus ``lo * colsum(w)`` per
    column."""
    from pir.ir.dialects.prim.elementwise import AddOp, SubOp
    from pir.ir.dialects.prim.linalg import DotGeneralOp
    from pir.ir.dialects.prim.shape import BroadcastInDimOp, ReshapeOp

    module, loc = enclosing_module(dot), dot.loc
    k = x.type.shape[-1]
    if lo:
        c = body.append(make_constant(module, np.array(lo, x.type.dtype.numpy),
                                      f"{name}.lo", loc)).results[0]
        c = body.append(BroadcastInDimOp.build(
            c, broadcast_dimensions=[], result_types=[x.type], loc=loc,
            result_names=[f"{name}.lo_b"])).results[0]
        x = body.append(SubOp.build(x, c, loc=loc, result_names=[f"{name}.shifted"])).results[0]
    quads = x.type.with_shape([*lead, k // 4, 4])
    x = body.append(ReshapeOp.build(x, result_types=[quads], loc=loc,
                                    result_names=[f"{name}.quads"])).results[0]
    x = _cast(body, x, DType.U8, f"{name}.xu8", loc)
    # (widened as the product loads it: the casts are inlined into the GEMM's loads, which
    # dot4.use_vnni reads as uint8 x int8)
    x = _cast(body, x, DType.I32, f"{name}.xi", loc)
    d = body.append(DotGeneralOp.build(
        x, packed, result_types=[d_t], loc=loc,
        lhs_contracting_dimensions=[len(lead), len(lead) + 1],
        rhs_contracting_dimensions=[1, 3], result_names=[f"{name}.tiles"])).results[0]
    if not lo:
        return d
    nb, bn = d_t.shape[-2:]
    sums = w.astype(np.int64).sum(axis=0) * lo
    corr = np.zeros(nb * bn, np.int32)
    corr[:sums.size] = sums
    c = body.append(make_constant(module, corr.reshape(nb, bn), f"{name}.colsums",
                                  loc)).results[0]
    c = body.append(BroadcastInDimOp.build(
        c, broadcast_dimensions=[len(lead), len(lead) + 1], result_types=[d_t], loc=loc,
        result_names=[f"{name}.colsums_b"])).results[0]
    return body.append(AddOp.build(d, c, loc=loc, result_names=[f"{name}.sums"])).results[0]


def _cast(body: Block, v: Value, dtype: DType, name: str, loc) -> Value:
    from pir.ir.dialects.prim.elementwise import CastOp

    return body.append(CastOp.build(v, dtype=dtype, loc=loc, result_names=[name])).results[0]


def form_group(anchor: Operation, core, epi: GroupOp | None, kind: str,
               inputs: list[Value] = ()) -> GroupOp:
    """Replace ``anchor`` (a library op whose operand 0 is its activation input and operand 1
    its weights) and its epilogue group ``epi`` by one group of ``kind``:
    ``core(body, x, *inputs)`` appends the ops that compute the anchor's result from the
    block arguments of ``x`` and of the other ``inputs`` it reads (computed weights), then
    the epilogue's ops move in after them."""
    x = anchor.operands[0]
    result = anchor.results[0]
    extra = [v for v in epi.operands if v is not result] if epi is not None else []
    extra = list(inputs) + [v for v in extra if v not in inputs]
    body = Block([x.type] + [v.type for v in extra], [x.name] + [v.name for v in extra])
    c = core(body, body.args[0], *body.args[1:1 + len(inputs)])
    if epi is None:
        body.append(YieldOp([c]))
        results, last = [result], anchor
    else:
        eb = epi.body.block
        arg_of = dict(zip(extra, body.args[1:]))
        arg_map: dict[Value, Value] = {}
        for a, v in zip(eb.args, epi.operands):
            arg_map[a] = c if v is result else arg_of[v]
        for inner in list(eb.ops):
            eb.remove(inner)
            inner.operands = [arg_map.get(v, v) for v in inner.operands]
            body.append(inner)
        results, last = list(epi.results), epi
    group = GroupOp([x] + extra, [r.type for r in results], {"kind": kind}, [Region([body])],
                    loc=anchor.loc, result_names=[r.name for r in results])
    parent = last.parent
    parent.insert(parent.index(last), group)
    for old, new in zip(results, group.results):
        old.replace_all_uses_with(new)
    if epi is not None:
        parent.remove(epi)
    weights = getattr(anchor.operands[1], "op", None)
    parent.remove(anchor)
    drop_if_dead(weights)  # the unpacked weights (a constant, or a group over constants)
    return group

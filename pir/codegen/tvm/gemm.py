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
loop streams it with no stride.  The schedule (:func:`schedule_matmul`) computes an
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

from tvm import te, tirx
from tvm.s_tir import Schedule, ScheduleError

from pir.codegen.tvm.bmm import batched_compute, why_not_batched
from pir.codegen.tvm.fast_schedule import FastSchedule
from pir.codegen.tvm.int_range import float32_exact
from pir.codegen.tvm.lower import RULES, LoweredKernel, tvm_dtype
from pir.codegen.tvm.target import CpuTarget
from pir.codegen.tvm.weights import drop_if_dead, known_weights, narrowest
from pir.ir.core import Block, Operation, Region, Value
from pir.ir.dialects.builtin import ConstantOp, constant_value, enclosing_module, make_constant
from pir.ir.dialects.fusion import GroupOp, YieldOp
from pir.ir.types import DType, TensorType

__all__ = ["form_matmul_groups", "schedule_matmul", "MATMUL", "why_not_compiled"]

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
        if rows != lead:
            # unit dims dropped: the tile's rows are then a sequence's steps, not the one
            # batch row of a [T, 1, K] input (which read all the weights again at each step)
            x_arg = body.append(ReshapeOp.build(
                x_arg, result_types=[x.type.with_shape([*rows, x.type.shape[-1]])],
                loc=dot.loc, result_names=[f"{name}.rows"])).results[0]
            lead = rows
        if x_arg.type.dtype != compute:
            # (a stage of its own, ``*_xf``: converted once, not at every broadcast load)
            x_arg = _cast(body, x_arg, compute, f"{name}.xf", dot.loc)
        d_t = TensorType(compute, lead + packed_shape[::2])
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

    compute = out_t.dtype
    if not computed and out_t.dtype != DType.F32 and float32_exact(x, w):
        compute = DType.F32
    weights = getattr(dot.operands[1], "op", None)
    group = form_group(dot, core, epi, MATMUL, inputs=[w] if computed else [])
    if not computed:
        drop_if_dead(weights)
    return group


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
    if isinstance(weights, ConstantOp) and not weights.results[0].uses:
        weights.parent.remove(weights)  # the unpacked weights, now dead
    return group


# -- the schedule ----------------------------------------------------------------------------

def _tile_rows(extent, rows: int, few: bool = False) -> int:
    """Rows per register tile: ``rows`` (the target's), or the largest of ``rows - 1`` down
    to 4 that divides a static row count (a 7x7 or 14x14 feature map), so that no row needs
    padding.  With ``few`` (a matmul's rows, not a convolution's positions, whose window
    loads TVM then fails to inline) a static count below ``rows`` is its own tile (a
    recurrent step's batch of one: 8 rows would be 7 of padding)."""
    if isinstance(extent, tirx.IntImm):
        if few and extent.value < rows:
            return max(int(extent.value), 1)
        for mi in range(rows, 3, -1):
            if extent.value % mi == 0:
                return mi
    return rows


#: The suffix of a matmul kernel's one-row variant (see ``one_row_dim``).
ROWS1 = "_rows1"


def one_row_dim(block) -> object | None:
    """The row dim of a matmul group's one product when it is symbolic: such a kernel also
    gets a variant of one-row tiles (``ROWS1``), which a run takes when the rows are fewer
    than the target's ``small_rows`` (a batch of one: padded to a full tile, 7 of 8 rows
    would be padding).  None for a static row count or another kind of group."""
    dots = [op for op in block.ops if op.name == "prim.dot_general"]
    if len(dots) != 1:
        return None
    # the rows are the lhs's dim before its contracted last one ([..., M, K]; the result is
    # [..., M, panels, BN] against packed weights)
    shape = getattr(dots[0].operands[0].type, "shape", None)
    if not shape or len(shape) < 2 or \
            list(dots[0].lhs_contracting_dimensions) != [len(shape) - 1]:
        return None
    rows = shape[-2]
    return None if rows is None or isinstance(rows, int) else rows


def schedule_matmul(kernel: LoweredKernel, split_cols: bool = False,
                    lanes: int | None = None, tile_rows: int | None = None) -> Schedule | None:
    """The register-tiled schedule of a ``matmul`` or ``conv`` group's kernel, its tile
    sized for the kernel's target (``kernel.cpu``); None if it does not apply (the caller
    then uses the generic schedule).

    The GEMM block computes ``[outer..., rows, cols]`` over one or more reduce loops: for a
    matmul the columns come split as ``[panels, BN]`` (the packed weights' layout), for a
    convolution (``[N, P, O]`` over C, R, S, see pir.codegen.tvm.conv: ``split_cols``) they
    are split here.  ``tile_rows``: the tile's rows, instead of the target's (``ROWS1``: 1).
    A convolution's zero-padded input (``*_xpad``) is computed into a buffer before the GEMM;
    its window loads (``*_col``) are inlined into the GEMM.

    ``lanes``: write the tile back in vectors of that many columns (a result or residual in
    channel blocks of 16, pir.codegen.tvm.nchwc: a 32-wide vector would span two blocks,
    whose addresses are not one ramp, and TVM would write it a lane at a time)."""
    import tvm

    cpu = kernel.cpu
    sch = FastSchedule(tvm.IRModule({kernel.name: kernel.func}))
    sch.work_on(kernel.name)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    gemm = [b for b in blocks if any(iv.iter_type == tirx.IterVar.CommReduce
                                     for iv in sch.get(b).iter_vars)]
    if len(gemm) != 1:
        return None
    (dot,) = gemm
    dot_name = sch.get(dot).name_hint
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks("root")}
    col = None
    for b in reversed(blocks):  # the reshape, the epilogue's inner values, a 1x1 im2col
        nm = sch.get(b).name_hint
        if nm != dot_name and nm not in outputs:
            if nm.endswith(("_col", "_xpad")) and not _pure_load(sch, b):
                col = b
                continue
            if nm.endswith(("_wpack", "_xf")):
                continue  # computed weights packed, integer inputs converted, once a call
            try:
                sch.compute_inline(b)
            except ScheduleError:
                pass
    n_reduce = sum(iv.iter_type == tirx.IterVar.CommReduce for iv in sch.get(dot).iter_vars)
    loops = sch.get_loops(dot)
    ks = loops[-n_reduce:]
    try:
        if split_cols:
            *outer, rows, o = loops[:-n_reduce]
            panels, cols = sch.split(o, [None, cpu.panel(int(sch.get(o).extent))])
        else:
            *outer, rows, panels, cols = loops[:-n_reduce]
    except (ScheduleError, TypeError, ValueError):
        return None
    extent = sch.get(rows).extent
    mi_rows = tile_rows or _tile_rows(extent, cpu.gemm_rows, few=not split_cols)
    pads = []
    try:
        if not isinstance(extent, tirx.IntImm) and mi_rows > 1:
            # A symbolic row count (a batch or sequence): pad the rows to a multiple of the
            # tile (TVM's pad_einsum: the input rows are copied into a zero-padded buffer,
            # once, and the output copied out), so the accumulator is a
            # fixed-size tile that stays in registers.  With a predicate instead, TVM cannot
            # bound the accumulator and sizes it for the whole output.  A static count the
            # tile does not divide (a convolution's 9 x 9 positions) takes the predicate: TVM
            # bounds that accumulator, and pad_einsum would refuse a convolution anyway (its
            # window and packed-weight indices are not plain iterators), which left it on the
            # generic schedule, 100x slower.
            known = {sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))}
            sch.pad_einsum(dot, [1] * len(outer) + [mi_rows, 1, 1] + [1] * n_reduce)
            pads = [b for b in sch.get_producers(dot) if sch.get(b).name_hint not in known]
            for b in sch.get_consumers(dot):
                if sch.get(b).name_hint not in known:
                    sch.compute_inline(b)  # the copy-out: consumers read the padded result
            loops = sch.get_loops(dot)
            ks = loops[-n_reduce:]
            *outer, rows, panels, cols = loops[:-n_reduce]
        # Tiles of mi_rows rows of the last row dim.  Fusing all row dims first would give
        # longer loops, but with two symbolic dims (batch x seq) TVM could not bound the
        # accumulator either.
        mo, mi = sch.split(rows, [None, mi_rows])
        chunk = _panel_chunk(sch, panels, ks, cols, cpu.min_chunks)
        if chunk > 1:
            # Panels in chunks that stay in L2 while every row tile passes over them: the
            # output rows are then written (and a residual read) a chunk's width at a time,
            # not one panel's 128 bytes in each of all the rows, which the hardware streams
            # far better from memory (ResNet's 56x56 1x1 convolutions, cold caches: 1.0 ->
            # 0.5 ms; warm, the same)
            po, tile = sch.split(panels, [None, chunk])
            sch.reorder(po, *outer, mo, tile, *ks, mi, cols)
        else:
            po, tile = panels, mo
            sch.reorder(panels, *outer, mo, *ks, mi, cols)
        # vectorize and parallel before decompose_reduction: TVM checks that the loops hold a
        # complete or reduction block, which the decomposed update block no longer is
        sch.vectorize(cols)
        sch.unroll(mi)
        sch.parallel(po)
        acc = sch.cache_write(dot, 0, "local")
        sch.reverse_compute_at(acc, tile)
        init = sch.decompose_reduction(dot, ks[0])
        sch.vectorize(sch.get_loops(init)[-1])
        # (the padded copy of the rows is made once, before the parallel loop: per tile, a
        # batch of one copied 8 x K rows for each of a classifier's 63 panels, and took
        # 0.40 against 0.33 ms; 125 rows x 768 x 3072 measured the same either way)
    except ScheduleError:
        return None
    if col is not None:
        _schedule_col(sch, col)
    # The epilogue: into the write-back of the tile when it is the only reader (one output
    # computed from the tile in registers), else right after the tile, while it is in cache.
    written = [b for b in sch.get_child_blocks(sch.get_sblock("root"))
               if sch.get(b).name_hint in outputs and sch.get(b).name_hint != dot_name]
    vector_blocks = [acc, *pads]
    if isinstance(extent, tirx.IntImm) and extent.value % mi_rows != 0:
        # The last row tile is cut by a predicate.  TVM's reverse_compute_inline would keep
        # only the consumer's own predicate (a slice's `col < 24`) and drop the rows', and
        # reverse_compute_at can make loops of a varying extent, which it cannot vectorize:
        # the epilogue stays a pass of its own over the product.
        written = []
    if len(written) == 1:
        try:
            sch.reverse_compute_inline(written[0])
            written = []
        except ScheduleError:
            pass
    for b in written:
        saved = sch.copy()
        try:
            sch.reverse_compute_at(b, tile)
        except ScheduleError:
            continue
        if _iterations_under(sch, b, tile) > mi_rows * int(sch.get(cols).extent):
            # TVM could not narrow the block to the tile (an epilogue that slices padded
            # columns off): under the parallel panel loop it would write every column and
            # read panels other threads have not computed yet.  It stays a pass of its own.
            sch = saved
            continue
        vector_blocks.append(b)
    for b in vector_blocks:
        try:
            _vectorize(sch, sch.get_loops(b)[-1], lanes)
        except ScheduleError:
            pass
    return sch


def _iterations_under(sch: Schedule, block, loop) -> int:
    """How many times ``block`` runs per iteration of ``loop`` (one of its loops): the
    product of the static extents of its loops inside ``loop`` (a symbolic one counts as
    unbounded)."""
    loops = sch.get_loops(block)
    at = next(i for i, lp in enumerate(loops) if sch.get(lp).same_as(sch.get(loop)))
    n = 1
    for lp in loops[at + 1:]:
        extent = sch.get(lp).extent
        n *= int(extent.value) if isinstance(extent, tirx.IntImm) else 1 << 40
    return n


def _vectorize(sch: Schedule, loop, lanes: int | None) -> None:
    """Vectorise ``loop``, in vectors of ``lanes`` (the pieces unrolled) when it is longer."""
    extent = sch.get(loop).extent
    if lanes and isinstance(extent, tirx.IntImm) and extent.value > lanes \
            and extent.value % lanes == 0:
        outer, loop = sch.split(loop, [None, lanes])
        sch.unroll(outer)
    sch.vectorize(loop)


#: The most bytes of the column operand a chunk of panels may hold (L2 is 1-2 MB a core).
CHUNK_BYTES = 256 << 10


def _panel_chunk(sch: Schedule, panels, ks, cols, min_chunks: int) -> int:
    """How many column panels a row tile passes over before the next row tile: the largest
    divisor of the panel count whose slice of the column operand (reduce extent x panel
    width x 4 bytes each) fits CHUNK_BYTES, leaving at least ``min_chunks`` chunks (the
    target's: one per core at least) to run in parallel; 1 when none does (or an extent is
    symbolic)."""
    extents = [sch.get(loop).extent for loop in (panels, *ks, cols)]
    if not all(isinstance(e, tirx.IntImm) for e in extents):
        return 1
    n, *k, width = (int(e.value) for e in extents)
    panel_bytes = 4 * width * int(np.prod(k, dtype=np.int64))
    best = 1
    for c in range(2, n // min_chunks + 1):
        if n % c == 0 and c * panel_bytes <= CHUNK_BYTES:
            best = c
    return best


def _pure_load(sch: Schedule, block) -> bool:
    value = sch.get(block).body.value
    return type(value).__name__ in ("TensorLoad", "BufferLoad")


def _schedule_col(sch: Schedule, col) -> None:
    """The padded input ``[N, C, H, W]``: parallel over the channels, the columns vectorised
    when there are enough of them."""
    try:
        n, c, *_, x = sch.get_loops(col)
        sch.parallel(sch.fuse(n, c))
    except ScheduleError:
        return
    extent = sch.get(x).extent
    if isinstance(extent, tirx.IntImm) and extent.value % 16 == 0:
        try:
            sch.vectorize(sch.split(x, [None, 16])[1])
        except ScheduleError:
            pass

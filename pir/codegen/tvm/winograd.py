"""3x3 stride-1 convolutions by Winograd's minimal filtering, F(2x2, 3x3).

A 3x3 convolution computes each 2x2 block of outputs from a 4x4 patch of its input with 16
products per channel pair where the direct form takes 36 (Lavin and Gray, "Fast Algorithms
for Convolutional Neural Networks", 2016)::

    V = B^T d B              (the input patch d, transformed: adds and subtracts only)
    U = G g G^T              (the 3x3 filter g, transformed once, at codegen)
    M = sum over channels of U * V      (16 GEMMs: [tiles x C] x [C x O], one per (a, b))
    Y = A^T M A              (the 2x2 outputs: adds and subtracts only)

So the kernel is three stages: the input transform ``*_wino_v`` (``[N, 4, 4, H/2, W/2,
C]`` over the tiles, read from the channel-blocked input, 16 channels to a vector), the 16
GEMMs ``*_wino_m`` (``[N, 4, 4, H/2, W/2, O]``, register-tiled as the matmul schedule
does), and the output transform, inlined with the epilogue into the pass that writes the
result in channel blocks; where U stays in L2, in bands of tile rows that keep V and M in
cache (:func:`band_rows`).  In ResNet-50 (one thread, per call): 64 channels at 56x56 0.95
-> 0.53 ms, 128 at 28x28 0.95 -> 0.52, 256 at 14x14 0.96 -> 0.55, 512 at 7x7 1.10 -> 0.99;
the model 36.5 -> 31.9 ms (A/B in one process, 20 rounds).

The group's region stays exact prim IR: its constant is U (packed as the GEMM reads it),
and two ``dot_general`` ops with the pseudo-inverse of G turn it back into the 3x3 weights
that the ``prim.conv`` after them reads (``G+ U G+^T = g``), so the reference runtime and
``pir diff`` see a plain convolution.  The lowering rule finds U through that chain
(:func:`winograd_source`) and never computes the 3x3 weights.  The float32 rounding of U
and of the way back moves results by about 1e-7 relative.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import te, tirx
from tvm.s_tir import ScheduleError

from pir.codegen.tvm.target import CpuTarget
from pir.ir.core import Block, Operation, Value
from pir.ir.types import TensorType

__all__ = ["applies", "transformed_weights", "append_weights", "winograd_source",
           "winograd_conv", "schedule_winograd", "band_rows", "tile_group", "G", "G_PLUS"]

#: F(2x2, 3x3)'s filter transform (Lavin and Gray); its input transform B^T and output
#: transform A^T are written out in :func:`_input_tap` and :func:`_output_sum`.
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
#: G's left inverse: G+ G = I, so G+ (G g G^T) G+^T = g.
G_PLUS = np.linalg.pinv(G)
# Output channels per packed panel of U: two vectors of the target (CpuTarget.panel_width,
# as the matmul schedule's), 32 with AVX-512; tiles per register tile at most its
# gemm_rows.
#: Fewest 2x2 tiles worth it: the transforms cost a pass each over the input and output,
#: and U is 16/9 the weights' bytes, which a layer over few positions reads from memory
#: every call.  ResNet-50's 7x7 maps (16 tiles, 512 channels, U 16 MB): 1.10 -> 0.99 ms.
MIN_TILES = 16


def applies(op: Operation, cpu: CpuTarget) -> bool:
    """Whether a ``prim.conv`` (one group, static, float32, weights constant) that reads its
    input in channel blocks is a 3x3, stride 1, undilated convolution padded by 1 on every
    side, with output channels whole panels of ``cpu`` (a map of odd size is covered by
    tiles whose last row and column are not written)."""
    xt, kt, yt = op.operands[0].type, op.operands[1].type, op.results[0].type
    if not all(isinstance(t, TensorType) and t.shape is not None and len(t.shape) == 4
               for t in (xt, kt, yt)):
        return False
    if not all(isinstance(d, int) for d in (*xt.shape[1:], *kt.shape, *yt.shape[1:])):
        return False
    o, c, kr, ks = kt.shape
    _, _, h, w = yt.shape
    win = op.window(2)
    return (op.feature_group_count == 1 and (kr, ks) == (3, 3)
            and tuple(win["window_strides"]) == (1, 1)
            and tuple(win["rhs_dilation"]) == (1, 1) and tuple(win["lhs_dilation"]) == (1, 1)
            and tuple(win["padding_low"]) == (1, 1) and tuple(win["padding_high"]) == (1, 1)
            and -(-h // 2) * -(-w // 2) >= MIN_TILES
            and tile_group(-(-w // 2), cpu.gemm_rows) is not None
            and o % cpu.panel_width == 0 and c % 16 == 0)


def tile_group(tw: int, most: int = 8) -> int | None:
    """Tiles per register tile in a row of ``tw`` tiles: the largest of ``most``..4 that
    divides it (a register tile never spans two tile rows: TVM would write it back over the
    bounding box of both); None when none does (a map 2, 6 or 22 wide: its last register
    tile would compute up to 8 tiles for one, and the direct form is faster there)."""
    return next((r for r in range(most, 3, -1) if tw % r == 0), None)


def transformed_weights(w: np.ndarray, panel: int) -> np.ndarray:
    """``[O, C, 3, 3]`` weights as U, packed ``[4, 4, O/P, C, P]`` for ``panel`` P (each
    panel one contiguous ``C x P`` slab, as the GEMM streams it)."""
    o, c = w.shape[:2]
    # the taps first, then the transform along them on whole [O/P, C, P] slabs
    taps = np.ascontiguousarray(w.reshape(o // panel, panel, c, 3, 3).transpose(3, 4, 0, 2, 1))
    return _filter_rows(_filter_rows(taps, 0), 1)


def _filter_rows(x: np.ndarray, axis: int) -> np.ndarray:
    """G applied along ``axis`` (3 -> 4): g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2.
    Adds over whole slabs in the weights' dtype: products with G in float64 took 3x as long
    over ResNet-50's weights (66 against 21 ms of codegen), for the same float32 U to 1e-7."""
    g0, g1, g2 = (x[(slice(None),) * axis + (i,)] for i in range(3))
    mid = (g0 + g2) * x.dtype.type(0.5)
    g1 = g1 * x.dtype.type(0.5)
    return np.stack([g0, mid + g1, mid - g1, g2], axis=axis)


def append_weights(body: Block, module, w: np.ndarray, dtype, name: str, loc,
                   panel: int) -> Value:
    """Append to ``body`` the constant U of ``w`` (``[O, C, 3, 3]`` weights of ``dtype``)
    in panels of ``panel`` output channels, and the ops that turn it back into those
    weights; return them."""
    from pir.ir.dialects.builtin import make_constant
    from pir.ir.dialects.prim.linalg import DotGeneralOp
    from pir.ir.dialects.prim.shape import ReshapeOp, TransposeOp

    o, c = w.shape[:2]

    def tt(*shape):
        return TensorType(dtype, tuple(shape))

    def add(op):
        return body.append(op).results[0]

    u = add(make_constant(module, transformed_weights(w, panel), f"{name}.winograd", loc))
    u = add(TransposeOp.build(u, permutation=[0, 1, 3, 2, 4], loc=loc,
                              result_types=[tt(4, 4, c, o // panel, panel)],
                              result_names=[f"{name}.wino_t"]))
    u = add(ReshapeOp.build(u, result_types=[tt(4, 4, c, o)], loc=loc,
                            result_names=[f"{name}.wino_u"]))
    gp = add(make_constant(module, G_PLUS.astype(w.dtype), f"{name}.wino_ginv", loc))
    # rows: [r, b, C, O] = sum over a of G+[r, a] U[a, b, C, O]
    rows = add(DotGeneralOp.build(gp, u, result_types=[tt(3, 4, c, o)], loc=loc,
                                  lhs_contracting_dimensions=[1],
                                  rhs_contracting_dimensions=[0],
                                  result_names=[f"{name}.wino_rows"]))
    # both: [s, r, C, O] = sum over b of G+[s, b] rows[r, b, C, O]
    both = add(DotGeneralOp.build(gp, rows, result_types=[tt(3, 3, c, o)], loc=loc,
                                  lhs_contracting_dimensions=[1],
                                  rhs_contracting_dimensions=[1],
                                  result_names=[f"{name}.wino_g"]))
    return add(TransposeOp.build(both, permutation=[3, 2, 1, 0], loc=loc,
                                 result_types=[tt(o, c, 3, 3)], result_names=[f"{name}.w"]))


def winograd_source(w: Value) -> Value | None:
    """The constant U that ``w`` (a convolution's weights) is made from by
    :func:`append_weights`' ops, else None."""
    def producer(v, name):
        op = getattr(v, "op", None)
        return op if op is not None and op.name == name else None

    t = producer(w, "prim.transpose")
    if t is None or tuple(t.permutation) != (3, 2, 1, 0):
        return None
    both = producer(t.operands[0], "prim.dot_general")
    rows = both and producer(both.operands[1], "prim.dot_general")
    reshape = rows and producer(rows.operands[1], "prim.reshape")
    perm = reshape and producer(reshape.operands[0], "prim.transpose")
    const = perm and producer(perm.operands[0], "builtin.constant")
    if const is None or tuple(perm.permutation) != (0, 1, 3, 2, 4):
        return None
    if tuple(const.results[0].type.shape[:2]) != (4, 4):
        return None
    return const.results[0]


# -- the computation ---------------------------------------------------------------------------

def _input_tap(d, a, b, dtype):
    """(B^T d B)[a, b] for the 4x4 patch ``d(i, j)``.  Row a of B^T is ``d[first] + sign *
    d[second]``: d0 - d2, d1 + d2, d2 - d1, d1 - d3, the indices written as arithmetic on
    a loop variable the schedule unrolls (they fold to constants, and cost TVM's passes far
    less than tables of selects would)."""
    def first(a):
        return a - (a // 3) * 2  # 0, 1, 2, 1

    def second(a):
        return 2 + (a // 2) * (a % 2 * 2 - 1)  # 2, 2, 1, 3

    def sign(a):
        return tirx.Select(a == 1, tirx.const(1, dtype), tirx.const(-1, dtype))

    sa, sb = sign(a), sign(b)
    i1, i2, j1, j2 = first(a), second(a), first(b), second(b)
    return (d(i1, j1) + sb * d(i1, j2)) + sa * (d(i2, j1) + sb * d(i2, j2))


def _output_sum(m, r, s):
    """(A^T m A)[r, s] for the 4x4 ``m(a, b)``, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]."""
    def row(a):
        return tirx.Select(s == 0, m(a, 0) + m(a, 1) + m(a, 2), m(a, 1) - m(a, 2) - m(a, 3))
    return tirx.Select(r == 0, row(0) + row(1) + row(2), row(1) - row(2) - row(3))


def winograd_conv(xp, u, n, c: int, o: int, h: int, w: int, name: str):
    """The ``[N, O, H, W]`` result of the convolution of the padded blocked input ``xp``
    (``[N, C/16, H+2, W+2, 16]``) by the transformed weights ``u``
    (``[4, 4, O/P, C, P]``, P its panel width).  V and M are indexed by the tile's row and
    column (``[N, 4, 4, H/2, W/2, C or O]``), so the schedule can compute them a band of tile rows
    at a time."""
    th, tw = -(-h // 2), -(-w // 2)
    dtype = xp.dtype
    panel = int(u.shape[-1])

    def v(b, a, e, ty, tx, ci):
        def d(i, j):
            y, x = ty * 2 + i, tx * 2 + j
            # An odd map: the last tile's patch reaches one row (column) past the padded
            # input.  That row only reaches the tile's second output row (B^T's last row
            # alone reads it, and only A^T's last row reads that), which is not written:
            # any finite value will do, and the clamp reads the zero border again.
            if h % 2:
                y = tirx.min(y, h + 1)
            if w % 2:
                x = tirx.min(x, w + 1)
            return xp[b, ci // 16, y, x, ci % 16]
        return _input_tap(d, a, e, dtype)

    vt = te.compute((n, 4, 4, th, tw, c), v, name=f"{name}_wino_v")
    k = te.reduce_axis((0, c), name=f"{name}_wino_c")
    mt = te.compute((n, 4, 4, th, tw, o),
                    lambda b, a, e, ty, tx, oc: te.sum(vt[b, a, e, ty, tx, k]
                                                       * u[a, e, oc // panel, k, oc % panel],
                                                       axis=k), name=f"{name}_wino_m")

    def y(b, oc, yy, xx):
        return _output_sum(lambda a, e: mt[b, a, e, yy // 2, xx // 2, oc], yy % 2, xx % 2)

    return te.compute((n, o, h, w), y, name=name)


# -- the schedule ------------------------------------------------------------------------------

#: The most bytes of V and M a band of tile rows may hold (half of a core's L2): the band's
#: input transform, GEMM and output transform then pass their data in cache.
BAND_BYTES = 512 << 10
#: U (the weights) is read once per band: bands only when it stays in L2 between them.
#: In ResNet-50 (A/B in the model, 15 rounds): 64 channels at 56x56, U 256 KB, bands of
#: two tile rows: -17%; 128 at 28x28, U 1 MB: -2%.
BAND_WEIGHT_BYTES = 1 << 20


def schedule_winograd(kernel):
    """The scheduled function of a conv group's kernel whose convolution is
    :func:`winograd_conv`; None when the kernel does not have its shape (the caller then
    uses another schedule)."""
    from pir.codegen.tvm.fast_schedule import FastSchedule
    from pir.codegen.tvm.gemm_schedule import _schedule_col

    sch = FastSchedule(tvm.IRModule({kernel.name: kernel.func}))
    sch.work_on(kernel.name)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    names = [sch.get(b).name_hint for b in blocks]
    vs = [b for b, nm in zip(blocks, names) if nm.endswith("_wino_v")]
    ms = [b for b, nm in zip(blocks, names) if nm.endswith("_wino_m")]
    if len(vs) != 1 or len(ms) != 1:
        return None
    (v,), (m,) = vs, ms
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks("root")}
    keep = {sch.get(v).name_hint, sch.get(m).name_hint} | outputs
    # an input its maker did not pad is padded into a buffer first, as for the GEMM form
    pads = [b for b, nm in zip(blocks, names) if nm.endswith("_xpad")]
    keep |= {sch.get(b).name_hint for b in pads}
    try:
        for b in reversed(blocks):
            if sch.get(b).name_hint not in keep:
                sch.compute_inline(b)  # the output transform, the epilogue, the layout
        for b in pads:
            _schedule_col(sch, b)
        outs = sch.get_output_blocks("root")
        if len(outs) != 1 or len(sch.get_loops(outs[0])) != 5:
            return None  # (form_conv_groups takes only convolutions yielding blocks)
        (out,) = outs
        band = _band_rows(sch, m)
        loop = None
        if band is not None:
            # the output's loop over (batch, band of 2 * band rows) is the parallel one, and
            # M and V move under it: each band transforms, multiplies and writes its rows
            b, ob, yy, xx, oi = sch.get_loops(out)
            yb, yr = sch.split(yy, [None, 2 * band])
            sch.reorder(b, yb, ob, yr, xx, oi)
            loop = sch.fuse(b, yb)
            sch.parallel(loop)
            sch.compute_at(m, loop)
            sch.compute_at(v, loop)
        _schedule_gemm(sch, m, loop, kernel.cpu)
        _schedule_input(sch, v, loop)
        _schedule_output(sch, out, loop)
    except ScheduleError:
        return None
    return sch.mod[kernel.name]


def _band_rows(sch, m) -> int | None:
    *_, th, tw, o, k = (sch.get(lp).extent for lp in sch.get_loops(m))
    return band_rows(int(th), int(tw), int(k), int(o))


def band_rows(th: int, tw: int, c: int, o: int) -> int | None:
    """Tile rows per band over ``th`` x ``tw`` tiles, ``c`` -> ``o`` channels: the most, at
    least 2, that divide the tile rows with V and M of the band within BAND_BYTES; None for
    no bands (U over BAND_WEIGHT_BYTES, one tile column, or no such count short of all the
    rows).  Under a band's loop TVM drops the loops of extent 1 that the schedule indexes:
    a band of one row, or a map one tile wide."""
    if 16 * c * o * 4 > BAND_WEIGHT_BYTES or tw < 2:
        return None
    per_row = 16 * tw * (c + o) * 4
    best = None
    for rows in range(2, th):
        if th % rows == 0 and rows * per_row <= BAND_BYTES:
            best = rows
    return best


def _loops_under(sch, block, loop):
    """``block``'s loops inside ``loop`` (all of them when ``loop`` is None)."""
    loops = sch.get_loops(block)
    if loop is None:
        return loops
    at = next(i for i, lp in enumerate(loops) if sch.get(lp).same_as(sch.get(loop)))
    return loops[at + 1:]


def _schedule_gemm(sch, m, loop, cpu: CpuTarget) -> None:
    """M: the matmul schedule's register tile (a few tiles of a tile row x one panel of
    output channels, accumulated over C, sized for ``cpu``); the 16 GEMMs the parallel loop
    when there are no bands (``loop`` None)."""
    *outer, a, e, ty, tx, o, k = _loops_under(sch, m, loop)
    po, pi = sch.split(o, [None, cpu.panel_width])
    mo, mi = sch.split(tx, [None, tile_group(int(sch.get(tx).extent), cpu.gemm_rows)])
    sch.reorder(a, e, po, ty, mo, k, mi, pi)
    sch.vectorize(pi)
    sch.unroll(mi)
    if loop is None:
        sch.parallel(sch.fuse(*outer, a, e))
    acc = sch.cache_write(m, 0, "local")
    sch.reverse_compute_at(acc, mo)
    init = sch.decompose_reduction(m, k)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.vectorize(sch.get_loops(acc)[-1])


def _schedule_input(sch, v, loop) -> None:
    """V: per tile and channel block, the 16 taps unrolled over a vector of 16 channels
    (each of the patch's 16 loads is then one vector, shared by the taps that use it)."""
    *outer, a, e, ty, tx, c = _loops_under(sch, v, loop)
    cb, ci = sch.split(c, [None, 16])
    sch.reorder(ty, tx, cb, a, e, ci)
    if loop is None:
        sch.parallel(sch.fuse(*outer, ty))
    sch.unroll(a)
    sch.unroll(e)
    sch.vectorize(ci)


def _schedule_output(sch, out, loop) -> None:
    """The output transform (with the epilogue, in channel blocks): per 2x2 block of
    outputs and channel block, its 16 loads of M shared by the four outputs."""
    *outer, ob, yy, xx, oi = _loops_under(sch, out, loop)  # [N, O/16, H, W, 16]
    ty, r = sch.split(yy, [None, 2])
    tx, s = sch.split(xx, [None, 2])
    sch.reorder(ty, ob, tx, r, s, oi)
    if loop is None:
        sch.parallel(sch.fuse(*outer, ty))
    sch.unroll(r)
    sch.unroll(s)
    sch.vectorize(oi)

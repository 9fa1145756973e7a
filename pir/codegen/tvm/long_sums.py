"""Long float sums, lowered in blocks and scheduled so that the blocks vectorise.

A float sum whose accumulator is float32 (f32, and f16 / bf16 widened to it) and whose
length is over one block (``SumBlocks.size`` terms, or a length known only at run time) is
not one f32 accumulator (pir.codegen.sums says why).  When it reduces the operand's last
dim alone (rows: softmax, the norms, ReduceSum over the last axis), it is, for ``nb`` whole
blocks, then ``nv`` whole vectors of ``lanes``, then ``rest`` elements:

- ``P[..., b, l] = sum_c x[..., (b * terms + c) * lanes + l]``: each block's f32 partial
  sums, ``lanes`` side by side, ``terms`` terms each;
- ``S[...] = sum_{b, l} f64(P[..., b, l])``: the partials added in f64;
- ``V[...] = sum_{v, l} f64(x[..., nb * size + v * lanes + l])`` and ``R[...]``, the rest
  one by one, both in f64 (fewer than a block: no f32 step);
- the result ``f32(S + V + R)`` (then rounded to f16 / bf16), each part counted only when
  its reduction adds something (see ``add``); parts a static length leaves empty are not
  made.

Any other long float sum (over a leading dim, or several dims) accumulates in f64: the CPU
schedule does not vectorise those loops, and a scalar f64 add costs what an f32 one does.

The schedule (:func:`split_totals`, then :func:`schedule_rows` or :func:`schedule_alone`)
computes a block's partials as one vector of ``lanes`` (LLVM splits 64 f32 lanes into four
AVX-512 registers, which accumulate side by side) in the loop over the blocks that adds
them into a vector of f64 totals, folded to one register of f64 before the last few are
added once per row.  Scheduling stays optional: the lowered form alone is as exact.
"""

from __future__ import annotations

import math

from tvm import te, tirx
from tvm.s_tir import ScheduleError

from pir.codegen.sums import SumBlocks

__all__ = ["lower_long_sum", "split_totals", "internal_blocks", "schedule_rows",
           "schedule_alone"]


def _count(extents) -> int | None:
    """The product of ``extents``, None when one is symbolic."""
    if not all(isinstance(e, int) for e in extents):
        return None
    return math.prod(extents)


def lower_long_sum(x: te.Tensor, xs: tuple, axes: list[int], keep: bool, out_shape: tuple,
                   ctx, name: str) -> te.Tensor | None:
    """The lowered ``reduce_sum(x)`` over ``axes`` when it is a long float sum accumulated
    in f32 (see the module docstring), else None (the caller lowers it as usual).  The
    computes of a blocked one are recorded in ``ctx.long_sums`` for the schedule."""
    dtype = str(x.dtype)
    if dtype not in ("float32", "float16", "bfloat16"):
        return None
    sums: SumBlocks = ctx.sums
    if not sums.is_long(_count([xs[a] for a in axes])):
        return None
    last = len(xs) - 1

    def wide(value):  # the f32 a term is added in
        return value if dtype == "float32" else value.astype("float32")

    def result(total):  # f64 -> f32 -> the sum's own type, as the reference rounds it
        out = total.astype("float32")
        return out if dtype == "float32" else out.astype(dtype)

    if axes != [last] or not sums.blocked:
        return _f64_sum(x, xs, axes, keep, out_shape, ctx, name, wide, result)
    n, terms, lanes, size = xs[last], sums.terms, sums.lanes, sums.size
    nb = _div(n, size)  # whole blocks
    nv = _div(n - nb * size, lanes)  # then whole vectors of lanes
    rest = n - nb * size - nv * lanes  # then fewer than lanes elements
    totals = []  # (the f64 sum of a part, how many its reduction adds), in order

    def part_of(count):
        return not (isinstance(count, int) and count == 0)

    if part_of(nb):
        c = te.reduce_axis((0, terms), name=f"{name}_c")
        blocks = te.compute(
            tuple(xs[:last]) + (nb, lanes),
            lambda *i: te.sum(wide(x(*i[:-2], (i[-2] * terms + c) * lanes + i[-1])), axis=c),
            name=ctx.name(f"{name}_blocks", "blocks"))
        kb = te.reduce_axis((0, nb), name=f"{name}_kb")
        kl = te.reduce_axis((0, lanes), name=f"{name}_kl")
        totals.append((te.compute(
            out_shape, lambda *o: te.sum(blocks(*o[:last], kb, kl).astype("float64"),
                                         axis=[kb, kl]),
            name=ctx.name(f"{name}_f64", "f64")), nb))
        ctx.long_sums.append((blocks.op.name, totals[-1][0].op.name))
    if part_of(nv):  # under one block: f64 already, but a vector of lanes at a time
        kv = te.reduce_axis((0, nv), name=f"{name}_kv")
        kl = te.reduce_axis((0, lanes), name=f"{name}_kw")
        totals.append((te.compute(
            out_shape, lambda *o: te.sum(wide(x(*o[:last], nb * size + kv * lanes + kl))
                                         .astype("float64"), axis=[kv, kl]),
            name=ctx.name(f"{name}_vectors", "vectors")), nv))
        ctx.long_sums.append((None, totals[-1][0].op.name))
    if part_of(rest):
        kr = te.reduce_axis((0, rest), name=f"{name}_kr")
        totals.append((te.compute(
            out_shape, lambda *o: te.sum(wide(x(*o[:last], nb * size + nv * lanes + kr))
                                         .astype("float64"), axis=kr),
            name=ctx.name(f"{name}_rest", "rest")), rest))

    def add(*o):
        acc = None
        for t, count in totals:
            value = t(*o)
            if not isinstance(count, int):
                # TIR initialises a reduction in its first iteration, so one over nothing
                # (a run-time length under one block) leaves its buffer as it was
                value = tirx.Select(count > 0, value, tirx.const(0, "float64"))
            acc = value if acc is None else acc + value
        return result(acc)

    return te.compute(out_shape, add, name=name)


def _div(a, b: int):
    return a // b if isinstance(a, int) else tirx.floordiv(a, b)


def _f64_sum(x, xs, axes, keep, out_shape, ctx, name, wide, result) -> te.Tensor:
    raxes = {a: te.reduce_axis((0, xs[a]), name=f"{name}_k{a}") for a in axes}

    def index(*i):
        it = iter(i)
        src = []
        for k in range(len(xs)):
            if k in raxes:
                src.append(raxes[k].var)
                if keep:
                    next(it)  # the kept size-1 dim
            else:
                src.append(next(it))
        # (f16 / bf16 through f32, as the rest of the lowering widens them)
        return te.sum(wide(x(*src)).astype("float64"), axis=[raxes[a] for a in axes])

    wide = te.compute(out_shape, index, name=ctx.name(f"{name}_f64", "f64"))
    return te.compute(out_shape, lambda *i: result(wide(*i)), name=name)


# -- schedule ---------------------------------------------------------------------------------

def _block_named(sch, name: str | None):
    if name is None:
        return None
    try:
        return sch.get_sblock(name)
    except (ScheduleError, ValueError):
        return None


def _block_writing(sch, buf):
    """The block that writes ``buf`` (rfactor names its blocks after the one it splits, so
    a second rfactor of one block repeats a name, and blocks are found by what they write)."""
    if buf is None:
        return None
    for b in sch.get_child_blocks(sch.get_sblock("root")):
        if any(w.source.same_as(buf) for w in sch.get(b).writes):
            return b
    return None


def _writes(sch, block):
    return sch.get(block).writes[0].source


def split_totals(sch, kernel, fold_lanes: int) -> dict:
    """Rfactor each blocked f64 total over its lanes, while it still has its own loop nest
    (as the row schedule does its rfactors): ``S_rf[l] = sum_b f64(P[b, l])``, then the
    lanes folded to ``fold_lanes`` (one vector of f64) before the last few are added.
    Returns {total name: (block partials name or None, S_rf buffer, fold buffer or None)}."""
    out = {}
    for part, total in kernel.long_sums:
        block = _block_named(sch, total)
        if block is None or len(sch.get_loops(block)) < 2:
            continue
        try:
            rf = sch.rfactor(sch.get_loops(block)[-1], factor_axis=0)
        except ScheduleError:
            continue
        fold = None
        extent = sch.get(sch.get_loops(block)[-1]).extent
        if isinstance(extent, tirx.IntImm) and extent.value > fold_lanes \
                and extent.value % fold_lanes == 0:
            try:
                _, inner = sch.split(sch.get_loops(block)[-1], [None, fold_lanes])
                fold = _writes(sch, sch.rfactor(inner, factor_axis=0))
            except ScheduleError:
                pass  # the lanes are added one by one
        out[total] = (part, _writes(sch, rf), fold)
    return out


def internal_blocks(sch, split: dict) -> set:
    """The names of the blocks of the split totals, which this module schedules."""
    names = set()
    for total, (part, rf, fold) in split.items():
        names.update(n for n in (total, part) if n is not None)
        names.update(sch.get(b).name_hint for b in (_block_writing(sch, rf),
                                                    _block_writing(sch, fold)) if b is not None)
    return names


def schedule_rows(sch, row, split: dict) -> None:
    """After the row schedule's compute_at (every block under ``row``): each total's lanes
    one vector, a block's partials computed, a vector of lanes at a time, in the loop over
    the blocks that adds them (LLVM splits the wide vectors into registers, which then
    accumulate side by side), and the fold one vector."""
    for part, rf_buf, fold_buf in split.values():
        rf = _block_writing(sch, rf_buf)
        if rf is None:
            continue
        try:
            p = _block_named(sch, part)
            if p is None or not _sum_as_made(sch, row, p, rf):
                # compute_at orders a block's loops as its iter vars: lanes, then blocks
                lanes, over = sch.get_loops(rf)[-2:]
                sch.reorder(over, lanes)
                if p is not None:
                    sch.compute_at(p, over, preserve_unit_loops=False)
                    lane, c = sch.get_loops(p)[-2:]
                    sch.reorder(c, lane)
                    sch.vectorize(lane)
            sch.vectorize(sch.get_loops(rf)[-1])
            fold = _block_writing(sch, fold_buf)
            if fold is not None:
                lanes, over = sch.get_loops(fold)[-2:]
                sch.reorder(over, lanes)
                sch.vectorize(lanes)
        except ScheduleError:
            pass  # what is done stays done: each step leaves the kernel correct


def _sum_as_made(sch, row, p, rf) -> bool:
    """Add up each block of a row value that the kernel keeps (softmax's exponentials) right
    after the loop that makes the value has made it, while it is in L1, as the row schedule
    does a short row's sum (schedule.sum_as_made): the maker's loop over the row is split
    into the blocks, and the block partials and their f64 adds move under it.  Only where
    the row is a static number of whole blocks and the maker one vectorised loop over it;
    False (nothing moved) otherwise.  Softmax over [2048, 8192], streamed from memory, A/B
    in one process: 14.2 ms with a separate pass over the row (12.6 with the one f32
    accumulator summed as made that it replaced), 12.7 ms this way (13.3 for that one in
    the same run)."""
    made = [b for b in sch.get_producers(p)
            if not any(iv.iter_type == tirx.IterVar.CommReduce for iv in sch.get(b).iter_vars)]
    if len(made) != 1 or len(sch.get_producers(p)) != 1:
        return False
    loops = sch.get_loops(made[0])
    blocks = sch.get(sch.get_loops(p)[-3]).extent  # P's loops: blocks, lanes, terms
    if len(loops) < 2 or not isinstance(blocks, tirx.IntImm):
        return False
    outer, inner = (sch.get(lp).extent for lp in loops[-2:])
    if not (isinstance(outer, tirx.IntImm) and isinstance(inner, tirx.IntImm)) \
            or outer.value % blocks.value:
        return False
    try:  # (a step that fails changes nothing; those before it leave the kernel correct)
        each, _ = sch.split(loops[-2], [blocks.value, None])
        sch.reverse_compute_at(p, each, preserve_unit_loops=False)
    except ScheduleError:
        return False
    lane, c = sch.get_loops(p)[-2:]
    sch.reorder(c, lane)
    sch.vectorize(lane)
    sch.reverse_compute_at(rf, each, preserve_unit_loops=False)
    return True


def schedule_alone(sch, split: dict, parallel) -> set:
    """The split totals of a kernel without the row form, each block on its own: the lanes
    of the block partials, of the totals and of the folds one vector each, the loops outside
    them in parallel (``parallel(loops)``).  Returns the names of the blocks scheduled."""
    done = set()
    for part, rf_buf, fold_buf in split.values():
        p = _block_named(sch, part)
        if p is not None:
            try:
                *outer, lane, c = sch.get_loops(p)
                sch.reorder(c, lane)
                sch.vectorize(lane)
                if outer:
                    parallel(outer)
                done.add(part)
            except ScheduleError:
                pass
        for buf in (rf_buf, fold_buf):
            block = _block_writing(sch, buf)
            if block is None:
                continue
            try:
                loops = sch.get_loops(block)  # (spatial..., reduced, lanes)
                sch.vectorize(loops[-1])
                if len(loops) > 2:
                    parallel(loops[:-2])
                done.add(sch.get(block).name_hint)
            except ScheduleError:
                pass
    return done

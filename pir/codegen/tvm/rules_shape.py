"""TE rules of the data-movement prim ops (broadcast_in_dim, reshape, transpose, slice,
concat, pad, iota, gather): index maps, which the CPU schedule inlines into their consumers."""

from __future__ import annotations

from tvm import te, tirx

from pir.codegen.tvm.lower import _empty, _out_type, rule, tvm_dtype
from pir.ir import dimexpr
from pir.ir.core import attr_or_default


@rule("prim.broadcast_in_dim")
def _broadcast_in_dim(op, ins, ctx, name):
    (x,) = ins
    xt, out = op.operands[0].type, _out_type(op)
    dims = list(attr_or_default(op, "broadcast_dimensions"))

    def index(*i):
        # operand dim k reads result dim dims[k], or index 0 where it is a size-1 dim being
        # repeated (a static 1 only: a symbol never broadcasts, see docs/prim.md)
        return x(*(0 if (xt.shape[k] == 1 and out.shape[d] != 1) else i[d]
                   for k, d in enumerate(dims)))

    return te.compute(ctx.shape(out), index, name=name)


def _linear(idx, shape) -> tirx.PrimExpr:
    lin = tirx.const(0, "int32")
    for i, d in zip(idx, shape):
        lin = lin * d + i
    return lin


def _unlinear(lin, shape) -> list:
    """The index into ``shape`` of linear position ``lin`` (< the product of ``shape``): the
    leading index needs no ``mod``, which TVM cannot drop by itself for symbolic sizes."""
    idx = []
    for k, d in enumerate(reversed(shape)):
        idx.append(lin if k == len(shape) - 1 else tirx.floormod(lin, d))
        lin = tirx.floordiv(lin, d)
    return idx[::-1]


def _groups(xm: tuple, om: tuple) -> list[tuple[int, int]] | None:
    """``xm`` and ``om`` cut into runs of equal products, as (source dims, result dims)
    counts: a reshape that only merges or splits neighbouring dims ([H, 2, W, 2] ->
    [2*H, 2*W]) then maps each run on its own, and an output index never divides by a dim
    of another run.  None when the products never meet before the end."""
    out, i, j = [], 0, 0
    while i < len(xm) or j < len(om):
        i0, j0 = i, j
        px, po = 1, 1
        if i < len(xm):
            px, i = xm[i], i + 1
        if j < len(om):
            po, j = om[j], j + 1
        while px != po:
            # grow the side whose product is not yet the other's (by value where static)
            grow_x = i < len(xm) and (j >= len(om) or _smaller(px, po))
            if grow_x:
                px, i = dimexpr.mul(px, xm[i]), i + 1
            elif j < len(om):
                po, j = dimexpr.mul(po, om[j]), j + 1
            else:
                return None
        out.append((i - i0, j - j0))
    return out


def _smaller(a, b) -> bool:
    """Whether the product ``a`` should grow before ``b``: by value when both are ints, else
    when ``b`` is a multiple of ``a`` (it holds factors ``a`` lacks)."""
    if isinstance(a, int) and isinstance(b, int):
        return a < b
    return dimexpr.exact_div(b, a) is not None


@rule("prim.reshape")
def _reshape(op, ins, ctx, name):
    (x,) = ins
    xs, os = ctx.shape(op.operands[0].type), ctx.shape(_out_type(op))
    # Dims equal at the front pass their index through: the usual reshapes (merge or split
    # the trailing dims under a batch dim B) then need no division by a symbolic size.
    keep = 0
    while keep < min(len(xs), len(os)) and _same(xs[keep], os[keep]):
        keep += 1
    # and so do dims equal at the back (merging the two leading dims of packed weights)
    tail = 0
    while tail < min(len(xs), len(os)) - keep and _same(xs[len(xs) - 1 - tail],
                                                         os[len(os) - 1 - tail]):
        tail += 1
    xm, om = xs[keep:len(xs) - tail], os[keep:len(os) - tail]
    xd, od = (tuple(t.shape[keep:len(t.shape) - tail])
              for t in (op.operands[0].type, _out_type(op)))
    runs = _groups(xd, od) if xd and od else None

    def index(*i):
        mid = i[keep:len(i) - tail]
        if runs is None:
            rest = _unlinear(_linear(mid, om), xm) if xm else []
        else:
            rest, a, b = [], 0, 0
            for nx, no in runs:
                rest += _unlinear(_linear(mid[b:b + no], om[b:b + no]), xm[a:a + nx])
                a, b = a + nx, b + no
        return x(*i[:keep], *rest, *i[len(i) - tail:])

    return te.compute(os, index, name=name)


def _same(a, b) -> bool:
    return (isinstance(a, int) and isinstance(b, int) and a == b) or a is b


@rule("prim.transpose")
def _transpose(op, ins, ctx, name):
    (x,) = ins
    perm = list(attr_or_default(op, "permutation"))
    inv = [perm.index(k) for k in range(len(perm))]  # result dim i is operand dim perm[i]
    return te.compute(ctx.shape(_out_type(op)), lambda *i: x(*(i[inv[k]] for k in
                                                                 range(len(perm)))), name=name)


@rule("prim.slice")
def _slice(op, ins, ctx, name):
    (x,) = ins
    rank = len(op.operands[0].type.shape)
    axes = list(attr_or_default(op, "axes") or range(rank))
    starts = dict(zip(axes, attr_or_default(op, "start_indices")))
    strides = dict(zip(axes, attr_or_default(op, "strides") or [1] * len(axes)))
    return te.compute(ctx.shape(_out_type(op)), lambda *i: x(*(
        starts.get(k, 0) + i[k] * strides.get(k, 1) for k in range(rank))), name=name)


@rule("prim.concat")
def _concat(op, ins, ctx, name):
    axis = attr_or_default(op, "dimension")
    # An empty operand adds nothing; left in, its reads (never made) still make TVM's region
    # analysis fail for the whole function, and nothing is inlined.
    kept = [(v, x) for v, x in zip(op.operands, ins) if v.type.shape[axis] != 0]
    if not kept:  # every operand is empty along the axis: so is the result (see lower_block)
        kept = list(zip(op.operands, ins))[:1]
    ins = [x for _, x in kept]
    offsets, at = [], 0
    for v, _ in kept:
        offsets.append(at)
        at = at + ctx.dim(v.type.shape[axis])

    def index(*i):
        # the last operand, then "i < end of operand k ? operand k : (the rest)" from the back.
        # if_then_else, not Select: only the chosen operand may be read (the others would be
        # read out of bounds)
        pieces = list(zip(ins, offsets, offsets[1:] + [None]))
        expr = None
        for x, off, end in reversed(pieces):
            load = x(*(i[k] - off if k == axis else i[k] for k in range(len(i))))
            expr = load if expr is None else tirx.if_then_else(i[axis] < end, load, expr)
        return expr

    return te.compute(ctx.shape(_out_type(op)), index, name=name)


@rule("prim.pad")
def _pad(op, ins, ctx, name):
    x, value = ins
    xs = ctx.shape(op.operands[0].type)
    if _empty(op.operands[0].type):  # all padding (and no read of the empty operand)
        return te.compute(ctx.shape(_out_type(op)), lambda *i: value(), name=name)
    low = list(attr_or_default(op, "edge_padding_low"))
    interior = list(attr_or_default(op, "interior_padding") or [0] * len(xs))

    def index(*i):
        conds, src = [], []
        for k, d in enumerate(xs):
            p = i[k] - low[k]
            step = interior[k] + 1
            conds += [p >= 0, p < (d - 1) * step + 1]
            if step > 1:
                conds.append(tirx.floormod(p, step) == 0)
            src.append(tirx.floordiv(p, step) if step > 1 else p)
        inside = tirx.all(*conds) if conds else tirx.const(True, "bool")
        return tirx.if_then_else(inside, x(*src), value())

    return te.compute(ctx.shape(_out_type(op)), index, name=name)


@rule("prim.iota")
def _iota(op, ins, ctx, name):
    t = _out_type(op)
    d = attr_or_default(op, "dimension")
    return te.compute(ctx.shape(t), lambda *i: i[d].astype(tvm_dtype(t.dtype)), name=name)


@rule("prim.gather")
def _gather(op, ins, ctx, name):
    x, indices = ins
    axis = attr_or_default(op, "axis")
    ir = len(op.operands[1].type.shape)

    def index(*i):
        j = indices(*i[axis:axis + ir]).astype("int32")
        return x(*i[:axis], j, *i[axis + ir:])

    return te.compute(ctx.shape(_out_type(op)), index, name=name)

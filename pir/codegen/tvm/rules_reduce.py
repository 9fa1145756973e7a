"""TE rules of the reductions (sum, prod, NaN-aware max and min, argmax and argmin), with the
reducers TVM's rfactor is taught so that float max and min rows vectorise."""

from __future__ import annotations

import tvm
from tvm import te, tirx

from pir.codegen.tvm.long_sums import lower_long_sum
from pir.codegen.tvm.lower import RULES, _Ctx, _out_type
from pir.codegen.tvm.rules_elementwise import (_NARROW_FLOATS, _dtype_of, _nan_max, _nan_min,
                                                 is_nan)
from pir.errors import PirError
from pir.ir.core import attr_or_default


def _prod_reducer():
    return te.comm_reducer(lambda a, b: a * b, lambda t: tirx.const(1, t), name="prod")


def _float_extreme(dtype: str, largest: bool):
    return tirx.const(float("inf") if largest else float("-inf"), dtype)


# Float max / min reductions propagate NaN and start from -inf / +inf (TVM's te.max starts
# from the lowest finite float, so a row of -inf reduced to -3.4e38, and it drops NaN).
_NAN_MAX = te.comm_reducer(_nan_max, lambda t: _float_extreme(t, False), name="nan_max")
_NAN_MIN = te.comm_reducer(_nan_min, lambda t: _float_extreme(t, True), name="nan_min")


def _plain_max(a, b):
    return tirx.max(a, b)


# A max that may drop NaN, from -inf: for the shift of a softmax, where NaN reaches every
# output anyway (see _nan_reaches_outputs_anyway); one vmaxps instead of two compares, an
# or and a blend on the chain from one element to the next.
_SHIFT_MAX = te.comm_reducer(_plain_max, lambda t: _float_extreme(t, False), name="shift_max")


def _register_rfactor_patterns() -> None:
    """Teach TVM's rfactor the two float reducers above (it only knows sum, prod, min, max):
    without this, softmax's row max is not vectorised.  A TVM without the hook only loses
    that speed (rfactor then fails, and the schedule leaves the reduction scalar)."""
    import ctypes

    try:
        register = tvm.get_global_func("s_tir.schedule.RegisterReducer")
    except (AttributeError, ValueError):
        return
    for combine, largest in ((_nan_max, False), (_nan_min, True), (_plain_max, False)):
        def identity(values, largest=largest):
            dtype = _dtype_of(values[0])
            if dtype.startswith(("float", "bfloat")):
                return [_float_extreme(dtype, largest)]
            return [tirx.max_value(dtype) if largest else tirx.min_value(dtype)]

        fns = [tvm.runtime.convert(lambda x, y, c=combine: [c(x[0], y[0])]),
               tvm.runtime.convert(identity)]
        # TVM keeps these in a C++ registry that it frees after Python has shut down; a
        # reference never released keeps that from calling into a finalised interpreter.
        for f in fns:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(f))
        register(1, *fns)


_register_rfactor_patterns()

_REDUCERS = {"prim.reduce_sum": te.sum, "prim.reduce_max": te.max, "prim.reduce_min": te.min,
             "prim.reduce_prod": None}
_FLOAT_REDUCERS = {"prim.reduce_max": _NAN_MAX, "prim.reduce_min": _NAN_MIN}

#: The two-value combination of each order-independent reducer (see _vector_and_rest).
_COMBINERS = {_NAN_MAX: _nan_max, _NAN_MIN: _nan_min, _SHIFT_MAX: _plain_max,
              te.max: tirx.max, te.min: tirx.min}


def _identity(op_name: str, dtype: str):
    """The value of a reduction over nothing (the reference runtime's)."""
    if op_name == "prim.reduce_sum":
        return tirx.const(0, dtype)
    if op_name == "prim.reduce_prod":
        return tirx.const(1, dtype)
    largest = op_name == "prim.reduce_min"
    if dtype.startswith(("float", "bfloat")):
        return _float_extreme(dtype, largest)
    if dtype == "bool":
        return tirx.const(largest, "bool")
    return tirx.max_value(dtype) if largest else tirx.min_value(dtype)


def _reduce(op, ins, ctx, name):
    (x,) = ins
    xt = op.operands[0].type
    axes = sorted(attr_or_default(op, "axes"))
    keep = attr_or_default(op, "keepdims")
    ctx.reductions.append((len(xt.shape), tuple(axes)))
    xs = ctx.shape(xt)
    dtype = str(x.dtype)
    out_shape = ctx.shape(_out_type(op))
    if not axes:  # prim: empty axes reduce nothing
        return te.compute(xs, lambda *i: x(*i), name=name)
    if any(isinstance(xs[a], int) and xs[a] == 0 for a in axes):  # a reduction over nothing
        value = _identity(op.name, dtype)
        return te.compute(out_shape, lambda *i: value, name=name)
    if op.name == "prim.reduce_sum":
        # a long f32 sum is taken in blocks, or in f64 (pir.codegen.tvm.long_sums)
        blocked = lower_long_sum(x, xs, axes, keep, out_shape, ctx, name)
        if blocked is not None:
            return blocked
    raxes = {a: te.reduce_axis((0, xs[a]), name=f"{name}_k{a}") for a in axes}
    is_float = dtype.startswith(("float", "bfloat"))
    reducer = (_FLOAT_REDUCERS.get(op.name) if is_float else None) or _REDUCERS[op.name] \
        or _prod_reducer()
    if is_float and op.name == "prim.reduce_max" and _nan_reaches_outputs_anyway(op):
        reducer = _SHIFT_MAX
    # f16 / bf16 reduce in f32, as the reference runtime does (sums and products keep their
    # precision; max and min are exact either way, but TVM has no bf16 isnan)
    acc = "float32" if dtype in _NARROW_FLOATS else None

    def index(*i):
        it = iter(i)
        src = []
        for k in range(len(xs)):
            if k in raxes:
                src.append(raxes[k].var)
                if keep:
                    next(it)  # the kept size-1 dim: its index is always 0
            else:
                src.append(next(it))
        value = x(*src)
        return reducer(value.astype(acc) if acc else value, axis=[raxes[a] for a in axes])

    if acc is None:
        split = _vector_and_rest(op, x, xs, axes, keep, out_shape, reducer, ctx, name)
        return split if split is not None else te.compute(out_shape, index, name=name)
    wide = te.compute(out_shape, index, name=f"{name}_{acc}")
    return te.compute(out_shape, lambda *i: wide(*i).astype(dtype), name=name)


for _n in _REDUCERS:
    RULES[_n] = _reduce


def _vector_and_rest(op, x, xs, axes, keep, out_shape, reducer, ctx, name):
    """A max or min over one static axis that the vector width does not divide (a softmax
    over 6906 classes) as two reductions and their combination: the first ``n - n % lanes``
    elements, which the schedule reduces in vector lanes (its rfactor needs whole vectors),
    and the rest, scalar.  Max and min are exact in any order.  None for other reductions
    (they stay one compute)."""
    combine = _COMBINERS.get(reducer)
    lanes = ctx.cpu.lanes if ctx.cpu is not None else 16
    if combine is None or len(axes) != 1 or not isinstance(xs[axes[0]], int):
        return None
    (axis,) = axes
    n = xs[axis]
    rest = n % lanes
    if n <= lanes or rest == 0:
        return None

    def part(start, extent, suffix):
        k = te.reduce_axis((0, extent), name=f"{name}_{suffix}")

        def index(*i):
            src = list(i[:axis]) + [k.var + start] + list(i[axis + (1 if keep else 0):])
            return reducer(x(*src), axis=[k])

        return te.compute(out_shape, index, name=f"{name}_{suffix}")

    main, tail = part(0, n - rest, "vectors"), part(n - rest, rest, "rest")
    return te.compute(out_shape, lambda *i: combine(main(*i), tail(*i)), name=name)


def _nan_reaches_outputs_anyway(op) -> bool:
    """Whether ``m = reduce_max(x)`` is only the shift of a softmax or log-softmax over the
    same axes: ``s = x - m``, ``e = exp(s)``, ``t = reduce_sum(e)``, and every other use of
    ``s`` or ``e`` a ``sub(s, z)``, ``mul(e, z)`` or ``div(e, z)`` with ``z`` computed from
    ``t`` by unary ops and broadcasts.  A NaN in a row of x then makes ``t`` NaN, hence every
    output of that row NaN, whatever ``m`` is; without one, a plain max equals prim's. So the
    max may ignore NaN (as ONNX Runtime's softmax does)."""
    x, m = op.operands[0], op.results[0]
    axes = set(attr_or_default(op, "axes"))
    shifts = []
    for u in m.uses:
        b = u.op
        if b.name != "prim.broadcast_in_dim":
            return False
        for ub in b.results[0].uses:
            s = ub.op
            if s.name != "prim.sub" or s.operands[0] is not x or ub.index != 1:
                return False
            shifts.append(s.results[0])
    if not shifts:
        return False
    for s in shifts:
        exps = [u.op for u in s.uses if u.op.name == "prim.exp"]
        if len(exps) != 1:
            return False
        e = exps[0].results[0]
        sums = [u.op.results[0] for u in e.uses if u.op.name == "prim.reduce_sum"
                and set(attr_or_default(u.op, "axes")) == axes]
        if not sums:
            return False
        for u in s.uses:
            if u.op is not exps[0] and not (u.op.name == "prim.sub" and u.index == 0
                                             and _computed_from(u.op.operands[1], sums)):
                return False
        for u in e.uses:
            if u.op.results and u.op.results[0] in sums:
                continue
            if not (u.op.name in ("prim.mul", "prim.div") and len(u.op.operands) == 2
                    and _computed_from(u.op.operands[1 - u.index], sums)):
                return False
    return True


_UNARY_CHAIN = ("prim.broadcast_in_dim", "prim.reshape", "prim.reciprocal", "prim.log",
                "prim.cast", "prim.neg")


def _computed_from(v, sources) -> bool:
    """``v`` is one of ``sources`` through a chain of one-operand ops."""
    while v not in sources:
        d = getattr(v, "op", None)
        if d is None or d.name not in _UNARY_CHAIN or len(d.operands) != 1:
            return False
        v = d.operands[0]
    return True


def _arg_reducer(largest: bool, last: bool, dtype: str):
    """(index, value) pairs -> the pair of the extreme value: NaN counts as the extreme, and
    ties go to the first index (the last with ``last``).  The index decides ties itself, so
    the order partial results combine in (rfactor lanes) does not matter; the identity's
    index loses every tie."""
    is_float = dtype.startswith(("float", "bfloat"))

    def combine(x, y):
        (xi, xv), (yi, yv) = x, y
        better = xv > yv if largest else xv < yv
        tie = tirx.EQ(xv, yv)
        if is_float:
            xn, yn = is_nan(xv), is_nan(yv)
            better = tirx.Or(tirx.And(xn, tirx.Not(yn)), better)
            tie = tirx.Or(tie, tirx.And(xn, yn))
        keep = tirx.Or(better, tirx.And(tie, xi > yi if last else xi < yi))
        return tirx.Select(keep, xi, yi), tirx.Select(keep, xv, yv)

    def identity(index_dtype, value_dtype):
        index = tirx.const(-1, index_dtype) if last else tirx.max_value(index_dtype)
        if is_float:
            value = _float_extreme(value_dtype, not largest)
        else:
            value = tirx.min_value(value_dtype) if largest else tirx.max_value(value_dtype)
        return index, value

    return te.comm_reducer(combine, identity, name="argmax" if largest else "argmin")


def _arg_reduce(op, ins, ctx, name):
    (x,) = ins
    xt = op.operands[0].type
    rank = len(xt.shape)
    axis = attr_or_default(op, "axis") % rank
    keep = attr_or_default(op, "keepdims")
    xs = ctx.shape(xt)
    if str(x.dtype) == "bfloat16":
        # TVM compiled the widening cast inside the tuple reduction as a cast of the raw
        # bits (uint16) to float: the indices came out wrong
        raise PirError("tvm codegen: bf16 arg reductions are not lowered (TVM miscompiles "
                       "them)")
    x = _widened_tensor(x, ctx, name)  # f16 compares as f32, the same order
    k = te.reduce_axis((0, xs[axis]), name=f"{name}_k")
    reducer = _arg_reducer(op.name == "prim.argmax", bool(attr_or_default(
        op, "select_last_index")), str(x.dtype))

    def index(*i):
        src = list(i[:axis]) + [k.var] + list(i[axis + 1 if keep else axis:])
        return reducer((k.var.astype("int64"), x(*src)), axis=k)

    idx, _ = te.compute(ctx.shape(_out_type(op)), index, name=name)
    return idx


def _widened_tensor(x: te.Tensor, ctx: _Ctx, name: str) -> te.Tensor:
    if str(x.dtype) != "float16":
        return x
    return te.compute(x.shape, lambda *i: x(*i).astype("float32"), name=ctx.name(
        f"{name}_f32", "widened"))


RULES["prim.argmax"] = _arg_reduce
RULES["prim.argmin"] = _arg_reduce

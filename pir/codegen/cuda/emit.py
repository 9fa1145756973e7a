"""The CUDA C emitter: the value of any prim value of a group at a given index, as C statements.

A fusion group is one kernel; every op in it is inlined.  :meth:`Emitter.value` answers "the
value of ``v`` at multi-index ``idx``" by emitting C statements (SSA: one ``const`` local per
op) and returning the name that holds it, recursing into the operands at the indices the op
reads: an elementwise op reads its operands at the same index (its C spelling comes from the
table in :mod:`pir.codegen.cuda.ops`), a broadcast / transpose / slice maps the index, a
reshape goes through the linear index, pad and concat branch, gather loads its index first, a
reduction loops over the reduced axes (the schedules in :mod:`pir.codegen.cuda.schedule` lift
trailing-axis reductions out into parallel row reductions instead), and block arguments and
constant arrays are loads.  Values are memoised per scope, so a value read twice at one
index is computed once, and nothing computed inside a branch or a loop leaks out of it.

The *linear* index travels with the multi-index through elementwise ops and reshapes: an
argument reached with the linear index of the element being computed (``canon_lin``) is read
where the schedule's vector load put it (``vec_regs``), so elementwise groups and norm rows use
16-byte loads wherever the data are contiguous.
"""

from __future__ import annotations

import contextlib
from math import prod

import numpy as np

from pir.codegen.cuda import dtypes as dt
from pir.codegen.cuda.limits import bits
from pir.codegen.cuda.ops import reducer, spell
from pir.codegen.sums import CUDA_SUMS, SumBlocks
from pir.errors import PirError
from pir.ir.dimexpr import DimExpr, FloorDiv
from pir.ir.core import OpResult, Value, attr_or_default
from pir.ir.types import TensorType

__all__ = ["Emitter", "NotRowwise", "IDX", "shape_of"]

IDX = "long long"  # the type of index arithmetic


class NotRowwise(Exception):
    """A precomputed row value was read at another row: the row schedule does not apply."""


def shape_of(v: Value) -> tuple:
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None:
        raise PirError("cuda codegen: unranked tensors are not supported")
    if any(d is None for d in t.shape):
        raise PirError("cuda codegen: a dim is unknown (?); give it a name")
    if any(d == 0 for d in t.shape):
        raise PirError("cuda codegen: empty tensors are not supported")
    dt.storage(t.dtype)
    return t.shape


def _atomic(expr: str) -> bool:
    return expr.replace("_", "").replace(".", "").isalnum() or expr.lstrip("-").isdigit()


def _add(a: str, b: str) -> str:
    if a == "0":
        return b
    if b == "0":
        return a
    return f"({a} + {b})"


def _mul(a: str, b: str) -> str:
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    return f"({a} * {b})"


class Emitter:
    """Emits the statements of one kernel body; see the module docstring."""

    def __init__(self, dims: dict[str, str], sums: SumBlocks = CUDA_SUMS):
        self.lines: list[str] = []
        self.sums = sums  # how long float sums are taken (pir.codegen.sums)
        self.depth = 1
        self.memo: list[dict] = [{}]
        self.n = 0
        self.dims = dims  # symbol -> C expression of its size
        self.ptr: dict[Value, str] = {}  # block arguments and constant arrays -> pointer
        self.splat: dict[Value, object] = {}  # constants holding one value -> that value
        self.fixed: dict[Value, tuple[tuple[str, ...], str]] = {}  # row values: (outer, name)
        self.vec_regs: dict[Value, str] = {}  # argument -> register array of this element
        self.canon_lin: str | None = None  # linear index of the element being computed
        self.lane: str = "0"  # its index in the register arrays
        self.lane_k: str = "0"  # the lane, in the registers of one vector load
        self.hits: set[Value] = set()  # arguments read at canon_lin
        # lane-contiguous reads (a bias or a norm's weight along the row): the last index is
        # the lane's own and the others do not change across lanes, so one vector load
        # serves the lanes; keyed by (argument, the other indices)
        self.lane_last: str | None = None
        self.lane_fixed: tuple[str, ...] = ()  # the element's indices that lanes share
        self.vec = 1
        self.contig_regs: dict[tuple, str] = {}
        self.contig_hits: set[tuple] = set()

    # -- statements --------------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def fresh(self, hint: str = "v") -> str:
        self.n += 1
        return f"{hint}{self.n}"

    def _get(self, key):
        for m in reversed(self.memo):
            if key in m:
                return m[key]
        return None

    def let(self, ctype: str, expr: str, hint: str = "v") -> str:
        """``expr`` in a new const local (or as it is when it is a name or a number)."""
        if _atomic(expr):
            return expr
        key = ("let", ctype, expr)
        hit = self._get(key)
        if hit is not None:
            return hit
        name = self.fresh(hint)
        self.line(f"const {ctype} {name} = {expr};")
        self.memo[-1][key] = name
        return name

    @contextlib.contextmanager
    def scope(self, header: str):
        """A C block (``if (...)``, ``for (...)``, or ``""``): locals made inside stay there."""
        self.line(f"{header} {{" if header else "{")
        self.depth += 1
        self.memo.append({})
        try:
            yield
        finally:
            self.memo.pop()
            self.depth -= 1
            self.line("}")

    # -- index arithmetic --------------------------------------------------------------------

    def dim(self, d) -> str:
        if isinstance(d, int):
            return str(d)
        if isinstance(d, DimExpr):
            return c_dim_expr(d, self.dims)
        return self.dims[d]

    def count(self, shape) -> str:
        out = "1"
        for d in shape:
            out = _mul(out, self.dim(d))
        return out

    def delin(self, lin: str, shape) -> tuple[str, ...]:
        """The multi-index of linear index ``lin`` in ``shape`` (row-major)."""
        if not shape:
            return ()
        out: list[str] = []
        rest = lin
        for d in reversed(shape[1:]):
            ds = self.dim(d)
            if ds == "1":
                out.append("0")
                continue
            out.append(self.let(IDX, f"{rest} % {ds}", "i"))
            rest = self.let(IDX, f"{rest} / {ds}", "q")
        out.append("0" if shape[0] == 1 else rest)
        return tuple(reversed(out))

    def lin(self, idx, shape) -> str:
        acc = "0"
        for i, d in zip(idx, shape):
            acc = _add(_mul(acc, self.dim(d)), i)
        return self.let(IDX, acc, "l") if not _atomic(acc) else acc

    # -- values ------------------------------------------------------------------------------

    def value(self, v: Value, idx: tuple[str, ...], lin: str | None = None) -> str:
        """The C name (or literal) holding ``v`` at ``idx`` (compute type)."""
        if v in self.fixed:
            outer, name = self.fixed[v]
            if tuple(idx[:len(outer)]) != outer:
                raise NotRowwise(v.name)
            return name
        if v in self.splat:
            return dt.literal(self.splat[v], v.type.dtype)
        key = (v, idx)
        hit = self._get(key)
        if hit is not None:
            return hit
        if v in self.ptr:
            out = self._load(v, idx, lin)
        elif isinstance(v, OpResult):
            out = self._op(v, idx, lin)
        else:
            raise PirError(f"cuda codegen: %{v.name} is not defined in the group")
        self.memo[-1][key] = out
        return out

    def _load(self, v: Value, idx, lin) -> str:
        t = v.type
        ctype = dt.compute(t.dtype)
        if lin is not None and lin == self.canon_lin:
            self.hits.add(v)
            if v in self.vec_regs:
                return self.let(ctype, dt.load(t.dtype, f"{self.vec_regs[v]}[{self.lane}]"))
        key = self._contiguous(v, idx)
        if key is not None:
            self.contig_hits.add(key)
            if key in self.contig_regs:
                return self.let(ctype, dt.load(t.dtype,
                                               f"{self.contig_regs[key]}[{self.lane_k}]"))
        where = lin if lin is not None else self.lin(idx, shape_of(v))
        return self.let(ctype, dt.load(t.dtype, f"{self.ptr[v]}[{where}]"))

    def _contiguous(self, v: Value, idx) -> tuple | None:
        if self.lane_last is None or self.vec < 2 or not idx or idx[-1] != self.lane_last:
            return None
        last = shape_of(v)[-1]
        if not isinstance(last, int) or last % self.vec:
            return None
        # by position among the shared indices (probe and final emission name them apart)
        rest = []
        for i in idx[:-1]:
            if i in self.lane_fixed:
                rest.append(("at", self.lane_fixed.index(i)))
            elif i.isdigit():
                rest.append(("lit", i))
            else:
                return None
        return (v, tuple(rest))

    def _op(self, v: OpResult, idx, lin) -> str:
        op = v.op
        short = op.name.split(".", 1)[1] if op.name.startswith("prim.") else None
        rule = _RULES.get(short) if short else None
        if rule is None:
            if short is not None and short in _ELEMENTWISE_OK:
                return self._elementwise(op, short, idx, lin)
            raise PirError(f"cuda codegen: no rule for {op.name}")
        return rule(self, op, idx, lin)

    def _elementwise(self, op, short: str, idx, lin) -> str:
        args = [self.value(x, idx, lin) for x in op.operands]
        src = op.operands[-1].type.dtype  # select: the branches' type; others: all alike
        if short in ("eq", "ne", "lt", "le", "gt", "ge"):
            src = op.operands[0].type.dtype
        ctype = dt.compute(src)
        expr = spell(short, dt.family(src), ctype, bits(ctype), args)
        out = op.results[0].type.dtype
        return self.let(dt.compute(out), dt.rounded(out, expr))


# -- rules for the ops that are not elementwise ------------------------------------------------

def _cast(e: Emitter, op, idx, lin) -> str:
    x = op.operands[0]
    src, dst = x.type.dtype, op.results[0].type.dtype
    val = e.value(x, idx, lin)
    ctype = dt.compute(dst)
    if dt.family(dst) == "bool":
        return e.let(ctype, f"({val} != 0)")
    return e.let(ctype, dt.rounded(dst, f"({ctype})({val})" if dt.compute(src) != ctype
                                   else val))


def _broadcast(e: Emitter, op, idx, lin) -> str:
    x = op.operands[0]
    src = shape_of(x)
    out = shape_of(op.results[0])
    dims = list(op.broadcast_dimensions)
    sidx = tuple("0" if (d == 1 and out[r] != 1) else idx[r] for d, r in zip(src, dims))
    same = tuple(src) == tuple(out) and dims == list(range(len(out)))
    return e.value(x, sidx, lin if same else None)


def _reshape(e: Emitter, op, idx, lin) -> str:
    x = op.operands[0]
    out = shape_of(op.results[0])
    lin = lin if lin is not None else e.lin(idx, out)
    return e.value(x, e.delin(lin, shape_of(x)), lin)


def _transpose(e: Emitter, op, idx, lin) -> str:
    perm = list(op.permutation)
    sidx = [None] * len(perm)
    for i, p in enumerate(perm):
        sidx[p] = idx[i]
    same = perm == list(range(len(perm)))
    return e.value(op.operands[0], tuple(sidx), lin if same else None)


def _slice(e: Emitter, op, idx, lin) -> str:
    x = op.operands[0]
    starts = op.start_indices
    axes = attr_or_default(op, "axes") or tuple(range(len(starts)))
    strides = attr_or_default(op, "strides") or (1,) * len(starts)
    sidx = list(idx)
    for a, lo, step in zip(axes, starts, strides):
        sidx[a] = e.let(IDX, _add(str(lo), _mul(idx[a], str(step))), "i") \
            if (lo or step != 1) else idx[a]
    return e.value(x, tuple(sidx))


def _pad(e: Emitter, op, idx, lin) -> str:
    x, pv = op.operands
    src = shape_of(x)
    low, high = op.edge_padding_low, op.edge_padding_high
    interior = attr_or_default(op, "interior_padding") or (0,) * len(low)
    conds, sidx = [], []
    for i, d, lo, hi, m in zip(idx, src, low, high, interior):
        if lo == hi == m == 0:
            sidx.append(i)
            continue
        p = e.let(IDX, f"({i} - {lo})" if lo else i, "p")
        ds = e.dim(d)
        if m:
            conds.append(f"{p} >= 0 && {p} % {m + 1} == 0 && {p} / {m + 1} < {ds}")
            sidx.append(e.let(IDX, f"{p} / {m + 1}", "p"))
        else:
            conds.append(f"{p} >= 0 && {p} < {ds}")
            sidx.append(p)
    ctype = dt.compute(op.results[0].type.dtype)
    fill = e.value(pv, ())
    res = e.fresh("pad")
    e.line(f"{ctype} {res} = {fill};")
    if conds:
        with e.scope(f"if ({' && '.join(conds)})"):
            e.line(f"{res} = {e.value(x, tuple(sidx))};")
    else:
        e.line(f"{res} = {e.value(x, tuple(sidx))};")
    return res


def _concat(e: Emitter, op, idx, lin) -> str:
    axis = op.dimension
    ctype = dt.compute(op.results[0].type.dtype)
    res = e.fresh("cat")
    e.line(f"{ctype} {res};")
    off = "0"
    n = len(op.operands)
    for k, x in enumerate(op.operands):
        size = e.dim(shape_of(x)[axis])
        end = _add(off, size)
        sidx = list(idx)
        header = ("if" if k == 0 else "else if") + f" ({idx[axis]} < {end})"
        if k == n - 1:
            header = "else" if k else ""
        with e.scope(header):
            # the operand's index is computed inside the branch that reads it
            sidx[axis] = f"({idx[axis]} - {off})" if off != "0" else idx[axis]
            e.line(f"{res} = {e.value(x, tuple(sidx))};")
        off = end
    return res


def _gather(e: Emitter, op, idx, lin) -> str:
    x, ind = op.operands
    axis = op.axis
    r = len(shape_of(ind))
    iv = e.value(ind, tuple(idx[axis:axis + r]))
    d = e.dim(shape_of(x)[axis])
    g = e.let(IDX, f"(long long)({iv})", "g")
    # indices must lie in [0, d) (prim.gather); clamped so that a bad one never reads outside
    g = e.let(IDX, f"({g} < 0 ? 0 : ({g} >= {d} ? {d} - 1 : {g}))", "g")
    return e.value(x, tuple(idx[:axis]) + (g,) + tuple(idx[axis + r:]))


def _iota(e: Emitter, op, idx, lin) -> str:
    out = op.results[0].type.dtype
    ctype = dt.compute(out)
    return e.let(ctype, dt.rounded(out, f"({ctype})({idx[op.dimension]})"))


def _reduce(e: Emitter, op, idx, lin) -> str:
    """A reduction computed in place by a serial loop over the reduced axes (the pointwise
    schedule: one thread per output element)."""
    x = op.operands[0]
    src = shape_of(x)
    axes = sorted(a % len(src) for a in op.axes)
    keep = bool(op.keepdims)
    fam, ctype = dt.family(x.type.dtype), dt.compute(x.type.dtype)
    combine, init = reducer(op.name.split(".")[1], fam, ctype)
    acc = e.fresh("acc")
    e.line(f"{ctype} {acc} = {init};")
    loops = {a: e.fresh("r") for a in axes}
    sidx, k = [], 0
    for a in range(len(src)):
        if a in loops:
            sidx.append(loops[a])
            if keep:
                k += 1
        else:
            sidx.append(idx[k])
            k += 1
    count = static_count([src[a] for a in axes])
    blocked = op.name == "prim.reduce_sum" and ctype == "float" and (
        count is None or count > e.sums.terms)
    if blocked:  # a long f32 sum: partials of `terms` terms into an f64 total
        total, k = e.fresh("tot"), e.fresh("cnt")
        e.line(f"double {total} = 0.0;")
        e.line(f"int {k} = 0;")
    with contextlib.ExitStack() as stack:
        for a in axes:
            stack.enter_context(e.scope(f"for ({IDX} {loops[a]} = 0; {loops[a]} < "
                                        f"{e.dim(src[a])}; ++{loops[a]})"))
        xv = e.value(x, tuple(sidx))
        e.line(f"{acc} = {spell(combine, fam, ctype, bits(ctype), [acc, xv])};")
        if blocked:
            with e.scope(f"if (++{k} == {e.sums.terms})"):
                e.line(f"{total} += (double){acc};")
                e.line(f"{acc} = 0.0f;")
                e.line(f"{k} = 0;")
    if blocked:
        acc = e.let(ctype, f"(float)({total} + (double){acc})")
    return e.let(ctype, dt.rounded(x.type.dtype, acc))  # accumulated in f32, rounded once


def _argreduce(e: Emitter, op, idx, lin) -> str:
    """argmax / argmin along one axis by a serial loop: ties go to the first index (the last
    with ``select_last_index``), and NaN counts as the extreme, as numpy's argmax does."""
    x = op.operands[0]
    src = shape_of(x)
    axis = op.axis % len(src)
    keep, last = bool(op.keepdims), bool(attr_or_default(op, "select_last_index"))
    ctype = dt.compute(x.type.dtype)
    cmp = ">" if op.name == "prim.argmax" else "<"
    outer = list(idx)
    if not keep:
        outer.insert(axis, "0")
    first = list(outer)
    first[axis] = "0"
    best, at = e.fresh("best"), e.fresh("at")
    e.line(f"{ctype} {best} = {e.value(x, tuple(first))};")
    e.line(f"long long {at} = 0;")
    r = e.fresh("r")
    with e.scope(f"for ({IDX} {r} = 1; {r} < {e.dim(src[axis])}; ++{r})"):
        cur = list(outer)
        cur[axis] = r
        xv = e.value(x, tuple(cur))
        better = (f"({xv} {cmp}= {best} || {xv} != {xv})" if last else
                  f"({xv} {cmp} {best} || ({xv} != {xv} && {best} == {best}))")
        with e.scope(f"if {better}"):
            e.line(f"{best} = {xv};")
            e.line(f"{at} = {r};")
    out = dt.compute(op.results[0].type.dtype)
    return e.let(out, f"({out})({at})")


def _cumsum(e: Emitter, op, idx, lin) -> str:
    """One element of a cumulative sum: a serial loop over the elements before it (after it
    with ``reverse``; excluding itself with ``exclusive``), accumulated in the compute type."""
    x = op.operands[0]
    src = shape_of(x)
    axis = op.axis % len(src)
    ctype = dt.compute(x.type.dtype)
    i, d = idx[axis], e.dim(src[axis])
    ex, rev = bool(attr_or_default(op, "exclusive")), bool(attr_or_default(op, "reverse"))
    lo = (f"{i} + 1" if ex else i) if rev else "0"
    hi = d if rev else (i if ex else f"{i} + 1")
    acc, r = e.fresh("acc"), e.fresh("r")
    e.line(f"{ctype} {acc} = {dt.literal(0, x.type.dtype)};")
    with e.scope(f"for ({IDX} {r} = {lo}; {r} < {hi}; ++{r})"):
        cur = list(idx)
        cur[axis] = r
        xv = e.value(x, tuple(cur))
        fam = dt.family(x.type.dtype)
        e.line(f"{acc} = {spell('add', fam, ctype, bits(ctype), [acc, xv])};")
    return e.let(ctype, dt.rounded(x.type.dtype, acc))


_RULES = {
    "cast": _cast, "broadcast_in_dim": _broadcast, "reshape": _reshape,
    "transpose": _transpose, "slice": _slice, "pad": _pad, "concat": _concat,
    "gather": _gather, "iota": _iota, "reduce_sum": _reduce, "reduce_prod": _reduce,
    "reduce_max": _reduce, "reduce_min": _reduce, "argmax": _argreduce,
    "argmin": _argreduce, "cumsum": _cumsum,
}

# elementwise prims: their C spelling is the table's (pir.codegen.cuda.ops)
from pir.ir.dialects.prim.elementwise import BINARY, COMPARE, PREDICATES, UNARY  # noqa: E402

_ELEMENTWISE_OK = frozenset(UNARY) | frozenset(PREDICATES) | frozenset(BINARY) | \
    frozenset(COMPARE) | {"select"}


def splat_value(arr: np.ndarray):
    """The one value of a constant that repeats it, else None."""
    flat = np.asarray(arr).reshape(-1)
    if flat.size > 0 and (flat == flat[0]).all():
        return flat[0].item()
    return None


def static_count(shape) -> int | None:
    return prod(shape) if all(isinstance(d, int) for d in shape) else None


def launch_dim_expr(d) -> str:
    """Dim ``d`` in the launch-expression language (pir.codegen.cuda.launch): ``{name}`` for
    a symbol's size, ``//``, ``min``, ``max``."""
    if isinstance(d, int):
        return str(d)
    if isinstance(d, str):
        return "{" + d + "}"
    terms = []
    for mono, coeff in d.terms:
        factors = [] if coeff == 1 and mono else [f"({coeff})"]
        for atom in mono:
            if isinstance(atom, str):
                factors.append("{" + atom + "}")
            elif isinstance(atom, FloorDiv):
                factors.append(f"(({launch_dim_expr(atom.num)}) // {atom.den})")
            else:
                args = ", ".join(launch_dim_expr(a) for a in atom.args)
                factors.append(f"{atom.kind}({args})")
        terms.append(" * ".join(factors))
    return "(" + " + ".join(terms) + ")"


def c_dim_expr(d, names: dict[str, str]) -> str:
    """The C expression (long long) of dim ``d`` with symbols spelled by ``names``.  A
    floordiv's numerator is never negative (its canonical form keeps coefficients and
    constant in [0, k) and dims are >= 0), so C's truncating ``/`` is the floor."""
    if isinstance(d, int):
        return str(d)
    if isinstance(d, str):
        return names[d]
    terms = []
    for mono, coeff in d.terms:
        factors = [] if coeff == 1 and mono else [f"{coeff}LL"]
        for atom in mono:
            if isinstance(atom, str):
                factors.append(names[atom])
            elif isinstance(atom, FloorDiv):
                factors.append(f"(({c_dim_expr(atom.num, names)}) / {atom.den}LL)")
            else:
                args = [c_dim_expr(a, names) for a in atom.args]
                out = args[0]
                for a in args[1:]:
                    op = "<" if atom.kind == "min" else ">"
                    out = f"(({out}) {op} ({a}) ? ({out}) : ({a}))"
                factors.append(out)
        terms.append("*".join(factors))
    return "(" + " + ".join(terms) + ")"

"""Lower a block of prim ops to a TVM tensor-expression graph and a PrimFunc.

The block is the body of a (future) ``fusion.group``: its arguments are the kernel inputs and
its terminator's operands are the kernel outputs.  Each prim op becomes one ``te.compute`` by
a rule of :data:`RULES` (prim op name -> rule), in the style of tinygrad's renderers: all
elementwise ops share one template and differ only by a scalar function; shape ops
(broadcast_in_dim, reshape, transpose, slice, concat, pad, iota) are index maps; reductions use
``te.reduce_axis``.  Index-map computes are cheap to inline, which the CPU schedule
(:mod:`pir.codegen.tvm.schedule`) does, so writing one compute per op costs nothing at run time.

Symbolic dims (``str`` dims of ``TensorType``) become TVM size variables, one per name, so one
compiled kernel serves every size of that dim.  Constants inside the block become immediates
when they hold one value repeated (splats), and extra kernel parameters otherwise.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import tvm
from tvm import te, tirx

from pir.codegen.tvm.dims import derived_dims
from pir.errors import PirError
from pir.ir.core import Block, Operation, Value, attr_or_default
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.opdef import Terminator
from pir.ir.types import DType, TensorType

__all__ = ["LoweredKernel", "lower_block", "RULES", "tvm_dtype"]

# pir element type -> TVM dtype string.  Narrow floats (f8, f4) and int4/2 have no TVM
# arithmetic on the CPU; a group holding them is not lowered (the caller keeps it on the
# reference path).
_TVM_DTYPES = {
    DType.BOOL: "bool", DType.I8: "int8", DType.I16: "int16", DType.I32: "int32",
    DType.I64: "int64", DType.U8: "uint8", DType.U16: "uint16", DType.U32: "uint32",
    DType.U64: "uint64", DType.F16: "float16", DType.BF16: "bfloat16", DType.F32: "float32",
    DType.F64: "float64",
}


def tvm_dtype(dtype: DType) -> str:
    try:
        return _TVM_DTYPES[dtype]
    except KeyError:
        raise PirError(f"tvm codegen: element type {dtype.value} is not supported") from None


@dataclass
class LoweredKernel:
    """What :func:`lower_block` produces.

    ``func`` is the schedulable PrimFunc (``create_prim_func``); its parameters are, in order,
    the block arguments, the non-splat constants (``params``), then the outputs.  ``sizes``
    maps each symbolic dim name to its TVM variable (bound at run time from buffer shapes).
    ``reduce_inner`` tells the schedule how many trailing dims every reduction of the group
    reduces (the "row" structure of softmax / layer_norm / rms_norm), or ``None`` when the
    reductions do not share that form and each stage is scheduled on its own.
    """

    func: tvm.tirx.PrimFunc
    inputs: list[te.Tensor]
    params: list[tuple[te.Tensor, np.ndarray]]
    outputs: list[te.Tensor]
    output_types: list[TensorType]
    sizes: dict[str, tirx.Var]
    reduce_inner: int | None
    name: str = "main"
    notes: list[str] = field(default_factory=list)


class _Ctx:
    """State shared by the rules while one block is lowered."""

    def __init__(self) -> None:
        self.sizes: dict[str, tirx.Var] = {}
        self.names: set[str] = set()
        self.params: list[tuple[te.Tensor, np.ndarray]] = []
        # (rank of the reduced operand, reduced axes) of every reduction, for reduce_inner
        self.reductions: list[tuple[int, tuple[int, ...]]] = []
        # the tensor of every value lowered so far (for rules that look past their operands)
        self.env: dict[Value, te.Tensor] = {}

    def dim(self, d) -> tirx.PrimExpr | int:
        if isinstance(d, int):
            return d
        if isinstance(d, str):
            # One variable per symbol name: the same name is the same size everywhere in a
            # function, which is what lets TVM prove that shapes match.
            if d not in self.sizes:
                self.sizes[d] = te.var(d, "int32")
            return self.sizes[d]
        raise PirError("tvm codegen: unknown dims (?) are not supported; give the dim a name")

    def shape(self, t: TensorType) -> tuple:
        if t.shape is None:
            raise PirError("tvm codegen: unranked tensors are not supported")
        return tuple(self.dim(d) for d in t.shape)

    def name(self, hint: str | None, default: str) -> str:
        """A unique, legal identifier for a compute (ONNX names hold '.', '/', ':')."""
        base = re.sub(r"\W", "_", hint or default, flags=re.ASCII) or default
        if base[0].isdigit():
            base = "v" + base
        if keyword.iskeyword(base) or base in _SCRIPT_NAMES:
            base += "_"  # a buffer named `not` or `T` makes the printed TIR unparsable
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name


#: Names the printed TIR (TVMScript) uses itself: a buffer must not shadow them.
_SCRIPT_NAMES = frozenset({"T", "I", "Axis", "range", "tvm"})


# -- rules -----------------------------------------------------------------------------------

Rule = Callable[[Operation, list[te.Tensor], _Ctx, str], te.Tensor]
#: prim op name -> rule(op, input tensors, context, compute name) -> output tensor
RULES: dict[str, Rule] = {}


def _out_type(op: Operation) -> TensorType:
    return op.results[0].type


def elementwise(fn: Callable[..., tirx.PrimExpr]) -> Rule:
    """The one template of every elementwise op: out[i] = fn(in0[i], in1[i], ...), with the
    output's dtype passed to ``fn`` as a keyword for the ops that need it (cast, sign).

    f16 and bf16 operands are widened to f32 and the result rounded once, as the reference
    runtime computes them (docs/prim.md): the CPU has no f16 math, TVM's LLVM backend has no
    f16 versions of most functions (asin, erf...), and none at all for bf16."""

    def rule(op, ins, ctx, name):
        t = _out_type(op)
        dtype = tvm_dtype(t.dtype)
        narrow = dtype in _NARROW_FLOATS or any(str(x.dtype) in _NARROW_FLOATS for x in ins)
        if not narrow:
            return te.compute(ctx.shape(t), lambda *i: fn(*(x(*i) for x in ins), dtype=dtype),
                              name=name)
        work = "float32" if dtype in _NARROW_FLOATS else dtype

        def widened(*i):
            out = fn(*(_widen(x(*i)) for x in ins), dtype=work)
            return out.astype(dtype) if work != dtype else out

        return te.compute(ctx.shape(t), widened, name=name)

    return rule


_NARROW_FLOATS = ("float16", "bfloat16")


def _widen(x):
    return x.astype("float32") if _dtype_of(x) in _NARROW_FLOATS else x


def _dtype_of(x) -> str:
    # TVM 0.27 tensor loads are ``tvm.ir.expr.Call`` objects with ``ty`` and no ``dtype``
    return str(x.dtype) if hasattr(x, "dtype") else str(x.ty)


def _is_float(x) -> bool:
    return _dtype_of(x).startswith(("float", "bfloat"))


def _sign(x, dtype):
    zero, one = tirx.const(0, dtype), tirx.const(1, dtype)
    s = tirx.Select(x > zero, one, tirx.Select(x < zero, -one, zero))
    # NaN compares false both ways and would give 0: keep it NaN, as the reference does.
    return tirx.Select(tirx.isnan(x), x, s) if _is_float(x) else s


def _not(x, dtype):
    return tirx.Not(x) if dtype == "bool" else tirx.bitwise_not(x)


def _extern(name32: str, name64: str):
    """A libm function by name (``expm1f`` / ``expm1``): TVM's LLVM backend has no rule for
    these (sinh, cosh) or an inaccurate one (tanh, atanh, expm1 as exp - 1 lose all precision
    near 0).  A call is scalar, so only the ops no kernel is tuned for use it."""

    def call(*args, dtype):
        fn = {"float32": name32, "float64": name64}[_dtype_of(args[0])]
        return tirx.call_pure_extern(_dtype_of(args[0]), fn, *args)

    return call


def _safe_divisor(a, b):
    """(divisor, fix): integer division by 0 traps (SIGFPE) on x86, and so does MIN / -1, so
    those divide by 1 instead and ``fix(q_or_r, quotient)`` picks the prim result."""
    dtype = _dtype_of(a)
    zero, one = tirx.const(0, dtype), tirx.const(1, dtype)
    bad = tirx.EQ(b, zero)
    if dtype.startswith("int"):
        bad = tirx.Or(bad, tirx.EQ(b, tirx.const(-1, dtype)))
    return tirx.Select(bad, one, b), bad


def _div(a, b, dtype):
    if _is_float(a):
        return a / b
    d, bad = _safe_divisor(a, b)
    zero = tirx.const(0, dtype)
    # x / 0 gives 0 (the reference's choice; prim leaves it unspecified), x / -1 is -x
    special = tirx.Select(tirx.EQ(b, zero), zero, zero - a)
    return tirx.Select(bad, special, tirx.truncdiv(a, d))


def _rem(a, b, dtype):
    if _is_float(a):
        # exact, as C's fmod (a - b * trunc(a / b) is not once the quotient passes 2**24)
        return _extern("fmodf", "fmod")(a, b, dtype=dtype)
    d, bad = _safe_divisor(a, b)
    return tirx.Select(bad, tirx.const(0, dtype), tirx.truncmod(a, d))


def _nan_max(a, b):
    """max that returns NaN when either operand is NaN, as prim requires (TIR's max and
    LLVM's maxnum return the other operand)."""
    return tirx.Select(tirx.Or(a > b, tirx.isnan(a)), a, b)


def _nan_min(a, b):
    return tirx.Select(tirx.Or(a < b, tirx.isnan(a)), a, b)


def _as_int8(x):
    """i1 operands of compares as int8 (false < true): TVM's LLVM backend compares i1
    vectors with a float compare (invalid IR), and TVMScript prints ``(a < b) != c`` as the
    chained comparison ``a < b != c``, which parses back as something else."""
    return x.astype("int8") if _dtype_of(x) == "bool" else x


def _compare(fn):
    return lambda a, b, dtype: fn(_as_int8(a), _as_int8(b))


def _ne(a, b, dtype):
    # TIR's NE is LLVM's ordered ``fcmp one``, false for NaN (and TVM simplifies not(a == b)
    # back to it); prim's ne is true for NaN
    a, b = _as_int8(a), _as_int8(b)
    if not _is_float(a):
        return tirx.NE(a, b)
    return tirx.Or(tirx.NE(a, b), tirx.Or(tirx.isnan(a), tirx.isnan(b)))


def _pow(a, b, dtype):
    if not _is_float(a):
        raise PirError("tvm codegen: prim.pow of integers has no lowering (TIR's pow is "
                       "float only)")
    return tirx.power(a, b)


def _fast_tanh(x, dtype):
    """Eigen's float tanh: an odd rational function on [-7.9, 7.9] (tanh is +-1 in f32
    beyond), x itself below 4e-4; within 4e-7 relative.  TIR's tanh is
    (1 - e^-2x) / (1 + e^-2x), 1.3% off at 1e-6."""
    if dtype != "float32":
        return _extern("tanhf", "tanh")(x, dtype=dtype)
    f = lambda v: tirx.const(v, "float32")  # noqa: E731
    xc = tirx.max(tirx.min(x, f(7.90531110763549805)), f(-7.90531110763549805))
    x2 = xc * xc
    p = f(-2.76076847742355e-16)
    for c in (2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
              1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03):
        p = p * x2 + f(c)
    q = f(1.19825839466702e-06)
    for c in (1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03):
        q = q * x2 + f(c)
    y = tirx.Select(tirx.abs(x) < f(0.0004), x, xc * p / q)
    return tirx.Select(tirx.isnan(x), x, y)


def _bits(logical, bitwise):
    return lambda a, b, dtype: logical(a, b) if dtype == "bool" else bitwise(a, b)


def _shift(fn, lhs_negative_fill: bool):
    """prim shifts are total: a shift by < 0 or >= the bit width gives 0 (or -1 for an
    arithmetic right shift of a negative value), where C and LLVM leave it undefined."""

    def shift(a, b, dtype):
        bits = tvm.DataType(dtype).bits
        fill = tirx.const(0, dtype)
        if lhs_negative_fill and dtype.startswith("int"):
            fill = tirx.Select(a < tirx.const(0, dtype), tirx.const(-1, dtype), fill)
        ok = tirx.And(b >= tirx.const(0, dtype), b < tirx.const(bits, dtype))
        return tirx.Select(ok, fn(a, b), fill)

    return shift


# exp and erf of f32 are written out as polynomials.  TIR's exp/erf become calls to libm's
# scalar expf/erff, one lane at a time: that made softmax 7.8x and GELU 45x the memory floor.
# These forms are plain arithmetic, which LLVM vectorises; both are accurate to a few ulp.

def _fast_exp(x, dtype):
    """Cephes' expf: exp(x) = 2**n * exp(r), |r| <= ln2/2, exp(r) by a degree-6 polynomial,
    2**n by building the float's exponent bits."""
    if dtype != "float32":
        return tirx.exp(x)
    f = lambda v: tirx.const(v, "float32")  # noqa: E731
    hi, lo = f(88.3762626647950), f(-87.3365478515625)  # beyond these: inf, and 0 / denormal
    xc = tirx.max(tirx.min(x, hi), lo)
    n = tirx.floor(xc * f(1.44269504088896341) + f(0.5))
    r = xc - n * f(0.693359375) - n * f(-2.12194440e-4)  # ln 2 in two parts: exact n * hi
    p = f(1.9875691500e-4)
    for c in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
              5.0000001201e-1):
        p = p * r + f(c)
    y = p * r * r + r + f(1.0)
    two_n = tirx.reinterpret("float32", tirx.shift_left(n.astype("int32") + 127, 23))
    y = y * two_n
    y = tirx.Select(x > hi, f(float("inf")), y)
    y = tirx.Select(x < lo, f(0.0), y)
    return tirx.Select(tirx.isnan(x), x, y)


def _fast_erf(x, dtype):
    """Eigen's float erf: an odd rational function of x on [-4, 4] (erf is +-1 in f32
    beyond)."""
    if dtype != "float32":
        return tirx.erf(x)
    f = lambda v: tirx.const(v, "float32")  # noqa: E731
    xc = tirx.max(tirx.min(x, f(4.0)), f(-4.0))
    x2 = xc * xc
    p = f(-2.72614225801306e-10)
    for c in (2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
              -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02):
        p = p * x2 + f(c)
    q = f(-1.45660718464996e-05)
    for c in (-2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
              -1.42647390514189e-02):
        q = q * x2 + f(c)
    return tirx.Select(tirx.isnan(x), x, xc * p / q)


# Elementwise ops: name -> scalar function (operands..., dtype=output dtype).
_UNARY = {
    "neg": lambda x, dtype: -x,
    "abs": lambda x, dtype: tirx.abs(x),
    "exp": _fast_exp,
    "log": lambda x, dtype: tirx.log(x),
    "log1p": lambda x, dtype: tirx.log1p(x),
    "expm1": _extern("expm1f", "expm1"),
    "sqrt": lambda x, dtype: tirx.sqrt(x),
    "rsqrt": lambda x, dtype: tirx.rsqrt(x),
    "sin": lambda x, dtype: tirx.sin(x),
    "cos": lambda x, dtype: tirx.cos(x),
    "tan": lambda x, dtype: tirx.tan(x),
    "asin": lambda x, dtype: tirx.asin(x),
    "acos": lambda x, dtype: tirx.acos(x),
    "atan": lambda x, dtype: tirx.atan(x),
    "sinh": _extern("sinhf", "sinh"),
    "cosh": _extern("coshf", "cosh"),
    "tanh": _fast_tanh,
    "asinh": lambda x, dtype: tirx.asinh(x),
    "acosh": lambda x, dtype: tirx.acosh(x),
    "atanh": _extern("atanhf", "atanh"),
    "erf": _fast_erf,
    "logistic": lambda x, dtype: tirx.sigmoid(x),
    "sign": _sign,
    "floor": lambda x, dtype: tirx.floor(x),
    "ceil": lambda x, dtype: tirx.ceil(x),
    "round": lambda x, dtype: tirx.nearbyint(x),  # ties to even under the default FP mode
    "reciprocal": lambda x, dtype: tirx.const(1, dtype) / x,
    "not": _not,
    "is_nan": lambda x, dtype: tirx.isnan(x),
    "is_inf": lambda x, dtype: tirx.isinf(x),
}
_BINARY = {
    "add": lambda a, b, dtype: a + b,
    "sub": lambda a, b, dtype: a - b,
    "mul": lambda a, b, dtype: a * b,
    "div": _div,
    "rem": _rem,
    "pow": _pow,
    "atan2": lambda a, b, dtype: tirx.atan2(a, b),
    "and": _bits(tirx.And, tirx.bitwise_and),
    "or": _bits(tirx.Or, tirx.bitwise_or),
    "xor": _bits(lambda a, b: tirx.NE(_as_int8(a), _as_int8(b)), tirx.bitwise_xor),
    "shift_left": _shift(tirx.shift_left, False),
    "shift_right": _shift(tirx.shift_right, True),
    "eq": _compare(tirx.EQ),
    "ne": _ne,
    "lt": _compare(tirx.LT),
    "le": _compare(tirx.LE),
    "gt": _compare(tirx.GT),
    "ge": _compare(tirx.GE),
    # select: a branch-free Select (both sides are in-bounds loads, so evaluating both is
    # safe, and it vectorises)
    "select": lambda p, a, b, dtype: tirx.Select(p, a, b),
}


def _cast(x, dtype):
    if dtype == "bool":  # numbers to i1: x != 0 (true for NaN)
        return _ne(x, tirx.const(0, _dtype_of(x)) if _dtype_of(x) != "bool" else
                   tirx.const(False, "bool"), dtype)
    return x.astype(dtype)  # float -> int truncates (fptosi), i1 -> 0/1


for _n, _f in {**_UNARY, **_BINARY, "cast": _cast}.items():
    RULES[f"prim.{_n}"] = elementwise(_f)


def _extreme_chain(op, ins, ctx, name):
    """prim.max / prim.min.  Floats must give NaN when any operand is NaN (TIR's max picks
    an operand by a compare, which NaN fails), and the NaN test reads each operand again: a
    chain of them (max pooling folds its window into 9 or 27 maxes) then grew 3x per link
    once inlined, and a 3x3 pool never finished compiling (binding the operands with
    tirx.Let does not help: TVM substitutes the lets back before LLVM).  So a chain of
    single-use maxes (mins) is lowered as one compute over its leaves, each read twice:
    ``isnan(l0) or isnan(l1) or ... ? NaN : max(max(l0, l1), ...)``."""
    t = _out_type(op)
    dtype = tvm_dtype(t.dtype)
    fast = tirx.max if op.name == "prim.max" else tirx.min
    if not dtype.startswith(("float", "bfloat")):
        return te.compute(ctx.shape(t), lambda *i: fast(*(x(*i) for x in ins)), name=name)
    leaves = _chain_leaves(op, ctx)
    work = "float32" if dtype in _NARROW_FLOATS else dtype  # TVM has no bf16 isnan

    def compute(*i):
        values = [_widen(x(*i)) for x in leaves]
        out, nan = values[0], tirx.isnan(values[0])
        for v in values[1:]:
            out, nan = fast(out, v), tirx.Or(nan, tirx.isnan(v))
        out = tirx.Select(nan, tirx.const(float("nan"), work), out)
        return out.astype(dtype) if work != dtype else out

    return te.compute(ctx.shape(t), compute, name=name)


def _chain_leaves(op, ctx) -> list[te.Tensor]:
    """The operands of the chain of ``op.name`` ops ending at ``op``: an operand made by the
    same op, in this block, and used only here, is expanded into its own operands."""
    leaves, stack = [], list(reversed(op.operands))
    while stack:
        v = stack.pop()
        d = getattr(v, "op", None)
        if d is not None and d.name == op.name and d.parent is op.parent and len(v.uses) == 1:
            stack.extend(reversed(d.operands))
        else:
            leaves.append(ctx.env[v])
    return leaves


RULES["prim.max"] = _extreme_chain
RULES["prim.min"] = _extreme_chain


def rule(name: str):
    def register(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn

    return register


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
    idx = []
    for d in reversed(shape):
        idx.append(tirx.floormod(lin, d))
        lin = tirx.floordiv(lin, d)
    return idx[::-1]


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

    def index(*i):
        mid = i[keep:len(i) - tail]
        rest = _unlinear(_linear(mid, om), xm) if xm else []
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


def _prod_reducer():
    return te.comm_reducer(lambda a, b: a * b, lambda t: tirx.const(1, t), name="prod")


def _float_extreme(dtype: str, largest: bool):
    return tirx.const(float("inf") if largest else float("-inf"), dtype)


# Float max / min reductions propagate NaN and start from -inf / +inf (TVM's te.max starts
# from the lowest finite float, so a row of -inf reduced to -3.4e38, and it drops NaN).
_NAN_MAX = te.comm_reducer(_nan_max, lambda t: _float_extreme(t, False), name="nan_max")
_NAN_MIN = te.comm_reducer(_nan_min, lambda t: _float_extreme(t, True), name="nan_min")


def _register_rfactor_patterns() -> None:
    """Teach TVM's rfactor the two float reducers above (it only knows sum, prod, min, max):
    without this, softmax's row max is not vectorised.  A TVM without the hook only loses
    that speed (rfactor then fails, and the schedule leaves the reduction scalar)."""
    import ctypes

    try:
        register = tvm.get_global_func("s_tir.schedule.RegisterReducer")
    except (AttributeError, ValueError):
        return
    for combine, largest in ((_nan_max, False), (_nan_min, True)):
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
    raxes = {a: te.reduce_axis((0, xs[a]), name=f"{name}_k{a}") for a in axes}
    is_float = dtype.startswith(("float", "bfloat"))
    reducer = (_FLOAT_REDUCERS.get(op.name) if is_float else None) or _REDUCERS[op.name] \
        or _prod_reducer()
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
        return te.compute(out_shape, index, name=name)
    wide = te.compute(out_shape, index, name=f"{name}_{acc}")
    return te.compute(out_shape, lambda *i: wide(*i).astype(dtype), name=name)


for _n in _REDUCERS:
    RULES[_n] = _reduce


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
            xn, yn = tirx.isnan(xv), tirx.isnan(yv)
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


# -- driver ----------------------------------------------------------------------------------

def _constant(op: ConstantOp, ctx: _Ctx, name: str) -> te.Tensor:
    arr = np.asarray(constant_value(op))
    t = op.results[0].type
    dtype = tvm_dtype(t.dtype)
    flat = arr.reshape(-1)
    if flat.size > 0 and (flat == flat[0]).all():
        # A splat (the usual scalar epsilon, 1/D, 0.5 ...): an immediate, so the compiled
        # kernel neither reads it nor depends on its shape.
        value = flat[0].item()
        return te.compute(ctx.shape(t), lambda *i: tirx.const(value, dtype), name=name)
    ph = te.placeholder(ctx.shape(t), dtype, name=name)
    ctx.params.append((ph, arr))
    return ph


def lower_block(block: Block, name: str = "main") -> LoweredKernel:
    """Lower ``block`` (prim ops ending in a terminator) to a schedulable PrimFunc."""
    ctx = _Ctx()
    env = ctx.env
    inputs = []
    for k, a in enumerate(block.args):
        ph = te.placeholder(ctx.shape(a.type), tvm_dtype(a.type.dtype),
                            name=ctx.name(a.name, f"arg{k}"))
        env[a] = ph
        inputs.append(ph)
    for sym, (src, others) in derived_dims(block).items():
        # a dim made by a reshape: the source's element count over the result's other dims
        ctx.sizes[sym] = tirx.floordiv(_prod(ctx.dim(d) for d in src),
                                       _prod(ctx.dim(d) for d in others))
    term = block.terminator
    if term is None or not term.has_trait(Terminator):
        raise PirError("tvm codegen: the block must end in a terminator")
    for op in block.ops[:-1]:
        hint = op.results[0].name if op.results else None
        cname = ctx.name(hint, op.name.split(".")[-1])
        if isinstance(op, ConstantOp):
            env[op.results[0]] = _constant(op, ctx, cname)
            continue
        fn = RULES.get(op.name)
        if fn is None:
            raise PirError(f"tvm codegen: no lowering rule for {op.describe()}")
        if len(op.results) != 1:
            raise PirError(f"tvm codegen: {op.name} has {len(op.results)} results")
        t = op.results[0].type
        if _empty(t):
            # nothing to compute, and index maps over a 0 dim (reshape's div and mod by 0,
            # vector loops of length 0) are what TVM fails on
            env[op.results[0]] = te.compute(ctx.shape(t), lambda *i: tirx.const(
                0, tvm_dtype(t.dtype)), name=cname)
            continue
        env[op.results[0]] = fn(op, [env[v] for v in op.operands], ctx, cname)

    outputs, types = [], []
    for k, v in enumerate(term.operands):
        t = env[v]
        # An output must be a compute of its own: an input (or a constant, or a value returned
        # twice) is copied, since a PrimFunc output buffer is written, not aliased.
        if not isinstance(t.op, te.ComputeOp) or any(t.same_as(o) for o in outputs):
            t = _copy(t, ctx.name(f"out{k}", "out"))
        outputs.append(t)
        types.append(v.type)

    func = te.create_prim_func([*inputs, *(p for p, _ in ctx.params), *outputs])
    func = func.with_attr("global_symbol", name)
    return LoweredKernel(func, inputs, ctx.params, outputs, types, ctx.sizes,
                         _reduce_inner(ctx.reductions, types), name)


def _prod(dims) -> tirx.PrimExpr:
    out = tirx.const(1, "int32")
    for d in dims:
        out = out * d
    return out


def _empty(t) -> bool:
    """A tensor with a static dim of 0 (no elements)."""
    return isinstance(t, TensorType) and t.shape is not None and 0 in t.shape


def _copy(src: te.Tensor, name: str) -> te.Tensor:
    return te.compute(src.shape, lambda *i: src(*i), name=name)


def _reduce_inner(reductions, out_types) -> int | None:
    """How many trailing dims the group's reductions reduce, when all reduce the trailing
    dims of operands of the outputs' rank (softmax, norms: one row at a time); else None."""
    if not reductions:
        return 0
    ranks = {len(t.shape) for t in out_types}
    inner = set()
    for rank, axes in reductions:
        if len(ranks) != 1 or rank not in ranks or list(axes) != list(range(rank - len(axes),
                                                                            rank)):
            return None
        inner.add(len(axes))
    return max(inner)

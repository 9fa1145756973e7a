"""TE rules of the elementwise prim ops: one template (:func:`elementwise`) and a scalar
function per op, in the style of tinygrad's renderers; NaN-aware max and min; fast f32 exp,
erf and tanh polynomials (TVM's own call libm per element)."""

from __future__ import annotations

from typing import Callable

import tvm
from tvm import te, tirx

from pir.codegen.tvm.lower import RULES, Rule, _out_type, tvm_dtype
from pir.errors import PirError


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


# each float type's bits as an integer: (that integer type, the mask that clears the sign,
# the all-ones exponent).  Without its sign, NaN is above the exponent (a nonzero mantissa)
# and infinity equal to it.
_FLOAT_BITS = {"float16": ("int16", 0x7FFF, 0x7C00), "float32": ("int32", 0x7FFFFFFF, 0x7F800000),
               "float64": ("int64", 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000)}


def _magnitude_bits(x):
    """(|x|'s bits as an integer, the all-ones exponent), or None for a type without an
    entry (bf16: widened to f32 before any test, see elementwise)."""
    if _dtype_of(x) not in _FLOAT_BITS:
        return None
    bits, magnitude, exponent = _FLOAT_BITS[_dtype_of(x)]
    return tirx.reinterpret(bits, x) & tirx.const(magnitude, bits), tirx.const(exponent, bits)


def is_nan(x):
    """isnan(x) as a test of its bits, which TVM vectorises: its ``isnan`` intrinsic makes
    the vectoriser fall back to one lane at a time for the whole statement (a GELU epilogue,
    whose erf guards against NaN, ran at a fifth of the speed), and ``x != x`` is folded to
    False by its simplifier."""
    found = _magnitude_bits(x)
    return tirx.isnan(x) if found is None else found[0] > found[1]


def is_inf(x):
    """isinf(x) as a test of its bits (see is_nan)."""
    found = _magnitude_bits(x)
    return tirx.isinf(x) if found is None else tirx.EQ(*found)


def _sign(x, dtype):
    zero, one = tirx.const(0, dtype), tirx.const(1, dtype)
    s = tirx.Select(x > zero, one, tirx.Select(x < zero, -one, zero))
    # NaN compares false both ways and would give 0: keep it NaN, as the reference does.
    return tirx.Select(is_nan(x), x, s) if _is_float(x) else s


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
    LLVM's maxnum return the other operand).  As a reducer's combiner ``a`` is the running
    value and ``b`` the next element: only ``b`` is tested for NaN, so the test is not on
    the chain from one step to the next (a NaN ``a`` stays, since ``b > NaN`` is false)."""
    return tirx.Select(tirx.Or(b > a, is_nan(b)), b, a)


def _nan_min(a, b):
    return tirx.Select(tirx.Or(b < a, is_nan(b)), b, a)


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
    nans = [n for n in (_isnan(a), _isnan(b)) if n is not None]
    out = tirx.NE(a, b)
    for n in nans:
        out = tirx.Or(out, n)
    return out


def _pow(a, b, dtype):
    """x ** y; a constant exponent of 2, 3 or 4 (GELU's tanh form cubes) is that many
    multiplies: cheaper than libm's pow, exact to an ulp, and TVM warns about pow(x, 3)."""
    if not _is_float(a):
        raise PirError("tvm codegen: prim.pow of integers has no lowering (TIR's pow is "
                       "float only)")
    c = _immediate(b)
    if isinstance(c, tirx.FloatImm) and c.value in (2.0, 3.0, 4.0):
        out = a
        for _ in range(int(c.value) - 1):
            out = out * a
        return out
    return tirx.power(a, b)


def _fast_tanh(x, dtype):
    """Eigen's float tanh: an odd rational function on [-7.9, 7.9], x itself below 4e-4;
    within 4e-7 relative.  TIR's tanh is (1 - e^-2x) / (1 + e^-2x), 1.3% off at 1e-6.
    From |x| = 9.010914, where tanh rounds to +-1 in f32, the result is exactly +-1 (the
    rational clamped at 7.9 stays an ulp or two below, and Tashkeel's dynamic quantization
    of a saturated tanh took a zero point of 128 where numpy's and ONNX Runtime's 1.0 gave
    127: every quantum of the attention moved by one)."""
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
    one = tirx.Select(x > f(0.0), f(1.0), f(-1.0))
    y = tirx.Select(tirx.abs(x) < f(0.0004), x,
                    tirx.Select(tirx.abs(x) >= f(9.010914), one, xc * p / q))
    return tirx.Select(is_nan(x), x, y)


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
    """Cephes' expf: exp(x) = 2**n * exp(r), |r| <= ln2/2, exp(r) by a degree-7 polynomial,
    2**n by building the float's exponent bits.

    n comes from the rounding-bias trick (as ONNX Runtime's MLAS does): ``t = x * log2(e) +
    B`` with ``B = 1.5 * 2**23 + 127`` rounds ``x * log2(e)`` to the nearest integer n in
    the low mantissa bits of t (the ulp there is 1), so ``t - B`` is n as a float and the
    bits of t shifted left by 23 are the bits of 2**n: no floor, no float-to-int
    conversion, no add of the bias.  The bitcast pair around t stops TVM's simplifier from
    folding ``(x * log2(e) + B) - B`` to ``x * log2(e)`` (LLVM, without fast-math, keeps
    it).  The polynomial is taken by Horner down to its constant term.  15 vector
    instructions per 16 elements where the floor-and-cast form took 18, and within 0.89 ulp
    of exp on a dense grid where that one reached 1.01.

    x is clamped to [-88, 88.72] first, which makes the ends come out of the same arithmetic
    with no test of their own: at 88.72, n = 128 builds the exponent of inf; at -88, n = -127
    builds +0.0 (both times the polynomial is near 1).  So x > 88.38 gives inf and x < -87.68
    gives 0, as expf does up to its denormals.  The clamps are written ``x > hi ? hi : x``,
    which lets a NaN through (every comparison with it is false), and LLVM makes each one
    instruction (vminps / vmaxps with the operands in that order).  A NaN then stays NaN
    through the polynomial.  Softmax is bound by this arithmetic: testing the ends and NaN
    separately cost eight more vector instructions per 16 elements (bench/kernels.py)."""
    if dtype != "float32":
        return tirx.exp(x)
    f = lambda v: tirx.const(v, "float32")  # noqa: E731
    hi, lo = f(88.72), f(-88.0)
    xc = tirx.max(lo, tirx.min(hi, x))
    bias = f(12582912.0 + 127.0)  # 1.5 * 2**23, plus the exponent bias
    t = xc * f(1.44269504088896341) + bias
    n = tirx.reinterpret("float32", tirx.reinterpret("int32", t)) - bias
    r = xc - n * f(0.693359375) - n * f(-2.12194440e-4)  # ln 2 in two parts: exact n * hi
    p = f(1.9875691500e-4)
    for c in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
              5.0000001201e-1, 1.0, 1.0):
        p = p * r + f(c)
    two_n = tirx.reinterpret("float32", tirx.shift_left(tirx.reinterpret("int32", t), 23))
    return p * two_n


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
    return tirx.Select(is_nan(x), x, xc * p / q)


def _fast_logistic(x, dtype):
    """1 / (1 + exp(-x)) through _fast_exp: TIR's sigmoid is written with TIR's exp, one
    libm expf call per lane (SiLU, YOLO's activation, then cost a conv's epilogue more than
    its products; a SiLU over [1, 32, 80, 80] went 0.43 -> 0.09 ms).  Within 2.5 ulp where
    the result is a normal float; the ends come out of exp's: exp(-x) is inf for x < -88.4
    (1 / inf = 0, where libm would give a denormal below 1e-38) and 0 for x > 88 (1 / 1 =
    1); a NaN stays NaN."""
    if dtype != "float32":
        return tirx.sigmoid(x)
    one = tirx.const(1.0, "float32")
    return one / (one + _fast_exp(-x, dtype))


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
    "logistic": _fast_logistic,
    "sign": _sign,
    "floor": lambda x, dtype: tirx.floor(x),
    "ceil": lambda x, dtype: tirx.ceil(x),
    "round": lambda x, dtype: tirx.nearbyint(x),  # ties to even under the default FP mode
    "reciprocal": lambda x, dtype: tirx.const(1, dtype) / x,
    "not": _not,
    "is_nan": lambda x, dtype: is_nan(x),
    "is_inf": lambda x, dtype: is_inf(x),
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
        computed = [v for v in values if _isnan(v) is not None]
        if len(computed) == 1 and not isinstance(_isnan(computed[0]), tirx.IntImm):
            # one computed leaf, the others numbers (relu is max(x, 0)): the numbers first,
            # ``max(0, x)`` is ``0 > x ? 0 : x``, which passes a NaN x on by itself, one
            # vmaxps with no NaN test (TIR's max picks by ``a > b``)
            numbers = [v for v in values if _isnan(v) is None]
            bound = numbers[0]
            for v in numbers[1:]:
                bound = fast(bound, v)
            out = fast(bound, computed[0])
            return out.astype(dtype) if work != dtype else out
        out, nan = values[0], _isnan(values[0])
        for v in values[1:]:
            out = fast(out, v)
            nan = _isnan(v) if nan is None else nan if _isnan(v) is None else \
                tirx.Or(nan, _isnan(v))
        if nan is not None:
            out = tirx.Select(nan, tirx.const(float("nan"), work), out)
        return out.astype(dtype) if work != dtype else out

    return te.compute(ctx.shape(t), compute, name=name)


def _immediate(v):
    """The number behind ``v`` when it is one: an immediate, or a load of a splat constant's
    compute (pir.codegen.tvm.lower._constant), possibly through index maps (a broadcast of
    it); else None."""
    for _ in range(8):  # a few index maps deep at most
        if isinstance(v, (tirx.FloatImm, tirx.IntImm)):
            return v
        op = getattr(v, "op", None)
        args = getattr(v, "args", None)
        if getattr(op, "name", None) != "te.tensor_load" or not args:
            return None
        body = getattr(args[0].op, "body", None)  # the loaded tensor's compute
        if body is None or len(body) != 1:
            return None
        v = body[0]
    return None


def _isnan(v):
    """isnan(v), or None for a number that is not NaN (a constant): TVM folds isnan(0.0) to
    False when it parses the printed kernel, so the printed source would not parse back to
    itself.  A NaN constant gives True."""
    c = _immediate(v)
    if isinstance(c, tirx.FloatImm):
        return tirx.const(True, "bool") if c.value != c.value else None
    if isinstance(c, tirx.IntImm):
        return None
    return is_nan(v)


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

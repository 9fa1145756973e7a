"""Derivatives of the elementwise prims: unary math, binary arithmetic, select and cast.

Unary ops are one table row each: ``g * f'(x)`` written with prims (``y`` is the op's
result, often the cheapest way to spell the derivative: ``exp' = exp``).  Ties of ``max``
and ``min`` send the whole derivative to the rhs, so ``relu(x) = max(x, 0)`` has derivative
0 at 0, as in PyTorch and TensorFlow.  ``pow``'s derivative with respect to the exponent
reads ``log(x)`` with 0 replaced by 1, as JAX does, so ``0 ** y`` does not give NaN.
"""

from __future__ import annotations

import math

from pir.passes.autodiff.registry import (
    declare,
    defbilinear,
    defjvp,
    defunary,
    defvjp,
)


def _one_plus(b, v):
    return b.add(b.ones_like(v), v)


def _one_minus(b, v):
    return b.sub(b.ones_like(v), v)


def _erf_scale(b, x, y, g):
    """g * 2/sqrt(pi) * exp(-x**2)."""
    bell = b.op("exp", b.neg(b.square(x)))
    return b.mul(g, b.scale(bell, 2.0 / math.sqrt(math.pi)))


# name: g * f'(x), with y = f(x)
UNARY = {
    "neg": lambda b, x, y, g: b.neg(g),
    "abs": lambda b, x, y, g: b.mul(g, b.op("sign", x)),
    "exp": lambda b, x, y, g: b.mul(g, y),
    "log": lambda b, x, y, g: b.div(g, x),
    "log1p": lambda b, x, y, g: b.div(g, _one_plus(b, x)),
    "expm1": lambda b, x, y, g: b.mul(g, _one_plus(b, y)),
    "sqrt": lambda b, x, y, g: b.div(g, b.scale(y, 2.0)),
    "rsqrt": lambda b, x, y, g: b.mul(g, b.scale(b.div(y, x), -0.5)),
    "sin": lambda b, x, y, g: b.mul(g, b.op("cos", x)),
    "cos": lambda b, x, y, g: b.neg(b.mul(g, b.op("sin", x))),
    "tan": lambda b, x, y, g: b.mul(g, _one_plus(b, b.square(y))),
    "asin": lambda b, x, y, g: b.mul(g, b.op("rsqrt", _one_minus(b, b.square(x)))),
    "acos": lambda b, x, y, g: b.neg(b.mul(g, b.op("rsqrt", _one_minus(b, b.square(x))))),
    "atan": lambda b, x, y, g: b.div(g, _one_plus(b, b.square(x))),
    "sinh": lambda b, x, y, g: b.mul(g, b.op("cosh", x)),
    "cosh": lambda b, x, y, g: b.mul(g, b.op("sinh", x)),
    "tanh": lambda b, x, y, g: b.mul(g, _one_minus(b, b.square(y))),
    "asinh": lambda b, x, y, g: b.mul(g, b.op("rsqrt", _one_plus(b, b.square(x)))),
    "acosh": lambda b, x, y, g: b.mul(g, b.op("rsqrt", b.sub(b.square(x), b.ones_like(x)))),
    "atanh": lambda b, x, y, g: b.div(g, _one_minus(b, b.square(x))),
    "erf": _erf_scale,
    "logistic": lambda b, x, y, g: b.mul(g, b.mul(y, _one_minus(b, y))),
    "reciprocal": lambda b, x, y, g: b.neg(b.mul(g, b.square(y))),
}

for _name, _scale in UNARY.items():
    defunary(f"prim.{_name}", _scale)

declare("zero", "piecewise constant: the derivative is 0 wherever it exists",
        "prim.sign", "prim.floor", "prim.ceil", "prim.round")
declare("nondiff", "the result is boolean or integer",
        "prim.not", "prim.and", "prim.or", "prim.xor", "prim.shift_left", "prim.shift_right",
        "prim.eq", "prim.ne", "prim.lt", "prim.le", "prim.gt", "prim.ge",
        "prim.is_nan", "prim.is_inf")


# -- binary ------------------------------------------------------------------------------------

@defjvp("prim.add")
def add_jvp(b, op, tangents):
    return [b.add_any(*tangents)]


@defvjp("prim.add")
def add_vjp(b, op, cts, wants):
    return [cts[0], cts[0]]


@defjvp("prim.sub")
def sub_jvp(b, op, tangents):
    return [b.sub_any(*tangents)]


@defvjp("prim.sub")
def sub_vjp(b, op, cts, wants):
    return [cts[0], b.neg(cts[0]) if wants[1] else None]


defbilinear("prim.mul", lambda b, op, ct: b.mul(ct, op.rhs),
            lambda b, op, ct: b.mul(op.lhs, ct))


@defjvp("prim.div")
def div_jvp(b, op, tangents):
    ta, tb = tangents
    lhs_part = None if ta is None else b.div(ta, op.rhs)
    rhs_part = None if tb is None else b.div(b.mul(tb, op.out), op.rhs)
    return [b.sub_any(lhs_part, rhs_part)]


@defvjp("prim.div")
def div_vjp(b, op, cts, wants):
    ct = cts[0]
    return [b.div(ct, op.rhs) if wants[0] else None,
            b.neg(b.div(b.mul(ct, op.out), op.rhs)) if wants[1] else None]


def _rem_quotient(b, op):
    """trunc(lhs / rhs), the integer quotient rem subtracted: (lhs - rem) / rhs."""
    return b.div(b.sub(op.lhs, op.out), op.rhs)


@defjvp("prim.rem")
def rem_jvp(b, op, tangents):
    ta, tb = tangents
    return [b.sub_any(ta, None if tb is None else b.mul(tb, _rem_quotient(b, op)))]


@defvjp("prim.rem")
def rem_vjp(b, op, cts, wants):
    ct = cts[0]
    return [ct, b.neg(b.mul(ct, _rem_quotient(b, op))) if wants[1] else None]


def _pow_dlhs(b, op):
    """d(x ** y)/dx = y * x ** (y - 1)."""
    return b.mul(op.rhs, b.op("pow", op.lhs, b.sub(op.rhs, b.ones_like(op.rhs))))


def _pow_drhs(b, op):
    """d(x ** y)/dy = x ** y * log(x), with log(0) read as log(1) (0 ** y is flat in y)."""
    x = op.lhs
    safe = b.select(b.op("eq", x, b.zeros_like(x)), b.ones_like(x), x)
    return b.mul(op.out, b.op("log", safe))


@defjvp("prim.pow")
def pow_jvp(b, op, tangents):
    ta, tb = tangents
    return [b.add_any(None if ta is None else b.mul(ta, _pow_dlhs(b, op)),
                      None if tb is None else b.mul(tb, _pow_drhs(b, op)))]


@defvjp("prim.pow")
def pow_vjp(b, op, cts, wants):
    ct = cts[0]
    return [b.mul(ct, _pow_dlhs(b, op)) if wants[0] else None,
            b.mul(ct, _pow_drhs(b, op)) if wants[1] else None]


def _defminmax(name: str, cmp: str) -> None:
    """max/min: the derivative of the operand picked (strictly: ties go to the rhs)."""

    def jvp(b, op, tangents):
        ta, tb = tangents
        return [b.where(b.op(cmp, op.lhs, op.rhs), ta, tb, op.out)]

    def vjp(b, op, cts, wants):
        ct = cts[0]
        pick = b.op(cmp, op.lhs, op.rhs)
        return [b.where(pick, ct, None, ct) if wants[0] else None,
                b.where(pick, None, ct, ct) if wants[1] else None]

    defjvp(f"prim.{name}")(jvp)
    defvjp(f"prim.{name}")(vjp)


_defminmax("max", "gt")
_defminmax("min", "lt")


def _atan2_parts(b, op):
    """(d/dlhs, d/drhs) of atan2(lhs, rhs): (rhs, -lhs) / (lhs**2 + rhs**2)."""
    denom = b.add(b.square(op.lhs), b.square(op.rhs))
    return b.div(op.rhs, denom), b.neg(b.div(op.lhs, denom))


@defjvp("prim.atan2")
def atan2_jvp(b, op, tangents):
    dl, dr = _atan2_parts(b, op)
    ta, tb = tangents
    return [b.add_any(None if ta is None else b.mul(ta, dl),
                      None if tb is None else b.mul(tb, dr))]


@defvjp("prim.atan2")
def atan2_vjp(b, op, cts, wants):
    dl, dr = _atan2_parts(b, op)
    return [b.mul(cts[0], dl) if wants[0] else None, b.mul(cts[0], dr) if wants[1] else None]


# -- select and cast ---------------------------------------------------------------------------

@defjvp("prim.select")
def select_jvp(b, op, tangents):
    _, tt, tf = tangents
    return [b.where(op.pred, tt, tf, op.out)]


@defvjp("prim.select")
def select_vjp(b, op, cts, wants):
    ct = cts[0]
    return [None, b.where(op.pred, ct, None, ct) if wants[1] else None,
            b.where(op.pred, None, ct, ct) if wants[2] else None]


def _float(v) -> bool:
    return v.type.dtype.is_float


@defjvp("prim.cast")
def cast_jvp(b, op, tangents):
    """Linear between float types; a cast to an integer or boolean has no derivative."""
    t = tangents[0]
    if t is None or not _float(op.out):
        return [None]
    return [b.cast(t, op.dtype)]


@defvjp("prim.cast")
def cast_vjp(b, op, cts, wants):
    ct = cts[0]
    if ct is None or not _float(op.x):
        return [None]
    return [b.cast(ct, op.x.type.dtype)]


"""Algebraic identities, on nn and prim ops alike (x+0, x*1, --x, max(x,x) ...).

Every identity is one row of a table below, and each row becomes two declarative patterns:
``NAME`` on the nn op and ``prim-NAME`` on the prim op of the same name.  A unit operand is
any constant whose elements all equal the unit, also when broadcast (prim programs spell a
scalar 1 as ``broadcast_in_dim`` of a constant).  A row fires only when the replacement has
the replaced value's type at run time (``fits_in``: the unit must not broadcast ``x`` to a
larger shape).

Float caveats, chosen as XLA's algebraic simplifier does: ``x + 0 -> x`` turns the sum
``-0 + 0 = +0`` back into ``-0``; rules that would change a NaN or an infinity (``x*0``,
``x-x``) are for integers only.
"""

from pir.passes.canonicalize.matchers import fits_in, is_int, splat_is, zeros
from pir.passes.drr import Op, Var, drr

DIALECTS = (("nn", ""), ("prim", "prim-"))


def _both(name: str, op: str, make) -> list:
    """One pattern per dialect: ``make(full_op_name)`` gives (source, result, where)."""
    out = []
    for dialect, prefix in DIALECTS:
        source, result, where = make(f"{dialect}.{op}")
        out.append(drr(prefix + name, source, result, where=where))
    return out


def unit_right(name: str, op: str, unit: int, *where) -> list:
    """op(x, unit) -> x."""
    return _both(name, op, lambda o: (Op(o, Var("x"), Var("u")), Var("x"),
                                      (splat_is("u", unit), fits_in("u", "x"), *where)))


def unit_left(name: str, op: str, unit: int) -> list:
    """op(unit, x) -> x."""
    return _both(name, op, lambda o: (Op(o, Var("u"), Var("x")), Var("x"),
                                      (splat_is("u", unit), fits_in("u", "x"))))


def absorbing(name: str, op: str, zero_first: bool) -> list:
    """op(x, 0) -> 0 (or op(0, x)), for integers only."""
    def make(o):
        operands = (Var("z"), Var("x")) if zero_first else (Var("x"), Var("z"))
        return Op(o, *operands), zeros, (splat_is("z", 0), is_int("x"))
    return _both(name, op, make)


def idempotent(name: str, op: str) -> list:
    """op(x, x) -> x."""
    return _both(name, op, lambda o: (Op(o, Var("x"), Var("x")), Var("x"), ()))


def involution(name: str, op: str) -> list:
    """op(op(x)) -> x."""
    return _both(name, op, lambda o: (Op(o, Op(o, Var("x"))), Var("x"), ()))


PATTERNS = [
    *unit_right("add-zero", "add", 0),
    *unit_left("zero-add", "add", 0),
    *unit_right("sub-zero", "sub", 0),
    *unit_right("mul-by-one", "mul", 1),
    *unit_left("one-mul", "mul", 1),
    *unit_right("div-by-one", "div", 1),
    *unit_right("pow-one", "pow", 1),
    *absorbing("mul-by-zero", "mul", zero_first=False),
    *absorbing("zero-mul", "mul", zero_first=True),
    *_both("sub-self", "sub", lambda o: (Op(o, Var("x"), Var("x")), zeros, is_int("x"))),
    *idempotent("max-self", "max"),
    *idempotent("min-self", "min"),
    *idempotent("and-self", "and"),
    *idempotent("or-self", "or"),
    *involution("neg-neg", "neg"),
    *involution("not-not", "not"),
    drr("bitwise-not-not", Op("nn.bitwise_not", Op("nn.bitwise_not", Var("x"))), Var("x")),
    # select(c, x, x) -> x; nn.where broadcasts, so c must fit in x.
    drr("where-same", Op("nn.where", Var("c"), Var("x"), Var("x")), Var("x"),
        where=fits_in("c", "x")),
    drr("prim-select-same", Op("prim.select", Var("c"), Var("x"), Var("x")), Var("x")),
    # nn.max and nn.min are variadic: of one operand, they are that operand.
    drr("max-single", Op("nn.max", Var("x")), Var("x")),
    drr("min-single", Op("nn.min", Var("x")), Var("x")),
]

"""THE table of C spellings of the prim ops, for the CUDA C emitter.

One row per op, written for the ``float`` family (f16 / bf16 / f32, computed in float); a
family (``double``, ``int``, ``uint``, ``bool``) overrides only the rows it spells
differently, as tinygrad's renderers do.  Placeholders: ``{0}`` ``{1}`` ``{2}`` are the
operands (always variable names or literals, so repeating one is free), ``{f}`` the suffix of
a libm function (``expf`` / ``exp``), ``{one}`` / ``{zero}`` the literals of the compute type,
``{T}`` the compute type and ``{bits}`` its width.

The semantics are the reference runtime's (docs/prim.md): float max / min give NaN when an
operand is NaN, integer ``x / 0`` and ``x rem 0`` give 0 and ``MIN / -1`` gives ``MIN`` (no
traps), shifts by a negative amount or the bit width or more give 0 (-1 for an arithmetic
right shift of a negative value), ``ne`` is true for NaN.
"""

from __future__ import annotations

from pir.errors import PirError

__all__ = ["SPELLING", "spell", "REDUCERS", "reducer"]

_LIBM1 = ("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "asin",
          "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "floor", "ceil")

#: op -> spelling for the float family; the other families' overrides follow.
SPELLING: dict[str, dict[str, str]] = {"float": {
    **{name: name + "{f}({0})" for name in _LIBM1},
    "neg": "(-{0})",
    "abs": "fabs{f}({0})",
    "logistic": "({one} / ({one} + exp{f}(-{0})))",
    "sign": "(({0}) > {zero} ? {one} : (({0}) < {zero} ? -{one} : ({0}) * {zero}))",
    "round": "rint{f}({0})",
    "reciprocal": "({one} / ({0}))",
    "is_nan": "isnan({0})",
    "is_inf": "isinf({0})",
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": "({0} / {1})",
    "rem": "fmod{f}({0}, {1})",
    "pow": "pow{f}({0}, {1})",
    "max": "(({0}) != ({0}) || ({1}) != ({1}) ? ({0}) + ({1}) : fmax{f}({0}, {1}))",
    "min": "(({0}) != ({0}) || ({1}) != ({1}) ? ({0}) + ({1}) : fmin{f}({0}, {1}))",
    "atan2": "atan2{f}({0}, {1})",
    "eq": "({0} == {1})",
    "ne": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "select": "({0} ? {1} : {2})",
}}
SPELLING["double"] = {}  # the same rows, with {f} empty
SPELLING["int"] = {
    "abs": "(({0}) < 0 ? ({T})(0ULL - (unsigned long long)({0})) : ({0}))",
    "neg": "(({T})(0ULL - (unsigned long long)({0})))",
    "sign": "({T})((({0}) > 0) - (({0}) < 0))",
    "div": "(({1}) == 0 ? ({T})0 : (({1}) == -1 ? ({T})(0ULL - (unsigned long long)({0}))"
           " : ({T})(({0}) / ({1}))))",
    "rem": "(({1}) == 0 || ({1}) == -1 ? ({T})0 : ({T})(({0}) % ({1})))",
    "max": "(({0}) > ({1}) ? ({0}) : ({1}))",
    "min": "(({0}) < ({1}) ? ({0}) : ({1}))",
    "add": "({T})((unsigned long long)({0}) + (unsigned long long)({1}))",
    "sub": "({T})((unsigned long long)({0}) - (unsigned long long)({1}))",
    "mul": "({T})((unsigned long long)({0}) * (unsigned long long)({1}))",
    "and": "({0} & {1})",
    "or": "({0} | {1})",
    "xor": "({0} ^ {1})",
    "not": "({T})(~({0}))",
    "shift_left": "(({1}) < 0 || ({1}) >= {bits} ? ({T})0 : ({T})((unsigned long long)({0})"
                  " << ({1})))",
    "shift_right": "(({1}) < 0 || ({1}) >= {bits} ? ({T})(({0}) < 0 ? -1 : 0) : ({T})(({0})"
                   " >> ({1})))",
    "pow": None, "atan2": None,
}
SPELLING["uint"] = {
    **SPELLING["int"],
    "abs": "({0})",
    "neg": "({T})(0ULL - ({0}))",
    "sign": "({T})(({0}) > 0)",
    "div": "(({1}) == 0 ? ({T})0 : ({T})(({0}) / ({1})))",
    "rem": "(({1}) == 0 ? ({T})0 : ({T})(({0}) % ({1})))",
    "shift_right": "(({1}) >= {bits} ? ({T})0 : ({T})(({0}) >> ({1})))",
    "shift_left": "(({1}) >= {bits} ? ({T})0 : ({T})((unsigned long long)({0}) << ({1})))",
}
SPELLING["bool"] = {
    "and": "({0} && {1})",
    "or": "({0} || {1})",
    "xor": "({0} != {1})",
    "not": "(!{0})",
    "max": "({0} || {1})",
    "min": "({0} && {1})",
}

# ops whose integer spelling is the float family's (compares, select, the wrapping-free ones)
_SHARED_BY_INTEGERS = ("eq", "ne", "lt", "le", "gt", "ge", "select")

_FLOAT_ONLY = frozenset(_LIBM1) | {"logistic", "round", "reciprocal", "is_nan", "is_inf",
                                   "atan2", "pow"}


def spell(op: str, family: str, ctype: str, bits: int, operands: list[str]) -> str:
    """The C expression of prim op ``op`` (short name) on ``operands`` in ``family``."""
    table = SPELLING.get(family, {})
    text = table.get(op, "missing")
    if text == "missing":
        if family in ("float", "double") or op in _SHARED_BY_INTEGERS or (
                family != "bool" and op not in _FLOAT_ONLY):
            text = SPELLING["float"].get(op)
        else:
            text = None
    if text is None:
        raise PirError(f"cuda codegen: no C spelling of prim.{op} for {family} operands")
    fields = {"f": "f" if family == "float" else "", "T": ctype, "bits": bits,
              "one": "1.0f" if family == "float" else ("1.0" if family == "double" else "1"),
              "zero": "0.0f" if family == "float" else ("0.0" if family == "double" else "0")}
    return text.format(*operands, **fields)


#: reduction -> (combine spelling, identity by family); max / min propagate NaN.
REDUCERS = {
    "reduce_sum": ("add", {"float": "0.0f", "double": "0.0", "int": "0", "uint": "0",
                           "bool": "false"}),
    "reduce_prod": ("mul", {"float": "1.0f", "double": "1.0", "int": "1", "uint": "1",
                            "bool": "true"}),
    "reduce_max": ("max", {"float": "__int_as_float(0xff800000)",
                           "double": "__longlong_as_double(0xfff0000000000000LL)",
                           "int": None, "uint": "0", "bool": "false"}),
    "reduce_min": ("min", {"float": "__int_as_float(0x7f800000)",
                           "double": "__longlong_as_double(0x7ff0000000000000LL)",
                           "int": None, "uint": None, "bool": "true"}),
}


def reducer(op: str, family: str, ctype: str) -> tuple[str, str]:
    """(combine op, identity literal) of a reduction in ``family``."""
    combine, inits = REDUCERS[op]
    init = inits.get(family)
    if init is None:  # integer extremes: the type's limits
        from pir.codegen.cuda.limits import int_limit

        init = int_limit(ctype, largest=op == "reduce_min")
    return combine, init

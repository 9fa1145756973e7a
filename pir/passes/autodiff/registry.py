"""The two rule tables of automatic differentiation, keyed by op name, and their helpers.

A **JVP rule** (forward mode) takes the builder, the op and one tangent per operand (``None``
for a zero tangent) and returns one tangent per result (``None`` for zero)::

    @defjvp("prim.sin")
    def sin_jvp(b, op, tangents): ...

A **VJP rule** (reverse mode: the transpose of the JVP) takes the builder, the op, one
cotangent per result (``None`` for zero) and ``wants``, one flag per operand that says
whether that operand needs a cotangent, and returns one cotangent per operand (``None`` for
zero or not wanted)::

    @defvjp("prim.mul")
    def mul_vjp(b, op, cts, wants): ...

Rules write prim ops only, through :class:`~pir.passes.autodiff.builder.ADBuilder`, so a
derivative can be differentiated again.  Zeros are ``None`` rather than tensors of zeros
(JAX's symbolic zeros): a rule skips the work a zero would multiply away, since canonicalize
cannot remove ``x * 0`` for floats (NaN and inf make it unsound).

Helpers capture the recurring shapes of rule, as JAX's ``deflinear``/``defbilinear``/
``defjvp_zero`` do: :func:`deflinear` (the JVP is the op itself applied to the tangents,
the VJP a given transpose), :func:`defbilinear`, :func:`defunary` (an elementwise
``g * f'(x)``, one formula for both tables) and :func:`declare` for ops whose derivative is
zero (``zero``: floor, sign ...) or that have no derivative at all (``nondiff``: compares,
integer and bitwise ops, argmax, iota, random numbers).  Only float values are ever
differentiated, so an op's rules see float operands only where a derivative flows.
"""

from __future__ import annotations

from typing import Callable, Sequence

from pir.errors import PirError
from pir.ir.core import Operation, Value
from pir.plugins import import_submodules

__all__ = ["VJP", "JVP", "DECLARED", "defvjp", "defjvp", "deflinear", "defbilinear",
           "defunary", "declare", "lookup", "load_rules", "Maybe"]

Maybe = Value | None
JvpRule = Callable[..., list]
VjpRule = Callable[..., list]

JVP: dict[str, JvpRule] = {}
VJP: dict[str, VjpRule] = {}
#: Ops whose derivative is declared, not computed: name -> (label, reason).  The label is
#: ``zero`` (differentiable, derivative 0 almost everywhere) or ``nondiff`` (no float
#: result depends differentiably on the operands).
DECLARED: dict[str, tuple[str, str]] = {}

_TABLES = {"jvp": JVP, "vjp": VJP}


def _register(table: dict, names: Sequence[str], fn) -> None:
    for n in names:
        if n in table or n in DECLARED:
            raise ValueError(f"two autodiff entries for {n}")
        table[n] = fn


def defjvp(*names: str) -> Callable[[JvpRule], JvpRule]:
    def register(fn: JvpRule) -> JvpRule:
        _register(JVP, names, fn)
        return fn
    return register


def defvjp(*names: str) -> Callable[[VjpRule], VjpRule]:
    def register(fn: VjpRule) -> VjpRule:
        _register(VJP, names, fn)
        return fn
    return register


def declare(label: str, why: str, *names: str) -> None:
    """Declare ops whose derivative is zero (``zero``) or that are not differentiable
    (``nondiff``)."""
    if label not in ("zero", "nondiff"):
        raise ValueError(f"unknown label {label}")
    for n in names:
        if n in JVP or n in VJP or n in DECLARED:
            raise ValueError(f"two autodiff entries for {n}")
        DECLARED[n] = (label, why)


def deflinear(name: str, transpose: VjpRule, linear: Sequence[int] = (0,)) -> None:
    """An op linear in the operands ``linear`` (jointly; the others, such as indices, are
    fixed): its JVP is the op itself applied to their tangents, zeros filled in; its VJP is
    ``transpose``."""

    def jvp(b, op, tangents):
        if all(tangents[i] is None for i in linear):
            return [None] * len(op.results)
        operands = list(op.operands)
        for i in linear:
            operands[i] = b.instantiate(tangents[i], op.operands[i])
        return b.same_op(op, operands)

    jvp.__name__ = jvp.__qualname__ = f"linear_jvp[{name}]"
    _register(JVP, [name], jvp)
    _register(VJP, [name], transpose)


def defbilinear(name: str, lhs_transpose: Callable, rhs_transpose: Callable) -> None:
    """An op linear in each of its two operands: JVP ``op(ta, y) + op(x, tb)``; VJP
    ``lhs_transpose(b, op, ct)`` for x and ``rhs_transpose(b, op, ct)`` for y."""

    def jvp(b, op, tangents):
        x, y = op.operands
        ta, tb = tangents
        parts = []
        if ta is not None:
            parts.append(b.same_op(op, [ta, y])[0])
        if tb is not None:
            parts.append(b.same_op(op, [x, tb])[0])
        return [b.add_all(parts)]

    def vjp(b, op, cts, wants):
        ct = cts[0]
        return [lhs_transpose(b, op, ct) if wants[0] else None,
                rhs_transpose(b, op, ct) if wants[1] else None]

    jvp.__name__ = jvp.__qualname__ = f"bilinear_jvp[{name}]"
    vjp.__name__ = vjp.__qualname__ = f"bilinear_vjp[{name}]"
    _register(JVP, [name], jvp)
    _register(VJP, [name], vjp)


def defunary(name: str, scale: Callable) -> None:
    """An elementwise unary op: ``scale(b, x, y, g)`` returns ``g * f'(x)`` (y = f(x)); that
    one formula is both the JVP (g a tangent) and the VJP (g a cotangent)."""

    def jvp(b, op, tangents):
        t = tangents[0]
        return [None if t is None else scale(b, op.operands[0], op.results[0], t)]

    def vjp(b, op, cts, wants):
        ct = cts[0]
        return [None if ct is None else scale(b, op.operands[0], op.results[0], ct)]

    jvp.__name__ = jvp.__qualname__ = f"unary_jvp[{name}]"
    vjp.__name__ = vjp.__qualname__ = f"unary_vjp[{name}]"
    _register(JVP, [name], jvp)
    _register(VJP, [name], vjp)


def lookup(op: Operation, table: str):
    """The ``table`` ("jvp" or "vjp") rule of ``op``; a declared op gives its label
    ("zero" or "nondiff"); a missing rule is an error naming the op, its location and the
    table."""
    load_rules()
    rule = _TABLES[table].get(op.name)
    if rule is not None:
        return rule
    if op.name in DECLARED:
        return DECLARED[op.name][0]
    hint = ""
    if op.name.startswith("nn."):
        from pir.passes.decompose.registry import DECOMPOSE, KEPT, load_rules as load_decompose

        load_decompose()
        if op.name in DECOMPOSE:
            hint = ("; decompose could not lower this instance: `pir optimize -p "
                    "'decompose{explain}'` says why")
        else:
            why = KEPT.get(op.name, "it has no decomposition rule")
            hint = f"; it is an nn op that decompose keeps: {why}"
    message = (f"{op.describe()}: no {table} rule for {op.name} (the '{table}' table of "
               f"pir/passes/autodiff has none{hint}); `pir ops --require {table}` lists "
               "the ops covered")
    pos = getattr(op, "text_pos", None)
    raise pos.error(message) if pos is not None else PirError(message)


def load_rules() -> None:
    """Import every ``rules_*`` module next to this file (once)."""
    import_submodules("pir.passes.autodiff", "rules_")

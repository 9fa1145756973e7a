"""The generic verifier, derived from op declarations, plus each op's own ``verify_``.

It checks SSA dominance (a value is defined before it is used, in its block or an enclosing
one, and regions of ``IsolatedFromAbove`` ops use nothing from outside), operand, result and
region counts, element types allowed by each operand and result, attributes (required ones
present, values of the declared kind), terminators, and that declared result types agree with
the op's type rule.  The first problem found is raised as a :class:`PirError` that names the
op, its source location (``loc``) and its position in the text when the op was parsed.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.core import Block, Operation, Value
from pir.ir.opdef import IsolatedFromAbove, Terminator, split_groups
from pir.ir.types import TensorType, Type

__all__ = ["verify_module", "verify_op", "verify_checks", "types_compatible"]


def _fail(op: Operation, message: str) -> PirError:
    text = f"{op.describe()}: {message}"
    if op.text_pos is not None:  # parsed ops point at their line, with a caret
        return op.text_pos.error(text)
    return PirError(text)


def types_compatible(declared: Type, inferred: Type) -> bool:
    """True when ``declared`` may stand for ``inferred``: same kind and element type, same
    rank when both are ranked, and equal sizes where both dims are static."""
    if isinstance(declared, TensorType) and isinstance(inferred, TensorType):
        if declared.dtype != inferred.dtype:
            return False
        if declared.shape is None or inferred.shape is None:
            return True
        if len(declared.shape) != len(inferred.shape):
            return False
        return all(not (isinstance(a, int) and isinstance(b, int)) or a == b
                   for a, b in zip(declared.shape, inferred.shape))
    return declared == inferred


def verify_module(module: Operation) -> None:
    _verify_fresh(module)
    _verify_block_list(module, set())


def verify_op(op: Operation, visible: set[Value] | None = None, *,
              types_inferred: bool = False) -> None:
    """Verify one op and what it holds.  ``types_inferred`` says its result types were just
    computed by its own type rule, which then need not run a second time."""
    if types_inferred and not op.regions:
        _verify_fresh(op, type_rule=False)
        op.verified = _snapshot(op)
    else:
        _verify_one(op)
    _verify_block_list(op, visible if visible is not None else set())


def verify_checks(op: Operation) -> None:
    """The checks of ``op`` alone: not the ops it holds, not dominance (for an op built off
    to the side, whose regions read values of a block it is not in yet)."""
    _verify_fresh(op)


def _verify_block_list(op: Operation, visible: set[Value]) -> None:
    isolated = op.has_trait(IsolatedFromAbove)
    for region in op.regions:
        for block in region.blocks:
            _verify_block(block, set() if isolated else visible)


def _verify_block(block: Block, outer: set[Value]) -> None:
    defined = set(outer)
    defined.update(block.args)
    last = len(block.ops) - 1
    for i, op in enumerate(block.ops):
        if not defined.issuperset(op.operands):
            k, v = next((k, v) for k, v in enumerate(op.operands) if v not in defined)
            raise _fail(op, f"operand {k} (%{v.name}) does not dominate this use: it is "
                            "defined later, in another region, or not at all")
        _verify_one(op)
        if i != last and Terminator in op.traits:
            raise _fail(op, "a terminator must be the last op of its block")
        if op.regions:
            _verify_block_list(op, defined)
        defined.update(op.results)


def _snapshot(op: Operation) -> tuple:
    """Everything an op's checks depend on: its operands as values (type rules may read
    constant operands) and their types (a pass may refine a value's type in place), its
    result types and its attributes."""
    operands = op.operands
    return (operands[:], [v.type for v in operands], [r.type for r in op.results],
            list(op.attributes.items()), op.operand_segments, op.result_segments)


def _verify_one(op: Operation) -> None:
    # The pass manager verifies after every pass; an op no pass touched since it was last
    # checked need not run its type rule again.  Ops with regions, whose checks look inside,
    # always rerun.  (A constant's check also reads its resource: passes add resources under
    # new keys and never replace an array in place, so the snapshot covers it.)  A few nn
    # type rules read further up the graph than their operands (a reshape's shape computed
    # by Shape/Gather/Concat); such an op is re-checked when it changes, not when an op
    # above it does: a parse (`pir verify`) always checks everything afresh.
    cacheable = not op.regions
    if cacheable:
        snap = _snapshot(op)
        if op.verified == snap:
            return
    _verify_fresh(op)
    if cacheable:
        op.verified = snap


def _verify_fresh(op: Operation, type_rule: bool = True) -> None:
    """All checks of one op; ``type_rule=False`` for an op whose result types its own rule
    just computed (Operation.build), whose attributes its constructor just converted."""
    sig = op.signature
    _check_counts(op, "operand", sig.operands, op.operands, op.operand_segments)
    _check_counts(op, "result", sig.results, op.results, op.result_segments)
    if not any(d.variadic for d in sig.regions) and len(op.regions) != len(sig.regions):
        if not sig.regions:  # e.g. an nn.relu given a body: nothing would ever run it
            raise _fail(op, f"takes no regions, has {len(op.regions)}")
        raise _fail(op, f"expects {len(sig.regions)} regions, has {len(op.regions)}")
    for key, adef in sig.attrs.items():
        if key not in op.attributes:
            if adef.required:
                raise _fail(op, f"missing required attribute '{key}'")
            continue
        if not type_rule:
            continue
        try:
            adef.kind(op.attributes[key])
        except (TypeError, ValueError) as e:
            raise _fail(op, f"attribute '{key}': {e}") from None
    for key in op.attributes:
        if key not in sig.attrs and "." not in key:
            known = ", ".join(sig.attrs) or "none"
            raise _fail(op, f"unknown attribute '{key}' (known: {known})")
    try:
        op.verify_()
        if type_rule:
            _check_type_rule(op)
    except PirError as e:
        if e.line is not None:
            raise
        raise _fail(op, e.message) from None


def _check_counts(op, what, defs, values, segments) -> None:
    sig = op.signature
    if segments is None and (sig.fixed_operands if what == "operand" else sig.fixed_results):
        # the common case: one value per declared operand, element types checked by index
        if len(values) != len(defs):
            raise _fail(op, f"expects {len(defs)} {what}s, has {len(values)}")
        for i, d in (sig.operand_dtypes if what == "operand" else sig.result_dtypes):
            t = values[i].type
            if isinstance(t, TensorType) and t.dtype not in d.dtypes:
                allowed = ", ".join(sorted(x.value for x in d.dtypes))
                raise _fail(op, f"{what} '{d.name}' has element type {t.dtype.value}, "
                                f"expected one of {allowed}")
        return
    fixed = sum(1 for d in defs if not (d.optional or d.variadic))
    flexible = [d for d in defs if d.optional or d.variadic]
    n = len(values)
    if segments is not None:
        if len(segments) != len(defs) or sum(segments) != n:
            raise _fail(op, f"{what} segments {list(segments)} do not match {n} {what}s")
        for d, size in zip(defs, segments):
            if not (d.optional or d.variadic) and size != 1:
                raise _fail(op, f"{what} '{d.name}' is required")
            if d.optional and not d.variadic and size > 1:
                raise _fail(op, f"{what} '{d.name}' is optional, not variadic")
    elif not flexible and n != fixed:
        raise _fail(op, f"expects {fixed} {what}s, has {n}")
    elif flexible and n < fixed:
        raise _fail(op, f"expects at least {fixed} {what}s, has {n}")
    elif len(flexible) == 1 and flexible[0].optional and not flexible[0].variadic and n > fixed + 1:
        raise _fail(op, f"expects at most {fixed + 1} {what}s, has {n}")
    elif len(flexible) > 1 and segments is None and n != fixed:
        raise _fail(op, f"has optional {what}s in several places: needs {what}_segments")
    if all(d.dtypes is None for d in defs):
        return
    if segments is None and not flexible:
        spans = [(i, i + 1) for i in range(n)]
    else:
        spans = split_groups(defs, n, segments)
    for d, (start, stop) in zip(defs, spans):
        if d.dtypes is None:
            continue
        for v in values[start:stop]:
            if isinstance(v.type, TensorType) and v.type.dtype not in d.dtypes:
                allowed = ", ".join(sorted(t.value for t in d.dtypes))
                raise _fail(op, f"{what} '{d.name}' has element type {v.type.dtype.value}, "
                                f"expected one of {allowed}")


def _check_type_rule(op: Operation) -> None:
    if type(op).infer is Operation.infer:
        return  # no rule declared: the result types are taken as given
    inferred = op.run_type_rule()
    if len(inferred) != len(op.results):
        raise PirError(f"the type rule gives {len(inferred)} results, the op has {len(op.results)}")
    for k, (r, t) in enumerate(zip(op.results, inferred)):
        if not types_compatible(r.type, t):
            raise PirError(f"result {k} is declared {r.type}, but the type rule infers {t}")

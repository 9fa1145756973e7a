"""Branches on a fact of the shapes take the rest of their block with them: ``shape-branches``.

Exporters write tests of the input shapes as ``If`` ops.  torch's ``x.squeeze(d)`` with a
symbolic dim becomes ``If(Shape(x)[d] == 1) {Squeeze} else {Identity}``, whose result has
no rank (one branch drops a dim), so everything after it is unranked: decompose cannot
lower it and it runs op by op on the host (Silero VAD: the whole decoder, LSTM included).

This pass versions the rest of the block on such a fact, as CINN specialises kernels by
symbolic constraints.  For ``%r = nn.if(%c) {T} {E}`` whose condition is a comparison of
dims (``(S + 320) floordiv 512 == 1``, ``B == 1``) the ops after it move into both branches
(a copy each), where ``%r`` is the branch's own yielded value with its precise type.  In
each copy:

* the types are refined again from the branch's values (each op's type rule, as ``shapes``
  does; ONNX's ``unk__N`` placeholders give way to what the rule computes), and a symbol
  the fact fixes (``B == 1`` in the then-branch) is that size;
* an ``nn.if`` the fact decides (the same test again), or that the refined types decide
  (``Size(Shape(%r)) == 2`` once ``%r`` has a rank), is replaced by the branch it takes.

The branches are then processed the same way, up to ``max-versions`` copies per function.

A squeeze without axes (ONNX ``Squeeze`` of every size-1 dim, torch's ``x.squeeze()``) of
a tensor with symbolic dims has no rank either: which dims go depends on the sizes.  Each
such squeeze is first written as the test it hides, ``nn.if(Shape(x)[d] == 1) {squeeze d
too} {keep d}`` for each dim ``d`` that may be 1 (at most ``max-squeeze-dims`` of them),
which the versioning above then takes the rest of the block into (AECMOS and PLCMOS end in
``Squeeze`` of a ``[batch, 1, 2]`` score).
A copy whose refined types break an op's type rule (an ``If`` over a shape the model never
supports: Silero's LSTM gets a rank-4 input when the chunk is not 512 samples, and fails
in onnxruntime too) keeps the original, unspecialised form of the rest of the block, so the
program means exactly what it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from pir.errors import PirError
from pir.ir import dimexpr
from pir.ir.core import Block, Operation, Region, Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, make_constant
from pir.ir.dialects.func import FuncOp
from pir.ir.dialects.nn.base import YieldOp
from pir.ir.dialects.nn.control_flow import If
from pir.ir.dialects.nn.elementwise import Equal
from pir.ir.dialects.nn.identity import Identity
from pir.ir.dialects.nn.shape import Shape
from pir.ir.dialects.nn.tensor import Squeeze
from pir.ir.dialects.nn.symbolic import shape_value
from pir.ir.types import Dim, TensorType, Type
from pir.ir.verifier import verify_checks
from pir.passes.autodiff.transform import clone_op
from pir.passes.base import Pass

__all__ = ["ShapeBranches", "shape_fact"]

#: The comparisons a fact may be, by the nn op that computes it.
_COMPARE = {"nn.equal": "==", "nn.greater": ">", "nn.less": "<",
            "nn.greater_or_equal": ">=", "nn.less_or_equal": "<="}
_HOLDS = {"==": lambda a, b: a == b, ">": lambda a, b: a > b, "<": lambda a, b: a < b,
          ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b}
#: Ops a condition passes through unchanged (one boolean element).
_SAME = frozenset({"nn.cast", "nn.reshape", "nn.squeeze", "nn.unsqueeze", "nn.identity",
                   "nn.flatten"})

Fact = tuple[str, str, str]  # (comparison, lhs dim text, rhs dim text)


def _comparison(v: Value) -> tuple[Operation | None, bool]:
    """The comparison op a boolean condition is made by, through casts, reshapes and
    ``nn.not`` (and whether an odd number of nots negates it); (None, _) for anything else."""
    negated = False
    for _ in range(16):
        op = getattr(v, "op", None)
        if op is None:
            return None, negated
        if op.name == "nn.not":
            negated = not negated
        elif op.name not in _SAME:
            return (op if op.name in _COMPARE else None), negated
        v = op.operands[0]
    return None, negated


def _one_dim(v: Value) -> Dim:
    dims = shape_value(v)
    return dims[0] if dims is not None and len(dims) == 1 else None


def _compared(cond: Value) -> tuple[str, Dim, Dim, bool] | None:
    """What a condition compares: (the comparison, its two dims, whether it is negated),
    when it is a comparison of one-element shape values whose dims are known."""
    op, negated = _comparison(cond)
    if op is None:
        return None
    a, b = _one_dim(op.operands[0]), _one_dim(op.operands[1])
    if a is None or b is None:
        return None
    return _COMPARE[op.name], a, b, negated


def shape_fact(cond: Value) -> tuple[Fact, bool, Dim, Dim] | None:
    """The fact of the dims an ``nn.if`` condition tests, when it is one: ``(fact, negated,
    lhs, rhs)`` for a comparison of two one-element shape values at least one of which is
    symbolic; None for anything else (a decided comparison included)."""
    found = _compared(cond)
    if found is None or not (dimexpr.is_symbolic(found[1]) or dimexpr.is_symbolic(found[2])):
        return None
    cmp, a, b, negated = found
    return (cmp, str(a), str(b)), negated, a, b


def _decided(cond: Value, facts: dict[Fact, bool]) -> bool | None:
    """Whether ``cond`` is known: a comparison of static dims, or a fact of ``facts``."""
    found = _compared(cond)
    if found is None:
        return None
    cmp, a, b, negated = found
    if isinstance(a, int) and isinstance(b, int):
        return _HOLDS[cmp](a, b) != negated
    known = facts.get((cmp, str(a), str(b)))
    return None if known is None else known != negated


@dataclass
class _Branch:
    """What a copy of the rest of a block knows: the facts, and symbol sizes they fix."""

    facts: dict[Fact, bool]
    sizes: dict[str, int]
    inputs: frozenset[str]  # the function's input symbols: a type rule never overrides them


def _refined(declared: Type, inferred: Type, branch: _Branch) -> Type:
    """``declared`` with what ``inferred`` knows (a rank, a size, a dim for a name that is
    not an input symbol: ONNX's ``unk__N``, an exporter's ``AddstateN_dim_0``), and the
    symbols ``sizes`` fixes replaced by their sizes."""
    sizes = branch.sizes
    t = declared
    if isinstance(declared, TensorType) and isinstance(inferred, TensorType) and \
            declared.dtype == inferred.dtype and inferred.shape is not None:
        if declared.shape is None:
            t = inferred
        elif len(declared.shape) == len(inferred.shape):
            t = declared.with_shape([
                e if e is not None and (d is None or isinstance(d, str)
                                        and d not in branch.inputs) else d
                for d, e in zip(declared.shape, inferred.shape)])
    if sizes and isinstance(t, TensorType) and t.shape is not None:
        t = t.with_shape([dimexpr.substitute(d, sizes) if dimexpr.is_symbolic(d) else d
                          for d in t.shape])
    return t


def _refine(op: Operation, branch: _Branch) -> None:
    """Refine the result types of ``op`` (and first of the ops in its regions)."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                _refine(inner, branch)
    if type(op).infer is Operation.infer:
        return
    try:
        inferred = op.infer()
    except (PirError, ValueError, TypeError, IndexError, KeyError, ZeroDivisionError):
        inferred = [r.type for r in op.results]  # the verifier says what is wrong
    if len(inferred) != len(op.results):
        return
    for r, t in zip(op.results, inferred):
        r.type = _refined(r.type, t, branch)


def _specialize(ops: list[Operation], mapping: dict[Value, Value], branch: _Branch,
                dest: Block) -> bool:
    """Copy ``ops`` into ``dest`` under ``branch``'s facts: types refined, decided ifs
    replaced by the branch they take.  False when a copied op no longer verifies."""
    for op in ops:
        if op.name == "nn.if":
            taken = _decided(mapping.get(op.operands[0], op.operands[0]), branch.facts)
            if taken is not None:
                block = (op.regions[0] if taken else op.regions[1]).block
                if not _specialize(block.ops[:-1], mapping, branch, dest):
                    return False
                for r, y in zip(op.results, block.terminator.operands):
                    mapping[r] = mapping.get(y, y)
                continue
        new = clone_op(op, mapping)
        _refine(new, branch)
        dest.append(new)
        try:  # (a copied constant is the original's; its resource is the module's)
            for inner in new.walk():
                if not isinstance(inner, ConstantOp):
                    verify_checks(inner)
        except PirError:
            return False
    return True


def _symbol_sizes(fact: Fact, lhs: Dim, rhs: Dim, holds: bool) -> dict[str, int]:
    """The symbol a true equality of a symbol and a size fixes (``B == 1``)."""
    if not holds or fact[0] != "==":
        return {}
    if isinstance(lhs, str) and isinstance(rhs, int):
        return {lhs: rhs}
    if isinstance(rhs, str) and isinstance(lhs, int):
        return {rhs: lhs}
    return {}


@dataclass(frozen=True)
class ShapeBranches(Pass):
    """Version the rest of a block on an nn.if that tests a fact of the shapes: both branches
    get a copy, with types refined and the if's that fact decides resolved."""

    name: ClassVar[str] = "shape-branches"
    max_versions: int = field(default=8, metadata={
        "doc": "the most nn.if ops versioned per function (each copies the rest of its "
               "block)"})
    max_copied_ops: int = field(default=20000, metadata={
        "doc": "the most ops the versions of one function may copy"})
    max_squeeze_dims: int = field(default=2, metadata={
        "doc": "the most dims that may be 1 a squeeze without axes is versioned on (each "
               "doubles the versions)"})

    def apply(self, module: ModuleOp) -> bool:
        changed = False
        for fn in [op for op in module.walk() if isinstance(op, FuncOp)]:
            for op in [o for o in fn.walk() if o.name == "nn.squeeze"]:
                changed |= _squeeze_as_branches(module, op, self.max_squeeze_dims)
            budget = [self.max_versions, self.max_copied_ops]
            inputs = frozenset(d for a in fn.entry.args for d in _symbols(a.type))
            changed |= _process(fn.entry, _Branch({}, {}, inputs), budget)
        return changed


def _process(block: Block, branch: _Branch, budget: list[int]) -> bool:
    """Version ``block`` on its first nn.if that tests an undecided shape fact, then the
    branches of the nn.if that replaces it; else look into the branches of its nn.if ops
    (a model whose body is one branch of a test of an input value, Silero's sample rate).
    ``budget``: the versions and the ops they may still copy.  True when anything changed."""
    for i, op in enumerate(block.ops):
        if op.name != "nn.if":
            continue
        found = shape_fact(op.operands[0])
        if found is None or found[0] in branch.facts or i + 2 >= len(block.ops):
            continue  # (nothing after it but the terminator: nothing to version)
        made = {r for o in block.ops[i:] for r in o.results}
        if not all(v in made for v in block.ops[-1].operands):
            continue  # a value from before returned as it is: its name is an output's
        copied = sum(1 for o in block.ops[i + 1:] for _ in o.walk())
        if budget[0] <= 0 or copied > budget[1]:
            continue
        budget[0] -= 1
        budget[1] -= copied
        new, specialized = _version(block, op, branch, found)
        fact, negated, lhs, rhs = found
        for region, taken, done in zip(new.regions, (True, False), specialized):
            if done:  # (a branch in the original form would fail the same way again)
                _process(region.block, _branch_under(branch, fact, taken != negated, lhs, rhs),
                         budget)
        return True
    changed = False
    for op in block.ops:
        if op.name == "nn.if":
            for region in op.regions:
                changed |= _process(region.block, branch, budget)
    return changed


def _branch_under(branch: _Branch, fact: Fact, holds: bool, lhs: Dim, rhs: Dim) -> _Branch:
    return _Branch({**branch.facts, fact: holds},
                   {**branch.sizes, **_symbol_sizes(fact, lhs, rhs, holds)}, branch.inputs)


def _symbols(t: Type) -> set[str]:
    shape = getattr(t, "shape", None) or ()
    return set().union(*(dimexpr.symbols(d) for d in shape)) if shape else set()


def _version(block: Block, if_op: Operation, branch: _Branch,
             found) -> tuple[Operation, list[bool]]:
    """Replace ``if_op`` and the ops after it by one nn.if whose branches hold a copy of
    those ops each (see the module docstring); returns the new nn.if and, per branch,
    whether its copy is specialised (else it holds the original form)."""
    fact, negated, lhs, rhs = found
    i = block.ops.index(if_op)
    tail, term = block.ops[i + 1:-1], block.ops[-1]
    outs = list(term.operands)
    regions, specialized = [], []
    for region, taken in zip(if_op.regions, (True, False)):
        under = _branch_under(branch, fact, taken != negated, lhs, rhs)
        dest = Block()
        mapping: dict[Value, Value] = {}
        body = region.block
        ok = _specialize(body.ops[:-1], mapping, under, dest)
        if ok:
            for r, y in zip(if_op.results, body.terminator.operands):
                mapping[r] = mapping.get(y, y)
            ok = _specialize(tail, mapping, under, dest)
        if not ok:  # the original form: the if itself (both branches), then the rest
            dest = Block()
            mapping = {}
            for op in [if_op, *tail]:
                dest.append(clone_op(op, mapping))
        specialized.append(ok)
        dest.append(YieldOp([mapping.get(v, v) for v in outs], [], {}, [], loc=term.loc))
        regions.append(Region([dest]))
    new = type(if_op)([if_op.operands[0]], [v.type for v in outs], dict(if_op.attributes),
                      regions, loc=if_op.loc, result_names=[v.name for v in outs])
    new.text_pos = if_op.text_pos
    block.insert(i, new)
    for k, r in enumerate(new.results):
        term.set_operand(k, r)
    for op in reversed([if_op, *tail]):
        block.remove(op)
    return new, specialized


def _squeeze_as_branches(module: ModuleOp, op: Operation, most: int) -> bool:
    """Replace a squeeze without axes whose input has dims that may be 1 by nested nn.if ops
    on whether each of them is (see the module docstring); True when it did."""
    shape = op.operands[0].type.shape if isinstance(op.operands[0].type, TensorType) else None
    if op.axes is not None or shape is None:
        return False
    maybe = [i for i, d in enumerate(shape) if dimexpr.is_symbolic(d) and not dimexpr.never_one(d)]
    if not maybe or len(maybe) > most:
        return False
    block = op.parent
    at = block.ops.index(op)
    ops: list[Operation] = []
    squeezed = _squeezed(module, op, op.operands[0], [i for i, d in enumerate(shape) if d == 1],
                         maybe, ops)
    for new in ops:
        block.insert(at, new)
        at += 1
    squeezed.op.results[0].name = op.results[0].name
    op.results[0].replace_all_uses_with(squeezed)
    block.remove(op)
    return True


def _squeezed(module: ModuleOp, op: Operation, x: Value, axes: list[int], maybe: list[int],
              dest: list[Operation]) -> Value:
    """``x`` without ``axes`` and those of ``maybe`` that are 1 at run time: ops appended to
    ``dest``, the squeezed value returned."""
    loc = op.loc
    if not maybe:
        if not axes:
            dest.append(Identity.build(x, loc=loc))
        else:
            const = make_constant(module, np.array(sorted(axes), np.int64), loc=loc)
            dest.append(const)
            dest.append(Squeeze.build(x, const.results[0], loc=loc))
        return dest[-1].results[0]
    d, rest = maybe[0], maybe[1:]
    size = Shape.build(x, start=d, end=d + 1, loc=loc)
    one = make_constant(module, np.array([1], np.int64), loc=loc)
    is_one = Equal.build(size.results[0], one.results[0], loc=loc)
    regions = []
    for branch_axes in ([*axes, d], axes):
        ops: list[Operation] = []
        y = _squeezed(module, op, x, branch_axes, rest, ops)
        ops.append(YieldOp([y], [], {}, [], loc=loc))
        body = Block()
        for o in ops:
            body.append(o)
        regions.append(Region([body]))
    dest += [size, one, is_one, If.build(is_one.results[0], regions=regions, loc=loc)]
    return dest[-1].results[0]

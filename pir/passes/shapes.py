"""Shape inference and symbolic-dim propagation: the ``shapes`` pass.

Each function is processed in rounds until a round changes nothing:

1. **Refine.** Every op's type rule (``op.infer()``) runs again in program order (the ops of
   a region before the op that holds it), and each result takes, dim by dim, the more precise
   of its declared and its inferred type: a ``?`` takes the size or symbol the rule knows.
   Where both name a dim and the names differ (``unk__3`` against ``seq``, ``S`` against 4)
   the two are equal.
2. **Constrain.** Some ops accept unequal symbols in their type rules but only run when the
   dims agree: the table in :mod:`pir.passes.shape_rules` lists which dims must be equal (the contracting
   dims of a matmul, the non-axis dims of a concat ...).  Broadcasting ops only need their
   dims *broadcastable* (equal, or one of them 1): those pairs are recorded, not unified,
   because a symbol may be bound to 1 at run time.
3. **Unify.** Equal dims form classes (a union-find).  The representative of a class is a
   static size if it has one, else the first function-input symbol, else the symbol that
   appears first in the program, ONNX's placeholders ``unk__N`` coming last.  Every symbol
   that is not an input symbol is renamed to its representative in the whole function (the
   result types in the signature included).  Input symbols are the function's interface and
   are never renamed: an equality between two of them (or one and a size) is a condition the
   inputs must meet, written to the function attribute ``pir.dim_constraints`` together with
   the broadcastable pairs (``["M == N", "broadcastable(S, 4)"]``).

Only ops of a function's entry block give equalities: an op inside a branch or a loop body
may never run, so its requirements hold nothing.  Inside regions the pass only fills in
unknown dims.  Everything happens in program order, so the output is deterministic.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import ClassVar, Iterable

from pir.errors import PirError
from pir.ir.core import Block, BlockArgument, Operation
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.opdef import Broadcasting
from pir.ir import dimexpr
from pir.ir.dimexpr import DimExpr
from pir.ir.types import Dim, FunctionType, TensorType, Type
from pir.passes.base import Pass
from pir.passes.shape_rules import op_needs, shape_of, shaped_like_result

__all__ = ["ShapeInference", "DimClasses", "infer_function", "is_placeholder"]

#: The names ONNX's shape inference gives dims it cannot know.
_PLACEHOLDER = re.compile(r"unk__\d+\Z")
#: The function attribute that holds the constraints on input symbols.
CONSTRAINTS_ATTR = "pir.dim_constraints"
_MAX_ROUNDS = 16


def is_placeholder(d: Dim) -> bool:
    return isinstance(d, str) and bool(_PLACEHOLDER.match(d))


# -- classes of equal dims ------------------------------------------------------------------


class DimClasses:
    """A union-find over the dims (sizes and symbols) known to be equal in one function.

    ``inputs`` gives each input symbol its position (they rank first among symbols);
    ``order`` gives the other symbols theirs in program order."""

    def __init__(self, inputs: dict[str, int], order: dict[str, int]):
        self.inputs = inputs
        self.order = order
        self.parent: dict[Dim, Dim] = {}

    def _rank(self, d: Dim) -> tuple:
        if isinstance(d, int):
            return (0, d)
        if isinstance(d, DimExpr):
            # an expression of the inputs' symbols says what a dim is: it beats any name
            # but theirs; one over other symbols ranks with those symbols
            over_inputs = all(s in self.inputs for s in dimexpr.symbols(d))
            return (2 if over_inputs else 3, 0, str(d))
        if d in self.inputs:
            return (1, self.inputs[d])
        return (4 if is_placeholder(d) else 3, self.order.get(d, len(self.order)), d)

    def find(self, d: Dim) -> Dim:
        while self.parent.get(d, d) != d:
            up = self.parent[d]
            self.parent[d] = self.parent.get(up, up)  # path halving
            d = up
        return d

    def union(self, a: Dim, b: Dim) -> bool:
        """Record a == b; True when that is news.  Two different sizes are an error."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if _mentions(ra, rb) or _mentions(rb, ra):
            return False  # S == S floordiv 2 + 1: no renaming can say it (and S stays S)
        if isinstance(ra, int) and isinstance(rb, int):
            shown = f"{a} == {b}" if (a, b) == (ra, rb) else f"{a} == {b} (so {ra} == {rb})"
            raise PirError(f"dims that must be equal are different sizes: {shown}")
        keep, drop = sorted((ra, rb), key=self._rank)
        self.parent[drop] = keep
        return True

    def renaming(self) -> dict[str, Dim]:
        """Each non-input symbol that is not its class's representative -> the representative."""
        out = {}
        for d in self.parent:
            if isinstance(d, str) and d not in self.inputs and self.find(d) != d:
                out[d] = self.find(d)
        return out

    def input_equalities(self) -> list[str]:
        """``"M == N"`` for each input symbol whose class is represented by something else."""
        out = []
        for s in sorted(self.inputs, key=self.inputs.get):
            rep = self.find(s)
            if rep != s:
                out.append(f"{s} == {rep}")
        return out


# -- one function -----------------------------------------------------------------------------


def _refine(declared: Type, inferred: Type, equal: list[tuple[Dim, Dim]]) -> Type:
    """``declared`` with the dims only ``inferred`` knows; appends (declared, inferred) dim
    pairs that name one dim differently to ``equal``."""
    if not (isinstance(declared, TensorType) and isinstance(inferred, TensorType)):
        return declared
    if declared.dtype != inferred.dtype or inferred.shape is None:
        return declared
    if declared.shape is None:
        return inferred
    if len(declared.shape) != len(inferred.shape):
        return declared
    dims = list(declared.shape)
    for i, (d, e) in enumerate(zip(declared.shape, inferred.shape)):
        if d is None:
            dims[i] = e
        elif e is not None and e != d:
            equal.append((d, e))
    return declared.with_shape(dims)


def _mentions(d: Dim, sym: Dim) -> bool:
    """``d`` is an expression in which the symbol ``sym`` occurs."""
    return isinstance(d, DimExpr) and isinstance(sym, str) and sym in dimexpr.symbols(d)


def _rename_type(t: Type, renaming: dict[str, Dim]) -> Type:
    if not isinstance(t, TensorType) or t.shape is None:
        return t
    if not any(dimexpr.symbols(d) & renaming.keys() for d in t.shape):
        return t
    return t.with_shape(dimexpr.substitute(d, renaming) for d in t.shape)


def _walk_values(fn: FuncOp):
    """Every value of ``fn`` but its inputs: region block arguments and op results."""
    for op in fn.walk():
        if op is fn:
            continue
        for region in op.regions:
            for block in region.blocks:
                yield from block.args
        yield from op.results


def _symbols_in_order(fn: FuncOp) -> tuple[dict[str, int], dict[str, int]]:
    inputs: dict[str, int] = {}
    for a in fn.args:  # a symbol inside an input's expression is an input symbol too
        for d in shape_of(a) or ():
            for sym in sorted(dimexpr.symbols(d)) if isinstance(d, DimExpr) else [d]:
                if isinstance(sym, str):
                    inputs.setdefault(sym, len(inputs))
    order: dict[str, int] = {}
    for v in _walk_values(fn):
        for d in shape_of(v) or ():
            for sym in sorted(dimexpr.symbols(d)) if isinstance(d, DimExpr) else [d]:
                if isinstance(sym, str) and sym not in inputs:
                    order.setdefault(sym, len(order))
    return inputs, order


@dataclass
class _Round:
    """What one round over a function found."""

    classes: DimClasses
    broadcastable_equal: bool
    refined: int = 0
    events: list[str] = field(default_factory=list)
    broadcastable: list[tuple[Dim, Dim]] = field(default_factory=list)

    def equal(self, a: Dim, b: Dim, op: Operation, why: str) -> None:
        try:
            news = self.classes.union(a, b)
        except PirError as e:
            text = f"{op.describe()}: {why}: {e.message}; the function can never run"
            raise (op.text_pos.error(text) if op.text_pos is not None else PirError(text)) \
                from None
        if news:
            self.events.append(f"{a} == {b}: {op.describe()}: {why}")

    def block(self, block: Block, top: bool) -> None:
        for op in block.ops:
            for region in op.regions:
                for inner in region.blocks:
                    self.block(inner, False)
            self.op(op, top)

    def op(self, op: Operation, top: bool) -> None:
        if type(op).infer is Operation.infer or isinstance(op, FuncOp):
            return
        try:
            inferred = op.infer()
        except (PirError, ValueError, TypeError, IndexError, KeyError):
            return  # the verifier reports broken ops; this pass only adds knowledge
        if len(inferred) != len(op.results):
            return
        for k, (r, t) in enumerate(zip(op.results, inferred)):
            pairs: list[tuple[Dim, Dim]] = []
            new = _refine(r.type, t, pairs)
            if new != r.type:
                r.type = new
                self.refined += 1
            if top:
                for d, e in pairs:
                    self.equal(d, e, op, f"result {k} is declared with {d}, its type rule "
                                         f"gives {e}")
        if not top:
            return
        needs = op_needs(op)
        for a, b, why in needs.equal:
            self.equal(a, b, op, why)
        for a, b, why in needs.broadcastable:
            if self.broadcastable_equal:
                self.equal(a, b, op, f"{why} (broadcast-equal)")
            else:
                self.broadcastable.append((a, b))
        if Broadcasting in op.traits and len(op.results) == 1:
            self.broadcast_result(op)
        self.backward(op)

    def backward(self, op: Operation) -> None:
        """Operands that have their op's result shape learn from the result's declared type
        (ONNX often declares a result it could compute while its operand stays ``?``): a
        ``?`` of the operand takes the result's dim, which refines the operand's producer,
        and two names of one dim are equal.  Function inputs are left alone."""
        operands = shaped_like_result(op)
        if not operands:
            return
        out = shape_of(op.results[0])
        if out is None:
            return
        for v in operands:
            shape = shape_of(v)
            if isinstance(v, BlockArgument) or not isinstance(v.type, TensorType):
                continue
            if shape is None:
                v.type = v.type.with_shape(out)
                self.refined += 1
                continue
            if len(shape) != len(out):
                continue
            dims = [e if d is None else d for d, e in zip(shape, out)]
            for d, e in zip(shape, out):
                if d is not None and e is not None and d != e:
                    self.equal(d, e, op, f"an operand of the result's shape has {d}, the "
                                         f"result {e}")
            if dims != list(shape):
                v.type = v.type.with_shape(dims)
                self.refined += 1

    def broadcast_result(self, op: Operation) -> None:
        """A broadcasting op's unknown result dim whose operand dims (1s aside) are all in
        one class of equal dims is that class's dim: the type rule cannot know that
        ``M`` and ``N`` are equal, the classes do."""
        r = op.results[0]
        shapes = [shape_of(v) for v in op.operands]
        out = shape_of(r)
        if out is None or any(s is None for s in shapes):
            return
        dims = list(out)
        for k in range(1, len(out) + 1):
            if dims[-k] is not None:
                continue
            col = {self.classes.find(s[-k]) for s in shapes if len(s) >= k and s[-k] != 1}
            if len(col) == 1 and None not in col:
                dims[-k] = col.pop()
        if dims != list(out):
            r.type = r.type.with_shape(dims)
            self.refined += 1


@dataclass
class FunctionReport:
    """What ``infer_function`` did: for ``explain`` and for tests."""

    refined: int = 0
    renamed: dict[str, Dim] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)


def infer_function(fn: FuncOp, broadcastable_equal: bool = False) -> FunctionReport:
    """Run refine / constrain / unify rounds on ``fn`` until one changes nothing."""
    report = FunctionReport()
    for _ in range(_MAX_ROUNDS):
        inputs, order = _symbols_in_order(fn)
        rnd = _Round(DimClasses(inputs, order), broadcastable_equal)
        rnd.block(fn.entry, True)
        report.refined += rnd.refined
        report.events += [e for e in rnd.events if e not in report.events]
        renaming = rnd.classes.renaming()
        if renaming:
            for v in _walk_values(fn):
                v.type = _rename_type(v.type, renaming)
            for old, new in report.renamed.items():  # keep the map pointing at the final name
                report.renamed[old] = dimexpr.substitute(new, renaming)
            report.renamed.update(renaming)
        if not renaming and not rnd.refined:
            break
    report.constraints = rnd.classes.input_equalities() + _broadcast_constraints(rnd)
    _set_signature(fn, report.constraints)
    return report


def _broadcast_constraints(rnd: _Round) -> list[str]:
    """The recorded broadcastable pairs that still say something, once each."""
    out: list[str] = []
    find = rnd.classes.find
    for a, b in rnd.broadcastable:
        ra, rb = find(a), find(b)
        if ra == rb or 1 in (ra, rb) or (isinstance(ra, int) and isinstance(rb, int)):
            continue  # already equal, or trivially broadcastable
        a, b = sorted((a, b), key=rnd.classes._rank)
        text = f"broadcastable({a}, {b})"
        if text not in out:
            out.append(text)
    return out


def _set_signature(fn: FuncOp, constraints: list[str]) -> None:
    """Result types follow the returned values; the constraints attribute is rewritten."""
    ft = fn.function_type
    outputs = tuple(v.type for v in fn.return_op.operands)
    if outputs != ft.outputs:
        fn.attributes["function_type"] = FunctionType(ft.inputs, outputs)
    if constraints:
        fn.attributes[CONSTRAINTS_ATTR] = tuple(constraints)
    else:
        fn.attributes.pop(CONSTRAINTS_ATTR, None)


# -- the pass ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShapeInference(Pass):
    """Refine result types from the ops' type rules and unify symbolic dims that must be equal.

    A `?` dim takes what the op's type rule knows; dims an op requires equal (matmul's
    contracting dims, concat's other dims, a declared dim against an inferred one) are
    unified, renaming non-input symbols (ONNX's `unk__N` first) to the earliest name.
    Equalities between input symbols and broadcastable pairs go to the function attribute
    `pir.dim_constraints`.  `explain` prints what was unified and why.
    """

    name: ClassVar[str] = "shapes"
    explain: bool = field(default=False, metadata={"doc": "print what was unified, and why"})
    broadcast_equal: bool = field(default=False, metadata={
        "doc": "assume no symbolic dim is 1 at run time, so dims that broadcast against each "
               "other are equal and unified (as ONNX Runtime's symbolic shape inference does)"})

    def apply(self, module: ModuleOp) -> bool:
        changed = False
        for fn in module.funcs:
            if not isinstance(fn, FuncOp):
                continue
            report = infer_function(fn, self.broadcast_equal)
            # Recording constraints in an attribute cannot make the IR invalid: only refined
            # or renamed types need the verifier.
            changed |= bool(report.refined or report.renamed)
            if self.explain:
                _explain(fn, report)
        return changed


def _explain(fn: FuncOp, report: FunctionReport) -> None:
    where = f"shapes: @{fn.sym_name}:"
    lines: Iterable[str] = (
        [f"{where} {e}" for e in report.events]
        + [f"{where} renamed {old} -> {new}" for old, new in report.renamed.items()]
        + [f"{where} requires {c}" for c in report.constraints]
        + [f"{where} refined {report.refined} result type"
           f"{'' if report.refined == 1 else 's'}"])
    for line in lines:
        print(line, file=sys.stderr)

"""Declarative op definitions: the fields an op class states, and the traits it can have.

An op is declared as a class whose body lists its operands, attributes, results and regions
in order (xDSL's ``operand_def``/``prop_def`` pattern)::

    class Gemm(Operation):
        \"\"\"Y = alpha * A' @ B' + beta * C.\"\"\"
        name = "nn.gemm"
        traits = frozenset({Pure})
        a = operand()
        b = operand()
        c = operand(optional=True)
        alpha = attr(FLOAT, 1.0)
        trans_a = attr(BOOL, False)
        y = result()

        def infer(self): ...

The generic verifier (:mod:`pir.ir.verifier`) is derived from these fields; ``verify_`` holds
only what they cannot say.  Each field is also a descriptor: ``op.alpha`` reads the attribute
(or its default), ``op.c`` the operand value or ``None`` when absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pir.ir.attributes import AttrKind
from pir.ir.types import DType

__all__ = [
    "Trait",
    "Pure",
    "Elementwise",
    "Broadcasting",
    "Reduction",
    "Commutative",
    "Terminator",
    "IsolatedFromAbove",
    "SameOperandsDType",
    "OperandDef",
    "ResultDef",
    "AttrDef",
    "RegionDef",
    "operand",
    "result",
    "attr",
    "region",
    "REQUIRED",
]


@dataclass(frozen=True)
class Trait:
    """A property of an op that passes can rely on (``Pure``, ``Elementwise`` ...)."""

    name: str
    doc: str

    def __repr__(self) -> str:
        return self.name


Pure = Trait("Pure", "no side effects: may be removed when unused, moved and deduplicated")
Elementwise = Trait("Elementwise", "each output element depends on the same-index inputs")
Broadcasting = Trait("Broadcasting", "operands broadcast against each other (numpy rules)")
Reduction = Trait("Reduction", "reduces the input over some axes")
Commutative = Trait("Commutative", "operands can be swapped")
Terminator = Trait("Terminator", "ends a block")
IsolatedFromAbove = Trait("IsolatedFromAbove", "regions may not use values defined outside")
SameOperandsDType = Trait("SameOperandsDType", "all tensor operands have one element type")


class _Missing:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Missing()


@dataclass(eq=False)
class OperandDef:
    """One operand (or, with ``variadic``, a run of operands) of an op."""

    optional: bool = False
    variadic: bool = False
    dtypes: frozenset[DType] | None = None  # allowed element types; None allows any
    name: str = ""
    index: int = 0

    def __get__(self, op, owner=None):
        if op is None:
            return self
        if op.signature.fixed_operands:  # the common case: one value per declared operand
            return op.operands[self.index]
        group = op.operand_group(self.index)
        if self.variadic:
            return group
        return group[0] if group else None


@dataclass(eq=False)
class ResultDef:
    """One result (or a run of results) of an op."""

    optional: bool = False
    variadic: bool = False
    dtypes: frozenset[DType] | None = None
    name: str = ""
    index: int = 0

    def __get__(self, op, owner=None):
        if op is None:
            return self
        if op.signature.fixed_results:
            return op.results[self.index]
        group = op.result_group(self.index)
        if self.variadic:
            return group
        return group[0] if group else None


@dataclass(eq=False)
class AttrDef:
    """A named attribute with its kind and default (``REQUIRED`` when it has none)."""

    kind: AttrKind
    default: Any = REQUIRED
    doc: str = ""
    name: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def __get__(self, op, owner=None):
        if op is None:
            return self
        value = op.attributes.get(self.name, self.default)
        return None if value is REQUIRED else value


@dataclass(eq=False)
class RegionDef:
    """A region of an op, with the number of block arguments its entry block takes."""

    variadic: bool = False
    name: str = ""
    index: int = 0

    def __get__(self, op, owner=None):
        if op is None:
            return self
        return op.regions[self.index] if not self.variadic else op.regions[self.index :]


def _dtypes(dtypes) -> frozenset[DType] | None:
    return None if dtypes is None else frozenset(dtypes)


def operand(*, optional: bool = False, variadic: bool = False, dtypes=None) -> Any:
    return OperandDef(optional, variadic, _dtypes(dtypes))


def result(*, optional: bool = False, variadic: bool = False, dtypes=None) -> Any:
    return ResultDef(optional, variadic, _dtypes(dtypes))


def attr(kind: AttrKind, default: Any = REQUIRED, doc: str = "") -> Any:
    return AttrDef(kind, default, doc)


def region(*, variadic: bool = False) -> Any:
    return RegionDef(variadic)


@dataclass
class OpSignature:
    """The fields of an op class, gathered in declaration order by ``Operation``."""

    operands: list[OperandDef] = field(default_factory=list)
    results: list[ResultDef] = field(default_factory=list)
    attrs: dict[str, AttrDef] = field(default_factory=dict)
    regions: list[RegionDef] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.freeze()

    def freeze(self) -> None:
        """Precompute the facts the hot paths ask for (called once the fields are known)."""
        self.fixed_operands = not any(d.optional or d.variadic for d in self.operands)
        self.fixed_results = not any(d.optional or d.variadic for d in self.results)
        # for the verifier: the element-type constraints of fixed operands/results by index
        self.operand_dtypes = tuple((i, d) for i, d in enumerate(self.operands) if d.dtypes)
        self.result_dtypes = tuple((i, d) for i, d in enumerate(self.results) if d.dtypes)

    @property
    def operands_need_segments(self) -> bool:
        return sum(1 for d in self.operands if d.optional or d.variadic) > 1

    @property
    def results_need_segments(self) -> bool:
        return sum(1 for d in self.results if d.optional or d.variadic) > 1


def split_groups(defs: list, count: int, segments: tuple[int, ...] | None) -> list[tuple[int, int]]:
    """(start, stop) of each def's slice of a flat list of ``count`` items.

    With at most one optional or variadic def the split follows from ``count``; otherwise the
    op carries explicit segment sizes (MLIR's ``operandSegmentSizes``).
    """
    if segments is not None:
        spans, start = [], 0
        for n in segments:
            spans.append((start, start + n))
            start += n
        return spans
    flexible = [i for i, d in enumerate(defs) if d.optional or d.variadic]
    fixed = len(defs) - len(flexible)
    spans, start = [], 0
    for i, d in enumerate(defs):
        n = 1 if not (d.optional or d.variadic) else count - fixed
        spans.append((start, start + n))
        start += n
    return spans

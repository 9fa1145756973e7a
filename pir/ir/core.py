"""The IR's data structures: values with use lists, operations, blocks and regions.

Operations and values compare by identity.  Every value keeps the list of its uses, so
replace-all-uses and "is this value dead" are O(uses).  Op classes are declared with the fields
of :mod:`pir.ir.opdef`; ``Operation.__init_subclass__`` gathers them and registers the class
under its ``name`` ("dialect.op") in :data:`OPS`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator, Sequence

from pir.errors import PirError
from pir.ir.opdef import (
    REQUIRED,
    AttrDef,
    OperandDef,
    OpSignature,
    RegionDef,
    ResultDef,
    Trait,
    split_groups,
)
from pir.ir.types import Type

__all__ = ["Value", "OpResult", "BlockArgument", "Use", "Operation", "Block", "Region", "OPS"]

#: Every declared op class, by its full name ("nn.matmul").
OPS: dict[str, type[Operation]] = {}


class Use:
    """One use of a value: operand ``index`` of ``op``."""

    __slots__ = ("op", "index")

    def __init__(self, op: Operation, index: int):
        self.op = op
        self.index = index


class Value:
    """An SSA value.  ``name`` is a hint kept from the source (ONNX names) for printing."""

    __slots__ = ("type", "name", "uses")

    def __init__(self, type: Type, name: str | None = None):
        self.type = type
        self.name = name
        self.uses: list[Use] = []

    @property
    def owner(self) -> Operation | Block:
        raise NotImplementedError

    def replace_all_uses_with(self, new: Value) -> None:
        for use in list(self.uses):
            use.op.set_operand(use.index, new)

    @property
    def users(self) -> list[Operation]:
        return [u.op for u in self.uses]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} %{self.name} : {self.type}>"


class OpResult(Value):
    __slots__ = ("op", "index")

    def __init__(self, type: Type, op: Operation, index: int, name: str | None = None):
        super().__init__(type, name)
        self.op = op
        self.index = index

    @property
    def owner(self) -> Operation:
        return self.op


class BlockArgument(Value):
    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: Block, index: int, name: str | None = None):
        super().__init__(type, name)
        self.block = block
        self.index = index

    @property
    def owner(self) -> Block:
        return self.block


class Operation:
    """Base of every op class.  See :mod:`pir.ir.opdef` for how ops are declared."""

    name: ClassVar[str] = ""
    traits: ClassVar[frozenset[Trait]] = frozenset()
    signature: ClassVar[OpSignature] = OpSignature()

    __slots__ = (
        "operands",
        "results",
        "attributes",
        "regions",
        "loc",
        "parent",
        "operand_segments",
        "result_segments",
        "text_pos",
        "verified",
        "__weakref__",
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        sig = OpSignature()
        fields: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):  # fields are inherited: base fields come first
            for key, value in vars(klass).items():
                if isinstance(value, (OperandDef, ResultDef, AttrDef, RegionDef)):
                    fields[key] = value
        for key, value in fields.items():
            if isinstance(value, OperandDef):
                value.name, value.index = key, len(sig.operands)
                sig.operands.append(value)
            elif isinstance(value, ResultDef):
                value.name, value.index = key, len(sig.results)
                sig.results.append(value)
            elif isinstance(value, AttrDef):
                value.name = key
                sig.attrs[key] = value
            elif isinstance(value, RegionDef):
                value.name, value.index = key, len(sig.regions)
                sig.regions.append(value)
        sig.freeze()
        cls.signature = sig
        if cls.name:
            if cls.name in OPS:
                raise ValueError(f"op '{cls.name}' is declared twice")
            OPS[cls.name] = cls

    # -- construction ------------------------------------------------------------------------

    def __init__(
        self,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, Any] | None = None,
        regions: Sequence[Region] = (),
        loc: str | None = None,
        result_names: Sequence[str | None] | None = None,
        operand_segments: tuple[int, ...] | None = None,
        result_segments: tuple[int, ...] | None = None,
    ):
        self.operands: list[Value] = []
        self.attributes: dict[str, Any] = {}
        self.loc = loc
        self.parent: Block | None = None
        self.text_pos = None  # a lexer.TextPos for ops read from text
        self.verified: tuple | None = None  # what the verifier last checked (see verifier)
        self.operand_segments = operand_segments
        self.result_segments = result_segments
        sig = self.signature
        for key, value in (attributes or {}).items():
            adef = sig.attrs.get(key)
            if adef is not None and value is not None:
                try:
                    value = adef.kind(value)
                except (TypeError, ValueError) as e:
                    raise PirError(f"{self.name}: attribute '{key}': {e}") from None
            if value is not None:
                self.attributes[key] = value
        for v in operands:
            if not isinstance(v, Value):
                raise TypeError(f"{self.name}: operand must be a Value, got {v!r}")
            self.operands.append(v)
        names = result_names or [None] * len(result_types)
        self.results = [OpResult(t, self, i, n) for i, (t, n) in enumerate(zip(result_types, names))]
        self.regions: list[Region] = []
        for r in regions:
            self.add_region(r)

    @classmethod
    def build(cls, *operands: Value | Sequence[Value] | None, result_types=None, loc=None,
              result_names=None, regions=(), **attrs: Any) -> Operation:
        """Build from operands given per declared operand (``None`` for an absent optional,
        a list for a variadic); result types come from ``infer`` unless given."""
        sig = cls.signature
        if len(operands) > len(sig.operands):
            raise PirError(f"{cls.name} takes {len(sig.operands)} operands, got {len(operands)}")
        segments: list[int] | None = None
        if sig.fixed_operands and len(operands) == len(sig.operands) and None not in operands:
            flat = list(operands)  # the common case: one value per declared operand
        else:
            flat, segments = [], []
            for i, d in enumerate(sig.operands):
                v = operands[i] if i < len(operands) else None
                group = list(v) if d.variadic else ([] if v is None else [v])
                if not group and not (d.optional or d.variadic):
                    raise PirError(f"{cls.name}: missing operand '{d.name}'")
                flat.extend(group)
                segments.append(len(group))
        segs = tuple(segments) if segments is not None and sig.operands_need_segments else None
        if result_types is not None:
            return cls(flat, result_types, attrs, regions, loc, result_names,
                       operand_segments=segs)
        op = cls(flat, (), attrs, regions, loc, operand_segments=segs)
        op.set_results(op.run_type_rule(), result_names)
        return op

    def set_results(self, types: Sequence[Type], names: Sequence[str | None] | None = None,
                    segments: tuple[int, ...] | None = None) -> None:
        """Give a freshly built op its results (only before the results have uses)."""
        names = names or [None] * len(types)
        self.results = [OpResult(t, self, i, n) for i, (t, n) in enumerate(zip(types, names))]
        if segments is not None:
            self.result_segments = segments

    def run_type_rule(self) -> list[Type]:
        """``infer()`` with the checks it relies on done first (required attributes) and its
        failures reported as a PirError naming the rule, never as a Python exception."""
        for key, adef in self.signature.attrs.items():
            if adef.required and key not in self.attributes:
                raise PirError(f"missing required attribute '{key}'")
        try:
            return self.infer()
        except PirError:
            raise
        except (ValueError, TypeError, IndexError, KeyError) as e:
            raise PirError(f"type rule failed: {e}") from None

    def infer(self) -> list[Type]:
        """The op's type rule: result types from operand types and attributes.

        A rule may leave dims it cannot know as ``None``; declared result types must then be
        compatible with the inferred ones (see the verifier)."""
        raise PirError(f"{self.name} has no type rule: give the result types explicitly")

    def verify_(self) -> None:
        """Checks the declaration cannot express; raise :class:`PirError` on failure."""

    # -- operands ----------------------------------------------------------------------------

    # Uses are registered while the op sits in a block, so an op that was built and dropped
    # leaves nothing behind in its operands' use lists.
    def _attach_uses(self) -> None:
        for i, v in enumerate(self.operands):
            v.uses.append(Use(self, i))

    def _detach_uses(self) -> None:
        for i, v in enumerate(self.operands):
            for k, u in enumerate(v.uses):
                if u.op is self and u.index == i:
                    del v.uses[k]
                    break

    def set_operand(self, index: int, value: Value) -> None:
        old = self.operands[index]
        if self.parent is not None:
            for k, u in enumerate(old.uses):
                if u.op is self and u.index == index:
                    del old.uses[k]
                    break
            value.uses.append(Use(self, index))
        self.operands[index] = value

    def operand_group(self, index: int) -> list[Value]:
        spans = split_groups(self.signature.operands, len(self.operands), self.operand_segments)
        start, stop = spans[index]
        return self.operands[start:stop]

    def result_group(self, index: int) -> list[Value]:
        spans = split_groups(self.signature.results, len(self.results), self.result_segments)
        start, stop = spans[index]
        return self.results[start:stop]

    @property
    def result(self) -> OpResult:
        """The single result of a one-result op."""
        if len(self.results) != 1:
            raise PirError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    # -- structure ---------------------------------------------------------------------------

    def add_region(self, region: Region) -> None:
        region.parent = self
        self.regions.append(region)

    @property
    def parent_op(self) -> Operation | None:
        if self.parent is None or self.parent.parent is None:
            return None
        return self.parent.parent.parent

    def walk(self) -> Iterator[Operation]:
        """This op and every op nested in its regions, in pre-order."""
        yield self
        for r in self.regions:
            for b in r.blocks:
                for op in b.ops:
                    yield from op.walk()

    def has_trait(self, trait: Trait) -> bool:
        return trait in self.traits

    def erase(self) -> None:
        """Remove from the parent block; the results must have no uses left."""
        for r in self.results:
            if r.uses:
                raise PirError(f"cannot erase {self.name}: result %{r.name} still has uses")
        if self.parent is not None:
            self.parent.remove(self)

    def describe(self) -> str:
        """How diagnostics name this op: its name and its source location."""
        return f"{self.name}" + (f' "{self.loc}"' if self.loc else "")

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


class Block:
    """An ordered list of operations with block arguments."""

    __slots__ = ("args", "ops", "parent", "_hint")

    def __init__(self, arg_types: Sequence[Type] = (), arg_names: Sequence[str | None] | None = None):
        names = arg_names or [None] * len(arg_types)
        self.args = [BlockArgument(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Operation] = []
        self.parent: Region | None = None
        self._hint = 0  # where the last insert or removal happened (see index)

    def add_arg(self, type: Type, name: str | None = None) -> BlockArgument:
        arg = BlockArgument(type, self, len(self.args), name)
        self.args.append(arg)
        return arg

    def append(self, op: Operation) -> Operation:
        return self.insert(len(self.ops), op)

    def insert(self, index: int, op: Operation) -> Operation:
        if op.parent is not None:
            raise PirError(f"{op.name} is already in a block")
        op.parent = self
        op._attach_uses()
        self.ops.insert(index, op)
        self._hint = index
        return op

    def remove(self, op: Operation) -> None:
        i = self.index(op)
        del self.ops[i]
        self._hint = i
        op._detach_uses()
        op.parent = None

    def index(self, op: Operation) -> int:
        """``op``'s position.  Rewrites cluster (a decomposition inserts its ops before one
        root, then removes the root), so the search starts near the last insert or removal:
        a scan from the start every time made rewriting a block quadratic in its length."""
        start = max(0, self._hint - 16)
        try:
            return self.ops.index(op, start)
        except ValueError:
            return self.ops.index(op, 0, start + 1)

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops else None


class Region:
    """A list of blocks owned by an op."""

    __slots__ = ("blocks", "parent")

    def __init__(self, blocks: Sequence[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The entry block (most regions have exactly one)."""
        return self.blocks[0]


def attr_or_default(op: Operation, key: str) -> Any:
    """An attribute's value, falling back to the declared default."""
    if key in op.attributes:
        return op.attributes[key]
    adef = op.signature.attrs.get(key)
    if adef is None or adef.default is REQUIRED:
        return None
    return adef.default

"""A builder that appends new ops at an insertion point, MLIR's ``OpBuilder`` in small."""

from __future__ import annotations

from typing import Any

from pir.ir.core import Block, Operation, Value

__all__ = ["Builder"]


class Builder:
    """Creates ops and inserts them into ``block`` (at the end, or before ``before``).

    ``loc`` is given to every op built while it is set, so a frontend or a rewrite can give a
    whole expansion the location of the op it came from.
    """

    def __init__(self, block: Block, before: Operation | None = None, loc: str | None = None):
        self.block = block
        self.before = before
        self.loc = loc

    def insert(self, op: Operation) -> Operation:
        if op.loc is None:
            op.loc = self.loc
        if self.before is None:
            self.block.append(op)
        else:
            self.block.insert(self.block.ops.index(self.before), op)
        return op

    def create(self, cls: type[Operation], *operands: Any, result_types=None,
               result_names=None, regions=(), **attrs: Any) -> Operation:
        """Build ``cls`` (see ``Operation.build``) and insert it."""
        op = cls.build(*operands, result_types=result_types, result_names=result_names,
                       regions=regions, loc=self.loc, **attrs)
        return self.insert(op)

    def value(self, cls: type[Operation], *operands: Any, name: str | None = None,
              **kwargs: Any) -> Value:
        """Build a one-result op and return its result."""
        op = self.create(cls, *operands, result_names=[name] if name else None, **kwargs)
        return op.result

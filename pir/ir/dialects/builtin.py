"""The ``builtin`` dialect: the module and constants."""

from __future__ import annotations

import numpy as np

from pir.errors import PirError
from pir.ir.attributes import STR, TENSOR, DenseAttr, ResourceRef
from pir.ir.core import Block, Operation, Region
from pir.ir.opdef import IsolatedFromAbove, Pure, attr, region, result
from pir.ir.types import TensorType

__all__ = ["ModuleOp", "ConstantOp", "constant_value", "make_constant", "INLINE_LIMIT"]

#: Constants with at most this many elements are printed inline; larger ones are resources.
INLINE_LIMIT = 16


class ModuleOp(Operation):
    """The top-level container: a region of ``func.func`` ops, plus the resource section.

    ``resources`` maps a key to a numpy array; ``builtin.constant`` ops refer to entries with
    ``resource<"key">``.  Extra attributes with a dotted name (``pir.source``) are allowed.
    """

    name = "builtin.module"
    traits = frozenset({IsolatedFromAbove})
    sym_name = attr(STR, "")
    body = region()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.resources: dict[str, np.ndarray] = {}

    @staticmethod
    def create(sym_name: str = "", attributes: dict | None = None) -> ModuleOp:
        m = ModuleOp(attributes={"sym_name": sym_name, **(attributes or {})},
                     regions=[Region([Block()])])
        return m

    @property
    def funcs(self) -> list[Operation]:
        return list(self.body.block.ops)

    def verify_(self) -> None:
        from pir.ir.dialects.func import FuncOp

        seen: set[str] = set()
        for op in self.body.block.ops:
            if not isinstance(op, FuncOp):
                raise PirError(f"a module holds functions only, not {op.name}")
            if op.sym_name in seen:
                raise PirError(f"function @{op.sym_name} is defined twice")
            seen.add(op.sym_name)

    def lookup(self, name: str) -> Operation | None:
        for op in self.body.block.ops:
            if op.attributes.get("sym_name") == name:
                return op
        return None

    def add_resource(self, key: str, array: np.ndarray) -> ResourceRef:
        """Store ``array`` under ``key`` (made unique if taken) and return a reference to it."""
        base, n = key, 1
        while key in self.resources:
            key = f"{base}_{n}"
            n += 1
        self.resources[key] = array
        return ResourceRef(key)


class ConstantOp(Operation):
    """A constant tensor, inline (``dense<...>``) or from the resource section."""

    name = "builtin.constant"
    traits = frozenset({Pure})
    value = attr(TENSOR)
    out = result()

    def infer(self):
        return [TensorType.of(constant_value(self))]

    def verify_(self) -> None:
        declared, actual = self.out.type, TensorType.of(constant_value(self))
        if declared != actual:
            what = f'resource "{self.value.key}"' if isinstance(self.value, ResourceRef) else "value"
            raise PirError(f"the constant's {what} is {actual}, but its result is declared {declared}")


def constant_value(op: ConstantOp) -> np.ndarray:
    """The array a ``builtin.constant`` holds, looked up in the module for resources."""
    v = op.value
    if isinstance(v, DenseAttr):
        return v.array
    module = enclosing_module(op)
    if module is None or v.key not in module.resources:
        raise PirError(f'unknown resource "{v.key}"')
    return module.resources[v.key]


def make_constant(module: ModuleOp, array: np.ndarray, name: str | None = None,
                  loc: str | None = None) -> ConstantOp:
    """A constant op for ``array``: inline when small (or strings), else a new resource of
    ``module`` keyed by ``name``.  The op is not inserted anywhere."""
    array = np.asarray(array)
    if array.size <= INLINE_LIMIT or array.dtype == object:
        return ConstantOp.build(value=array, loc=loc, result_names=[name] if name else None)
    ref = module.add_resource(name or "constant", array)
    return ConstantOp.build(value=ref, result_types=[TensorType.of(array)], loc=loc,
                            result_names=[name] if name else None)


def enclosing_module(op: Operation) -> ModuleOp | None:
    """The module an op sits in (None for a detached op)."""
    while op is not None and not isinstance(op, ModuleOp):
        op = op.parent_op
    return op

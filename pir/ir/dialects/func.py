"""The ``func`` dialect: functions, returns and calls."""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import STR, SYMBOL, TYPE
from pir.ir.core import Block, Operation, Region
from pir.ir.opdef import IsolatedFromAbove, Terminator, attr, operand, region, result
from pir.ir.types import FunctionType, Type

__all__ = ["FuncOp", "ReturnOp", "CallOp"]


class FuncOp(Operation):
    """A function: its entry block's arguments are the inputs, ``func.return`` the outputs.

    The names of the returned values are the function's output names (``pir run`` writes them
    as the keys of its ``.npz``).
    """

    name = "func.func"
    traits = frozenset({IsolatedFromAbove})
    sym_name = attr(STR)
    function_type = attr(TYPE)
    body = region()

    @staticmethod
    def create(name: str, input_types: list[Type], output_types: list[Type],
               arg_names: list[str | None] | None = None, loc: str | None = None) -> FuncOp:
        fn = FuncOp(attributes={"sym_name": name,
                                "function_type": FunctionType(tuple(input_types), tuple(output_types))},
                    regions=[Region([Block(input_types, arg_names)])], loc=loc)
        return fn

    @property
    def entry(self) -> Block:
        return self.body.block

    @property
    def args(self):
        return self.entry.args

    @property
    def return_op(self) -> Operation:
        return self.entry.ops[-1]

    def verify_(self) -> None:
        ft = self.function_type
        if not isinstance(ft, FunctionType):
            raise PirError("function_type must be a function type")
        arg_types = tuple(a.type for a in self.entry.args)
        if arg_types != ft.inputs:
            raise PirError("entry block arguments do not match the function type")
        term = self.entry.terminator
        if not isinstance(term, ReturnOp):
            raise PirError(f"function @{self.sym_name} does not end with func.return")
        ret_types = tuple(v.type for v in term.operands)
        if ret_types != ft.outputs:
            shown = ", ".join(map(str, ret_types))
            raise PirError(f"func.return returns ({shown}) but @{self.sym_name} "
                           f"declares {FunctionType(ft.inputs, ft.outputs)}")


class ReturnOp(Operation):
    """Returns values from a function."""

    name = "func.return"
    traits = frozenset({Terminator})
    values = operand(variadic=True)

    def infer(self):
        return []


class CallOp(Operation):
    """Calls a function of the module by symbol."""

    name = "func.call"
    callee = attr(SYMBOL)
    args = operand(variadic=True)
    outs = result(variadic=True)

    def verify_(self) -> None:
        from pir.ir.dialects.builtin import enclosing_module

        module = enclosing_module(self)
        if module is None:
            return
        fn = module.lookup(self.callee.name)
        if not isinstance(fn, FuncOp):
            raise PirError(f"calls @{self.callee.name}, which the module does not define")
        ft = fn.function_type
        got = FunctionType(tuple(v.type for v in self.operands), tuple(r.type for r in self.results))
        if got != ft:
            raise PirError(f"calls @{self.callee.name} as {got}, but it is {ft}")

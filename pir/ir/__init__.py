"""The IR: types, attributes, values, operations, blocks, regions, text format, verifier."""

from pir.ir.attributes import DenseAttr, ResourceRef, SymbolRef
from pir.ir.builder import Builder
from pir.ir.core import OPS, Block, BlockArgument, Operation, OpResult, Region, Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, constant_value
from pir.ir.dialects.func import CallOp, FuncOp, ReturnOp
from pir.ir.types import DType, FunctionType, IndexType, TensorType, Type

__all__ = [
    "DenseAttr", "ResourceRef", "SymbolRef", "Builder", "OPS", "Block", "BlockArgument",
    "Operation", "OpResult", "Region", "Value", "ConstantOp", "ModuleOp", "constant_value",
    "CallOp", "FuncOp", "ReturnOp", "DType", "FunctionType", "IndexType", "TensorType", "Type",
]

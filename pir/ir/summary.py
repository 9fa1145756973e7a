"""A summary of a module for `pir show`: ops per dialect and op, parameters, signature,
estimated FLOPs and bytes, fusion groups."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pir.ir.attributes import ResourceRef
from pir.ir.cost import estimate
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, constant_value
from pir.ir.dialects.func import FuncOp
from pir.ir.types import TensorType
from pir.runtimes.reference.interpreter import output_names

__all__ = ["FuncSummary", "summarize"]


@dataclass
class FuncSummary:
    name: str
    inputs: list[tuple[str, str]]
    outputs: list[tuple[str, str]]
    ops_by_dialect: Counter = field(default_factory=Counter)
    ops_by_name: Counter = field(default_factory=Counter)
    symbols: list[str] = field(default_factory=list)
    num_params: int = 0
    param_elements: int = 0
    param_bytes: int = 0
    resource_params: int = 0
    flops: int = 0
    bytes_computed: int = 0
    unknown_cost_ops: int = 0
    groups_by_kind: Counter = field(default_factory=Counter)  # fusion groups and kernels

    @property
    def num_ops(self) -> int:
        return sum(self.ops_by_name.values())


def summarize(module: ModuleOp, dims: dict[str, int] | None = None) -> list[FuncSummary]:
    out = []
    for fn in module.funcs:
        if not isinstance(fn, FuncOp):
            continue
        s = FuncSummary(
            name=fn.sym_name,
            inputs=[(a.name or f"arg{i}", str(a.type)) for i, a in enumerate(fn.args)],
            outputs=[(n, str(v.type)) for n, v in zip(output_names(fn), fn.return_op.operands)],
        )
        symbols: list[str] = []
        for op in fn.walk():
            if op is fn:
                continue
            s.ops_by_name[op.name] += 1
            s.ops_by_dialect[op.name.split(".", 1)[0]] += 1
            if isinstance(op, ConstantOp):
                arr = constant_value(op)
                s.num_params += 1
                s.param_elements += arr.size
                s.param_bytes += arr.nbytes
                s.resource_params += isinstance(op.value, ResourceRef)
        for a in fn.args:
            if isinstance(a.type, TensorType) and a.type.shape:
                symbols += [d for d in a.type.shape if isinstance(d, str) and d not in symbols]
        s.symbols = symbols
        cost = estimate(fn.entry.ops, dims)
        s.flops, s.bytes_computed, s.unknown_cost_ops = cost.flops, cost.bytes_computed, cost.unknown
        for op in fn.entry.ops:
            if op.name in ("fusion.group", "kernel.tvm", "kernel.cuda", "kernel.cublas"):
                s.groups_by_kind[f"{op.name} ({op.attributes.get('kind', '?')})"] += 1
        out.append(s)
    return out

"""Lower a block of prim ops to a TVM tensor-expression graph and a PrimFunc.

The block is the body of a (future) ``fusion.group``: its arguments are the kernel inputs and
its terminator's operands are the kernel outputs.  Each prim op becomes one ``te.compute`` by
a rule of :data:`RULES` (prim op name -> rule), in the style of tinygrad's renderers: all
elementwise ops share one template and differ only by a scalar function (rules_elementwise);
shape ops (broadcast_in_dim, reshape, transpose, slice, concat, pad, iota) are index maps
(rules_shape); reductions use ``te.reduce_axis`` (rules_reduce); dot_general and conv have
their own modules (gemm, conv).  Index-map computes are cheap to inline, which the CPU schedule
(:mod:`pir.codegen.tvm.schedule`) does, so writing one compute per op costs nothing at run time.

Symbolic dims (``str`` dims of ``TensorType``) become TVM size variables, one per name, so one
compiled kernel serves every size of that dim; an expression dim (``(H + 1) floordiv 2``)
becomes the same expression of those variables.  Constants inside the block become immediates
when they hold one value repeated (splats), and extra kernel parameters otherwise.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import tvm
from tvm import te, tirx

from pir.codegen.sums import CPU_SUMS, SumBlocks
from pir.codegen.tvm.dims import derived_dims, to_prim_expr
from pir.codegen.tvm.target import CpuTarget, cpu_target
from pir.errors import PirError
from pir.ir.core import Block, Operation, Value
from pir.ir.dimexpr import DimExpr
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.opdef import Terminator
from pir.ir.types import DType, TensorType

__all__ = ["LoweredKernel", "lower_block", "RULES", "tvm_dtype"]

# pir element type -> TVM dtype string.  Narrow floats (f8, f4) and int4/2 have no TVM
# arithmetic on the CPU; a group holding them is not lowered (the caller keeps it on the
# reference path).
_TVM_DTYPES = {
    DType.BOOL: "bool", DType.I8: "int8", DType.I16: "int16", DType.I32: "int32",
    DType.I64: "int64", DType.U8: "uint8", DType.U16: "uint16", DType.U32: "uint32",
    DType.U64: "uint64", DType.F16: "float16", DType.BF16: "bfloat16", DType.F32: "float32",
    DType.F64: "float64",
}


def tvm_dtype(dtype: DType) -> str:
    try:
        return _TVM_DTYPES[dtype]
    except KeyError:
        raise PirError(f"tvm codegen: element type {dtype.value} is not supported") from None


@dataclass
class LoweredKernel:
    """What :func:`lower_block` produces.

    ``func`` is the schedulable PrimFunc (``create_prim_func``); its parameters are, in order,
    the block arguments, the non-splat constants (``params``), the sizes of the ``free_dims``
    (int32 scalars: dims no argument shows, see pir.codegen.tvm.dims), then the outputs.  ``sizes``
    maps each symbolic dim name to its TVM variable (bound at run time from buffer shapes).
    ``reduce_inner`` tells the schedule how many trailing dims every reduction of the group
    reduces (the "row" structure of softmax / layer_norm / rms_norm), or ``None`` when the
    reductions do not share that form and each stage is scheduled on its own.
    ``long_sums`` names the computes of each long float sum taken in blocks (its block
    partials and its f64 total: pir.codegen.tvm.long_sums), for the schedule.
    ``cpu`` is the target the kernel is lowered and scheduled for (its tiles).
    """

    func: tvm.tirx.PrimFunc
    inputs: list[te.Tensor]
    params: list[tuple[te.Tensor, np.ndarray]]
    outputs: list[te.Tensor]
    output_types: list[TensorType]
    sizes: dict[str, tirx.Var]
    reduce_inner: int | None
    name: str = "main"
    notes: list[str] = field(default_factory=list)
    free_dims: list[str] = field(default_factory=list)
    long_sums: list[tuple[str, str]] = field(default_factory=list)
    cpu: CpuTarget | None = None


class _Ctx:
    """State shared by the rules while one block is lowered."""

    def __init__(self, sums: SumBlocks, cpu: CpuTarget) -> None:
        self.cpu = cpu  # the target CPU, whose vector width sizes the tiles
        self.sizes: dict[str, tirx.Var] = {}
        self._exprs: dict = {}  # dim -> its TVM expression (see dim)
        self.sums = sums  # how long float sums are blocked (pir.codegen.sums)
        self.long_sums: list[tuple[str, str]] = []  # (block partials, f64 total) computes
        self.names: set[str] = set()
        self.params: list[tuple[te.Tensor, np.ndarray]] = []
        # (rank of the reduced operand, reduced axes) of every reduction, for reduce_inner
        self.reductions: list[tuple[int, tuple[int, ...]]] = []
        # the tensor of every value lowered so far (for rules that look past their operands)
        self.env: dict[Value, te.Tensor] = {}

    def dim(self, d) -> tirx.PrimExpr | int:
        # one expression object per dim, as one variable per symbol: rules that compare
        # dims by identity (a reshape keeping its leading and trailing dims) then see that
        # two ``(H + 1) floordiv 2`` are the same size
        if d not in self._exprs:
            self._exprs[d] = to_prim_expr(d, self._var)
        return self._exprs[d]

    def _var(self, name: str) -> tirx.Var:
        # One variable per symbol name: the same name is the same size everywhere in a
        # function, which is what lets TVM prove that shapes match.
        if name not in self.sizes:
            self.sizes[name] = te.var(name, "int32")
        return self.sizes[name]

    def shape(self, t: TensorType) -> tuple:
        if t.shape is None:
            raise PirError("tvm codegen: unranked tensors are not supported")
        return tuple(self.dim(d) for d in t.shape)

    def name(self, hint: str | None, default: str) -> str:
        """A unique, legal identifier for a compute (ONNX names hold '.', '/', ':')."""
        base = re.sub(r"\W", "_", hint or default, flags=re.ASCII) or default
        if base[0].isdigit():
            base = "v" + base
        if keyword.iskeyword(base) or base in _SCRIPT_NAMES:
            base += "_"  # a buffer named `not` or `T` makes the printed TIR unparsable
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name


#: Names the printed TIR (TVMScript) uses itself: a buffer must not shadow them.
_SCRIPT_NAMES = frozenset({"T", "I", "Axis", "range", "tvm"})


# -- rules -----------------------------------------------------------------------------------

Rule = Callable[[Operation, list[te.Tensor], _Ctx, str], te.Tensor]
#: prim op name -> rule(op, input tensors, context, compute name) -> output tensor
RULES: dict[str, Rule] = {}


def _out_type(op: Operation) -> TensorType:
    return op.results[0].type


def rule(name: str):
    def register(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn

    return register


# -- driver ----------------------------------------------------------------------------------

def _constant(op: ConstantOp, ctx: _Ctx, name: str) -> te.Tensor:
    arr = np.asarray(constant_value(op))
    t = op.results[0].type
    dtype = tvm_dtype(t.dtype)
    flat = arr.reshape(-1)
    if flat.size > 0 and (flat == flat[0]).all():
        # A splat (the usual scalar epsilon, 1/D, 0.5 ...): an immediate, so the compiled
        # kernel neither reads it nor depends on its shape.
        value = flat[0].item()
        return te.compute(ctx.shape(t), lambda *i: tirx.const(value, dtype), name=name)
    ph = te.placeholder(ctx.shape(t), dtype, name=name)
    ctx.params.append((ph, arr))
    return ph


def lower_block(block: Block, name: str = "main", sums: SumBlocks = CPU_SUMS,
                cpu: CpuTarget | None = None) -> LoweredKernel:
    """Lower ``block`` (prim ops ending in a terminator) to a schedulable PrimFunc; ``sums``:
    how its long float sums are taken (pir.codegen.sums); ``cpu``: the CPU it is for (None:
    this machine's)."""
    ctx = _Ctx(sums, cpu or cpu_target())
    env = ctx.env
    term = block.terminator
    if term is None or not term.has_trait(Terminator):
        raise PirError("tvm codegen: the block must end in a terminator")
    _shown_exprs(ctx, [*(a.type for a in block.args), *(v.type for v in term.operands)])
    inputs = []
    for k, a in enumerate(block.args):
        ph = te.placeholder(ctx.shape(a.type), tvm_dtype(a.type.dtype),
                            name=ctx.name(a.name, f"arg{k}"))
        env[a] = ph
        inputs.append(ph)
    free: list[str] = []
    for sym, (src, others) in derived_dims(block, free).items():
        # a dim made by a reshape: the source's element count over the result's other dims
        ctx.sizes[sym] = tirx.floordiv(_prod(ctx.dim(d) for d in src),
                                       _prod(ctx.dim(d) for d in others))
    # a dim nothing in the block determines: a scalar parameter (pir.codegen.tvm.dims)
    free_vars = [ctx.dim(d) for d in free]
    for op in block.ops[:-1]:
        hint = op.results[0].name if op.results else None
        cname = ctx.name(hint, op.name.split(".")[-1])
        if isinstance(op, ConstantOp):
            env[op.results[0]] = _constant(op, ctx, cname)
            continue
        fn = RULES.get(op.name)
        if fn is None:
            raise PirError(f"tvm codegen: no lowering rule for {op.describe()}")
        if len(op.results) != 1:
            raise PirError(f"tvm codegen: {op.name} has {len(op.results)} results")
        t = op.results[0].type
        if _empty(t):
            # nothing to compute, and index maps over a 0 dim (reshape's div and mod by 0,
            # vector loops of length 0) are what TVM fails on
            env[op.results[0]] = te.compute(ctx.shape(t), lambda *i: tirx.const(
                0, tvm_dtype(t.dtype)), name=cname)
            continue
        env[op.results[0]] = fn(op, [env[v] for v in op.operands], ctx, cname)

    outputs, types = [], []
    for k, v in enumerate(term.operands):
        t = env[v]
        # An output must be a compute of its own: an input (or a constant, or a value returned
        # twice) is copied, since a PrimFunc output buffer is written, not aliased.
        if not isinstance(t.op, te.ComputeOp) or any(t.same_as(o) for o in outputs):
            t = _copy(t, ctx.name(f"out{k}", "out"))
        outputs.append(t)
        types.append(v.type)

    func = te.create_prim_func([*inputs, *(p for p, _ in ctx.params), *free_vars, *outputs])
    func = func.with_attr("global_symbol", name)
    return LoweredKernel(func, inputs, ctx.params, outputs, types, ctx.sizes,
                         _reduce_inner(ctx.reductions, types), name, free_dims=free,
                         long_sums=ctx.long_sums, cpu=ctx.cpu)


def _shown_exprs(ctx: _Ctx, types) -> None:
    """Give every compound dim (``(H + 1) floordiv 2``) that is a whole dim of an argument or
    a result a variable of its own, which the kernel reads off that buffer as it reads a
    symbol.  TVM's proofs then see one variable where they would see the expression, and
    they need them: the region-cover check of a schedule cannot prove that ``32 * ((W + 31)
    floordiv 32)`` columns fit in their round-up to whole 64-wide tiles (so a convolution
    was left unscheduled), while for a variable ``w`` it proves ``w <= (w + 63) // 64 * 64``.
    The runtime sizes every buffer from the types, so the variable holds the expression's
    value; the symbols inside it stay available as scalar parameters where a dim that no
    buffer shows still needs them."""
    for t in types:
        for d in getattr(t, "shape", None) or ():
            if isinstance(d, DimExpr) and d not in ctx._exprs:
                ctx._exprs[d] = te.var(f"dimexpr_{len(ctx._exprs)}", "int32")


def _prod(dims) -> tirx.PrimExpr:
    out = tirx.const(1, "int32")
    for d in dims:
        out = out * d
    return out


def _empty(t) -> bool:
    """A tensor with a static dim of 0 (no elements)."""
    return isinstance(t, TensorType) and t.shape is not None and 0 in t.shape


def _copy(src: te.Tensor, name: str) -> te.Tensor:
    return te.compute(src.shape, lambda *i: src(*i), name=name)


def _reduce_inner(reductions, out_types) -> int | None:
    """How many trailing dims the group's reductions reduce, when all reduce the trailing
    dims of operands of the outputs' rank (softmax, norms: one row at a time); else None."""
    if not reductions:
        return 0
    ranks = {len(t.shape) for t in out_types}
    inner = set()
    for rank, axes in reductions:
        if len(ranks) != 1 or rank not in ranks or list(axes) != list(range(rank - len(axes),
                                                                            rank)):
            return None
        inner.add(len(axes))
    return max(inner)


# The rule modules fill RULES (imported last: they import the names above).
from pir.codegen.tvm import rules_elementwise, rules_reduce, rules_shape  # noqa: E402,F401

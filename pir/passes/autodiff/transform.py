"""One application of reverse or forward mode to a function of prim ops.

Both build a new function that starts with a copy of the primal program:

- **reverse** (:func:`reverse`) then walks the copied ops in reverse order, calling each op's
  VJP rule on the cotangents of its results and accumulating the cotangents of its operands
  with ``prim.add``; the cotangents of the chosen outputs are the seeds.
- **forward** (:func:`forward`) calls each op's JVP rule right after its copy, on the tangents
  of its operands; the tangents of the ``wrt`` inputs are the seeds.

Only *active* values are differentiated: float values that depend on a ``wrt`` input.
Integer and boolean values never carry a derivative, so an op's rule runs only where a
float derivative flows.  Zeros are symbolic (``None``) throughout, so nothing is computed for
paths that do not reach an output.  The cleanup passes (canonicalize, fold, cse, dce) remove
the primal work the derivative does not need; see :mod:`pir.passes.autodiff.driver`.
"""

from __future__ import annotations

from typing import Sequence

from pir.errors import PirError
from pir.ir.core import Block, BlockArgument, Operation, Region, Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir.types import FunctionType, TensorType
from pir.passes.autodiff.builder import ADBuilder
from pir.passes.autodiff.memory import BACKWARD, PHASE
from pir.passes.autodiff.registry import lookup

__all__ = ["clone_op", "reverse", "forward"]


def clone_op(op: Operation, mapping: dict[Value, Value]) -> Operation:
    """A copy of ``op`` (and of its regions) whose operands are looked up in ``mapping``;
    the copy's results are added to ``mapping``.  Names, location and text position are
    kept, so diagnostics about the copy point at the original."""
    regions = []
    for region in op.regions:
        blocks = []
        for block in region.blocks:
            nb = Block([a.type for a in block.args], [a.name for a in block.args])
            mapping.update(zip(block.args, nb.args))
            blocks.append(nb)
        regions.append(Region(blocks))
    new = type(op)([mapping.get(v, v) for v in op.operands], [r.type for r in op.results],
                   dict(op.attributes), regions, loc=op.loc,
                   result_names=[r.name for r in op.results],
                   operand_segments=op.operand_segments, result_segments=op.result_segments)
    for region, nr in zip(op.regions, new.regions):
        for block, nb in zip(region.blocks, nr.blocks):
            for inner in block.ops:
                nb.append(clone_op(inner, mapping))
    new.text_pos = op.text_pos
    mapping.update(zip(op.results, new.results))
    return new


def _inputs(op: Operation) -> list[Value]:
    """The values ``op`` reads: its operands, and values its regions use from outside."""
    if not op.regions:
        return op.operands
    inner = {r for o in op.walk() for r in o.results}
    inner |= {a for o in op.walk() for reg in o.regions for blk in reg.blocks for a in blk.args}
    return [v for o in op.walk() for v in o.operands if v not in inner]


def _is_float(v: Value) -> bool:
    return isinstance(v.type, TensorType) and v.type.dtype.is_float


def _not_differentiable(op: Operation, results) -> PirError:
    names = ", ".join(f"%{r.name}" for r in results)
    return PirError(f"{op.describe()}: {op.name} is declared not differentiable, but its "
                    f"float result {names} depends on the differentiated inputs")


def _start(fn: FuncOp, name: str, extra_types: Sequence, extra_names: Sequence[str]):
    """A new function whose arguments are ``fn``'s plus the extra ones, holding a copy of
    ``fn``'s body (without its return); gives the function, the copied ops and the map."""
    args = list(fn.args)
    new = FuncOp.create(name, [a.type for a in args] + list(extra_types), [],
                        [a.name for a in args] + list(extra_names), loc=fn.loc)
    mapping: dict[Value, Value] = dict(zip(args, new.args))
    return new, mapping


def _finish(new: FuncOp, b: ADBuilder, primal: set[Value], outputs: list[Value],
            names: list[str | None], loc) -> FuncOp:
    """Return ``outputs``; a derivative output (with a name) gets a value of its own, so its
    name is the output's name."""
    claimed: set[Value] = set()
    final = []
    b.loc = loc
    for v, name in zip(outputs, names):
        if name is not None:
            if isinstance(v, BlockArgument) or v in claimed or v in primal:
                b.base = name
                v = b.op("reshape", v, result_type=v.type)  # an identity carrying the name
            v.name = name
        claimed.add(v)
        final.append(v)
    new.entry.append(ReturnOp.build(final, loc=loc))
    new.attributes["function_type"] = FunctionType(tuple(a.type for a in new.args),
                                                   tuple(v.type for v in final))
    return new


def reverse(module: ModuleOp, fn: FuncOp, wrt: Sequence[int], of: Sequence[int], seed: str,
            keep_primal: bool, name: str, grad_names: Sequence[str],
            cot_names: Sequence[str]) -> FuncOp:
    """``fn``'s vector-Jacobian product: a function taking ``fn``'s inputs (and, with
    ``seed="input"``, one cotangent per output in ``of``) and returning the cotangents of the
    inputs ``wrt`` (after all of ``fn``'s outputs with ``keep_primal``).  With
    ``seed="ones"`` the seeds are ones: the gradient of the sum of the outputs."""
    outs = list(fn.return_op.operands)
    extra = [outs[i].type for i in of] if seed == "input" else []
    new, mapping = _start(fn, name, extra, cot_names if seed == "input" else [])
    block = new.entry
    ops = [block.append(clone_op(op, mapping)) for op in fn.entry.ops[:-1]]
    active = {block.args[i] for i in wrt}
    for op in ops:
        if any(v in active for v in _inputs(op)):
            active.update(r for r in op.results if _is_float(r))

    b = ADBuilder(module, block)
    cts: dict[Value, Value] = {}

    def accumulate(v: Value, g: Value, what: str) -> None:
        g = b.as_type(g, v.type, what)
        cts[v] = b.add(cts[v], g) if v in cts else g

    primal_outs = [mapping.get(v, v) for v in outs]
    b.loc = fn.return_op.loc
    for k, i in enumerate(of):
        v = primal_outs[i]
        if v not in active:
            continue  # no wrt input reaches this output: its cotangent flows nowhere
        b.base = cot_names[k]
        s = block.args[len(fn.args) + k] if seed == "input" else b.ones_like(v)
        accumulate(v, s, "the seed")
    for op in reversed(ops):
        if not any(r in cts for r in op.results):
            continue
        cts_out = [cts.pop(r, None) for r in op.results]
        rule = lookup(op, "vjp")
        if rule == "zero":
            continue
        if rule == "nondiff":
            raise _not_differentiable(op, [r for r, c in zip(op.results, cts_out) if c is not None])
        b.at(op, "g")
        wants = [v in active for v in op.operands]
        grads = rule(b, op, cts_out, wants)
        if len(grads) != len(op.operands):
            raise PirError(f"{op.describe()}: the vjp rule gave {len(grads)} cotangents for "
                           f"{len(op.operands)} operands (a bug in pir)")
        for v, g, want in zip(op.operands, grads, wants):
            if g is not None and want:
                accumulate(v, g, f"{op.describe()} (vjp)")
    b.loc = fn.return_op.loc
    grads = []
    for i, gname in zip(wrt, grad_names):
        b.base = gname
        grads.append(b.instantiate(cts.get(block.args[i]), block.args[i]))
    kept = primal_outs if keep_primal else []
    done = _finish(new, b, set(mapping.values()), kept + grads,
                   [None] * len(kept) + list(grad_names), fn.return_op.loc)
    primal_ops = set(ops)
    for op in block.ops[:-1]:  # what the rules built: the backward part (see memory.py)
        if op not in primal_ops:
            op.attributes[PHASE] = BACKWARD
    return done


def forward(module: ModuleOp, fn: FuncOp, wrt: Sequence[int], of: Sequence[int], seed: str,
            keep_primal: bool, name: str, tangent_names: Sequence[str],
            out_names: Sequence[str]) -> FuncOp:
    """``fn``'s Jacobian-vector product: a function taking ``fn``'s inputs (and, with
    ``seed="input"``, one tangent per input in ``wrt``) and returning the tangents of the
    outputs ``of`` (after all of ``fn``'s outputs with ``keep_primal``).  With
    ``seed="ones"`` every ``wrt`` input's tangent is ones."""
    extra = [fn.args[i].type for i in wrt] if seed == "input" else []
    new, mapping = _start(fn, name, extra, tangent_names if seed == "input" else [])
    block = new.entry
    b = ADBuilder(module, block)
    tangents: dict[Value, Value] = {}
    b.loc = fn.loc
    for k, i in enumerate(wrt):
        b.base = tangent_names[k]
        arg = block.args[i]
        tangents[arg] = block.args[len(fn.args) + k] if seed == "input" else b.ones_like(arg)
    for op in fn.entry.ops[:-1]:
        op = block.append(clone_op(op, mapping))
        ts = [tangents.get(v) for v in op.operands]
        if all(t is None for t in ts) and not (op.regions and
                                               any(v in tangents for v in _inputs(op))):
            continue
        rule = lookup(op, "jvp")
        if rule == "zero":
            continue
        if rule == "nondiff":
            floats = [r for r in op.results if _is_float(r)]
            if floats:
                raise _not_differentiable(op, floats)
            continue
        b.at(op, "t")
        outs = rule(b, op, ts)
        if len(outs) != len(op.results):
            raise PirError(f"{op.describe()}: the jvp rule gave {len(outs)} tangents for "
                           f"{len(op.results)} results (a bug in pir)")
        for r, t in zip(op.results, outs):
            if t is not None and _is_float(r):
                tangents[r] = b.as_type(t, r.type, f"{op.describe()} (jvp)")
    outs = [mapping.get(v, v) for v in fn.return_op.operands]
    b.loc = fn.return_op.loc
    derivs = []
    for i, oname in zip(of, out_names):
        b.base = oname
        derivs.append(b.instantiate(tangents.get(outs[i]), outs[i]))
    kept = outs if keep_primal else []
    return _finish(new, b, set(mapping.values()), kept + derivs,
                   [None] * len(kept) + list(out_names), fn.return_op.loc)

"""``differentiate``: the whole transformation behind ``pir autodiff``.

1. The function is copied into a scratch module (the input module's functions stay as they
   were); constants named by ``wrt`` become inputs of the copy, so that no pass folds them
   or merges them with an equal constant while they are being differentiated.
2. Calls are inlined (:mod:`pir.passes.autodiff.inline`), and ``decompose`` rewrites the
   nn ops into prims.
3. Reverse or forward mode is applied ``order`` times, each time to the previous result
   (:mod:`pir.passes.autodiff.transform`); between two applications, and at the end, the
   cleanup pipeline (canonicalize, fold, cse, dce) removes what the derivative does not use.
4. The lifted constants become constants again, and the result joins the input module as an
   ordinary function, its large constants moved into the module's resource section.

docs/autodiff.md describes the signature of the result and what each order computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pir.errors import PirError
from pir.ir.attributes import ResourceRef
from pir.ir.core import Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp
from pir.ir.dialects.func import CallOp, FuncOp
from pir.ir.types import TensorType
from pir.passes.autodiff.inline import inline_calls
from pir.passes.autodiff.memory import mark_backward, rematerialize, unmark
from pir.passes.autodiff.transform import clone_op, forward, reverse

__all__ = ["differentiate", "CLEANUP"]

#: What runs on the derivative program (and between two orders).
CLEANUP = "canonicalize,fold,cse,dce"
MODES = ("rev", "fwd")
SEEDS = ("input", "ones")


def _is_float(v: Value) -> bool:
    return isinstance(v.type, TensorType) and v.type.dtype.is_float


def _unique(name: str, taken: set[str]) -> str:
    out, k = name, 1
    while out in taken:
        out, k = f"{name}_{k}", k + 1
    taken.add(out)
    return out


@dataclass
class _Wrt:
    """A value differentiated with respect to: a function input, or a constant of the
    function (``const`` set) lifted to an input while differentiating."""

    name: str
    index: int  # its argument position in the working function
    const: ConstantOp | None = None


def _resolve_wrt(fn: FuncOp, names: Sequence[str]) -> list[_Wrt]:
    if not names:
        raise PirError("--wrt: name at least one input (or constant) to differentiate with "
                       "respect to")
    if len(set(names)) != len(names):
        raise PirError(f"--wrt: {', '.join(names)} names a value twice")
    args = {a.name: a for a in fn.args}
    consts = {op.results[0].name: op for op in fn.entry.ops
              if isinstance(op, ConstantOp) and op.results[0].name}
    out, lifted = [], len(fn.args)
    for n in names:
        if n in args:
            v, w = args[n], _Wrt(n, fn.args.index(args[n]))
        elif n in consts:
            v, w = consts[n].results[0], _Wrt(n, lifted, consts[n])
            lifted += 1
        else:
            listed = ", ".join(args) or "none"
            cnames = sorted(consts)
            shown = ", ".join(cnames[:8]) + (", ..." if len(cnames) > 8 else "")
            raise PirError(f"--wrt: @{fn.sym_name} has no input or constant named '{n}' "
                           f"(inputs: {listed}; constants: {shown or 'none'})")
        if not _is_float(v):
            raise PirError(f"--wrt: '{n}' is {v.type}, not a float tensor: only float values "
                           "have derivatives")
        out.append(w)
    return out


def _resolve_of(fn: FuncOp, names: Sequence[str]) -> list[int]:
    from pir.runtimes.reference.interpreter import output_names

    outs = output_names(fn)
    values = fn.return_op.operands
    if not names:
        chosen = [i for i, v in enumerate(values) if _is_float(v)]
        if not chosen:
            raise PirError(f"@{fn.sym_name} has no float output to differentiate")
        return chosen
    if len(set(names)) != len(names):
        raise PirError(f"--of: {', '.join(names)} names an output twice")
    chosen = []
    for n in names:
        if n not in outs:
            raise PirError(f"--of: @{fn.sym_name} has no output named '{n}' (outputs: "
                           f"{', '.join(outs) or 'none'})")
        i = outs.index(n)
        if not _is_float(values[i]):
            raise PirError(f"--of: output '{n}' is {values[i].type}, not a float tensor")
        chosen.append(i)
    return chosen


def _callees(module: ModuleOp, fn: FuncOp) -> list[FuncOp]:
    """The functions ``fn`` calls, directly or not (the scratch module needs them to
    verify)."""
    seen: dict[str, FuncOp] = {}
    todo = [fn]
    while todo:
        for op in todo.pop().walk():
            if isinstance(op, CallOp) and op.callee.name not in seen:
                callee = module.lookup(op.callee.name)
                if isinstance(callee, FuncOp) and callee is not fn:
                    seen[op.callee.name] = callee
                    todo.append(callee)
    return list(seen.values())


def _lifted_copy(fn: FuncOp, name: str, wrt: list[_Wrt]) -> FuncOp:
    """``fn`` as function ``name`` with the constants of ``wrt`` turned into inputs."""
    consts = [w for w in wrt if w.const is not None]
    types = [a.type for a in fn.args] + [w.const.results[0].type for w in consts]
    names = [a.name for a in fn.args] + [w.name for w in consts]
    new = FuncOp.create(name, types, list(fn.function_type.outputs), names, loc=fn.loc)
    mapping: dict[Value, Value] = dict(zip(fn.args, new.args))
    for w, arg in zip(consts, new.args[len(fn.args):]):
        mapping[w.const.results[0]] = arg
    skip = {w.const for w in consts}
    for op in fn.entry.ops:
        if op not in skip:
            new.entry.append(clone_op(op, mapping))
    return new


def _relowered(fn: FuncOp, name: str, wrt: list[_Wrt]) -> FuncOp:
    """``fn`` with the lifted constants (inputs again constants) put back."""
    consts = {w.index: w.const for w in wrt if w.const is not None}
    keep = [a for i, a in enumerate(fn.args) if i not in consts]
    new = FuncOp.create(name, [a.type for a in keep], list(fn.function_type.outputs),
                        [a.name for a in keep], loc=fn.loc)
    mapping: dict[Value, Value] = dict(zip(keep, new.args))
    for i, const in sorted(consts.items()):
        new.entry.append(clone_op(const, {}))
        mapping[fn.args[i]] = new.entry.ops[-1].results[0]
    for op in fn.entry.ops:
        new.entry.append(clone_op(op, mapping))
    return new


def _run(module: ModuleOp, pipeline: str) -> None:
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    PassManager(parse_pipeline(pipeline)).run(module)


def _replace(scratch: ModuleOp, old: FuncOp | None, new: FuncOp) -> FuncOp:
    body = scratch.body.block
    if old is not None:
        body.remove(old)
    body.append(new)
    return new


def _adopt(module: ModuleOp, scratch: ModuleOp, fn: FuncOp) -> None:
    """Move ``fn`` from the scratch module into ``module``, with the resources it reads."""
    scratch.body.block.remove(fn)
    for op in fn.walk():
        if isinstance(op, ConstantOp) and isinstance(op.value, ResourceRef):
            key = op.value.key
            array = scratch.resources[key]
            if module.resources.get(key) is not array:
                op.attributes["value"] = module.add_resource(key, array)
    module.body.block.append(fn)


def differentiate(module: ModuleOp, wrt: Sequence[str], *, func: str = "main",
                  mode: str = "rev", of: Sequence[str] = (), seed: str = "input",
                  order: int = 1, keep_primal: bool = False, name: str | None = None,
                  cleanup: str = CLEANUP, remat: bool = False) -> FuncOp:
    """Add to ``module`` the derivative of its function ``func`` and return it.

    ``mode="rev"``: the new function takes ``func``'s inputs, then (``seed="input"``) one
    cotangent ``cot_<output>`` per output in ``of`` (default: every float output), and
    returns ``grad_<w>`` for each ``w`` in ``wrt``.  ``mode="fwd"``: it takes the inputs, then
    (``seed="input"``) one tangent ``tangent_<w>`` per ``wrt``, and returns
    ``tangent_<output>`` per output in ``of``.  ``seed="ones"`` seeds ones instead of taking
    the seeds as inputs.  ``order=N`` applies the mode N times, each time to the derivative
    outputs of the previous application (names ``grad2_<w>``, ``tangent2_<w>``, ...);
    ``keep_primal`` also returns every output of the function differentiated, at each
    order.  ``wrt`` names inputs or constants of ``func``.

    In reverse mode the ops of the last application's backward part are marked
    (:mod:`pir.passes.autodiff.memory`); ``remat`` recomputes the cheap values they would
    keep from the forward part instead.
    """
    from pir.passes.decompose import Decompose
    from pir.passes.manager import PassManager

    if mode not in MODES:
        raise PirError(f"unknown mode '{mode}' (modes: {', '.join(MODES)})")
    if seed not in SEEDS:
        raise PirError(f"unknown seed '{seed}' (seeds: {', '.join(SEEDS)})")
    if order < 1:
        raise PirError(f"--order must be at least 1, got {order}")
    fn = module.lookup(func)
    if not isinstance(fn, FuncOp):
        names = ", ".join("@" + f.sym_name for f in module.funcs) or "none"
        raise PirError(f"the module has no function @{func} (functions: {names})")
    name = name or f"{func}_grad"
    if module.lookup(name) is not None:
        raise PirError(f"the module already has a function @{name} (choose another name "
                       "with --name)")
    targets = _resolve_wrt(fn, wrt)
    chosen = _resolve_of(fn, of)

    scratch = ModuleOp.create(module.sym_name)
    scratch.resources = dict(module.resources)
    for callee in _callees(module, fn):
        scratch.body.block.append(clone_op(callee, {}))
    cur = _replace(scratch, None, _lifted_copy(fn, name, targets))
    inline_calls(scratch, cur)
    unmark(cur)  # a derivative (or a call of one) differentiated again: all of it is forward
    PassManager([Decompose()]).run(scratch)

    wrt_index = [w.index for w in targets]
    bases = _output_names(cur, chosen)  # forward mode names its outputs after these
    for level in range(1, order + 1):
        prefix = ("grad" if mode == "rev" else "tangent") + (str(level) if level > 1 else "")
        taken = {a.name for a in cur.args if a.name}
        if keep_primal:
            taken |= set(_output_names(cur, range(len(cur.return_op.operands))))
        if mode == "rev":
            cot_names = [_unique(f"cot_{n}", taken) for n in _output_names(cur, chosen)]
            grad_names = [_unique(f"{prefix}_{w.name}", taken) for w in targets]
            new = reverse(scratch, cur, wrt_index, chosen, seed, keep_primal, name, grad_names,
                          cot_names)
            derived = len(grad_names)
            seed_names = set(cot_names) if seed == "input" else set()
        else:
            tan_names = [_unique(f"{prefix}_{w.name}", taken) for w in targets]
            out_names = [_unique(f"{prefix}_{base}", taken) for base in bases]
            new = forward(scratch, cur, wrt_index, chosen, seed, keep_primal, name, tan_names,
                          out_names)
            derived = len(out_names)
        cur = _replace(scratch, cur, new)
        n_out = len(cur.return_op.operands)
        chosen = list(range(n_out - derived, n_out))
        if level < order:
            unmark(cur)  # the next order differentiates all of it
            if cleanup:
                _run(scratch, cleanup)
    cur = _replace(scratch, cur, _relowered(cur, name, targets))
    backward = set(unmark(cur))  # the copies made by _relowered
    if cleanup:
        _run(scratch, cleanup)  # unmarked, so that cse merges backward and forward duplicates
    if mode == "rev":
        mark_backward(cur, backward, [a for a in cur.args if a.name in seed_names])
        if remat:
            rematerialize(cur)
    _adopt(module, scratch, cur)
    return cur


def _output_names(fn: FuncOp, indices) -> list[str]:
    from pir.runtimes.reference.interpreter import output_names

    names = output_names(fn)
    return [names[i] for i in indices]


"""Training steps: ``pir autodiff --train sgd|adam --loss OUTPUT``.

:func:`build_train_step` adds two functions to the module:

- ``@<name>(params..., state..., data...) -> (loss, metrics..., new_<param>...,
  new_<state>...)``: one optimizer step.  The parameters are the ``wrt`` values; ONNX initializers are constants,
  so a constant named in ``wrt`` becomes an input of the step (by default: every float
  constant of rank >= 1 of the function, which is what an ONNX initializer holding a weight
  or a bias is; rank-0 constants are taken for hyper-parameters such as an epsilon).  The
  optimizer state is ``m_<param>``, ``v_<param>`` and ``step`` for adam, nothing for sgd;
  the data inputs are the function's other inputs.  The metrics are the function's other
  one-element float outputs (the terms of a loss).  Output ``new_X`` is the next value of
  input ``X``: ``pir run --steps`` feeds it back (:mod:`pir.runtimes.train_loop`).
- ``@<name>_init() -> (params..., state...)``: the initial values, the constants' stored
  values and zero state, so that a step can start from the model as imported.

The loss must be a float output with one element.  The step is built from the reverse-mode
gradient of the loss (:func:`pir.passes.autodiff.differentiate` with ``keep_primal``), then the
update ops, which are marked as part of the backward part (``pir show`` reports what the
step keeps between its forward and backward parts).  docs/autodiff.md has the formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pir.errors import PirError
from pir.ir.core import BlockArgument, Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir.types import DType, FunctionType, TensorType
from pir.passes.autodiff.builder import ADBuilder
from pir.passes.autodiff.memory import BACKWARD, PHASE, mark_backward
from pir.passes.autodiff.transform import clone_op

__all__ = ["Optimizer", "OPTIMIZERS", "build_train_step", "default_params"]

OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class Optimizer:
    """sgd: ``p - lr * g``.  adam (Kingma & Ba, as torch.optim.Adam without weight decay):
    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g²``, ``t = t + 1``,
    ``p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``."""

    kind: str = "sgd"
    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self) -> None:
        if self.kind not in OPTIMIZERS:
            raise PirError(f"unknown optimizer '{self.kind}' (optimizers: "
                           f"{', '.join(OPTIMIZERS)})")
        if not self.lr > 0:
            raise PirError(f"--lr must be positive, got {self.lr}")

    def state_names(self, param: str) -> list[str]:
        return [f"m_{param}", f"v_{param}"] if self.kind == "adam" else []


def _float_static(v: Value) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.dtype.is_float and t.is_static


def default_params(fn: FuncOp) -> list[str]:
    """The float constants of rank >= 1 of ``fn``, in program order: its weights."""
    out = []
    for op in fn.entry.ops:
        if isinstance(op, ConstantOp) and op.results[0].name and _float_static(op.results[0]) \
                and op.results[0].type.rank >= 1:
            out.append(op.results[0].name)
    return out


def _resolve(fn: FuncOp, names: Sequence[str]) -> list[Value]:
    """The values named (inputs or named constants of ``fn``), checked to be static float
    tensors."""
    args = {a.name: a for a in fn.args}
    consts = {op.results[0].name: op.results[0] for op in fn.entry.ops
              if isinstance(op, ConstantOp) and op.results[0].name}
    if len(set(names)) != len(names):
        raise PirError(f"--wrt: {', '.join(names)} names a value twice")
    out = []
    for n in names:
        v = args.get(n) or consts.get(n)
        if v is None:
            raise PirError(f"--wrt: @{fn.sym_name} has no input or constant named '{n}'")
        if not _float_static(v):
            raise PirError(f"--wrt: '{n}' is {v.type}: a trained parameter must be a float "
                           "tensor of static shape")
        out.append(v)
    return out


def _loss_index(fn: FuncOp, loss: str) -> int:
    from pir.runtimes.reference.interpreter import output_names

    outs = output_names(fn)
    if loss not in outs:
        raise PirError(f"--loss: @{fn.sym_name} has no output named '{loss}' (outputs: "
                       f"{', '.join(outs) or 'none'})")
    i = outs.index(loss)
    t = fn.return_op.operands[i].type
    if not (isinstance(t, TensorType) and t.dtype.is_float and t.shape is not None
            and all(d == 1 for d in t.shape)):
        raise PirError(f"--loss: output '{loss}' is {t}: the loss must be a float tensor of "
                       "one element (reduce it, e.g. with ReduceMean)")
    return i


def _metrics(fn: FuncOp, loss: int) -> list[tuple[int, str]]:
    """The function's other one-element float outputs (a loss's terms, say): the step
    returns them after the loss, and ``pir run --steps`` prints them."""
    from pir.runtimes.reference.interpreter import output_names

    out = []
    for i, (o, v) in enumerate(zip(output_names(fn), fn.return_op.operands)):
        t = v.type
        if i != loss and isinstance(t, TensorType) and t.dtype.is_float and \
                t.shape is not None and all(d == 1 for d in t.shape):
            out.append((i, o))
    return out


def _source(fn: FuncOp, name: str, params: list[Value]) -> FuncOp:
    """``fn`` with the parameters first among its inputs (constants made inputs)."""
    data = [a for a in fn.args if a not in params]
    ins = params + data
    new = FuncOp.create(name, [v.type for v in ins], list(fn.function_type.outputs),
                        [v.name for v in ins], loc=fn.loc)
    mapping = dict(zip(ins, new.args))
    for op in fn.entry.ops:
        if not (isinstance(op, ConstantOp) and op.results[0] in mapping):
            new.entry.append(clone_op(op, mapping))
    return new


def _taken(module: ModuleOp, name: str) -> None:
    if module.lookup(name) is not None:
        raise PirError(f"the module already has a function @{name} (choose another name "
                       "with --name)")


def build_train_step(module: ModuleOp, loss: str, optimizer: Optimizer = Optimizer(),
                     wrt: Sequence[str] = (), func: str = "main", name: str | None = None,
                     remat: bool = False) -> FuncOp:
    """Add ``@<name>`` (one optimizer step on ``loss``) and ``@<name>_init`` to ``module``
    and return the step; ``name`` defaults to ``<func>_train``."""
    from pir.passes.autodiff.driver import CLEANUP, _adopt, _run, differentiate

    fn = module.lookup(func)
    if not isinstance(fn, FuncOp):
        raise PirError(f"the module has no function @{func}")
    name = name or f"{func}_train"
    _taken(module, name)
    _taken(module, f"{name}_init")
    li = _loss_index(fn, loss)
    metrics = _metrics(fn, li)
    names = list(wrt) or default_params(fn)
    if not names:
        raise PirError(f"@{func} has no float constant of rank >= 1 to train: name the "
                       "parameters with --wrt")
    params = _resolve(fn, names)

    src_name, grad_name = f"{name}__loss", f"{name}__grad"
    _taken(module, src_name)
    src = module.body.block.append(_source(fn, src_name, params))
    try:
        grad = differentiate(module, names, func=src_name, of=[loss], seed="ones",
                             keep_primal=True, name=grad_name, remat=remat)
    finally:
        module.body.block.remove(src)
    module.body.block.remove(grad)

    scratch = ModuleOp.create(module.sym_name)
    scratch.resources = dict(module.resources)
    step = _step_function(scratch, grad, name, names, [(li, loss)] + metrics,
                          len(fn.return_op.operands), optimizer)
    scratch.body.block.append(step)
    _run(scratch, CLEANUP)
    mark_backward(step, [op for op in step.entry.ops if op.attributes.get(PHASE) == BACKWARD])
    _adopt(module, scratch, step)
    module.body.block.append(_init_function(module, fn, f"{name}_init", params, optimizer))
    return step


def _step_function(scratch: ModuleOp, grad: FuncOp, name: str, params: list[str],
                   reported: list[tuple[int, str]], n_primal: int, opt: Optimizer) -> FuncOp:
    """The step: ``grad`` (the gradient of the loss, keeping the primal outputs) with the
    optimizer state among its inputs and the update after it."""
    n = len(params)
    ptypes = [a.type for a in grad.args[:n]]
    data = list(grad.args[n:])
    state = [(s, t) for p, t in zip(params, ptypes) for s in opt.state_names(p)]
    if opt.kind == "adam":
        state.append(("step", TensorType(DType.F32, ())))
    new = FuncOp.create(name, ptypes + [t for _, t in state] + [a.type for a in data], [],
                        params + [s for s, _ in state] + [a.name for a in data], loc=grad.loc)
    p_args = list(new.args[:n])
    s_args = {s: a for (s, _), a in zip(state, new.args[n:n + len(state)])}
    mapping = dict(zip(list(grad.args[:n]) + data, p_args + list(new.args[n + len(state):])))
    for op in grad.entry.ops[:-1]:
        new.entry.append(clone_op(op, mapping))
    rets = [mapping.get(v, v) for v in grad.return_op.operands]

    b = ADBuilder(scratch, new.entry)
    b.loc = f"train:{opt.kind}"
    start = len(new.entry.ops)
    updates = _updates(b, opt, params, p_args, rets[n_primal:], s_args)
    for op in new.entry.ops[start:]:
        op.attributes[PHASE] = BACKWARD  # the update reads the gradients
    b.loc = grad.return_op.loc
    final: list[Value] = []
    for v, nm in [(rets[i], o) for i, o in reported] + updates:
        if isinstance(v, BlockArgument) or v in final:
            b.base = nm
            v = b.op("reshape", v, result_type=v.type)  # an identity carrying the name
            v.owner.attributes[PHASE] = BACKWARD
        v.name = nm
        final.append(v)
    new.entry.append(ReturnOp.build(final, loc=grad.return_op.loc))
    new.attributes["function_type"] = FunctionType(tuple(a.type for a in new.args),
                                                   tuple(v.type for v in final))
    return new


def _updates(b: ADBuilder, opt: Optimizer, params: list[str], p_args: list[Value],
             grads: list[Value], s_args: dict[str, Value]) -> list[tuple[Value, str]]:
    """The new parameters, then the new state, with their output names."""
    if opt.kind == "sgd":
        out = []
        for p, arg, g in zip(params, p_args, grads):
            b.base = f"{p}.sgd"
            out.append((b.sub(arg, b.mul(b.full_like(opt.lr, arg), g)), f"new_{p}"))
        return out
    b.base = "step.adam"
    t1 = b.add(s_args["step"], b.const(1.0, DType.F32))
    new_params, new_state = [], []
    for p, arg, g in zip(params, p_args, grads):
        b.base = f"{p}.adam"
        p1, m1, v1 = _adam(b, opt, arg, g, s_args[f"m_{p}"], s_args[f"v_{p}"], t1)
        new_params.append((p1, f"new_{p}"))
        new_state += [(m1, f"new_m_{p}"), (v1, f"new_v_{p}")]
    return new_params + new_state + [(t1, "new_step")]


def _adam(b: ADBuilder, opt: Optimizer, p: Value, g: Value, m: Value, v: Value, t1: Value):
    """One adam update of ``p``: gives the new ``p``, ``m`` and ``v`` (``t1``: the new step)."""
    pt = p.type
    scalar = TensorType(pt.dtype, ())
    tt = b.cast(t1, pt.dtype)
    m1 = b.add(b.mul(b.full(opt.beta1, pt), m), b.mul(b.full(1 - opt.beta1, pt), g))
    v1 = b.add(b.mul(b.full(opt.beta2, pt), v), b.mul(b.full(1 - opt.beta2, pt), b.square(g)))
    bc1 = b.sub(b.full(1.0, scalar), b.op("pow", b.full(opt.beta1, scalar), tt))
    bc2 = b.sub(b.full(1.0, scalar), b.op("pow", b.full(opt.beta2, scalar), tt))
    mhat = b.div(m1, b.broadcast(bc1, pt, ()))
    vhat = b.div(v1, b.broadcast(bc2, pt, ()))
    denom = b.add(b.op("sqrt", vhat), b.full(opt.eps, pt))
    return b.sub(p, b.div(b.mul(b.full(opt.lr, pt), mhat), denom)), m1, v1


def _init_function(module: ModuleOp, fn: FuncOp, name: str, params: list[Value],
                   opt: Optimizer) -> FuncOp:
    """``@name() -> (params..., state...)``: the stored values of the parameters that are
    constants (a parameter that is an input has no stored value: the caller gives it) and
    zero optimizer state."""
    outs: list[tuple[Value, str]] = []
    new = FuncOp.create(name, [], [], [], loc=fn.loc)
    b = ADBuilder(module, new.entry)
    b.loc = f"train:{opt.kind}"
    for v in params:
        if isinstance(v.owner, ConstantOp):
            op = new.entry.append(clone_op(v.owner, {}))
            outs.append((op.results[0], v.name))
    for v in params:
        for s in opt.state_names(v.name):
            b.base = s
            outs.append((b.zeros_like(v), s))  # a broadcast scalar: no resource to store
    if opt.kind == "adam":
        b.base = "step"
        outs.append((b.const(0.0, DType.F32), "step"))
    for v, nm in outs:
        v.name = nm
    new.entry.append(ReturnOp.build([v for v, _ in outs], loc=fn.loc))
    new.attributes["function_type"] = FunctionType((), tuple(v.type for v, _ in outs))
    return new

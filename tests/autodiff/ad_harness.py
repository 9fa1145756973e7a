"""Test harness for autodiff: build small prim programs, check derivatives numerically.

``program(inputs, body)`` builds ``func.func @main`` whose arguments are the named input
arrays and whose body ``body(p)`` writes with ``p.op("add", a, b)``, ``p.const(array)``.

``check_grads(module, inputs, wrt)`` differentiates ``@main`` in reverse and in forward mode
to second order (``order=2, keep_primal=True``, so one function gives the primal outputs and
both orders) and compares, in float64 with central differences (as JAX's ``check_grads``):

- order 1: the derivative along a random direction ``v`` with the difference quotient of
  the function along ``v``;
- order 2: the second-order output with the difference quotient of the first-order output
  along a second random direction.

The error is ``|a - b| / max(|a|, |b|, FLOOR)``: relative, with a floor so that derivatives
that are exactly zero compare with the roundoff of their difference quotient.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import pir.ir.dialects.prim  # noqa: F401  (registers the prim ops)
from pir.ir.core import OPS, Value
from pir.ir.dialects.builtin import ModuleOp, make_constant
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir.types import FunctionType, TensorType
from pir.ir.verifier import verify_module
from pir.passes.autodiff import differentiate
from pir.runtimes.reference import run_function

__all__ = ["program", "check_grads", "TOL", "STEP"]

TOL = 1e-6
STEP = 1e-5
FLOOR = 1e-3


class _Body:
    def __init__(self, module: ModuleOp, fn: FuncOp):
        self.module, self.fn = module, fn
        self.args = {a.name: a for a in fn.args}

    def __getitem__(self, name: str) -> Value:
        return self.args[name]

    def op(self, name: str, *operands, result_type: TensorType | None = None, **attrs) -> Value:
        return self.ops(name, *operands, result_types=None if result_type is None
                        else [result_type], **attrs)[0]

    def ops(self, name: str, *operands, result_types=None, **attrs) -> list[Value]:
        op = OPS[f"prim.{name}"].build(*operands, result_types=result_types, **attrs)
        return self.fn.entry.append(op).results

    def const(self, array) -> Value:
        op = make_constant(self.module, np.asarray(array))
        return self.fn.entry.append(op).results[0]


def program(inputs: dict[str, np.ndarray], body: Callable[[_Body], Sequence[Value] | Value]
            ) -> ModuleOp:
    """A verified module whose @main takes ``inputs`` (by name) and returns ``body``'s
    values (named ``y0``, ``y1`` ...)."""
    module = ModuleOp.create("test")
    types = [TensorType.of(np.asarray(a)) for a in inputs.values()]
    fn = FuncOp.create("main", types, [], list(inputs))
    module.body.block.append(fn)
    outs = body(_Body(module, fn))
    outs = [outs] if isinstance(outs, Value) else list(outs)
    for i, v in enumerate(outs):
        v.name = f"y{i}"
    fn.entry.append(ReturnOp.build(outs))
    fn.attributes["function_type"] = FunctionType(tuple(types), tuple(v.type for v in outs))
    verify_module(module)
    return module


def _error(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(np.linalg.norm(a), np.linalg.norm(b), FLOOR)
    return float(np.linalg.norm(a - b) / scale)


def _vdot(a, b) -> float:
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def _random_like(rng, fn: FuncOp, names: Sequence[str]) -> dict[str, np.ndarray]:
    types = {a.name: a.type for a in fn.args}
    return {n: rng.standard_normal(types[n].shape) for n in names}


def _shifted(inputs, direction, h):
    return {k: v + h * direction[k] if k in direction else v for k, v in inputs.items()}


def check_grads(module: ModuleOp, inputs: dict[str, np.ndarray], wrt: Sequence[str] | None = None,
                seed: int = 0, modes=("rev", "fwd"), tol: float = TOL, step: float = STEP
                ) -> dict[str, float]:
    """Check reverse and forward derivatives of @main, orders 1 and 2, against central
    differences; returns the errors by check (``rev1``, ``rev2``, ``fwd1``, ``fwd2``) and
    asserts each is at most ``tol``."""
    rng = np.random.default_rng(seed)
    wrt = list(wrt if wrt is not None else [k for k, v in inputs.items()
                                             if np.asarray(v).dtype.kind == "f"])
    main = module.lookup("main")
    outs = [v.name for v in main.return_op.operands
            if v.type.dtype.is_float]
    v = {k: rng.standard_normal(np.shape(inputs[k])) for k in wrt}
    errors = {}
    if "rev" in modes:
        fn = differentiate(module, wrt, mode="rev", order=2, keep_primal=True, name="d_rev")
        seeds = _random_like(rng, fn, [a.name for a in fn.args][len(main.args):])

        def rev(x):
            return run_function(module, {**x, **seeds}, func="d_rev")

        at = rev(inputs)
        plus, minus = rev(_shifted(inputs, v, step)), rev(_shifted(inputs, v, -step))
        cot = {o: seeds[f"cot_{o}"] for o in outs}
        fd1 = sum(_vdot(cot[o], plus[o] - minus[o]) for o in outs) / (2 * step)
        errors["rev1"] = _error(sum(_vdot(at[f"grad_{w}"], v[w]) for w in wrt), fd1)
        fd2 = sum(_vdot(seeds[f"cot_grad_{w}"], plus[f"grad_{w}"] - minus[f"grad_{w}"])
                  for w in wrt) / (2 * step)
        errors["rev2"] = _error(sum(_vdot(at[f"grad2_{w}"], v[w]) for w in wrt), fd2)
    if "fwd" in modes:
        fn = differentiate(module, wrt, mode="fwd", order=2, keep_primal=True, name="d_fwd")
        t1 = {f"tangent_{w}": v[w] for w in wrt}
        t2 = {f"tangent2_{w}": rng.standard_normal(np.shape(inputs[w])) for w in wrt}
        u = {w: t2[f"tangent2_{w}"] for w in wrt}

        def fwd(x):
            return run_function(module, {**x, **t1, **t2}, func="d_fwd")

        at = fwd(inputs)
        plus, minus = fwd(_shifted(inputs, v, step)), fwd(_shifted(inputs, v, -step))
        errors["fwd1"] = max(_error(at[f"tangent_{o}"], (plus[o] - minus[o]) / (2 * step))
                             for o in outs)
        plus, minus = fwd(_shifted(inputs, u, step)), fwd(_shifted(inputs, u, -step))
        errors["fwd2"] = max(_error(at[f"tangent2_{o}"],
                                    (plus[f"tangent_{o}"] - minus[f"tangent_{o}"]) / (2 * step))
                             for o in outs)
    bad = {k: e for k, e in errors.items() if not e <= tol}
    assert not bad, f"derivatives disagree with finite differences: {bad} (all: {errors})"
    return errors

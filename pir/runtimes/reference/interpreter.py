"""The reference runtime: a numpy interpreter for every op of builtin, func, nn and prim.

It is the oracle of the test suite, so it favours clarity and checks over speed: inputs are
checked against the function's signature (names, element types, shapes, with symbolic dims
bound consistently), and every result is checked against its declared type.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from pir.errors import PirError
from pir.ir import dimexpr
from pir.ir.dimexpr import DimExpr
from pir.ir.core import Block, Operation, Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, constant_value
from pir.ir.dialects.func import CallOp, FuncOp
from pir.ir.opdef import Terminator
from pir.ir.types import DType, TensorType
from pir.limits import check_tensor_bytes
from pir.runtimes.reference.registry import EVAL, REGION_EVAL, SYMBOLS, load_all

__all__ = ["Interpreter", "DimConflict", "run_function", "fold_op", "evaluate_op"]


def _as_array(x: Any, t: TensorType | None) -> np.ndarray:
    # A rule must return the declared element type itself: casting here would hide a rule
    # that computes in the wrong precision.  (numpy scalars become 0-d arrays.)
    arr = np.asarray(x)
    if isinstance(t, TensorType) and t.dtype is not DType.STRING and arr.dtype != t.dtype.numpy:
        raise PirError(f"the evaluation rule returned {DType.from_numpy(arr.dtype).value} for a "
                       f"{t.dtype.value} result (a bug in pir)")
    return arr


class DimConflict(PirError):
    """A value's dim differs from the size the run already bound to that dim's name."""


def _where(op: Operation) -> str:
    pos = f" at {op.text_pos}" if op.text_pos is not None else ""
    return f"{op.describe()}{pos}"


class ResultOf:
    """"result %r of <the op and where it is>", made only when a message is: a run checks
    every result it makes, and formatting the text each time cost microseconds an op."""

    __slots__ = ("result", "op")

    def __init__(self, result: Value, op: Operation):
        self.result, self.op = result, op

    def __str__(self) -> str:
        return f"result %{self.result.name} of {_where(self.op)}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class _ResultAt(ResultOf):
    """"<the op and where it is>: result %r", made only when a message is (a scan's results
    are size-checked on every call: formatting its location each time cost ~7 us a call)."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"{_where(self.op)}: result %{self.result.name}"


def evaluate_op(op: Operation, arrays: list[np.ndarray], interp: Interpreter | None = None) -> list[np.ndarray]:
    """Run one op's rule on its operand arrays and return one array per result."""
    name = op.name
    rule = EVAL.get(name)
    if rule is None and name not in REGION_EVAL:
        load_all()  # called on its own, before any Interpreter loaded the rule modules
        rule = EVAL.get(name)
    if rule is not None:
        token = SYMBOLS.set(interp.symbols) if interp is not None else None
        try:
            out = rule(op, *arrays)
        finally:
            if token is not None:
                SYMBOLS.reset(token)
    else:
        region_rule = REGION_EVAL.get(name)
        if region_rule is None:
            raise PirError(f"the reference runtime has no evaluation rule for {name}")
        out = region_rule(interp or Interpreter(None), op, *arrays)
    if len(op.results) == 1 and not isinstance(out, (tuple, list)):
        out = (out,)
    if len(out) != len(op.results):
        raise PirError(f"{_where(op)}: the evaluation rule gave {len(out)} results for "
                       f"{len(op.results)}")
    return [_as_array(x, r.type) for x, r in zip(out, op.results)]


def fold_op(op: Operation, limit: int,
            arrays: list[np.ndarray] | None = None) -> list[np.ndarray] | None:
    """Evaluate a pure op on constant operands (or on ``arrays``, their values); None when it
    cannot or the result is big."""
    load_all()
    if op.name not in EVAL:
        return None
    for r in op.results:  # too big to keep as a constant: not worth making (a ConstantOfShape
        t = r.type        # of [2**28, 3] would allocate gigabytes to find that out)
        if isinstance(t, TensorType) and t.is_static and t.numel > limit:
            return None
    try:
        if arrays is None:
            arrays = [constant_value(v.op) for v in op.operands]
        out = evaluate_op(op, arrays)
    except Exception:  # folding is an optimisation: the op stays and fails at run time
        return None
    if any(a.size > limit or a.dtype == object for a in out):
        return None
    for a, r in zip(out, op.results):
        t = r.type
        if isinstance(t, TensorType) and t.shape is not None:
            # a symbolic dim (B, 2*B) is a size only the run binds: a constant would fix it
            if len(t.shape) != a.ndim or any(
                    dimexpr.is_symbolic(d) or (isinstance(d, int) and d != s)
                    for d, s in zip(t.shape, a.shape)):
                return None
    return out


#: Programs are dataflow graphs; a deeper call chain is a recursive function.
_MAX_CALL_DEPTH = 64


#: Ops whose regions run inside the op: a profile times the ops of the region that runs
#: (a kernel in a branch is a kernel), not the op as one opaque entry.
CONTROL_FLOW = frozenset({"nn.if", "nn.loop", "nn.scan"})


class Interpreter:
    """Runs functions of a module.  ``values`` maps every computed value to its array.

    ``profile``: None (the default: no timing), or a dict that every run fills in with
    ``profile_key(op) -> [calls, seconds]`` for each op it executes.  A call or a control-flow
    op (nn.if, nn.loop, nn.scan) is not an entry of its own (the ops it runs are); another op
    with regions (a fusion group) is one entry, its nested ops untimed, so the entries add up
    to the time of the run."""

    def __init__(self, module: ModuleOp | None, keep_values: bool = False,
                 profile: dict | None = None):
        load_all()
        self.module = module
        self.keep_values = keep_values
        self.values: dict[Value, np.ndarray] = {}
        self.symbols: dict[str, int] = {}
        self._bound_by: dict[Block, set[str]] = {}  # a loop or scan body -> its run's dims
        self.depth = 0
        self.profile = profile
        self._signatures: dict[FuncOp, _Signature] = {}

    def profile_key(self, op: Operation) -> tuple[str, str]:
        """The profile entry of ``op``: (kind, name), here ("op", the op's name)."""
        return ("op", op.name)

    def check(self, v: Value, arr: np.ndarray, what: str) -> None:
        t = v.type
        if not isinstance(t, TensorType):
            return
        if t.dtype is not DType.STRING and arr.dtype != t.dtype.numpy:
            raise PirError(f"{what} has element type {DType.from_numpy(arr.dtype).value}, "
                           f"expected {t.dtype.value}")
        if t.shape is None:
            return
        if arr.ndim != len(t.shape):
            raise PirError(f"{what} has shape {list(arr.shape)}, expected rank {len(t.shape)} "
                           f"({t})")
        for i, (d, s) in enumerate(zip(t.shape, arr.shape)):
            if isinstance(d, int) and d != s:
                raise PirError(f"{what} has shape {list(arr.shape)}, expected {t} "
                               f"(dim {i} must be {d})")
            if isinstance(d, str):
                bound = self.symbols.setdefault(d, s)
                if bound != s:
                    raise DimConflict(f"{what} has shape {list(arr.shape)}: dim {i} is {d}, "
                                      f"which is already {bound}")
        for i, (d, s) in enumerate(zip(t.shape, arr.shape)):
            if isinstance(d, DimExpr):  # after the symbols: they may be bound by later dims
                solved = dimexpr.solve(d, s, self.symbols)
                if solved is not None:
                    self.symbols[solved[0]] = solved[1]
                elif dimexpr.linear(d, self.symbols) is not None:
                    sym = dimexpr.linear(d, self.symbols)[0]
                    raise DimConflict(f"{what} has shape {list(arr.shape)}: dim {i} is {d}, "
                                      f"which is {s} for no size of {sym}")
                value = dimexpr.evaluate(d, self.symbols)
                if value is not None and value != s:
                    bound = ", ".join(f"{k} = {self.symbols[k]}"
                                      for k in sorted(dimexpr.symbols(d)))
                    raise DimConflict(f"{what} has shape {list(arr.shape)}: dim {i} is {d}, "
                                      f"which is {value} ({bound})")

    def run(self, fn: FuncOp, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run ``fn`` on inputs given by argument name; return outputs by output name."""
        sig = self._signatures.get(fn)
        if sig is None:
            sig = self._signatures[fn] = _Signature(fn)
        names = sig.names
        if len(inputs) != len(names) or not all(n in inputs for n in names):
            unknown = sorted(set(inputs) - set(names))
            if unknown:
                raise PirError(f"unknown input{'s' if len(unknown) > 1 else ''} "
                               f"{', '.join(unknown)}; @{fn.sym_name} takes "
                               f"{', '.join(names) or 'none'}")
            missing = [n for n in names if n not in inputs]
            raise PirError(f"missing input{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
        if self.depth == 0:  # a new run binds its dims afresh (a new batch size)
            self.symbols.clear()
            self._bound_by.clear()
            self.values.clear()
        arrays = []
        for a, name, dtype, shape in sig.args:
            arr = np.asarray(inputs[name])
            if arr.shape != shape or arr.dtype != dtype:  # (a static type: no dims to bind)
                self.check(a, arr, f"input '{name}'")
            arrays.append(arr)
        outs = self.call(fn, arrays)
        return dict(zip(sig.outputs, outs))

    def call(self, fn: FuncOp, arrays: list[np.ndarray]) -> list[np.ndarray]:
        self.depth += 1
        try:
            if self.depth > _MAX_CALL_DEPTH:
                raise PirError(f"calls nest deeper than {_MAX_CALL_DEPTH} (at @{fn.sym_name}): "
                               "is a function calling itself?")
            return self.run_block(fn.entry, arrays)
        finally:
            self.depth -= 1

    def run_scan(self, op: Operation, states: list[np.ndarray],
                 xs: list[np.ndarray]) -> tuple | None:
        """All the iterations of ``op`` (an nn.scan) at once, where a runtime can: its
        results, or None to run the body once per iteration (the reference does)."""
        return None

    def run_block(self, block: Block, args: list[np.ndarray]) -> list[np.ndarray]:
        """Run a block on its argument arrays; return the terminator's operand arrays."""
        values = self.values
        for a, arr in zip(block.args, args):
            values[a] = arr
        body = _is_body(block)
        if body:
            before = self._rebind(block, args)
        prof = self.profile
        try:
            for op in block.ops:
                if Terminator in op.traits:
                    return [values[v] for v in op.operands]
                if prof is None or isinstance(op, CallOp) or op.name in CONTROL_FLOW:
                    self.exec(op)  # (a call's or a branch's ops are timed one by one)
                else:
                    self._exec_timed(op, prof)
            return []
        finally:
            if body:
                self._bound_by[block] = set(self.symbols) - before

    def _rebind(self, block: Block, args: list[np.ndarray]) -> set[str]:
        """Start a run of a loop or scan body: forget the symbols its last run bound (a
        Slice's length, a carried tensor's dim: they may differ at every iteration), then
        bind those its arguments' types name from the arrays (a loop-carried ``[N, 501,
        30]``, paddle2onnx's table recogniser, sizes the body's ops by N).  Returns the
        symbols bound before the run; they stay after it, for a planned runtime to learn
        (pir.runtimes.tvm.executor)."""
        for d in self._bound_by.pop(block, ()):
            self.symbols.pop(d, None)
        before = set(self.symbols)
        for a, arr in zip(block.args, args):
            t = a.type
            if not isinstance(t, TensorType) or t.shape is None \
                    or np.ndim(arr) != len(t.shape):
                continue
            for d, n in zip(t.shape, np.shape(arr)):
                if isinstance(d, str) and d not in self.symbols:
                    self.symbols[d] = n
        return before

    def _exec_timed(self, op: Operation, prof: dict) -> None:
        self.profile = None  # the op's regions run untimed: the op is one entry
        t0 = time.perf_counter()
        try:
            self.exec(op)
        finally:
            dt = time.perf_counter() - t0
            self.profile = prof
        entry = prof.setdefault(self.profile_key(op), [0, 0.0])
        entry[0] += 1
        entry[1] += dt

    def _check_sizes(self, op: Operation) -> None:
        """Results that could never be allocated are an error before the rule runs (a few
        bytes of a file can ask for an Expand to 2**40 elements: pir.limits)."""
        for r in op.results:
            t = r.type
            if isinstance(t, TensorType) and t.shape is not None:
                dims = [dimexpr.evaluate(d, self.symbols) for d in t.shape]
                if all(isinstance(d, int) for d in dims):
                    check_tensor_bytes(dims, t.dtype.itemsize, _ResultAt(r, op))

    def exec(self, op: Operation) -> None:
        values = self.values
        if isinstance(op, ConstantOp):
            values[op.results[0]] = constant_value(op)
            return
        arrays = [values[v] for v in op.operands]
        if isinstance(op, CallOp):
            callee = self.module.lookup(op.callee.name) if self.module else None
            if not isinstance(callee, FuncOp):
                raise PirError(f"{_where(op)}: unknown function @{op.callee.name}")
            out = self.call(callee, arrays)
        else:
            if op.name != "nn.if":  # (a branch's ops check their own results)
                self._check_sizes(op)
            try:
                out = evaluate_op(op, arrays, self)
            except MemoryError:
                raise PirError(f"{_where(op)}: out of memory while computing its results "
                               "(see pir --max-tensor-bytes)") from None
            except PirError as e:
                if e.message.startswith(op.describe()):
                    raise
                # the class too: a DimConflict inside a region (an nn.if's branch) is still one
                raise type(e)(f"{_where(op)}: {e.message}") from None
            except (ValueError, TypeError, IndexError, ArithmeticError) as e:
                raise PirError(f"{_where(op)}: evaluation failed: {e}") from None
        for r, arr in zip(op.results, out):
            self.check(r, arr, ResultOf(r, op))
            values[r] = arr


class _Signature:
    """What :meth:`Interpreter.run` checks a function's inputs against, worked out once:
    the argument names, per argument its numpy dtype and its shape where every dim is a
    size (None otherwise: :meth:`Interpreter.check` binds the symbols), the output names."""

    def __init__(self, fn: FuncOp):
        self.names = [a.name for a in fn.entry.args]
        self.args = []
        for a in fn.entry.args:
            t = a.type
            static = isinstance(t, TensorType) and t.shape is not None \
                and t.dtype is not DType.STRING and all(isinstance(d, int) for d in t.shape)
            self.args.append((a, a.name, t.dtype.numpy if static else None,
                              tuple(t.shape) if static else None))
        self.outputs = output_names(fn)


def _is_body(block: Block) -> bool:
    """Whether ``block`` is the body of an nn.loop or nn.scan (run once per iteration)."""
    owner = block.parent.parent if block.parent is not None else None
    return owner is not None and owner.name in ("nn.loop", "nn.scan")


def output_names(fn: FuncOp) -> list[str]:
    """The names of ``fn``'s outputs (the returned values' names), made unique as the
    printer makes them: a value returned twice gets ``name_1``; an unnamed one ``output<i>``."""
    names: list[str] = []
    for i, v in enumerate(fn.return_op.operands):
        base = v.name or f"output{i}"
        name, k = base, 1
        while name in names:
            name, k = f"{base}_{k}", k + 1
        names.append(name)
    return names


def run_function(module: ModuleOp, inputs: Mapping[str, np.ndarray], func: str = "main",
                 keep_values: bool = False) -> dict[str, np.ndarray]:
    """Run function ``func`` of ``module`` on named inputs and return its named outputs."""
    fn = module.lookup(func)
    if not isinstance(fn, FuncOp):
        raise PirError(f"the module has no function @{func}")
    interp = Interpreter(module, keep_values)
    return interp.run(fn, inputs)

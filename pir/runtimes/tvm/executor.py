"""Compile every kernel of a program as ONE TVM module, cache it, and run the program.

The kernels' TIR sources (``kernel.tvm`` ``source`` attributes) are parsed back
(``tvm.script.from_source``) and built for this machine's CPU into one shared library, a part
per CPU in parallel (``library.py``).  The library goes to a content-addressed cache,
``$PIR_CACHE_DIR`` or ``~/.cache/pir``: ``tvm/<sha256 of the target and every symbol and
source>.so``; a later run of a program with the same kernels loads it
(``tvm.runtime.load_module``) instead of compiling, once its content hash checks out.

Nothing is built from a source the file brings: each source must be the one this pir
generates from the kernel's region (pir.codegen.provenance), unless the user trusts the
file's kernels (``--trust-kernels``).  ``check_bounds`` builds every kernel with an assertion
before each memory access instead (``--check-bounds``, pir.codegen.tvm.bounds).
"""

from __future__ import annotations

import hashlib
import pathlib
import time
from dataclasses import dataclass

import numpy as np

import tvm

from pir.ir import dimexpr
from pir.cache import private_dir, read_verified, write_verified
from pir.codegen.provenance import check_kernels
from pir.codegen.tvm.build import host_target, threads, use_threads
from pir.codegen.tvm.dims import derived_dims, solve, symbols_of
from pir.codegen.tvm.gemm_schedule import ROWS1, one_row_dim
from pir.codegen.tvm.target import parse_target
from pir.errors import PirError
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, constant_value
from pir.ir.dialects.kernel import TvmKernelOp
from pir.ir.types import TensorType
from pir.runtimes.hugepages import Arena
from pir.runtimes.reference.interpreter import CONTROL_FLOW, DimConflict, Interpreter, ResultOf
from pir.runtimes.tvm.buffers import aligned_empty, as_tvm, contiguous
from pir.runtimes.tvm.library import build_library, build_sources
from pir.runtimes.tvm.native_loop import ScanLoop
from pir.runtimes.tvm.plan import Plan
from pir.runtimes.tvm.signature import check_signature, kernel_failure

__all__ = ["CompiledProgram", "TvmInterpreter", "cache_dir", "compile_program", "stats"]

#: Counters, for tests and ``--repeat`` reports: programs compiled, and loaded from the cache.
stats = {"compiled": 0, "cache_hits": 0}

# built programs of this process, by cache key (a second Interpreter skips even the load)
_LOADED: dict[str, "CompiledProgram"] = {}


def cache_dir() -> pathlib.Path:
    """Where compiled programs are kept: ``<cache root>/tvm``, private to the user
    (pir.cache)."""
    return private_dir("tvm")


@dataclass
class _Kernel:
    fn: object
    params: list  # tvm tensors of the region's non-splat constants
    derived: dict  # dims the kernel computes from its inputs' (pir.codegen.tvm.dims)
    free: list  # dims it takes as scalar parameters, after ``params``
    # a matmul's one-row variant (pir.codegen.tvm.gemm_schedule.ROWS1), its row dim, and the rows
    # below which a run takes it (the target's small_rows); None: there is none
    one_row: object = None
    rows: object = None
    small_rows: int = 0

    def function(self, symbols: dict[str, int]):
        """The compiled function a call at this binding of the dims takes: the one-row
        tiles where the rows are fewer than ``small_rows``, else the kernel's own."""
        if self.one_row is not None:
            rows = dimexpr.evaluate(self.rows, symbols)
            if rows is not None and rows < self.small_rows:
                return self.one_row
        return self.fn

    def sizes(self, op: TvmKernelOp, arrays, symbols: dict[str, int]) -> dict[str, int]:
        """The value of every symbolic dim of the kernel, from its inputs' shapes."""
        sizes = dict(symbols)
        for a, arr in zip(op.body.block.args, arrays):
            t = a.type
            if isinstance(t, TensorType) and t.shape is not None:
                for d, n in zip(t.shape, np.shape(arr)):
                    if isinstance(d, str):
                        sizes.setdefault(d, n)
        return solve(self.derived, sizes)


class CompiledProgram:
    """The built module of a program's kernels, and how to call each kernel op."""

    def __init__(self, module: tvm.runtime.Module, key: str, path: pathlib.Path | None,
                 from_cache: bool):
        self.module = module
        self.key = key
        self.path = path
        self.from_cache = from_cache
        self.device = tvm.cpu()
        self._kernels: dict[TvmKernelOp, _Kernel] = {}
        self.weights = Arena()  # the kernels' constant parameters

    def kernel(self, op: TvmKernelOp) -> _Kernel:
        # per op, not per symbol: ops that share a kernel (pir.codegen.tvm.codegen.group_key)
        # may hold different constants, its parameters (each layer its own weights)
        k = self._kernels.get(op)
        if k is None:
            free: list[str] = []
            derived = derived_dims(op.body.block, free)
            params = _params(op)
            check_signature(op, params, free)  # (the kernels do not check their arguments)
            # the weights on huge pages (pir.runtimes.hugepages), shared with TVM
            fn = self.module.get_function(op.symbol, query_imports=True)
            k = _Kernel(fn, [as_tvm(self.weights.copy(a), self.device)[0] for a in params],
                        derived, free)
            variant = op.symbol + ROWS1
            if self.module.implements_function(variant, query_imports=True):
                k.one_row = self.module.get_function(variant, query_imports=True)
                k.rows = one_row_dim(op.body.block)
                k.small_rows = parse_target(op.target).small_rows
            self._kernels[op] = k
        return k

    def run(self, op: TvmKernelOp, arrays: list[np.ndarray],
            symbols: dict[str, int]) -> list[np.ndarray]:
        k = self.kernel(op)
        sizes = k.sizes(op, arrays, symbols)
        ins = [as_tvm(a, self.device)[0] for a in arrays]
        outs, results = [], []
        for r in op.results:
            t = r.type
            try:
                shape = tuple(_size(d, sizes) for d in t.shape)
            except KeyError as e:
                raise PirError(f"kernel {op.symbol}: the size of dim {e} is unknown") from None
            out, arr = as_tvm(aligned_empty(shape, t.dtype.numpy), self.device)
            outs.append(out)
            results.append(arr)
        try:
            dims = [sizes[d] for d in k.free]
        except KeyError as e:
            raise PirError(f"kernel {op.symbol}: the size of dim {e} is unknown") from None
        use_threads(threads())  # (a plan may have left the pool on one thread)
        try:
            k.fn(*ins, *k.params, *dims, *outs)
        except Exception as e:  # noqa: BLE001 - a failed assertion (--check-bounds)
            raise kernel_failure(op, e) from None
        # the kernel wrote straight into the numpy arrays when they could be shared
        return [a if a is not None else o.numpy() for o, a in zip(outs, results)]


def _params(op: TvmKernelOp) -> list[np.ndarray]:
    """The region's constants that the lowering made kernel parameters (the non-splat ones,
    in region order; see pir.codegen.tvm.lower._constant)."""
    out = []
    for c in op.body.block.ops:
        if isinstance(c, ConstantOp):
            arr = np.asarray(constant_value(c))
            flat = arr.reshape(-1)
            if not (flat.size > 0 and (flat == flat[0]).all()):
                out.append(contiguous(arr))
    return out


def kernel_sources(module: ModuleOp) -> dict[str, str]:
    """symbol -> TIR source of every kernel.tvm op (a shared symbol must share its source)."""
    sources: dict[str, str] = {}
    for op in module.walk():
        if isinstance(op, TvmKernelOp):
            if op.target.split()[:1] != ["llvm"]:
                raise PirError(f"kernel {op.symbol}: target '{op.target}' is not supported by "
                               "the tvm runtime (llvm only)")
            if sources.setdefault(op.symbol, op.source) != op.source:
                raise PirError(f"two kernels named {op.symbol} have different sources")
    return sources


def compile_program(module: ModuleOp, target=None, use_cache: bool = True,
                    trust_kernels: bool = False, check_bounds: bool = False) -> CompiledProgram:
    """Build (or load from the cache) one TVM module holding every kernel of ``module``.
    Each kernel's source must be the one pir generates from its region unless
    ``trust_kernels``; ``check_bounds`` builds them with bounds assertions."""
    target = target or host_target()
    sources = kernel_sources(module)
    check_kernels(module, trust=trust_kernels)
    h = hashlib.sha256(str(target).encode())
    if check_bounds:
        h.update(b"\0check-bounds")
    for sym in sorted(sources):
        h.update(b"\0" + sym.encode() + b"\0" + sources[sym].encode())
    key = h.hexdigest()
    if key in _LOADED:
        return _LOADED[key]
    path = cache_dir() / f"{key}.so" if use_cache else None
    if path is not None and read_verified(path):
        lib = tvm.runtime.load_module(str(path))
        stats["cache_hits"] += 1
        prog = CompiledProgram(lib, key, path, True)
    else:
        stats["compiled"] += 1
        if path is not None and sources:
            build_library(sources, target, path, check_bounds)
            write_verified(path)
            lib = tvm.runtime.load_module(str(path))
        else:
            lib = build_sources(sources, target, check_bounds)
        prog = CompiledProgram(lib, key, path, False)
    _LOADED[key] = prog
    return prog


class TvmInterpreter(Interpreter):
    """The reference interpreter, with kernel.tvm ops run by their compiled code."""

    def __init__(self, module: ModuleOp | None, keep_values: bool = False, target=None,
                 use_cache: bool = True, profile: dict | None = None, planned: bool = True,
                 trust_kernels: bool = False, check_bounds: bool = False):
        super().__init__(module, keep_values, profile)
        self.program = compile_program(module, target, use_cache, trust_kernels,
                                       check_bounds) if module is not None else None
        self.planned = planned
        self._plans: dict = {}
        self._region_plans: dict = {}  # (block, its dims' sizes) -> Plan, or None: interpret
        # block -> the symbols its ops' types and kernels use, sorted (False: a block that
        # is no region of a control-flow op, or a program without kernels: interpreted)
        self._region_dims: dict = {}
        # value -> (its array in a run, the TVM tensor over it), from the plans that made
        # them: the plan of a region reads the enclosing block's tensors (see Plan)
        self.shared_tensors: dict = {}
        self.check_bounds = check_bounds
        self._scan_loops: dict = {}  # a scan body's plan -> its ScanLoop, or None: per iteration

    def profile_key(self, op) -> tuple[str, str]:
        """A compiled kernel's entry is ("kernel", its symbol); other ops' as the reference's."""
        if isinstance(op, TvmKernelOp) and self.program is not None \
                and self.program.module is not None:
            return ("kernel", op.symbol)
        return super().profile_key(op)

    def call(self, fn, arrays):
        """A top-level function runs through its execution plan (pir.runtimes.tvm.plan), made
        once per binding of its symbolic dims; calls from inside it are interpreted."""
        if self.program is None or self.program.module is None or self.depth > 0 \
                or not self.planned:
            return super().call(fn, arrays)
        given = dict(self.symbols)  # the dims the inputs bound
        key = (fn, tuple(sorted(given.items())))
        plan = self._plans.get(key)
        if plan is None:
            plan = Plan(self, fn.entry, given)
            if plan.unsized:
                # a kernel's size depends on a dim only a run shows (a slice whose length
                # is computed, which ONNX's shape inference calls unk__N): interpret this
                # run, which binds every dim, and plan the next ones with those sizes
                outs = super().call(fn, arrays)
                learned = frozenset(self.symbols) - frozenset(plan.symbols)
                self._plans[key] = Plan(self, fn.entry, self.symbols, learned=learned)
                return outs
            self._plans[key] = plan
        self.depth += 1
        try:
            return plan.run(arrays)
        except DimConflict:
            if not plan.assumed:
                raise
        finally:
            self.depth -= 1
        # a dim differs from the run the plan learned it from (caught where a value shows
        # it, or at a step it sizes, before anything reads a wrongly sized value): interpret
        # this run from its inputs, and let the next one learn afresh
        del self._plans[key]
        self.symbols.clear()
        self.symbols.update(given)
        self.values.clear()
        return super().call(fn, arrays)

    def run_block(self, block, args):
        """A region's block (an nn.if branch, a loop or scan body) inside a planned run runs
        through a plan of its own, made once per binding of the dims it uses: a model whose
        every op sits in one branch (Silero VAD's per-sample-rate ``If``) otherwise pays the
        interpreter's cost per op and per run.  A function's entry (a call) and a block a
        plan cannot size are interpreted."""
        key = self._region_key(block)
        if key is None:
            return super().run_block(block, args)
        plan = self._region_plans.get(key, _UNPLANNED)
        if plan is _UNPLANNED:
            sizes = dict(key[1])
            plan = Plan(self, block, sizes)
            if not plan.unsized:
                self._region_plans[key] = plan
            else:  # as call() does: interpret this run, plan the next with the dims it bound
                outs = super().run_block(block, args)
                learned = {d: self.symbols[d] for d in self._region_dims[block]
                           if d in self.symbols and d not in sizes}
                plan = Plan(self, block, {**sizes, **learned}, learned=frozenset(learned))
                self._region_plans[key] = None if plan.unsized else plan
                return outs
        if plan is None:
            return super().run_block(block, args)
        try:
            return plan.run(args)
        except DimConflict:
            if not plan.assumed:
                raise
        # a learned dim differs in this run: interpret the block, and learn afresh next time
        del self._region_plans[key]
        for d in plan.learned:
            self.symbols.pop(d, None)
        return super().run_block(block, args)

    def run_scan(self, op, states, xs):
        """A scan whose body's plan is compiled kernels only runs every iteration in one
        native call (pir.runtimes.tvm.native_loop), once that plan exists: the first run
        of the scan makes it, one iteration through run_block.  A profile has the whole
        scan as one entry, ``nn.scan (native loop)``.  Runs that keep every value (``pir run
        --check``) and kernels built with bounds checks keep the per-iteration path."""
        if self.keep_values or self.check_bounds:
            return None
        key = self._region_key(op.body.block)
        plan = None if key is None else self._region_plans.get(key)
        if plan is None:
            return None  # (the first run of the scan, through run_block, plans its body)
        loop = self._scan_loops.get(plan, _UNPLANNED)
        if loop is _UNPLANNED:
            loop = self._scan_loops[plan] = ScanLoop.build(op, plan)
        if loop is None:
            return None
        if self.profile is None:
            return loop.run(self, states, xs)
        t0 = time.perf_counter()
        out = loop.run(self, states, xs)
        if out is not None:
            entry = self.profile.setdefault(("op", "nn.scan (native loop)"), [0, 0.0])
            entry[0] += 1
            entry[1] += time.perf_counter() - t0
        return out

    def _region_key(self, block):
        """``(block, its dims' sizes)``, the key of its region plan at this run's binding, or
        None where the block runs interpreted (outside a planned run, or no region of a
        control-flow op).  Looked up once per iteration of a loop: the block's sorted dims
        are found once."""
        dims = self._region_dims.get(block)
        if dims is None:
            parent = block.parent.parent if block.parent is not None else None
            planned = self.program is not None and self.program.module is not None \
                and parent is not None and parent.name in CONTROL_FLOW
            dims = self._region_dims[block] = \
                tuple(sorted(self._dims_of(block))) if planned else False
        if dims is False or self.depth == 0 or not self.planned:
            return None
        symbols = self.symbols
        return block, tuple((d, symbols[d]) for d in dims if d in symbols)

    def _dims_of(self, block) -> frozenset[str]:
        """The symbols of every type in ``block`` (its arguments, the values its ops read
        and make, nested regions included) and the dims its kernels take."""
        dims: set[str] = set()
        for a in block.args:
            dims |= symbols_of(a.type)
        for op in (o for top in block.ops for o in top.walk()):
            for v in [*op.operands, *op.results]:
                dims |= symbols_of(v.type)
            if isinstance(op, TvmKernelOp):
                dims.update(self.program.kernel(op).free)
        return frozenset(dims)

    def exec(self, op) -> None:
        if not isinstance(op, TvmKernelOp) or self.program is None or self.program.module is None:
            return super().exec(op)
        values = self.values
        arrays = [values[v] for v in op.operands]
        try:
            out = self.program.run(op, arrays, self.symbols)
        except PirError as e:
            raise type(e)(f"{op.describe()}: {e.message}") from None
        except Exception as e:  # noqa: BLE001 - TVM's runtime errors
            raise PirError(f"{op.describe()}: kernel {op.symbol} failed: "
                           f"{str(e).strip().splitlines()[-1]}") from None
        for r, arr in zip(op.results, out):
            self.check(r, arr, ResultOf(r, op))
            values[r] = arr


_UNPLANNED = object()  # a region block not seen yet at a binding


def _size(d, sizes: dict[str, int]) -> int:
    """The size of dim ``d`` (a KeyError naming the dim when a symbol is unbound)."""
    n = dimexpr.evaluate(d, sizes)
    if n is None:
        raise KeyError(str(d))
    return n

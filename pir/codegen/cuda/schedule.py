"""Kernel schedules of the CUDA C emitter: a fusion group's block -> one ``__global__`` function.

* **Pointwise** (elementwise and injective groups, and any group the row schedule does not
  fit): a grid-stride loop over the elements of each output shape.  When arguments are read
  at the element's own linear index (directly or through reshapes and elementwise ops), each
  thread handles ``VEC`` consecutive elements (16 bytes of the widest such type: float4,
  8 x bf16) with 16-byte vector loads and stores; a scalar loop does the tail.  Broadcast
  operands are read by index arithmetic.  Reductions inside such a group are serial loops
  (one thread per output element): correct for any axes, fast for none.
* **Row** (groups whose reductions all reduce the same trailing dims, the form of softmax,
  layer_norm, rms_norm): one warp per row for rows of up to 1024 elements or of symbolic
  length, one block per row for longer ones.  Each reduction is a pass over the row, then a
  warp-shuffle tree (and for a block, a shared-memory step across warps); the elementwise
  prologue (what the reduction reads) and epilogue (what the outputs read) are inlined.
  When the row length is static and a thread's share of it fits (<= 32 elements), the
  arguments read along the row are loaded once into registers, so the input is read from
  memory once whatever the number of passes.

Every symbolic dim is a ``long long`` kernel argument; dims a reshape makes are computed in
the kernel (pir.codegen.tvm.dims).  The launch configuration is returned with the source:
``grid`` is an expression of the symbolic dims (``{name}`` placeholders, ``cdiv`` and ``min``;
see :mod:`pir.codegen.cuda.launch`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from pir.codegen.cuda import dtypes as dt
from pir.codegen.cuda.emit import IDX, Emitter, NotRowwise, launch_dim_expr, shape_of, splat_value
from pir.codegen.cuda.limits import bits
from pir.codegen.cuda.dims import kernel_dims
from pir.codegen.cuda.ops import reducer, spell
from pir.codegen.sums import CUDA_SUMS, SumBlocks
from pir.ir.core import Block, Value
from pir.ir.dialects.builtin import ConstantOp, constant_value
from pir.ir.types import DType

__all__ = ["CudaKernel", "emit_kernel", "THREADS", "GRID_CAP"]

THREADS = 256  # threads of a pointwise block
GRID_CAP = 8192  # at most this many pointwise blocks (grid-stride beyond)
_REDUCE = ("prim.reduce_sum", "prim.reduce_prod", "prim.reduce_max", "prim.reduce_min")
_CHUNK = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short", 1: "unsigned char"}


@dataclass
class CudaKernel:
    """One generated kernel: C source of ``symbol`` and how to launch it.

    ``args`` describes the kernel's parameters in order: ``in:K`` (group operand K),
    ``const:K`` (the K-th non-splat constant of the region), ``out:K`` (result K) and
    ``dim:NAME:i64`` (a symbolic dim, by value)."""

    symbol: str
    source: str
    grid: str
    block: int
    shared_mem: int
    args: list[str]
    schedule: str
    notes: list[str] = field(default_factory=list)


def _dimname(sym: str) -> str:
    return "d_" + re.sub(r"\W", "_", sym, flags=re.ASCII)


def _py(shape) -> str:
    """The element count of ``shape`` as a launch expression."""
    parts = [launch_dim_expr(d) for d in shape]
    return " * ".join(parts) or "1"


class _Group:
    """The kernel-wide parts of a group: parameters, dims, pointers, outputs."""

    def __init__(self, block: Block, symbol: str, bound: set[str], sums: SumBlocks = CUDA_SUMS):
        self.block, self.symbol = block, symbol
        self.sums = sums  # how long float sums are taken (pir.codegen.sums)
        # raises for a dim nothing determines
        self.syms, self.derived = kernel_dims(block, bound)
        self.dims = {s: _dimname(s) for s in self.syms}
        for s in self.derived:
            self.dims[s] = _dimname(s)
        self.params: list[str] = []
        self.args: list[str] = []
        self.ptr: dict[Value, str] = {}
        self.splat: dict[Value, object] = {}
        self.types: set[DType] = set()
        for k, a in enumerate(block.args):
            self._pointer(a, f"in{k}", f"in:{k}")
        n = 0
        for op in block.ops:
            if isinstance(op, ConstantOp):
                v = op.results[0]
                value = splat_value(np.asarray(constant_value(op)))
                shape_of(v)
                if value is not None:
                    self.splat[v] = value
                else:
                    self._pointer(v, f"c{n}", f"const:{n}")
                    n += 1
            else:
                for r in op.results:
                    self.types.add(r.type.dtype)
        self.outs = list(block.terminator.operands)
        for k, v in enumerate(self.outs):
            shape_of(v)
            self.types.add(v.type.dtype)
            self.params.append(f"{dt.storage(v.type.dtype)}* __restrict__ out{k}")
            self.args.append(f"out:{k}")
        for s in self.syms:
            self.params.append(f"long long {self.dims[s]}")
            self.args.append(f"dim:{s}:i64")

    def _pointer(self, v: Value, name: str, arg: str) -> None:
        shape_of(v)
        self.types.add(v.type.dtype)
        self.ptr[v] = name
        self.params.append(f"const {dt.storage(v.type.dtype)}* __restrict__ {name}")
        self.args.append(arg)

    def emitter(self) -> Emitter:
        e = Emitter(self.dims, self.sums)
        e.ptr, e.splat = dict(self.ptr), dict(self.splat)
        for s, (src, others) in self.derived.items():
            num, den = e.count(src), e.count(others)
            e.line(f"const long long {self.dims[s]} = ({den}) ? ({num}) / ({den}) : 0;"
                   if den != "1" else f"const long long {self.dims[s]} = {num};")
        for v, ptr in self.ptr.items():  # scalars: loaded once, at the start
            if not shape_of(v):
                name = e.let(dt.compute(v.type.dtype), dt.load(v.type.dtype, f"{ptr}[0]"), "s")
                e.memo[0][(v, ())] = name
        return e

    def source(self, body: list[str], threads: int, schedule: str) -> str:
        head = [f"// pir kernel {self.symbol}: {schedule}"]
        if DType.F16 in self.types:
            head.append("#include <cuda_fp16.h>")
        if DType.BF16 in self.types:
            head.append("#include <cuda_bf16.h>")
        params = ",\n    ".join(self.params)
        head.append(f'extern "C" __global__ void __launch_bounds__({threads}) '
                    f"{self.symbol}(\n    {params}) {{")
        return "\n".join(head + body + ["}"]) + "\n"


def _vec_width(dtypes) -> int:
    widest = max((dt.itemsize(d) for d in dtypes), default=4)
    return max(1, 16 // widest)


def _vector_load(e: Emitter, v: Value, dst: str, base: str, vec: int, declare: bool) -> None:
    """``vec`` elements of ``v`` from linear index ``base`` into ``dst`` by 16-byte (or
    narrower) loads; the base is a multiple of ``vec``, so they are aligned."""
    t = v.type.dtype
    ctype = dt.storage(t)
    nbytes = vec * dt.itemsize(t)
    chunk = min(16, nbytes)
    if declare:  # else dst is a slice of a register array declared before ("c_x + it * 4")
        e.line(f"alignas(16) {ctype} {dst}[{vec}];")
    for c in range(nbytes // chunk):
        e.line(f"reinterpret_cast<{_CHUNK[chunk]}*>({dst})[{c}] = "
               f"reinterpret_cast<const {_CHUNK[chunk]}*>({e.ptr[v]} + {base})[{c}];")


def _vector_store(e: Emitter, ptr: str, t: DType, src: str, base: str, vec: int) -> None:
    nbytes = vec * dt.itemsize(t)
    chunk = min(16, nbytes)
    for c in range(nbytes // chunk):
        e.line(f"reinterpret_cast<{_CHUNK[chunk]}*>({ptr} + {base})[{c}] = "
               f"reinterpret_cast<const {_CHUNK[chunk]}*>({src})[{c}];")


# -- pointwise ---------------------------------------------------------------------------------

def _pointwise_body(g: _Group, e: Emitter, vec_of: dict) -> list:
    """Emit one grid-stride loop per output shape; returns [(shape, vec, hits)]."""
    classes: dict[tuple, list[int]] = {}
    for k, v in enumerate(g.outs):
        classes.setdefault(tuple(shape_of(v)), []).append(k)
    e.line("const long long gtid = blockIdx.x * (long long)blockDim.x + threadIdx.x;")
    e.line("const long long gstride = (long long)gridDim.x * blockDim.x;")
    report = []
    for c, (shape, ks) in enumerate(classes.items()):
        n = e.let(IDX, e.count(shape), "n")
        vec, regs, contig = vec_of.get(shape, (1, set(), set()))
        e.hits, e.contig_hits = set(), set()
        start = "gtid"
        if vec > 1:
            nv = e.let(IDX, f"{n} / {vec}", "nv")
            with e.scope(f"for (long long vi = gtid; vi < {nv}; vi += gstride)"):
                e.line(f"const long long b = vi * {vec};")
                e.vec_regs = {}
                for v in sorted(regs, key=lambda v: g.ptr[v]):
                    name = f"r_{g.ptr[v]}"
                    _vector_load(e, v, name, "b", vec, True)
                    e.vec_regs[v] = name
                for k in ks:
                    e.line(f"alignas(16) {dt.storage(g.outs[k].type.dtype)} o{k}[{vec}];")
                last = shape[-1] if shape else 1
                shared = isinstance(last, int) and last % vec == 0
                idx0 = e.delin("b", shape) if shared else None
                if shared:
                    e.vec, e.lane_fixed = vec, tuple(idx0[:-1])
                    _contiguous_loads(e, contig, idx0[-1], vec)
                for lane in range(vec):
                    with e.scope(""):
                        lin = "b" if lane == 0 else e.let(IDX, f"b + {lane}", "l")
                        idx = (idx0[:-1] + ((idx0[-1] if lane == 0 else
                                              f"({idx0[-1]} + {lane})"),)) if shared \
                            else e.delin(lin, shape)
                        e.canon_lin, e.lane = lin, str(lane)
                        e.lane_last = idx[-1] if shared else None
                        e.lane_k = str(lane)
                        for k in ks:
                            v = g.outs[k]
                            e.line(f"o{k}[{lane}] = "
                                   f"{dt.store(v.type.dtype, e.value(v, idx, lin))};")
                for k in ks:
                    _vector_store(e, f"out{k}", g.outs[k].type.dtype, f"o{k}", "b", vec)
                e.vec_regs, e.contig_regs, e.lane_last, e.vec = {}, {}, None, 1
            start = f"{nv} * {vec} + gtid"
        with e.scope(f"for (long long i = {start}; i < {n}; i += gstride)"):
            e.canon_lin = "i"
            idx = e.delin("i", shape)
            for k in ks:
                v = g.outs[k]
                e.line(f"out{k}[i] = {dt.store(v.type.dtype, e.value(v, idx, 'i'))};")
        e.canon_lin = None
        report.append((shape, vec, set(e.hits), set(e.contig_hits)))
    return report


def _contiguous_loads(e: Emitter, keys, last0: str, vec: int) -> None:
    """One vector load for each lane-contiguous read found by the probe (see Emitter)."""
    e.contig_regs = {}
    for n, (v, rest) in enumerate(sorted(keys, key=lambda k: (e.ptr[k[0]], k[1]))):
        idx = tuple(e.lane_fixed[x] if kind == "at" else x for kind, x in rest)
        base = e.lin(idx + (last0,), shape_of(v))
        name = f"w_{e.ptr[v]}_{n}"
        _vector_load(e, v, name, base, vec, True)
        e.contig_regs[(v, rest)] = name


def _pointwise(g: _Group) -> CudaKernel:
    probe = g.emitter()
    found = _pointwise_body(g, probe, {})
    vec_of = {}
    for shape, _, hits, _ in found:
        ks = [k for k, v in enumerate(g.outs) if tuple(shape_of(v)) == shape]
        vec = _vec_width([v.type.dtype for v in hits] + [g.outs[k].type.dtype for k in ks])
        if shape and vec > 1:
            vec_of[shape] = (vec, hits, set())
    if vec_of:  # a second probe, vectorised, finds the lane-contiguous reads
        probe = g.emitter()
        for shape, _, _, contig in _pointwise_body(g, probe, vec_of):
            if shape in vec_of:
                vec_of[shape] = vec_of[shape][:2] + (contig,)
    e = g.emitter()
    _pointwise_body(g, e, vec_of)
    vecs = sorted({entry[0] for entry in vec_of.values()}) or [1]
    counts = [_py(s) for s in {tuple(shape_of(v)) for v in g.outs}]
    per_block = THREADS * max(vecs)
    grid = " , ".join(f"cdiv({c}, {per_block})" for c in counts)
    grid = f"min(max({grid}), {GRID_CAP})" if len(counts) > 1 else f"min({grid}, {GRID_CAP})"
    schedule = f"pointwise, {THREADS} threads" + (
        f", {max(vecs)}-wide vector loads and stores" if max(vecs) > 1 else "")
    return CudaKernel(g.symbol, g.source(e.lines, THREADS, schedule), grid, THREADS, 0,
                      list(g.args), schedule)


# -- rows --------------------------------------------------------------------------------------

@dataclass
class _Rows:
    outer: tuple
    inner: tuple
    reductions: list
    full: list[int]  # outputs of the row's shape
    reduced: list[int]  # outputs of one value per row


def _row_form(g: _Group) -> _Rows | None:
    reds = [op for op in g.block.ops if op.name in _REDUCE]
    if not reds:
        return None
    form = None
    for op in reds:
        src = tuple(shape_of(op.operands[0]))
        axes = sorted(a % len(src) for a in op.axes) if src else []
        k = len(axes)
        if k == 0 or axes != list(range(len(src) - k, len(src))):
            return None
        f = (src[:len(src) - k], src[len(src) - k:])
        if form is not None and f != form:
            return None
        form = f
    outer, inner = form
    full, reduced = [], []
    for i, v in enumerate(g.outs):
        s = tuple(shape_of(v))
        if s == outer + inner:
            full.append(i)
        elif s == outer + (1,) * len(inner) or s == outer:
            reduced.append(i)
        else:
            return None
    return _Rows(outer, inner, reds, full, reduced)


def _shuffle(ctype: str, acc: str, off: str) -> str:
    if ctype in ("float", "double", "int", "long long", "unsigned int", "unsigned long long"):
        return f"__shfl_xor_sync(0xffffffffu, {acc}, {off})"
    return f"({ctype})__shfl_xor_sync(0xffffffffu, (int){acc}, {off})"


class _RowPlan:
    def __init__(self, g: _Group, rows: _Rows):
        self.g, self.rows = g, rows
        n = [d for d in rows.inner]
        self.static_n = int(np.prod(n)) if all(isinstance(d, int) for d in n) else None

    def configure(self, hit_types) -> None:
        n = self.static_n
        types = list(hit_types) + [self.g.outs[k].type.dtype for k in self.rows.full]
        vec = _vec_width(types)
        if n is None or n % vec:
            vec = 1
        self.vec = vec
        if n is not None and n > 1024:
            self.warp = False
            want = -(-n // vec) // 4
            self.threads = min(1024, max(128, 1 << max(want - 1, 1).bit_length()))
        else:
            self.warp = True
            self.threads = 128
        nt = 32 if self.warp else self.threads
        self.nt = nt
        self.iters = -(-n // (nt * vec)) if n is not None else None
        self.cached = n is not None and self.iters * vec <= 32

    def emit(self, hits_by_pass: list[set] | None, contig_by_pass: list[set] | None = None):
        """(the emitter, per pass: the arguments read at the element's own index, the
        lane-contiguous reads); the probes pass None for what they are to find."""
        g, rows = self.g, self.rows
        e = g.emitter()
        vec = self.vec
        if self.warp:
            e.line("const int t = threadIdx.x % 32;")
            e.line(f"const long long row = blockIdx.x * {self.threads // 32}LL + threadIdx.x / 32;")
        else:
            e.line("const int t = threadIdx.x;")
            e.line("const long long row = blockIdx.x;")
        rows_c = e.let(IDX, e.count(rows.outer), "rows")
        e.line(f"if (row >= {rows_c}) return;")
        n_c = e.count(rows.inner)
        n_c = e.let(IDX, n_c, "n") if not n_c.isdigit() else n_c
        outer = e.delin("row", rows.outer)
        rb = e.let(IDX, f"row * {n_c}", "rb")
        found: list[set] = []
        found_contig: list[set] = []
        cached: dict[Value, str] = {}
        if self.cached and hits_by_pass is not None:
            for v in sorted(set().union(*hits_by_pass), key=lambda v: g.ptr[v]):
                cached[v] = f"c_{g.ptr[v]}"
                e.line(f"alignas(16) {dt.storage(v.type.dtype)} {cached[v]}"
                       f"[{self.iters * vec}];")
        loaded: set[Value] = set()
        passes = list(rows.reductions) + [None]
        for p, red in enumerate(passes):
            hits = hits_by_pass[p] if hits_by_pass is not None else set()
            contig = contig_by_pass[p] if contig_by_pass is not None else set()
            e.hits, e.contig_hits = set(), set()
            flush = None
            if red is not None:
                x = red.operands[0]
                fam, ctype = dt.family(x.type.dtype), dt.compute(x.type.dtype)
                combine, init = reducer(red.name.split(".")[1], fam, ctype)
                acc = e.fresh("acc")
                e.line(f"{ctype} {acc} = {init};")
                if self.long_sum(red, ctype):
                    flush = self._blocked(e, acc)

                def body(idx, lin, lane, x=x, acc=acc, combine=combine, fam=fam, ctype=ctype):
                    xv = e.value(x, idx, lin)
                    e.line(f"{acc} = {spell(combine, fam, ctype, bits(ctype), [acc, xv])};")
            else:
                def body(idx, lin, lane):
                    for k in rows.full:
                        v = g.outs[k]
                        val = dt.store(v.type.dtype, e.value(v, idx, lin))
                        if vec > 1:
                            e.line(f"o{k}[{lane}] = {val};")
                        else:
                            e.line(f"out{k}[{lin}] = {val};")
            self._loop(e, outer, rb, n_c, hits, cached, loaded, body, final=red is None,
                       contig=contig, after=flush[1] if flush else None)
            found.append(set(e.hits))
            found_contig.append(set(e.contig_hits))
            if red is not None:
                if flush is not None:  # the f64 totals: the thread's, then the row's
                    total = flush[0]
                    e.line(f"{total} += (double){acc};")
                    self._combine(e, total, "double", "double", combine)
                    acc = e.let(ctype, f"(float){total}")
                else:
                    self._combine(e, acc, ctype, fam, combine)
                # accumulated in f32; an f16 / bf16 result is rounded once, as the reference
                e.fixed[red.results[0]] = (outer, e.let(ctype, dt.rounded(x.type.dtype, acc)))
        if rows.reduced:
            with e.scope("if (t == 0)"):
                for k in rows.reduced:
                    v = g.outs[k]
                    idx = outer + ("0",) * (len(shape_of(v)) - len(outer))
                    e.line(f"out{k}[row] = {dt.store(v.type.dtype, e.value(v, idx, None))};")
        return e, found, found_contig

    def long_sum(self, red, ctype: str) -> bool:
        """A float sum accumulated in f32 of which a thread may add more than ``terms``
        terms (or a number known only at run time): taken in blocks (pir.codegen.sums)."""
        if red.name != "prim.reduce_sum" or ctype != "float":
            return False
        share = self.iters * self.vec if self.static_n is not None else None
        return share is None or share > self.g.sums.terms

    def _blocked(self, e, acc: str):
        """(the thread's f64 total, the step that adds ``acc`` into it every ``terms``
        terms, run at the end of each iteration of the row loop)."""
        total = e.fresh("tot")
        e.line(f"double {total} = 0.0;")
        every = max(1, self.g.sums.terms // self.vec)  # iterations of vec terms each
        if self.static_n is not None:  # `it` is known when the unrolled loop is compiled
            cond = f"(it + 1) % {every} == 0"
        else:
            count = e.fresh("cnt")
            e.line(f"int {count} = 0;")
            cond = f"++{count} == {every}"

        def step():
            with e.scope(f"if ({cond})"):
                e.line(f"{total} += (double){acc};")
                e.line(f"{acc} = 0.0f;")
                if self.static_n is None:
                    e.line(f"{count} = 0;")

        return total, step

    def _loop(self, e, outer, rb, n_c, hits, cached, loaded, body, final, contig,
              after=None) -> None:
        g, vec, nt = self.g, self.vec, self.nt
        if self.static_n is not None:
            e.line("#pragma unroll")
            header = f"for (int it = 0; it < {self.iters}; ++it)"
        else:
            header = f"for (long long j0 = (long long)t * {vec}; j0 < {n_c}; j0 += {nt * vec}LL)"
        with e.scope(header):
            if self.static_n is not None:
                e.line(f"const long long j0 = ((long long)it * {nt} + t) * {vec};")
            exact = self.static_n is not None and self.iters * nt * vec == self.static_n
            with e.scope("" if exact else f"if (j0 < {n_c})"):
                base = e.let(IDX, f"{rb} + j0", "jb")
                e.vec_regs = {}
                for v in sorted(hits, key=lambda v: g.ptr[v]):
                    if v in cached:
                        if v not in loaded:
                            _vector_load(e, v, f"{cached[v]} + it * {vec}", base, vec, False)
                        e.vec_regs[v] = cached[v]
                    else:
                        _vector_load(e, v, f"r_{g.ptr[v]}", base, vec, True)
                        e.vec_regs[v] = f"r_{g.ptr[v]}"
                if final and vec > 1:
                    for k in self.rows.full:
                        e.line(f"alignas(16) {dt.storage(g.outs[k].type.dtype)} o{k}[{vec}];")
                flat = len(self.rows.inner) == 1  # the lane's index is the last one
                if flat and vec > 1:
                    e.vec, e.lane_fixed = vec, tuple(outer)
                    _contiguous_loads(e, contig, "j0", vec)
                for lane in range(vec):
                    with e.scope(""):
                        j = "j0" if lane == 0 else e.let(IDX, f"j0 + {lane}", "j")
                        lin = e.let(IDX, f"{rb} + {j}", "l")
                        idx = tuple(outer) + e.delin(j, self.rows.inner)
                        e.canon_lin = lin
                        e.lane = f"it * {vec} + {lane}" if cached else str(lane)
                        e.lane_last = j if flat and vec > 1 else None
                        e.lane_k = str(lane)
                        body(idx, lin, lane)
                e.canon_lin, e.lane_last, e.vec = None, None, 1
                if after is not None:
                    after()
                if final and vec > 1:
                    for k in self.rows.full:
                        _vector_store(e, f"out{k}", g.outs[k].type.dtype, f"o{k}", base, vec)
                e.vec_regs, e.contig_regs = {}, {}
        loaded.update(v for v in hits if v in cached)

    def _combine(self, e, acc, ctype, fam, combine) -> None:
        e.line("#pragma unroll")
        with e.scope("for (int o = 16; o > 0; o >>= 1)"):
            other = e.fresh("s")
            e.line(f"const {ctype} {other} = {_shuffle(ctype, acc, 'o')};")
            e.line(f"{acc} = {spell(combine, fam, ctype, bits(ctype), [acc, other])};")
        if not self.warp:
            red = e.fresh("red")
            e.line(f"__shared__ {ctype} {red}[32];")
            e.line(f"if (t % 32 == 0) {red}[t / 32] = {acc};")
            e.line("__syncthreads();")
            e.line(f"{acc} = {red}[0];")
            with e.scope(f"for (int w = 1; w < {self.threads // 32}; ++w)"):
                e.line(f"{acc} = {spell(combine, fam, ctype, bits(ctype), [acc, f'{red}[w]'])};")


def _row(g: _Group, rows: _Rows) -> CudaKernel:
    plan = _RowPlan(g, rows)
    plan.configure([])
    _, hits, _ = plan.emit(None)
    plan.configure([v.type.dtype for h in hits for v in h])
    _, _, contig = plan.emit(hits)
    e, _, _ = plan.emit(hits, contig)
    mode = "a warp per row" if plan.warp else f"a block of {plan.threads} per row"
    schedule = f"row reduction, {mode}"
    if plan.vec > 1:
        schedule += f", {plan.vec}-wide vector loads"
    if plan.cached and any(hits):
        schedule += ", row kept in registers (input read once)"
    rows_py = _py(rows.outer)
    grid = f"cdiv({rows_py}, {plan.threads // 32})" if plan.warp else rows_py
    return CudaKernel(g.symbol, g.source(e.lines, plan.threads, schedule), grid, plan.threads,
                      0, list(g.args), schedule)


def emit_kernel(block: Block, symbol: str, bound: set[str] = frozenset(),
                sums: SumBlocks = CUDA_SUMS) -> CudaKernel:
    """The CUDA C kernel of a group's block (raises PirError for what it cannot emit);
    ``bound``: the symbolic dims the program binds from its inputs; ``sums``: how long
    float sums are taken (pir.codegen.sums)."""
    g = _Group(block, symbol, set(bound), sums)
    rows = _row_form(g)
    if rows is not None:
        try:
            return _row(g, rows)
        except NotRowwise:
            pass  # a row value read at another row: every element on its own
    return _pointwise(g)

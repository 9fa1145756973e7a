"""``pir codegen --target llvm``: turn every ``fusion.group`` that TVM can lower into a
``kernel.tvm`` op holding its scheduled TIR (TVMScript) source.

Groups the lowering does not support (argmax, sort, scatter, random... or an element type TVM
has no CPU arithmetic for) stay ``fusion.group``; the tvm runtime runs them, like every
other op outside a kernel, with the reference rules.  Groups that compute the same thing (the
same ops, attributes, types and wiring, whatever their value names) share one symbol and one
source, so they are compiled once.  Nothing is built here: the tvm runtime builds all kernels
of a program as one module (cached, see :mod:`pir.runtimes.tvm`).
"""

from __future__ import annotations

import hashlib
import keyword
import re
from dataclasses import dataclass, field

import numpy as np

from pir.codegen.symbols import bounded
from pir.codegen.tvm.dims import derived_dims
from pir.codegen.tvm.target import CpuTarget, parse_target
from pir.errors import PirError, one_line
from pir.ir.core import Block
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, constant_value
from pir.ir.dialects.fusion import GroupOp
from pir.ir.dialects.kernel import TvmKernelOp
from pir.ir.printer import settle_names
from pir.passes.dce import drop_unused_resources

__all__ = ["CodegenReport", "codegen_module", "kernel_source", "mangle", "group_key",
           "has_groups"]

# Names a kernel symbol must not take: it would clash with C keywords or with the C
# library and libm functions the compiled module links against.
_RESERVED = frozenset(keyword.kwlist) | frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while main abs exp exp2 expf log log2 logf log10 log1p pow
    powf sqrt sqrtf rsqrt sin cos tan tanh tanhf sinh cosh asin acos atan atan2 erf erff floor
    ceil round trunc fabs fmax fmin fmod memcpy memset malloc free printf abort exit
    default_function""".split())


def mangle(name: str | None, default: str = "kernel") -> str:
    """A legal C identifier from a value name: ``gpu_0/data_0`` -> ``gpu_0_data_0``."""
    base = re.sub(r"\W", "_", name or "", flags=re.ASCII) or default
    if base[0].isdigit():
        base = "k_" + base
    if base.startswith("__"):
        base = "k" + base  # reserved for the C implementation (and TVM's own symbols)
    if base in _RESERVED:
        base += "_k"
    return bounded(base)


def _attr_text(v) -> str:
    if isinstance(v, np.ndarray):
        return f"{v.dtype}{v.shape}:{hashlib.sha256(v.tobytes()).hexdigest()}"
    return repr(v)


def _constant_text(arr: np.ndarray) -> str:
    """A splat's value (the lowering makes it an immediate); any other constant is a kernel
    parameter (pir.codegen.tvm.lower._constant), whose values do not change the kernel."""
    flat = arr.reshape(-1)
    if flat.size > 0 and flat[0] == flat[-1] and (flat == flat[0]).all():
        return f"splat {arr.dtype} {flat[0]!r}"
    return "param"


def group_key(block: Block) -> str:
    """What a group computes, without its value names or locations: two groups with the same
    key compile to the same kernel.  Constants other than splats count by their type only:
    they are parameters of the kernel, so groups that differ in their weights alone (the
    layers of a model) share one, and the runtime passes each kernel op its own."""
    index = {a: f"a{i}" for i, a in enumerate(block.args)}
    parts = ["(" + ", ".join(str(a.type) for a in block.args) + ")"]
    for k, op in enumerate(block.ops):
        for j, r in enumerate(op.results):
            index[r] = f"v{k}.{j}"
        attrs = dict(op.attributes)
        if isinstance(op, ConstantOp):
            attrs = {"value": _constant_text(np.asarray(constant_value(op)))}
        args = ", ".join(index.get(v, "?") for v in op.operands)
        attr_text = ", ".join(f"{key}={_attr_text(attrs[key])}" for key in sorted(attrs))
        types = ", ".join(str(r.type) for r in op.results)
        parts.append(f"{op.name}({args}) {{{attr_text}}} -> ({types})")
    return "\n".join(parts)


@dataclass
class CodegenReport:
    """What codegen did: kernels made, sources compiled, and the groups left alone."""

    kernels: int = 0
    sources: int = 0
    matmuls: int = 0  # matmuls and convolutions by constant weights (with their epilogues)
    kept: list[tuple[str, str]] = field(default_factory=list)  # (group name, reason)
    cpu: CpuTarget | None = None  # what the kernels were scheduled for

    def lines(self) -> list[str]:
        # (matmuls counts groups, not distinct kernels: "85 of 83 kernels" read as a bug)
        out = [f"codegen: {self.kernels} fusion groups -> kernel.tvm ({self.sources} distinct "
               f"kernels; {self.matmuls} of the groups matmuls or convolutions with their "
               f"epilogues), "
               f"{len(self.kept)} left as fusion.group"]
        if self.cpu is not None:
            out.append(f"  scheduled for {self.cpu} ({self.cpu.vector_bits}-bit vectors, "
                       f"GEMM tiles {self.cpu.gemm_rows} x {self.cpu.panel_width})")
        out += [f"  kept %{name}: {reason}" for name, reason in self.kept]
        return out


def kernel_source(block: Block, symbol: str, kind: str | None, target: str) -> str:
    """The source this pir generates for a kernel op's region and its ``target`` (the
    op's, as codegen wrote it): what ``pir run`` requires a stored source to be
    (pir.codegen.provenance).  The run itself tells whether it can size the kernel's dims,
    so they are not checked here."""
    return _lower(block, symbol, kind, parse_target(target), bound=None)


def _lower(block: Block, symbol: str, kind: str | None, cpu: CpuTarget, key: str | None = None,
           bound: frozenset[str] | None = frozenset()) -> str:
    """The kernel source of ``block`` scheduled for ``cpu``; ``bound``: the symbolic dims
    the run knows (its function's input dims), which the kernel may take as parameters
    (None: not checked)."""
    from pir.codegen.tvm.source_cache import cached_source

    free: list[str] = []
    derived_dims(block, free)
    unknown = [d for d in free if bound is not None and d not in bound]
    if unknown:
        raise PirError(f"dim '{unknown[0]}' is neither a dim of the group's inputs nor of "
                       "its function's, so the kernel cannot size it")
    # the source depends only on the group, the symbol, the target and this package: cached
    # on disk
    key = group_key(block) if key is None else key  # hashing weights is not free: reuse it
    # and on the value names, which name the kernel's buffers: without them in the key a
    # cached source would show the names of whichever group made it, so that what `pir
    # codegen` prints would depend on what ran before
    names = " ".join(str(v.name) for v in [*block.args, *(r for op in block.ops
                                                           for r in op.results)])
    return cached_source(f"{key}\0names {names}\0target {cpu}", symbol,
                         lambda: _schedule(block, symbol, kind, cpu))


def _schedule(block: Block, symbol: str, kind: str | None, cpu: CpuTarget):
    """The scheduled IRModule of ``block`` for ``cpu``: matmul groups get the
    register-tiled GEMM schedule, every other group (and a matmul it does not fit) the
    generic CPU one."""
    import tvm

    from pir.codegen.tvm.batch_private import drop_batch_dims
    from pir.codegen.tvm.bmm import is_batched_block, schedule_batched
    from pir.codegen.tvm.conv import CONV
    from pir.codegen.tvm.depthwise import DWCONV, schedule_depthwise
    from pir.codegen.tvm.dot4 import use_vnni
    from pir.codegen.tvm.direct import is_direct_block, schedule_direct
    from pir.codegen.tvm.gemm import MATMUL
    from pir.codegen.tvm.gemm_schedule import one_row_dim, schedule_matmul
    from pir.codegen.tvm.halo import write_interior, yielded_halo
    from pir.codegen.tvm.lower import lower_block
    from pir.codegen.tvm.schedule import schedule_cpu

    halo = yielded_halo(block) if kind == CONV else None
    if halo is not None:
        # the kernel is scheduled as if it wrote the value without its halo, then made to
        # write the padded buffer's interior and zero its border (pir.codegen.tvm.halo)
        kernel = _lower_unpadded(block, symbol, halo[0], cpu)
        func = _conv_function(block, kernel)
        if func is None:
            raise PirError("tvm codegen: the GEMM schedule does not fit a convolution "
                           "whose result has a halo")
        return tvm.IRModule({kernel.name: write_interior(func, halo[1])})
    kernel = lower_block(block, symbol, cpu=cpu)
    if kind == CONV and is_direct_block(block):
        mod = schedule_direct(kernel)
        if mod is not None:
            return mod
    elif kind == CONV:
        func = _conv_function(block, kernel)
        if func is not None:
            return tvm.IRModule({kernel.name: func})
    if kind == MATMUL and is_batched_block(block):
        mod = schedule_batched(kernel)
        if mod is not None:
            return mod
    elif kind == MATMUL:
        sch = schedule_matmul(kernel)
        if sch is not None:
            funcs = {kernel.name: drop_batch_dims(sch.mod[kernel.name])}
            if one_row_dim(block) is not None:
                one = _one_row(kernel)
                if one is not None:
                    funcs[one[0]] = one[1]
            return tvm.IRModule({name: use_vnni(f) for name, f in funcs.items()})
    if kind == DWCONV:
        sch = schedule_depthwise(kernel)
        if sch is not None:
            return sch.mod
    return schedule_cpu(kernel)


def _conv_function(block: Block, kernel):
    """The scheduled function of a conv group's kernel: Winograd's three stages
    (pir.codegen.tvm.winograd) or the register-tiled GEMM; None when neither fits."""
    from pir.codegen.tvm.batch_private import drop_batch_dims
    from pir.codegen.tvm.gemm_schedule import schedule_matmul
    from pir.codegen.tvm.nchwc import BLOCK
    from pir.codegen.tvm.winograd import schedule_winograd, winograd_source

    if any(op.name == "prim.conv" and winograd_source(op.operands[1]) is not None
           for op in block.ops):
        return schedule_winograd(kernel)
    sch = schedule_matmul(kernel, split_cols=True, lanes=BLOCK if _blocked(block) else None)
    return drop_batch_dims(sch.mod[kernel.name]) if sch is not None else None


def _one_row(kernel):
    """The one-row variant of a matmul kernel (pir.codegen.tvm.gemm_schedule.one_row_dim): its name
    and scheduled function, or None when the schedule does not fit."""
    import dataclasses

    from pir.codegen.tvm.batch_private import drop_batch_dims
    from pir.codegen.tvm.gemm_schedule import ROWS1, schedule_matmul

    name = kernel.name + ROWS1
    variant = dataclasses.replace(kernel, name=name,
                                  func=kernel.func.with_attr("global_symbol", name))
    sch = schedule_matmul(variant, tile_rows=1)
    return None if sch is None else (name, drop_batch_dims(sch.mod[name]))


def _lower_unpadded(block: Block, symbol: str, pad, cpu: CpuTarget):
    """``block`` lowered as if it yielded the input of its final ``pad`` (its halo)."""
    from pir.codegen.tvm.lower import lower_block

    term = block.terminator
    term.set_operand(0, pad.operands[0])
    try:
        return lower_block(block, symbol, cpu=cpu)
    finally:
        term.set_operand(0, pad.results[0])


def _blocked(block: Block) -> bool:
    """Whether a conv group's region reads or writes a value in channel blocks."""
    from pir.codegen.tvm.nchwc import blocked_source, yields_blocked

    return yields_blocked(block) or any(blocked_source(r) is not None
                                        for op in block.ops for r in op.results)


def codegen_module(module: ModuleOp, target: str = "llvm") -> CodegenReport:
    """Replace each lowerable fusion.group of ``module`` by a kernel.tvm op (in place),
    scheduled for ``target``: ``llvm`` (this machine's CPU) or a CPU named as TVM writes it,
    ``llvm -mcpu=znver3 -num-cores=8`` (pir.codegen.tvm.target)."""
    cpu = parse_target(target)
    from pir.codegen.tvm.conv import form_conv_groups
    from pir.codegen.tvm.depthwise import form_depthwise_groups
    from pir.codegen.tvm.gemm import form_matmul_groups

    report = CodegenReport(cpu=cpu)
    for func in module.funcs:
        for block in _program_blocks(func.entry):
            report.matmuls += (form_matmul_groups(block, cpu) + form_conv_groups(block, cpu)
                               + form_depthwise_groups(block))
    # the sources are made from value names: those the file will show, so that `pir run`
    # makes the same sources again from the parsed file (pir.codegen.provenance)
    settle_names(module)
    used: set[str] = {op.symbol for op in module.walk() if isinstance(op, TvmKernelOp)}
    made: dict[str, tuple[str, str]] = {}  # group key -> (symbol, source)
    failed: dict[tuple, str] = {}  # (group key, dims it may take) -> reason
    known = _known_dims(module)
    for group in [op for op in module.walk() if isinstance(op, GroupOp)]:
        first = group.results[0].name if group.results else None
        key = group_key(group.body.block)
        bound = known.get(group) or _input_dims(group)
        if (key, bound) in failed:
            report.kept.append((first or "?", failed[key, bound]))
            continue
        if key not in made:
            symbol, k = mangle(first), 1
            while symbol in used:
                symbol, k = f"{mangle(first)}_{k}", k + 1
            try:
                source = _lower(group.body.block, symbol, group.kind, cpu, key, bound)
            except Exception as e:  # noqa: BLE001 - any lowering failure keeps the group
                reason = one_line(e)
                failed[key, bound] = reason
                report.kept.append((first or "?", reason))
                continue
            used.add(symbol)
            made[key] = (symbol, source)
            report.sources += 1
        symbol, source = made[key]
        _replace(group, symbol, source, str(cpu), first)
        report.kernels += 1
    # the weights the kernels now read packed: a model's unpacked copies would otherwise stay
    # in the file beside them (a 6.8 MB model made an 18 MB .k.pir)
    drop_unused_resources(module)
    return report


def _program_blocks(block):
    """``block`` and the blocks of its control flow (``nn.if`` branches, loop and scan
    bodies), nested to any depth: each gets its products and convolutions grouped, as a
    Silero VAD runs its whole network inside ``if sr == 16000``.  Group bodies are not
    entered (they are what is formed)."""
    yield block
    # (a snapshot: forming the groups of an inner block drops the weights it packed from
    # this one, and a live list then skipped the op after them: the second scan of a
    # bidirectional quantized LSTM kept its product on numpy)
    for op in list(block.ops):
        if isinstance(op, (GroupOp, TvmKernelOp)):
            continue
        for region in op.regions:
            for inner in region.blocks:
                yield from _program_blocks(inner)


def library_reason(op) -> str | None:
    """Why codegen left ``op``, a convolution or a product (a library op), outside the
    kernels; None for any other op."""
    from pir.codegen.tvm.conv import why_not_compiled as why_conv
    from pir.codegen.tvm.gemm import why_not_compiled as why_dot

    if op.name == "prim.conv":
        return why_conv(op)
    if op.name == "prim.dot_general":
        return why_dot(op)
    return None


def _known_dims(module: ModuleOp) -> dict[GroupOp, frozenset[str]]:
    """For each group at the top level of a function: the symbolic dims a run knows when it
    reaches the group, which the kernel may take as parameters.  Those of the function's
    inputs, and of every result before the group: a kernel derives its results' new dims
    from its inputs' (a flatten's ``batch * seq``), and the interpreter binds any other
    op's when it checks the result.  (The importer names a dim ONNX's shape inference
    could not relate, such as a flatten's, ``unk__N``; a group that then decomposes a
    gather's bounds sums ones over that dim, and reads no input that shows it.)"""
    from pir.codegen.tvm.dims import symbols_of

    out: dict[GroupOp, frozenset[str]] = {}
    for fn in module.funcs:
        known = {d for a in fn.entry.args for d in symbols_of(a.type)}
        for op in fn.entry.ops:
            if isinstance(op, GroupOp):
                out[op] = frozenset(known)
            for r in op.results:
                known |= symbols_of(r.type)
    return out


def _input_dims(op) -> frozenset[str]:
    """The symbolic dims of the inputs of the function around ``op``: the runtime binds them
    when the function is called."""
    from pir.ir.dialects.func import FuncOp

    fn = op.parent_op
    while fn is not None and not isinstance(fn, FuncOp):
        fn = fn.parent_op
    if fn is None:
        return frozenset()
    return frozenset(d for a in fn.args for d in (getattr(a.type, "shape", None) or ())
                     if isinstance(d, str))


def _replace(group: GroupOp, symbol: str, source: str, target: str, name: str | None) -> None:
    attrs = {"kind": group.kind, "symbol": symbol, "source": source, "target": target}
    if name is not None:
        attrs["pir.name"] = name
    region = group.regions[0]
    group.regions = []
    region.parent = None
    kernel = TvmKernelOp(list(group.operands), [r.type for r in group.results], attrs,
                         [region], loc=group.loc, result_names=[r.name for r in group.results])
    block = group.parent
    block.insert(block.index(group), kernel)
    for old, new in zip(group.results, kernel.results):
        old.replace_all_uses_with(new)
    block.remove(group)


def has_groups(module: ModuleOp) -> bool:
    return any(isinstance(op, (GroupOp, TvmKernelOp)) for op in module.walk())


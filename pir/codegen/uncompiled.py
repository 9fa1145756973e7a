"""What of a program will not run in a compiled kernel, and why.

After ``codegen`` a program is kernels plus whatever is left: nn ops that ``decompose``
kept, prim ops no group holds, fusion groups codegen could not lower, and library calls
(matmuls and convolutions outside kernels) that the reference runtime hands to numpy.  All
of that runs on the host, one numpy call at a time, and is where a compiled program loses
to ONNX Runtime; ``pir codegen --explain`` and ``pir show`` list it, grouped by op and
reason, so that a user sees it without profiling.

The reason an nn op was not decomposed is found by running ``decompose`` once more on a
copy of the program (its rules say why they keep an op); a group's is the reason codegen
gave when it left it.
"""

from __future__ import annotations

from collections import Counter

from pir.ir.core import Operation
from pir.ir.dialects.builtin import ConstantOp, ModuleOp
from pir.ir.opdef import Terminator

__all__ = ["uncompiled_ops", "uncompiled_lines"]

#: Ops that are the program's structure, not work that a kernel could do.
_STRUCTURE = frozenset({"func.func", "func.return", "func.call", "nn.if", "nn.loop",
                        "nn.scan"})
_KERNELS = frozenset({"kernel.tvm", "kernel.cuda", "kernel.cublas"})
_LIBRARY = {"prim.dot_general": "a matmul outside kernels: numpy (BLAS) on the host",
            "prim.conv": "a convolution outside kernels: numpy on the host"}


def uncompiled_ops(module: ModuleOp, kept_groups: dict[str, str] | None = None
                   ) -> list[tuple[str, str, int]]:
    """(op name, reason, count) for every kind of op of ``module`` that runs on the host,
    most frequent first; ``kept_groups`` gives the reason of each fusion group codegen
    left (by the group's first result name)."""
    kept_groups = kept_groups or {}
    nn_reasons = _decompose_reasons(module)
    counts: Counter = Counter()
    for op in _host_ops(module):
        if op.name == "fusion.group":
            name = op.results[0].name if op.results else None
            reason = kept_groups.get(name or "?", "a fusion group codegen has not lowered "
                                                  "(run `pir codegen`)")
        elif op.name in _LIBRARY:
            reason = _LIBRARY[op.name] + _library_reason(op)
        elif op.name.startswith("nn."):
            reason = "not decomposed: " + nn_reasons.get(op.name, "no decomposition was run")
        else:
            reason = "in no fusion group (run the fuse pipeline)"
        counts[(op.name, reason)] += 1
    return sorted(((n, r, c) for (n, r), c in counts.items()), key=lambda t: (-t[2], t[0]))


def uncompiled_lines(module: ModuleOp, kept_groups: dict[str, str] | None = None) -> list[str]:
    """:func:`uncompiled_ops` as report lines (none when everything is compiled)."""
    rows = uncompiled_ops(module, kept_groups)
    if not rows:
        return ["  not compiled: nothing (every op runs in a kernel)"]
    total = sum(c for _, _, c in rows)
    out = [f"  not compiled: {total} op{'s' if total != 1 else ''} run on the host"]
    out += [f"    {name} x{count}: {reason}" for name, reason, count in rows]
    return out


def _library_reason(op: Operation) -> str:
    """`` (why)`` codegen left the library op ``op`` outside its kernels (pir.codegen.tvm),
    or nothing when that cannot be asked (no TVM)."""
    try:
        from pir.codegen.tvm.codegen import library_reason

        why = library_reason(op)
    except ImportError:
        return ""
    return f" ({why})" if why else ""


def _host_ops(module: ModuleOp):
    """The ops that run on the host: not constants, structure or terminators, and nothing
    inside a kernel or a group (a group is one entry)."""
    def walk(op: Operation):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    if inner.name in _KERNELS or isinstance(inner, ConstantOp) \
                            or Terminator in inner.traits:
                        continue
                    if inner.name == "fusion.group":
                        yield inner
                        continue
                    if inner.name not in _STRUCTURE:
                        yield inner
                    yield from walk(inner)

    yield from walk(module)


def _decompose_reasons(module: ModuleOp) -> dict[str, str]:
    """nn op name -> why decompose keeps it, from a run on a copy of ``module``."""
    if not any(op.name.startswith("nn.") and op.name != "nn.yield" for op in module.walk()):
        return {}
    from pir.ir.parser import parse_module
    from pir.ir.printer import print_module
    from pir.passes.decompose import kept_reasons

    try:
        return kept_reasons(parse_module(print_module(module)))
    except Exception:  # noqa: BLE001 - a report must not fail where the program runs
        return {}

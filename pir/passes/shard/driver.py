"""``shard_module``: a module's function sharded in the global view, as ``pir shard`` does.

The steps: check that every op has an SPMD rule (all missing ones at once), match the spec
to values (:mod:`pir.passes.shard.spec`), choose placements for the parameters with
``auto`` (:mod:`pir.passes.shard.auto`), propagate (:mod:`pir.passes.shard.propagate`),
insert the reshards (:mod:`pir.passes.shard.reshard`), verify.

The result is the **sharded global-view program**: the same function, every value of a
non-constant op and every argument typed ``!dist.tensor<GLOBAL shape, mesh, placements>``,
constants plain (whole on every rank, sliced by a ``dist.reshard`` where a layout needs
it), collectives where layouts change.  It runs as it is on the reference runtime, where
collectives are identities, and gives the unsharded results; the per-rank program
(``pir.passes.shard.localize``) is made from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from pir.errors import PirError
from pir.ir.core import Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.dist import Mesh, Placement
from pir.ir.dialects.func import FuncOp
from pir.passes.shard.propagate import Plan, check_rules, propagate
from pir.passes.shard.report import Summary, summarize
from pir.passes.shard.reshard import apply_plan
from pir.passes.shard.sharding import Sharding
from pir.passes.shard.spec import match_spec

__all__ = ["ShardResult", "shard_module", "find_function", "parse_mesh", "parse_memory"]


@dataclass
class ShardResult:
    """What ``shard_module`` did: the module (sharded in place), the plan, its cost
    summary, and the placements of the values the spec or the search laid out (value name
    -> one placement per mesh axis; ``chosen`` holds those ``auto`` picked)."""

    module: ModuleOp
    mesh: Mesh
    plan: Plan
    summary: Summary
    annotated: dict[str, tuple[Placement, ...]] = field(default_factory=dict)
    chosen: dict[str, tuple[Placement, ...]] = field(default_factory=dict)
    max_memory: int | None = None  # the bound --auto kept to, on ``bound_on``
    bound_on: str = "memory"  # "memory" (per rank) or "parameters" (the default bound)


def parse_mesh(text: str | Mesh) -> Mesh:
    if isinstance(text, Mesh):
        return text
    try:
        return Mesh.parse(text)
    except ValueError as e:
        raise PirError(f"bad --mesh: {e}") from None


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
          "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_memory(text: str | int | None) -> int | None:
    """``4096``, ``64MB``, ``1.5GiB`` -> bytes."""
    if text is None or isinstance(text, int):
        return text
    t = text.strip().lower()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):].strip()
    try:
        return int(float(num) * _UNITS[unit])
    except (ValueError, KeyError):
        raise PirError(f"bad memory size '{text}': expected bytes, or a number with kB, MB, "
                       "GB, KiB, MiB or GiB") from None


def find_function(module: ModuleOp, name: str | None = None) -> FuncOp:
    funcs = [f for f in module.funcs if isinstance(f, FuncOp)]
    if name is None:
        name = "main" if any(f.sym_name == "main" for f in funcs) or len(funcs) != 1 \
            else funcs[0].sym_name
    for f in funcs:
        if f.sym_name == name:
            return f
    raise PirError(f"the module has no function @{name}")


def shard_module(module: ModuleOp, mesh: Mesh | str,
                 spec: Mapping[str, list[str]] | None = None, auto: bool = False,
                 max_memory: int | str | None = None, dims: Mapping[str, int] | None = None,
                 func: str | None = None) -> ShardResult:
    """Shard ``func`` (default ``main``) of ``module`` in place on ``mesh``: ``spec`` maps
    value-name globs to placements; ``auto`` also chooses the parameters' placements, with
    the least estimated communication within ``max_memory`` bytes per rank; ``dims`` gives
    symbolic dims sizes for the cost model (default 1)."""
    from pir.ir.verifier import verify_module

    mesh = parse_mesh(mesh)
    fn = find_function(module, func)
    check_rules(fn)
    annotations: dict[Value, Sharding] = match_spec(fn, spec or {}, mesh)
    bound = parse_memory(max_memory)
    chosen: dict[Value, Sharding] = {}
    if auto:
        from pir.passes.shard.auto import search

        chosen, bound = search(fn, mesh, annotations, bound, dims)
        annotations = {**annotations, **chosen}
    plan = propagate(fn, mesh, annotations, dims)
    summary = summarize(plan)
    apply_plan(plan)
    verify_module(module)

    def named(values) -> dict[str, tuple[Placement, ...]]:
        return {v.name: s.placements(mesh) for v, s in values.items()}

    return ShardResult(module, mesh, plan, summary, named(annotations), named(chosen), bound,
                       "memory" if max_memory is not None or not auto else "parameters")

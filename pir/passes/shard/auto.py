"""``pir shard --auto``: placements for the parameters the spec leaves open.

The search prices whole plans with the propagation as its evaluator
(:func:`pir.passes.shard.propagate.propagate`, then :func:`pir.passes.shard.report.summarize`):
a plan's cost is its communication per step, and its memory per rank must fit a bound.

**Candidates.**  The parameters are the constants of rank 2 or more that the spec does not
annotate (matrices and kernels: vectors such as biases and norm gains follow the matrices
through the propagation, since constants take the layout their consumer needs).  A
candidate is one placement per mesh axis, each ``R`` or ``S(d)`` of a dim it divides, with
at least one split.  Unannotated parameters are *free*: their layout is what propagation
gives them.

**The bound.**  ``--max-memory`` bounds the memory per rank (parameters and peak
activations).  Without it, the bound is on the parameters alone: those of the plan with
every parameter free, less ``(1 - 1/n)`` of the open parameters' bytes, where ``n`` is the
number of ranks along the mesh axes the annotations leave unused (the axes free for tensor
parallelism): the open parameters must be split as if evenly over those axes.  With every
axis used (data parallelism on all of them) nothing needs to be split.

**The search** is greedy, in three rounds over (parameter, candidate) moves:

1. each move is priced alone against the free plan: its extra communication per byte of
   memory it saves (a move that saves nothing comes last);
2. moves are tried in that order, each on top of the moves kept so far, and kept when the
   plan improves by the key (bytes over the bound, communication, memory), compared in
   that order: while over the bound, saving memory wins; within it, a move must not add
   communication;
3. each kept move is then retried as every other candidate of its parameter, or undone,
   and the change kept when the key improves (a later move may make an early one
   redundant).

A ``--max-memory`` no plan meets is an error naming the best plan's memory.

Without ``--max-memory``, parameters split only along the free axes; with it, along any
axis (splitting a weight along the data axis trades all-gathers for memory).

So in an MLP, splitting the first weight by columns comes first: it lets propagation split
the second by rows (free: a constant takes the consumer's layout), halving both for one
all-reduce; in attention, once the query projection is column-split the key and value
projections split for no communication.  This finds Megatron-style tensor parallelism, and
with a batch-annotated input, keeps data parallelism (splitting a weight over the data axis
would add all-gathers).  Evaluations: about 3 x parameters x candidates propagations,
which share one cache of decisions (rules are pure; most ops see the same layouts in every
plan).

Parameters that are function arguments (the weights of a training step) are not searched:
they are inputs, laid out by the spec.
"""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Mapping

from pir.errors import PirError
from pir.ir.core import Value
from pir.ir.dialects.dist import Mesh
from pir.ir.dialects.func import FuncOp
from pir.passes.shard.comm import local_bytes, resolve_shape
from pir.passes.shard.propagate import propagate
from pir.passes.shard.report import Summary, human, summarize
from pir.passes.shard.sharding import Sharding

__all__ = ["search", "candidates", "parameters"]


def parameters(fn: FuncOp, annotations: Mapping[Value, Sharding]) -> list[Value]:
    """The constants of rank >= 2 the annotations leave open, in program order."""
    return [op.result for op in fn.entry.ops
            if op.name == "builtin.constant" and op.result not in annotations
            and len(op.result.type.shape or ()) >= 2]


def candidates(v: Value, mesh: Mesh, dims: Mapping[str, int],
               axes: set[str] | None = None) -> list[Sharding]:
    """Every layout of ``v`` with at least one split, each axis on a dim it divides (only
    the mesh ``axes`` given may split, when given)."""
    shape = resolve_shape(v.type.shape, dims)
    out = []
    for choice in product([None, *range(len(shape))], repeat=len(mesh.axes)):
        if axes is not None and any(c is not None and a not in axes
                                    for (a, _), c in zip(mesh.axes, choice)):
            continue
        if all(c is None for c in choice):
            continue
        split = [[] for _ in shape]
        for (axis, _), c in zip(mesh.axes, choice):
            if c is not None:
                split[c].append(axis)
        if all(size % prod(mesh.size(a) for a in axes) == 0
               for size, axes in zip(shape, split)):
            out.append(Sharding(tuple(tuple(a) for a in split)))
    return out


def _evaluate(fn, mesh, annotations, dims, cache=None) -> Summary:
    return summarize(propagate(fn, mesh, annotations, dims, cache))


def free_axes(mesh: Mesh, annotations: Mapping[Value, Sharding]) -> set[str]:
    """The mesh axes no annotation uses: the axes left for tensor parallelism."""
    used = {a for s in annotations.values() for a in s.used_axes}
    return {a for a in mesh.names if a not in used}


def default_bound(mesh: Mesh, annotations: Mapping[Value, Sharding], free: Summary,
                  params: list[Value], dims) -> int:
    """The default bound on the parameter bytes per rank (see the module docstring)."""
    axes = free_axes(mesh, annotations)
    n = prod(size for axis, size in mesh.axes if axis in axes)
    whole = sum(local_bytes(resolve_shape(v.type.shape, dims), v.type.dtype,
                            Sharding.replicated(len(v.type.shape)), mesh) for v in params)
    return free.weight_bytes - whole + whole // n


def search(fn: FuncOp, mesh: Mesh, annotations: Mapping[Value, Sharding],
           max_memory: int | None, dims: Mapping[str, int] | None = None
           ) -> tuple[dict[Value, Sharding], int]:
    """The placements chosen for the open parameters, and the memory bound used (on the
    memory per rank when ``max_memory`` is given, else on the parameters per rank)."""
    dims = dict(dims or {})
    cache: dict = {}  # decisions, shared by every evaluation (see propagate)
    params = parameters(fn, annotations)
    base = _evaluate(fn, mesh, annotations, dims, cache)
    bound = max_memory if max_memory is not None else default_bound(
        mesh, annotations, base, params, dims)

    def key(s: Summary) -> tuple[int, int, int]:
        measure = s.memory if max_memory is not None else s.weight_bytes
        return (max(0, measure - bound), s.comm_bytes, s.memory)

    axes = None if max_memory is not None else free_axes(mesh, annotations)
    options = {v: candidates(v, mesh, dims, axes) for v in params}
    moves = []
    for i, v in enumerate(params):
        for k, c in enumerate(options[v]):
            s = _evaluate(fn, mesh, {**annotations, v: c}, dims, cache)
            saved = base.memory - s.memory
            extra = s.comm_bytes - base.comm_bytes
            rank = (0, extra / saved) if saved > 0 else (1, extra)
            moves.append((rank, i, k, v, c))
    moves.sort(key=lambda m: m[:3])

    chosen: dict[Value, Sharding] = {}
    best = key(base)
    for _, _, _, v, c in moves:
        if chosen.get(v) == c:
            continue
        trial = {**chosen, v: c}
        s = _evaluate(fn, mesh, {**annotations, **trial}, dims, cache)
        if key(s) < best:
            chosen, best = trial, key(s)
    # refine: an early move may have been made redundant by later ones
    for v in list(chosen):
        for c in [None, *options[v]]:
            if c == chosen[v]:
                continue
            trial = {k: lay for k, lay in chosen.items() if k is not v}
            if c is not None:
                trial[v] = c
            s = _evaluate(fn, mesh, {**annotations, **trial}, dims, cache)
            if key(s) < best:
                chosen, best = trial, key(s)
                if c is None:
                    break
    if max_memory is not None and best[0] > 0:
        s = _evaluate(fn, mesh, {**annotations, **chosen}, dims, cache)
        raise PirError(f"no plan found within --max-memory {human(max_memory)} per rank: the "
                       f"best found needs {human(s.memory)} (parameters "
                       f"{human(s.weight_bytes)}, activations {human(s.activation_bytes)})")
    return chosen, bound

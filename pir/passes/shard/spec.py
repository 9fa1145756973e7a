"""Sharding specs: value-name globs mapped to placements, checked against a function.

A spec is a TOML table (``pir shard --spec SPEC.toml``) whose keys are globs over value
names (function arguments, constants such as weights, and op results, as the ``.pir`` file
names them; a constant also answers to its resource key and its ``pir.name``) and whose
values are one placement per mesh axis::

    "x" = ["S(0)", "R"]             # data parallel on dp
    "*fc1.w" = ["R", "S(1)"]        # column parallel on tp
    "*fc2.w" = ["R", "S(0)"]        # row parallel on tp

Later entries override earlier ones for a value both match.  Each of these is an error, all
reported at once (``pir shard`` exits 1):

- a glob that matches no value (an unknown value name);
- a list with another number of placements than the mesh has axes, or a bad placement;
- ``S(d)`` for a dim the value does not have;
- a split that does not divide the dim (no padding: the block sizes must be equal; a
  symbolic dim is checked when the program runs).
"""

from __future__ import annotations

import fnmatch
import tomllib
from typing import Iterable, Mapping

from pir.errors import PirError
from pir.ir.core import Value
from pir.ir.dialects.dist import DistTensorType, Mesh, parse_placement
from pir.ir.dialects.func import FuncOp
from pir.ir.types import TensorType
from pir.passes.shard.sharding import Sharding

__all__ = ["read_spec", "parse_spec_text", "parse_place", "match_spec", "named_values",
           "names_of"]


def read_spec(path: str) -> dict[str, list[str]]:
    """The entries of the TOML file ``path``."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as e:
        raise PirError(f"cannot read: {e.strerror}", file=path) from None
    return parse_spec_text(text, path)


def parse_spec_text(text: str, where: str = "<spec>") -> dict[str, list[str]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PirError(f"bad TOML: {e}", file=where) from None
    out: dict[str, list[str]] = {}
    for key, value in data.items():
        if not (isinstance(value, list) and all(isinstance(p, str) for p in value)):
            raise PirError(f'"{key}": expected a list of placements like ["R", "S(1)"], got '
                           f"{value!r}", file=where)
        out[key] = value
    return out


def parse_place(text: str) -> tuple[str, list[str]]:
    """``NAME=[R, S(1)]`` (the command line's ``--place``) as a spec entry."""
    name, eq, body = text.partition("=")
    body = body.strip()
    if not eq or not name.strip() or not (body.startswith("[") and body.endswith("]")):
        raise PirError(f"bad --place '{text}': expected NAME=[R, S(1)]")
    inner = body[1:-1].strip()
    return name.strip(), [p.strip().strip('"') for p in inner.split(",")] if inner else []


def named_values(fn: FuncOp) -> list[Value]:
    """The values of ``fn`` a spec can name, in program order (arguments first)."""
    out = [a for a in fn.entry.args if a.name]
    for op in fn.entry.ops:
        out.extend(r for r in op.results if r.name)
    return out


def names_of(v: Value) -> set[str]:
    """The names a spec entry may match: the value's, and for a constant its resource key
    and its ``pir.name`` (the name it was imported with, where a pass renamed the value)."""
    names = {v.name} if v.name else set()
    op = getattr(v, "op", None)
    if op is not None and op.name == "builtin.constant":
        key = getattr(op.attributes.get("value"), "key", None)
        names.update(n for n in (key, op.attributes.get("pir.name")) if isinstance(n, str))
    return names


def _sharding(v: Value, key: str, placements: list[str], mesh: Mesh) -> Sharding:
    t = v.type
    where = f'"{key}" matches %{v.name} ({t})'
    if not isinstance(t, TensorType) or t.shape is None:
        raise PirError(f"{where}: only ranked tensors can be sharded")
    if len(placements) != len(mesh.axes):
        raise PirError(f"{where}: {len(placements)} placement"
                       f"{'s' if len(placements) != 1 else ''} for the {len(mesh.axes)} axes "
                       f"of {mesh}: give one per axis")
    try:
        ps = tuple(parse_placement(p) for p in placements)
    except ValueError as e:
        raise PirError(f'"{key}": {e}') from None
    try:
        DistTensorType(t.dtype, t.shape, mesh, ps)
    except ValueError as e:
        raise PirError(f"{where}: {e}") from None
    return Sharding.of_placements(ps, mesh, len(t.shape))


def match_spec(fn: FuncOp, spec: Mapping[str, list[str]] | Iterable[tuple[str, list[str]]],
               mesh: Mesh) -> dict[Value, Sharding]:
    """The annotations ``spec`` gives the values of ``fn``; a PirError listing every bad
    entry."""
    items = list(spec.items()) if isinstance(spec, Mapping) else list(spec)
    values = named_values(fn)
    out: dict[Value, Sharding] = {}
    errors: list[str] = []
    for key, placements in items:
        hits = [v for v in values if any(fnmatch.fnmatchcase(n, key) for n in names_of(v))]
        if not hits:
            near = [v.name for v in values if key.strip("*?") and key.strip("*?") in v.name]
            hint = f" (did you mean {', '.join(near[:3])}?)" if near else ""
            errors.append(f'"{key}" matches no value of @{fn.sym_name}{hint}')
            continue
        for v in hits:
            try:
                out[v] = _sharding(v, key, placements, mesh)
            except PirError as e:
                errors.append(e.message)
                break
    if errors:
        raise PirError("bad sharding spec: " + "; ".join(errors))  # one line, as every error
    return out

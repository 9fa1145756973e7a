"""The differences between two modules: functions, signatures, ops and resources.

``diff_modules(a, b)`` matches functions by symbol name and ops within them (see
:mod:`pir.diff.matching`), then lists, in a stable order, every op removed, added or changed
(name, attributes, result types, operands through the value pairing), every change of a
function signature (types only: renaming a value is not a difference), and every resource
whose content changed (matched by key, then by content, so a renamed weight is no change).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pir.diff.content import Contents, Digest
from pir.diff.matching import FunctionMatch, match_functions
from pir.ir.attributes import ResourceRef
from pir.ir.core import Operation, attr_or_default
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.func import FuncOp
from pir.ir.printer import format_attr

__all__ = ["OpChange", "FunctionDiff", "ResourceChange", "ModuleDiff", "diff_modules"]


@dataclass
class OpChange:
    """``-`` an op only in A, ``+`` an op only in B, ``~`` a matched pair that differs."""

    kind: str
    a: Operation | None
    b: Operation | None
    details: list[str] = field(default_factory=list)


@dataclass
class FunctionDiff:
    """One function: ``=`` in both files, ``-`` only in A, ``+`` only in B."""

    name: str
    kind: str
    signature: list[tuple[str, str]] = field(default_factory=list)  # (kind, text)
    ops: list[OpChange] = field(default_factory=list)
    match: FunctionMatch | None = None
    fn: FuncOp | None = None  # the function, for "-" and "+"

    @property
    def equal(self) -> bool:
        return self.kind == "=" and not self.signature and not self.ops


@dataclass
class ResourceChange:
    kind: str  # "-", "+", "~"
    key: str
    before: Digest | None
    after: Digest | None
    key_after: str | None = None  # when the entry was matched under another key


@dataclass
class ModuleDiff:
    a: ModuleOp
    b: ModuleOp
    module: list[str] = field(default_factory=list)  # changes of the module's own attributes
    functions: list[FunctionDiff] = field(default_factory=list)
    resources: list[ResourceChange] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.module and not self.resources and all(f.equal for f in self.functions)

    def function(self, name: str) -> FunctionDiff | None:
        return next((f for f in self.functions if f.name == name), None)


def diff_modules(a: ModuleOp, b: ModuleOp) -> ModuleDiff:
    ca, cb = Contents(a), Contents(b)
    out = ModuleDiff(a, b, module=[f"module {x}" for x in
                                   _attribute_changes(a, b, ca, cb, skip={"sym_name"})])
    if a.sym_name != b.sym_name:
        out.module.insert(0, f"module @{a.sym_name} -> @{b.sym_name}")
    funcs_a = {f.sym_name: f for f in a.funcs if isinstance(f, FuncOp)}
    funcs_b = {f.sym_name: f for f in b.funcs if isinstance(f, FuncOp)}
    for name, fa in funcs_a.items():
        fb = funcs_b.get(name)
        out.functions.append(_diff_function(fa, fb, ca, cb) if fb is not None
                             else FunctionDiff(name, "-", fn=fa))
    for name, fb in funcs_b.items():
        if name not in funcs_a:
            out.functions.append(FunctionDiff(name, "+", fn=fb))
    out.resources = _diff_resources(ca, cb)
    return out


# -- functions -------------------------------------------------------------------------------


def _diff_function(fa: FuncOp, fb: FuncOp, ca: Contents, cb: Contents) -> FunctionDiff:
    m = match_functions(fa, fb, ca, cb)
    fd = FunctionDiff(fa.sym_name, "=", match=m)
    fd.signature = _signature_changes(m)
    for line in _attribute_changes(fa, fb, ca, cb, skip={"sym_name", "function_type"}):
        fd.signature.append(("~", f"@{fa.sym_name} {line}"))
    fd.ops = _ordered_changes(m, ca, cb)
    return fd


def _signature_changes(m: FunctionMatch) -> list[tuple[str, str]]:
    """Inputs and outputs compared by type, position by position."""
    out = []
    for what, xs, ys in (("input", m.a.args, m.b.args),
                         ("output", m.a.return_op.operands, m.b.return_op.operands)):
        head = f"@{m.a.sym_name} {what}"
        for i in range(max(len(xs), len(ys))):
            if i >= len(ys):
                out.append(("-", f"{head} {i} {m.names_a(xs[i])}: {xs[i].type}"))
            elif i >= len(xs):
                out.append(("+", f"{head} {i} {m.names_b(ys[i])}: {ys[i].type}"))
            elif xs[i].type != ys[i].type:
                out.append(("~", f"{head} {i} {m.names_a(xs[i])}: {xs[i].type} -> {ys[i].type}"))
    return out


def _ordered_changes(m: FunctionMatch, ca: Contents, cb: Contents) -> list[OpChange]:
    """Changes in B's program order, each removed op placed right after the B twin of the
    last matched op before it in A (as diff(1) puts a deletion before the insertions)."""
    b_index = {op: i for i, op in enumerate(m.b_ops)}
    entries: list[tuple[tuple, OpChange]] = []
    anchor = -1.0
    for i, op in enumerate(m.a_ops):
        twin = m.ops.get(op)
        if twin is not None:
            anchor = b_index[twin]
        else:
            entries.append(((anchor + 0.5, i), OpChange("-", op, None)))
    reverse = {b: a for a, b in m.ops.items()}
    for j, op in enumerate(m.b_ops):
        a = reverse.get(op)
        if a is None:
            entries.append(((j, 0), OpChange("+", None, op)))
        else:
            details = _op_details(a, op, m, ca, cb)
            if details:
                entries.append(((j, 0), OpChange("~", a, op, details)))
    entries.sort(key=lambda e: e[0])
    return [c for _, c in entries]


def _op_details(a: Operation, b: Operation, m: FunctionMatch, ca: Contents,
                cb: Contents) -> list[str]:
    """What differs between two matched ops, one phrase each."""
    out = []
    if a.name != b.name:  # another op: its attributes are another op's, not comparable
        out.append(f"{a.name} -> {b.name}")
    else:
        out += _attribute_changes(a, b, ca, cb)
    na, nb = m.names_a, m.names_b
    if len(a.operands) != len(b.operands):
        out.append(f"operands ({', '.join(map(na, a.operands))}) -> "
                   f"({', '.join(map(nb, b.operands))})")
    else:
        for i, (x, y) in enumerate(zip(a.operands, b.operands)):
            if m.values.get(x) is not y:
                out.append(f"operand {i}: {na(x)} -> {nb(y)}")
    if len(a.results) != len(b.results):
        out.append(f"results ({', '.join(str(r.type) for r in a.results)}) -> "
                   f"({', '.join(str(r.type) for r in b.results)})")
    else:
        for i, (x, y) in enumerate(zip(a.results, b.results)):
            if x.type != y.type:
                which = "type" if len(a.results) == 1 else f"result {i} type"
                out.append(f"{which}: {x.type} -> {y.type}")
    if len(a.regions) != len(b.regions):
        out.append(f"{len(a.regions)} regions -> {len(b.regions)}")
    return out


def _attribute_changes(a: Operation, b: Operation, ca: Contents, cb: Contents,
                       skip: set[str] = frozenset()) -> list[str]:
    """Attributes compared by meaning (defaults filled in, constants by content)."""
    ka, kb = ca.attributes(a), cb.attributes(b)
    out = []
    for key in sorted(set(ka) | set(kb)):
        if key in skip or ka.get(key) == kb.get(key) or _same_resource(a, b, key):
            continue
        if key not in kb:
            out.append(f"-{key} = {_show(a, key, ca)}")
        elif key not in ka:
            out.append(f"+{key} = {_show(b, key, cb)}")
        else:
            out.append(f"{key}: {_show(a, key, ca)} -> {_show(b, key, cb)}")
    return out


def _same_resource(a: Operation, b: Operation, key: str) -> bool:
    """Both refer to one resource key: a change of its content is the resource section's
    difference, reported there once, not again at every constant that reads it."""
    va, vb = _value(a, key), _value(b, key)
    return isinstance(va, ResourceRef) and isinstance(vb, ResourceRef) and va.key == vb.key


def _value(op: Operation, key: str):
    return op.attributes[key] if key in op.attributes else attr_or_default(op, key)


def _show(op: Operation, key: str, contents: Contents) -> str:
    v = _value(op, key)
    if isinstance(v, ResourceRef):  # a weight is shown by what it holds, not only its key
        digest = contents.resource(v.key)
        return format_attr(v) + (f" {digest.header()}" if digest else " (missing)")
    text = format_attr(v) if key != "operand_segments" else str(tuple(op.operand_segments))
    return text if len(text) <= 80 else text[:77] + "..."


# -- resources -------------------------------------------------------------------------------


def _diff_resources(ca: Contents, cb: Contents) -> list[ResourceChange]:
    """By key; entries left over on both sides are paired by content (a rename only)."""
    ra, rb = ca.module.resources, cb.module.resources
    out = []
    for key in ra:
        if key in rb and ca.resource(key) != cb.resource(key):
            out.append(ResourceChange("~", key, ca.resource(key), cb.resource(key)))
    only_b = {cb.resource(k): k for k in rb if k not in ra}
    for key in ra:
        if key not in rb:
            renamed = only_b.pop(ca.resource(key), None)
            if renamed is None:
                out.append(ResourceChange("-", key, ca.resource(key), None))
    left = set(only_b.values())
    for key in rb:
        if key in left:
            out.append(ResourceChange("+", key, None, cb.resource(key)))
    return out

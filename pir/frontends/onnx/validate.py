"""Checks of an ONNX model from a stranger, before the importer builds anything from it.

A few bytes of protobuf can hold what no converter expects: names that are not UTF-8 (protobuf
hands them over as ``bytes``), a node without the inputs its op requires or with attributes
of the wrong type, a value defined twice, dims that are negative or whose product overflows int64.  The importer
runs these checks first, so that each such model ends in one :class:`PirError` naming the node
(or the graph input, initializer ...) and what is wrong, never in a Python exception from deep
inside a converter.

The rules are onnx.checker's, where it has them: ``OpSchema::Verify`` for a node's inputs,
outputs and attributes, ``check_graph``'s lexical scopes for SSA, ``check_tensor``'s
"Negative dimension value".  They are checked here rather than by calling onnx.checker
because its messages name neither the file nor, always, the node, it stops at the first
problem of a kind pir tolerates (an opset newer than the installed onnx, an experimental
op), and it fails with a UnicodeDecodeError of its own on non-UTF-8 names.
"""

from __future__ import annotations

import re
from typing import Iterator

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from pir.errors import PirError
from pir.frontends.onnx.context import node_label, quoted
from pir.limits import INT64_MAX
from pir.ir.typerules import MAX_RANK

__all__ = ["check_strings", "check_nodes", "check_ssa", "check_dims", "dims_error",
           "subgraphs"]

_A = onnx.AttributeProto
_OPTION = onnx.defs.OpSchema.FormalParameterOption
#: The field of an AttributeProto that holds a value of each type.
_VALUE_FIELD = {_A.FLOAT: "f", _A.INT: "i", _A.STRING: "s", _A.TENSOR: "t", _A.GRAPH: "g",
                _A.SPARSE_TENSOR: "sparse_tensor", _A.TYPE_PROTO: "tp", _A.FLOATS: "floats",
                _A.INTS: "ints", _A.STRINGS: "strings", _A.TENSORS: "tensors",
                _A.GRAPHS: "graphs", _A.SPARSE_TENSORS: "sparse_tensors",
                _A.TYPE_PROTOS: "type_protos"}

#: Attribute types whose value is a message: one that is not there is no value at all.
_MESSAGE_TYPES = {_A.TENSOR, _A.GRAPH, _A.SPARSE_TENSOR, _A.TYPE_PROTO}


def subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """The graphs a node holds in its attributes, with the attribute's name.  Every graph
    field counts, whatever the attribute's declared type says, so that nothing of the file
    escapes the checks (a mismatch of type and field is itself reported by check_nodes)."""
    for a in node.attribute:
        if a.HasField("g"):
            yield a.name, a.g
        for g in a.graphs:
            yield a.name, g


def _walk(graph: onnx.GraphProto, where: str | None = None
          ) -> Iterator[tuple[onnx.GraphProto, str | None]]:
    """``graph`` and every graph nested in it, each with how errors name it (None: the main
    graph; else "subgraph 'body' of ONNX node 'loop' (Loop)")."""
    yield graph, where
    for i, node in enumerate(graph.node):
        for attr, g in subgraphs(node):
            yield from _walk(g, f"subgraph {quoted(attr)} of {node_label(node, i)}")


def _in(where: str | None) -> str:
    return "" if where is None else f" in {where}"


# -- strings ---------------------------------------------------------------------------------

def check_strings(model: onnx.ModelProto, filename: str) -> None:
    """Every string field of the model (names, op types, domains, dim_params, external data
    keys ...) must be UTF-8: protobuf gives one that is not as ``bytes``, which every later
    step would trip over.  Runs first, so that the other checks can print names."""
    _check_strings(model, "the model", filename)


def _check_strings(msg: Message, where: str, filename: str) -> None:
    for name, is_string, repeated in _text_fields(msg.DESCRIPTOR):
        if repeated:
            values = getattr(msg, name)
        elif msg.HasField(name):
            values = (getattr(msg, name),)
        else:
            continue
        for k, v in enumerate(values):
            if is_string:
                if not isinstance(v, str):
                    raise PirError(f"{where}: field '{name}' is not valid UTF-8 ({v!r})",
                                   file=filename)
            else:
                _check_strings(v, _where(v, name, k, where), filename)


#: Message type -> its fields that _check_strings reads (see _text_fields).
_TEXT_FIELDS: dict[str, list[tuple[str, bool, bool]]] = {}


def _is_repeated(field: FieldDescriptor) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf 6 and later; before, the label
    return flag if flag is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _text_fields(descriptor) -> list[tuple[str, bool, bool]]:
    """The string and message fields of a message type: (name, is a string, is repeated).
    Only these are read: reading a bytes field (a tensor's raw_data) would copy it."""
    fields = _TEXT_FIELDS.get(descriptor.full_name)
    if fields is None:
        fields = [(f.name, f.type == FieldDescriptor.TYPE_STRING, _is_repeated(f))
                  for f in descriptor.fields
                  if f.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE)]
        _TEXT_FIELDS[descriptor.full_name] = fields
    return fields


def _where(msg: Message, field: str, index: int, outer: str) -> str:
    """How an error inside ``msg`` (item ``index`` of ``field`` of a message named ``outer``)
    names its place: by the name of the node, value or tensor when that name is itself
    valid, else by position."""
    def named(kind: str, name) -> str:
        return f"{kind} {quoted(name)}" if isinstance(name, str) and name else f"{kind} #{index}"

    if isinstance(msg, onnx.NodeProto):
        op, out0 = msg.op_type, msg.output[0] if msg.output else ""
        if all(isinstance(s, str) for s in (msg.name, op, out0)):
            return node_label(msg, index)
        return named("ONNX node", msg.name)
    if isinstance(msg, onnx.ValueInfoProto):
        kind = {"input": "graph input", "output": "graph output"}.get(field, field)
        return named(kind, msg.name)
    if isinstance(msg, onnx.TensorProto):
        return named("tensor", msg.name)
    if isinstance(msg, onnx.AttributeProto):
        return f"{outer}: " + named("attribute", msg.name)
    if isinstance(msg, onnx.GraphProto) and field == "graph":
        return "the graph"
    return outer


# -- nodes against their op's schema ---------------------------------------------------------

def check_nodes(model: onnx.ModelProto, opsets: dict[str, int], filename: str) -> None:
    """Each node whose op ONNX defines has the inputs and outputs its schema at the model's
    opset requires, and attributes of the types it defines (onnx.checker's
    ``OpSchema::Verify``): a required input that is missing or "", an attribute of the wrong
    type or given twice.  Converters can then rely on what the schema promises."""
    schemas: dict[tuple[str, str], _Schema | None] = {}
    for graph, where in _walk(model.graph):
        for i, node in enumerate(graph.node):
            domain = "" if node.domain == "ai.onnx" else node.domain
            key = (domain, node.op_type)
            if key not in schemas:
                try:
                    schemas[key] = _Schema(onnx.defs.get_schema(node.op_type,
                                                                opsets.get(domain, 1), domain))
                except onnx.defs.SchemaError:
                    schemas[key] = None  # a custom op, or one the opset lacks: see importer
            schema = schemas[key]
            if schema is None:
                continue
            message = _node_problem(node, schema)
            if message:
                raise PirError(f"{node_label(node, i)}{_in(where)}: {message}", file=filename)


class _Schema:
    """What the checks read of an OpSchema, read once per op (every access to the pybind
    object builds new Python objects)."""

    def __init__(self, schema):
        self.since_version = schema.since_version
        self.min_input, self.max_input = schema.min_input, schema.max_input
        self.min_output, self.max_output = schema.min_output, schema.max_output
        self.inputs, self.outputs = list(schema.inputs), list(schema.outputs)
        self.attributes = {name: int(a.type) for name, a in schema.attributes.items()}


def _node_problem(node: onnx.NodeProto, schema: _Schema) -> str | None:
    op = f"{node.op_type}-{schema.since_version}"
    n_in, n_out = len(node.input), len(node.output)
    for k, formal in enumerate(schema.inputs):
        given = k < n_in and bool(node.input[k])
        if formal.option == _OPTION.Single and not given:
            return f"required input {k} '{formal.name}' is missing"
        if formal.option == _OPTION.Variadic:  # always the last formal input
            # The values of a heterogeneous variadic (Loop's carried values, Scan's inputs)
            # are positional: an empty name among them is a hole, not an absent value.
            values = list(node.input[k:])
            if not formal.is_homogeneous and "" in values:
                return (f"input {k + values.index('')} (of '{formal.name}') is empty, but "
                        f"{op} takes no optional values there")
            if sum(1 for v in values if v) < formal.min_arity:
                return (f"required input {k} '{formal.name}' is missing ({op} takes at least "
                        f"{formal.min_arity})")
    if n_in < schema.min_input:  # optional inputs that must still be listed, as ""
        return f"has {n_in} input{'s' * (n_in != 1)}, {op} takes " \
               f"{_range(schema.min_input, schema.max_input)}"
    if n_out < schema.min_output or n_out > schema.max_output:
        return (f"has {n_out} output{'s' * (n_out != 1)}, {op} has "
                f"{_range(schema.min_output, schema.max_output)}")
    for k, formal in enumerate(schema.outputs):
        if k < n_out and formal.option == _OPTION.Single and not node.output[k]:
            return f"output {k} '{formal.name}' has an empty name, but {op} always produces it"
    seen = set()
    for a in node.attribute:
        if a.name in seen:
            return f"attribute {quoted(a.name)} is given twice"
        seen.add(a.name)
        problem = _attribute_problem(a, schema.attributes.get(a.name), op)
        if problem:
            return problem
    if node.op_type == "Einsum" and node.domain in ("", "ai.onnx"):
        return _einsum_problem(node)
    # Required attributes are not checked here: the nn op a converter emits declares those
    # it needs (NodeContext.emit enforces them), and a converter checks the ones it reads
    # itself (Cast's 'to', Scan's 'num_scan_inputs').
    return None


#: An einsum equation: subscripts (letters, one '...' each), ',' between operands, at most
#: one '->', spaces anywhere.
_EINSUM = re.compile(r" *(?:[A-Za-z ]|\.\.\.)*(?:,(?:[A-Za-z ]|\.\.\.)*)*"
                     r"(?:-> *(?:[A-Za-z ]|\.\.\.)*)?\Z")


def _einsum_problem(node: onnx.NodeProto) -> str | None:
    """Einsum's equation checked before ONNX's shape inference reads it: its C++ parser
    loops forever on some malformed ones ('bc@   @Z\nx\n', found by fuzzing)."""
    eq = next((a.s for a in node.attribute if a.name == "equation"), None)
    if eq is None:
        return None  # the schema check reports a missing required attribute
    text = eq.decode("utf-8", "replace")
    if not _EINSUM.match(text):
        return (f"equation {text!r} is not an einsum equation (letters, '...', ',' between "
                "operands and at most one '->')")
    return None


def _attribute_problem(a: onnx.AttributeProto, expected: int | None, op: str) -> str | None:
    """A wrong type for a known attribute, or a value held in the field of another type."""
    if a.ref_attr_name:
        return None  # a function's attribute reference: refused where it is read
    declared = _type_name(a.type)
    if expected is not None and a.type != expected:
        return f"attribute {quoted(a.name)} has type {declared}, {op} defines it as " \
               f"{_type_name(expected)}"
    fields = {f.name for f, _ in a.ListFields()} & set(_VALUE_FIELD.values())
    field = _VALUE_FIELD.get(a.type)
    stray = fields - {field}
    if stray:
        return f"attribute {quoted(a.name)} of type {declared} holds a value in field " \
               f"'{sorted(stray)[0]}'"
    if a.type in _MESSAGE_TYPES and field not in fields:  # a scalar's default is its value
        return f"attribute {quoted(a.name)} of type {declared} has no value"
    return None


def _type_name(code: int) -> str:
    try:
        return _A.AttributeType.Name(code)
    except ValueError:
        return str(code)


def _range(lo: int, hi: int) -> str:
    if lo == hi:
        return f"{lo}"
    return f"at least {lo}" if hi >= 2**31 - 1 else f"{lo} to {hi}"


# -- SSA -------------------------------------------------------------------------------------

class _Scope:
    """The names visible in one graph, each with who defines it ("graph input 'x'", "ONNX
    node 'n1' (Relu)"), and the enclosing graph's scope."""

    def __init__(self, parent: _Scope | None):
        self.parent = parent
        self.names: dict[str, str] = {}

    def find(self, name: str) -> str | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None


def check_ssa(graph: onnx.GraphProto, filename: str) -> None:
    """Every value is defined once, as onnx.checker's ``check_graph`` requires: no two graph
    inputs or initializers of one graph share a name, and no node output is named like a
    value already visible to it: an earlier node's output, a graph input or initializer,
    of its own graph or of an enclosing one (a subgraph sees the names defined before the
    node that holds it).  A subgraph's inputs and initializers may shadow outer names."""
    _check_ssa(graph, None, None, filename)


def _check_ssa(graph: onnx.GraphProto, parent: _Scope | None, where: str | None,
               filename: str) -> None:
    scope = _Scope(parent)

    def fail(message: str) -> PirError:
        return PirError(message, file=filename)

    for kind, values in (("input", graph.input), ("output", graph.output)):
        for k, vi in enumerate(values):
            if not vi.name:
                raise fail(f"graph {kind} {k}{_in(where)} has no name")
    for vi in graph.input:
        if vi.name in scope.names:
            raise fail(f"graph input {quoted(vi.name)}{_in(where)} is declared twice")
        scope.names[vi.name] = f"graph input {quoted(vi.name)}"
    initializers = set()
    for t in graph.initializer:
        if not t.name:
            raise fail(f"an initializer{_in(where)} has no name")
        if t.name in initializers:
            raise fail(f"initializer {quoted(t.name)}{_in(where)} is defined twice")
        initializers.add(t.name)
        # An initializer may share a graph input's name: it is that input's default value.
        scope.names.setdefault(t.name, f"initializer {quoted(t.name)}")
    for i, node in enumerate(graph.node):
        loc = node_label(node, i)
        # The node's subgraphs see the names defined so far, not the node's own outputs.
        for attr, g in subgraphs(node):
            _check_ssa(g, scope, f"subgraph {quoted(attr)} of {loc}", filename)
        for out in node.output:
            if not out:
                continue  # an optional output left out
            earlier = scope.find(out)
            if earlier is not None:
                raise fail(f"{loc}{_in(where)}: output {quoted(out)} is already defined by "
                           f"{earlier} (a value may be defined once: ONNX graphs are in SSA form)")
            scope.names[out] = loc


# -- dims ------------------------------------------------------------------------------------

def dims_error(dims: list, itemsize: int, what: str) -> str | None:
    """What is wrong with ``dims`` (ints for static dims, anything else for symbolic or
    unknown ones) of a tensor of ``itemsize``-byte elements, or None: more than MAX_RANK of
    them, a negative one, or static dims whose element count or byte size overflows int64
    (then no value of the symbolic dims but 0 makes a tensor, and strides overflow anyway)."""
    if len(dims) > MAX_RANK:
        return f"{what} has {len(dims)} dims, more than the {MAX_RANK} a tensor may have"
    static = [d for d in dims if isinstance(d, int)]
    for d in static:
        if d < 0:
            return f"{what}: dim {d} is negative"
    n = 1
    for d in static:
        n *= d
    text = "[" + ", ".join(str(d) if isinstance(d, int) else "?" for d in dims) + "]"
    if n > INT64_MAX:
        return f"{what}: shape {text} has {n} elements, more than int64 can count"
    if n * itemsize > INT64_MAX:
        return f"{what}: shape {text} takes {n * itemsize} bytes, more than int64 can count"
    return None


def check_dims(model: onnx.ModelProto, filename: str) -> None:
    """The dims of every tensor (initializers, tensor attributes) and of every declared type
    (graph inputs, outputs, value_info), in every graph, before shape inference or a
    converter sees them.  Symbolic dims stay symbolic; only static ones are checked."""
    from pir.frontends.onnx.importer import dtype_from_onnx

    def itemsize(elem_type: int) -> int:
        try:
            return dtype_from_onnx(elem_type).itemsize
        except PirError:
            return 1  # an unsupported element type is reported where it is used

    def check(dims: list, elem_type: int, what: str) -> None:
        message = dims_error(dims, itemsize(elem_type), what)
        if message:
            raise PirError(message, file=filename)

    for graph, where in _walk(model.graph):
        for kind, values in (("graph input", graph.input), ("graph output", graph.output),
                             ("value_info", graph.value_info)):
            for vi in values:
                tt = vi.type.tensor_type
                if vi.type.HasField("tensor_type") and tt.HasField("shape"):
                    # a negative dim of a declared type is how exporters write an
                    # unknown one (type_from_onnx): only tensors' dims must be >= 0
                    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0
                            else None for d in tt.shape.dim]
                    check(dims, tt.elem_type, f"{kind} {quoted(vi.name)}{_in(where)}")
        for t in graph.initializer:
            check(list(t.dims), t.data_type, f"tensor {quoted(t.name)}{_in(where)}")
        for i, node in enumerate(graph.node):
            for a in node.attribute:
                tensors = ([a.t] if a.HasField("t") else []) + list(a.tensors)
                for t in tensors:
                    check(list(t.dims), t.data_type,
                          f"{node_label(node, i)}{_in(where)}: attribute {quoted(a.name)}")

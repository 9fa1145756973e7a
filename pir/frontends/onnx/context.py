"""What a converter sees of one ONNX node: its inputs, attributes, output types, and a way to
emit ops that carry the node's names and location."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import numpy_helper

from pir.errors import PirError
from pir.ir.core import Block, Operation, Region, Value
from pir.ir.typerules import const_value
from pir.ir.dimexpr import DimExpr, MinMax
from pir.ir.types import TensorType, Type
from pir.ir.verifier import types_compatible
from pir.limits import INT64_MAX, checked_numel

if TYPE_CHECKING:
    from pir.frontends.onnx.importer import GraphImporter

__all__ = ["NodeContext", "node_loc", "node_label", "quoted", "shown"]

#: How much of a name from the file a message shows.
_SHOWN_CHARS = 200


def shown(text: str) -> str:
    """A string from the model as a message shows it: unprintable characters escaped, so
    that an error stays one line, and cut short when very long."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= _SHOWN_CHARS else out[:_SHOWN_CHARS] + "..."


def quoted(text: str) -> str:
    return f"'{shown(text)}'"


def node_loc(node: onnx.NodeProto, index: int) -> str:
    """How errors and locations name a node: its name, else its op type and first output."""
    return node.name or f"{node.op_type}:{node.output[0] if node.output else index}"


def node_label(node: onnx.NodeProto, index: int) -> str:
    """A node as error messages name it: ``ONNX node 'name' (OpType)``."""
    return f"ONNX node {quoted(node_loc(node, index))} ({shown(node.op_type)})"


class NodeContext:
    """The converter's view of one node.

    ``ctx.input(i)`` is the value of input ``i`` (``None`` when absent or empty);
    ``ctx.const_input(i)`` its value as an array when it is known at import time;
    ``ctx.attr(name, default)`` an attribute as a Python value (tensors as numpy arrays,
    strings decoded, graphs as ``GraphProto``); ``ctx.emit(OpClass, *operands, **attrs)``
    builds an op whose results take the node's output names, types and location.
    """

    def __init__(self, graph: GraphImporter, node: onnx.NodeProto, index: int):
        self.graph = graph
        self.node = node
        self.index = index
        self.op_type = node.op_type
        self.domain = node.domain if node.domain != "ai.onnx" else ""
        self.opset = graph.opset(self.domain)
        self.loc = node_loc(node, index)
        self._attrs = {a.name: a for a in node.attribute}
        self._emitted = 0

    # -- inputs and attributes ---------------------------------------------------------------

    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    def input(self, i: int) -> Value | None:
        if i >= len(self.node.input) or not self.node.input[i]:
            return None
        return self.graph.lookup(self.node.input[i], self)

    def inputs(self) -> list[Value | None]:
        return [self.input(i) for i in range(len(self.node.input))]

    def const_input(self, i: int) -> np.ndarray | None:
        return const_value(self.input(i))

    def has_attr(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        a = self._attrs.get(name)
        if a is None:
            return default
        if a.ref_attr_name:
            raise self.error(f"attribute {quoted(name)} refers to a function attribute, "
                             "unsupported")
        try:
            v = onnx.helper.get_attribute_value(a)
        except (ValueError, TypeError):  # no type, or one onnx does not know
            raise self.error(f"attribute {quoted(name)} has no value of a known type "
                             f"(type {a.type})") from None
        try:
            if a.type == onnx.AttributeProto.STRING:
                return v.decode("utf-8")
            if a.type == onnx.AttributeProto.STRINGS:
                return [s.decode("utf-8") for s in v]
        except UnicodeDecodeError:
            raise self.error(f"attribute {quoted(name)} is not valid UTF-8") from None
        if a.type == onnx.AttributeProto.TENSOR:
            return self.graph.importer.tensor_to_array(v)
        if a.type == onnx.AttributeProto.INTS:
            return [int(x) for x in v]
        if a.type == onnx.AttributeProto.FLOATS:
            return [float(x) for x in v]
        return v

    def required_attr(self, name: str) -> Any:
        """``attr(name)`` of an attribute the node must have."""
        if name not in self._attrs:
            raise self.error(f"missing required attribute '{name}'")
        return self.attr(name)

    def error(self, message: str) -> PirError:
        return PirError(f"ONNX node {quoted(self.loc)} ({shown(self.op_type)}): {message}",
                        file=self.graph.importer.filename)

    # -- outputs -----------------------------------------------------------------------------

    @property
    def num_outputs(self) -> int:
        """The number of outputs the node produces (trailing empty names dropped)."""
        n = len(self.node.output)
        while n and not self.node.output[n - 1]:
            n -= 1
        return n

    def output_present(self, i: int) -> bool:
        return i < len(self.node.output) and bool(self.node.output[i])

    def out_type(self, i: int = 0) -> TensorType | None:
        """The type ONNX shape inference found for output ``i``, if any."""
        if not self.output_present(i):
            return None
        return self.graph.inferred_type(self.node.output[i])

    def emit(self, cls: type[Operation], *operands: Any, result_types: list[Type] | None = None,
             outputs: list[int] | None = None, regions: tuple[Region, ...] = (),
             **attrs: Any) -> Operation:
        """Build and insert ``cls``.  Its results are named after the node's outputs listed in
        ``outputs`` (default: the first ones in order); types come from the op's type rule,
        merged with ONNX's shape inference, unless ``result_types`` is given."""
        self._check_operands(cls, operands)
        op = cls.build(*operands, result_types=[], loc=self.loc, regions=regions, **attrs)
        # The op's required attributes are the ones the node must have given (most have
        # ONNX's names); checked here, so that the error names the node.
        for key, adef in op.signature.attrs.items():
            if adef.required and key not in op.attributes:
                raise self.error(f"missing required attribute '{key}'")
        if result_types is None:
            result_types = self._merge_types(op, outputs)
        self._check_sizes(result_types)
        op.set_results(result_types, self._names(len(result_types), outputs))
        if op.signature.results_need_segments and op.result_segments is None:
            raise self.error(f"{cls.name} has optional results: pass result_segments")
        self.graph.builder.insert(op)
        self._emitted += 1
        return op

    def value(self, cls: type[Operation], *operands: Any, **kwargs: Any) -> Value:
        """``emit`` a one-result op and return its result."""
        op = self.emit(cls, *operands, **kwargs)
        if not op.results:  # no type rule result and no output for ONNX's inference to type
            raise self.error(f"{cls.name} has no result: the node has no output")
        return op.results[0]

    def _check_sizes(self, types: list[Type]) -> None:
        """A result no tensor can be (a Pad of 2**58 x 2**58) is an error naming the node,
        not a type the printer writes and the parser then refuses (pir.limits)."""
        for i, t in enumerate(types):
            shape = getattr(t, "shape", None)
            if shape is None:
                continue
            static = [d for d in shape if isinstance(d, int)]
            try:
                n = checked_numel(static, f"result {i}")
            except PirError as e:
                raise self.error(e.message) from None
            if n * t.dtype.itemsize > INT64_MAX:
                raise self.error(f"result {i}: shape {static} takes {n * t.dtype.itemsize} "
                                 "bytes, more than int64 can count")

    def _check_operands(self, cls: type[Operation], operands: tuple) -> None:
        """An empty input ("") among the values of a variadic operand is an error naming the
        operand (the op itself would only see a None where a value belongs)."""
        for d, v in zip(cls.signature.operands, operands):
            if d.variadic and isinstance(v, (list, tuple)) and any(x is None for x in v):
                raise self.error(f"operand '{d.name}' of {cls.name} has an empty input name "
                                 "among its values")

    def temp(self, cls: type[Operation], *operands: Any, **kwargs: Any) -> Value:
        """An intermediate value of a multi-op expansion: named after the node's first output
        with a suffix, typed by the op's own type rule only."""
        op = cls.build(*operands, loc=self.loc, **kwargs)
        base = self.node.output[0] if self.node.output else self.loc
        for r in op.results:
            r.name = f"{base}.{self._emitted}"
            self._emitted += 1
        self.graph.builder.insert(op)
        return op.results[0]

    def constant(self, array: np.ndarray | Any, dtype=None) -> Value:
        """A constant value (inline when small, a resource when large)."""
        arr = np.asarray(array, dtype=dtype)
        base = self.node.output[0] if self.node.output else self.loc
        name = f"{base}.c{self._emitted}"
        self._emitted += 1
        return self.graph.importer.constant(self.graph.builder, arr, name, self.loc)

    def subgraph(self, attr_name: str, yield_cls: type[Operation],
                 arg_types: list[Type | None] | None = None) -> Region:
        """Convert the graph attribute ``attr_name`` into a one-block region.

        The block's arguments are the subgraph's inputs; it ends with ``yield_cls`` of the
        subgraph's outputs.  The subgraph may use any value of the enclosing graphs.
        ``arg_types`` are the types the op passes in, for inputs ONNX leaves untyped."""
        from pir.frontends.onnx.importer import GraphImporter, type_from_onnx

        graph = self.attr(attr_name)
        if graph is None:
            raise self.error(f"missing graph attribute '{attr_name}'")
        if not isinstance(graph, onnx.GraphProto):
            raise self.error(f"attribute '{attr_name}' is not a graph")
        types, names = [], []
        for k, i in enumerate(graph.input):
            t = type_from_onnx(i.type, f"subgraph input {quoted(i.name)}")
            if t is None and arg_types is not None and k < len(arg_types):
                t = arg_types[k]
            if t is None:
                t = self.graph.inferred_type(i.name)
            if t is None:
                raise self.error(f"subgraph input {quoted(i.name)} has no known type")
            types.append(t)
            names.append(i.name)
        block = Block(types, names)
        inner = GraphImporter(self.graph.importer, self.graph, block)
        for arg in block.args:
            inner.values[arg.name] = arg
        outs = inner.convert_graph(graph)
        block.append(yield_cls.build(outs, loc=self.loc))
        return Region([block])

    def inline_subgraph(self, attr_name: str) -> list[Value]:
        """Convert the graph attribute ``attr_name`` (a graph without inputs) into ops of the
        current block, after those already there; returns its outputs."""
        from pir.frontends.onnx.importer import GraphImporter

        graph = self.attr(attr_name)
        if not isinstance(graph, onnx.GraphProto):
            raise self.error(f"attribute '{attr_name}' is not a graph")
        if len(graph.input):
            raise self.error(f"graph attribute '{attr_name}' takes inputs")
        inner = GraphImporter(self.graph.importer, self.graph, self.graph.block)
        return inner.convert_graph(graph)

    def _names(self, n: int, outputs: list[int] | None) -> list[str | None]:
        idx = outputs if outputs is not None else list(range(n))
        names = []
        for i in idx:
            names.append(self.node.output[i] if i < len(self.node.output) and self.node.output[i]
                         else None)
        return names

    def _merge_types(self, op: Operation, outputs: list[int] | None) -> list[Type]:
        try:
            inferred = op.run_type_rule()
        except PirError as e:
            inferred = None
            why = e.message
        idx = outputs if outputs is not None else list(range(len(inferred or self.node.output)))
        onnx_types = [self.out_type(i) for i in idx]
        if inferred is None:
            if any(t is None for t in onnx_types):
                raise self.error(f"cannot infer the type of its outputs: {why}")
            return onnx_types
        inputs = self.graph.importer.input_symbols
        merged = [merge_types(ours, theirs, inputs) for ours, theirs in zip(inferred, onnx_types)]
        for k, (ours, theirs, kept) in enumerate(zip(inferred, onnx_types, merged)):
            for i, (a, b, c) in enumerate(zip(*(getattr(t, "shape", None) or ()
                                                 for t in (ours, theirs, kept)))):
                if a is not None and b is not None and a != b:
                    self.note(f"output {k} dim {i}: the type rule gives {a}, ONNX's "
                              f"value_info {b}; kept {c}")
        return merged

    def note(self, text: str) -> None:
        """A decision the import made at this node, for ``pir import --explain``."""
        self.graph.importer.notes.append(f"{self.loc} ({self.op_type}): {text}")


def merge_types(ours: Type, theirs: Type | None, inputs: frozenset = frozenset()) -> Type:
    """Combine our type rule's result with ONNX's inference, dim by dim, keeping the most
    precise: a static size from either, else ONNX's symbol, else ours.  ONNX names the dims
    it cannot know ``unk__N``; such a placeholder never replaces a symbol our rule found."""
    if theirs is None or not isinstance(ours, TensorType) or not isinstance(theirs, TensorType):
        return ours
    if not types_compatible(ours, theirs):
        return ours  # our rule ran on folded constants ONNX did not see; trust it
    if ours.shape is None and theirs.shape is not None:
        # Our rule cannot tell the rank (a Squeeze without axes of symbolic dims): ONNX's
        # shape is taken, except that a dim it names by an input's symbol stays unknown.
        # That equality is the exporter's guess from the sizes it traced (an AECMOS
        # model's Squeeze declared [batch_size] returns [2] for a batch of 1), and a run
        # would hold the program to it.
        return TensorType(ours.dtype, tuple(None if isinstance(d, str) and d in inputs else d
                                            for d in theirs.shape))
    if theirs.shape is None:
        return ours
    return TensorType(ours.dtype, tuple(merge_dims(a, b, inputs)
                                        for a, b in zip(ours.shape, theirs.shape)))


def merge_dims(ours, theirs, inputs: frozenset = frozenset()):
    """One dim of :func:`merge_types`.  An expression our rule computed from the inputs,
    or one of the input symbols themselves (``inputs``), wins over anything ONNX says (its
    value_info may name the same value another way, ``Squeeze175_dim_0`` for the batch, or
    guess wrong); ONNX's symbol wins over ours only where ours is a mere placeholder or
    another name for a dim neither side can compute."""
    if isinstance(ours, int) or theirs is None or ours == theirs:
        return ours
    if ours is None:
        return theirs
    if theirs in _clamped(ours):
        # our rule clamps (a slice's end: min(seq, 64)) and ONNX's data propagation says
        # which side holds, as ONNX Runtime assumes: the slice stays within its input
        return theirs
    if isinstance(theirs, int):
        return theirs
    if isinstance(ours, DimExpr) or _is_placeholder(theirs) or ours in inputs:
        return ours
    return theirs


def _clamped(d) -> tuple:
    """The arguments of ``d`` when it is one ``min``/``max`` (a clamp), else ()."""
    if isinstance(d, DimExpr) and len(d.terms) == 1:
        (mono, coeff), = d.terms
        if coeff == 1 and len(mono) == 1 and isinstance(mono[0], MinMax):
            return mono[0].args
    return ()


def _is_placeholder(d) -> bool:
    return isinstance(d, str) and d.startswith("unk__")


def array_from_tensor(t: onnx.TensorProto) -> np.ndarray:
    return numpy_helper.to_array(t)

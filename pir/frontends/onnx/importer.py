"""ONNX model -> ``nn`` dialect module.

The importer checks the whole model first (every unsupported op is listed in one error),
runs ONNX shape inference for output types, turns initializers into constants (small ones
inline, large ones into the resource section), converts nodes through the converter table
(:mod:`pir.frontends.onnx.registry`), and folds ops whose inputs are all known at import time,
so that shape arithmetic on static shapes becomes constants while symbolic dims stay symbolic.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Callable, Iterator

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper

from pir.errors import PirError
from pir.frontends.onnx import validate
from pir.frontends.onnx.dims import (bind_shape, fresh_symbols, is_unknown_param, named_symbols,
                                     parse_exporter_expr, symbol_for)
from pir.frontends.onnx.context import NodeContext, quoted, shown
from pir.frontends.onnx.registry import CONVERTERS, DEFAULT_DOMAINS, load_all
from pir.ir.builder import Builder
from pir.ir.dialects import load_dialects
from pir.ir.core import Block, BlockArgument, Value
from pir.ir.dialects.builtin import ConstantOp, ModuleOp, make_constant
from pir.ir.dialects.func import FuncOp, ReturnOp
from pir.ir import dimexpr
from pir.ir.types import DType, TensorType
from pir.limits import check_tensor_bytes

__all__ = ["import_model", "load_model", "load_model_bytes", "MIN_OPSET", "MAX_OPSET"]

MIN_OPSET = 7
MAX_OPSET = onnx.defs.onnx_opset_version()
#: Ops whose inputs are all constant are evaluated at import when the result is this small.
FOLD_LIMIT = 1 << 16

_ELEM_TYPES = {
    onnx.TensorProto.FLOAT: DType.F32, onnx.TensorProto.DOUBLE: DType.F64,
    onnx.TensorProto.FLOAT16: DType.F16, onnx.TensorProto.BFLOAT16: DType.BF16,
    onnx.TensorProto.INT8: DType.I8, onnx.TensorProto.INT16: DType.I16,
    onnx.TensorProto.INT32: DType.I32, onnx.TensorProto.INT64: DType.I64,
    onnx.TensorProto.UINT8: DType.U8, onnx.TensorProto.UINT16: DType.U16,
    onnx.TensorProto.UINT32: DType.U32, onnx.TensorProto.UINT64: DType.U64,
    onnx.TensorProto.BOOL: DType.BOOL, onnx.TensorProto.STRING: DType.STRING,
    onnx.TensorProto.COMPLEX64: DType.C64, onnx.TensorProto.COMPLEX128: DType.C128,
    onnx.TensorProto.FLOAT8E4M3FN: DType.F8E4M3FN, onnx.TensorProto.FLOAT8E4M3FNUZ: DType.F8E4M3FNUZ,
    onnx.TensorProto.FLOAT8E5M2: DType.F8E5M2, onnx.TensorProto.FLOAT8E5M2FNUZ: DType.F8E5M2FNUZ,
    onnx.TensorProto.INT4: DType.I4, onnx.TensorProto.UINT4: DType.U4,
}
for _name, _dt in (("FLOAT4E2M1", DType.F4E2M1FN), ("FLOAT8E8M0", DType.F8E8M0FNU),
                   ("INT2", DType.I2), ("UINT2", DType.U2)):
    if hasattr(onnx.TensorProto, _name):
        _ELEM_TYPES[getattr(onnx.TensorProto, _name)] = _dt


def dtype_from_onnx(elem_type) -> DType:
    try:
        return _ELEM_TYPES[elem_type]
    except (KeyError, TypeError):
        try:
            name = onnx.TensorProto.DataType.Name(elem_type) if elem_type else "UNDEFINED"
        except (ValueError, TypeError):
            name = repr(elem_type)  # not an ONNX element type code at all
        raise PirError(f"unsupported ONNX element type {name}") from None


def type_from_onnx(tp: onnx.TypeProto, what: str = "a value",
                   fresh: Callable[[int], str] | None = None) -> TensorType | None:
    """The tensor type ``tp`` declares (None for a non-tensor or an undefined element type);
    a PirError, naming ``what``, for dims no tensor can have (validate.dims_error).  A dim
    the exporter left unknown (``?``, ``-1``, empty) is ``fresh(position)`` when ``fresh``
    is given (a graph input's dims), else unknown; see :mod:`pir.frontends.onnx.dims`."""
    if not tp.HasField("tensor_type") or not tp.tensor_type.elem_type:
        return None
    tt = tp.tensor_type
    try:
        dtype = dtype_from_onnx(tt.elem_type)
    except PirError as e:
        raise PirError(f"{what}: {e.message}") from None
    if not tt.HasField("shape"):
        return TensorType(dtype, None)
    dims = []
    for pos, d in enumerate(tt.shape.dim):
        # exporters write an unknown dim of a declared type as -1 (or 0 fields): unknown,
        # unlike a tensor's own dims, where a negative one is an error (onnx.checker)
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param") and not is_unknown_param(d.dim_param):
            expr = parse_exporter_expr(d.dim_param)
            dims.append(expr if expr is not None else symbol_for(d.dim_param))
        else:
            dims.append(None)
        if dims[-1] is None and fresh is not None:
            dims[-1] = fresh(pos)
    problem = validate.dims_error(dims, dtype.itemsize, what)
    if problem:
        raise PirError(problem)
    return TensorType(dtype, tuple(dims))


def load_model(path: str) -> onnx.ModelProto:
    """Read an ONNX file without its external data (the importer reads that itself, checked)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise PirError(f"cannot read model: {e.strerror}", file=path) from None
    return load_model_bytes(data, path)


def load_model_bytes(data: bytes, path: str = "<stdin>") -> onnx.ModelProto:
    """Parse a serialized ONNX model; ``path`` names it in errors."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise PirError(f"not a valid ONNX model (the protobuf does not parse: {e})", file=path) from None
    if not model.HasField("graph") or model.ir_version == 0:
        raise PirError("not an ONNX model (no graph or IR version)", file=path)
    return model


def _walk_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _walk_graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _walk_graphs(g)


def _without_weights(model: onnx.ModelProto, limit: int = 1024) -> onnx.ModelProto:
    """A copy of ``model`` whose large initializers keep their type and dims but no data.
    Shape inference serialises the model it is given to C++ and parses the result back, which
    for real weights (hundreds of MB) cost more than the rest of the import; it reads the
    values of small (shape-like) initializers only, so those are kept."""
    light = onnx.ModelProto()
    light.CopyFrom(model)
    for t in light.graph.initializer:
        if int(np.prod(t.dims, dtype=object)) > limit:  # exact: dims are checked, not small
            for f in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                      "uint64_data", "string_data"):
                t.ClearField(f)
    return light


class ModelImporter:
    def __init__(self, model: onnx.ModelProto, filename: str, base_dir: str | None):
        self.model = model
        self.filename = filename
        self.base_dir = base_dir
        self.opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version
                       for o in model.opset_import}
        self.module: ModuleOp | None = None
        self.inferred: dict[str, TensorType] = {}
        # the decisions `pir import --explain` prints: where our type rule and ONNX's
        # value_info disagreed and which dim was kept, and each If decided at import
        self.notes: list[str] = []
        # the symbols of the inputs (set by run): where a type rule finds one, it beats
        # ONNX's name for the same dim
        self.input_symbols: frozenset[str] = frozenset()

    # -- checks ------------------------------------------------------------------------------

    def check(self) -> None:
        load_dialects()
        load_all()
        # Strings first: every later message prints names, which must be str.  Then what
        # holds whatever the opset: each value defined once, dims that make tensors.
        validate.check_strings(self.model, self.filename)
        validate.check_ssa(self.model.graph, self.filename)
        validate.check_dims(self.model, self.filename)
        converted = {d for d, _ in CONVERTERS} | set(DEFAULT_DOMAINS)
        for o in self.model.opset_import:
            if o.version < 1 and o.domain in converted:  # others' versions mean nothing here
                raise PirError(f"the model imports opset {o.version} of "
                               f"{'domain ' + quoted(o.domain) if o.domain else 'ONNX'}: opset "
                               "versions start at 1", file=self.filename)
        ver = self.opsets.get("")
        if ver is None:
            # A model of other domains only (the preview training ops' tests) needs none.
            if any(n.domain in DEFAULT_DOMAINS for g in _walk_graphs(self.model.graph)
                   for n in g.node):
                raise PirError("the model imports no version of the default ONNX domain",
                               file=self.filename)
        elif ver > MAX_OPSET:
            raise PirError(f"ONNX opset {ver} is newer than this pir knows (up to {MAX_OPSET})",
                           file=self.filename)
        elif ver < MIN_OPSET:
            self._check_ancient_opset(ver)
        missing: dict[tuple[str, str], list[str]] = {}
        for g in _walk_graphs(self.model.graph):
            for i, node in enumerate(g.node):
                dom = "" if node.domain in DEFAULT_DOMAINS else node.domain
                if (dom, node.op_type) not in CONVERTERS:
                    missing.setdefault((dom, node.op_type), []).append(node.name or f"#{i}")
        self._check_against_schemas()
        validate.check_nodes(self.model, self.opsets, self.filename)
        if missing:
            parts = []
            for (dom, op), names in sorted(missing.items()):
                nodes = ", ".join(quoted(n) for n in names[:5])
                nodes += " ..." if len(names) > 5 else ""
                version = self.opsets.get(dom, "?")
                parts.append(f"{shown(dom) + '::' if dom else ''}{shown(op)} (opset {version}; "
                             f"{len(names)} node{'s' if len(names) > 1 else ''}: {nodes})")
            raise PirError(f"unsupported ONNX ops: {'; '.join(parts)}", file=self.filename)

    def _check_against_schemas(self) -> None:
        """Attributes and inputs that ONNX does not define for a node's op at the model's
        opset are errors: ignoring them would compute something else than the model says
        (ReduceSum-18 takes its axes as an input; an `axes` attribute means nothing)."""
        problems = []
        for g in _walk_graphs(self.model.graph):
            for i, node in enumerate(g.node):
                if node.domain not in DEFAULT_DOMAINS:
                    continue
                where = f"{node.op_type} {quoted(node.name or '#' + str(i))}"
                try:
                    schema = onnx.defs.get_schema(node.op_type, self.opsets.get("", 1), "")
                except onnx.defs.SchemaError:
                    if onnx.defs.has(node.op_type):  # defined only by later opsets
                        first = onnx.defs.get_all_schemas_with_history()
                        since = min((s.since_version for s in first
                                     if s.name == node.op_type and s.domain == ""), default="?")
                        problems.append(f"{where}: ONNX defines {node.op_type} from opset "
                                        f"{since}, the model imports opset "
                                        f"{self.opsets.get('', 1)}")
                    continue  # unknown ops are reported by the caller
                extra = sorted({a.name for a in node.attribute} - set(schema.attributes))
                if extra:
                    problems.append(f"{where} has attributes ONNX does not define for "
                                    f"{node.op_type}-{schema.since_version}: "
                                    f"{', '.join(shown(a) for a in extra)}")
                if len(node.input) > schema.max_input:
                    problems.append(f"{where} has {len(node.input)} inputs, "
                                    f"{node.op_type}-{schema.since_version} takes at most "
                                    f"{schema.max_input}")
        if problems:
            listed = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more"
                                                if len(problems) > 8 else "")
            raise PirError(f"the model does not follow the ONNX spec: {listed}",
                           file=self.filename)

    def _check_ancient_opset(self, ver: int) -> None:
        """Opsets before 7 are accepted only when every op in the model is defined there
        exactly as at opset 7 (the oldest semantics the converters handle)."""
        changed = set()
        for g in _walk_graphs(self.model.graph):
            for node in g.node:
                if node.domain not in DEFAULT_DOMAINS:
                    continue
                try:
                    old = onnx.defs.get_schema(node.op_type, ver).since_version
                    new = onnx.defs.get_schema(node.op_type, MIN_OPSET).since_version
                except onnx.defs.SchemaError:
                    continue  # an unknown op: reported by the unsupported-op check
                if old != new:
                    changed.add(node.op_type)
        if changed:
            raise PirError(f"ONNX opset {ver} is too old: {', '.join(sorted(changed))} changed "
                           f"meaning by opset {MIN_OPSET}, the oldest supported",
                           file=self.filename)

    # -- tensors -----------------------------------------------------------------------------

    def tensor_to_array(self, t: onnx.TensorProto) -> np.ndarray:
        """The value of an initializer or tensor attribute.  Its dims are checked, and its
        size against the memory limit, before anything is allocated or read."""
        what = f"tensor {quoted(t.name)}"
        try:
            dtype = dtype_from_onnx(t.data_type)
        except PirError as e:
            raise PirError(f"{what}: {e.message}", file=self.filename) from None
        problem = validate.dims_error(list(t.dims), dtype.itemsize, what)
        if problem:
            raise PirError(problem, file=self.filename)
        try:
            nbytes = check_tensor_bytes(t.dims, dtype.itemsize, what)
        except PirError as e:
            raise PirError(e.message, file=self.filename) from None
        if t.data_location == onnx.TensorProto.EXTERNAL:
            return self._external(t, what, dtype, nbytes)
        try:
            arr = numpy_helper.to_array(t)
        except Exception as e:  # onnx raises a variety of errors for malformed tensors
            raise PirError(f"{what} cannot be read: {e}", file=self.filename) from None
        if arr.dtype.kind in "SU":
            arr = arr.astype(object)
        return arr

    def _external(self, t: onnx.TensorProto, what: str, dtype: DType, nbytes: int) -> np.ndarray:
        """Data from a file beside the model.  A model from a stranger must not read files
        outside its own folder: the location must be relative and, symlinks resolved, stay
        inside it; and it must be a regular file (a FIFO or device would block or never end)."""
        def fail(message: str) -> PirError:
            return PirError(f"{what}: {message}", file=self.filename)

        info = {e.key: e.value for e in t.external_data}
        loc = info.get("location", "")
        if self.base_dir is None:
            raise PirError(f"{what} has external data, but the model was not read from a file",
                           file=self.filename)
        if not loc:
            raise fail("has external data without a location")
        if "\0" in loc:
            raise fail(f"external data location {loc!r} contains a NUL character")
        base = os.path.realpath(self.base_dir)
        path = os.path.realpath(os.path.join(base, loc))
        if os.path.isabs(loc) or os.path.commonpath([base, path]) != base:
            raise fail(f"external data path {quoted(loc)} escapes the model's folder; refused")
        offset = self._external_int(info, "offset", 0, what)
        length = self._external_int(info, "length", nbytes, what)
        if length != nbytes:
            raise fail(f"external data length {length} does not match the {nbytes} bytes of "
                       f"its {list(t.dims)} {dtype.value} data")
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise fail(f"external data {quoted(loc)} is not a regular file")
            size = max(st.st_size - offset, 0)
            if size < nbytes:
                raise fail(f"external data {quoted(loc)} holds {size} bytes from offset "
                           f"{offset}, {nbytes} expected")
            with open(path, "rb") as f:
                f.seek(offset)
                raw = f.read(nbytes)
        except OSError as e:
            raise fail(f"cannot read external data {quoted(loc)}: {e.strerror}") from None
        if len(raw) != nbytes:
            raise fail(f"external data {quoted(loc)} holds {len(raw)} bytes, {nbytes} expected")
        shape = tuple(int(d) for d in t.dims)
        return np.frombuffer(raw, dtype=dtype.numpy.newbyteorder("<")).reshape(shape)

    def _external_int(self, info: dict[str, str], key: str, default: int, what: str) -> int:
        """An offset or length of external data: a non-negative decimal integer."""
        text = info.get(key)
        if text is None:
            return default
        if not (text.isascii() and text.isdigit()):
            raise PirError(f"{what}: external data {key} {text!r} is not a non-negative integer",
                           file=self.filename)
        return int(text)

    def constant(self, builder: Builder, arr: np.ndarray, name: str, loc: str | None) -> Value:
        return builder.insert(make_constant(self.module, arr, name, loc)).results[0]

    # -- the model ---------------------------------------------------------------------------

    def run(self) -> ModuleOp:
        self.check()
        try:
            inferred = onnx.shape_inference.infer_shapes(_without_weights(self.model),
                                                         strict_mode=False, data_prop=True)
        except Exception:  # inference is a hint: a model it cannot handle still imports
            inferred = self.model
        self.inferred = {}
        for g in _walk_graphs(inferred.graph):
            for vi in list(g.value_info) + list(g.output) + list(g.input):
                try:
                    t = type_from_onnx(vi.type)
                except PirError:
                    t = None
                if t is not None:
                    self.inferred[vi.name] = t
        name = self.model.graph.name or "model"
        attrs = {"pir.source": os.path.basename(self.filename)}
        self.module = ModuleOp.create(symbol_for(name) or "model", attrs)
        graph = self.model.graph
        arg_types = []
        inits = {t.name for t in graph.initializer}
        real_inputs = [i for i in graph.input if i.name not in inits]
        taken = named_symbols(real_inputs)
        for i in real_inputs:
            try:
                t = type_from_onnx(i.type, f"graph input {quoted(i.name)}",
                                   fresh_symbols(i.name, taken))
            except PirError as e:
                raise PirError(e.message, file=self.filename) from None
            if t is None:
                raise PirError(f"graph input {quoted(i.name)} is not a tensor with a known "
                               "element type", file=self.filename)
            arg_types.append(t)
        arg_types = self._pin(real_inputs, arg_types)
        self.input_symbols = frozenset(d for t in arg_types for d in t.shape or ()
                                       if isinstance(d, str))
        fn = FuncOp.create("main", arg_types, [], [i.name for i in real_inputs])
        self.module.body.block.append(fn)
        gi = GraphImporter(self, None, fn.entry)
        for arg in fn.entry.args:
            gi.values[arg.name] = arg
        outs = self._named_outputs(gi, gi.convert_graph(graph), [o.name for o in graph.output])
        ret = ReturnOp.build(outs, loc=None)
        fn.entry.append(ret)
        from pir.ir.types import FunctionType

        fn.attributes["function_type"] = FunctionType(tuple(arg_types), tuple(v.type for v in outs))
        self._drop_unused_constants(fn)
        return self.module

    def _pin(self, inputs, types: list[TensorType]) -> list[TensorType]:
        """The input types with the pinned symbols (``pins``, and those ``static`` shapes
        determine) replaced by their sizes; ONNX's inferred types too, where they name
        them."""
        pins = dict(getattr(self, "pins", {}))
        static = getattr(self, "static", {})
        names = [i.name for i in inputs]
        for name in static:
            if name not in names:
                raise PirError(f"--static gives input {quoted(name)}, which the model does not "
                               f"take (inputs: {', '.join(map(quoted, names)) or 'none'})",
                               file=self.filename)
        for name, t in zip(names, types):
            if name in static:
                pins.update(bind_shape(name, t, static[name], pins))
        symbols = set().union(*(dimexpr.symbols(d) for t in types for d in t.shape or ()))
        unknown = sorted(set(pins) - symbols)
        if unknown:
            raise PirError(f"--dim {unknown[0]}: the model's inputs have no dim of that name "
                           f"(their symbols: {', '.join(sorted(symbols)) or 'none'})",
                           file=self.filename)
        if not pins:
            return types

        def pin(t):
            if not isinstance(t, TensorType) or t.shape is None:
                return t
            return t.with_shape(dimexpr.substitute(d, pins) for d in t.shape)

        self.inferred = {k: pin(t) for k, t in self.inferred.items()}
        return [pin(t) for t in types]

    @staticmethod
    def _named_outputs(gi: GraphImporter, outs: list[Value], names: list[str]) -> list[Value]:
        """The function's output names are its returned values' names: an output whose value
        has another name (a graph input passed through) or is returned twice gets a copy."""
        from pir.ir.dialects.nn.identity import Identity

        named, seen = [], set()
        for v, name in zip(outs, names):
            if v.name != name or v in seen:
                v = gi.builder.insert(Identity.build(v, loc=name, result_names=[name])).results[0]
            seen.add(v)
            named.append(v)
        return named

    def _drop_unused_constants(self, fn: FuncOp) -> None:
        """Initializers no node reads, and constants that folding made dead, are removed."""
        from pir.passes.dce import drop_unused_resources

        for op in [o for o in fn.walk() if isinstance(o, ConstantOp)]:
            if not op.results[0].uses:
                op.erase()
        drop_unused_resources(self.module)

    def opset(self, domain: str) -> int:
        return self.opsets.get(domain, 1)


class GraphImporter:
    """Converts one ONNX graph (the main graph or a subgraph) into a block."""

    def __init__(self, importer: ModelImporter, parent: GraphImporter | None, block: Block):
        self.importer = importer
        self.parent = parent
        self.block = block
        self.builder = Builder(block)
        self.values: dict[str, Value] = {}

    def opset(self, domain: str) -> int:
        return self.importer.opset(domain)

    def inferred_type(self, name: str) -> TensorType | None:
        return self.importer.inferred.get(name)

    def lookup(self, name: str, ctx: NodeContext | None = None) -> Value:
        g: GraphImporter | None = self
        while g is not None:
            v = g.values.get(name)
            if v is not None:
                return v
            g = g.parent
        where = f"node {quoted(ctx.loc)} ({shown(ctx.op_type)})" if ctx else "the graph"
        raise PirError(f"{where} uses {quoted(name)}, which no node, input or initializer "
                       "defines", file=self.importer.filename)

    def convert_graph(self, graph: onnx.GraphProto) -> list[Value]:
        for t in graph.initializer:
            if t.name not in self.values:
                arr = self.importer.tensor_to_array(t)
                self.values[t.name] = self.importer.constant(self.builder, arr, t.name, t.name)
        for t in graph.sparse_initializer:
            raise PirError(f"sparse initializer {quoted(t.values.name)} is not supported",
                           file=self.importer.filename)
        for i, node in enumerate(graph.node):
            self.convert_node(node, i)
        outs = []
        for o in graph.output:
            outs.append(self.lookup(o.name))
        return outs

    def convert_node(self, node: onnx.NodeProto, index: int) -> None:
        ctx = NodeContext(self, node, index)
        dom = ctx.domain
        conv = CONVERTERS[(dom, node.op_type)]
        start = len(self.block.ops)
        try:
            results = conv(ctx)
        except PirError as e:
            if e.message.startswith("ONNX node"):
                raise
            raise ctx.error(e.message) from None
        results = list(results)
        for name, v in zip(node.output, results):
            if name and v is not None:
                # A pass-through (Identity of a graph input) must not rename the input.
                if v.name != name and not isinstance(v, BlockArgument):
                    v.name = name
                self.values[name] = v
        for k, name in enumerate(node.output):
            if name and (k >= len(results) or results[k] is None):
                raise ctx.error(f"output {k} ({quoted(name)}) is not produced by the converter")
        self._fold(start)

    def _fold(self, start: int) -> None:
        """Evaluate the node's new ops whose operands are all constants (shape arithmetic,
        mostly), with the fold pass's own helper."""
        from pir.frontends.onnx.shape_facts import fold_static_shape_part
        from pir.passes.fold import fold_in_place

        module = self.importer.module
        for op in list(self.block.ops[start:]):
            results = list(op.results)
            if op.name == "nn.dequantize_linear":
                continue  # quantized weights stay integers (decompose's qdq.py reads them)
            new = fold_in_place(module, op, FOLD_LIMIT) or fold_static_shape_part(module, op)
            for r, v in zip(results, new or ()):
                if r.name is not None and self.values.get(r.name) is r:
                    self.values[r.name] = v  # later nodes refer to the folded value


def import_model(model: onnx.ModelProto | str, filename: str | None = None,
                 dims: dict[str, int] | None = None,
                 static: dict[str, tuple[int, ...]] | None = None,
                 notes: list[str] | None = None) -> ModuleOp:
    """Import an ONNX model (a ``ModelProto`` or a path) into a verified module.

    ``dims`` pins symbols of the graph inputs to sizes (``{"N": 1}``; the names pir gives
    them, fresh ones like ``x_2`` included); ``static`` gives input shapes by input name and
    pins every symbol they determine, so that the program is imported with static shapes."""
    from pir.ir.verifier import verify_module

    base_dir = None
    if isinstance(model, str):
        filename = filename or model
        base_dir = os.path.dirname(os.path.abspath(model))
        model = load_model(model)
    importer = ModelImporter(model, filename or "<model>", base_dir)
    importer.pins = dict(dims or {})
    importer.static = dict(static or {})
    module = importer.run()
    if notes is not None:
        notes.extend(importer.notes)
    try:
        verify_module(module)
    except PirError as e:
        if e.file is None:  # name the model the bad op came from
            e.file = filename or "<model>"
        raise
    return module

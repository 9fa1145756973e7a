"""Writes the checked-in seed corpora and dictionaries under tests/fuzz/ (``python -m
pir.testing.fuzz seeds``).  Deterministic: run it again after changing it, and commit what it
writes.

- ``seeds/pir``: about 20 small programs from the tests' ``.pir`` inputs (comments dropped,
  each under 4 KB, every one accepted and round-tripping), picked greedily for the most
  distinct ops and syntax, plus two printed imports of the ONNX seeds (with a resource
  section);
- ``seeds/onnx``: small models made with ``onnx.helper`` below (one has external data in
  ``weights.bin``, the file the fuzz harness provides);
- ``seeds/inputs``: ``.npy``/``.npz`` files and ``--dim`` lines;
- ``dicts/<target>.dict``: libFuzzer dictionaries.
"""

from __future__ import annotations

import glob
import io
import os
import re
import sys
import zipfile

import numpy as np

__all__ = ["main", "onnx_models"]

MAX_SEED = 4096
N_PIR = 20


def _root() -> str:
    from pir.testing.fuzz.engine import repo_root

    return repo_root()


def _clean(folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    for p in glob.glob(os.path.join(folder, "*")):
        os.unlink(p)


# -- .pir --------------------------------------------------------------------------------------

_FEATURES = ("resources {", "^bb", "dense<[", "dense<", "resource<", "loc(", "attributes",
             "!dist.", "%\"", "func.call", "index", "?x", "operand_segments", "true", "false",
             "nan", "inf", "e-", "@", "[", "->")


def _features(text: str) -> set[str]:
    ops = set(re.findall(r"\b([a-z_]+\.[a-z_0-9]+)\(", text))
    types = set(re.findall(r"x(i\d+|f\d+|bf16|u\d+|c\d+)>", text))
    return ops | {f"type:{t}" for t in types} | {f for f in _FEATURES if f in text}


def pir_seeds(onnx_dir: str) -> dict[str, bytes]:
    from pir.testing.fuzz import harness

    harness.preload("pir")
    candidates = []
    root = _root()
    for p in sorted(glob.glob(os.path.join(root, "tests", "**", "*.pir"), recursive=True)):
        if "/fuzz/" in p:
            continue
        with open(p, "rb") as f:
            raw = f.read()
        text = b"\n".join(ln for ln in raw.splitlines() if not ln.lstrip().startswith(b"//"))
        text = text.strip(b"\n") + b"\n"
        if len(text) > MAX_SEED:
            continue
        if harness.run_one("pir", text, timeout=10).kind != "ok":
            continue  # the tests of errors: the fuzzer makes its own
        candidates.append((os.path.basename(p), text, _features(text.decode())))
    chosen: dict[str, bytes] = {}
    covered: set[str] = set()
    while len(chosen) < N_PIR and candidates:
        # the most new features per byte, then the name (deterministic)
        best = max(candidates, key=lambda c: (len(c[2] - covered) / (200 + len(c[1])),
                                              -len(c[1]), c[0]))
        if not best[2] - covered:
            break
        candidates.remove(best)
        covered |= best[2]
        chosen[best[0]] = best[1]
    # printed imports: the importer's style, with resource sections
    for name in ("mlp", "if_loop"):
        with open(os.path.join(onnx_dir, f"{name}.onnx"), "rb") as f:
            data = f.read()
        text = _import_and_print(data)
        if text and len(text) <= MAX_SEED:
            chosen[f"imported_{name}.pir"] = text
    return chosen


def _import_and_print(data: bytes) -> bytes | None:
    from pir.frontends.onnx.importer import import_model, load_model_bytes
    from pir.testing.fuzz.harness import _print

    try:
        return _print(import_model(load_model_bytes(data, "<seed>"), filename="seed"))
    except Exception as e:  # a seed that does not import is reported, not written
        print(f"seeds: cannot import a seed: {e}", file=sys.stderr)
        return None


# -- .onnx -------------------------------------------------------------------------------------

def onnx_models() -> dict[str, "onnx.ModelProto"]:  # noqa: F821
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def model(nodes, inputs, outputs, inits=(), name="g", opset=18, value_info=(), extra=()):
        g = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits),
                         value_info=list(value_info))
        m = h.make_model(g, opset_imports=[h.make_opsetid("", opset), *extra],
                         producer_name="pir-fuzz-seeds")
        m.ir_version = 8
        return m

    vi = h.make_tensor_value_info
    out: dict[str, onnx.ModelProto] = {}

    out["add"] = model([h.make_node("Add", ["x", "y"], ["z"], name="add")],
                       [vi("x", T.FLOAT, ["B", 3]), vi("y", T.FLOAT, [3])],
                       [vi("z", T.FLOAT, ["B", 3])])

    out["mlp"] = model(
        [h.make_node("MatMul", ["x", "w1"], ["h"], name="/fc1/MatMul"),
         h.make_node("Add", ["h", "b1"], ["h1"], name="/fc1/Add"),
         h.make_node("Relu", ["h1"], ["r"], name="relu"),
         h.make_node("Gemm", ["r", "w2", "b2"], ["logits"], transB=1, name="fc2"),
         h.make_node("Softmax", ["logits"], ["probs"], axis=-1, name="softmax")],
        [vi("x", T.FLOAT, ["B", 8])], [vi("probs", T.FLOAT, ["B", 4])],
        [nh.from_array(f32(8, 6), "w1"), nh.from_array(f32(6), "b1"),
         h.make_tensor("w2", T.FLOAT, [4, 6], f32(4, 6).ravel().tolist()),  # float_data
         nh.from_array(f32(4), "b2")])

    out["conv_pool"] = model(
        [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1],
                     name="conv"),
         h.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn"),
         h.make_node("MaxPool", ["n"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
         h.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
         h.make_node("Flatten", ["g"], ["y"], axis=1, name="flat")],
        [vi("x", T.FLOAT, [1, 2, 4, 4])], [vi("y", T.FLOAT, [1, 3])],
        [nh.from_array(f32(3, 2, 3, 3), "w"), nh.from_array(f32(3), "b"),
         nh.from_array(np.ones(3, np.float32), "s"), nh.from_array(np.zeros(3, np.float32), "bb"),
         nh.from_array(np.zeros(3, np.float32), "m"), nh.from_array(np.ones(3, np.float32), "v")])

    out["shape_ops"] = model(
        [h.make_node("Shape", ["x"], ["s"], name="shape"),
         h.make_node("Gather", ["s", "i0"], ["b"], axis=0, name="gather"),
         h.make_node("Unsqueeze", ["b", "ax0"], ["b1"], name="unsq"),
         h.make_node("Concat", ["b1", "m1"], ["shp"], axis=0, name="concat"),
         h.make_node("Reshape", ["x", "shp"], ["r"], name="reshape"),
         h.make_node("Transpose", ["r"], ["t"], perm=[1, 0], name="transpose"),
         h.make_node("Slice", ["t", "st", "en", "ax0"], ["sl"], name="slice"),
         h.make_node("Cast", ["sl"], ["y"], to=T.DOUBLE, name="cast")],
        [vi("x", T.FLOAT, ["N", 2, 3])], [vi("y", T.DOUBLE, None)],
        [nh.from_array(np.array(0, np.int64), "i0"), nh.from_array(np.array([0], np.int64), "ax0"),
         nh.from_array(np.array([-1], np.int64), "m1"),
         nh.from_array(np.array([1], np.int64), "st"),
         nh.from_array(np.array([5], np.int64), "en")])

    then_g = h.make_graph([h.make_node("Neg", ["x"], ["a"], name="neg")], "then", [],
                          [vi("a", T.FLOAT, [2])])
    else_g = h.make_graph([h.make_node("Abs", ["x"], ["b"], name="abs")], "else", [],
                          [vi("b", T.FLOAT, [2])])
    body = h.make_graph(
        [h.make_node("Add", ["acc", "x"], ["acc2"], name="body_add"),
         h.make_node("Identity", ["cond"], ["cond2"], name="body_id")],
        "body", [vi("i", T.INT64, []), vi("cond", T.BOOL, []), vi("acc", T.FLOAT, [2])],
        [vi("cond2", T.BOOL, []), vi("acc2", T.FLOAT, [2])])
    out["if_loop"] = model(
        [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
         h.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
         h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if"),
         h.make_node("Loop", ["trip", "", "y"], ["z"], body=body, name="loop")],
        [vi("x", T.FLOAT, [2])], [vi("z", T.FLOAT, [2])],
        [nh.from_array(np.array(0.0, np.float32), "zero"),
         nh.from_array(np.array(3, np.int64), "trip"),
         nh.from_array(np.arange(20, dtype=np.float32), "unused_big")])  # a resource entry

    out["norm_act"] = model(
        [h.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1, epsilon=1e-5,
                     name="ln"),
         h.make_node("Gelu", ["n"], ["a"], name="gelu"),
         h.make_node("Clip", ["a", "lo", ""], ["c"], name="clip"),
         h.make_node("LeakyRelu", ["c"], ["l"], alpha=0.1, name="lrelu"),
         h.make_node("ReduceMean", ["l", "axes"], ["y"], keepdims=1, name="mean")],
        [vi("x", T.FLOAT, ["B", "S", 4])], [vi("y", T.FLOAT, None)],
        [nh.from_array(np.ones(4, np.float32), "g"), nh.from_array(np.zeros(4, np.float32), "b"),
         nh.from_array(np.array(-1.0, np.float32), "lo"),
         nh.from_array(np.array([1], np.int64), "axes")], opset=20)

    out["pad_resize_einsum"] = model(
        [h.make_node("Pad", ["x", "pads", "cv"], ["p"], mode="constant", name="pad"),
         h.make_node("Resize", ["p", "", "scales"], ["r"], mode="nearest", name="resize"),
         h.make_node("Einsum", ["r", "r"], ["e"], equation="bcij,bcik->bcjk", name="einsum"),
         h.make_node("Where", ["cond", "e", "e"], ["y"], name="where")],
        [vi("x", T.FLOAT, [1, 1, 2, 2]), vi("cond", T.BOOL, [1])], [vi("y", T.FLOAT, None)],
        [nh.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
         nh.from_array(np.array(0.5, np.float32), "cv"),
         nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])

    out["constants"] = model(
        [h.make_node("Constant", [], ["c"], value=nh.from_array(np.arange(6, dtype=np.int32)
                                                                .reshape(2, 3)), name="const"),
         h.make_node("ConstantOfShape", ["shp"], ["z"],
                     value=nh.from_array(np.array([1.5], np.float32)), name="cos"),
         h.make_node("Cast", ["c"], ["cf"], to=T.FLOAT, name="cast"),
         h.make_node("Mul", ["cf", "z"], ["m"], name="mul"),
         h.make_node("ArgMax", ["m"], ["y"], axis=1, keepdims=0, name="argmax"),
         h.make_node("TopK", ["m", "k"], ["tv", "ti"], axis=-1, name="topk")],
        [], [vi("y", T.INT64, [2]), vi("tv", T.FLOAT, [2, 2]), vi("ti", T.INT64, [2, 2])],
        [nh.from_array(np.array([2, 3], np.int64), "shp"),
         nh.from_array(np.array([2], np.int64), "k")])

    ext = nh.from_array(np.zeros((4, 4), np.float32), "w_ext")
    ext.ClearField("raw_data")
    ext.data_location = T.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "64"), ("length", "64")):
        e = ext.external_data.add()
        e.key, e.value = k, v
    out["external_data"] = model(
        [h.make_node("MatMul", ["x", "w_ext"], ["y"], name="mm")],
        [vi("x", T.FLOAT, [2, 4])], [vi("y", T.FLOAT, [2, 4])], [ext])

    out["int_bool_ops"] = model(
        [h.make_node("Equal", ["a", "b"], ["e"], name="eq"),
         h.make_node("Not", ["e"], ["ne"], name="not"),
         h.make_node("Cast", ["ne"], ["ni"], to=T.INT64, name="cast"),
         h.make_node("CumSum", ["ni", "ax"], ["cs"], name="cumsum"),
         h.make_node("Expand", ["cs", "shp"], ["ex"], name="expand"),
         h.make_node("Tile", ["ex", "reps"], ["t"], name="tile"),
         h.make_node("Squeeze", ["t", "ax1"], ["y"], name="squeeze")],
        [vi("a", T.INT64, [3]), vi("b", T.INT64, [3])], [vi("y", T.INT64, None)],
        [nh.from_array(np.array(0, np.int64), "ax"),
         nh.from_array(np.array([1, 3], np.int64), "shp"),
         nh.from_array(np.array([1, 2], np.int64), "reps"),
         nh.from_array(np.array([0], np.int64), "ax1")])

    out["split_lstm"] = model(
        [h.make_node("Split", ["x", "sp"], ["s0", "s1"], axis=2, name="split"),
         h.make_node("LSTM", ["s0", "W", "R"], ["Y", "Yh"], hidden_size=2, name="lstm"),
         h.make_node("Sigmoid", ["Yh"], ["y"], name="sig")],
        [vi("x", T.FLOAT, [3, 1, 4])], [vi("y", T.FLOAT, None), vi("s1", T.FLOAT, None)],
        [nh.from_array(np.array([2, 2], np.int64), "sp"), nh.from_array(f32(1, 8, 2), "W"),
         nh.from_array(f32(1, 8, 2), "R")])

    out["old_opset"] = model(
        [h.make_node("Unsqueeze", ["x"], ["u"], axes=[0], name="unsq"),
         h.make_node("ReduceMax", ["u"], ["y"], axes=[2], keepdims=0, name="rmax")],
        [vi("x", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [1, 2])], opset=11)
    return out


# -- inputs ------------------------------------------------------------------------------------

def input_seeds() -> dict[str, bytes]:
    def npy(arr, **kw) -> bytes:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, arr, **kw)
        return buf.getvalue()

    def npz(compress: bool, **arrays) -> bytes:
        buf = io.BytesIO()
        (np.savez_compressed if compress else np.savez)(buf, **arrays)
        return buf.getvalue()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    out = {
        "x_f32.npy": npy(x),
        "i_i64.npy": npy(np.arange(4, dtype=np.int64).reshape(2, 2)),
        "b_bool.npy": npy(np.array([[True, False]])),
        "h_f16.npy": npy(np.array([1, 2, 3], np.float16)),
        "scalar_f64.npy": npy(np.array(3.5)),
        "empty.npy": npy(np.zeros((0, 4), np.float32)),
        "fortran.npy": npy(np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))),
        "big_endian.npy": npy(np.arange(3, dtype=">f4")),
        "v2_header.npy": npy(np.arange(2, dtype=np.uint8), version=(2, 0)),
        "unicode.npy": npy(np.array(["ab", "c"])),
        "all.npz": npz(False, x=x, i=np.zeros((3, 2), np.int64), b=np.ones((2, 2), bool),
                       h=np.zeros(3, np.float16)),
        "compressed.npz": npz(True, x=x),
        "dims_b.txt": b"B=4",
        "dims_bn.txt": b"B=3\nN=5",
        "dims_zero.txt": b"B=0\nN=1",
        "dims_none.txt": b"",
    }
    with zipfile.ZipFile(buf := io.BytesIO(), "w") as z:  # a member that is not an array
        z.writestr("x.npy", npy(x))
        z.writestr("notes.txt", "hello")
    out["mixed_members.npz"] = buf.getvalue()
    return out


# -- dictionaries ------------------------------------------------------------------------------

def _dict_line(tok: bytes) -> str:
    s = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\x{b:02x}" for b in tok)
    return f'"{s}"'


def _write_dict(path: str, tokens) -> None:
    seen, lines = set(), []
    for t in tokens:
        t = t.encode() if isinstance(t, str) else t
        if t and t not in seen:
            seen.add(t)
            lines.append(_dict_line(t))
    with open(path, "w") as f:
        f.write("# written by python -m pir.testing.fuzz seeds\n" + "\n".join(lines) + "\n")


def pir_tokens() -> list:
    from pir.ir.core import OPS
    from pir.ir.dialects import load_dialects
    from pir.ir.types import DType

    load_dialects()
    toks = ["module", "module @m {", "func.func", "func.func @main(", "func.return", "attributes",
            "attributes {", "loc(", "loc(\"", "resources {", "resources {\n", "sha256=",
            "base64\"", "tensor<", "tensor<?x", "tensor<Bx", "x?x", "dense<", "dense<[",
            "resource<\"", "index", "->", "-> (", ") -> ()", " : ", "%", "%\"", "@", "^bb0",
            "^bb1", "^bb0(", "):", "true", "false", "inf", "-inf", "nan", "1e-05", "-0.0",
            "1e308", "4294967296", "9223372036854775807", "-9223372036854775808", "0x",
            "{", "}", "(", ")", "[", "]", "<", ">", ",", "=", ":", "?", "//", "\n",
            '"', '\\"', "\\\\", "\\n", "\\t", "\\u00e9", "\\ud800", "\\udc00", "\\x41", "\\",
            "\t", "\r", "\x00", "\xc3\xa9".encode("latin-1"), b"\xff", b"\xed\xa0\x80",
            "!dist.tensor<", "mesh", "placements", "operand_segments", "result_segments",
            "value", "func.call", "@main", "sym_name"]
    toks += [d.value if isinstance(d.value, str) else str(d) for d in DType]
    toks += [str(d).split(".")[-1].lower() for d in DType]
    attrs = set()
    for name in sorted(OPS):
        toks.append(name)
        sig = getattr(OPS[name], "signature", None)
        attrs |= set(getattr(sig, "attrs", {}) or {})
    toks += sorted(attrs)
    return toks


def onnx_tokens() -> list:
    import onnx

    from pir.frontends.onnx.registry import CONVERTERS, load_all

    load_all()
    toks = sorted({t for (_, t) in CONVERTERS})
    attrs = set()
    for t in toks:
        try:
            attrs |= set(onnx.defs.get_schema(t).attributes)
        except onnx.defs.SchemaError:
            pass
    toks += sorted(attrs)
    toks += ["ai.onnx", "com.microsoft", "ai.onnx.ml", "location", "offset", "length",
             "checksum", "weights.bin", "../", "/etc/passwd", "B", "N", "batch", "unk__0",
             b"\x80\x80\x80\x80\x10", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
             b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", b"\x00", b"\x01", b"\x7f"]
    return toks


def input_tokens() -> list:
    return [b"\x93NUMPY\x01\x00", b"\x93NUMPY\x02\x00", b"\x93NUMPY\x03\x00", "{'descr': '",
            "'fortran_order': ", "'shape': (", "), }", "<f4", "<f8", "<f2", "<i8", "<i4",
            "|b1", "|u1", "|O", ">f4", "<U3", "|S2", "|V8", "<c8", "<M8[s]", "[('a', '<f4')]",
            "True", "False", "(0,)", "(4294967296, 4294967296)", "(-1,)", b"PK\x03\x04",
            b"PK\x01\x02", b"PK\x05\x06", "x.npy", "i.npy", "b.npy", "h.npy", "B=", "N=", "=",
            "\n", "2", "0", "1000000000000", "4294967296", "-1", "+1", " 1", "0x10", "1_000",
            "\xb2", "\u0663", "\uff11", "\u2460", "\udcff", "\ud800"]


def main(argv: list[str]) -> int:
    import onnx

    fz = os.path.join(_root(), "tests", "fuzz")
    onnx_dir = os.path.join(fz, "seeds", "onnx")
    _clean(onnx_dir)
    for name, m in onnx_models().items():
        data = m.SerializeToString()
        assert len(data) < MAX_SEED, (name, len(data))
        with open(os.path.join(onnx_dir, f"{name}.onnx"), "wb") as f:
            f.write(data)
    pir_dir = os.path.join(fz, "seeds", "pir")
    seeds = pir_seeds(onnx_dir)
    _clean(pir_dir)
    for name, data in seeds.items():
        with open(os.path.join(pir_dir, name), "wb") as f:
            f.write(data)
    in_dir = os.path.join(fz, "seeds", "inputs")
    _clean(in_dir)
    for name, data in input_seeds().items():
        with open(os.path.join(in_dir, name), "wb") as f:
            f.write(data)
    os.makedirs(os.path.join(fz, "dicts"), exist_ok=True)
    _write_dict(os.path.join(fz, "dicts", "pir.dict"),
                [t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass")
                 for t in pir_tokens()])
    _write_dict(os.path.join(fz, "dicts", "onnx.dict"),
                [t if isinstance(t, bytes) else t.encode() for t in onnx_tokens()])
    _write_dict(os.path.join(fz, "dicts", "inputs.dict"),
                [t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass")
                 for t in input_tokens()])
    # check what was written: every seed accepted by its target
    from pir.testing.fuzz import harness

    bad = 0
    for target, folder in (("pir", pir_dir), ("onnx", onnx_dir), ("inputs", in_dir)):
        harness.preload(target)
        for p in sorted(glob.glob(os.path.join(folder, "*"))):
            with open(p, "rb") as f:
                out = harness.run_one(target, f.read())
            status = "ok" if out.kind == "ok" else (
                f"{out.kind}: {out.type} {out.location} {out.message}")
            if out.kind != "ok":
                bad += out.is_finding
            print(f"{target:6s} {os.path.getsize(p):5d} {os.path.relpath(p, fz)}: {status}")
    del onnx
    return 1 if bad else 0

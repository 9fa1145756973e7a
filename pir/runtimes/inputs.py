"""Program inputs: read from .npz/.npy files, or made up (seeded) from the signature."""

from __future__ import annotations

import zipfile

import numpy as np

from pir.errors import PirError, UsageError
from pir.ir.dialects.func import FuncOp
from pir.ir.types import DType, TensorType
from pir.runtimes.aligned import aligned

__all__ = ["load_inputs", "random_inputs", "parse_dims"]


def _load_array(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except EOFError:  # numpy's word for an empty file
        raise PirError("cannot read array: the file is empty", file=path) from None
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise PirError(f"cannot read array: {e}", file=path) from None


def load_inputs(npz: str | None, pairs: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Inputs from an ``.npz`` (keys are input names) and ``NAME=FILE.npy`` pairs, in
    64-byte aligned memory (pir.runtimes.aligned): compiled kernels then read them where
    they are, and ``--repeat`` does not time a copy of each input per run."""
    out = _load_inputs(npz, pairs)
    return {k: aligned(v) for k, v in out.items()}


def _load_inputs(npz: str | None, pairs: tuple[str, ...]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    if npz:
        data = _load_array(npz)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise PirError("expected an .npz archive of named arrays", file=npz)
        out.update({k: data[k] for k in data.files})
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--input expects NAME=FILE.npy, got '{pair}'")
        arr = _load_array(path)
        if not isinstance(arr, np.ndarray):
            raise PirError("expected a single .npy array", file=path)
        out[name] = arr
    return out


def parse_dims(pairs: tuple[str, ...]) -> dict[str, int]:
    dims = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not value.isdigit():
            raise UsageError(f"--dim expects SYMBOL=SIZE, got '{pair}'")
        dims[name] = int(value)
    return dims


def random_inputs(fn: FuncOp, seed: int = 0, dims: dict[str, int] | None = None,
                  default_dim: int = 2) -> dict[str, np.ndarray]:
    """Seeded inputs for every argument of ``fn``: floats ~ N(0, 1), integers in [0, 10),
    booleans fair; a symbolic dim takes its size from ``dims`` (default 2)."""
    rng = np.random.default_rng(seed)
    dims = dims or {}
    out = {}
    for a in fn.args:
        t = a.type
        if not isinstance(t, TensorType) or t.shape is None:
            raise PirError(f"input '{a.name}' has no known shape: give it with --input")
        shape = tuple(d if isinstance(d, int) else dims.get(d, default_dim) if d else default_dim
                      for d in t.shape)
        if t.dtype.is_float:
            arr = rng.standard_normal(shape).astype(t.dtype.numpy)
        elif t.dtype is DType.BOOL:
            arr = rng.random(shape) < 0.5
        elif t.dtype.is_int:
            arr = rng.integers(0, 10, shape).astype(t.dtype.numpy)
        else:
            raise PirError(f"cannot make up values of type {t} for input '{a.name}'")
        out[a.name] = aligned(arr)
    return out

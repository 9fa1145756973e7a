"""Program inputs: read from .npz/.npy files, or made up (seeded) from the signature.

Input files and ``--dim`` sizes come from the command line, so they are checked before
anything is allocated: an ``.npy`` header (on its own, or a member of an ``.npz``) may
declare any shape and dtype in a few bytes, and a ``--dim`` any size.  What a header
declares must be a numeric array within :func:`pir.limits.max_tensor_bytes` and must fit in
the bytes that follow it; pickled (object) arrays are refused without being unpickled.
"""

from __future__ import annotations

import os
import re
import stat
import tokenize
import zipfile
import zlib

import numpy as np
from numpy.lib import format as npy_format

from pir.errors import PirError, UsageError
from pir.ir.dialects.func import FuncOp
from pir.ir.types import DType, TensorType
from pir.limits import INT64_MAX, check_tensor_bytes
from pir.runtimes.aligned import aligned

__all__ = ["load_inputs", "random_inputs", "parse_dims", "check_dims"]

_ZIP_MAGIC = b"PK"
#: What reading a corrupt archive or array may raise, besides our own PirErrors: zipfile
#: raises RuntimeError for an encrypted member and NotImplementedError for an unknown
#: compression method, zlib.error for corrupt deflate data.
_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, RuntimeError,
                NotImplementedError)


def load_inputs(npz: str | None, pairs: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Inputs from an ``.npz`` (keys are input names) and ``NAME=FILE.npy`` pairs, in
    64-byte aligned memory (pir.runtimes.aligned): compiled kernels then read them where
    they are, and ``--repeat`` does not time a copy of each input per run."""
    out = _load_inputs(npz, pairs)
    return {k: aligned(v) for k, v in out.items()}


def _load_inputs(npz: str | None, pairs: tuple[str, ...]) -> dict[str, np.ndarray]:
    # The command line first: its usage errors come before any file is read.
    files: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--input expects NAME=FILE.npy, got '{pair}'")
        if name in files:
            raise UsageError(f"input '{name}' is given twice: --input {name}={files[name]} and "
                             f"--input {pair}")
        files[name] = path
    out = _load_npz(npz) if npz else {}
    for name in files:
        if name in out:
            raise UsageError(f"input '{name}' is given twice: in --inputs {npz} and by "
                             f"--input {name}={files[name]}")
    for name, path in files.items():
        out[name] = _load_npy(path, f"input '{name}'")
    return out


def _open(path: str):
    try:
        return open(path, "rb")
    except OSError as e:
        raise PirError(f"cannot read array: {e.strerror}", file=path) from None


def _load_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz archive by name, each checked (:func:`_check_header`) before its
    data is read."""
    with _open(path) as f:
        try:
            head = f.read(len(npy_format.MAGIC_PREFIX))
            f.seek(0)
            if not head:
                raise PirError("cannot read array: the file is empty", file=path)
            if not head.startswith(_ZIP_MAGIC):
                raise PirError("expected an .npz archive of named arrays", file=path)
            archive = zipfile.ZipFile(f)
        except _READ_ERRORS as e:
            raise PirError(f"cannot read array: {e}", file=path) from None
        out: dict[str, np.ndarray] = {}
        with archive:
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")  # np.savez adds it, as np.load drops it
                what = f"member '{name}'"
                if name in out:
                    raise PirError(f"{what} appears twice", file=path)
                try:
                    with archive.open(info) as member:
                        _check_header(member, what, info.file_size)
                    with archive.open(info) as member:
                        out[name] = npy_format.read_array(member, allow_pickle=False)
                except PirError as e:
                    raise PirError(e.message, file=path) from None
                except _READ_ERRORS as e:
                    raise PirError(f"{what}: {e}", file=path) from None
    return out


def _load_npy(path: str, what: str) -> np.ndarray:
    """The array of an .npy file, checked (:func:`_check_header`) before its data is read."""
    with _open(path) as f:
        try:
            head = f.read(len(npy_format.MAGIC_PREFIX))
            if not head:
                raise PirError("cannot read array: the file is empty", file=path)
            if head.startswith(_ZIP_MAGIC):
                raise PirError("expected a single .npy array", file=path)
            f.seek(0)
            st = os.fstat(f.fileno())
            _check_header(f, what, st.st_size if stat.S_ISREG(st.st_mode) else None)
            f.seek(0)
            return npy_format.read_array(f, allow_pickle=False)
        except PirError as e:
            raise PirError(e.message, file=path) from None
        except _READ_ERRORS as e:
            raise PirError(f"cannot read array: {e}", file=path) from None


def _check_header(f, what: str, size: int | None) -> None:
    """Read the .npy header at the start of ``f`` (a file of ``size`` bytes, None when it
    cannot be told) and check what it declares before the data is read: numpy would
    otherwise allocate whatever the header says, or unpickle an object array."""
    try:
        version = npy_format.read_magic(f)
    except ValueError:
        raise PirError(f"{what}: not an .npy array") from None
    if version not in ((1, 0), (2, 0)):
        # 3.0 only adds UTF-8 field names of structured dtypes, which are no tensors
        raise PirError(f"{what}: .npy format version {version[0]}.{version[1]} is not supported")
    # the header's length first: numpy reads (allocates) that many bytes before it looks at
    # them, and a 12-byte file may claim 4 GiB
    start = f.tell()
    width = 2 if version == (1, 0) else 4
    length = int.from_bytes(f.read(width), "little")
    if length > _MAX_HEADER or (size is not None and length > size - f.tell()):
        raise PirError(f"{what}: the .npy header claims {length} bytes, more than "
                       f"{'the file holds' if length <= _MAX_HEADER else _MAX_HEADER}")
    f.seek(start)
    try:
        if version == (1, 0):
            shape, _, dtype = npy_format.read_array_header_1_0(f)
        else:
            shape, _, dtype = npy_format.read_array_header_2_0(f)
    except (ValueError, SyntaxError, TypeError, tokenize.TokenError) as e:
        # numpy parses the header as a Python literal: anything else is a malformed header
        raise PirError(f"{what}: the .npy header is malformed ({type(e).__name__}: "
                       f"{str(e).splitlines()[0] if str(e) else ''})") from None
    if dtype.hasobject:
        raise PirError(f"{what}: holds Python objects (dtype {dtype}), which pir does not "
                       "unpickle: save numeric arrays")
    nbytes = check_tensor_bytes(shape, dtype.itemsize, what)
    if size is not None and nbytes > size - f.tell():
        raise PirError(f"{what}: the header declares {dtype}{list(shape)} ({nbytes} bytes), "
                       f"but only {size - f.tell()} bytes of data follow")


#: numpy's own bound on an .npy header (``max_header_size``), which it checks only after
#: reading the header
_MAX_HEADER = 10000

_DECIMAL = re.compile(r"[0-9]+")  # ASCII only: str.isdigit also takes '²' and '٣'


def parse_dims(pairs: tuple[str, ...]) -> dict[str, int]:
    """``SYMBOL=SIZE`` pairs (``--dim``) as a dict; malformed ones are usage errors."""
    dims: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--dim expects SYMBOL=SIZE, got '{pair}'")
        if not _DECIMAL.fullmatch(value):
            raise UsageError(f"--dim {name}: the size must be a non-negative decimal integer, "
                             f"got '{value}'")
        digits = value.lstrip("0") or "0"
        if len(digits) > len(str(INT64_MAX)) or int(digits) > INT64_MAX:
            raise UsageError(f"--dim {name}: the size {value} is more than int64 can hold")
        if name in dims:
            raise UsageError(f"--dim {name} is given twice")
        dims[name] = int(digits)
    return dims


def check_dims(fn: FuncOp, dims: dict[str, int]) -> dict[str, int]:
    """``dims`` when every symbol in it is a symbolic dim of an input of ``fn``; a usage
    error naming the symbols there are otherwise (a misspelt ``--dim`` would be ignored)."""
    known = sorted({d for a in fn.args if isinstance(a.type, TensorType) and a.type.shape
                    for d in a.type.shape if isinstance(d, str) and d})
    unknown = [name for name in dims if name not in known]
    if unknown:
        have = f"symbolic dims: {', '.join(known)}" if known else "they have no symbolic dims"
        raise UsageError(f"--dim {unknown[0]}: no input of @{fn.sym_name} has a dim named "
                         f"'{unknown[0]}' ({have})")
    return dims


def random_inputs(fn: FuncOp, seed: int = 0, dims: dict[str, int] | None = None,
                  default_dim: int = 2) -> dict[str, np.ndarray]:
    """Seeded inputs for every argument of ``fn``: floats ~ N(0, 1), integers in [0, 10),
    booleans fair; a symbolic dim takes its size from ``dims`` (default 2)."""
    rng = np.random.default_rng(seed)
    dims = check_dims(fn, dims or {})
    out = {}
    for a in fn.args:
        t = a.type
        if not isinstance(t, TensorType) or t.shape is None:
            raise PirError(f"input '{a.name}' has no known shape: give it with --input")
        shape = tuple(d if isinstance(d, int) else dims.get(d, default_dim) if d else default_dim
                      for d in t.shape)
        # Before allocating: the input itself, then the float64 or int64 values numpy's
        # generators draw before the cast (for a narrow dtype, the larger of the two).
        check_tensor_bytes(shape, np.dtype(t.dtype.numpy).itemsize, f"input '{a.name}'")
        check_tensor_bytes(shape, 8, f"input '{a.name}' (drawn as 8-byte values, then cast)")
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

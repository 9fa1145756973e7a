"""TVM's C calling convention from Python (ctypes), and the C loop that calls kernels.

Calling a compiled kernel through ``tvm_ffi`` from Python costs 1.5-2.5 us (argument
conversion, DLPack for each array); a kernel of a small model or of a recurrent step does
less work than that.  The callers here prepare a kernel's arguments once, as the
``TVMFFIAny`` values TVM's C ABI takes (tensor handles, pointers to ``DLTensor`` structures
whose data pointer they set before a run, integers), and ``native_loop.c``'s
``pir_run_loop`` calls the kernels in order, ``n`` times over: a scan's iterations
(pir.runtimes.tvm.native_loop) or, once, a run of a plan's steps
(pir.runtimes.tvm.native_plan).  The C file is compiled once per machine into the kernel
cache, with the compiler TVM links kernels with; where that fails, :func:`native_loops` is
None and the callers keep the Python path.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import tempfile

import numpy as np

import tvm_ffi

from pir.cache import private_dir

__all__ = ["ANY_INT", "ANY_TENSOR", "ANY_TENSOR_PTR", "CPU", "TVMFFIAny", "DLTensor",
           "Seq", "SEQ_ROWS", "SEQ_SWAP", "SEQ_PREVIOUS", "dl_dtype", "native_loops", "take_error"]

_SOURCE = pathlib.Path(__file__).with_name("native_loop.c")
SEQ_ROWS, SEQ_SWAP, SEQ_PREVIOUS = 0, 1, 2  # pir_seq's kinds (native_loop.c)
ANY_TENSOR_PTR, ANY_INT, ANY_TENSOR = 7, 1, 70  # TVMFFITypeIndex (tvm/ffi/c_api.h)
_DL_CODES = {"i": 0, "u": 1, "f": 2}  # DLDataTypeCode
_FFI_LIB = pathlib.Path(tvm_ffi.__file__).parent / "lib" / "libtvm_ffi.so"


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32),
                ("dtype", DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class TVMFFIAny(ctypes.Structure):  # TVMFFIAny: a type index, 4 bytes of padding, 8 of value
    _fields_ = [("type_index", ctypes.c_int32), ("zero_padding", ctypes.c_uint32),
                ("value", ctypes.c_uint64)]


class Seq(ctypes.Structure):  # pir_seq
    _fields_ = [("kind", ctypes.c_int32), ("reverse", ctypes.c_int32), ("of", ctypes.c_int32),
                ("base", ctypes.c_void_p), ("other", ctypes.c_void_p),
                ("stride", ctypes.c_int64)]


_LOADED: list = []  # [the C entry or None], once a process


def native_loops():
    """The compiled ``pir_run_loop`` and TVM's ``TVMFFIFunctionCall``, or None where the C
    file does not build here (every scan then runs through its plan, as before)."""
    if _LOADED:
        return _LOADED[0]
    _LOADED.append(None)
    from tvm.support import cc

    source = _SOURCE.read_text()
    include = pathlib.Path(tvm_ffi.__file__).parent / "include"
    key = hashlib.sha256((source + str(include)).encode()).hexdigest()[:16]
    path = private_dir("tvm") / f"native_loop-{key}.so"  # beside the kernels (executor)
    try:
        if not path.exists():
            fd, tmp = tempfile.mkstemp(prefix=".native_loop.", suffix=".so", dir=path.parent)
            os.close(fd)
            try:
                cc.create_shared(tmp, [str(_SOURCE)], options=["-O2", "-I", str(include)])
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        lib = ctypes.CDLL(str(path))
        ffi = ctypes.CDLL(str(_FFI_LIB))
    except (OSError, RuntimeError):
        return None  # no compiler, or one TVM cannot drive: the plans' path
    run = lib.pir_run_loop
    run.restype = ctypes.c_int
    run.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p,
                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    ffi.TVMFFIErrorMoveFromRaised.restype = None
    _LOADED[0] = (run, ctypes.cast(ffi.TVMFFIFunctionCall, ctypes.c_void_p), ffi)
    return _LOADED[0]


def dl_dtype(dtype: np.dtype) -> DType | None:
    code = _DL_CODES.get(dtype.kind)
    return None if code is None else DType(code, dtype.itemsize * 8, 1)


#: kDLCPU, device 0
CPU = Device(1, 0)


def take_error() -> None:
    """Clear the error a failed kernel call left raised in TVM's thread-local state (the
    caller reports the failure itself, naming the kernel)."""
    ffi = native_loops()[2]
    err = ctypes.c_void_p()
    ffi.TVMFFIErrorMoveFromRaised(ctypes.byref(err))
    if err.value:
        ffi.TVMFFIObjectDecRef(err)

"""How much an input may ask for: the bounds every reader and runtime checks before it
allocates.

A ``.pir`` or ``.onnx`` file may come from anyone, and a few bytes can name a tensor of 2**64
elements (``tensor<4294967296x4294967296xf32>``, an initializer whose dims multiply past
int64, a ``--dim B=10**12``).  Two bounds apply:

- **int64**: a shape whose element count, or byte size, does not fit in int64 is never a
  tensor (numpy, ONNX and every kernel index with int64), so it is an error wherever it
  appears, even in a type that nothing allocates;
- **memory**: data that pir is about to *make* (a resource, an initializer, a run's input or
  an intermediate of the reference runtime) may not exceed ``max_tensor_bytes()``: by
  default the machine's physical memory, since a larger request can only end in the OOM
  killer; ``pir --max-tensor-bytes N`` sets it for one command.

The limit is a context variable, set once by the CLI's root option (or by a library user
with :func:`tensor_bytes_limit`), and read where data is made; it is not a tuning knob.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
from typing import Callable, Iterable, Iterator

from pir.errors import PirError

__all__ = ["INT64_MAX", "MAX_NESTING", "max_tensor_bytes", "tensor_bytes_limit",
           "set_tensor_bytes_limit",
           "checked_numel", "check_tensor_bytes", "physical_memory"]

INT64_MAX = 2**63 - 1

#: How deep regions, attributes and dense literals may nest in a ``.pir`` file.  The
#: recursive-descent parser and printer use Python's stack; 200 levels is far beyond any
#: program (a model's deepest nn.if/nn.loop nesting is a handful) and well inside it.
MAX_NESTING = 200


@functools.lru_cache(maxsize=1)
def physical_memory() -> int:
    """This machine's physical memory in bytes (int64's maximum where it cannot be told)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return INT64_MAX


_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("pir_max_tensor_bytes",
                                                                   default=None)


def max_tensor_bytes() -> int:
    """The most bytes one tensor that pir makes may take."""
    limit = _LIMIT.get()
    return physical_memory() if limit is None else limit


@contextlib.contextmanager
def tensor_bytes_limit(limit: int | None) -> Iterator[None]:
    """Within the block, tensors pir makes may take at most ``limit`` bytes (None: the
    default, the machine's memory)."""
    if limit is not None and limit < 0:
        raise PirError(f"--max-tensor-bytes must not be negative, got {limit}")
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def set_tensor_bytes_limit(limit: int | None) -> Callable[[], None]:
    """Set the limit for this context (the CLI's root option: one command); returns the
    function that puts the previous one back."""
    if limit is not None and limit < 0:
        raise PirError(f"--max-tensor-bytes must not be negative, got {limit}")
    token = _LIMIT.set(limit)
    return lambda: _LIMIT.reset(token)


def checked_numel(shape: Iterable[int], what: str = "tensor") -> int:
    """The element count of a static ``shape``, or a PirError when a dim is negative or the
    count does not fit in int64.  Exact: Python integers, never a wrapping int64 product."""
    n = 1
    dims = [int(d) for d in shape]
    for d in dims:
        if d < 0:
            raise PirError(f"{what}: dim {d} is negative")
    for d in dims:
        n *= d
    if n > INT64_MAX:
        raise PirError(f"{what}: shape {_shape_text(dims)} has {n} elements, more than int64 "
                       "can count")
    return n


def check_tensor_bytes(shape: Iterable[int], itemsize: int, what: str = "tensor") -> int:
    """The byte size of a tensor of ``shape`` with ``itemsize``-byte elements that pir is
    about to make; a PirError when it overflows int64 or exceeds :func:`max_tensor_bytes`."""
    dims = [int(d) for d in shape]
    nbytes = checked_numel(dims, what) * itemsize
    if nbytes > INT64_MAX:
        raise PirError(f"{what}: shape {_shape_text(dims)} takes {nbytes} bytes, more than "
                       "int64 can count")
    limit = max_tensor_bytes()
    if nbytes > limit:
        raise PirError(f"{what}: shape {_shape_text(dims)} takes {_bytes_text(nbytes)}, more "
                       f"than the limit of {_bytes_text(limit)} (pir --max-tensor-bytes N)")
    return nbytes


def _shape_text(dims: list[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _bytes_text(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"

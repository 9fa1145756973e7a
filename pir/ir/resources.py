"""The resource section of a ``.pir`` file: large constants, lossless and content-hashed.

``resources { "key": f32[2,3] sha256=<hex> base64"<data>" ... }``: each entry holds the
array's little-endian bytes in C order, base64-encoded (with SIMD, by pybase64), and the
SHA-256 of those bytes, so a reader can tell a damaged entry from a good one.  The section
is read straight from the file's buffer, never through the tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

import numpy as np

from pir.errors import PirError
from pir.ir.types import DType

try:  # SIMD base64: weights of hundreds of MB must load and save at disk speed
    import pybase64 as _b64
except ImportError:  # pragma: no cover - the stdlib codec is correct, only slower
    import base64 as _b64

__all__ = ["write_resources", "read_resources", "resource_header"]

_RESOURCE_LINE = re.compile(
    rb'\s*("(?:[^"\\\n]|\\.)*")\s*:\s*([A-Za-z0-9]+)\[([0-9,]*)\]\s+sha256=([0-9a-f]{64})\s+base64"'
)


def resource_header(key: str, array: np.ndarray) -> str:
    dtype = DType.from_numpy(array.dtype)
    dims = ",".join(str(d) for d in array.shape)
    return f"{json.dumps(key, ensure_ascii=False)}: {dtype.value}[{dims}]"


def write_resources(resources: dict[str, np.ndarray], out: BinaryIO) -> None:
    """Write the section (nothing when there are no resources)."""
    if not resources:
        return
    out.write(b"resources {\n")
    for key, array in resources.items():
        data = _le_bytes(array)
        digest = hashlib.sha256(data).hexdigest()
        out.write(f"  {resource_header(key, array)} sha256={digest} base64\"".encode("utf-8"))
        out.write(_b64.b64encode(data))
        out.write(b'"\n')
    out.write(b"}\n")


def _le_bytes(array: np.ndarray) -> memoryview:
    if DType.from_numpy(array.dtype) is DType.STRING:
        raise TypeError("string tensors cannot be stored as resources")
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    array = np.ascontiguousarray(array)
    return memoryview(array.reshape(-1).view(np.uint8))


def read_resources(data, start: int, filename: str, first_line: int) -> dict[str, np.ndarray]:
    """Decode ``resources { ... }`` from ``data[start:]``.

    Base64 is decoded from zero-copy slices; each entry's SHA-256 is computed on a second
    thread (hashlib releases the GIL) while the next entry decodes, and checked at the end.
    """
    out: dict[str, np.ndarray] = {}
    hashes: list[tuple[str, int, str, Future]] = []
    view = memoryview(data)
    line = first_line

    def fail(msg: str, col: int = 1, at_line: int | None = None) -> PirError:
        return PirError(msg, file=filename, line=at_line or line, col=col)

    pos = data.find(b"{", start) + 1
    pos = data.find(b"\n", pos) + 1
    line += 1
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            while True:
                head = bytes(view[pos : pos + 64]).strip()  # a peek, never the whole section
                if head == b"}" or not head:
                    if head != b"}" or bytes(view[pos:]).strip() != b"}":
                        raise fail("the resource section is not closed with '}'")
                    break
                m = _RESOURCE_LINE.match(data, pos)
                if m is None:
                    raise fail("malformed resource entry: expected "
                               '"key": dtype[dims] sha256=<hex> base64"<data>"')
                key = json.loads(m.group(1))
                end = data.find(b'"', m.end())
                if end < 0:
                    raise fail(f'resource "{key}": the base64 data is not closed')
                try:
                    dtype = DType.parse(m.group(2).decode())
                    shape = tuple(int(d) for d in m.group(3).split(b",") if d)
                except ValueError as e:
                    raise fail(f'resource "{key}": {e}') from None
                try:
                    raw = _b64.b64decode(view[m.end() : end], validate=True)
                except ValueError:
                    raise fail(f'resource "{key}": the base64 data is corrupt',
                               m.end() - pos + 1) from None
                expect = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                if len(raw) != expect:
                    raise fail(f'resource "{key}": {len(raw)} bytes of data for {dtype.value}'
                               f"[{','.join(map(str, shape))}] ({expect} bytes expected)")
                if key in out:
                    raise fail(f'resource "{key}" is defined twice')
                hashes.append((key, line, m.group(4).decode(), pool.submit(_sha256, raw)))
                out[key] = np.frombuffer(raw, dtype=dtype.numpy.newbyteorder("<")).reshape(shape)
                pos = data.find(b"\n", end + 1)
                if pos < 0:
                    raise fail("the resource section is not closed with '}'")
                pos += 1
                line += 1
            for key, at_line, want, digest in hashes:
                if digest.result() != want:
                    raise fail(f'resource "{key}": sha256 mismatch, the data is damaged',
                               at_line=at_line)
    finally:
        view.release()
    return out


def _sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()

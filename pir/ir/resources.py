"""The resource section of a ``.pir`` file: large constants, lossless and content-hashed.

``resources { "key": f32[2,3] sha256=<hex> base64"<data>" ... }``: each entry holds the
array's little-endian bytes in C order, base64-encoded (with SIMD, by pybase64), and the
SHA-256 of those bytes, so a reader can tell a damaged entry from a good one.  The section
is read straight from the file's buffer, never through the tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

import numpy as np

from pir.errors import PirError
from pir.ir.lexer import string_problem
from pir.ir.types import DType
from pir.limits import check_tensor_bytes

try:  # SIMD base64: weights of hundreds of MB must load and save at disk speed
    import pybase64 as _b64
except ImportError:  # pragma: no cover - the stdlib codec is correct, only slower
    import base64 as _b64

__all__ = ["write_resources", "read_resources", "resource_header", "split_module_text"]

# The key's repeat is unrolled, as in the lexer: a group repeated per character costs the
# regex engine memory per character.
_RESOURCE_LINE = re.compile(
    rb'\s*("[^"\\\n]*(?:\\.[^"\\\n]*)*")\s*:\s*([A-Za-z0-9]+)\[([0-9,]*)\]\s+sha256=([0-9a-f]{64})\s+base64"'
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


def split_module_text(data, filename: str) -> tuple[str, int | None, int]:
    """The module text of a file's bytes (or mmap), decoded; the offset where the resource
    section starts (None: there is none), and its line."""
    if data[: len(b"resources {")] == b"resources {":
        return "", 0, 1
    idx = data.find(b"\nresources {")
    end = len(data) if idx < 0 else idx + 1
    try:  # decoded straight from the buffer: a slice of an mmap would first copy the text
        with memoryview(data) as view, view[:end] as head:
            text = str(head, "utf-8")
    except UnicodeDecodeError as e:
        head = bytes(data[: e.start])  # only on this error: the text up to the bad byte
        line_start = head.rfind(b"\n") + 1
        col = len(head[line_start:].decode("utf-8", "replace")) + 1
        raise PirError(f"the file is not UTF-8 text (byte {e.start}: 0x{data[e.start]:02x})",
                       file=filename, line=head.count(b"\n") + 1, col=col) from None
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        # the text is decoded: let its pages of the file go rather than hold them resident
        # (file pages, read back from the page cache should anything touch them again)
        try:
            data.madvise(mmap.MADV_DONTNEED, 0, end)
        except OSError:
            pass
    if idx < 0:
        return text, None, 0
    return text, idx + 1, text.count("\n") + 1


def read_resources(data, start: int, filename: str, first_line: int) -> dict[str, np.ndarray]:
    """Decode ``resources { ... }`` from ``data[start:]``.

    Base64 is decoded from zero-copy slices; each entry's SHA-256 is computed on a second
    thread (hashlib releases the GIL) while the next entry decodes, and checked at the end.
    Each entry's shape is checked (int64, ``pir --max-tensor-bytes``) before its data is
    decoded, and the data must hold exactly the shape's bytes.
    """
    out: dict[str, np.ndarray] = {}
    hashes: list[tuple[str, int, str, Future]] = []
    view = memoryview(data)
    line = first_line  # the line of ``pos``

    def fail(msg: str, col: int = 1, at_line: int | None = None) -> PirError:
        return PirError(msg, file=filename, line=at_line or line, col=col)

    def fail_at(offset: int, msg: str) -> PirError:
        """An error at byte ``offset`` of an entry that starts at ``pos``."""
        line_start = data.rfind(b"\n", 0, offset) + 1
        col = len(bytes(view[line_start:offset]).decode("utf-8", "replace")) + 1
        return fail(msg, col, line + bytes(view[pos:line_start]).count(b"\n"))

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
                key = _key(m.group(1), lambda index, msg: fail_at(m.start(1) + index, msg))
                line += bytes(view[pos : m.start(1)]).count(b"\n")  # blank lines before it
                pos = data.rfind(b"\n", 0, m.start(1)) + 1
                end = data.find(b'"', m.end())
                if end < 0:
                    raise fail(f'resource "{key}": the base64 data is not closed')
                try:
                    dtype = DType.parse(m.group(2).decode())
                except ValueError as e:
                    raise fail_at(m.start(2), f'resource "{key}": {e}') from None
                if dtype is DType.STRING:
                    raise fail_at(m.start(2), f'resource "{key}": str tensors cannot be '
                                  "stored as resources")
                dims = [d for d in m.group(3).split(b",") if d]
                if any(len(d.lstrip(b"0")) > 100 for d in dims):  # int() refuses 4300 digits
                    raise fail_at(m.start(3), f'resource "{key}": a dim does not fit in int64')
                shape = tuple(int(d) for d in dims)
                try:  # exact, before anything is allocated: 2**64 elements is no tensor
                    expect = check_tensor_bytes(shape, dtype.itemsize, f'resource "{key}"')
                except PirError as e:
                    raise fail_at(m.start(3), e.message) from None
                try:
                    raw = _b64.b64decode(view[m.end() : end], validate=True)
                except ValueError:
                    raise fail(f'resource "{key}": the base64 data is corrupt',
                               m.end() - pos + 1) from None
                if len(raw) != expect:
                    raise fail(f'resource "{key}": {len(raw)} bytes of data for {dtype.value}'
                               f"[{','.join(map(str, shape))}] ({expect} bytes expected)",
                               m.end() - pos + 1)
                if key in out:
                    raise fail(f'resource "{key}" is defined twice', m.start(1) - pos + 1)
                hashes.append((key, line, m.group(4).decode(), pool.submit(_sha256, raw)))
                out[key] = np.frombuffer(raw, dtype=dtype.numpy.newbyteorder("<")).reshape(shape)
                nl = data.find(b"\n", end + 1)
                if bytes(view[end + 1 : nl if nl >= 0 else len(data)]).strip():
                    raise fail(f'resource "{key}": unexpected text after its data',
                               end + 2 - pos)
                if nl < 0:
                    raise fail("the resource section is not closed with '}'")
                pos = nl + 1
                line += 1
            for key, at_line, want, digest in hashes:
                if digest.result() != want:
                    raise fail(f'resource "{key}": sha256 mismatch, the data is damaged',
                               at_line=at_line)
    finally:
        view.release()
    return out


def _key(quoted: bytes, error) -> str:
    """A resource key, decoded like the lexer's strings: UTF-8 text holding a JSON string.
    ``error(index, message)`` makes the error for the key's ``index``-th byte."""
    try:
        text = quoted.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(e.start, f"a resource key is not UTF-8 text (byte 0x{quoted[e.start]:02x})")
    problem = string_problem(text)
    if problem is not None:
        index, message = problem
        raise error(len(text[:index].encode("utf-8")),
                    message.replace("in a string", "in a resource key"))
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:  # string_problem knows every case; this is a backstop
        raise error(len(text[: e.pos].encode("utf-8")), f"bad resource key: {e.msg}") from None


def _sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()

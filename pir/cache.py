"""Where pir keeps what it compiled: private directories under one cache root, entries checked
by content hash when they are read.

The cache root is ``$PIR_CACHE_DIR``, else ``~/.cache/pir``; each kind of entry has a
subdirectory (``tir/`` kernel sources, ``tvm/`` shared libraries, ``cuda/`` cubins).  What is
in them is loaded into this process as native code, so whoever can write them can run code
as the user: pir creates them ``0700`` and refuses to use one that another user owns or that
the group or others may write (docs/security.md).  Entries carry the sha256 of their
content, checked on every load, so a file cut short or altered is rebuilt, never loaded.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import stat
import tempfile

from pir.errors import PirError

__all__ = ["cache_root", "private_dir", "write_verified", "read_verified", "file_sha256"]


def cache_root() -> pathlib.Path:
    """``$PIR_CACHE_DIR``, else ``~/.cache/pir``."""
    root = os.environ.get("PIR_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                            "pir")
    return pathlib.Path(root)


def private_dir(name: str) -> pathlib.Path:
    """``<cache root>/<name>``, created ``0700`` where missing (the root too); a PirError when
    it, or the root, belongs to another user or may be written by the group or others."""
    root = cache_root()
    path = root / name
    for d in (root, path):
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            continue  # a read-only place: nothing will be written, and nothing read is unsafe
        _check_private(d)
    return path


def _check_private(d: pathlib.Path) -> None:
    try:
        st = d.stat()
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        raise PirError(f"the cache directory {d} is not a directory (set PIR_CACHE_DIR)")
    if st.st_uid != os.geteuid():
        raise PirError(f"the cache directory {d} belongs to another user (uid {st.st_uid}): "
                       "pir loads native code from it, so it must be yours; set PIR_CACHE_DIR "
                       "to a private directory")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PirError(f"the cache directory {d} may be written by others (mode "
                       f"{stat.S_IMODE(st.st_mode):04o}): pir loads native code from it; "
                       f"`chmod go-w {d}`, or set PIR_CACHE_DIR to a private directory")


def file_sha256(path: pathlib.Path) -> str | None:
    """The sha256 of a file's content, None when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def _digest_path(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(path.name + ".sha256")


def write_verified(path: pathlib.Path) -> None:
    """Record the content hash of the entry ``path`` just written (beside it, atomically)."""
    digest = file_sha256(path)
    if digest is None:
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:16]}.", suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            f.write(digest + "\n")
        os.replace(tmp, _digest_path(path))
    except OSError:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_verified(path: pathlib.Path) -> bool:
    """Whether the entry ``path`` exists and its content matches the hash recorded when it
    was written (an entry without one, cut short or altered is not to be loaded)."""
    try:
        recorded = _digest_path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return False
    return file_sha256(path) == recorded

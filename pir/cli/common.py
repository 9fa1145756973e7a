"""What every command shares: reading inputs, writing outputs atomically, reporting errors."""

from __future__ import annotations

import functools
import io
import os
import signal
import stat
import sys
import tempfile
import threading
import traceback
from typing import Callable

import click

from pir.errors import PirError, UsageError

__all__ = ["read_bytes", "read_module", "AtomicOutput", "Terminated", "write_module_to",
           "run_command", "stdout_wanted"]


def read_bytes(path: str) -> bytes:
    """The contents of ``path``, or of stdin for ``-``."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise PirError(f"cannot read: {e.strerror}", file=path) from None


def read_module(path: str):
    """Parse and verify a ``.pir`` file (``-`` for stdin)."""
    from pir.ir.parser import parse_file, parse_file_bytes

    if path == "-":
        return parse_file_bytes(read_bytes(path), "<stdin>")
    try:
        return parse_file(path)
    except OSError as e:
        raise PirError(f"cannot read: {e.strerror}", file=path) from None


def stdout_wanted(output: str | None, what: str = "a .pir file") -> bool:
    """True when output goes to stdout: ``-o -``, or no ``-o`` with stdout not a terminal."""
    if output == "-":
        return True
    if output is None:
        if sys.stdout.isatty():
            raise UsageError(f"refusing to write {what} to a terminal: give -o FILE, or pipe it")
        return True
    return False


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while an output was being written.  Raised from the signal
    handler, so ``with`` blocks unwind (and :class:`AtomicOutput` removes its temporary file)
    as they do for Ctrl-C's KeyboardInterrupt; a BaseException for the same reason, so that no
    ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what the shell reports for a process killed by the signal


#: Signals that end a write cleanly (SIGINT already does, as KeyboardInterrupt).
_CLEANUP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


def _raise_terminated(signum, frame):
    raise Terminated(signum)


def _umask() -> int:
    """The process's umask, without changing it where the kernel reports it: ``os.umask``
    can only be read by setting it, and a thread creating a file in between would get the
    wrong mode."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class AtomicOutput:
    """A binary output file that is either all there or not touched: written under a
    temporary name in the target's folder and renamed onto it on success, so a failed stage
    never leaves a half-written target for make to trust (docs/output.md).

    Only a regular file, or a name that does not exist yet, is replaced that way.  Renaming
    onto anything else would destroy it (as root, ``-o /dev/null`` would turn the null device
    into a regular file), so a character or block device, a FIFO, a socket and ``-``
    (stdout) are opened and written directly, as the shell's ``>`` does.  A symlink is
    followed: its target is replaced and the link stays a link (a dangling link creates its
    target).  The replacement keeps the old file's mode; a new file gets 0o666 less the
    umask, as ``open()`` would give it.  SIGTERM and SIGHUP during the write remove the
    temporary file, as Ctrl-C does (see :class:`Terminated`).
    """

    def __init__(self, path: str):
        self.path = path
        self.target = path  # where the data ends up: the path with its symlinks resolved
        self.tmp: str | None = None  # None: written directly, nothing to rename
        self.file = None
        self._saved_handlers: dict[int, object] = {}

    def __enter__(self):
        if self.path == "-":
            self.file = sys.stdout.buffer
            return self.file
        if not self.path:
            raise UsageError("the output file name is empty")
        # Before the temporary file exists: a signal from then on must find the handler.
        self._catch_signals()
        try:
            self._open()
        except BaseException:
            self._abandon()
            raise
        return self.file

    def __exit__(self, exc_type, exc, tb):
        try:
            self._finish(failed=exc_type is not None)
        except BaseException:  # a PirError, or a signal during the rename
            self._abandon()
            raise
        finally:
            self._restore_signals()
        return False

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> None:
        try:
            st = os.stat(self.path)  # follows symlinks: what is at the end of them
        except FileNotFoundError:
            st = None
        except OSError as e:  # a symlink loop, a file used as a folder, no permission
            raise PirError(f"cannot write: {e.strerror}", file=self.path) from None
        if (st is not None and stat.S_ISDIR(st.st_mode)) or self.path.endswith(os.sep):
            raise PirError("is a directory", file=self.path)
        if st is None or stat.S_ISREG(st.st_mode):
            self._open_temporary(st)
        else:
            self._open_directly()

    def _open_temporary(self, st: os.stat_result | None) -> None:
        # The temporary file goes in the target's own folder: rename is atomic only within
        # one file system, and a symlink's target may be on another one.
        self.target = os.path.realpath(self.path)
        folder, name = os.path.split(self.target)
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
            self.file = os.fdopen(fd, "wb")
            if st is None:
                os.fchmod(fd, 0o666 & ~_umask())  # mkstemp made it 0o600
            else:
                _keep_owner_and_mode(fd, st)
        except OSError as e:
            via = f" (a symlink to {os.readlink(self.path)})" if os.path.islink(self.path) else ""
            raise PirError(f"cannot write: {e.strerror}{via}", file=self.path) from None

    def _open_directly(self) -> None:
        # No O_CREAT: the path exists and is not a regular file.  No O_TRUNC: a device or a
        # FIFO has nothing to truncate.  Opening a FIFO waits for a reader, as `>` does.
        try:
            fd = os.open(self.path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        except OSError as e:  # a socket (ENXIO), a read-only device, no permission
            raise PirError(f"cannot write: {e.strerror}", file=self.path) from None
        self.file = io.BufferedWriter(_Stream(fd, "wb"))

    # -- closing ---------------------------------------------------------------------------

    def _finish(self, failed: bool) -> None:
        if self.file is sys.stdout.buffer:
            if not failed:
                self.file.flush()
            return
        if failed:
            self._abandon()
            return
        try:
            self.file.close()  # flushes: a full disk shows here
            if self.tmp is not None:
                os.replace(self.tmp, self.target)
                self.tmp = None
        except OSError as e:  # __exit__ then removes the temporary file
            raise PirError(f"cannot write: {e.strerror}", file=self.path) from None

    def _abandon(self) -> None:
        """Undo what is not finished: close the file, remove the temporary file."""
        if self.file is not None and self.file is not sys.stdout.buffer:
            try:
                self.file.close()
            except OSError:
                pass
        self._remove_temporary()
        self._restore_signals()

    def _remove_temporary(self) -> None:
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except FileNotFoundError:
                pass
            self.tmp = None

    # -- signals ---------------------------------------------------------------------------

    def _catch_signals(self) -> None:
        # Handlers can only be set in the main thread, which is where pir's commands write
        # their outputs; a write from another thread goes without (a signal may leave its
        # temporary file behind, never a half-written target).
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in _CLEANUP_SIGNALS:
            previous = signal.getsignal(sig)
            # SIG_IGN: `nohup pir ...`, the user asked to carry on.  None: a handler set
            # outside Python, which could not be put back.
            if previous is signal.SIG_IGN or previous is None:
                continue
            self._saved_handlers[sig] = previous
            signal.signal(sig, _raise_terminated)

    def _restore_signals(self) -> None:
        while self._saved_handlers:
            sig, previous = self._saved_handlers.popitem()
            signal.signal(sig, previous)


class _Stream(io.FileIO):
    """A device or FIFO written in place: a stream, whatever lseek says.  On /dev/null lseek
    "succeeds" and always returns 0, and a writer that seeks back to patch what it wrote (the
    zip behind np.savez) would take it at its word and fail; told the file cannot seek, it
    writes the stream form instead."""

    def seekable(self) -> bool:
        return False

    def seek(self, *args):
        raise io.UnsupportedOperation("seek")

    def tell(self):
        raise io.UnsupportedOperation("tell")


def _keep_owner_and_mode(fd: int, st: os.stat_result) -> None:
    """Give the replacement the owner and mode of the file it replaces."""
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        # Best effort, as editors do: root can keep who owns the file (and its owner, the
        # group of one of theirs); otherwise the replacement is the writer's own.
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            pass
    os.fchmod(fd, stat.S_IMODE(st.st_mode))  # after fchown, which may clear setuid bits


def write_module_to(module, output: str | None) -> None:
    from pir.ir.printer import write_module

    if stdout_wanted(output):
        write_module(module, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    with AtomicOutput(output) as f:
        write_module(module, f)


def run_command(fn: Callable) -> Callable:
    """Turn errors into ``pir: error: ...`` lines and exit codes; tracebacks only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = bool(click.get_current_context().find_root().params.get("debug"))
        try:
            return fn(*args, **kwargs)
        except PirError as e:
            if debug:
                traceback.print_exc()
            click.echo(f"pir: error: {e}", err=True)
            sys.exit(e.exit_code)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("pir: interrupted", err=True)
            sys.exit(130)
        except Terminated as e:
            click.echo(f"pir: stopped by {signal.Signals(e.signum).name}", err=True)
            sys.exit(e.exit_code)
        except BrokenPipeError:
            sys.exit(1)
        except Exception as e:  # a bug in pir: say so, and how to see more
            if debug:
                traceback.print_exc()
            else:
                click.echo(f"pir: internal error: {type(e).__name__}: {e} "
                           "(run with --debug for the traceback)", err=True)
            sys.exit(1)

    return wrapper

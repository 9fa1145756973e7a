"""What every command shares: reading inputs, writing outputs atomically, reporting errors."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import traceback
from typing import Callable

import click

from pir.errors import PirError, UsageError

__all__ = ["read_bytes", "read_module", "AtomicOutput", "write_module_to", "run_command",
           "stdout_wanted"]


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


class AtomicOutput:
    """A binary file written under a temporary name and renamed into place on success, so a
    failed stage never leaves a half-written target for make to trust."""

    def __init__(self, path: str):
        self.path = path
        self.tmp: str | None = None
        self.file = None

    def __enter__(self):
        d = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(self.path) + ".",
                                            suffix=".tmp", dir=d)
        except OSError as e:
            raise PirError(f"cannot write: {e.strerror}", file=self.path) from None
        self.file = os.fdopen(fd, "wb")
        return self.file

    def __exit__(self, exc_type, exc, tb):
        self.file.close()
        if exc_type is not None:
            os.unlink(self.tmp)
            return False
        try:
            os.chmod(self.tmp, 0o644)
            os.replace(self.tmp, self.path)
        except OSError as e:
            os.unlink(self.tmp)
            raise PirError(f"cannot write: {e.strerror}", file=self.path) from None
        return False


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

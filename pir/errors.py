"""The one exception type users see, carrying where the problem is.

Every error meant for a user is a :class:`PirError`; the CLI prints it as
``pir: error: <file>:<line>:<col>: <message>`` and exits 1.  Anything else escaping to the CLI
is a bug in pir and is reported as such (with a traceback only under ``--debug``).
"""

from __future__ import annotations


class PirError(Exception):
    """A problem with the user's input, with an optional location and source excerpt."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 col: int | None = None, excerpt: str | None = None, exit_code: int = 1):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.excerpt = excerpt
        self.exit_code = exit_code

    def where(self) -> str:
        parts = [p for p in (self.file, self.line, self.col) if p is not None]
        return ":".join(str(p) for p in parts)

    def __str__(self) -> str:
        where = self.where()
        text = f"{where}: {self.message}" if where else self.message
        if self.excerpt:
            text += "\n" + self.excerpt
        return text


class UsageError(PirError):
    """Wrong command-line usage (exit status 2, like click's own usage errors)."""

    def __init__(self, message: str):
        super().__init__(message, exit_code=2)


def one_line(e: Exception) -> str:
    """A failure as one line, for a report that carries on (a group codegen keeps): a
    PirError's message, else the exception's type and the first line of its text."""
    if isinstance(e, PirError):
        return e.message
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"

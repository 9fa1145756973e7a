"""The three fuzz targets and their oracle.

A target is a function of one ``bytes`` input that drives one of pir's input readers the way
the CLI does.  The oracle (:func:`run_one`) says what an input did:

- ``ok``: it was accepted (and, where the target prints, it round-trips);
- ``rejected``: it raised :class:`pir.errors.PirError` (any subclass) in a phase where that is
  the documented answer to bad input;
- a **finding**: anything else -- another exception type (``RecursionError`` and
  ``MemoryError`` included), a ``PirError`` where none may happen (re-parsing pir's own
  output), a round-trip mismatch, or more than ``timeout`` seconds of CPU time
  (:class:`FuzzTimeout`).

Memory: :func:`set_memory_limit` sets ``RLIMIT_AS`` for the whole process, so that a runaway
allocation becomes a ``MemoryError`` finding instead of the OOM killer; the process that
calls it should do nothing else.  Every target also runs under
``pir.limits.tensor_bytes_limit(TENSOR_BYTES)``, like ``pir --max-tensor-bytes``.

Nothing here imports pir's readers at module level: :func:`preload` does, so that the
atheris engine can import them under ``atheris.instrument_imports``.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from typing import Callable

from pir.errors import PirError

__all__ = ["TARGETS", "EXTENSIONS", "Outcome", "FuzzTimeout", "RoundTripMismatch", "run_one",
           "preload", "set_memory_limit", "signature_from_name", "finding_name",
           "DEFAULT_TIMEOUT", "DEFAULT_MEMORY_MB", "TENSOR_BYTES"]

TARGETS = ("pir", "onnx", "inputs")
#: The extension a saved input of each target gets (inputs: by its content, see ext_for).
EXTENSIONS = {"pir": ".pir", "onnx": ".onnx", "inputs": ".txt"}

DEFAULT_TIMEOUT = 10.0  # seconds of CPU time one input may take
DEFAULT_MEMORY_MB = 4096  # RLIMIT_AS of a fuzzing process
TENSOR_BYTES = 64 << 20  # pir --max-tensor-bytes for every target

_PIR_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_FUZZ_DIR = os.path.dirname(os.path.abspath(__file__))


class FuzzTimeout(BaseException):
    """Raised by the CPU timer in an input that runs too long.  A BaseException, so that
    pir's own ``except Exception`` handlers do not swallow it."""


class RoundTripMismatch(Exception):
    """print(parse(print(parse(x)))) differs from print(parse(x))."""


@dataclass
class Outcome:
    kind: str  # "ok", "rejected" or "finding"
    phase: str = ""
    type: str = ""
    module: str = ""  # where: the innermost frame in pir (file stem) ...
    where: str = ""  # ... and its line, or for a timeout its function
    location: str = ""  # pir/ir/parser.py:169 (in function)
    func: str = ""  # the function, for matching saved findings across edits that move lines
    message: str = ""
    tb: str = field(default="", repr=False)

    @property
    def is_finding(self) -> bool:
        return self.kind == "finding"

    def key(self) -> tuple[str, str, str]:
        """What identifies a bug: the exception type and where pir raised it."""
        return (self.type, self.module, self.where)

    def func_key(self) -> tuple[str, str, str] | None:
        """The same by function instead of line: (type, module, "f:" + function)."""
        if not self.func or self.func == self.where:
            return None
        return (self.type, self.module, "f:" + self.func)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in
                ("kind", "phase", "type", "module", "where", "location", "func", "message")}


# -- limits ------------------------------------------------------------------------------------

def set_memory_limit(megabytes: int) -> None:
    """Cap this process's address space (RLIMIT_AS) at ``megabytes``; never raises it above
    an existing hard limit."""
    if not megabytes:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = megabytes << 20
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def _on_cpu_timer(signum, frame):
    raise FuzzTimeout("input ran past the CPU time limit")


_timer_installed = False


def _arm(seconds: float) -> None:
    global _timer_installed
    if not _timer_installed:
        signal.signal(signal.SIGPROF, _on_cpu_timer)
        _timer_installed = True
    # ITIMER_PROF counts this process's CPU time: fair on a machine shared with other jobs,
    # and libFuzzer keeps SIGALRM (its -timeout, the hard backstop) for itself.
    signal.setitimer(signal.ITIMER_PROF, seconds)


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_PROF, 0)


# -- where an exception came from ---------------------------------------------------------------

def _pir_frame(tb, named: bool = False) -> traceback.FrameSummary | None:
    """The innermost frame in pir itself (not in this fuzz package); with ``named``, the
    innermost one of a named function (not a comprehension or generator expression)."""
    frames = traceback.extract_tb(tb)
    for fr in reversed(frames):
        f = os.path.abspath(fr.filename)
        if f.startswith(_PIR_DIR + os.sep) and not f.startswith(_FUZZ_DIR + os.sep):
            if named and fr.name.startswith("<"):
                continue
            return fr
    return frames[-1] if frames else None


def _classify(e: BaseException, phase: str) -> Outcome:
    fr = _pir_frame(e.__traceback__, named=isinstance(e, FuzzTimeout))
    if fr is not None:
        rel = os.path.relpath(os.path.abspath(fr.filename), os.path.dirname(_PIR_DIR))
        module = os.path.splitext(os.path.basename(fr.filename))[0]
        location = f"{rel}:{fr.lineno} ({fr.name})"
        # a timeout lands anywhere in a loop: its function names it, not the line
        where = fr.name if isinstance(e, FuzzTimeout) else str(fr.lineno)
        func = re.sub(r"[^A-Za-z0-9_]", "", fr.name)
    else:
        module, where, location, func = "harness", phase, "?", ""
    if isinstance(e, RoundTripMismatch):
        module, where, location = "printer", "roundtrip", "pir/ir/printer.py (round trip)"
        func = ""
    name = "Timeout" if isinstance(e, FuzzTimeout) else type(e).__name__
    msg = str(e).splitlines()[0][:300] if str(e) else ""
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-12))
    return Outcome("finding", phase, name, module, where, location, func, msg, tb)


# -- the targets -------------------------------------------------------------------------------

class _Run:
    """Phase bookkeeping for one input: which step an exception came from, and whether a
    PirError is an acceptable answer there."""

    def __init__(self):
        self.phase = "start"
        self.strict = False  # True: even a PirError is a finding (pir's own output)

    def __call__(self, phase: str, strict: bool = False) -> "_Run":
        self.phase, self.strict = phase, strict
        return self


def _print(module) -> bytes:
    from pir.ir.printer import write_module

    buf = io.BytesIO()
    write_module(module, buf)  # what `pir verify -o` / `pir import -o` write
    return buf.getvalue()


def _round_trip(run: _Run, module, first_phase: str) -> None:
    """Print; the printed text must parse again (strictly) and print the same bytes."""
    from pir.ir.parser import parse_file_bytes

    run(first_phase)
    text = _print(module)
    run("reparse", strict=True)
    again = parse_file_bytes(text, "<printed>")
    run("reprint", strict=True)
    text2 = _print(again)
    if text2 != text:
        raise RoundTripMismatch(_first_difference(text, text2))


def _first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: {x[:120]!r} != {y[:120]!r}"
    return f"{len(la)} lines != {len(lb)} lines"


def target_pir(data: bytes, run: _Run) -> None:
    """parse_file_bytes (parse + verify, as `pir verify` does), print, round trip."""
    from pir.ir.parser import parse_file_bytes

    run("parse")
    module = parse_file_bytes(data, "<fuzz>")
    _round_trip(run, module, "print")


_scratch: str | None = None


def _scratch_dir() -> str:
    """A private folder for the inputs that must be files; the ONNX target's external data
    can only be read from here (the importer refuses paths outside the model's folder)."""
    global _scratch
    if _scratch is None:
        fixed = os.environ.get("PIR_FUZZ_SCRATCH")  # the supervisor's, in its work folder
        if fixed:
            os.makedirs(fixed, exist_ok=True)
            _scratch = fixed
        else:
            _scratch = tempfile.mkdtemp(prefix="pir-fuzz-")
            atexit.register(shutil.rmtree, _scratch, True)
        with open(os.path.join(_scratch, "weights.bin"), "wb") as f:
            f.write(bytes(range(256)) * 16)  # 4 KB of external data for the seeds
    return _scratch


def target_onnx(data: bytes, run: _Run) -> None:
    """`pir import FILE`: import_model on a path (external data confined to a private
    folder holding weights.bin), print it, round trip the printed text."""
    from pir.frontends.onnx.importer import import_model

    path = os.path.join(_scratch_dir(), "model.onnx")
    with open(path, "wb") as f:
        f.write(data)
    run("import")
    module = import_model(path)
    _round_trip(run, module, "print")


_INPUT_FN = None
_INPUT_SIG = """module @fuzz {
  func.func @main(%x: tensor<Bx4xf32>, %i: tensor<NxBxi64>, %b: tensor<?x2xi1>, %h: tensor<3xf16>) -> (tensor<Bx4xf32>) {
    func.return(%x) : (tensor<Bx4xf32>) -> ()
  }
}
"""


def target_inputs(data: bytes, run: _Run) -> None:
    """`pir run`'s inputs.  An .npz (zip) or .npy file is loaded both ways the CLI can
    (``--inputs F`` and ``--input x=F``); anything else is ``--dim`` strings, one a line,
    parsed and used to make up inputs for a fixed signature (as ``--check`` does)."""
    global _INPUT_FN
    from pir.runtimes import inputs
    from pir.runtimes.inputs import load_inputs, parse_dims, random_inputs

    if data[:2] == b"PK" or data[:6] == b"\x93NUMPY":
        path = os.path.join(_scratch_dir(), "input" + ext_for("inputs", data))
        with open(path, "wb") as f:
            f.write(data)
        run("load --inputs")
        try:
            load_inputs(path, ())
        except PirError:
            pass  # the usual answer for an .npy; the other way must still be tried
        run("load --input")
        load_inputs(None, (f"x={path}",))
        return
    if _INPUT_FN is None:
        from pir.ir.parser import parse_module

        _INPUT_FN = parse_module(_INPUT_SIG).lookup("main")
    # click hands pir the command line as str, undecodable bytes as surrogates
    text = data.decode("utf-8", "surrogateescape")
    run("parse_dims")
    dims = parse_dims(tuple(text.split("\n")) if text else ())
    check_dims = getattr(inputs, "check_dims", None)  # as `pir run` does, where it exists
    if check_dims is not None:
        run("check_dims")
        dims = check_dims(_INPUT_FN, dims)
    run("random_inputs")
    random_inputs(_INPUT_FN, 0, dims)


_TARGET_FNS: dict[str, Callable[[bytes, _Run], None]] = {
    "pir": target_pir, "onnx": target_onnx, "inputs": target_inputs}


def ext_for(target: str, data: bytes) -> str:
    if target == "inputs":
        if data[:2] == b"PK":
            return ".npz"
        if data[:6] == b"\x93NUMPY":
            return ".npy"
    return EXTENSIONS[target]


def preload(target: str) -> None:
    """Import everything the target reaches (dialects, ONNX converters), so that the atheris
    engine instruments it; and warm the target up on an empty input."""
    import pir.ir.parser  # noqa: F401
    import pir.ir.printer  # noqa: F401
    import pir.ir.verifier  # noqa: F401
    import pir.limits  # noqa: F401
    from pir.ir.dialects import load_dialects

    load_dialects()
    if target == "onnx":
        import pir.frontends.onnx.importer  # noqa: F401
        from pir.frontends.onnx.registry import load_all

        load_all()
    if target == "inputs":
        import pir.runtimes.inputs  # noqa: F401


def run_one(target: str, data: bytes, timeout: float = DEFAULT_TIMEOUT) -> Outcome:
    """Run one input through ``target`` under the oracle."""
    from pir.limits import tensor_bytes_limit

    fn = _TARGET_FNS[target]
    run = _Run()
    try:
        with tensor_bytes_limit(TENSOR_BYTES):
            if timeout:
                _arm(timeout)
            try:
                fn(data, run)
            finally:
                if timeout:
                    _disarm()
    except PirError as e:
        if run.strict:
            return _classify(e, run.phase)
        return Outcome("rejected", run.phase, type(e).__name__, message=e.message[:200])
    except (Exception, FuzzTimeout, SystemExit) as e:
        return _classify(e, run.phase)
    return Outcome("ok", run.phase)


# -- names of saved findings ------------------------------------------------------------------

_PHASE_SLUG = re.compile(r"[^A-Za-z0-9_]+")
_NAME_TYPE = re.compile(r"^[A-Z][A-Za-z0-9_]*$")


def finding_name(target: str, outcome: Outcome, data: bytes) -> str:
    """``<phase>-<Type>-<module>-<line>-<function>-<sha8><ext>``, e.g.
    ``parse-JSONDecodeError-parser-169-attr_value-1a2b3c4d.pir`` (for a timeout, whose
    place is a function: ``print-Timeout-printer-_nested-1a2b3c4d.pir``)."""
    phase = _PHASE_SLUG.sub("_", outcome.phase).strip("_") or "run"
    digest = hashlib.sha1(data).hexdigest()[:8]
    func = f"-{outcome.func}" if outcome.func and outcome.func != outcome.where else ""
    return (f"{phase}-{outcome.type}-{outcome.module}-{outcome.where}{func}-{digest}"
            f"{ext_for(target, data)}")


def signature_from_name(name: str) -> list[tuple[str, str, str]]:
    """The keys a saved file's name carries: (Type, module, line), and (Type, module,
    "f:" + function) where the name has the function, as ``finding_name`` writes it (the
    audit's ``01-parse-JSONDecodeError-parser-169.pir`` has no function); [] for none."""
    parts = os.path.splitext(os.path.basename(name))[0].split("-")
    for i in range(len(parts) - 2):
        if _NAME_TYPE.match(parts[i]) and (parts[i].endswith(("Error", "Exception", "Timeout",
                                                              "Mismatch", "Exit"))):
            keys = [(parts[i], parts[i + 1], parts[i + 2])]
            if len(parts) > i + 4:  # ...-<line>-<function>-<sha8>
                keys.append((parts[i], parts[i + 1], "f:" + parts[i + 3]))
            return keys
    return []


def short(outcome: Outcome) -> str:
    return f"{outcome.type} at {outcome.location} [{outcome.phase}]"


if __name__ == "__main__":  # pragma: no cover - a quick manual check
    t = sys.argv[1]
    preload(t)
    for p in sys.argv[2:]:
        with open(p, "rb") as f:
            print(p, run_one(t, f.read()))

"""The pass manager: runs a pipeline, verifying after every pass, with instrumentation.

Instrumentation (as MLIR's ``--print-ir-after-all``, ``--mlir-timing``): print the IR before
or after chosen passes, dump every stage to a numbered ``.pir`` file ready for ``pir diff``,
and time each pass with the op-count change it made.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from pir.errors import PirError
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.printer import print_module, write_module
from pir.ir.verifier import verify_module
from pir.passes.base import Pass

__all__ = ["PassManager", "PassTiming", "count_ops"]


def count_ops(module: ModuleOp) -> int:
    """Ops inside functions (the functions themselves not counted)."""
    return sum(1 for fn in module.funcs for op in fn.walk() if op is not fn)


@dataclass
class PassTiming:
    name: str
    seconds: float
    ops_before: int
    ops_after: int


@dataclass
class PassManager:
    """Runs ``passes`` in order on a module.

    ``print_before``/``print_after`` hold pass names (``"*"`` for all) whose IR is printed to
    ``log``; ``dump_dir`` receives ``00-input.pir``, ``01-<pass>.pir``, ... each starting with
    a comment holding the exact pipeline of that step, options resolved.
    """

    passes: list[Pass]
    verify_each: bool = True
    print_before: set[str] = field(default_factory=set)
    print_after: set[str] = field(default_factory=set)
    dump_dir: str | None = None
    timing: bool = False
    log: TextIO | None = None  # None: sys.stderr at the time of printing
    timings: list[PassTiming] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = {p.name for p in self.passes}
        for what, wanted in (("--print-ir-before", self.print_before),
                             ("--print-ir-after", self.print_after)):
            unknown = sorted(set(wanted) - names - {"*"})
            if unknown:
                raise PirError(f"{what}: no pass named {', '.join(unknown)} in the pipeline "
                               f"({', '.join(p.name for p in self.passes) or 'empty'})")

    def run(self, module: ModuleOp) -> ModuleOp:
        # Passes allocate many small objects that stay alive (the IR is a web of ops, values
        # and uses), so the cyclic collector's scans find nothing but cost a third of the
        # run: pause it, as the parser does.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(module)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _run(self, module: ModuleOp) -> ModuleOp:
        if self.dump_dir:
            try:
                os.makedirs(self.dump_dir, exist_ok=True)
            except OSError as e:
                raise PirError(f"cannot create the dump directory: {e.strerror}",
                               file=self.dump_dir) from None
            self._dump(module, 0, "input", "(the input, before any pass)")
        for i, p in enumerate(self.passes, 1):
            if self._wants(self.print_before, p):
                self._print(module, f"before {p.name}")
            before = count_ops(module) if self.timing else 0
            start = time.perf_counter()
            try:
                changed = p.apply(module)
            except PirError as e:
                e.message = f"pass '{p.name}': {e.message}"
                raise
            elapsed = time.perf_counter() - start
            if self.verify_each and changed is not False:
                try:
                    verify_module(module)
                except PirError as e:
                    e.message = f"the IR is invalid after pass '{p.name}': {e.message}"
                    raise
            if self.timing:
                self.timings.append(PassTiming(p.name, elapsed, before, count_ops(module)))
            if self._wants(self.print_after, p):
                self._print(module, f"after {p.name}")
            if self.dump_dir:
                self._dump(module, i, p.name, p.pipeline_text())
        return module

    @staticmethod
    def _wants(names: set[str], p: Pass) -> bool:
        return "*" in names or p.name in names

    def _print(self, module: ModuleOp, when: str) -> None:
        log = self.log or sys.stderr
        log.write(f"// ----- IR {when} -----\n")
        log.write(print_module(module, resources=False))

    def _dump(self, module: ModuleOp, index: int, name: str, pipeline: str) -> None:
        path = os.path.join(self.dump_dir, f"{index:02d}-{name}.pir")
        try:
            with open(path, "wb") as f:
                f.write(f"// pir-pipeline: {pipeline}\n".encode())
                write_module(module, f)
        except OSError as e:
            raise PirError(f"cannot write: {e.strerror}", file=path) from None

    def timing_table(self) -> str:
        total = sum(t.seconds for t in self.timings) or 1e-12
        rows = [f"{'pass':<16}{'time (ms)':>12}{'share':>8}{'ops before':>12}{'ops after':>11}"]
        for t in self.timings:
            rows.append(f"{t.name:<16}{t.seconds * 1e3:>12.2f}{t.seconds / total:>8.0%}"
                        f"{t.ops_before:>12}{t.ops_after:>11}")
        rows.append(f"{'total':<16}{total * 1e3:>12.2f}")
        return "\n".join(rows)

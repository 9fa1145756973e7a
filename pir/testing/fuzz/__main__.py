"""``python -m pir.testing.fuzz``: fuzz pir's input readers (docs/fuzzing.md).

    python -m pir.testing.fuzz pir --seconds 60              # one target
    python -m pir.testing.fuzz all --seconds 300             # pir, onnx, inputs in turn
    python -m pir.testing.fuzz replay onnx tests/fuzz/regressions/onnx/*
    python -m pir.testing.fuzz minimize pir crash.pir --out tests/fuzz/regressions/pir
    python -m pir.testing.fuzz seeds                         # rewrite the seed corpora
"""

from __future__ import annotations

import argparse
import os
import sys

from pir.testing.fuzz.harness import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, TARGETS


def _fuzz(argv: list[str]) -> int:
    from pir.testing.fuzz.engine import Options, fuzz_target

    ap = argparse.ArgumentParser(
        prog="python -m pir.testing.fuzz",
        description="Fuzz pir's readers in-process; findings are minimised into "
                    "tests/fuzz/regressions/<target>/.  Subcommands: replay, minimize, seeds.")
    ap.add_argument("targets", nargs="+", metavar="TARGET",
                    help=f"{', '.join(TARGETS)} or all (several run one after another)")
    ap.add_argument("--seconds", type=float, default=300.0, help="fuzzing time per target")
    ap.add_argument("--corpus", action="append", default=[], metavar="DIR",
                    help="seed folder (repeatable; default tests/fuzz/seeds/<target>); "
                         "never written to")
    ap.add_argument("--workdir", default="", metavar="DIR",
                    help="working corpus, logs and raw findings (default build/fuzz/<target>, "
                         "kept between runs; a target name is appended for several)")
    ap.add_argument("--regressions", default="", metavar="DIR",
                    help="where minimised new findings go (default "
                         "tests/fuzz/regressions/<target>)")
    ap.add_argument("--dict", dest="dictionary", default="", metavar="FILE",
                    help="token dictionary (default tests/fuzz/dicts/<target>.dict)")
    ap.add_argument("--engine", choices=("auto", "atheris", "builtin"), default="auto",
                    help="auto: atheris when installed, else the built-in mutator")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help="CPU seconds one input may take before it is a finding")
    ap.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB,
                    help="RLIMIT_AS of the fuzzing process (MiB)")
    ap.add_argument("--max-len", type=int, default=0, help="longest input (bytes)")
    ap.add_argument("--minimize-seconds", type=float, default=60.0,
                    help="time to minimise each new finding")
    ap.add_argument("--no-save", action="store_true",
                    help="report findings, write nothing to the regressions folder")
    ap.add_argument("--seed", type=int, default=None, help="random seed of the engine")
    ap.add_argument("-v", "--verbose", action="store_true", help="print findings as they come")
    a = ap.parse_args(argv)
    targets = []
    for t in a.targets:
        for name in (TARGETS if t == "all" else t.replace(",", " ").split()):
            if name not in TARGETS:
                ap.error(f"unknown target '{name}' (choose from {', '.join(TARGETS)}, all)")
            targets.append(name)
    results = []
    for t in targets:
        opts = Options(target=t, seconds=a.seconds, corpus=list(a.corpus),
                       workdir=os.path.join(a.workdir, t) if a.workdir and len(targets) > 1
                       else a.workdir,
                       regressions=a.regressions, dictionary=a.dictionary, engine=a.engine,
                       timeout=a.timeout, memory_mb=a.memory_mb, max_len=a.max_len,
                       minimize_seconds=a.minimize_seconds, save=not a.no_save, seed=a.seed,
                       verbose=a.verbose)
        opts.resolve()
        print(f"fuzzing {t} for {a.seconds:.0f}s with {opts.engine} "
              f"(seeds {', '.join(opts.corpus)}; work {opts.workdir})", flush=True)
        results.append(fuzz_target(opts, progress=lambda s: print(s, flush=True)))
        _print_target(results[-1])
    _print_table(results)
    return 0


def _print_target(r) -> None:
    print(f"{r.target}: {r.inputs} inputs in {r.seconds:.1f}s = {r.rate:.0f} inputs/s "
          f"({r.cpu_rate:.0f} per CPU second) "
          f"({r.engine}; corpus {r.corpus}{'; ' + r.coverage if r.coverage else ''}"
          f"{f'; worker restarts {r.restarts}' if r.restarts else ''})")
    print(f"{r.target}: findings: {len(r.findings)} ({len(r.new)} new)")
    for f in sorted(r.findings, key=lambda f: (not f.get("new"), f["type"], f["location"])):
        tag = "NEW  " if f.get("new") else "known"
        saved = f.get("saved")
        where = f" -> {os.path.relpath(saved)}" if saved else ""
        if f.get("not_reproduced"):
            where = f" (does not reproduce outside the engine: {f.get('raw')})"
        print(f"  {tag} {f['type']} at {f['location']} [{f['phase']}] x{f.get('hits', 1)}"
              f"{where}")
    sys.stdout.flush()


def _print_table(results) -> None:
    print()
    head = f"{'target':8s} {'engine':8s} {'seconds':>8s} {'inputs':>10s} {'inputs/s':>9s} " \
           f"{'/cpu-s':>7s} {'1M inputs':>10s} {'corpus':>7s} {'findings':>9s} {'new':>4s}"
    print(head)
    print("-" * len(head))
    for r in results:
        eta = f"{1e6 / r.rate / 60:.0f} min" if r.rate else "-"
        print(f"{r.target:8s} {r.engine:8s} {r.seconds:8.1f} {r.inputs:10d} {r.rate:9.0f} "
              f"{r.cpu_rate:7.0f} {eta:>10s} {r.corpus:7d} {len(r.findings):9d} "
              f"{len(r.new):4d}")
    sys.stdout.flush()


def _replay(argv: list[str]) -> int:
    from pir.testing.fuzz.engine import default_regressions, replay_main

    ap = argparse.ArgumentParser(prog="python -m pir.testing.fuzz replay",
                                 description="Run files through a target's harness.")
    ap.add_argument("target", choices=(*TARGETS, "all"),
                    help="all: every target's regressions folder, or with FILEs, the target "
                         "each one's folder is named after")
    ap.add_argument("files", nargs="*", help="default: tests/fuzz/regressions/<target>/*")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    ap.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB)
    ap.add_argument("--json", action="store_true", help="JSON lines (for the tests)")
    a = ap.parse_intermixed_args(argv)
    jobs = []
    if a.target == "all" and a.files:
        for p in a.files:
            t = os.path.basename(os.path.dirname(os.path.abspath(p)))
            if t not in TARGETS:
                ap.error(f"{p}: not in a folder named after a target ({', '.join(TARGETS)})")
            if jobs and jobs[-1][0] == t:
                jobs[-1][1].append(p)
            else:
                jobs.append((t, [p]))
        return replay_main(jobs, a.timeout, a.memory_mb, a.json)
    for t in (TARGETS if a.target == "all" else (a.target,)):
        files = a.files
        if not files:
            d = default_regressions(t)
            files = sorted(os.path.join(d, n) for n in os.listdir(d)
                           if not n.startswith(".")) if os.path.isdir(d) else []
        jobs.append((t, files))
    return replay_main(jobs, a.timeout, a.memory_mb, a.json)


def _minimize(argv: list[str]) -> int:
    from pir.testing.fuzz.engine import default_regressions, minimize_main

    ap = argparse.ArgumentParser(prog="python -m pir.testing.fuzz minimize",
                                 description="Minimise an input that gives a finding, keeping "
                                             "the finding's type and place, and save it.")
    ap.add_argument("target", choices=TARGETS)
    ap.add_argument("file")
    ap.add_argument("--out", default="", help="default: tests/fuzz/regressions/<target>")
    ap.add_argument("--expect", default="", metavar="TYPE,MODULE,WHERE",
                    help="the finding to keep (default: whatever the input gives)")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    ap.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB)
    ap.add_argument("--no-reduce", action="store_true", help="only name and copy it")
    a = ap.parse_args(argv)
    return minimize_main(a.target, a.file, a.out or default_regressions(a.target),
                         a.expect or None, a.seconds, a.timeout, a.memory_mb, not a.no_reduce)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_worker":
        from pir.testing.fuzz.worker import worker_main

        return worker_main(argv[1:])
    if argv and argv[0] == "replay":
        return _replay(argv[1:])
    if argv and argv[0] == "minimize":
        return _minimize(argv[1:])
    if argv and argv[0] == "seeds":
        from pir.testing.fuzz.seeds import main as seeds_main

        return seeds_main(argv[1:])
    return _fuzz(argv)


if __name__ == "__main__":
    sys.exit(main())

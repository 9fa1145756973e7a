"""Running a target: a supervisor process, a fuzzing worker process, minimisation.

The supervisor (:func:`fuzz_target`) starts a worker (``python -m pir.testing.fuzz _worker``)
with ``RLIMIT_AS`` set, and restarts it for the rest of the time if it dies (a signal, or
libFuzzer's own hard timeout or RSS limit).  The worker runs the harness in-process:

- ``atheris`` (the default when it is installed): libFuzzer's coverage-guided loop over
  pir's modules instrumented with ``atheris.instrument_imports`` (comparison and regex hooks
  on), with the target's dictionary; new coverage goes to the working corpus;
- ``builtin``: a small mutator without coverage feedback (bit flips, interesting bytes,
  insert/delete/duplicate ranges, dictionary tokens, splicing), which keeps an input in the
  corpus when it reaches a new outcome (a PirError from a new place).

Either way the worker catches every exception itself (the oracle in ``harness``), so one run
collects many findings; it records each new one (type and place not seen before, in this
run or among the saved regressions) with its input.  Afterwards the supervisor minimises
each new finding in a fresh process and writes it to the regressions folder.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from pir.testing.fuzz import harness
from pir.testing.fuzz.harness import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT

__all__ = ["Options", "fuzz_target", "minimize_main", "replay_main",
           "repo_root", "have_atheris"]


def repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))


def default_seeds(target: str) -> str:
    return os.path.join(repo_root(), "tests", "fuzz", "seeds", target)


def default_dict(target: str) -> str:
    return os.path.join(repo_root(), "tests", "fuzz", "dicts", f"{target}.dict")


def default_regressions(target: str) -> str:
    return os.path.join(repo_root(), "tests", "fuzz", "regressions", target)


MAX_LEN = {"pir": 8192, "onnx": 8192, "inputs": 4096}


def have_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Options:
    target: str
    seconds: float = 300.0
    corpus: list[str] = field(default_factory=list)  # seed folders (read only)
    workdir: str = ""  # working corpus, raw findings, logs
    regressions: str = ""  # where minimised findings go
    dictionary: str = ""
    engine: str = "auto"
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB
    max_len: int = 0
    minimize_seconds: float = 60.0
    save: bool = True
    seed: int | None = None
    verbose: bool = False

    def resolve(self) -> "Options":
        t = self.target
        self.corpus = self.corpus or [default_seeds(t)]
        self.workdir = self.workdir or os.path.join(repo_root(), "build", "fuzz", t)
        self.regressions = self.regressions or default_regressions(t)
        if not self.dictionary and os.path.exists(default_dict(t)):
            self.dictionary = default_dict(t)
        self.max_len = self.max_len or MAX_LEN[t]
        if self.engine == "auto":
            self.engine = "atheris" if have_atheris() else "builtin"
        return self


# -- the supervisor (the worker is pir.testing.fuzz.worker) --- --------------------------------------------------------------------------------

def known_keys(folder: str) -> set[tuple[str, str, str]]:
    """The findings already saved in ``folder``, by the type and place in their names."""
    out = set()
    for p in glob.glob(os.path.join(folder, "*")):
        out.update(harness.signature_from_name(p))
    return out


def _worker_cmd(target: str, spec_path: str) -> list[str]:
    return [sys.executable, "-m", "pir.testing.fuzz", "_worker", target, spec_path]


@dataclass
class Result:
    target: str
    engine: str
    seconds: float = 0.0
    inputs: int = 0
    restarts: int = 0
    cpu: float = 0.0  # CPU seconds of the workers: the rate per CPU second ignores the load
    corpus: int = 0
    coverage: str = ""
    findings: list[dict] = field(default_factory=list)  # one per distinct (type, place)

    @property
    def rate(self) -> float:
        return self.inputs / self.seconds if self.seconds else 0.0

    @property
    def cpu_rate(self) -> float:
        return self.inputs / self.cpu if self.cpu else 0.0

    @property
    def new(self) -> list[dict]:
        return [f for f in self.findings if f.get("new")]


def _last_coverage(log: str) -> str:
    cov = ""
    try:
        with open(log, errors="replace") as f:
            for line in f:
                m = re.match(r"#\d+\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)", line)
                if m:
                    cov = f"cov {m.group(1)} ft {m.group(2)}"
    except OSError:
        pass
    return cov


def _crash_outcome(log: str, kind: str) -> dict:
    """What a worker that died was doing: the last pir frame of a dumped Python stack."""
    where, module = kind, "libfuzzer"
    try:
        with open(log, errors="replace") as f:
            text = f.read()[-20000:]
    except OSError:
        text = ""
    # faulthandler's dump: the most recent call first
    dump = text.rsplit("most recent call first", 1)[-1] if "most recent call first" in text \
        else ""
    frames = re.findall(r'File "([^"]*/pir/[^"]*)", line (\d+)', dump)
    frames = [fr for fr in frames if "/pir/testing/fuzz/" not in fr[0]]
    if frames:
        module = os.path.splitext(os.path.basename(frames[0][0]))[0]
        where = frames[0][1]
    typ = {"crash": "Crash", "timeout": "HardTimeout", "oom": "OutOfMemory",
           "leak": "Leak"}.get(kind, "Crash")
    sig = re.search(r"(deadly signal|SEGV|ABRT|Segmentation fault|Aborted)", text)
    return {"kind": "finding", "phase": "worker", "type": typ, "module": module, "where": where,
            "location": f"{module}:{where}" + (f" ({sig.group(1)})" if sig else ""),
            "message": f"the worker process died ({kind})"}


def fuzz_target(opts: Options, progress=print) -> Result:
    opts = opts.resolve()
    os.makedirs(opts.workdir, exist_ok=True)
    res = Result(opts.target, opts.engine)
    for stale in ("findings.jsonl", "stats.json"):
        if os.path.exists(os.path.join(opts.workdir, stale)):
            os.unlink(os.path.join(opts.workdir, stale))
    shutil.rmtree(os.path.join(opts.workdir, "raw"), ignore_errors=True)
    for old_log in glob.glob(os.path.join(opts.workdir, "log-*.txt")):
        os.unlink(old_log)
    known = known_keys(opts.regressions)
    found: dict[tuple, dict] = {}
    killers: set[str] = set()  # digests of the inputs that ended a worker
    deadline = time.monotonic() + opts.seconds
    started = time.monotonic()
    attempt = 0
    while True:
        left = deadline - time.monotonic()
        if left < 3 or attempt > 30:
            break
        known_path = os.path.join(opts.workdir, "known.json")
        by_func = {(x["type"], x["module"], "f:" + x["func"]) for x in found.values()
                   if x.get("func") and x["func"] != x["where"]}
        with open(known_path, "w") as f:
            json.dump(sorted(known | set(found) | by_func), f)
        spec = {k: getattr(opts, k) for k in ("seconds", "corpus", "workdir", "regressions",
                                              "dictionary", "engine", "timeout", "memory_mb",
                                              "max_len", "seed", "verbose")}
        spec["seconds"] = left
        spec["known"] = known_path
        spec_path = os.path.join(opts.workdir, "worker.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        log = os.path.join(opts.workdir, f"log-{attempt}.txt")
        art = os.path.join(opts.workdir, "artifacts")
        shutil.rmtree(art, ignore_errors=True)
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu0 = ru.ru_utime + ru.ru_stime
        with open(log, "wb") as lf:
            env = dict(os.environ, PIR_FUZZ_SCRATCH=os.path.join(opts.workdir, "scratch"))
            proc = subprocess.Popen(_worker_cmd(opts.target, spec_path), stdout=lf,
                                    stderr=subprocess.STDOUT, cwd=opts.workdir, env=env)
            next_report = time.monotonic() + 30
            while proc.poll() is None:
                try:
                    proc.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() > deadline + 60:  # libFuzzer did not stop: stop it
                    proc.kill()
                if time.monotonic() >= next_report:
                    next_report += 30
                    st = _read_stats(opts.workdir)
                    n = res.inputs + st.get("inputs", 0)
                    el = time.monotonic() - started
                    progress(f"  {opts.target}: {el:5.0f}s  {n:9d} inputs  "
                             f"{n / el if el else 0:7.0f}/s  "
                             f"findings {len(found) + _count_lines(opts.workdir)}")
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        res.cpu += ru.ru_utime + ru.ru_stime - cpu0
        st = _read_stats(opts.workdir)
        # libFuzzer's own count, when it exited normally, else the last one the worker wrote
        res.inputs += _final_stat(log, "number_of_executed_units") or st.get("inputs", 0)
        if os.path.exists(os.path.join(opts.workdir, "stats.json")):
            os.unlink(os.path.join(opts.workdir, "stats.json"))
        for rec in _read_findings(opts.workdir):
            key = tuple(rec["key"])
            if key not in found:
                found[key] = dict(rec["outcome"], new=rec["new"], raw=rec["raw"], hits=0)
        for k, n in st.get("hits", {}).items():
            key = tuple(k.split("|"))
            if key in found:
                found[key]["hits"] += n
        if os.path.exists(os.path.join(opts.workdir, "findings.jsonl")):
            os.unlink(os.path.join(opts.workdir, "findings.jsonl"))
        res.coverage = _last_coverage(log) or res.coverage
        if proc.returncode == 0:
            break
        # the worker died: a crash, libFuzzer's hard timeout or RSS limit
        res.restarts += 1
        arts = sorted(glob.glob(os.path.join(art, "*")))
        if not arts and os.path.exists(os.path.join(opts.workdir, "current.bin")):
            arts = [os.path.join(opts.workdir, "current.bin")]
        stop = False
        for a in arts:
            kind = os.path.basename(a).split("-", 1)[0]
            kind = kind if kind in ("crash", "timeout", "oom", "leak") else "crash"
            out = _crash_outcome(log, kind)
            key = (out["type"], out["module"], out["where"])
            with open(a, "rb") as f:
                data = f.read()
            digest = hashlib.sha1(data).hexdigest()
            if digest in killers:  # the same input again: it is in a corpus
                stop |= _drop_from_corpus(opts, data, progress)
            killers.add(digest)
            if key in found:
                found[key]["hits"] += 1
                continue
            raw_dir = os.path.join(opts.workdir, "raw")
            os.makedirs(raw_dir, exist_ok=True)
            o = harness.Outcome(**out)
            raw = os.path.join(raw_dir, harness.finding_name(opts.target, o, data))
            with open(raw, "wb") as f:
                f.write(data)
            found[key] = dict(out, new=key not in known, raw=raw, hits=1, log=log)
        if not arts:
            progress(f"  {opts.target}: the worker exited with status {proc.returncode} "
                     f"and no artifact; see {log}")
        if stop:
            break
        attempt += 1
    res.seconds = time.monotonic() - started
    res.corpus = len(os.listdir(os.path.join(opts.workdir, "corpus"))) if os.path.isdir(
        os.path.join(opts.workdir, "corpus")) else 0
    res.findings = list(found.values())
    if opts.save:
        for f in res.new:
            f["saved"] = _minimize_and_save(opts, f, progress)
    return res


def _final_stat(log: str, name: str) -> int:
    try:
        with open(log, errors="replace") as f:
            m = re.findall(rf"stat::{name}:\s*(\d+)", f.read()[-4000:])
    except OSError:
        return 0
    return int(m[-1]) if m else 0


def _drop_from_corpus(opts: Options, data: bytes, progress) -> bool:
    """An input that kills the worker every time it starts: remove it from the working
    corpus; True (stop fuzzing) when it is one of the read-only seeds."""
    for d in [os.path.join(opts.workdir, "corpus")] + list(opts.corpus):
        for p in glob.glob(os.path.join(d, "*")):
            try:
                with open(p, "rb") as f:
                    same = f.read() == data
            except OSError:
                continue
            if not same:
                continue
            if d == os.path.join(opts.workdir, "corpus"):
                os.unlink(p)
                return False
            progress(f"  {opts.target}: the seed {p} kills the worker; fix it or remove it")
            return True
    return False


def _count_lines(workdir: str) -> int:
    try:
        with open(os.path.join(workdir, "findings.jsonl")) as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def _read_stats(workdir: str) -> dict:
    try:
        with open(os.path.join(workdir, "stats.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _read_findings(workdir: str) -> list[dict]:
    out = []
    try:
        with open(os.path.join(workdir, "findings.jsonl")) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut short by a crash
    except OSError:
        pass
    return out


def _minimize_and_save(opts: Options, finding: dict, progress) -> str | None:
    raw = finding.get("raw")
    if not raw or not os.path.exists(raw):
        return None
    os.makedirs(opts.regressions, exist_ok=True)
    key = ",".join((finding["type"], finding["module"], finding["where"]))
    cmd = [sys.executable, "-m", "pir.testing.fuzz", "minimize", opts.target, raw,
           "--out", opts.regressions, "--expect", key, "--seconds", str(opts.minimize_seconds),
           "--timeout", str(opts.timeout), "--memory-mb", str(opts.memory_mb)]
    if finding["type"] in ("Crash", "HardTimeout", "OutOfMemory", "Leak"):
        # what kills a process cannot be minimised in-process: keep the input as it is
        dest = os.path.join(opts.regressions, os.path.basename(raw))
        shutil.copyfile(raw, dest)
        return dest
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=opts.minimize_seconds + 4 * opts.timeout + 120)
        lines = p.stdout.strip().splitlines()
        if p.returncode == 0 and lines:
            done = json.loads(lines[-1])
            if not done["reproduced"]:
                finding["not_reproduced"] = True
                progress(f"  {opts.target}: {os.path.basename(raw)} does not reproduce outside "
                         f"the fuzzing engine; not saved (kept in {os.path.dirname(raw)})")
                return None
            return done["saved"]
    except (subprocess.TimeoutExpired, ValueError, KeyError):
        pass
    # the minimiser itself failed (it may have died on the input): keep the raw input
    dest = os.path.join(opts.regressions, os.path.basename(raw))
    shutil.copyfile(raw, dest)
    progress(f"  {opts.target}: could not minimise {os.path.basename(raw)}; saved as is")
    return dest


# -- minimise and replay (each in its own process) -------------------------------------------------

def minimize_main(target: str, path: str, out_dir: str, expect: str | None, seconds: float,
                  timeout: float, memory_mb: int, reduce: bool = True) -> int:
    from pir.testing.fuzz.minimize import minimize

    harness.set_memory_limit(memory_mb)
    harness.preload(target)
    with open(path, "rb") as f:
        data = f.read()
    first = harness.run_one(target, data, timeout)
    want = tuple(expect.split(",")) if expect else first.key()
    reproduced = first.is_finding and first.key() == want
    small, outcome = data, first
    if reproduced and reduce:
        def still_fails(candidate: bytes) -> bool:
            o = harness.run_one(target, candidate, timeout)
            return o.is_finding and o.key() == want

        small = minimize(data, still_fails, seconds)
        outcome = harness.run_one(target, small, timeout)
        if not (outcome.is_finding and outcome.key() == want):  # flaky: keep the original
            small, outcome = data, first
    dest = None
    if reproduced:  # else an artefact of the engine, or flaky: the caller says so
        os.makedirs(out_dir, exist_ok=True)
        dest = os.path.join(out_dir, harness.finding_name(target, outcome, small))
        with open(dest, "wb") as f:
            f.write(small)
    print(json.dumps({"saved": dest, "reproduced": reproduced, "bytes": len(small),
                      "from_bytes": len(data), "outcome": outcome.as_dict()}))
    return 0


def replay_main(jobs: list[tuple[str, list[str]]], timeout: float, memory_mb: int,
                as_json: bool) -> int:
    """Run files through targets (``jobs``: (target, files) pairs); one line per file (JSON
    lines with ``--json``, each preceded by a ``start`` line, so that a caller can tell which
    input killed the process).  Exit status 1 when any is a finding."""
    harness.set_memory_limit(memory_mb)
    bad = 0
    for target, files in jobs:
        harness.preload(target)
        for p in files:
            if as_json:
                print(json.dumps({"start": p, "target": target}), flush=True)
            with open(p, "rb") as f:
                data = f.read()
            t = time.monotonic()
            out = harness.run_one(target, data, timeout)
            dt = time.monotonic() - t
            bad += out.is_finding
            if as_json:
                print(json.dumps({"file": p, "target": target, "seconds": round(dt, 3),
                                  **out.as_dict(), "traceback": out.tb}), flush=True)
            else:
                what = harness.short(out) if out.is_finding else out.kind
                print(f"{'FINDING' if out.is_finding else 'ok':8s} {target}: "
                      f"{os.path.relpath(p)}: {what} ({dt:.2f}s)", flush=True)
    return 1 if bad else 0

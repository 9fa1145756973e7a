"""The fuzzing worker: the process that runs one target's inputs until its time is up, with
atheris (coverage-guided) or, where atheris is missing, the built-in byte mutator, and
records each finding as it happens (the process may die on any input).  The supervisor
(:mod:`pir.testing.fuzz.engine`) starts it as ``python -m pir.testing.fuzz _worker``."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import random
import re
import sys
import time

from pir.testing.fuzz import harness
from pir.testing.fuzz.engine import Options

__all__ = ["worker_main", "read_dictionary", "Mutator"]


class _Recorder:
    """Findings of one worker, written as they happen (the process may die any time)."""

    def __init__(self, opts: Options, known: set[tuple[str, str, str]]):
        self.opts = opts
        self.known = known
        self.seen: set[tuple[str, str, str]] = set()
        self.count = 0
        self.started = time.monotonic()
        self.next_flush = 0.0
        self.raw_dir = os.path.join(opts.workdir, "raw")
        os.makedirs(self.raw_dir, exist_ok=True)
        self.findings = open(os.path.join(opts.workdir, "findings.jsonl"), "a")
        self.stats_path = os.path.join(opts.workdir, "stats.json")
        self.hits: dict[str, int] = {}

    def outcome(self, out: harness.Outcome, data: bytes) -> None:
        key = out.key()
        k = "|".join(key)
        self.hits[k] = self.hits.get(k, 0) + 1
        if key in self.seen:
            return
        self.seen.add(key)
        raw = None
        new = key not in self.known and out.func_key() not in self.known
        if new:
            raw = os.path.join(self.raw_dir, harness.finding_name(self.opts.target, out, data))
            with open(raw, "wb") as f:
                f.write(data)
        self.findings.write(json.dumps({"key": list(key), "outcome": out.as_dict(),
                                        "raw": raw, "new": new,
                                        "at_input": self.count}) + "\n")
        self.findings.flush()
        if self.opts.verbose:
            print(f"pir-fuzz: finding: {harness.short(out)}", file=sys.stderr, flush=True)

    def tick(self) -> None:
        self.count += 1
        now = time.monotonic()
        if now >= self.next_flush:
            self.flush(now)
            self.next_flush = now + 0.5

    def flush(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        tmp = self.stats_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"inputs": self.count, "seconds": now - self.started,
                       "hits": self.hits}, f)
        os.replace(tmp, self.stats_path)


def _read_known(path: str | None) -> set[tuple[str, str, str]]:
    if not path:
        return set()
    with open(path) as f:
        return {tuple(k) for k in json.load(f)}


def worker_main(argv: list[str]) -> int:
    """``_worker TARGET OPTIONS_JSON``: fuzz in this process until the time is up."""
    target, opts_path = argv[0], argv[1]
    with open(opts_path) as f:
        spec = json.load(f)
    opts = Options(target=target, **{k: v for k, v in spec.items()
                                     if k not in ("known", "target")})
    known = _read_known(spec.get("known"))
    harness.set_memory_limit(opts.memory_mb)
    if opts.engine == "atheris":
        return _atheris_worker(opts, known)
    return _builtin_worker(opts, known)


def _atheris_worker(opts: Options, known) -> int:
    import atheris

    # Comparison hooks for startswith/endswith.  Not "RegEx": atheris 3.0's pattern proxy
    # has no pos argument (Pattern.match(data, pos) raises TypeError), a false finding in
    # pir/ir/resources.py; whatever the engine changes, the minimiser checks every finding
    # again without it.
    try:
        atheris.enabled_hooks.add("str")
    except Exception:  # an atheris without the hook
        pass
    with atheris.instrument_imports(include=["pir"], exclude=["pir.testing.fuzz"]):
        harness.preload(opts.target)
    import faulthandler

    rec = _Recorder(opts, known)
    target, timeout = opts.target, opts.timeout
    run_one = harness.run_one
    hard = int(max(3 * opts.timeout, opts.timeout + 30))
    first = [True]

    def test_one_input(data: bytes) -> None:
        if first[0]:
            # Installed over libFuzzer's handlers, which it chains to: a crash prints the
            # Python stack to the log, then libFuzzer saves the input.
            faulthandler.enable()
            first[0] = False
        rec.tick()
        # a hang in C code that the CPU timer cannot interrupt: the stack, just before
        # libFuzzer's -timeout ends the process
        faulthandler.dump_traceback_later(hard - 2)
        out = run_one(target, data, timeout)
        faulthandler.cancel_dump_traceback_later()
        if out.kind == "finding":
            rec.outcome(out, data)

    corpus_dir = os.path.join(opts.workdir, "corpus")
    art = os.path.join(opts.workdir, "artifacts")
    os.makedirs(corpus_dir, exist_ok=True)
    os.makedirs(art, exist_ok=True)
    args = [sys.argv[0], corpus_dir, *[c for c in opts.corpus if os.path.isdir(c)],
            f"-max_total_time={max(1, int(opts.seconds))}", f"-timeout={hard}",
            f"-rss_limit_mb={opts.memory_mb}", f"-max_len={opts.max_len}",
            f"-artifact_prefix={art}/", "-print_final_stats=1", "-reload=0"]
    if opts.dictionary:
        args.append(f"-dict={opts.dictionary}")
    if opts.seed is not None:
        args.append(f"-seed={opts.seed}")
    atheris.Setup(args, test_one_input)
    try:
        atheris.Fuzz()
    finally:
        rec.flush()
    return 0


# -- the built-in mutator --------------------------------------------------------------------------

_INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x01", b"\xfe", b"\xff\xff\xff\xff",
                b"\x00\x00\x00\x80", b"\xff\xff\xff\xff\xff\xff\xff\x7f", b"-1", b"0",
                b"4294967296", b"9223372036854775807", b"\"", b"\\", b"\n", b"\t", b"{", b"}",
                b"<", b">", b"(", b")", b"[", b"]", b","]


def read_dictionary(path: str) -> list[bytes]:
    """Tokens of a libFuzzer/AFL dictionary (``name="..."`` or ``"..."`` lines, \\xNN escapes)."""
    out = []
    if not path or not os.path.exists(path):
        return out
    with open(path, encoding="latin-1") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.search(r'"(.*)"$', line)
            if not m:
                continue
            s, buf, i = m.group(1), bytearray(), 0
            while i < len(s):
                c = s[i]
                if c == "\\" and i + 1 < len(s):
                    if s[i + 1] == "x" and i + 3 < len(s):
                        buf.append(int(s[i + 2:i + 4], 16))
                        i += 4
                        continue
                    buf.append(ord(s[i + 1]))
                    i += 2
                    continue
                buf.append(ord(c))
                i += 1
            out.append(bytes(buf))
    return out


class Mutator:
    def __init__(self, tokens: list[bytes], rng: random.Random, max_len: int):
        self.tokens = tokens + _INTERESTING
        self.rng = rng
        self.max_len = max_len

    def mutate(self, data: bytes, other: bytes) -> bytes:
        r = self.rng
        b = bytearray(data)
        for _ in range(1 + int(r.expovariate(0.7))):
            op = r.randrange(8)
            n = len(b)
            if op == 0 and n:  # flip a bit
                i = r.randrange(n)
                b[i] ^= 1 << r.randrange(8)
            elif op == 1 and n:  # an interesting byte (sequence) over some bytes
                i = r.randrange(n)
                tok = r.choice(_INTERESTING)
                b[i:i + len(tok)] = tok
            elif op == 2:  # insert random bytes
                i = r.randrange(n + 1)
                b[i:i] = bytes(r.randrange(256) for _ in range(r.randrange(1, 9)))
            elif op == 3 and n:  # delete a range
                i = r.randrange(n)
                del b[i:i + r.randrange(1, min(64, n - i) + 1)]
            elif op == 4 and n:  # duplicate a range
                i = r.randrange(n)
                j = min(n, i + r.randrange(1, 64))
                k = r.randrange(n + 1)
                b[k:k] = b[i:j]
            elif op == 5:  # insert a dictionary token
                i = r.randrange(n + 1)
                b[i:i] = r.choice(self.tokens)
            elif op == 6 and n:  # overwrite with a dictionary token
                i = r.randrange(n)
                tok = r.choice(self.tokens)
                b[i:i + len(tok)] = tok
            elif op == 7 and other:  # splice: a head of this, a tail of another
                i = r.randrange(n + 1)
                j = r.randrange(len(other) + 1)
                b = b[:i] + other[j:]
        return bytes(b[: self.max_len])


def _load_corpus(dirs: list[str]) -> list[bytes]:
    out = []
    for d in dirs:
        for p in sorted(glob.glob(os.path.join(d, "*"))):
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    out.append(f.read())
    return out or [b""]


def _builtin_worker(opts: Options, known) -> int:
    import faulthandler

    harness.preload(opts.target)
    faulthandler.enable()  # a crash in C prints the Python stack to the log
    rec = _Recorder(opts, known)
    corpus_dir = os.path.join(opts.workdir, "corpus")
    os.makedirs(corpus_dir, exist_ok=True)
    corpus = _load_corpus([corpus_dir, *opts.corpus])
    rng = random.Random(opts.seed)
    mut = Mutator(read_dictionary(opts.dictionary), rng, opts.max_len)
    seen_outcomes: set[tuple] = set()
    current = os.path.join(opts.workdir, "current.bin")  # the input a hard crash was on
    deadline = time.monotonic() + opts.seconds
    hard = max(3 * opts.timeout, opts.timeout + 30)
    inputs = iter(corpus)  # the seeds themselves first
    while time.monotonic() < deadline:
        data = next(inputs, None)
        if data is None:
            data = mut.mutate(rng.choice(corpus), rng.choice(corpus))
        with open(current, "wb") as f:
            f.write(data)
        faulthandler.dump_traceback_later(hard, exit=True)
        rec.tick()
        out = harness.run_one(opts.target, data, opts.timeout)
        faulthandler.cancel_dump_traceback_later()
        if out.kind == "finding":
            rec.outcome(out, data)
        # an error message with its numbers and quoted names taken out
        msg = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "", out.message)[:60]
        sig = (out.kind, out.phase, out.type, msg if out.kind == "rejected" else out.where)
        if sig not in seen_outcomes:  # a new way to fail: keep it as a seed
            seen_outcomes.add(sig)
            corpus.append(data)
            with open(os.path.join(corpus_dir, hashlib.sha1(data).hexdigest()), "wb") as f:
                f.write(data)
    rec.flush()
    os.unlink(current)
    return 0

#!/usr/bin/env python3
"""Run every corpus model (manifest.toml) through every pir stage and tabulate what breaks.

    python tests/real/corpus/stages.py                     # every model whose file and data are here
    python tests/real/corpus/stages.py --only silero_vad_v5 --keep
    python tests/real/corpus/stages.py --jobs 2 --timeout 600 --json results.json --markdown report.md
    python tests/real/corpus/stages.py --snapshot          # pir as committed at HEAD (git archive), not the work tree
    python tests/real/corpus/stages.py --from-json results.json   # re-render an earlier run's report

Per model (in WORK/NAME/, a temp dir unless --work):

    import    pir import NAME.onnx -o n.pir
    run       pir run n.pir --inputs in.npz -o out.npz, compared with NAME.npz (onnxruntime)
    opt       pir optimize n.pir -o o.pir
    run-o     pir run o.pir ...
    fuse      pir optimize n.pir -p 'decompose,canonicalize,fold,cse,dce,shapes,fuse' -o f.pir
    llvm      pir codegen f.pir --target llvm -o k.pir --explain
    run-k     pir run k.pir --threads 1 ... (the tvm runtime; kernels built into a private cache)
    cuda      pir codegen f.pir --target cuda --emit-sources cu -o g.pir --explain
    nvcc      nvcc -arch=sm_90 --ptx each cu/*.cu (skipped when nvcc is not on PATH)
    run2 / run-o2 / run-k2   the same three programs on the second input size (NAME.size2.npz)

A run stage is `ok` when the worst max|got - ref| / max|ref| over the outputs (the measure of
/work/shared/repro/compare.py) is at most --tol (1e-4), `WRONG` when it ran but is further off,
`FAIL` when pir exited non-zero, `T/O` past --timeout; a stage whose input failed is `-`.  A
model that quantizes its activations (QDQ, DynamicQuantize*, QLinear*) is judged, past --tol,
by `pir run --check`'s measure instead: agreement with ORT_ENABLE_ALL in quanta
(pir/runtimes/ort/quanta.py).
Failures are grouped by cause (the innermost message of pir's `pir: error:` line with names
and numbers blanked) and numbered E1, E2, ... in the table.

Times: `pir` is the median of --repeat runs as `pir run --repeat` reports it, `ort` the median of
as many runs of onnxruntime (all graph optimizations, one thread; pir's reference runtime and
`--threads 1` tvm are single-threaded too), both in milliseconds and excluding loading.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus_store as mc  # noqa: E402

PIR = os.environ.get("PIR") or str(Path(sys.executable).with_name("pir"))
FUSE = "decompose,canonicalize,fold,cse,dce,shapes,fuse"
STAGES = ["import", "run", "opt", "run-o", "fuse", "llvm", "run-k", "cuda", "nvcc", "run2", "run-o2", "run-k2"]
NEEDS = {"run": "import", "opt": "import", "run-o": "opt", "fuse": "import", "llvm": "fuse", "run-k": "llvm",
         "cuda": "fuse", "nvcc": "cuda", "run2": "import", "run-o2": "opt", "run-k2": "llvm"}
PROGRAM = {"run": "n.pir", "run-o": "o.pir", "run-k": "k.pir", "run2": "n.pir", "run-o2": "o.pir", "run-k2": "k.pir"}


# ---------------------------------------------------------------------- inputs and comparison

def write_inputs(src: Path, dst: Path) -> None:
    """As compare.py's `inputs`: the in_<name> arrays of SRC under their own names."""
    d = np.load(src)
    np.savez(dst, **{k[3:]: d[k] for k in d.files if k.startswith("in_")})


def max_rel_err(src: Path, out: Path) -> tuple[float | None, str]:
    """As compare.py's `compare`: the worst max|got - ref| / max|ref| over the outputs."""
    ref, got = np.load(src), np.load(out)
    worst = 0.0
    for k in ref.files:
        if not k.startswith("out_"):
            continue
        name = k[4:]
        if name not in got.files:
            return None, f"missing output {name}; have {sorted(got.files)}"
        r = ref[k].astype(np.float64)
        g = got[name].astype(np.float64)
        if r.shape != g.shape:
            return None, f"{name}: shape {g.shape} != {r.shape}"
        r, g = np.atleast_1d(r), np.atleast_1d(g)  # (a scalar output: plcmos_v2's score)
        if r.size:
            with np.errstate(invalid="ignore"):
                diff = np.abs(g - r)
            both_nan = np.isnan(g) & np.isnan(r)
            diff[both_nan] = 0
            e = float(np.max(diff)) / max(float(np.max(np.abs(np.where(np.isnan(r), 0, r)))), 1e-6)
            worst = max(worst, e if not np.isnan(e) else float("inf"))
    return worst, ""


def is_quantized(model: Path) -> bool:
    import onnx

    from pir.runtimes.ort.quanta import is_quantized as quantizes

    return quantizes(onnx.load(str(model), load_external_data=False))


def quanta_verdict(model: Path, data: Path, out: Path) -> tuple[bool, str]:
    """For a model that quantizes its activations, `pir run --check`'s measure
    (pir.runtimes.ort.check.quantized_agreement): agreement with ORT_ENABLE_ALL counted in
    quanta, a float output within quantization noise; a float tolerance against the
    unoptimized run is the wrong measure there (one ulp before a quantizer flips a quantum)."""
    import onnx

    from pir.runtimes.ort.check import ort_spread_runs, quantized_agreement, run_onnxruntime
    from pir.runtimes.ort.quanta import output_quanta

    m = onnx.load(str(model))
    d, got = np.load(data), np.load(out)
    feeds = {k[3:]: d[k] for k in d.files if k.startswith("in_")}
    want = run_onnxruntime(m, feeds, optimized=True)
    plain = ort_spread_runs(m, feeds)
    quanta = output_quanta(m)
    notes = []
    for name, w in want.items():
        if name not in got.files:
            return False, f"missing output {name}"
        ok, note = quantized_agreement(got[name], w, plain.get(name), quanta.get(name))
        if not ok:
            return False, f"{name}: {note}"
        notes.append(f"{name}: {note}")
    return True, "; ".join(notes)


def ort_latency(model: Path, inputs: Path, repeat: int) -> float | None:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    try:
        s = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        d = np.load(inputs)
        feeds = {k[3:]: d[k] for k in d.files if k.startswith("in_")}
        s.run(None, feeds)
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            s.run(None, feeds)
            ts.append(time.perf_counter() - t)
        return 1000 * float(np.median(ts))
    except Exception:  # noqa: BLE001
        return None


# ------------------------------------------------------------------------------ error causes

LOC = re.compile(r'^[\w.]+ "[^"]*" at [^:]+:\d+:\d+: ')


def first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("pir: error:") or ln.startswith("Error:"):
            return ln
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln:
            return ln
    return lines[-1] if lines else "(no output)"


def cause(msg: str) -> str:
    """The innermost message with the op chain, paths, names and numbers blanked: a key to group by."""
    m = msg.removeprefix("pir: error:").strip()
    m = re.sub(r"^\S+\.(onnx|pir): ", "", m)
    while True:
        n = LOC.sub("", m)
        if n == m:
            break
        m = n
    m = re.sub(r'"[^"]*"', '"…"', m)
    m = re.sub(r"'[^'\s]*'", "'…'", m)
    m = re.sub(r"%[\w./:#-]+", "%…", m)
    m = re.sub(r"\bunk__\d+\b", "unk__N", m)
    m = re.sub(r"\btensor<[^>]*>", "tensor<…>", m)
    m = re.sub(r"\((\w+)\)", "(…)", m)
    m = re.sub(r"(?<![\w.])\d+(\.\d+)?\b", "N", m)
    m = re.sub(r"\([^()]*\)", "(…)", m) if len(m) > 160 else m
    return m[:200]


def classify(stage: str, s: dict) -> str | None:
    """The cause key of a stage's result (None when it is fine)."""
    if s["status"] == "T/O":
        return "timeout"
    if s["status"] == "WRONG" and s.get("err") is not None:
        return "wrong result: max rel err above the tolerance"
    if s["status"] not in ("FAIL", "WRONG") or "error" not in s:
        return None
    if stage == "nvcc":
        return "nvcc: " + cause(re.sub(r"^.*\.cu(\(\d+\))?: ", "", s["error"]))
    return cause(s["error"])


# ------------------------------------------------------------------------------------ stages

def sh(cmd: list[str], cwd: Path, timeout: int, env: dict) -> tuple[int | str, str, float]:
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc: int | str = p.returncode
        out = p.stderr + "\n" + p.stdout
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        out = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    return rc, out, time.perf_counter() - t


LATENCY = re.compile(r"latency: median ([\d.]+) ms")
EXPLAIN = re.compile(r"codegen[^:]*: (\d+) fusion groups -> (kernel\.\w+) \((\d+) distinct kernels.*?(\d+) left as fusion\.group")


def run_model(m: dict, args) -> dict:
    name = m["name"]
    model = mc.model_path(m)
    res = {"name": name, "bytes": m["bytes"], "stored": m["stored"], "stages": {}}
    data = {1: mc.data_path(m, 1), 2: mc.data_path(m, 2)}
    if not model.exists() or not data[1].exists():
        res["missing"] = True
        return res
    wd = Path(args.work) / name
    if wd.exists():
        shutil.rmtree(wd)
    wd.mkdir(parents=True)
    env = dict(os.environ, PIR_CACHE_DIR=str(wd / "cache"))
    if args.pir_src:
        env["PYTHONPATH"] = args.pir_src + os.pathsep + env.get("PYTHONPATH", "")
    write_inputs(data[1], wd / "in.npz")
    if data[2].exists():
        write_inputs(data[2], wd / "in2.npz")
    st = res["stages"]
    quantized = is_quantized(model)
    ort_ms = {1: ort_latency(model, data[1], args.repeat),
              2: ort_latency(model, data[2], args.repeat) if data[2].exists() else None}
    res["ort_ms"] = ort_ms[1]
    res["ort_ms2"] = ort_ms[2]

    def record(stage, rc, out, secs, **extra):
        r = {"status": "ok" if rc == 0 else "T/O" if rc == "timeout" else "FAIL", "secs": round(secs, 2), **extra}
        if rc != 0:
            r["error"] = first_error(out) if rc != "timeout" else f"timed out after {args.timeout} s"
        r["cause"] = classify(stage, r)
        st[stage] = r
        return rc == 0

    cmds = {
        "import": [PIR, "import", str(model), "-o", "n.pir"],
        "opt": [PIR, "optimize", "n.pir", "-o", "o.pir"],
        "fuse": [PIR, "optimize", "n.pir", "-p", FUSE, "-o", "f.pir"],
        "llvm": [PIR, "codegen", "f.pir", "--target", "llvm", "-o", "k.pir", "--explain"],
        "cuda": [PIR, "codegen", "f.pir", "--target", "cuda", "--emit-sources", "cu", "-o", "g.pir", "--explain"],
    }
    for stage in args.stages:
        dep = NEEDS.get(stage)
        if dep and st.get(dep, {}).get("status") != "ok":
            st[stage] = {"status": "-"}
            continue
        if stage in cmds:
            rc, out, secs = sh(cmds[stage], wd, args.timeout, env)
            extra = {}
            mm = EXPLAIN.search(out)
            if mm:
                raw = sorted({ln.strip().split(":", 1)[1].strip() for ln in out.splitlines()
                              if ln.strip().startswith("kept ") and ":" in ln})
                extra = {"groups": int(mm[1]), "kernels": int(mm[3]), "kept": int(mm[4]),
                         "kept_raw": raw, "kept_why": sorted({cause(w) for w in raw})}
            record(stage, rc, out, secs, **extra)
        elif stage in PROGRAM:
            size = 2 if stage.endswith("2") else 1
            if not data[size].exists():
                st[stage] = {"status": "-"}
                continue
            ins = "in2.npz" if size == 2 else "in.npz"
            outf = f"out-{stage}.npz"
            cmd = [PIR, "run", PROGRAM[stage], "--inputs", ins, "-o", outf, "--repeat", str(args.repeat)]
            if stage.startswith("run-k"):
                cmd += ["--threads", "1"]
            rc, out, secs = sh(cmd, wd, args.timeout, env)
            lat = LATENCY.search(out)
            ok = record(stage, rc, out, secs, pir_ms=float(lat[1]) if lat else None, ort_ms=ort_ms[size])
            if ok:
                err, why = max_rel_err(data[size], wd / outf)
                st[stage]["err"] = err
                if err is None:
                    st[stage].update(status="WRONG", error=why)
                elif err > args.tol and quantized:
                    ok, note = quanta_verdict(model, data[size], wd / outf)
                    st[stage].update(measure="quanta", note=note)
                    if not ok:
                        st[stage].update(status="WRONG", error=note)
                elif err > args.tol:
                    st[stage].update(status="WRONG", error=f"max rel err {err:.2e}")
                st[stage]["cause"] = classify(stage, st[stage])
        elif stage == "nvcc":
            cus = sorted((wd / "cu").glob("*.cu"))
            if not shutil.which("nvcc"):
                st[stage] = {"status": "-", "error": "no nvcc"}
                continue
            t0 = time.perf_counter()
            fails, first = 0, None
            for cu in cus:
                left = args.timeout - (time.perf_counter() - t0)
                if left <= 0:
                    break
                rc, out, _ = sh(["nvcc", "-arch=sm_90", "--ptx", "-w", "-o", str(wd / "x.ptx"), str(cu)], wd, int(left) + 1, env)
                if rc != 0:
                    fails += 1
                    if first is None:
                        err = next((ln for ln in out.splitlines() if "error" in ln), first_error(out))
                        first = f"{cu.name}: {err.strip()}"
            secs = time.perf_counter() - t0
            if secs > args.timeout:
                st[stage] = {"status": "T/O", "secs": round(secs, 1), "files": len(cus), "cause": "timeout",
                             "error": f"timed out after {args.timeout} s"}
            elif fails:
                st[stage] = {"status": "FAIL", "secs": round(secs, 1), "files": len(cus), "failed": fails, "error": first}
                st[stage]["cause"] = classify(stage, st[stage])
            else:
                st[stage] = {"status": "ok", "secs": round(secs, 1), "files": len(cus)}
    if not args.keep:
        shutil.rmtree(wd, ignore_errors=True)
    return res


# ------------------------------------------------------------------------------------ report

def unsupported_ops(results: list[dict]) -> dict[str, set[str]]:
    """The ops named by 'unsupported ONNX ops' import errors, by domain."""
    ops: dict[str, set[str]] = {}
    for r in results:
        err = r["stages"].get("import", {}).get("error", "")
        if "unsupported ONNX ops:" not in err:
            continue
        for dom, op in re.findall(r"(?:([\w.]+)::)?([A-Za-z]\w*) \(opset", err.split("unsupported ONNX ops:", 1)[1]):
            ops.setdefault(dom or "ai.onnx", set()).add(op)
    return ops


def markdown(results: list[dict]) -> str:
    causes: dict[str, str] = {}
    for r in results:
        for s in STAGES:
            c = r["stages"].get(s, {}).get("cause")
            if c and c not in causes:
                causes[c] = f"E{len(causes) + 1}"

    def cell(s: dict | None) -> str:
        if not s:
            return ""
        if s["status"] in ("FAIL", "T/O", "WRONG") and s.get("cause") in causes:
            tag = causes[s["cause"]]
            return f"{s['status']} {tag}" if s["status"] != "WRONG" or s.get("err") is None else f"WRONG {s['err']:.0e}"
        if s["status"] == "ok" and s.get("err") is not None:
            return f"ok {s['err']:.0e}"
        if s["status"] == "ok" and "failed" not in s and "files" in s:
            return f"ok ({s['files']})"
        return s["status"]

    head = ["model", "MB"] + STAGES + ["pir ms (n / o / k)", "ort ms", "kernels llvm (kept)", "kernels cuda (kept)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        st = r["stages"]
        if r.get("missing"):
            rows.append(f"| {r['name']} | {r['bytes'] / 1e6:.1f} | " + " | ".join(["(not fetched)"] + [""] * (len(head) - 3)) + " |")
            continue
        ms = " / ".join(f"{st[s]['pir_ms']:.1f}" if st.get(s, {}).get("pir_ms") is not None and st[s]["status"] != "FAIL" else "-"
                        for s in ("run", "run-o", "run-k"))
        ort_ms = f"{r['ort_ms']:.1f}" if r.get("ort_ms") is not None else "-"
        kl = st.get("llvm", {})
        kc = st.get("cuda", {})
        kls = f"{kl['kernels']} ({kl['kept']})" if "kernels" in kl else ""
        kcs = f"{kc['kernels']} ({kc['kept']})" if "kernels" in kc else ""
        rows.append(f"| {r['name']} | {r['bytes'] / 1e6:.1f} | " + " | ".join(cell(st.get(s)) for s in STAGES)
                    + f" | {ms} | {ort_ms} | {kls} | {kcs} |")
    results_by_name = {r["name"]: r for r in results}
    out = ["\n".join(rows), "", "Causes (the first error line of up to three models each; every model:stage listed):", ""]
    for c, tag in causes.items():
        where = [(r["name"], s) for r in results for s in STAGES if r["stages"].get(s, {}).get("cause") == c]
        examples, seen = [], set()
        for name, s in where:
            if name not in seen and len(examples) < 3:
                seen.add(name)
                examples.append(f"`{results_by_name[name]['stages'][s]['error'][:400]}` ({name}:{s})")
        out.append(f"- **{tag}** `{c}`  \n  e.g. " + "  \n  ".join(examples)
                   + f"  \n  in: {', '.join(f'{n}:{s}' for n, s in where)}")
    why: dict[str, list[str]] = {}
    for r in results:
        for s in ("llvm", "cuda"):
            for w in r["stages"].get(s, {}).get("kept_why", []):
                why.setdefault(f"{s}: {w}", []).append(r["name"])
    if why:
        out += ["", "Groups codegen kept as fusion.group, by reason (models):", ""]
        out += [f"- `{w}`: {', '.join(sorted(set(ms)))}" for w, ms in sorted(why.items())]
    ops = unsupported_ops(results)
    if ops:
        out += ["", "Unsupported ONNX ops (import errors), by domain:", ""]
        out += [f"- {d}: {', '.join(sorted(v))}" for d, v in sorted(ops.items())]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated model names (default: all that are present)")
    ap.add_argument("--skip", default="", help="comma-separated model names to leave out")
    ap.add_argument("--committed", action="store_true", help="only the committed models")
    ap.add_argument("--stages", default=",".join(STAGES), help="comma-separated stages to run")
    ap.add_argument("--jobs", type=int, default=2, help="models at a time (default 2)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per stage (default 600)")
    ap.add_argument("--tol", type=float, default=1e-4, help="max rel err of a run stage (default 1e-4)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per run stage (default 3)")
    ap.add_argument("--work", default="", help="work dir (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep each model's work dir")
    ap.add_argument("--json", default="", help="write the results here")
    ap.add_argument("--markdown", default="", help="write the table and causes here")
    ap.add_argument("--snapshot", nargs="?", const="HEAD", default="",
                    help="run pir as committed at this revision (default HEAD: `git archive` of pir/ into a temp dir, "
                         "first on PYTHONPATH), not the working tree, which may be changing under the run")
    ap.add_argument("--pir-src", default="", help="a directory holding the pir package to run instead of the installed one")
    ap.add_argument("--from-json", default="", help="only render the report of an earlier --json (causes recomputed)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when any stage is FAIL, WRONG or T/O")
    args = ap.parse_args(argv)
    args.stages = [s for s in args.stages.split(",") if s]
    unknown = set(args.stages) - set(STAGES)
    if unknown:
        raise SystemExit(f"unknown stages {sorted(unknown)}; have {STAGES}")
    if args.from_json:
        ordered = json.loads(Path(args.from_json).read_text())
        for r in ordered:
            for stage, v in r["stages"].items():
                v["cause"] = classify(stage, v)
                if "kept_raw" in v:
                    v["kept_why"] = sorted({cause(w) for w in v["kept_raw"]})
        md = markdown(ordered)
        print(md)
        if args.markdown:
            Path(args.markdown).write_text(md + "\n")
        return 0
    only = {s for s in args.only.split(",") if s}
    skip = {s for s in args.skip.split(",") if s}
    models = [m for m in mc.load_manifest() if (not only or m["name"] in only) and m["name"] not in skip
              and (not args.committed or m["stored"] == "committed")]
    tmp = None
    if not args.work:
        tmp = tempfile.mkdtemp(prefix="pir-corpus-")
        args.work = tmp
    snap = None
    if args.snapshot:
        root = HERE.parents[2]
        snap = tempfile.mkdtemp(prefix="pir-snapshot-")
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", args.snapshot], check=True,
                             capture_output=True, text=True).stdout.strip()
        arch = subprocess.run(["git", "-C", str(root), "archive", rev, "pir"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", snap], input=arch, check=True)
        args.pir_src = snap
        print(f"pir from {rev} (git archive into {snap})", flush=True)
    results: dict[str, dict] = {}
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(run_model, m, args): m["name"] for m in models}
        for f in cf.as_completed(futs):
            name = futs[f]
            try:
                r = f.result()
            except Exception as e:  # noqa: BLE001
                r = {"name": name, "stages": {}, "bytes": 0, "stored": "?", "crash": repr(e)}
            results[name] = r
            line = " ".join(f"{s}={r['stages'][s]['status']}" for s in STAGES if s in r["stages"])
            print(f"[{time.perf_counter() - t0:7.1f}s] {name}: {'not fetched' if r.get('missing') else line}", flush=True)
    ordered = [results[m["name"]] for m in models]
    md = markdown(ordered)
    print()
    print(md)
    if args.json:
        Path(args.json).write_text(json.dumps(ordered, indent=1, default=str))
    if args.markdown:
        Path(args.markdown).write_text(md + "\n")
    if tmp and not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    if snap:
        shutil.rmtree(snap, ignore_errors=True)
    bad = [f"{r['name']}:{s}" for r in ordered for s, v in r["stages"].items() if v["status"] in ("FAIL", "WRONG", "T/O")]
    return 1 if args.strict and (bad or any(r.get("crash") for r in ordered)) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The PINN residual r = -(∂²u/∂x² + ∂²u/∂y²) - f of a tanh MLP u(x, y) (samples/pinn's
network, float32) over 4096 points: pir's compiled second derivative against JAX on the CPU,
side by side in one run, best of --repeat, one thread each by default.

- pir: ``pir autodiff --wrt x --order 2 --seed ones`` (and ``y``) in both modes, reverse
  over reverse (``--mode rev``, the default) and forward over forward (``--mode fwd``); a
  residual function that calls both (inlined, so cse shares their forward pass), the fuse
  pipeline (``decompose,canonicalize,fold,cse,dce,shapes,fuse``), ``codegen --target llvm``,
  the tvm runtime, as bench/models.py times compiled programs.
- JAX: ``jax.jit`` of ``jax.hessian`` of the scalar network vmapped over the points, of
  nested ``jax.grad``, and (for the like-for-like forward mode) of nested ``jax.jvp``, run by
  the Python of a separate virtual environment (JAX is a bench extra, never a dependency of
  pir): --jax-python, default /tmp/jaxvenv/bin/python (``python3 -m venv /tmp/jaxvenv &&
  /tmp/jaxvenv/bin/pip install jax``).

Printed: per pir mode, its op count (prim ops of the derivative program before fusion,
constants excluded), kernels after codegen, time and the max relative difference of its
residual from JAX's; per JAX form, its jaxpr equation count (nested jaxprs included), time
and each pir mode's time ratio; pir's time split per op (its runtime's profile).  Target:
pir/JAX <= 1.0x against ``hessian`` and ``grad(grad)``.  Asserts nothing.

    .venv/bin/python bench/autodiff.py [--points 4096] [--hidden 32] [--threads 1]
                                       [--repeat 20] [--symbolic] [--jax-python PATH]
"""

from __future__ import annotations

import argparse
import os

_ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ap.add_argument("--points", type=int, default=4096)
_ap.add_argument("--hidden", type=int, default=32)
_ap.add_argument("--threads", type=int, default=1)
_ap.add_argument("--repeat", type=int, default=20)
_ap.add_argument("--jax-python", default="/tmp/jaxvenv/bin/python")
_ap.add_argument("--symbolic", action="store_true",
                 help="compile pir's program for a symbolic point count N (one program for any "
                      "count; default: exactly --points points, as jax.jit specializes)")
ARGS = _ap.parse_args()

from benchenv import best_time, use_threads  # noqa: E402

use_threads(ARGS.threads)  # before anything imports numpy or tvm

import importlib.util  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]

import pir.codegen.tvm as ptvm  # noqa: E402,F401  (imports tvm with TVM_NUM_THREADS set)
from pir.cli.link_cmd import link  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.frontends.onnx.importer import import_model  # noqa: E402
from pir.ir.dialects.builtin import ConstantOp  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import Parser  # noqa: E402
from pir.passes.autodiff import differentiate  # noqa: E402
from pir.passes.autodiff.inline import inline_calls  # noqa: E402
from pir.passes.manager import PassManager  # noqa: E402
from pir.passes.pipeline import parse_pipeline  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402

OPT = "decompose,canonicalize,fold,cse,dce,shapes"
FUSE = OPT + ",fuse"
WEIGHTS = ("w1", "b1", "w2", "b2", "w3", "b3")


def sample():
    spec = importlib.util.spec_from_file_location("pinn_model",
                                                  ROOT / "samples" / "pinn" / "make_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def residual_module(pinn, hidden: int, points: int | str, mode: str = "rev"):
    """u, @u_xx, @u_yy (pir autodiff --mode MODE) and @residual calling both, calls
    inlined."""
    module = import_model(pinn.build(hidden, "float32", points))
    differentiate(module, ["x"], mode=mode, order=2, seed="ones", name="u_xx")
    differentiate(module, ["y"], mode=mode, order=2, seed="ones", name="u_yy")
    t = f"tensor<{points}x1xf32>"
    wt = {"w1": f"tensor<2x{hidden}xf32>", "b1": f"tensor<{hidden}xf32>",
          "w2": f"tensor<{hidden}x{hidden}xf32>", "b2": f"tensor<{hidden}xf32>",
          "w3": f"tensor<{hidden}x1xf32>", "b3": "tensor<1xf32>"}
    args = ", ".join(["%x: " + t, "%y: " + t] + [f"%{k}: {v}" for k, v in wt.items()])
    call_args = ", ".join(["%x", "%y"] + [f"%{k}" for k in WEIGHTS])
    call_types = ", ".join([t, t] + list(wt.values()))
    text = f"""module @r {{
  func.func @residual({args}, %f: {t}) -> ({t}) {{
    %uxx = func.call({call_args}) {{callee = @u_xx}} : ({call_types}) -> {t}
    %uyy = func.call({call_args}) {{callee = @u_yy}} : ({call_types}) -> {t}
    %lap = prim.add(%uxx, %uyy) : ({t}, {t}) -> {t}
    %neg = prim.neg(%lap) : ({t}) -> {t}
    %r = prim.sub(%neg, %f) : ({t}, {t}) -> {t}
    func.return(%r) : ({t}) -> ()
  }}
}}
"""
    module = link([module, Parser(text, "residual.pir").parse_module()], ["u", "residual"])
    fn = module.lookup("residual")
    inline_calls(module, fn)
    for other in [f for f in module.funcs if f is not fn]:
        module.body.block.remove(other)
    return module


JAX_SCRIPT = r"""
import json, sys, time
import numpy as np
import jax, jax.numpy as jnp
data = dict(np.load(sys.argv[1]))
repeat = int(sys.argv[2])
p = {k: jnp.asarray(data[k]) for k in ("w1", "b1", "w2", "b2", "w3", "b3")}
x, y, f = (jnp.asarray(data[k][:, 0]) for k in ("x", "y", "f"))

def u(p, x, y):  # one point
    h = jnp.tanh(jnp.stack([x, y]) @ p["w1"] + p["b1"])
    h = jnp.tanh(h @ p["w2"] + p["b2"])
    return (h @ p["w3"] + p["b3"])[0]

def res_hessian(p, x, y, f):
    def lap(x, y):
        hess = jax.hessian(lambda v: u(p, v[0], v[1]))(jnp.stack([x, y]))
        return hess[0, 0] + hess[1, 1]
    return -jax.vmap(lap)(x, y) - f

def res_grad(p, x, y, f):
    uxx = jax.grad(jax.grad(u, 1), 1)
    uyy = jax.grad(jax.grad(u, 2), 2)
    return -jax.vmap(lambda a, b: uxx(p, a, b) + uyy(p, a, b))(x, y) - f

def res_jvp(p, x, y, f):  # forward over forward, pir's --mode fwd
    def d2(g, v):
        return jax.jvp(lambda v: jax.jvp(g, (v,), (jnp.ones_like(v),))[1], (v,),
                       (jnp.ones_like(v),))[1]
    def lap(a, b):
        return d2(lambda a: u(p, a, b), a) + d2(lambda b: u(p, a, b), b)
    return -jax.vmap(lap)(x, y) - f

def eqns(jaxpr):
    n = 0
    for e in jaxpr.eqns:
        n += 1
        for v in e.params.values():
            for sub in (v if isinstance(v, (list, tuple)) else [v]):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None:
                    n += eqns(inner if hasattr(inner, "eqns") else inner.jaxpr)
    return n

out = {"version": jax.__version__}
for name, fn in (("hessian", res_hessian), ("grad", res_grad), ("jvp", res_jvp)):
    jitted = jax.jit(fn)
    r = jitted(p, x, y, f).block_until_ready()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        jitted(p, x, y, f).block_until_ready()
        best = min(best, time.perf_counter() - t)
    out[name] = {"time": best, "eqns": eqns(jax.make_jaxpr(fn)(p, x, y, f).jaxpr),
                 "r": np.asarray(r).tolist()}
print(json.dumps(out))
"""


def run_jax(data_path: str, args) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    if args.threads == 1:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    r = subprocess.run([args.jax_python, "-c", JAX_SCRIPT, data_path, str(args.repeat)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"JAX failed ({args.jax_python}):\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


MODES = (("rev", "reverse over reverse"), ("fwd", "forward over forward"))
JAX_FORMS = (("hessian", "vmap(hessian)"), ("grad", "vmap(grad(grad))"),
             ("jvp", "vmap(jvp(jvp))"))


def compile_residual(pinn, args, mode: str) -> dict:
    """pir's residual program for one autodiff mode, compiled: its interpreter, function,
    op count before fusion and kernel count after codegen, and build time."""
    t0 = time.perf_counter()
    module = residual_module(pinn, args.hidden, "N" if args.symbolic else args.points, mode)
    PassManager(parse_pipeline(OPT)).run(module)
    fn = module.lookup("residual")
    n_ops = sum(1 for op in fn.entry.ops[:-1] if not isinstance(op, ConstantOp))
    PassManager(parse_pipeline(FUSE)).run(module)
    codegen_module(module, "llvm")
    return {"interp": TvmInterpreter(module), "fn": fn, "ops": n_ops,
            "kernels": sum(isinstance(op, TvmKernelOp) for op in fn.entry.ops),
            "build": time.perf_counter() - t0}


def time_split(pir: dict, feeds: dict) -> tuple[float, list]:
    """One more run, timed per op (pir run --profile): its time and the six largest shares."""
    interp = pir["interp"]
    interp.profile = prof = {}
    t = time.perf_counter()
    interp.run(pir["fn"], feeds)
    total = time.perf_counter() - t
    interp.profile = None
    split = defaultdict(float)
    for (what, name), (_, dt) in prof.items():
        split[f"kernel {name}" if what == "kernel" else name] += dt
    return total, sorted(split.items(), key=lambda kv: -kv[1])[:6]


def main() -> None:
    args = ARGS
    if not pathlib.Path(args.jax_python).exists():
        print(f"bench/autodiff.py: skipped, no JAX python at {args.jax_python} (python3 -m venv "
              "/tmp/jaxvenv && /tmp/jaxvenv/bin/pip install jax, or pass --jax-python)")
        return
    pinn = sample()
    data = pinn.data(args.points, args.hidden, dtype="float32")
    feeds = {k: data[k] for k in ("x", "y", "f") + WEIGHTS}
    pirs = {mode: compile_residual(pinn, args, mode) for mode, _ in MODES}
    for p in pirs.values():
        p["r"] = p["interp"].run(p["fn"], feeds)["r"][:, 0]
        p["time"] = best_time(lambda: p["interp"].run(p["fn"], feeds), args.repeat)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, **data)
        jx = run_jax(path, args)
    reference = np.asarray(jx["hessian"]["r"], np.float32)
    scale = max(float(np.abs(reference).max()), 1e-30)

    shape = "a symbolic point count" if args.symbolic else f"{args.points} points"
    print(f"PINN residual -(u_xx + u_yy) - f, tanh MLP 2-{args.hidden}-{args.hidden}-1, "
          f"{args.points} points, float32; pir (tvm runtime, llvm) vs JAX {jx['version']} "
          f"(jax.jit, CPU); {args.threads} thread(s), best of {args.repeat}, wall time")
    print(f"\n{'pir autodiff --order 2':<34}{'prim ops':>9}{'kernels':>8}{'build s':>8}"
          f"{'max rel diff':>14}{'ms':>8}")
    for mode, label in MODES:
        p = pirs[mode]
        err = float(np.abs(p["r"] - reference).max()) / scale
        print(f"{'--mode ' + mode + ' (' + label + ')':<34}{p['ops']:>9}{p['kernels']:>8}"
              f"{p['build']:>8.1f}{err:>14.1e}{p['time'] * 1e3:>8.3f}")
    print(f"(prim ops: the derivative program before fusion, constants excluded, for {shape};"
          " max rel diff: against JAX's hessian)")
    print(f"\n{'JAX':<24}{'jaxpr eqns':>11}{'ms':>8}" +
          "".join(f"{'pir ' + m + '/JAX':>14}" for m, _ in MODES))
    for form, label in JAX_FORMS:
        r = jx[form]
        print(f"{label:<24}{r['eqns']:>11}{r['time'] * 1e3:>8.3f}" +
              "".join(f"{pirs[m]['time'] / r['time']:>13.2f}x" for m, _ in MODES))
    print("(jaxpr eqns: nested jaxprs included)")
    best = min(pirs, key=lambda m: pirs[m]["time"])
    target = min(jx[f]["time"] for f in ("hessian", "grad"))
    print(f"\nTarget: pir/JAX <= 1.0x. pir's best (--mode {best}) / JAX's best of hessian and "
          f"grad(grad): {pirs[best]['time'] / target:.2f}x")
    for mode, _ in MODES:
        total, top = time_split(pirs[mode], feeds)
        print(f"pir --mode {mode} time split (one extra run, {total * 1e3:.3f} ms): " +
              ", ".join(f"{k} {v / total:.0%}" for k, v in top))


if __name__ == "__main__":
    main()

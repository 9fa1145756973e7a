"""Generates FileCheck tests for decomposition rules that have none written by hand, in the
manner of MLIR's generate-test-checks.py: for each such nn op, the first passing ONNX node
case that uses it is imported, and the prim ops its decomposition produces become CHECK
lines, in order.  Review the output like any test, and regenerate after changing a rule:

    .venv/bin/python tests/passes/gen_decompose_checks.py            # write missing files
    .venv/bin/python tests/passes/gen_decompose_checks.py --force    # rewrite generated ones
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

import numpy as np

HERE = pathlib.Path(__file__).parent
OUT = HERE / "filecheck"
PASSING = HERE.parent / "onnx_suite" / "passing.txt"
PREFIX = "decompose_gen_"


def covered_by_hand() -> set[str]:
    text = "".join(p.read_text() for p in OUT.glob("decompose_*.pir")
                   if not p.name.startswith(PREFIX))
    return set(re.findall(r"\b(nn\.[a-z_0-9]+)\(", text))


def generate(force: bool) -> int:
    from pir.frontends.onnx.importer import import_model
    from pir.ir.printer import print_module
    from pir.passes.decompose.registry import DECOMPOSE, load_rules
    from pir.testing.onnx_suite import load_cases

    load_rules()
    hand = covered_by_hand()
    wanted = {op for op in DECOMPOSE if op not in hand}
    if not force:
        wanted = {op for op in wanted if not (OUT / f"{PREFIX}{op[3:]}.pir").exists()}
    passing = set(PASSING.read_text().split())
    written = 0
    for case in load_cases():
        if not wanted:
            break
        if case.name not in passing or "expanded" in case.name:
            continue
        module = import_model(case.model, filename=case.name)
        present = {op.name for fn in module.funcs for op in fn.walk()} & wanted
        for name in sorted(present):
            text = print_module(module)
            if len(text) > 20_000:
                continue  # a test input should be readable
            after = print_module(_decomposed(module, text))
            prims = re.findall(r"= (prim\.[a-z_0-9]+)\(", after)
            if f"{name}(" in after or not prims:
                continue  # this instance stays (run-time axes, say): try another case
            _write(name, case.name, text, prims)
            wanted.discard(name)
            written += 1
    for name in sorted(wanted & set(_SYNTHETIC)):
        source, module = _SYNTHETIC[name]()
        text = print_module(module)
        after = print_module(_decomposed(module, text))
        prims = re.findall(r"= (prim\.[a-z_0-9]+)\(", after)
        if f"{name}(" in after or not prims:
            print(f"the synthetic {name} does not decompose", file=sys.stderr)
            continue
        _write(name, source, text, prims)
        wanted.discard(name)
        written += 1
    for name in sorted(wanted):
        print(f"no passing node case decomposes {name}", file=sys.stderr)
    return written


# Ops whose node cases all stay nn (axes given as graph inputs, windows folded at import,
# unseeded random draws): a small model of our own instead.
def _onnx(op_type, inputs, inits=None, shapes=None, **attrs):
    def make():
        sys.path.insert(0, str(HERE.parent))
        from helpers import node_model

        from pir.frontends.onnx.importer import import_model

        model = node_model(op_type, inputs, ["y"], initializers=inits, shapes=shapes, **attrs)
        return f"model {op_type}", import_model(model)

    return make


def _window(op_name):
    def make():
        from pir.ir import Builder, ConstantOp, DType, FuncOp, ModuleOp, ReturnOp, TensorType
        from pir.ir.core import OPS
        from pir.ir.types import FunctionType

        m = ModuleOp.create("window")
        out = TensorType(DType.F32, (8,))
        fn = FuncOp.create("main", [], [out])
        m.body.block.append(fn)
        b = Builder(fn.entry)
        size = b.value(ConstantOp, value=np.array(8, np.int64), name="size")
        w = b.value(OPS[op_name], size, name="w", result_types=[out])
        b.create(ReturnOp, [w])
        fn.attributes["function_type"] = FunctionType((), (out,))
        return "a window of constant size 8", m

    return make


_F = np.float32
_SYNTHETIC = {
    "nn.reduce_l1": _onnx("ReduceL1", {"x": np.ones((2, 3, 4), _F)},
                          {"axes": np.array([1], np.int64)}),
    "nn.reduce_log_sum": _onnx("ReduceLogSum", {"x": np.ones((2, 3, 4), _F)},
                               {"axes": np.array([2], np.int64)}),
    "nn.reduce_sum_square": _onnx("ReduceSumSquare", {"x": np.ones((2, 3, 4), _F)},
                                  {"axes": np.array([0, 2], np.int64)}),
    "nn.cum_sum": _onnx("CumSum", {"x": np.ones((2, 3), _F)}, {"axis": np.array(1, np.int64)}),
    "nn.size": _onnx("Size", {"x": np.ones((2, 3), _F)}, shapes={"x": ["B", 3]}),
    "nn.bernoulli": _onnx("Bernoulli", {"x": np.ones((2, 3), _F)}, seed=1.0),
    "nn.random_normal_like": _onnx("RandomNormalLike", {"x": np.ones((2, 3), _F)}, seed=2.0),
    "nn.random_uniform_like": _onnx("RandomUniformLike", {"x": np.ones((2, 3), _F)}, seed=3.0),
    "nn.col2im": _onnx("Col2Im", {"x": np.ones((1, 4, 9), _F)},
                       {"image_shape": np.array([4, 4], np.int64),
                        "block_shape": np.array([2, 2], np.int64)}),
    "nn.blackman_window": _window("nn.blackman_window"),
    "nn.hamming_window": _window("nn.hamming_window"),
}


def _decomposed(module, text):
    from pir.ir.parser import parse_module
    from pir.passes.manager import PassManager
    from pir.passes.pipeline import parse_pipeline

    m = parse_module(text)
    PassManager(parse_pipeline("decompose")).run(m)
    return m


def _write(name: str, case: str, text: str, prims: list[str]) -> None:
    lines = [
        "// RUN: pir optimize %s -p decompose | filecheck %s",
        "// RUN: pir optimize %s -p decompose | filecheck %s --check-prefix=GONE",
        f"// Generated by tests/passes/gen_decompose_checks.py from the ONNX node case {case}:",
        f"// {name} becomes these prim ops, in this order, and does not survive.",
        "",
        "// CHECK-LABEL: func.func @main",
    ]
    lines += [f"// CHECK: = {p}(" for p in prims]
    lines += ["// CHECK: func.return", "", f"// GONE-NOT: {name}(", "// GONE: func.return", ""]
    (OUT / f"{PREFIX}{name[3:]}.pir").write_text("\n".join(lines) + text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rewrite existing generated files")
    args = ap.parse_args()
    print(f"wrote {generate(args.force)} files")

"""The kernels are built without TVM's per-call argument checks; each kernel.tvm op is
checked against its kernel source's signature once instead (pir/runtimes/tvm/signature.py):
a .pir file whose kernel does not take what its op passes is refused with the op named, by
the runtime and by `pir run`, and never called."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

from pir.errors import PirError  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter  # noqa: E402
from helpers import cli, codegen_kernels  # noqa: E402
from test_winograd import FUSE, _model  # noqa: E402


@pytest.fixture(scope="module")
def program():
    module, _, kernels = codegen_kernels(_model(8), FUSE)
    return print_module(module), kernels["y.cv"].symbol


def _signature_line(text: str, symbol: str) -> str:
    """The kernel's ``def`` line as the printed module holds it (quotes escaped)."""
    start = text.index(f"def {symbol}(")
    return text[start:text.index("\\n", start)]


def _run(text: str):
    module = parse_module(text)
    x = np.random.default_rng(0).standard_normal((2, 16, 8, 8)).astype(np.float32)
    return TvmInterpreter(module).run(module.funcs[0], {"x": x})


def test_a_program_whose_kernels_fit_runs(program):
    text, _ = program
    assert _run(text)["y.cv"].shape == (2, 32, 8, 8)


@pytest.mark.parametrize("edit, why", [
    (lambda line: line.replace('float32', 'float64', 1), "holds float64"),
    (lambda line: line.replace(", 8, 8)", ", 8, 9)", 1), "has shape"),
    (lambda line: line.replace("):", ", extra: T.int32):", 1), "parameters"),
])
def test_a_kernel_that_does_not_take_what_its_op_passes_is_refused(program, edit, why):
    text, symbol = program
    line = _signature_line(text, symbol)
    changed = edit(line)
    assert changed != line
    with pytest.raises(PirError, match=f"kernel {symbol} does not fit its op: .*{why}"):
        _run(text.replace(line, changed))


def test_pir_run_names_the_op_and_exits_1(program, tmp_path):
    text, symbol = program
    line = _signature_line(text, symbol)
    path = tmp_path / "k.pir"
    path.write_text(text.replace(line, line.replace("float32", "float64", 1)))
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((2, 16, 8, 8), np.float32))
    code, out, err = cli("run", path, "--input", f"x={x}")
    assert code == 1
    assert f"kernel {symbol} does not fit its op" in err
    assert "Traceback" not in err + out

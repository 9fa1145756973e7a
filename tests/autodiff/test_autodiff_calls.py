"""Differentiating through func.call (calls are inlined first) and `pir link`, which puts a
function written in .pir text next to the derivatives it calls."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import cli
from pir.ir.parser import parse_file
from pir.passes.autodiff import differentiate
from pir.runtimes.reference import run_function

T = "tensor<3xf64>"
CALLER = f"""module @m {{
  func.func @square_sin(%a: {T}) -> ({T}) {{
    %s = prim.sin(%a) : ({T}) -> {T}
    %q = prim.mul(%s, %s) : ({T}, {T}) -> {T}
    func.return(%q) : ({T}) -> ()
  }}
  func.func @main(%x: {T}) -> ({T}) {{
    %c = func.call(%x) {{callee = @square_sin}} : ({T}) -> {T}
    %d = func.call(%c) {{callee = @square_sin}} : ({T}) -> {T}
    func.return(%d) : ({T}) -> ()
  }}
}}
"""


def test_gradient_through_nested_calls(tmp_path):
    path = tmp_path / "m.pir"
    path.write_text(CALLER)
    module = parse_file(str(path))
    fn = differentiate(module, ["x"], seed="ones", order=2)
    assert not [op for op in fn.walk() if op.name == "func.call"]
    x = np.array([0.3, -1.2, 2.0])

    def f(v):
        return np.sin(np.sin(v) ** 2) ** 2

    h = 1e-4
    second = (f(x + h) - 2 * f(x) + f(x - h)) / h ** 2
    got = run_function(module, {"x": x}, func="main_grad")["grad2_x"]
    np.testing.assert_allclose(got, second, rtol=1e-6)
    assert module.lookup("main").entry.ops[0].name == "func.call"  # the source is left as it was


def test_link_puts_functions_together_and_checks_names(tmp_path):
    lib = tmp_path / "lib.pir"
    lib.write_text(CALLER.replace("@main", "@other").replace("module @m", "module @lib"))
    user = tmp_path / "user.pir"
    user.write_text(f"""module @user {{
  func.func @twice(%x: {T}) -> ({T}) {{
    %a = func.call(%x) {{callee = @other}} : ({T}) -> {T}
    %b = prim.add(%a, %a) : ({T}, {T}) -> {T}
    func.return(%b) : ({T}) -> ()
  }}
}}
""")
    status, _, err = cli("link", lib, user, "-o", tmp_path / "out.pir")
    assert status == 0, err
    linked = parse_file(str(tmp_path / "out.pir"))
    assert [f.sym_name for f in linked.funcs] == ["square_sin", "other", "twice"]
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(run_function(linked, {"x": x}, func="twice")["b"],
                               2 * np.sin(np.sin(x) ** 2) ** 2)
    status, _, err = cli("link", lib, lib, "-o", tmp_path / "bad.pir")
    assert status == 1 and "@square_sin is defined in" in err
    status, _, err = cli("link", user, "-o", tmp_path / "bad.pir")
    assert status == 1 and "calls @other, which the module does not define" in err
    assert not (tmp_path / "bad.pir").exists()


@pytest.mark.parametrize("equal", [True, False])
def test_link_merges_resources(tmp_path, equal):
    from pir.ir.dialects.builtin import ModuleOp, make_constant
    from pir.ir.dialects.func import FuncOp, ReturnOp
    from pir.ir.printer import print_module
    from pir.ir.types import DType, TensorType

    def module_with(name, value):
        m = ModuleOp.create(name)
        t = TensorType(DType.F64, (64,))
        fn = FuncOp.create(name, [], [t], [])
        c = fn.entry.append(make_constant(m, np.full(64, value) + np.arange(64), "w"))
        fn.entry.append(ReturnOp.build([c.results[0]]))
        m.body.block.append(fn)
        (tmp_path / f"{name}.pir").write_text(print_module(m))
        return tmp_path / f"{name}.pir"

    a, b = module_with("fa", 1.0), module_with("fb", 1.0 if equal else 2.0)
    status, _, err = cli("link", a, b, "-o", tmp_path / "ab.pir")
    assert status == 0, err
    linked = parse_file(str(tmp_path / "ab.pir"))
    assert len(linked.resources) == (1 if equal else 2)
    np.testing.assert_array_equal(run_function(linked, {}, func="fb")["w"],
                                  np.full(64, 1.0 if equal else 2.0) + np.arange(64))


def test_a_called_derivative_is_forward_work_for_the_next_derivative(tmp_path):
    """Differentiating a function that calls a derivative: the callee's backward marks do
    not leak into the result, which has the same backward part as differentiating the
    derivative directly."""
    from pir.cli.link_cmd import link
    from pir.ir.parser import Parser
    from pir.passes.autodiff.memory import kept

    path = tmp_path / "m.pir"
    path.write_text(CALLER)
    module = parse_file(str(path))
    differentiate(module, ["x"], seed="ones", name="g")
    text = f"""module @c {{
  func.func @calls_g(%x: {T}) -> ({T}) {{
    %r = func.call(%x) {{callee = @g}} : ({T}) -> {T}
    func.return(%r) : ({T}) -> ()
  }}
}}
"""
    module = link([module, Parser(text, "c.pir").parse_module()], ["m", "c"])
    direct = differentiate(module, ["x"], func="g", seed="ones", name="h_direct")
    called = differentiate(module, ["x"], func="calls_g", seed="ones", name="h_called")
    k_direct, k_called = kept(direct), kept(called)
    assert k_direct.count > 0
    assert (k_called.count, k_called.nbytes) == (k_direct.count, k_direct.nbytes)
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_array_equal(run_function(module, {"x": x}, func="h_called")["grad_x"],
                                  run_function(module, {"x": x}, func="h_direct")["grad_x"])

"""The cache of generated kernel sources (pir.codegen.tvm.source_cache): a second codegen of
the same group reads it (without lowering) and writes the same bytes; a damaged entry is
ignored and rewritten; an unwritable cache only costs time; a function codegen made in this
process is what parsing its source gives, and the build uses it instead of parsing."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")


from pir.codegen.tvm import lower, source_cache  # noqa: E402
from pir.codegen.tvm.codegen import codegen_module  # noqa: E402
from pir.ir.dialects.kernel import TvmKernelOp  # noqa: E402
from pir.ir.parser import parse_module  # noqa: E402
from pir.ir.printer import print_module  # noqa: E402
from pir.runtimes.reference import run_function  # noqa: E402
from pir.runtimes.tvm import TvmInterpreter, executor  # noqa: E402

# add + relu on [N, 64]: one elementwise group
TEXT = """module @m {
  func.func @main(%x: tensor<Nx64xf32>, %b: tensor<64xf32>) -> (tensor<Nx64xf32>) {
    %y = fusion.group(%x, %b) ({
    ^bb0(%x_1: tensor<Nx64xf32>, %b_1: tensor<64xf32>):
      %bb = prim.broadcast_in_dim(%b_1) {broadcast_dimensions = [1]} : (tensor<64xf32>) -> tensor<Nx64xf32>
      %s = prim.add(%x_1, %bb) : (tensor<Nx64xf32>, tensor<Nx64xf32>) -> tensor<Nx64xf32>
      %z = builtin.constant() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
      %zb = prim.broadcast_in_dim(%z) {broadcast_dimensions = []} : (tensor<f32>) -> tensor<Nx64xf32>
      %r = prim.max(%s, %zb) : (tensor<Nx64xf32>, tensor<Nx64xf32>) -> tensor<Nx64xf32>
      fusion.yield(%r) : (tensor<Nx64xf32>) -> ()
    }) {kind = "elementwise"} : (tensor<Nx64xf32>, tensor<64xf32>) -> tensor<Nx64xf32>
    func.return(%y) : (tensor<Nx64xf32>) -> ()
  }
}
"""


@pytest.fixture(autouse=True)
def made(monkeypatch):
    """No function made by another test (the cache comes from conftest.py)."""
    monkeypatch.setattr(source_cache, "_MADE", {})


def _codegen() -> tuple[str, object]:
    module = parse_module(TEXT)
    report = codegen_module(module, "llvm")
    assert report.kernels == 1 and not report.kept
    return print_module(module), module


def _entries(cache) -> list:
    return sorted((cache / "tir").glob("*.py"))


def _no_lowering(monkeypatch) -> None:
    def fail(*a, **kw):
        raise AssertionError("lowered although the source is cached")

    monkeypatch.setattr(lower, "lower_block", fail)


def test_second_codegen_reads_the_cache(cache, monkeypatch):
    before = dict(source_cache.stats)
    first, _ = _codegen()
    assert source_cache.stats["misses"] == before["misses"] + 1
    (entry,) = _entries(cache)
    _no_lowering(monkeypatch)
    second, _ = _codegen()
    assert source_cache.stats["hits"] == before["hits"] + 1
    assert second == first  # byte-identical output
    assert _entries(cache) == [entry]


def test_renamed_values_get_their_own_entry_so_output_never_depends_on_the_cache(cache):
    # the same group with other value names: what codegen prints must be what it prints on
    # an empty cache, not the names of the group that filled the cache first
    first, _ = _codegen()
    renamed = TEXT.replace("%r ", "%relu ").replace("%r)", "%relu)")
    assert "%relu = prim.max" in renamed and "fusion.yield(%relu)" in renamed
    module = parse_module(renamed)
    codegen_module(module, "llvm")
    (kernel,) = [op for op in module.walk() if isinstance(op, TvmKernelOp)]
    assert "relu[v_i0, v_i1] = " in kernel.source
    assert len(_entries(cache)) == 2
    fresh = parse_module(renamed)
    source_cache.stats["hits"] = 0
    codegen_module(fresh, "llvm")
    assert print_module(fresh) == print_module(module)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "header"])
def test_damaged_entry_is_ignored_and_rewritten(cache, damage):
    first, _ = _codegen()
    (entry,) = _entries(cache)
    good = entry.read_bytes()
    n = len(good) - 10  # a byte of the source, past the header line
    bad = {"flip": good[:n] + bytes([good[n] ^ 1]) + good[n + 1:],
           "truncate": good[:len(good) // 2],
           "empty": b"", "header": b"# pir-tir sha256=00\n" + good.split(b"\n", 1)[1]}[damage]
    assert bad != good
    entry.write_bytes(bad)
    misses = source_cache.stats["misses"]
    second, _ = _codegen()
    assert second == first
    assert source_cache.stats["misses"] == misses + 1  # lowered again, not read
    assert entry.read_bytes() == good  # and rewritten
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_key_covers_symbol_and_version(monkeypatch):
    a = source_cache.entry_path("k", "f")
    assert source_cache.entry_path("k", "g") != a
    assert source_cache.entry_path("k2", "f") != a
    monkeypatch.setattr(source_cache, "version", lambda: "another code generator")
    assert source_cache.entry_path("k", "f") != a


def test_same_root_as_compiled_modules(cache):
    assert source_cache.source_dir().parent == executor.cache_dir().parent == cache


def test_unwritable_cache_still_generates(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("PIR_CACHE_DIR", str(blocker))
    text, module = _codegen()
    assert "kernel.tvm" in text


def test_made_function_skips_the_parser_and_computes_the_same(monkeypatch):
    # (not structural equality with the parsed source: TVMScript's parser simplifies some
    # constant conditions, e.g. isnan(0.0) to False, so the two differ in form only)
    _, module = _codegen()
    (op,) = [o for o in module.walk() if isinstance(o, TvmKernelOp)]
    made = source_cache.made_func(op.source, op.symbol)
    assert made is not None and source_cache.made_func(op.source, "other") is None

    def no_parse(*a, **kw):
        raise AssertionError("parsed a source codegen made in this process")

    monkeypatch.setattr(tvm.script, "from_source", no_parse)
    x = np.random.default_rng(0).standard_normal((5, 64)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    got = TvmInterpreter(module, use_cache=False).run(module.funcs[0], {"x": x, "b": b})
    want = run_function(parse_module(TEXT), {"x": x, "b": b})
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)
    np.testing.assert_allclose(got["y"], np.maximum(x + b, 0), rtol=1e-6)


def _layer(name: str, arg: str, w: str, scale: str) -> str:
    return f"""    %{name} = fusion.group(%{arg}) ({{
    ^bb0(%a: tensor<Nx4xf32>):
      %w = builtin.constant() {{value = dense<{w}> : tensor<4xf32>}} : () -> tensor<4xf32>
      %wb = prim.broadcast_in_dim(%w) {{broadcast_dimensions = [1]}} : (tensor<4xf32>) -> tensor<Nx4xf32>
      %s = prim.add(%a, %wb) : (tensor<Nx4xf32>, tensor<Nx4xf32>) -> tensor<Nx4xf32>
      %k = builtin.constant() {{value = dense<{scale}> : tensor<f32>}} : () -> tensor<f32>
      %kb = prim.broadcast_in_dim(%k) {{broadcast_dimensions = []}} : (tensor<f32>) -> tensor<Nx4xf32>
      %r = prim.mul(%s, %kb) : (tensor<Nx4xf32>, tensor<Nx4xf32>) -> tensor<Nx4xf32>
      fusion.yield(%r) : (tensor<Nx4xf32>) -> ()
    }}) {{kind = "elementwise"}} : (tensor<Nx4xf32>) -> tensor<Nx4xf32>
"""


def test_groups_differing_in_weights_share_a_kernel_and_keep_their_weights():
    """Three layers: two differ only in their (non-splat) weights, so they share one kernel
    and each runs with its own; the third has another splat, an immediate, so a kernel of
    its own."""
    text = ("module @m {\n  func.func @main(%x: tensor<Nx4xf32>) -> (tensor<Nx4xf32>) {\n"
            + _layer("h1", "x", "[1.0, 2.0, 3.0, 4.0]", "2.0")
            + _layer("h2", "h1", "[-1.0, 0.5, 7.0, 0.25]", "2.0")
            + _layer("h3", "h2", "[1.0, 2.0, 3.0, 4.0]", "3.0")
            + "    func.return(%h3) : (tensor<Nx4xf32>) -> ()\n  }\n}\n")
    module = parse_module(text)
    report = codegen_module(module, "llvm")
    assert (report.kernels, report.sources) == (3, 2)
    symbols = [o.symbol for o in module.walk() if isinstance(o, TvmKernelOp)]
    assert symbols[0] == symbols[1] != symbols[2]
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    got = TvmInterpreter(module, use_cache=False).run(module.funcs[0], {"x": x})["h3"]
    want = ((x + [1, 2, 3, 4]) * 2 + [-1, 0.5, 7, 0.25]) * 2 + [1, 2, 3, 4]
    np.testing.assert_allclose(got, want * 3, rtol=1e-6)
    np.testing.assert_allclose(got, run_function(parse_module(text), {"x": x})["h3"], rtol=1e-6)

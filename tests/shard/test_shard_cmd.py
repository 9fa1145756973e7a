"""``pir shard`` on the command line: specs (and each kind of bad spec: exit 1 with a clear
message), --report, --global-view, --help."""

import numpy as np
import pytest

from helpers import cli
from pir.errors import PirError
from pir.ir.printer import print_module
from pir.passes.shard.driver import find_function
from pir.passes.shard.spec import match_spec, parse_place, parse_spec_text
from pir.ir.dialects.dist import Mesh
import shard_models as M


@pytest.fixture(scope="module")
def mlp_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("shard") / "mlp.pir"
    path.write_text(print_module(M.mlp()))
    return path


def spec_error(text: str, mesh: str = "tp=2") -> str:
    m = M.mlp()
    with pytest.raises(PirError) as e:
        match_spec(find_function(m), parse_spec_text(text), Mesh.parse(mesh))
    return e.value.message


def test_spec_matches_globs_and_later_entries_win():
    m = M.mlp()
    got = match_spec(find_function(m), parse_spec_text(
        '"*.w" = ["S(0)"]\n"*fc1.w" = ["S(1)"]\nx = ["R"]'), Mesh.parse("tp=2"))
    assert {v.name: str(s) for v, s in got.items()} == {
        "l0.fc1.w": "[_, tp]", "l0.fc2.w": "[tp, _]", "x": "[_, _]"}


@pytest.mark.parametrize("text, mesh, message", [
    ('"*fc3.w" = ["S(1)"]', "tp=2", '"*fc3.w" matches no value of @main'),
    ('"x" = ["S(0)", "R"]', "tp=2", '"x" matches %x (tensor<4x8xf32>): 2 placements for the 1 '
                                    "axes of mesh<tp=2>: give one per axis"),
    ('"*fc1.w" = ["S(2)"]', "tp=2", "S(2) on mesh axis 'tp': the tensor has rank 2"),
    ('"x" = ["S(0)"]', "tp=3", "dim 0 (4) is not divisible by 3, the ranks of mesh axes tp"),
    ('"x" = ["Q"]', "tp=2", "bad placement 'Q'"),
    ('"x" = "R"', "tp=2", "expected a list of placements"),
])
def test_bad_specs(text, mesh, message):
    with pytest.raises(PirError) as e:
        match_spec(find_function(M.mlp()), parse_spec_text(text), Mesh.parse(mesh))
    assert message in str(e.value)


def test_bad_spec_errors_listed_together():
    msg = spec_error('"nope" = ["R"]\n"*fc1.w" = ["S(2)"]')
    assert "nope" in msg and "S(2)" in msg


def test_place_syntax():
    assert parse_place("x=[S(0), R]") == ("x", ["S(0)", "R"])
    with pytest.raises(PirError, match="bad --place"):
        parse_place("x=S(0)")


def test_cli_bad_spec_exit_1(mlp_file, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('"*fc9.w" = ["S(1)"]\n')
    code, out, err = cli("shard", str(mlp_file), "--mesh", "tp=2", "--spec", str(spec),
                         "-o", str(tmp_path / "o.pir"))
    assert code == 1 and '"*fc9.w" matches no value of @main' in err
    assert "Traceback" not in err and not (tmp_path / "o.pir").exists()
    code, _, err = cli("shard", str(mlp_file), "--mesh", "tp=2", "--place", "x=[S(0)]",
                       "--place", "x=[S(1)]", "--global-view", "-o", "-")
    assert code == 0
    code, _, err = cli("shard", str(mlp_file), "--mesh", "tp=3", "--place", "x=[S(0)]", "-o", "-")
    assert code == 1 and "not divisible by 3" in err


def test_cli_report_and_global_view(mlp_file, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('"*fc1.w" = ["S(1)"]\n"*fc2.w" = ["S(0)"]\n')
    out = tmp_path / "g.pir"
    code, _, err = cli("shard", str(mlp_file), "--mesh", "tp=2", "--spec", str(spec), "--report",
                       "--global-view", "-o", str(out))
    assert code == 0, err
    assert "all_reduce" in err and "communication per step" in err and "128" in err
    assert "l0.fc1.w" in err and "[S(1)]" in err
    text = out.read_text()
    assert text.count("dist.all_reduce") == 1 and "shard.why" in text
    feeds = M.inputs(M.mlp())
    np.save(tmp_path / "x.npy", feeds["x"])
    code, _, err = cli("run", str(out), "--input", f"x={tmp_path / 'x.npy'}",
                       "-o", str(tmp_path / "g.npz"))
    code2, _, _ = cli("run", str(mlp_file), "--input", f"x={tmp_path / 'x.npy'}",
                      "-o", str(tmp_path / "r.npz"))
    assert code == code2 == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "g.npz")["y"], np.load(tmp_path / "r.npz")["y"],
                               rtol=1e-5)


def test_cli_help_has_examples():
    code, out, _ = cli("shard", "--help")
    assert code == 0 and "pir shard m.pir --mesh tp=2 --auto" in out and "--global-view" in out
    code, out, _ = cli("--help")
    assert "shard" in out


def test_spec_matches_a_constant_by_its_resource_key():
    m = M.mlp()
    fn = find_function(m)
    w = next(op.result for op in fn.entry.ops if op.results and op.result.name == "l0.fc1.w")
    w.name = "renamed"  # a pass renamed the value; the weight keeps its resource key
    got = match_spec(fn, {"l0.fc1.w": ["S(1)"]}, Mesh.parse("tp=2"))
    assert [v.name for v in got] == ["renamed"]

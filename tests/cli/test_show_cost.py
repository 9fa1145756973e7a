"""`pir show` estimates FLOPs and bytes from shapes, and lists fusion groups."""


from click.testing import CliRunner

from pir.cli.main import main
from pir.frontends.onnx.importer import import_model
from pir.ir.summary import summarize
from pir.passes.manager import PassManager
from pir.passes.pipeline import parse_pipeline
from helpers import sample_mlp  # noqa: E402



def mlp():
    return import_model(sample_mlp())


def test_flops_follow_the_shapes():
    b = 4
    matmuls = 2 * b * (784 * 256 + 256 * 128 + 128 * 10)  # a multiply-add is 2 FLOPs
    elementwise = b * 256 * 2 + b * 128 + b * 10  # add + relu, tanh, the last add
    s = summarize(mlp(), {"B": b})[0]
    assert s.flops == matmuls + elementwise
    assert s.unknown_cost_ops == 0
    assert summarize(mlp())[0].unknown_cost_ops == 8  # B unknown: every op but constants


def test_show_lists_fusion_groups_and_the_cost(tmp_path):
    module = mlp()
    PassManager(parse_pipeline("decompose,canonicalize,fold,cse,dce,shapes,fuse")).run(module)
    s = summarize(module, {"B": 2})[0]
    assert sum(s.groups_by_kind.values()) == 4
    assert s.groups_by_kind["fusion.group (reduction)"] == 1  # the softmax
    from pir.ir.printer import print_module

    (tmp_path / "f.pir").write_text(print_module(module))
    r = CliRunner().invoke(main, ["show", str(tmp_path / "f.pir"), "--dim", "B=2"])
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert any(l.startswith("compute: ") and "FLOP" in l for l in lines)
    assert "fusion: 3 fusion.group (elementwise), 1 fusion.group (reduction)" in lines

"""`pir ops`: the coverage matrix of ops against rule tables, and `--require` as a gate."""

import pathlib
import re

import pytest

from pir.coverage import all_ops, kept_markdown, kept_section
from pir.ir.core import OPS, Operation
from pir.ir.opdef import operand, result
from helpers import cli  # noqa: E402

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
FAKE = "nn.zz_fake_for_test"



pir = cli


def row(out: str, op: str) -> list[str]:
    """The cells of ``op``'s row in the plain matrix."""
    line = next(line for line in out.splitlines() if line.split()[:1] == [op])
    return line.split()[1:]


def total(out: str, table: str) -> tuple[int, int]:
    """(covered, must cover) from the totals of ``table``."""
    m = re.search(rf"^{table}\s+(\d+)/(\d+) ", out, re.M)
    assert m, out[-500:]
    return int(m[1]), int(m[2])


@pytest.fixture
def fake_op(monkeypatch):
    """An nn op nobody wrote a rule for, registered for one test only."""

    class FakeOp(Operation):
        """A stand-in for an op added without its rules."""

        x = operand()
        y = result()

    FakeOp.name = FAKE  # named after creation, so declaring it does not register it for good
    monkeypatch.setitem(OPS, FAKE, FakeOp)
    return FAKE


def test_every_op_has_an_evaluation_rule():
    code, out, err = pir("ops", "--require", "evaluate")
    assert code == 0, err
    n = len(all_ops())
    assert total(out, "evaluate") == (n, n)
    # evaluate, vjp, jvp, shard; decompose: not its business
    assert row(out, "prim.add") == ["✓", "✓", "✓", "✓"]
    assert row(out, "func.return") == ["core"]  # run by the interpreter itself


def test_every_nn_op_decomposes_or_is_declared_kept():
    code, out, err = pir("ops", "--require", "decompose")
    n = len(all_ops(["nn"]))
    assert n > 150
    assert total(out, "decompose") == (n, n), err
    assert code == 0, err


def test_require_names_an_op_without_rules(fake_op):
    code, out, err = pir("ops", "--dialect", "nn", "--require", "evaluate")
    assert code == 1
    assert err == f"pir: error: missing rules\n  evaluate: 1 ops without a rule: {FAKE}\n"
    assert row(out, FAKE)[0] == "–"
    n = len(all_ops(["nn"]))
    assert total(out, "evaluate") == (n - 1, n)


def test_a_declared_keep_covers_an_op_for_decompose(fake_op, monkeypatch):
    from pir.passes.decompose.registry import KEPT

    monkeypatch.setitem(KEPT, FAKE, "a test op")
    code, out, _ = pir("ops", "--dialect", "nn")
    assert code == 0
    assert row(out, FAKE) == ["–", "kept"]  # still a gap for evaluate, no longer for decompose
    assert f"- `{FAKE}`: a test op" in kept_markdown()


def test_missing_shows_only_rows_with_gaps(fake_op):
    code, out, _ = pir("ops", "--dialect", "nn", "--missing")
    ops = [line.split()[0] for line in out.split("\n\n")[0].splitlines()[1:]]
    assert FAKE in ops
    assert "nn.yield" not in ops  # core for evaluate, kept for decompose: no gap
    assert all(o.startswith("nn.") for o in ops)


def test_dialect_filter_and_totals():
    code, out, _ = pir("ops", "--dialect", "prim")
    n = len(all_ops(["prim"]))
    assert code == 0
    assert len(out.split("\n\n")[0].splitlines()) == n + 1  # header and one row per op
    assert total(out, "evaluate") == (n, n)
    assert total(out, "decompose") == (0, 0)


def test_a_rule_for_an_unknown_op_is_reported(monkeypatch):
    from pir.runtimes.reference.registry import EVAL, load_all

    load_all()
    monkeypatch.setitem(EVAL, "nn.no_such_op", lambda op, x: x)
    code, _, err = pir("ops", "--dialect", "func", "--require", "evaluate")
    assert code == 1
    assert "evaluate: rules for ops that do not exist: nn.no_such_op" in err


@pytest.mark.parametrize("args, message", [
    (["--require", "vjpp"], "unknown table 'vjpp' (tables: evaluate, decompose, vjp, jvp, shard)"),
    (["--dialect", "onnx"], "unknown dialect 'onnx' (dialects: builtin, dist, func, fusion, kernel, nn, prim)"),
])
def test_usage_errors(args, message):
    code, _, err = pir("ops", *args)
    assert code == 2
    assert err == f"pir: error: {message}\n"


# -- docs/passes.md ------------------------------------------------------------------------

def test_kept_list_in_the_pass_reference_is_current():
    assert kept_section((DOCS / "passes.md").read_text()) == kept_markdown(), \
        "docs/passes.md is stale: run `python -m pir.coverage kept --write docs/passes.md`"


def test_pass_reference_documents_every_pass_option_and_preset():
    from pir.passes.base import all_pass_classes
    from pir.passes.pipeline import DEFAULT_PIPELINE, PRESETS

    doc = (DOCS / "passes.md").read_text()
    for cls in all_pass_classes():
        assert f"### `{cls.name}`" in doc, f"docs/passes.md lacks pass {cls.name}"
        for o in cls.options():
            assert f"`{o.name}`" in doc.split(f"### `{cls.name}`")[1].split("\n### ")[0], \
                f"docs/passes.md lacks option {cls.name}{{{o.name}}}"
    assert f"`{DEFAULT_PIPELINE}`" in doc
    for level, text in PRESETS.items():
        assert f"`-O{level}`" in doc and (not text or f"`{text}`" in doc), level

"""The op references in docs/ are generated from the declarations: they must be current."""

import pathlib

from pir.ir.opdocs import dialect_markdown

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def test_nn_reference_is_current():
    assert (DOCS / "nn.md").read_text() == dialect_markdown("nn"), \
        "docs/nn.md is stale: run `python -m pir.ir.opdocs nn > docs/nn.md`"


def test_every_nn_op_has_a_docstring_and_an_evaluation_rule():
    from pir.ir.core import OPS
    from pir.runtimes.reference.registry import EVAL, REGION_EVAL, load_all

    load_all()
    nn_ops = [n for n in OPS if n.startswith("nn.")]
    assert len(nn_ops) > 150
    assert [n for n in nn_ops if not (OPS[n].__doc__ or "").strip()] == []
    missing = [n for n in nn_ops if n not in EVAL and n not in REGION_EVAL and n != "nn.yield"]
    assert missing == [], f"nn ops without a reference rule: {missing}"

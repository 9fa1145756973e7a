"""Every registered prim op has a reference rule, a test, a docstring and a type rule."""

from __future__ import annotations

import pathlib
import re

import pytest

from prim_harness import covered_ops
from pir.ir.core import OPS, Operation
from pir.runtimes.reference.registry import EVAL, load_all

PRIM_OPS = sorted(n for n in OPS if n.startswith("prim."))
DOC = pathlib.Path(__file__).parents[2] / "docs" / "prim.md"


def test_the_prim_dialect_is_not_empty():
    assert len(PRIM_OPS) >= 70


def test_every_prim_op_has_a_reference_rule():
    load_all()
    missing = [n for n in PRIM_OPS if n not in EVAL]
    assert not missing, f"prim ops without a reference rule: {', '.join(missing)}"


def test_every_prim_op_has_a_test():
    covered = covered_ops()
    missing = [n for n in PRIM_OPS if n not in covered]
    assert not missing, f"prim ops without a test in tests/prim: {', '.join(missing)}"
    unknown = sorted(covered - set(PRIM_OPS))
    assert not unknown, f"tests claim ops that do not exist: {', '.join(unknown)}"


@pytest.mark.parametrize("name", PRIM_OPS)
def test_every_prim_op_is_declared_fully(name):
    cls = OPS[name]
    assert cls.__doc__ and cls.__doc__.strip(), f"{name} has no docstring"
    assert cls.infer is not Operation.infer, f"{name} has no type rule"
    assert cls.signature.results, f"{name} declares no result"


def test_every_prim_op_is_documented():
    text = DOC.read_text()
    missing = [n for n in PRIM_OPS if not re.search(rf"`{re.escape(n)}[`(]", text)]
    assert not missing, f"prim ops missing from docs/prim.md: {', '.join(missing)}"

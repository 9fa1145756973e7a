"""Every decomposition rule has a FileCheck test: an input .pir that uses the op, under
tests/passes/filecheck/decompose_*.pir (hand-written, or made by gen_decompose_checks.py)."""

import pathlib
import re

from pir.passes.decompose.registry import DECOMPOSE, load_rules

FILECHECK = pathlib.Path(__file__).parent / "filecheck"


def test_every_rule_has_a_filecheck_input():
    load_rules()
    text = "".join(p.read_text() for p in FILECHECK.glob("decompose_*.pir"))
    used = set(re.findall(r"\b(nn\.[a-z_0-9]+)\(", text))
    missing = sorted(op for op in DECOMPOSE if op not in used)
    assert missing == [], ("rules without a FileCheck test (run "
                           f"tests/passes/gen_decompose_checks.py): {missing}")

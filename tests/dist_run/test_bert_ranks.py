"""bert (tests/models, exported from PyTorch) sharded and run on ranks: data parallel on
dp=2 and --auto tensor parallel on tp=2 give the single-device outputs within 1e-5.

It shards only because the pipeline runs ``shapes{broadcast-equal}`` before decompose
(``dist_models.PIPELINE``): without it, decompose leaves ``nn.add`` and ``nn.slice``, which
have no SPMD rule."""

import numpy as np
import pytest
from dist_models import model_program, shard

from pir.runtimes.dist.runner import run_ranks
from pir.runtimes.reference import run_function

BATCH = ["input_ids", "attention_mask", "token_type_ids"]


@pytest.mark.parametrize("mesh, spec, auto", [
    ("dp=2", {k: ["S(0)"] for k in BATCH}, False),
    ("tp=2", {}, True),
], ids=["dp2", "tp2-auto"])
def test_bert_on_two_ranks(mesh, spec, auto):
    module, _, feeds = model_program("bert")
    want = run_function(module, feeds)
    shard(module, mesh, spec, auto=auto)
    got = run_ranks(module, feeds, 2)
    for name, ref in want.items():
        np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-5, err_msg=name)

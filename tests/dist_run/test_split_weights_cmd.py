"""``pir shard --split-weights DIR -o OUT``: each rank's blocks of the split weights go to
``DIR/rank<r>.npz``, the program names DIR relative to OUT, and a run on ranks of the
split program gives what the unsplit one gives."""

import os

import numpy as np
import pytest
from dist_models import mlp, prim_program

from helpers import cli
from pir.ir.parser import parse_file
from pir.ir.printer import print_module
from pir.runtimes.dist.comm import block_of

PLACES = ["--place", "fc1.weight=[S(1)]", "--place", "fc1.bias=[S(0)]",
          "--place", "fc2.weight=[S(0)]"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("split_cmd")
    m = prim_program(mlp())
    (d / "m.pir").write_text(print_module(m))
    np.save(d / "x.npy", np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32))
    return d, m.resources


def test_split_program_runs_as_the_unsplit_one(files):
    d, weights = files
    os.makedirs(d / "out", exist_ok=True)
    code, _, err = cli("shard", d / "m.pir", "--mesh", "tp=2", *PLACES, "-o", d / "u.pir")
    assert code == 0, err
    # the weights beside the program's directory, not in it: the reference is relative
    code, _, err = cli("shard", d / "m.pir", "--mesh", "tp=2", *PLACES,
                       "--split-weights", d / "w", "-o", d / "out" / "s.pir")
    assert code == 0, err
    split = parse_file(str(d / "out" / "s.pir"))
    assert str(split.attributes["dist.weights"]).strip('"') == os.path.join("..", "w")
    assert not {"fc1.weight", "fc1.bias", "fc2.weight"} & set(split.resources)
    outs = {}
    for name, path in (("u", d / "u.pir"), ("s", d / "out" / "s.pir")):
        code, _, err = cli("run", path, "--ranks", 2, "--input", f"x={d / 'x.npy'}",
                           "-o", d / f"{name}.npz")
        assert code == 0, err
        with np.load(d / f"{name}.npz") as f:
            outs[name] = f["y"]
    np.testing.assert_array_equal(outs["s"], outs["u"])
    # each rank's file holds its blocks only
    types = {"fc1.weight": "[S(1)]", "fc1.bias": "[S(0)]", "fc2.weight": "[S(0)]"}
    text = print_module(split)
    for r in range(2):
        with np.load(d / "w" / f"rank{r}.npz") as f:
            assert sorted(f.files) == sorted(types)
            for key, layout in types.items():
                whole = weights[key]
                t = next(op.layout for op in split.walk()
                         if op.name == "dist.load_shard" and op.key == key)
                assert layout in str(t)
                assert f[key].size * 2 == whole.size
                np.testing.assert_array_equal(f[key], block_of(whole, t, (r,)))
    assert text.count("dist.load_shard") == 3


def test_usage_errors(files):
    d, _ = files
    code, _, err = cli("shard", d / "m.pir", "--mesh", "tp=2", *PLACES,
                       "--split-weights", d / "w2", "-o", "-")
    assert code == 2 and "--split-weights needs -o FILE" in err
    code, _, err = cli("shard", d / "m.pir", "--mesh", "tp=2", *PLACES,
                       "--split-weights", d / "w2", "--global-view", "-o", d / "g.pir")
    assert code == 2 and "cannot be used with --global-view" in err
    assert not (d / "w2").exists()

"""The preview-training optimizers Adagrad, Adam and Momentum (ONNX Runtime has no kernels for
them, so the expected values are the ONNX formulas, written out here); diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_model, node_model

from pir.errors import PirError
from pir.frontends.onnx.importer import import_model

TRAINING = "ai.onnx.preview.training"
rng = np.random.default_rng(0)


def optimizer_model(op_type, groups, tensors, r=0.1, t=3, **attrs):
    """Inputs R, T, then one tensor per (group, tensor index); outputs named <group><k>_new."""
    feeds = {"R": np.array(r, np.float32), "T": np.array(t, np.int64)}
    for g in groups:
        for k, x in enumerate(tensors):
            feeds[f"{g}{k}"] = (x + rng.uniform(0.1, 1.0, x.shape)).astype(np.float32)
    outputs = [f"{g}{k}_new" for g in _UPDATED[op_type] for k in range(len(tensors))]
    return node_model(op_type, feeds, outputs, domain=TRAINING, **attrs), feeds


_UPDATED = {"Adagrad": "XH", "Adam": "XVH", "Momentum": "XV"}
SHAPES = [[(3,)], [(2, 3), (4,)], [()]]


def _expected(op_type, feeds, n, step):
    out = {}
    r, t = float(feeds["R"]), int(feeds["T"])
    for k in range(n):
        ins = {g: feeds[f"{g}{k}"].astype(np.float64) for g in "XGVH" if f"{g}{k}" in feeds}
        for g, value in zip(_UPDATED[op_type], step(r, t, **ins)):
            out[f"{g}{k}_new"] = value.astype(np.float32)
    return out


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("t", [0, 5])
def test_adagrad(shapes, t):
    attrs = dict(decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.01)
    model, feeds = optimizer_model("Adagrad", "XGH", [np.zeros(s) for s in shapes], t=t, **attrs)

    def step(r, t, X, G, H):
        g = G + 0.01 * X
        h = H + g * g
        return X - r / (1 + t * 0.1) * g / (np.sqrt(h) + 1e-5), h

    check_model(model, feeds, expected=_expected("Adagrad", feeds, len(shapes), step))


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("t", [0, 4])
def test_adam(shapes, t):
    a, b, post = 0.9, 0.95, 0.02
    model, feeds = optimizer_model("Adam", "XGVH", [np.zeros(s) for s in shapes], t=t, alpha=a,
                                   beta=b, epsilon=1e-3, norm_coefficient=0.01,
                                   norm_coefficient_post=post)

    def step(r, t, X, G, V, H):
        g = G + 0.01 * X
        v = a * V + (1 - a) * g
        h = b * H + (1 - b) * g * g
        rate = r * np.sqrt(1 - b ** t) / (1 - a ** t) if t > 0 else r
        return (1 - post) * (X - rate * v / (np.sqrt(h) + 1e-3)), v, h

    check_model(model, feeds, expected=_expected("Adam", feeds, len(shapes), step))


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("mode", ["standard", "nesterov"])
@pytest.mark.parametrize("t", [0, 2])
def test_momentum(shapes, mode, t):
    a, b = 0.9, 0.5
    model, feeds = optimizer_model("Momentum", "XGV", [np.zeros(s) for s in shapes], t=t,
                                   alpha=a, beta=b, mode=mode, norm_coefficient=0.01)

    def step(r, t, X, G, V):
        g = G + 0.01 * X
        v = a * V + (b if t > 0 else 1.0) * g
        return X - r * (g + a * v if mode == "nesterov" else v), v

    check_model(model, feeds, expected=_expected("Momentum", feeds, len(shapes), step))


# -- diagnostics ------------------------------------------------------------------------------

def test_inputs_must_come_in_whole_groups():
    model, _ = optimizer_model("Adagrad", "XGH", [np.zeros(3)])
    model.graph.node[0].input.pop()  # drop H0: X0, G0 are left
    model.graph.node[0].output.pop()
    model.graph.output.pop()
    model.graph.input.pop()
    with pytest.raises(PirError, match=r"expects 3 \* n inputs after r and t \(x, g, h\), got 2"):
        import_model(model)


def test_momentum_mode_is_checked():
    model, _ = optimizer_model("Momentum", "XGV", [np.zeros(3)], alpha=0.9, beta=0.1,
                               mode="heavy-ball", norm_coefficient=0.0)
    with pytest.raises(PirError, match="mode must be 'standard' or 'nesterov', got 'heavy-ball'"):
        import_model(model)


def test_tensors_of_one_index_must_share_a_shape():
    model, feeds = optimizer_model("Adagrad", "XGH", [np.zeros(3)])
    bad = node_model("Adagrad", {**feeds, "H0": np.zeros(4, np.float32)}, ["X0_new", "H0_new"],
                     domain=TRAINING)
    with pytest.raises(PirError, match="x, g, h must have one type"):
        import_model(bad)

"""Softmax and its relatives, normalisations, and the classification losses.

Ops with optional extra results (``nn.layer_norm``'s mean and inverse standard deviation,
``nn.batch_norm``'s running statistics) hold them in one variadic result group that is either
empty or complete, so the common one-result form prints without them and needs no segment
sizes.  Their type rule gives the whole group while the op is being built (it has no results
yet, and the builder keeps as many as it asks for) and the group it has afterwards.
"""

from __future__ import annotations

from pir.errors import PirError
from pir.ir.attributes import BOOL, DTYPE, FLOAT, INT, INTS, STR
from pir.ir.core import Operation
from pir.ir.dialects.nn.base import FLOATS
from pir.ir.opdef import Pure, attr, operand, result
from pir.ir.typerules import broadcast_shapes, normalize_axis, tensor
from pir.ir.types import DType, TensorType

__all__ = [
    "Softmax", "LogSoftmax", "Hardmax", "LayerNorm", "RMSNorm", "BatchNorm", "InstanceNorm",
    "GroupNorm", "LpNormalization", "MeanVarianceNormalization", "LRN",
    "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
]

_LABELS = frozenset({DType.I32, DType.I64})
_REDUCTIONS = ("none", "sum", "mean")


def _with_group(op: Operation, required: list, group: list) -> list:
    """The required result types plus the optional group's, when the op has (or, while it is
    being built, may have) that group."""
    if not op.results or len(op.results) > len(required):
        return required + group
    return required


def _check_group(op: Operation, required: int, group: int, what: str) -> None:
    extra = len(op.results) - required
    if extra not in (0, group):
        raise PirError(f"expects {required} or {required + group} results ({what} come "
                       f"together), has {len(op.results)}")


def _check_param(x: TensorType, param: TensorType, what: str) -> None:
    """A scale or bias must broadcast to x's shape without growing it."""
    if x.shape is None or param.shape is None:
        return
    if len(param.shape) > len(x.shape):
        raise PirError(f"{what} has rank {len(param.shape)}, more than the input's "
                       f"{len(x.shape)}")
    broadcast_shapes(x.shape, param.shape)


def _check_channels(x: TensorType, param: TensorType, what: str) -> None:
    """A per-channel parameter is 1-D with the size of x's dim 1."""
    if param.shape is None:
        return
    if len(param.shape) != 1:
        raise PirError(f"{what} must be 1-D (one value per channel), got rank {len(param.shape)}")
    if x.shape is not None and len(x.shape) >= 2:
        c, n = x.shape[1], param.shape[0]
        if isinstance(c, int) and isinstance(n, int) and c != n:
            raise PirError(f"{what} has {n} values for {c} channels")


def _min_rank(t: TensorType, rank: int, what: str = "input") -> None:
    if t.shape is not None and len(t.shape) < rank:
        raise PirError(f"{what} must have rank {rank} or more, got {len(t.shape)}")


# -- softmax family -----------------------------------------------------------------------------


class SoftmaxOp(Operation):
    """output = f(input) along ``axis``, same type."""

    traits = frozenset({Pure})
    input = operand(dtypes=FLOATS)
    axis = attr(INT, -1)
    output = result()

    def infer(self):
        t = tensor(self.input)
        if t.shape is not None:
            normalize_axis(self.axis, len(t.shape))
        return [t]


class Softmax(SoftmaxOp):
    """output = exp(input) / sum(exp(input)) along axis."""

    name = "nn.softmax"


class LogSoftmax(SoftmaxOp):
    """output = input - log(sum(exp(input))) along axis."""

    name = "nn.log_softmax"


class Hardmax(SoftmaxOp):
    """output = 1 at the first maximum along axis, 0 elsewhere."""

    name = "nn.hardmax"


# -- normalisations -----------------------------------------------------------------------------


class LayerNorm(Operation):
    """y = (x - mean) / sqrt(var + epsilon) * scale + bias, with mean and var over the axes
    from ``axis`` on, computed in ``stash_type``; optional results mean and inv_std_dev."""

    name = "nn.layer_norm"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    scale = operand(dtypes=FLOATS)
    bias = operand(optional=True, dtypes=FLOATS)
    axis = attr(INT, -1)
    epsilon = attr(FLOAT, 1e-5)
    stash_type = attr(DTYPE, DType.F32)
    y = result()
    stats = result(variadic=True)  # (mean, inv_std_dev), or nothing

    def verify_(self) -> None:
        _check_group(self, 1, 2, "mean and inv_std_dev")
        x = tensor(self.x)
        _check_param(x, tensor(self.scale), "scale")
        if self.bias is not None:
            _check_param(x, tensor(self.bias), "bias")

    def infer(self):
        x = tensor(self.x)
        stat_shape = None
        if x.shape is not None:
            axis = normalize_axis(self.axis, len(x.shape))
            stat_shape = x.shape[:axis] + (1,) * (len(x.shape) - axis)
        stat = TensorType(self.stash_type, stat_shape)
        return _with_group(self, [x], [stat, stat])


class RMSNorm(Operation):
    """y = x / sqrt(mean(x^2) + epsilon) * scale, with the mean over the axes from ``axis`` on,
    computed in ``stash_type``; y has scale's element type."""

    name = "nn.rms_norm"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    scale = operand(dtypes=FLOATS)
    axis = attr(INT, -1)
    epsilon = attr(FLOAT, 1e-5)
    stash_type = attr(DTYPE, DType.F32)
    y = result()

    def verify_(self) -> None:
        _check_param(tensor(self.x), tensor(self.scale), "scale")

    def infer(self):
        x = tensor(self.x)
        if x.shape is not None:
            normalize_axis(self.axis, len(x.shape))
        return [x.with_dtype(tensor(self.scale).dtype)]


class BatchNorm(Operation):
    """y = (x - mean) / sqrt(var + epsilon) * scale + b per channel (dim 1).  Inference uses
    input_mean and input_var; ``training_mode`` uses the batch's statistics and may also give
    running_mean and running_var (input * momentum + batch * (1 - momentum))."""

    name = "nn.batch_norm"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    scale = operand(dtypes=FLOATS)
    b = operand(dtypes=FLOATS)
    input_mean = operand(dtypes=FLOATS)
    input_var = operand(dtypes=FLOATS)
    epsilon = attr(FLOAT, 1e-5)
    momentum = attr(FLOAT, 0.9)
    training_mode = attr(BOOL, False)
    y = result()
    running = result(variadic=True)  # (running_mean, running_var) in training mode, or nothing

    def verify_(self) -> None:
        _check_group(self, 1, 2, "running_mean and running_var")
        if len(self.results) > 1 and not self.training_mode:
            raise PirError("running_mean and running_var are results of training_mode only")
        x = tensor(self.x)
        for name in ("scale", "b", "input_mean", "input_var"):
            _check_channels(x, tensor(getattr(self, name)), name)

    def infer(self):
        stat = tensor(self.input_mean)
        return _with_group(self, [tensor(self.x)], [stat, stat])


class InstanceNorm(Operation):
    """output = (input - mean) / sqrt(var + epsilon) * scale + b, with mean and var over the
    spatial dims (2 and on) of each sample and channel."""

    name = "nn.instance_norm"
    traits = frozenset({Pure})
    input = operand(dtypes=FLOATS)
    scale = operand(dtypes=FLOATS)
    b = operand(dtypes=FLOATS)
    epsilon = attr(FLOAT, 1e-5)
    output = result()

    def verify_(self) -> None:
        x = tensor(self.input)
        _min_rank(x, 3)
        _check_channels(x, tensor(self.scale), "scale")
        _check_channels(x, tensor(self.b), "b")

    def infer(self):
        return [tensor(self.input)]


class GroupNorm(Operation):
    """y = (x - mean) / sqrt(var + epsilon) * scale + bias, with mean and var over each group of
    C / num_groups channels (and the spatial dims); scale and bias are per channel."""

    name = "nn.group_norm"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    scale = operand(dtypes=FLOATS)
    bias = operand(dtypes=FLOATS)
    epsilon = attr(FLOAT, 1e-5)
    num_groups = attr(INT)
    stash_type = attr(DTYPE, DType.F32)
    y = result()

    def verify_(self) -> None:
        x = tensor(self.x)
        _min_rank(x, 2)
        if self.num_groups <= 0:
            raise PirError(f"num_groups must be positive, got {self.num_groups}")
        c = x.shape[1] if x.shape is not None else None
        if isinstance(c, int) and c % self.num_groups:
            raise PirError(f"{c} channels do not split into {self.num_groups} groups")
        _check_channels(x, tensor(self.scale), "scale")
        _check_channels(x, tensor(self.bias), "bias")

    def infer(self):
        return [tensor(self.x)]


class LpNormalization(Operation):
    """output = input / (sum(|input|^p))^(1/p) along ``axis``, p being 1 or 2."""

    name = "nn.lp_normalization"
    traits = frozenset({Pure})
    input = operand(dtypes=FLOATS)
    axis = attr(INT, -1)
    p = attr(INT, 2)
    output = result()

    def verify_(self) -> None:
        if self.p not in (1, 2):
            raise PirError(f"p must be 1 or 2, got {self.p}")

    def infer(self):
        t = tensor(self.input)
        if t.shape is not None:
            normalize_axis(self.axis, len(t.shape))
        return [t]


class MeanVarianceNormalization(Operation):
    """y = (x - mean(x)) / sqrt(mean(x^2) - mean(x)^2) over ``axes``."""

    name = "nn.mean_variance_normalization"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    axes = attr(INTS, (0, 2, 3))
    y = result()

    def infer(self):
        t = tensor(self.x)
        if t.shape is not None:
            for a in self.axes:
                normalize_axis(a, len(t.shape))
        return [t]


class LRN(Operation):
    """y = x / (bias + alpha / size * sum of x^2 over ``size`` neighbouring channels)^beta."""

    name = "nn.lrn"
    traits = frozenset({Pure})
    x = operand(dtypes=FLOATS)
    alpha = attr(FLOAT, 1e-4)
    beta = attr(FLOAT, 0.75)
    bias = attr(FLOAT, 1.0)
    size = attr(INT)
    y = result()

    def verify_(self) -> None:
        _min_rank(tensor(self.x), 3, "x")
        if self.size <= 0:
            raise PirError(f"size must be positive, got {self.size}")

    def infer(self):
        return [tensor(self.x)]


# -- losses -------------------------------------------------------------------------------------


class LossOp(Operation):
    """Shared checks of the losses: input (N, C, d1...), target (N, d1...) of class indices."""

    traits = frozenset({Pure})

    def _check(self, scores, labels, weights) -> None:
        if self.reduction not in _REDUCTIONS:
            raise PirError(f"reduction must be one of {', '.join(_REDUCTIONS)}, "
                           f"got '{self.reduction}'")
        s, t = tensor(scores), tensor(labels)
        _min_rank(s, 2)
        if s.shape is not None and t.shape is not None:
            if len(t.shape) != len(s.shape) - 1:
                raise PirError(f"the target must have rank {len(s.shape) - 1} (the input's "
                               f"without the class dim), got {len(t.shape)}")
            broadcast_shapes(t.shape, s.shape[:1] + s.shape[2:])
        if weights is not None:
            w = tensor(weights)
            if w.shape is not None and len(w.shape) != 1:
                raise PirError(f"the weights must be 1-D (one per class), got rank {len(w.shape)}")

    def _loss_type(self, scores, labels) -> TensorType:
        dtype = tensor(scores).dtype
        return TensorType(dtype, tensor(labels).shape if self.reduction == "none" else ())


class SoftmaxCrossEntropyLoss(LossOp):
    """output = the negative log-softmax of scores (over dim 1) at the labels, weighted per
    class, reduced by ``reduction``; labels equal to ``ignore_index`` count for nothing; the
    optional result log_prob is the log-softmax itself."""

    name = "nn.softmax_cross_entropy_loss"
    scores = operand(dtypes=FLOATS)
    labels = operand(dtypes=_LABELS)
    weights = operand(optional=True, dtypes=FLOATS)
    ignore_index = attr(INT, None)
    reduction = attr(STR, "mean")
    output = result()
    log_prob = result(optional=True)

    def verify_(self) -> None:
        self._check(self.scores, self.labels, self.weights)

    def infer(self):
        loss = self._loss_type(self.scores, self.labels)
        return _with_group(self, [loss], [tensor(self.scores)])


class NegativeLogLikelihoodLoss(LossOp):
    """loss = -input[n, target[n, d...], d...] weighted per class, reduced by ``reduction``;
    targets equal to ``ignore_index`` count for nothing."""

    name = "nn.negative_log_likelihood_loss"
    input = operand(dtypes=FLOATS)
    target = operand(dtypes=_LABELS)
    weight = operand(optional=True, dtypes=FLOATS)
    ignore_index = attr(INT, None)
    reduction = attr(STR, "mean")
    loss = result()

    def verify_(self) -> None:
        self._check(self.input, self.target, self.weight)

    def infer(self):
        return [self._loss_type(self.input, self.target)]

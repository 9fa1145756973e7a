"""Static facts of shapes, folded at import: the dims an op picks out of a shape, as a
constant when every one of them is static, whatever the symbolic ones are.

``Gather(Shape(x), 1)`` of an ``[N, 1, T]`` input is 1 for every N and T (onnxsim folds it
too).  Exporters test such dims in ``If`` conditions (Silero VAD asks whether its input has
one channel); folded, the condition is a constant, and the importer converts only the branch
it takes (pir/frontends/onnx/ops/control_flow.py).
"""

from __future__ import annotations

import math

import numpy as np

from pir.ir.core import Operation, Value
from pir.ir.dialects.builtin import ModuleOp
from pir.ir.dialects.nn.symbolic import shape_value
from pir.ir.types import DType, TensorType
from pir.passes.fold import replace_by_constants

__all__ = ["fold_static_shape_part"]

#: ops that pick, move or join the elements of a shape (what shape_value looks through)
SHAPE_PICKS = frozenset({"nn.shape", "nn.gather", "nn.slice", "nn.concat", "nn.unsqueeze",
                         "nn.squeeze", "nn.reshape"})


def fold_static_shape_part(module: ModuleOp, op: Operation) -> list[Value] | None:
    """Replace ``op`` by a constant when it is a shape pick whose every element is a static
    dim; return the constant, or None when the op stays."""
    if op.name not in SHAPE_PICKS or len(op.results) != 1:
        return None
    t = op.results[0].type
    if not isinstance(t, TensorType) or t.dtype is not DType.I64 or t.shape is None \
            or not all(isinstance(d, int) for d in t.shape):
        return None
    dims = shape_value(op.results[0])
    if dims is None or not all(isinstance(d, int) for d in dims) \
            or len(dims) != math.prod(t.shape):
        return None
    return replace_by_constants(module, op, [np.array(dims, dtype=np.int64).reshape(t.shape)])

"""The shape of a row-fused kernel (``schedule.fuse_rows``), for the steps that edit one
after scheduling (``prefetch.py``, ``inplace.py``): the root block's body is one parallel
loop over the rows."""

from __future__ import annotations

import tvm
from tvm import tirx

__all__ = ["row_loop", "with_root"]


def row_loop(func: tvm.tirx.PrimFunc):
    """(root block, row loop) of ``func``, or None when its root is not one parallel loop."""
    block = getattr(func.body, "block", None)
    loop = getattr(block, "body", None)
    if not isinstance(loop, tirx.For) or loop.kind != tirx.ForKind.PARALLEL:
        return None
    return block, loop


def with_root(func: tvm.tirx.PrimFunc, body=None, alloc_buffers=None) -> tvm.tirx.PrimFunc:
    """``func`` with its root block's body and/or allocated buffers replaced."""
    realize = func.body
    block = realize.block
    new_block = type(block)(block.iter_vars, block.reads, block.writes, block.name_hint,
                            block.body if body is None else body, block.init,
                            block.alloc_buffers if alloc_buffers is None else alloc_buffers,
                            block.match_buffers, block.annotations)
    return func.with_body(type(realize)(realize.iter_values, realize.predicate, new_block))

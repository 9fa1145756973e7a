"""Zero halos on channel blocks: a convolution's padding written by the kernel that makes
its input.

A convolution with padding reads its input through a zero-padded copy (``conv.padded_input``,
``*_xpad``), made by a pass of its own before the GEMM: the whole input read and a copy
written.  For a 3x3 convolution over a 56x56 map that pass is 2-3% of the kernel, for a
strided one, whose input is four times its output, 8-20%; ONNX Runtime's NCHWc kernels have
no such pass.  When the value is blocked (pir.codegen.tvm.nchwc) and every reader is such a
convolution, with the same padding, its maker writes it padded instead:
``[N, C/16, H + ph + qh, W + pw + qw, 16]``, the border zero, and the readers use it as their
padded input directly.  ResNet-50, one thread: 2-4% less time (A/B in one process, 40
alternating rounds; its strided 3x3 convolutions 10-20% each).

In the IR the maker's region ends in ``prim.pad`` after ``to_blocked`` and each reader's
begins with the ``prim.slice`` that takes the halo off, so the regions still mean what they
did, for the reference runtime and ``pir diff``.  The kernels do not compute them: the
maker's kernel is scheduled as if it wrote the unpadded value, and then (``write_interior``)
its output becomes the padded buffer, the GEMM's stores go to a strided view of its interior,
and a few loops write the border's zeros; the reader's convolution indexes the padded
argument (``halo_source``).
"""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx

from pir.codegen.tvm.rowfunc import with_root
from pir.ir.core import Block, Operation, Value
from pir.ir.types import TensorType

__all__ = ["conv_halo", "padded_type", "unpadded_type", "pad_maker", "unpad_reader",
           "yielded_halo", "halo_source", "write_interior"]

Halo = tuple[int, int, int, int]  # (top, left, bottom, right)


def conv_halo(op: Operation) -> Halo | None:
    """The spatial padding of a 2-d convolution ``op`` as (top, left, bottom, right), or None
    when it pads nothing."""
    win = op.window(2)
    (ph, pw), (qh, qw) = win["padding_low"], win["padding_high"]
    return (ph, pw, qh, qw) if any((ph, pw, qh, qw)) else None


def padded_type(t: TensorType, halo: Halo) -> TensorType:
    n, cb, h, w, lanes = t.shape
    ph, pw, qh, qw = halo
    return t.with_shape([n, cb, h + ph + qh, w + pw + qw, lanes])


def unpadded_type(t: TensorType, halo: Halo) -> TensorType:
    """The blocked type ``t`` less ``halo`` (the inverse of :func:`padded_type`)."""
    n, cb, hp, wp, lanes = t.shape
    ph, pw, qh, qw = halo
    return t.with_shape([n, cb, hp - ph - qh, wp - pw - qw, lanes])


def pad_maker(body: Block, at: int, y: Value, halo: Halo) -> Value:
    """Insert at ``at`` in ``body`` the zero padding of the blocked ``y`` by ``halo``."""
    from pir.ir.dialects.builtin import ConstantOp
    from pir.ir.dialects.prim.shape import PadOp

    ph, pw, qh, qw = halo
    zero = body.insert(at, ConstantOp.build(value=np.zeros((), y.type.dtype.numpy),
                                            result_names=[f"{y.name}.zero"]))
    return body.insert(at + 1, PadOp.build(
        y, zero.results[0], edge_padding_low=[0, 0, ph, pw, 0],
        edge_padding_high=[0, 0, qh, qw, 0], result_types=[padded_type(y.type, halo)],
        result_names=[f"{y.name}.halo"])).results[0]


def unpad_reader(body: Block, arg: Value, halo: Halo) -> Value:
    """Make the block argument ``arg`` padded by ``halo``; its readers get the slice that
    takes the halo off (inserted at the start of ``body``), which is returned."""
    from pir.ir.dialects.prim.shape import SliceOp

    t = arg.type
    uses = list(arg.uses)
    arg.type = padded_type(t, halo)
    ph, pw, _, _ = halo
    n, cb, h, w, lanes = t.shape
    inner = body.insert(0, SliceOp.build(
        arg, start_indices=[ph, pw], limit_indices=[ph + h, pw + w], axes=[2, 3],
        result_types=[t], result_names=[f"{arg.name or 'x'}.inner"])).results[0]
    for u in uses:
        u.op.set_operand(u.index, inner)
    return inner


def yielded_halo(block: Block) -> tuple[Operation, Halo] | None:
    """(the pad, its halo) when ``block`` (a group's region) yields its result padded by
    :func:`pad_maker`, else None."""
    term = block.terminator
    op = getattr(term.operands[0], "op", None) if term is not None and term.operands else None
    if op is None or op.name != "prim.pad" or len(op.results[0].type.shape) != 5:
        return None
    lo, hi = op.edge_padding_low, op.edge_padding_high
    return op, (lo[2], lo[3], hi[2], hi[3])


def halo_source(x: Value) -> tuple[Value, Halo] | None:
    """(the padded block argument, its halo) when ``x`` is :func:`unpad_reader`'s slice of
    one, else None."""
    op = getattr(x, "op", None)
    if op is None or op.name != "prim.slice" or tuple(op.axes) != (2, 3) or op.strides:
        return None
    src = op.operands[0]
    if getattr(src, "op", None) is not None:  # not a block argument
        return None
    (ph, pw), (h, w) = op.start_indices, x.type.shape[2:4]
    hp, wp = src.type.shape[2:4]
    if tuple(op.limit_indices) != (ph + h, pw + w):
        return None
    return src, (ph, pw, hp - h - ph, wp - w - pw)


def write_interior(func: tvm.tirx.PrimFunc, halo: Halo) -> tvm.tirx.PrimFunc:
    """``func`` (scheduled, its last parameter its one output ``[N, C/16, H, W, 16]``) made
    to write that output into the interior of a buffer padded by ``halo``, which becomes the
    parameter, and zeros into the border."""
    out = list(func.params)[-1]
    n = out.shape[0]  # (a batch may be symbolic; blocked values have static C, H, W)
    cb, h, w, lanes = (int(d) for d in out.shape[1:])
    ph, pw, qh, qw = halo
    hp, wp = h + ph + qh, w + pw + qw
    padded = tirx.decl_buffer((n, cb, hp, wp, lanes), out.dtype, name=out.name)
    interior = tirx.decl_buffer(
        out.shape, out.dtype, name=f"{out.name}_interior", data=padded.data,
        strides=[cb * hp * wp * lanes, hp * wp * lanes, wp * lanes, lanes, 1],
        elem_offset=(ph * wp + pw) * lanes)
    func = tvm_ffi.structural_map(func, [(tvm.ir.expr.Var, lambda v: interior
                                          if v.same_as(out) else v)])
    func = tirx.PrimFunc([*list(func.params)[:-1], padded], func.body, func.ret_type,
                         func.attrs)
    border = _zero_border(padded, halo, (h, w))
    body = tirx.SeqStmt([tirx.DeclBuffer(interior, data=padded.data), border,
                         func.body.block.body])
    return with_root(func, body=body)


def _zero_border(buf, halo: Halo, inner: tuple[int, int]) -> tirx.Stmt:
    """Loops that write 0 to the halo of ``buf`` ``[N, C/16, Hp, Wp, 16]``: its first and
    last rows whole, the first and last columns of the rows between."""
    n = buf.shape[0]
    cb, hp, wp, lanes = (int(d) for d in buf.shape[1:])
    ph, pw, qh, qw = halo
    h, w = inner
    zero = tirx.const(0, buf.dtype)
    b, c = tirx.Var("b", "int32"), tirx.Var("cb", "int32")

    def strip(rows: tuple[int, int], cols: tuple[int, int]) -> tirx.Stmt | None:
        if rows[1] <= rows[0] or cols[1] <= cols[0]:
            return None
        y, x, i = tirx.Var("y", "int32"), tirx.Var("x", "int32"), tirx.Var("i", "int32")
        store = tirx.BufferStore(buf, zero, [b, c, y, x, i])
        vec = tirx.For(i, 0, lanes, tirx.ForKind.VECTORIZED, store)
        return tirx.For(y, rows[0], rows[1] - rows[0], tirx.ForKind.SERIAL,
                        tirx.For(x, cols[0], cols[1] - cols[0], tirx.ForKind.SERIAL, vec))

    strips = [s for s in (strip((0, ph), (0, wp)), strip((ph + h, hp), (0, wp)),
                          strip((ph, ph + h), (0, pw)), strip((ph, ph + h), (pw + w, wp)))
              if s is not None]
    body = strips[0] if len(strips) == 1 else tirx.SeqStmt(strips)
    return tirx.For(b, 0, n, tirx.ForKind.SERIAL,
                    tirx.For(c, 0, cb, tirx.ForKind.SERIAL, body))

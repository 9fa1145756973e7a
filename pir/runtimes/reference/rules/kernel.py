"""Reference rules for the kernel ops (kernel.tvm, kernel.cuda, kernel.cublas): run the
op's region (the prim ops it was compiled from), so a program after ``pir codegen`` still
runs, and diffs, on the reference runtime."""

from __future__ import annotations

from pir.runtimes.reference.registry import evaluates


@evaluates("kernel.tvm", regions=True)
def tvm_kernel(interp, op, *inputs):
    return tuple(interp.run_block(op.body.block, list(inputs)))


@evaluates("kernel.cuda", regions=True)
def cuda_kernel(interp, op, *inputs):
    return tuple(interp.run_block(op.body.block, list(inputs)))


@evaluates("kernel.cublas", regions=True)
def cublas_call(interp, op, *inputs):
    return tuple(interp.run_block(op.body.block, list(inputs)))

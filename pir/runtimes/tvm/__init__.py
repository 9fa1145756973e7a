"""The tvm runtime: runs ``kernel.tvm`` ops with TVM-compiled code and everything else
(matmul and convolution as numpy/BLAS library calls, constants, groups left unlowered) with
the reference rules.  Importing this package imports TVM."""

from pir.runtimes.tvm.executor import (
    CompiledProgram,
    TvmInterpreter,
    cache_dir,
    compile_program,
    stats,
)

__all__ = ["CompiledProgram", "TvmInterpreter", "cache_dir", "compile_program", "stats"]

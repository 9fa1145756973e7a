"""TVM code generation for the CPU: prim blocks -> TE (``lower``) -> scheduled TIR
(``schedule``) -> LLVM (``build``).  Importing this package imports TVM."""

from pir.codegen.tvm.build import CompiledKernel, build, compile_block, host_target, set_threads
from pir.codegen.tvm.lower import RULES, LoweredKernel, lower_block
from pir.codegen.tvm.schedule import schedule_cpu

__all__ = ["RULES", "LoweredKernel", "lower_block", "schedule_cpu", "CompiledKernel", "build",
           "compile_block", "host_target", "set_threads"]

"""Code generation: turning groups of prim ops into compiled kernels.

``pir.codegen.tvm`` lowers a block of prim ops to a TVM PrimFunc with pir's own lowering
rules, schedules it for the CPU and builds it with LLVM.
"""

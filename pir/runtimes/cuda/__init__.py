"""The cuda runtime: kernel.cuda ops compiled by NVRTC and launched on a GPU, kernel.cublas
ops run by cuBLAS, through cupy (the ``cuda`` extra).  Importing this package imports neither
cupy nor anything that needs a GPU; :class:`CudaInterpreter` raises a clear PirError when
there is none."""

__all__ = ["CudaInterpreter"]


def __getattr__(name):
    if name == "CudaInterpreter":
        from pir.runtimes.cuda.executor import CudaInterpreter

        return CudaInterpreter
    raise AttributeError(name)

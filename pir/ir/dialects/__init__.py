"""Dialects: builtin, func, nn (ONNX-level composite ops), prim (primitives), dist
(distributed tensors and collectives), fusion, kernel."""


def load_dialects() -> None:
    """Import every dialect so that all op classes are registered (the parser needs them)."""
    import pir.ir.dialects.builtin  # noqa: F401
    import pir.ir.dialects.dist  # noqa: F401
    import pir.ir.dialects.func  # noqa: F401
    import pir.ir.dialects.fusion  # noqa: F401
    import pir.ir.dialects.kernel  # noqa: F401
    import pir.ir.dialects.nn  # noqa: F401
    import pir.ir.dialects.prim  # noqa: F401

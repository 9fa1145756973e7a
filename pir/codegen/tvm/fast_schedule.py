"""TVM's ``Schedule`` without the argument type checks on every call.

Each public method of ``tvm.s_tir.Schedule`` is wrapped by a checker that binds the call's
arguments to the method's signature and walks their types (``_type_checker.type_checked``).
Codegen calls the schedule a few thousand times for a CNN, with arguments it made itself, and
the checks were 15% of codegen's time on ResNet-50 (0.39 -> 0.33 s; bench/compile.py).  The
subclass takes each checked method's unwrapped function (``functools.wraps`` keeps it as
``__wrapped__``); the schedule's own C++ checks (ScheduleError) are unchanged.
"""

from __future__ import annotations

import inspect

from tvm.s_tir import Schedule

__all__ = ["FastSchedule"]


class FastSchedule(Schedule):
    """``Schedule`` whose methods skip the Python argument type checks."""


for _name, _method in vars(Schedule).items():
    # plain methods only: a staticmethod has a __wrapped__ too, which is not the method
    if inspect.isfunction(_method) and hasattr(_method, "__wrapped__"):
        setattr(FastSchedule, _name, _method.__wrapped__)

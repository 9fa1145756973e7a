"""FastSchedule (pir/codegen/tvm/fast_schedule.py): TVM's Schedule with the per-call Python
type checks of its methods skipped, and nothing else changed."""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("tvm")

from tvm.s_tir import Schedule  # noqa: E402

from pir.codegen.tvm.fast_schedule import FastSchedule  # noqa: E402


def test_checked_methods_are_the_unwrapped_functions():
    assert FastSchedule.compute_inline is Schedule.compute_inline.__wrapped__
    assert FastSchedule.split is Schedule.split.__wrapped__


def test_static_methods_stay_static():
    # a staticmethod has a __wrapped__ too; taking it would turn it into an instance method
    for name, attr in vars(Schedule).items():
        if isinstance(attr, staticmethod):
            assert isinstance(inspect.getattr_static(FastSchedule, name), staticmethod), name

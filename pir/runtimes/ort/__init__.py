"""ONNX Runtime as a baseline and a checker, never as the thing that runs a .pir program."""

from pir.runtimes.ort.check import CheckReport, check_against_onnx, run_onnxruntime

__all__ = ["CheckReport", "check_against_onnx", "run_onnxruntime"]

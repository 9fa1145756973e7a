"""Runtimes that execute .pir programs (reference) and the ONNX Runtime baseline/checker."""

"""Test support that ships with pir: the ONNX backend node suite runner."""

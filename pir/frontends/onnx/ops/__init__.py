"""ONNX converters, one module per op family."""

"""Evaluation rules of the reference runtime, one module per op family."""

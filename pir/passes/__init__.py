"""Passes: the pass manager, the pattern rewriter, and one module or package per pass."""

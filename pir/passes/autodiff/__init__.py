"""Automatic differentiation: VJP and JVP rules for every prim op, reverse and forward mode.

- ``registry``: the two rule tables (``VJP``, ``JVP``) keyed by op name, the declared ops
  (``zero``, ``nondiff``) and the helpers for the common shapes of rule.
- ``rules_*``: the rules, one module per prim family.
- ``transform``: one application of reverse or forward mode to a function.
- ``driver``: :func:`differentiate`, what ``pir autodiff`` runs (inlining, decompose, N
  applications, cleanup, the result added to the module).
- ``inline``: calls inlined before differentiating.
- ``memory``: the forward and backward parts of a reverse-mode derivative, what is kept
  between them, and rematerialization (``--remat``).
- ``train``: training steps (``pir autodiff --train``).

docs/autodiff.md describes the model.
"""

from pir.passes.autodiff.driver import differentiate
from pir.passes.autodiff.registry import DECLARED, JVP, VJP, load_rules

__all__ = ["differentiate", "VJP", "JVP", "DECLARED", "load_rules"]

"""SPMD sharding: the rule table of the ``shard`` transformation (one rule per prim op).

``sharding.py`` holds the data rules compute with (:class:`Sharding`, a dims mapping plus
partial axes, and :class:`SpmdDecision`); ``registry.py`` the table and its entry points
(:func:`forward`, :func:`backward`, :func:`rule_for`); ``einsum.py`` the solver most rules
share; ``rules_*.py`` the rules, one module per prim family.  docs/shard.md has the table.
"""

from pir.passes.shard.registry import (
    REPLICATED,
    SPMD,
    backward,
    forward,
    infer,
    load_rules,
    ops_without_rule,
    rule_for,
)
from pir.passes.shard.sharding import Sharding, SpmdDecision

__all__ = ["Sharding", "SpmdDecision", "SPMD", "REPLICATED", "infer", "forward", "backward",
           "rule_for", "ops_without_rule", "load_rules"]

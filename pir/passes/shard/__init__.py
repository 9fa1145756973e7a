"""SPMD sharding: the rule table of the ``shard`` transformation (one rule per prim op).

``sharding.py`` holds the data rules compute with (:class:`Sharding`, a dims mapping plus
partial axes, and :class:`SpmdDecision`); ``registry.py`` the table and its entry points
(:func:`forward`, :func:`backward`, :func:`rule_for`); ``einsum.py`` the solver most rules
share; ``rules_*.py`` the rules, one module per prim family.  docs/shard.md has the table.

Sharding a program (``pir shard``) builds on them: ``spec.py`` (value-name globs to
placements), ``propagate.py`` (layouts and decisions, conflicts resolved by cost),
``comm.py`` (the collectives of a layout change, and their bytes), ``reshard.py`` (the
plan written into the function), ``report.py`` (communication and memory per rank),
``auto.py`` (the ``--auto`` search) and ``driver.py`` (:func:`shard_module`, the entry
point); ``localize.py`` makes the per-rank program.
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


def __getattr__(name: str):
    """``shard_module`` and ``ShardResult`` (driver.py), imported when first used: the rule
    table alone should not pull in the whole sharding pipeline."""
    if name in ("shard_module", "ShardResult"):
        from pir.passes.shard import driver

        return getattr(driver, name)
    raise AttributeError(f"module 'pir.passes.shard' has no attribute '{name}'")

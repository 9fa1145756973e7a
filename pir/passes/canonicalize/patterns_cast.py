"""Redundant nn casts: a cast to the type it already has, and a cast through a type that
holds every value of the source exactly (f32 -> f64 -> i32 is f32 -> i32).

A cast through a narrower or inexact type (f32 -> f16 -> f32 rounds; i32 -> f32 -> i32 loses
large integers) changes values and stays.  prim casts have the same rules in
``patterns_prim``.
"""

from pir.passes.canonicalize.matchers import exact_in, rebuild
from pir.passes.drr import Attr, Match, Op, Var, drr


def exact_middle(m: Match) -> bool:
    return exact_in(m.x.type.dtype, m.mid)


PATTERNS = [
    # The replacement must have the cast's type, so this fires only when `to` is x's dtype.
    drr("cast-same-type", Op("nn.cast", Var("x")), Var("x")),
    drr("cast-cast",
        Op("nn.cast", Op("nn.cast", Var("x"), to=Attr("mid")), to=Attr("to"),
           saturate=Attr("saturate"), round_mode=Attr("round_mode")),
        rebuild("nn.cast", "x", to=lambda m: m.to, saturate=lambda m: m.saturate,
                round_mode=lambda m: m.round_mode),
        where=exact_middle),
]

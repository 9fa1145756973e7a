"""Algebraic identities on nn ops."""

from pir.passes.drr import Const, Op, Var, drr

PATTERNS = [
    drr("add-zero", Op("nn.add", Var("x"), Const(0)), Var("x")),
    drr("mul-by-one", Op("nn.mul", Var("x"), Const(1)), Var("x")),
    drr("neg-neg", Op("nn.neg", Op("nn.neg", Var("x"))), Var("x")),
]

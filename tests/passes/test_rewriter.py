"""The pattern rewriter: the greedy driver (fixed point, revisiting, non-convergence), value
names through rewrites, and declarative patterns (matching, constraints, undo)."""

import pytest

from pir.errors import PirError
from pir.ir.core import OPS
from pir.ir.parser import parse_module
from pir.ir.printer import print_module
from pir.passes.canonicalize.registry import all_patterns
from pir.passes.drr import Attr, Const, Op, Var, drr
from pir.passes.rewriter import RewritePattern, apply_patterns

from helpers import op_names


def module(body: str, args: str = "%x: tensor<Bx3xf32>", results: str = "tensor<Bx3xf32>"):
    return parse_module("module {\n  func.func @main(" + args + ") -> (" + results + ") {\n"
                        + body + "\n  }\n}\n")


def body_text(m) -> str:
    """The printed ops of @main, one per line, without their types."""
    lines = print_module(m, resources=False).splitlines()[2:-2]
    return "\n".join(line.strip().split(" : ")[0] for line in lines)


def test_a_chain_of_rewrites_reaches_the_fixed_point():
    # Eight nested negations: each rewrite exposes the next pair only once the driver
    # revisits the users of the replaced value.
    ops = ["%n0 = nn.neg(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>"]
    ops += [f"%n{i} = nn.neg(%n{i - 1}) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>" for i in range(1, 8)]
    ops.append("%y = nn.exp(%n7) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>")
    ops.append("func.return(%y) : (tensor<Bx3xf32>) -> ()")
    m = module("\n".join(ops))
    fired = apply_patterns(m, all_patterns())
    assert fired == {"neg-neg": 4}
    assert body_text(m) == "%y = nn.exp(%x)\nfunc.return(%y)"
    assert apply_patterns(m, all_patterns()) == {}  # a fixed point: nothing left to do


def test_a_producer_that_loses_its_last_use_is_erased():
    m = module("""
    %c = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %y = nn.mul(%e, %c) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %z = nn.exp(%y) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%z) : (tensor<Bx3xf32>) -> ()""")
    apply_patterns(m, all_patterns())
    assert op_names(m) == ["nn.exp", "nn.exp", "func.return"]


class NegToSub(RewritePattern):
    """-x -> 0 - x (undone by SubToNeg)."""

    name = "neg-to-sub"
    root = "nn.neg"

    def match_and_rewrite(self, op, rewriter):
        from pir.ir.dialects.builtin import make_constant
        import numpy as np

        zero = rewriter.insert(make_constant(None, np.zeros((), np.float32)), op).results[0]
        rewriter.replace_op(op, [rewriter.value(OPS["nn.sub"], zero, op.operands[0], before=op)])
        return True


SUB_TO_NEG = drr("sub-to-neg", Op("nn.sub", Const(0), Var("x")), Op("nn.neg", Var("x")))


def test_two_patterns_undoing_each_other_fail_by_name():
    m = module("""
    %y = nn.neg(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%y) : (tensor<Bx3xf32>) -> ()""")
    with pytest.raises(PirError) as e:
        apply_patterns(m, [NegToSub(), SUB_TO_NEG], max_rewrites=20)
    assert e.value.message == (
        "pattern rewriting did not converge after 20 rewrites; the last patterns applied: "
        "neg-to-sub, sub-to-neg, neg-to-sub, sub-to-neg, neg-to-sub "
        "(two patterns may be undoing each other)")


def test_the_default_rewrite_budget_grows_with_the_program():
    m = module("""
    %y = nn.neg(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%y) : (tensor<Bx3xf32>) -> ()""")
    with pytest.raises(PirError, match="did not converge after 1020 rewrites"):
        apply_patterns(m, [NegToSub(), SUB_TO_NEG])  # 10 per op (2 ops) + 1000


# -- names -----------------------------------------------------------------------------------

def test_a_new_op_takes_the_name_of_the_value_it_replaces():
    m = module("""
    %a = nn.transpose(%x) {perm = [1, 0]} : (tensor<Bx3xf32>) -> tensor<3xBxf32>
    %b = nn.transpose(%a) {perm = [1, 0]} : (tensor<3xBxf32>) -> tensor<Bx3xf32>
    %c = nn.transpose(%b) {perm = [1, 0]} : (tensor<Bx3xf32>) -> tensor<3xBxf32>
    %r = nn.exp(%c) : (tensor<3xBxf32>) -> tensor<3xBxf32>
    func.return(%r) : (tensor<3xBxf32>) -> ()""", results="tensor<3xBxf32>")
    apply_patterns(m, all_patterns())
    # c(b(a(x))) composes into one transpose, which takes the name of the outermost (c).
    assert body_text(m) == ('%c = nn.transpose(%x) {perm = [1, 0]}\n%r = nn.exp(%c)\n'
                            'func.return(%r)')


def test_an_output_keeps_its_name_when_an_intermediate_value_replaces_it():
    m = module("""
    %c = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %out = nn.mul(%e, %c) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    func.return(%out) : (tensor<Bx3xf32>) -> ()""")
    apply_patterns(m, all_patterns())
    assert body_text(m) == "%out = nn.exp(%x)\nfunc.return(%out)"


def test_an_output_is_not_replaced_by_an_input_or_another_output():
    # `pir run` names outputs after the returned values: x*1 -> x would rename output %y to
    # %x, and max(x, x) -> x would return one value under two names.
    m = module("""
    %c = builtin.constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %y = nn.mul(%x, %c) : (tensor<Bx3xf32>, tensor<f32>) -> tensor<Bx3xf32>
    %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %z = nn.max(%e, %e) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%y, %e, %z) : (tensor<Bx3xf32>, tensor<Bx3xf32>, tensor<Bx3xf32>) -> ()""",
               results="tensor<Bx3xf32>, tensor<Bx3xf32>, tensor<Bx3xf32>")
    assert apply_patterns(m, all_patterns()) == {}
    assert op_names(m) == ["builtin.constant", "nn.mul", "nn.exp", "nn.max", "func.return"]


# -- declarative patterns --------------------------------------------------------------------

def test_a_variable_bound_twice_must_be_the_same_value():
    m = module("""
    %e = nn.exp(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %a = nn.max(%x, %e) : (tensor<Bx3xf32>, tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()""")
    assert apply_patterns(m, all_patterns()) == {}


@pytest.mark.parametrize("value, fires", [("1.0", True), ("1.5", False), ("[1.0, 1.0, 2.0]", False)])
def test_const_splat_needs_every_element_equal(value, fires):
    m = module(f"""
    %c = builtin.constant() {{value = dense<{value}> : tensor<3xf32>}} : () -> tensor<3xf32>
    %a = nn.mul(%x, %c) : (tensor<Bx3xf32>, tensor<3xf32>) -> tensor<Bx3xf32>
    %r = nn.exp(%a) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    func.return(%r) : (tensor<Bx3xf32>) -> ()""")
    pattern = drr("times-one", Op("nn.mul", Var("x"), Const(1)), Var("x"))
    assert apply_patterns(m, [pattern]) == ({"times-one": 1} if fires else {})


def test_a_splat_not_representable_in_the_dtype_does_not_match():
    # Const(0.5) against an integer constant 0: 0.5 cast to i32 is 0, but 0 is not 0.5.
    m = module("""
    %c = builtin.constant() {value = dense<0> : tensor<3xi32>} : () -> tensor<3xi32>
    %a = nn.add(%x, %c) : (tensor<Bx3xi32>, tensor<3xi32>) -> tensor<Bx3xi32>
    %r = nn.abs(%a) : (tensor<Bx3xi32>) -> tensor<Bx3xi32>
    func.return(%r) : (tensor<Bx3xi32>) -> ()""", args="%x: tensor<Bx3xi32>", results="tensor<Bx3xi32>")
    assert apply_patterns(m, [drr("plus-half", Op("nn.add", Var("x"), Const(0.5)), Var("x"))]) == {}


def test_a_result_of_another_type_is_undone_without_leaving_ops_behind():
    # transpose(x) -> neg(x) has the type of x, not of the transpose: no rewrite, and the
    # neg built to check it is erased again.
    m = module("""
    %a = nn.transpose(%x) {perm = [1, 0]} : (tensor<Bx3xf32>) -> tensor<3xBxf32>
    func.return(%a) : (tensor<3xBxf32>) -> ()""", results="tensor<3xBxf32>")
    wrong = drr("wrong", Op("nn.transpose", Var("x"), perm=Attr("p")), Op("nn.neg", Var("x")))
    assert apply_patterns(m, [wrong]) == {}
    assert op_names(m) == ["nn.transpose", "func.return"]


def test_attribute_constraints_compare_with_the_default():
    # nn.flatten's axis defaults to 1: a pattern asking for axis=1 matches an op without it.
    m = module("""
    %a = nn.flatten(%x) : (tensor<Bx3xf32>) -> tensor<Bx3xf32>
    %b = nn.flatten(%x) {axis = 0} : (tensor<Bx3xf32>) -> tensor<1x?xf32>
    func.return(%a, %b) : (tensor<Bx3xf32>, tensor<1x?xf32>) -> ()""",
               results="tensor<Bx3xf32>, tensor<1x?xf32>")
    count = {}

    def seen(m):
        count[m.root.attributes.get("axis", 1)] = True
        return False

    apply_patterns(m, [drr("flat", Op("nn.flatten", Var("x"), axis=1), Var("x"), where=seen)])
    assert count == {1: True}

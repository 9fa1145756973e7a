"""Launch expressions: a kernel's grid as an expression of its program's symbolic dims.

``pir codegen --target cuda`` writes each kernel's grid size as text such as
``min(cdiv({batch} * {seq} * 64, 1024), 8192)``: ``{name}`` is the size of the symbolic dim
``name``, and the expression may use integers, ``+ - * //``, parentheses, ``cdiv(a, b)``
(ceiling division), ``min`` and ``max``.  :func:`evaluate` computes it for one binding of
the dims, without ``eval``: the text is parsed with :mod:`ast` and only those forms are
accepted.
"""

from __future__ import annotations

import ast
import re

from pir.errors import PirError

__all__ = ["evaluate", "evaluate_grid", "symbols"]

_SYM = re.compile(r"\{([^{}]+)\}")
_FUNCS = {"cdiv": lambda a, b: -(-a // b) if b else 0, "min": min, "max": max}


def symbols(expr: str) -> set[str]:
    return set(_SYM.findall(expr))


def evaluate(expr: str, sizes: dict[str, int]) -> int:
    """The value of launch expression ``expr`` with the dims of ``sizes``."""
    names: dict[str, int] = {}

    def sub(m):
        sym = m.group(1)
        if sym not in sizes:
            raise PirError(f"launch expression '{expr}': the size of dim '{sym}' is unknown")
        key = f"_s{len(names)}"
        names[key] = int(sizes[sym])
        return key

    text = _SYM.sub(sub, expr)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise PirError(f"launch expression '{expr}' does not parse") from None
    if isinstance(tree.body, ast.Tuple):
        return tuple(int(_eval(e, names, expr)) for e in tree.body.elts)
    return int(_eval(tree.body, names, expr))


def evaluate_grid(expr: str, sizes: dict[str, int]) -> tuple[int, int, int]:
    """A grid (``x`` or ``x, y`` or ``x, y, z``) as three sizes, each at least 1."""
    v = evaluate(expr, sizes)
    v = v if isinstance(v, tuple) else (v,)
    if not 1 <= len(v) <= 3:
        raise PirError(f"launch expression '{expr}': a grid has 1 to 3 sizes")
    return tuple(max(1, x) for x in v) + (1,) * (3 - len(v))


def _eval(node, names, expr):
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                             ast.FloorDiv)):
        a, b = _eval(node.left, names, expr), _eval(node.right, names, expr)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        return a // b if b else 0
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in _FUNCS and not node.keywords:
        return _FUNCS[node.func.id](*(_eval(a, names, expr) for a in node.args))
    raise PirError(f"launch expression '{expr}': unsupported form {ast.dump(node)[:40]}")

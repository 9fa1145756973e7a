"""The pass base class and the pass registry.

A pass is a small frozen dataclass with a kebab-case ``name`` and a docstring; its fields are
its options, so ``-p 'decompose{ops=softmax,layer_norm}'`` maps onto them (xDSL's design)::

    @dataclass(frozen=True)
    class DeadCodeElimination(Pass):
        \"\"\"Remove ops whose results are unused and that have no side effects.\"\"\"
        name: ClassVar[str] = "dce"

        def apply(self, module: ModuleOp) -> None: ...

The registry maps names to modules, imported only when a pass is used, so the CLI starts
fast.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar, get_type_hints

from pir.errors import PirError, UsageError
from pir.ir.dialects.builtin import ModuleOp

__all__ = ["Pass", "PASS_MODULES", "get_pass_class", "all_pass_classes", "PassOption",
           "function_blocks"]

#: Every pass by name -> the module that defines it.  One line per pass.
PASS_MODULES: dict[str, str] = {
    "canonicalize": "pir.passes.canonicalize",
    "cse": "pir.passes.cse",
    "dce": "pir.passes.dce",
    "decompose": "pir.passes.decompose",
    "fold": "pir.passes.fold",
    "shape-branches": "pir.passes.shape_branches",
    "fuse": "pir.passes.fuse",
    "shapes": "pir.passes.shapes",
}


@dataclass(frozen=True)
class PassOption:
    """One option as `pir passes` shows it."""

    name: str  # kebab-case, as written in a pipeline
    field: str  # the dataclass field
    type: str
    default: Any
    doc: str
    min: int | float | None = None  # the valid range of an int or float option, inclusive
    max: int | float | None = None

    def range_text(self) -> str:
        if self.min is not None and self.max is not None:
            return f"between {self.min} and {self.max}"
        if self.min is not None:
            return f"at least {self.min}"
        return f"at most {self.max}" if self.max is not None else ""


@dataclass(frozen=True)
class Pass:
    """Base of every pass; subclasses are frozen dataclasses whose fields are options.

    A field's help text is given with ``dataclasses.field(metadata={"doc": "..."})``, and
    the valid range of a number with ``"min"`` and ``"max"`` there (inclusive).  An int
    option is a count or a size, so its ``min`` is 0 unless the field says otherwise
    (``"min": None`` for an int that may be negative); a value out of range is a usage
    error when the pipeline is parsed, before any input is read.
    """

    name: ClassVar[str] = ""

    def apply(self, module: ModuleOp) -> bool | None:
        """Transform ``module`` in place.  Return False when nothing changed: the pass
        manager then skips verifying the (unchanged) module, as MLIR does for passes that
        preserve everything.  None means "may have changed"."""
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[PassOption]:
        hints = get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            type_name = _type_name(hints[f.name])
            out.append(PassOption(f.name.replace("_", "-"), f.name, type_name, default,
                                  f.metadata.get("doc", ""),
                                  f.metadata.get("min", 0 if type_name == "int" else None),
                                  f.metadata.get("max")))
        return out

    @classmethod
    def summary(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].replace("\n", " ")

    @classmethod
    def from_options(cls, raw: dict[str, str | list[str]]) -> Pass:
        """Build from pipeline text options (kebab-case names, string values)."""
        known = {o.name: o for o in cls.options()}
        kwargs = {}
        for key, value in raw.items():
            opt = known.get(key)
            if opt is None:
                valid = ", ".join(sorted(known)) or "none"
                raise UsageError(f"pass '{cls.name}' has no option '{key}' (options: {valid})")
            kwargs[opt.field] = _convert(cls.name, opt, value)
        return cls(**kwargs)

    def pipeline_text(self) -> str:
        """This pass with every option resolved, as pipeline text (for replaying a step)."""
        opts = []
        for o in self.options():
            v = getattr(self, o.field)
            opts.append(f"{o.name}={_format_option(v)}")
        return self.name + ("{" + " ".join(opts) + "}" if opts else "")


def _type_name(t) -> str:
    if t in (int, float, bool, str):
        return t.__name__
    return "list"


#: An int as pipeline text: ASCII digits only (int() also takes '٣' and '1_000').
_INT = re.compile(r"[+-]?[0-9]+")


def _convert(pass_name: str, opt: PassOption, value: str | list[str]) -> Any:
    """An option's value from pipeline text; a usage error when it is not one."""
    items = value if isinstance(value, list) else [value]
    try:
        if opt.type == "list":
            return tuple(x for x in items if x)
        if len(items) != 1:
            raise ValueError("expects one value")
        v = items[0]
        if opt.type == "bool":
            if v.lower() not in ("true", "false", "1", "0"):
                raise ValueError("expects true or false")
            return v.lower() in ("true", "1")
        if opt.type in ("int", "float"):
            return _number(opt, v)
        return v
    except ValueError as e:
        shown = " ".join(value) if isinstance(value, list) else value
        raise UsageError(f"pass '{pass_name}' option '{opt.name}': {e} (got '{shown}')") from None


def _number(opt: PassOption, v: str) -> int | float:
    if opt.type == "int":
        if not _INT.fullmatch(v) or len(v) > 30:  # int() of thousands of digits is an error
            raise ValueError("expects an integer")
        n = int(v)
    else:
        try:
            n = float(v)
        except ValueError:
            raise ValueError("expects a number") from None
        if not math.isfinite(n):
            raise ValueError("expects a finite number")
    if (opt.min is not None and n < opt.min) or (opt.max is not None and n > opt.max):
        raise ValueError(f"must be {opt.range_text()}")
    return n


def _format_option(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (tuple, list)):
        return ",".join(map(str, v))
    return str(v)


def function_blocks(module: ModuleOp):
    """The top-level blocks of every function of ``module``: where most passes start."""
    for fn in module.funcs:
        for region in fn.regions:
            yield from region.blocks


def get_pass_class(name: str) -> type[Pass]:
    module = PASS_MODULES.get(name)
    if module is None:
        valid = ", ".join(sorted(PASS_MODULES))
        raise PirError(f"unknown pass '{name}' (passes: {valid})")
    mod = importlib.import_module(module)
    for obj in vars(mod).values():
        if isinstance(obj, type) and issubclass(obj, Pass) and obj.name == name:
            return obj
    raise PirError(f"module {module} defines no pass named '{name}'")


def all_pass_classes() -> list[type[Pass]]:
    return [get_pass_class(n) for n in sorted(PASS_MODULES)]

"""Pipeline text: ``decompose{ops=softmax,layer_norm},canonicalize,cse,fuse{max-group-ops=64}``.

Passes are separated by commas.  Options go in braces, separated by spaces or commas, each
``name=value``; a list value continues over commas until the next ``name=`` (so
``{ops=softmax,layer_norm disable=x}`` is two options); a boolean option may be written
bare (``{explain}``).

A mistake in the text (syntax, an option a pass does not have, a value of the wrong type or
out of the option's range) is a usage error, found before any input is read.
"""

from __future__ import annotations

from pir.errors import UsageError
from pir.passes.base import Pass, get_pass_class

__all__ = ["parse_pipeline", "format_pipeline", "resolve_pipeline", "DEFAULT_PIPELINE", "PRESETS"]

#: The pipeline `pir optimize` runs without -p (documented in docs/passes.md).
DEFAULT_PIPELINE = "decompose,canonicalize,fold,cse,dce,shapes"

PRESETS = {
    "0": "",
    "1": "canonicalize,fold,cse,dce",
    "2": DEFAULT_PIPELINE,
}


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside braces.  Blank text is no passes (``-O0``); an
    empty part between commas is an error, not a pass skipped: ``cse,,dce`` is more likely
    a pass left out than one too many commas."""
    if not text.strip():
        return []
    parts, depth, cur = [], 0, []
    for c in text:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise UsageError(f"pipeline: unbalanced '}}' in '{text}'")
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if depth:
        raise UsageError(f"pipeline: unclosed '{{' in '{text}'")
    parts.append("".join(cur))
    parts = [p.strip() for p in parts]
    if "" in parts:
        raise UsageError(f"pipeline: empty pass name at pass {parts.index('') + 1} of '{text}'")
    return parts


def _parse_options(name: str, body: str, flags: set[str],
                   options: set[str]) -> dict[str, str | list[str]]:
    opts: dict[str, list[str]] = {}
    current = None
    for tok in body.replace(",", " ").split():
        if tok in flags:  # a bare boolean option: `decompose{explain}`
            opts[tok] = ["true"]
            current = None
        elif "=" in tok:
            key, value = tok.split("=", 1)
            if not key:
                raise UsageError(f"pipeline: pass '{name}': option without a name in '{tok}'")
            current = opts.setdefault(key.strip(), [])
            if value:
                current.append(value)
        elif current is None:
            raise UsageError(f"pipeline: pass '{name}': expected name=value, got '{tok}' "
                           f"(options: {', '.join(sorted(options)) or 'none'})")
        else:
            current.append(tok)
    return {k: v[0] if len(v) == 1 else v for k, v in opts.items()}


def resolve_pipeline(pipeline: str | None = None, level: str | None = None) -> str:
    """The pipeline text for `pir optimize`: ``-p`` as given, else the ``-O`` preset, else
    the default pipeline."""
    if pipeline is not None and level is not None:
        raise UsageError("give either -p or -O, not both")
    if pipeline is not None:
        return pipeline
    return PRESETS[level] if level is not None else DEFAULT_PIPELINE


def parse_pipeline(text: str) -> list[Pass]:
    """Pass instances for pipeline text; unknown passes and options are errors that list
    what is valid."""
    passes = []
    for part in _split_top(text):
        if "{" in part:
            name, _, rest = part.partition("{")
            if not rest.endswith("}"):
                raise UsageError(f"pipeline: expected '}}' at the end of '{part}'")
            body = rest[:-1]
        else:
            name, body = part, ""
        name = name.strip()
        if not name:  # `{size-limit=3}` alone
            raise UsageError(f"pipeline: options without a pass name in '{part}'")
        cls = get_pass_class(name)
        flags = {o.name for o in cls.options() if o.type == "bool"}
        options = {o.name for o in cls.options()}
        passes.append(cls.from_options(_parse_options(name, body, flags, options)))
    return passes


def format_pipeline(passes: list[Pass]) -> str:
    return ",".join(p.pipeline_text() for p in passes)

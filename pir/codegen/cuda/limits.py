"""The extremes of C integer types, as literals (identities of integer max / min)."""

from __future__ import annotations

_BITS = {"signed char": 8, "short": 16, "int": 32, "long long": 64, "unsigned char": 8,
         "unsigned short": 16, "unsigned int": 32, "unsigned long long": 64, "bool": 1}


def bits(ctype: str) -> int:
    return _BITS.get(ctype, 32)


def int_limit(ctype: str, largest: bool) -> str:
    n = _BITS[ctype]
    if ctype.startswith("unsigned"):
        return f"({ctype})({(1 << n) - 1}ULL)" if largest else "0"
    if largest:
        return f"({ctype})({(1 << (n - 1)) - 1}LL)"
    return f"({ctype})(-{(1 << (n - 1)) - 1}LL - 1)"

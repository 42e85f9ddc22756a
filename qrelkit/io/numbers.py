"""Numbers read from text files, as trec_eval and the field's tools read them: ASCII digits only
(Python's `int` and `float` also take `1_000`, `١٢` and `ｉｎｆ`, which no C reader does), integers
within 64 bits, and scores finite as 32-bit floats (the precision runs are evaluated at).

Each parser returns the value, or raises ValueError with a message that names what was wrong
(the caller adds the file, line and column)."""

from __future__ import annotations

import math
import re

import numpy as np

_INTEGER = re.compile(r"[+-]?[0-9]+\Z", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z", re.ASCII)
_C_SPECIAL = re.compile(r"[+-]?(?:inf|infinity|nan)\Z", re.ASCII | re.IGNORECASE)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def finite_as_float32(value: float) -> bool:
    """Whether ``value`` stays finite when rounded to a 32-bit float (round to nearest)."""
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.float32(value)))


def ascii_int(text: str, what: str) -> int:
    """An integer written in ASCII digits (an optional sign), within the signed 64-bit range."""
    if not _INTEGER.match(text):
        raise ValueError(f"{what} must be an integer (ASCII digits), found {_shown(text)}")
    if len(text.lstrip("+-").lstrip("0")) > 19:
        raise ValueError(f"{what} {_shown(text)} is beyond the 64-bit integer range")
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{what} {_shown(text)} is beyond the 64-bit integer range")
    return value


def ascii_number(text: str, what: str) -> float:
    """A decimal number in ASCII, or `inf`/`nan` as C's strtod spells them (the caller decides
    whether those may stand): no `1_000`, no non-ASCII digits."""
    if not (_DECIMAL.match(text) or _C_SPECIAL.match(text)):
        raise ValueError(f"{what} must be a decimal number (ASCII digits), found {_shown(text)}")
    return float(text)


def ascii_float32(text: str, what: str) -> float:
    """A decimal number in ASCII (`12`, `-0.5`, `3e-4`), finite once rounded to a 32-bit float.
    The value returned keeps its 64-bit precision; rounding is the caller's choice."""
    if not _DECIMAL.match(text):
        raise ValueError(f"{what} must be a decimal number (ASCII digits), found {_shown(text)}")
    value = float(text)
    if not math.isfinite(value) or not finite_as_float32(value):
        raise ValueError(f"{what} {_shown(text)} is not finite as a 32-bit float (the precision scores are evaluated at)")
    return value


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")

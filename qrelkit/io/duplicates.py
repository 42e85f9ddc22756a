"""The one choice a reader of TREC files leaves to the user: what a repeated (qid, docid) means."""

from __future__ import annotations

from enum import StrEnum

from qrelkit.errors import QrelkitError


class OnDuplicate(StrEnum):
    """How to resolve a repeated (qid, docid) within one file."""

    error = "error"
    first = "first"  # keep the first occurrence
    last = "last"  # keep the last occurrence
    max = "max"  # keep the highest score / grade


def on_duplicate(value: object) -> OnDuplicate:
    """``value`` (a flag's string, a config value, an `OnDuplicate`) as the policy; a QrelkitError
    naming the choices for anything else, when the request is made."""
    try:
        return OnDuplicate(str(value) if not isinstance(value, OnDuplicate) else value)
    except ValueError:
        raise QrelkitError(f"--on-duplicate {value!r}: choose error, first, last or max") from None

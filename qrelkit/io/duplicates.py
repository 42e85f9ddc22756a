"""The one choice a reader of TREC files leaves to the user: what a repeated (qid, docid) means."""

from __future__ import annotations

from enum import StrEnum


class OnDuplicate(StrEnum):
    """How to resolve a repeated (qid, docid) within one file."""

    error = "error"
    first = "first"  # keep the first occurrence
    last = "last"  # keep the last occurrence
    max = "max"  # keep the highest score / grade

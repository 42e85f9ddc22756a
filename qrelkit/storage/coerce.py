"""A judgment as a row the judgments table accepts, whatever a provider or a judge put in it.

A provider may send a `system_fingerprint` that is an object, a token count beyond 32 bits, a
cost that is NaN, text with a lone surrogate, an answer of megabytes. None of these may fail the
write of a batch (the answers are paid for), so every field is coerced to its column's type or
dropped, and each change is noted on the judgment (`notes`), never silent.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import pyarrow as pa

from qrelkit.io.limits import cut_answer, limits

_SURROGATE = re.compile("[\ud800-\udfff]")
STATUSES = ("ok", "parse_error", "model_error", "input_error")
INT32_MAX = 2**31 - 1
SHORT_TEXT_CHARS = 1_000  # model ids and fingerprints: anything longer is not one
SCORE_FIELDS = ("score", "parsed", "expected")
TEXT_FIELDS = {"raw_output": None, "error": None, "model_id": SHORT_TEXT_CHARS, "system_fingerprint": SHORT_TEXT_CHARS}
COUNT_FIELDS = ("tokens_in", "tokens_out")
AMOUNT_FIELDS = ("latency_ms", "cost")
# The judgments table's columns as a writer fills them (`judged_at` is the database's).
JUDGMENT_COLUMNS = [
    "judge_run_id",
    "qid",
    "docid",
    "status",
    "score",
    "parsed",
    "expected",
    "raw_output",
    "error",
    "tokens_in",
    "tokens_out",
    "latency_ms",
    "cost",
    "attempts",
    "model_id",
    "system_fingerprint",
    "content_hash",
    "notes",
    "topic_hash",
]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value: Any) -> tuple[str, str | None]:
    """(text, note) for any value: a string as it is, anything else as JSON (or its repr)."""
    if isinstance(value, str):
        return value, None
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text, f"was a {type(value).__name__}, stored as text"


def coerce_text(name: str, value: Any, limit: int | None, notes: list[str]) -> str | None:
    if value is None:
        return None
    text, note = _text(value)
    if note:
        notes.append(f"{name} {note}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates, which UTF-8 cannot hold
        text = _SURROGATE.sub("\ufffd", text)
        notes.append(f"{name} had lone surrogates, replaced by U+FFFD")
    text, left_out = cut_answer(text, limit)
    if left_out:
        notes.append(f"{name} cut: {left_out} characters left out of the middle (QRELKIT_MAX_ANSWER_CHARS)")
    return text


def coerce_number(name: str, value: Any, notes: list[str], *, low: float | None = None) -> float | None:
    if value is None:
        return None
    number = None if isinstance(value, bool) or not isinstance(value, numbers.Real) else float(value)
    if number is None or not math.isfinite(number) or (low is not None and number < low):
        notes.append(f"{name} {_shown(value)} dropped (not a finite number{'' if low is None else f' ≥ {low:g}'})")
        return None
    return number


def coerce_count(name: str, value: Any, notes: list[str], *, low: int = 0) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= int(value) <= INT32_MAX:
        notes.append(f"{name} {_shown(value)} dropped (not a whole number from {low} to {INT32_MAX})")
        return None
    return int(value)


def judgment_row(judgment: Any) -> dict[str, Any]:
    """The judgment's stored fields, each of its column's type, and `notes` saying what changed."""
    notes: list[str] = []
    row: dict[str, Any] = {}
    for key in ("qid", "docid"):
        value = getattr(judgment, key, None)
        if not isinstance(value, str) or not value:
            raise ValueError(f"a judgment without a {key} ({_shown(value)})")
        row[key] = value
    status = getattr(judgment, "status", None)
    if status not in STATUSES:
        notes.append(f"status {_shown(status)} is not one of {', '.join(STATUSES)}; stored as model_error")
        status = "model_error"
    row["status"] = status
    for name in SCORE_FIELDS:
        row[name] = coerce_number(name, getattr(judgment, name, None), notes) if status == "ok" else None
    for name, limit in TEXT_FIELDS.items():
        row[name] = coerce_text(name, getattr(judgment, name, None), limit, notes)
    for name in COUNT_FIELDS:
        row[name] = coerce_count(name, getattr(judgment, name, None), notes)
    for name in AMOUNT_FIELDS:
        row[name] = coerce_number(name, getattr(judgment, name, None), notes, low=0.0)
    row["attempts"] = coerce_count("attempts", getattr(judgment, "attempts", 1), notes, low=1) or 1
    if status == "ok" and getattr(judgment, "score", None) is not None and row["score"] is None:
        row["status"] = "model_error"  # an ok judgment whose score could not be kept is not ok
        row["error"] = row["error"] or "the judge's score could not be stored (see notes)"
    given = getattr(judgment, "notes", None)
    if isinstance(given, str) and given:
        notes.insert(0, given)
    row["notes"] = "; ".join(notes) or None
    return row


def fallback_row(judgment: Any, exc: BaseException) -> dict[str, Any]:
    """The least a judgment can be stored as when its full row cannot: a model error that keeps
    the raw answer (so the pair is not sent again) and says why."""
    notes: list[str] = []
    return {
        "qid": str(getattr(judgment, "qid", "")),
        "docid": str(getattr(judgment, "docid", "")),
        "status": "model_error",
        "raw_output": coerce_text("raw_output", getattr(judgment, "raw_output", None), None, notes),
        "error": f"the judgment could not be stored as given: {type(exc).__name__}: {str(exc)[:300]}",
        "attempts": coerce_count("attempts", getattr(judgment, "attempts", 1), notes, low=1) or 1,
        "notes": "; ".join(notes) or None,
    }


_NONE = type(None)
_STATUS_SET = frozenset(STATUSES)


def _of_types(values: list[Any], allowed: set[type]) -> bool:
    return set(map(type, values)) <= allowed


def _numbers(values: list[Any], *, low: float | None = None) -> pa.Array | None:
    """float64 values when each is a finite float or int (at least ``low``), else None."""
    if not _of_types(values, {float, int, _NONE}):
        return None
    present = [v for v in values if v is not None]
    if not all(map(math.isfinite, present)) or (low is not None and present and min(present) < low):
        return None
    return pa.array(values, pa.float64())


def _counts(values: list[Any], *, low: int) -> pa.Array | None:
    """int32 values when each is an int from ``low`` to INT32_MAX (or None), else None."""
    if not _of_types(values, {int, _NONE}):
        return None
    present = [v for v in values if v is not None]
    if present and (min(present) < low or max(present) > INT32_MAX):
        return None
    return pa.array(values, pa.int32())


def _texts(values: list[Any], limit: int) -> pa.Array | None:
    """Strings UTF-8 can hold, none longer than ``limit``, else None."""
    if not _of_types(values, {str, _NONE}):
        return None
    present = [v for v in values if v is not None]
    if present and max(map(len, present)) > limit:
        return None
    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:  # a lone surrogate: judgment_row replaces it, with a note
        return None


def plain_columns(judgments: Sequence[Any]) -> dict[str, pa.Array] | None:
    """The judgments' stored columns (as `judgment_row` names them, `notes` all null) when storing
    them changes nothing: every field is already of its column's type and within its limits, so
    `judgment_row` would keep each as it is and note nothing. None otherwise, and then each
    judgment goes through `judgment_row`. The fast path of a batch of ordinary judgments: a
    column at a time rather than a row at a time."""
    try:
        columns: dict[str, Any] = {}
        for key in ("qid", "docid"):
            values = list(map(attrgetter(key), judgments))
            if not _of_types(values, {str}) or not all(values):
                return None
            columns[key] = pa.array(values, pa.string())
        statuses = list(map(attrgetter("status"), judgments))
        if not set(statuses) <= _STATUS_SET:
            return None
        columns["status"] = pa.array(statuses, pa.string())
        failed = [status != "ok" for status in statuses]
        any_failed = statuses.count("ok") < len(statuses)
        for name in SCORE_FIELDS:
            values = list(map(attrgetter(name), judgments))
            if any_failed and any(v is not None and bad for v, bad in zip(values, failed)):
                return None  # a failure carries no score: judgment_row drops it
            columns[name] = _numbers(values)
        answer_chars = limits().max_answer_chars
        for name, limit in TEXT_FIELDS.items():
            columns[name] = _texts(list(map(attrgetter(name), judgments)), limit or answer_chars)
        for name in COUNT_FIELDS:
            columns[name] = _counts(list(map(attrgetter(name), judgments)), low=0)
        for name in AMOUNT_FIELDS:
            columns[name] = _numbers(list(map(attrgetter(name), judgments)), low=0.0)
        attempts = list(map(attrgetter("attempts"), judgments))
        columns["attempts"] = _counts(attempts, low=1) if None not in attempts else None
    except (AttributeError, TypeError, ValueError, OverflowError, pa.ArrowException):
        return None
    if any(column is None for column in columns.values()):
        return None
    columns["notes"] = pa.nulls(len(judgments), pa.string())
    return columns

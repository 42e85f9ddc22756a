"""Qrels and runs handed over in memory, as a notebook holds them: a ``{qid: {docid: value}}`` dict,
or a pandas or Arrow table with the field's column names (``query_id``, ``doc_id``, ``relevance`` /
``score``, as ir_measures and ranx name them; ``qid``, ``docid``, ``grade`` as qrelkit's own tables
do). Each becomes the same `Qrels` or `Run` a file would: qids and docids as text (a DataFrame's
integer qids too), grades as integers within 64 bits, scores finite as 32-bit floats (as a run
file's must be), repeated pairs refused unless a policy says otherwise. A value that is none of
these is a QrelkitError naming it, never pyarrow's or Python's own error.

pandas is never imported here: a DataFrame is recognised by its ``to_dict`` and read column by
column, so a caller who has one has pandas already.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qrelkit.errors import QrelkitError
from qrelkit.io import arrays
from qrelkit.io.duplicates import OnDuplicate
from qrelkit.io.numbers import INT64_MAX, INT64_MIN, finite_as_float32
from qrelkit.io.trec import Qrels, Run

# pyarrow's errors for a value it cannot convert (ArrowInvalid is a ValueError, ArrowTypeError a TypeError)
_CONVERSION = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError, KeyError)


def _first_line(exc: BaseException) -> str:
    text = str(exc.args[0] if len(exc.args) > 1 else exc)
    return (text.strip().splitlines() or [type(exc).__name__])[0][:200]


# Each column qrelkit needs, and the names other toolkits give it (first match wins).
QUERY_COLUMNS = ("qid", "query_id", "q_id")
DOC_COLUMNS = ("docid", "doc_id", "document_id")
GRADE_COLUMNS = ("grade", "relevance", "rel", "label", "score")
SCORE_COLUMNS = ("score", "relevance")
RUN_NAME_COLUMNS = ("run", "name", "system")


def is_table(value: object) -> bool:
    """A pandas DataFrame or an Arrow table (or record batch)."""
    return isinstance(value, pa.Table | pa.RecordBatch) or type(value).__name__ == "DataFrame" and hasattr(value, "columns")


def _arrow(value: Any) -> pa.Table:
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    columns = [str(c) for c in value.columns]
    if len(set(columns)) != len(columns):
        raise QrelkitError(f"the table has repeated column names: {columns}")
    try:
        table = pa.Table.from_pandas(value, preserve_index=False)
    except _CONVERSION as exc:  # a column of mixed kinds (text and numbers), or of objects
        raise QrelkitError(f"the table cannot be read: {_first_line(exc)}") from None
    return table.rename_columns(columns)


def _pick(table: pa.Table, names: tuple[str, ...], what: str) -> str:
    for name in names:
        if name in table.column_names:
            return name
    raise QrelkitError(f"the table has no {what} column (looked for {', '.join(names)}; it has {', '.join(table.column_names)})")


def _text(column: pa.ChunkedArray, what: str) -> pa.Array:
    if column.null_count:
        raise QrelkitError(f"the {what} column has {column.null_count} empty value(s)")
    if pa.types.is_string(column.type):
        return column.combine_chunks()
    if len(column) == 0:  # an empty DataFrame's columns are float: no id is read from them
        return pa.array([], pa.string())
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type  # a pandas category
    if not (pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise QrelkitError(f"the {what} column holds {column.type} values; ids are text or whole numbers")
    return pc.cast(column, pa.string()).combine_chunks()


def _grades(column: pa.ChunkedArray) -> pa.Array:
    if column.null_count:
        raise QrelkitError(f"the relevance column has {column.null_count} empty value(s)")
    if pa.types.is_integer(column.type):
        try:
            return pc.cast(column, pa.int64()).combine_chunks()
        except _CONVERSION:  # an unsigned value beyond int64
            raise QrelkitError("relevance grades are whole numbers within 64 bits; the table holds a larger one") from None
    if not pa.types.is_floating(column.type):
        raise QrelkitError(f"relevance grades are whole numbers; the relevance column holds {column.type} values")
    whole = np.asarray(arrays.numbers(column.combine_chunks()), dtype=np.float64)
    integral = np.isfinite(whole) & (whole == np.round(whole))
    if not np.all(integral):
        raise QrelkitError(f"relevance grades are whole numbers; the table holds {whole[~integral][0]:g}")
    fits = (whole >= INT64_MIN) & (whole < INT64_MAX)
    if not np.all(fits):
        raise QrelkitError(f"relevance grades are whole numbers within 64 bits; the table holds {whole[~fits][0]:g}")
    return arrays.from_numpy(whole.astype(np.int64))


def _scores(column: pa.ChunkedArray, what: str, qids: pa.Array, docids: pa.Array) -> pa.Array:
    """A run's scores as float64, each finite once rounded to float32 (as a run file's must be)."""
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        raise QrelkitError(f"{what}: scores are numbers; the score column holds {column.type} values")
    values = np.asarray(arrays.numbers(column.combine_chunks()), dtype=np.float64)
    with np.errstate(over="ignore"):
        finite = np.isfinite(values.astype(np.float32))
    if not np.all(finite):
        at = int(np.flatnonzero(~finite)[0])
        raise QrelkitError(
            f"{what}: the score of ({qids[at].as_py()}, {docids[at].as_py()}), {values[at]:g}, is not finite as a 32-bit float "
            "(the precision scores are evaluated at, as in a run file)"
        )
    return arrays.from_numpy(values)


def _unique_pairs(table: pa.Table, magnitude: str, on_duplicate: OnDuplicate | str, what: str) -> pa.Table:
    from qrelkit.io.columnar import _Fallback, _resolved

    try:
        return _resolved(table, magnitude, OnDuplicate(on_duplicate))
    except _Fallback:
        raise QrelkitError(f"{what} repeat a (qid, docid) pair; pass on_duplicate='first', 'last' or 'max'") from None


def qrels_from_table(value: Any, name: str, *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Qrels:
    """Qrels from a pandas or Arrow table (``query_id``/``qid``, ``doc_id``/``docid``, ``relevance``/``grade``)."""
    table = _arrow(value)
    qid, docid = _pick(table, QUERY_COLUMNS, "query id"), _pick(table, DOC_COLUMNS, "document id")
    grade = _pick(table, GRADE_COLUMNS, "relevance")
    qids = _text(table.column(qid), qid)
    iteration = table.column("iteration") if "iteration" in table.column_names else pa.array(["0"] * len(qids), pa.string())
    columns = {
        "qid": qids,
        "iteration": _text(pa.chunked_array([iteration]) if isinstance(iteration, pa.Array) else iteration, "iteration"),
        "docid": _text(table.column(docid), docid),
        "grade": _grades(table.column(grade)),
    }
    return Qrels.from_table(name, _unique_pairs(pa.table(columns), "grade", on_duplicate, "the qrels"))


def qrels_from_dict(value: Mapping[str, Mapping[str, Any]], name: str) -> Qrels:
    """Qrels from ``{qid: {docid: grade}}`` (pytrec_eval's and ranx's form)."""
    qids, docids, grades = [], [], []
    for qid, docs in value.items():
        if not isinstance(docs, Mapping):
            raise QrelkitError(f"qrels as a dict map each qid to {{docid: grade}}; qid {qid!r} maps to {type(docs).__name__}")
        for docid, grade in docs.items():
            if isinstance(grade, bool) or not isinstance(grade, int | float) or not _whole_int64(grade):
                raise QrelkitError(f"qrels ({qid}, {docid}): the grade {grade!r} is not a whole number within 64 bits")
            qids.append(str(qid))
            docids.append(str(docid))
            grades.append(int(grade))
    if not qids:
        raise QrelkitError("the qrels dict holds no judgments")
    return qrels_from_table(pa.table({"qid": qids, "docid": docids, "grade": pa.array(grades, pa.int64())}), name)


def _finite_score(value: int | float) -> bool:
    try:
        return finite_as_float32(float(value))
    except OverflowError:  # an int beyond any float
        return False


def _whole_int64(value: int | float) -> bool:
    if isinstance(value, float):
        return value == value and abs(value) != float("inf") and value.is_integer() and INT64_MIN <= value < INT64_MAX
    return INT64_MIN <= value <= INT64_MAX


def run_from_table(value: Any, name: str, *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> Run:
    """One run from a pandas or Arrow table (``query_id``/``qid``, ``doc_id``/``docid``, ``score``;
    a ``rank`` column is kept, else ranks follow the scores)."""
    table = _arrow(value)
    qid, docid = _pick(table, QUERY_COLUMNS, "query id"), _pick(table, DOC_COLUMNS, "document id")
    score = _pick(table, SCORE_COLUMNS, "score")
    scores = table.column(score)
    if scores.null_count:
        raise QrelkitError(f"the {score} column has {scores.null_count} empty value(s)")
    columns = {"qid": _text(table.column(qid), qid), "docid": _text(table.column(docid), docid)}
    columns["score"] = _scores(scores, f"run {name!r}", columns["qid"], columns["docid"])
    ranks = table.column("rank") if "rank" in table.column_names else None
    if ranks is not None and (ranks.null_count or not pa.types.is_integer(ranks.type)):
        raise QrelkitError(
            f"run {name!r}: ranks are whole numbers; the rank column holds {ranks.type} values"
            + (" and empty ones" if ranks.null_count else "")
        )
    columns["rank"] = _ranks(columns["qid"], columns["score"]) if ranks is None else pc.cast(ranks, pa.int64()).combine_chunks()
    resolved = _unique_pairs(pa.table(columns).select(["qid", "docid", "rank", "score"]), "score", on_duplicate, f"run {name!r}")
    return Run.from_table(name, resolved)


def _ranks(qids: pa.Array, scores: pa.Array) -> pa.Array:
    """1-based ranks by score within each query (the order a TREC run file would list)."""
    keys = pa.table({"q": qids, "s": scores})
    order = arrays.numbers(pc.sort_indices(keys, sort_keys=[("q", "ascending"), ("s", "descending")])).astype(np.int64)
    ranks = np.empty(len(order), np.int64)
    sorted_q = np.asarray(qids.take(arrays.from_numpy(order)).to_pylist(), dtype=object)
    start = np.concatenate(([True], sorted_q[1:] != sorted_q[:-1])) if len(order) else np.zeros(0, bool)
    first = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
    ranks[order] = np.arange(len(order)) - first + 1
    return arrays.from_numpy(ranks)


def run_from_dict(value: Mapping[str, Mapping[str, Any]], name: str) -> Run:
    """A run from ``{qid: {docid: score}}``."""
    qids, docids, scores = [], [], []
    for qid, docs in value.items():
        if not isinstance(docs, Mapping):
            raise QrelkitError(f"a run as a dict maps each qid to {{docid: score}}; qid {qid!r} maps to {type(docs).__name__}")
        for docid, score in docs.items():
            if isinstance(score, bool) or not isinstance(score, int | float) or not _finite_score(score):
                raise QrelkitError(
                    f"run {name!r} ({qid}, {docid}): the score {score!r} is not a number finite as a 32-bit float "
                    "(the precision scores are evaluated at, as in a run file)"
                )
            qids.append(str(qid))
            docids.append(str(docid))
            scores.append(float(score))
    if not qids:
        raise QrelkitError(f"run {name!r} holds no entries")
    return run_from_table(pa.table({"qid": qids, "docid": docids, "score": scores}), name)


def runs_from_table(value: Any, name: str = "run", *, on_duplicate: OnDuplicate | str = OnDuplicate.error) -> list[Run]:
    """Runs from one table: one per value of its ``run`` (or ``name``, ``system``) column, else one named ``name``."""
    table = _arrow(value)
    column = next((c for c in RUN_NAME_COLUMNS if c in table.column_names), None)
    if column is None:
        return [run_from_table(table, name, on_duplicate=on_duplicate)]
    names = _text(table.column(column), column)
    return [
        run_from_table(table.filter(pc.equal(names, run_name)), str(run_name), on_duplicate=on_duplicate)
        for run_name in dict.fromkeys(names.to_pylist())
    ]


def is_nested_dict(value: object, depth: int) -> bool:
    """A dict whose first values are dicts ``depth`` levels down (runs by name: depth 3; one run or qrels: 2)."""
    for _ in range(depth - 1):
        if not isinstance(value, Mapping) or not value:
            return False
        value = next(iter(value.values()))
    return isinstance(value, Mapping)

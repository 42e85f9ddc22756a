"""Pairs two qrels share, found in columns: a hash join on the smaller side (the reference's tens of
thousands of pairs), never a Python dict per judged pair (a judge's file of 5,000,000 scores is
5,000,000 dict entries, gigabytes, for the few thousand pairs it shares with the reference).

The same pairs as `qrelkit.evaluate.labels.shared_pairs` over `Qrels.grades`: pairs sorted by
(qid, docid) (Arrow orders strings by their UTF-8 bytes, which is Python's order of code points),
each side's grade after its map."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qrelkit.io import Qrels, arrays


def _mapped(qrels: Qrels, mapping: Mapping[int, int] | None) -> np.ndarray | None:
    """The qrels' grades after ``mapping``; None when it leaves a grade out (the dict route names it)."""
    grades = arrays.numbers(qrels.table.column("grade")).astype(np.int64)
    if mapping is None:
        return grades
    distinct, where = np.unique(grades, return_inverse=True)
    if any(int(grade) not in mapping for grade in distinct):
        return None
    return np.asarray([mapping[int(grade)] for grade in distinct], np.int64)[where]


class Joined(NamedTuple):
    """The pairs both sides judge, sorted by (qid, docid), each side's grade after its map."""

    qids: list[str]
    docids: list[str]
    reference: np.ndarray
    model: np.ndarray


def joined_pairs(
    model: Qrels, reference: Qrels, model_map: Mapping[int, int] | None, reference_map: Mapping[int, int] | None
) -> Joined | None:
    """The shared pairs of two Qrels after their maps, in columns; None when a map leaves a grade out."""
    model_grades, reference_grades = _mapped(model, model_map), _mapped(reference, reference_map)
    if model_grades is None or reference_grades is None:
        return None

    def side(qrels: Qrels, grades: np.ndarray, name: str) -> pa.Table:
        table = qrels.table
        return pa.table({"qid": table.column("qid"), "docid": table.column("docid"), name: arrays.from_numpy(grades)})

    # Arrow's hash join builds its table on the right: the reference, whatever the size of the judge's
    # side; one thread (Acero's pool would reserve address space a small process may not have)
    model_side, reference_side = side(model, model_grades, "model"), side(reference, reference_grades, "reference")
    joined = model_side.join(reference_side, keys=["qid", "docid"], join_type="inner", use_threads=False)
    joined = joined.sort_by([("qid", "ascending"), ("docid", "ascending")])
    return Joined(
        joined.column("qid").to_pylist(),
        joined.column("docid").to_pylist(),
        arrays.numbers(joined.column("reference")).astype(np.int64),
        arrays.numbers(joined.column("model")).astype(np.int64),
    )


def queries_of(qrels: Qrels) -> set[str]:
    """The queries a qrels set judges, from its column."""
    return set(pc.unique(qrels.table.column("qid")).to_pylist())


def restricted(qrels: Qrels, queries: list[str]) -> Qrels:
    """The qrels' judgments of ``queries`` only, as columns; the qrels themselves when they judge no
    other query (no copy of a judge's millions of rows)."""
    if queries_of(qrels) <= set(queries):
        return qrels
    table = qrels.table
    return Qrels.from_table(qrels.name, table.filter(pc.is_in(table.column("qid"), value_set=arrays.strings(queries))), source=qrels.source)

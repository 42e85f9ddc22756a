"""How much a test set overlaps its training set (Zhan et al., CIKM 2022, §3.2).

Label overlap (Table 3): the share of test queries with at least one passage of grade >= t that
is also a positive (grade >= the training level) of some training query. The denominator is every
test query of the qrels. The authors' script (`compute_label_overlap.py` in
jingtaozhan/extrapolate-eval) counts a query only when it shares *more than one* such passage
(`len(overlap) > 1`); both counts are reported, `at_least_one` being the paper's definition.

Duplicate queries (Table 4): each test query's most similar training query, listed when the
cosine of their embeddings reaches a threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.interex.similarity import BLOCK_ROWS, top_k_similar
from qrelkit.io import Qrels
from qrelkit.io.results import pandas


@dataclass(frozen=True)
class OverlapRow:
    """Test queries sharing relevant passages with the training positives, at one test grade level."""

    rel_level: int  # t: a test passage counts when its grade >= t
    queries: int  # test queries in the qrels (the denominator)
    queries_with_relevant: int  # test queries with any passage of grade >= t
    at_least_one: int  # queries sharing >= 1 such passage with the training positives (the paper's rule)
    more_than_one: int  # queries sharing > 1 (the authors' script's rule)
    shared_passages: int  # distinct passages of grade >= t that are training positives

    @property
    def share(self) -> float:
        return self.at_least_one / self.queries if self.queries else 0.0

    @property
    def share_more_than_one(self) -> float:
        return self.more_than_one / self.queries if self.queries else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "share": self.share, "share_more_than_one": self.share_more_than_one}


@dataclass(frozen=True)
class LabelOverlap:
    """Table 3 for one training qrels set."""

    train: str  # the training qrels' name
    train_rel_level: int
    train_queries: int
    train_positives: int  # distinct passages some training query has at grade >= train_rel_level
    rows: tuple[OverlapRow, ...]
    shared_by_query: dict[str, dict[int, int]]  # test qid -> t -> passages of grade >= t shared

    def to_dict(self) -> dict[str, Any]:
        return {
            "train": self.train,
            "train_rel_level": self.train_rel_level,
            "train_queries": self.train_queries,
            "train_positives": self.train_positives,
            "levels": [row.to_dict() for row in self.rows],
        }

    def to_pandas(self):
        return pandas().DataFrame([{"train": self.train, **row.to_dict()} for row in self.rows])


def label_overlap(test_qrels: Qrels, train_qrels: Qrels, levels: Sequence[int] = (1, 2, 3), *, train_rel_level: int = 1) -> LabelOverlap:
    """Table 3 of Zhan et al.: per test grade level t, how many test queries share a relevant passage
    (grade >= t) with the positives of the training qrels (grade >= ``train_rel_level``)."""
    if not levels:
        raise QrelkitError("give at least one relevance level")
    positives = {q.docid for q in train_qrels.entries if q.grade >= train_rel_level}
    shared_by_query: dict[str, dict[int, int]] = {}
    rows = []
    for level in levels:
        with_relevant = at_least_one = more_than_one = 0
        shared_passages: set[str] = set()
        for qid, docs in test_qrels.grades.items():
            relevant = {d for d, grade in docs.items() if grade >= level}
            shared = relevant & positives
            shared_by_query.setdefault(qid, {})[level] = len(shared)
            shared_passages |= shared
            with_relevant += bool(relevant)
            at_least_one += len(shared) >= 1
            more_than_one += len(shared) > 1
        rows.append(OverlapRow(level, len(test_qrels.grades), with_relevant, at_least_one, more_than_one, len(shared_passages)))
    train_queries = len({q.qid for q in train_qrels.entries})
    return LabelOverlap(train_qrels.name, train_rel_level, train_queries, len(positives), tuple(rows), shared_by_query)


@dataclass(frozen=True)
class DuplicateQuery:
    """A test query and its most similar training query (Table 4)."""

    test_qid: str
    train_qid: str
    similarity: float
    test_text: str | None = None
    train_text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def duplicate_queries(
    test_qids: Sequence[str],
    test_vectors: np.ndarray,
    train_qids: Sequence[str],
    train_vectors: np.ndarray,
    *,
    threshold: float = 0.85,
    test_texts: Mapping[str, str] | None = None,
    train_texts: Mapping[str, str] | None = None,
    block_rows: int = BLOCK_ROWS,
) -> list[DuplicateQuery]:
    """Each test query whose nearest training query (cosine) reaches ``threshold``, most similar first."""
    if test_vectors.shape[0] != len(test_qids) or train_vectors.shape[0] != len(train_qids):
        raise QrelkitError("each qid needs one embedding row")
    if len(train_qids) == 0:
        return []
    nearest = top_k_similar(test_vectors, train_vectors, 1, block_rows=block_rows)
    found = []
    for row, qid in enumerate(test_qids):
        similarity = float(nearest.scores[row, 0])
        if similarity >= threshold:
            train_qid = train_qids[int(nearest.indices[row, 0])]
            found.append(DuplicateQuery(qid, train_qid, similarity, (test_texts or {}).get(qid), (train_texts or {}).get(train_qid)))
    return sorted(found, key=lambda d: (-d.similarity, d.test_qid))

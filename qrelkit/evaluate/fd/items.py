"""Which items FD@k compares (seeds 000/001): the relevant judged items of the query set, with
balanced sparsification, and a run's top-k (or its first k unjudged items, URR), grouped by
query so that the bootstrap can resample queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.io import Qrels, Run, arrays


def default_relevance_level(qrels: Qrels) -> int:
    """2 for graded qrels (some grade above 1, as TREC DL), 1 for binary ones."""
    grades = arrays.numbers(qrels.table.column("grade"))
    return 2 if len(grades) and grades.max() >= 2 else 1


def relevant_items(qrels: Qrels, *, rel_level: int | None = None, max_rel: int | None = None, seed: int = 0) -> dict[str, list[str]]:
    """qid -> relevant docids (grade ≥ rel_level), for queries with at least one.

    With ``max_rel`` = m (seed 000, section 5: balanced sparsification) a query keeps at most m,
    taken from the highest grade first and at random within a grade (seeded; independent of
    the file's order).
    """
    level = default_relevance_level(qrels) if rel_level is None else rel_level
    if max_rel is not None and max_rel < 1:
        raise QrelkitError(f"--max-rel must be at least 1 (got {max_rel})")
    rng = np.random.default_rng(seed)
    out: dict[str, list[str]] = {}
    for qid, grades in sorted(qrels.grades.items()):
        relevant = sorted((docid for docid, grade in grades.items() if grade >= level), key=lambda d: (-grades[d], d))
        if not relevant:
            continue
        if max_rel is not None:
            chosen: list[str] = []
            for grade in sorted({grades[d] for d in relevant}, reverse=True):
                if len(chosen) >= max_rel:
                    break
                tier = [d for d in relevant if grades[d] == grade]
                chosen += [tier[i] for i in rng.permutation(len(tier))][: max_rel - len(chosen)]
            relevant = chosen
        out[qid] = relevant
    if not out:
        raise QrelkitError(f"no query of qrels {qrels.name!r} has an item with grade >= {level}; try a lower --rel-level")
    return out


def retrieved_items(run: Run, qids: Sequence[str], k: int, *, skip: Mapping[str, set[str]] | None = None) -> dict[str, list[str]]:
    """qid -> the run's top-k docids (trec_eval order) for each of ``qids``.

    ``skip`` (qid -> judged docids) gives URR (seed 000, section 6): the first k retrieved items
    of each query that are not judged.
    """
    if k < 1:
        raise QrelkitError(f"k must be at least 1 (got {k})")
    ranking = run.ranking(depth=None if skip is not None else k)  # URR reads past judged items
    out: dict[str, list[str]] = {}
    for qid in qids:
        docids = ranking.get(qid, [])
        if skip is not None:
            judged = skip.get(qid, set())
            docids = [d for d in docids if d not in judged]
        out[qid] = docids[:k]
    return out


def judged_items(qrels: Qrels) -> dict[str, set[str]]:
    """qid -> every judged docid (any grade): what URR skips."""
    return {qid: set(grades) for qid, grades in qrels.grades.items()}


@dataclass(frozen=True)
class ItemSample:
    """Embedded items grouped by query: the unit the bootstrap resamples.

    ``query_index[i]`` is the position in ``qids`` of the query that item ``i`` belongs to; an
    item relevant to (or retrieved for) two queries appears twice.
    """

    qids: tuple[str, ...]
    docids: tuple[str, ...]
    query_index: np.ndarray  # (N,) int
    vectors: np.ndarray  # (N, d) float64

    def __len__(self) -> int:
        return len(self.docids)


def item_sample(items: Mapping[str, Sequence[str]], qids: Sequence[str], vectors: Mapping[str, np.ndarray]) -> ItemSample:
    """Stack the vectors of ``items`` (qid -> docids) in the order of ``qids``."""
    docids: list[str] = []
    index: list[int] = []
    for position, qid in enumerate(qids):
        for docid in items.get(qid, ()):
            docids.append(docid)
            index.append(position)
    missing = sorted({d for d in docids if d not in vectors})
    if missing:
        shown = ", ".join(repr(d) for d in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise QrelkitError(f"{len(missing)} docid(s) have no document to embed: {shown}{more}; add them to the documents file")
    if docids:
        stacked = np.stack([np.asarray(vectors[d], dtype=np.float64) for d in docids])
    else:
        dim = len(next(iter(vectors.values()))) if vectors else 0
        stacked = np.zeros((0, dim))
    return ItemSample(tuple(qids), tuple(docids), np.asarray(index, dtype=np.int64), stacked)


def fd_label(k: int, urr: bool = False) -> str:
    return f"{'URR-' if urr else ''}FD@{k}"

"""Which items FD@k compares (seeds 000/001): the relevant judged items of the query set, with
balanced sparsification (`qrelkit.evaluate.sparsify`, shared with `evaluate --max-rel`), and a
run's top-k (or its first k unjudged items, URR), grouped by query so that the bootstrap can
resample queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.io import Qrels, Run


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
    docids = [docid for qid in qids for docid in items.get(qid, ())]
    index = [position for position, qid in enumerate(qids) for _ in items.get(qid, ())]
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

"""The common measures computed on arrays, per query, exactly as trec_eval 9.0.8 defines them.

nDCG@k / nDCG   gain = grade where > 0, discount 1/log2(rank + 1); ideal = the query's judged
                documents by grade, descending (all of them, not only those retrieved);
                0 when the ideal is 0 (m_ndcg_cut.c, m_ndcg.c)
AP(rel=L)       Σ over retrieved relevant (grade ≥ L) of precision at its rank / #relevant (m_map.c)
RR(rel=L)       1 / rank of the first relevant document, 0 if none (m_recip_rank.c)
P(rel=L)@k      relevant in the top k / k, even when fewer than k are retrieved (m_P.c)
R(rel=L)@k      relevant in the top k / #relevant, 0 when none is relevant (m_recall.c)
Judged@k        ir_measures' definition (after OpenNIR): judged documents in the top k / min(k,
                retrieved), ranked by score then docid *ascending* as ir_measures ranks them

Names are read in ir_measures' syntax (`nDCG@10`, `AP(rel=2)`, `P(rel=2)@10`); any other name
is not vectorised and goes to ir_measures. Per-query values are returned over the qrels'
queries, 0 for a query the run does not retrieve for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from qrelkit.evaluate.ranked import JudgedPairs, RankedRun

_NAME = re.compile(r"(?P<family>nDCG|AP|RR|P|R|Judged)(?:\(rel=(?P<rel>[0-9]+)\))?(?:@(?P<cutoff>[0-9]+))?")
_CUTOFF = {"nDCG": "optional", "AP": "none", "RR": "none", "P": "required", "R": "required", "Judged": "required"}
_TAKES_REL = {"AP", "RR", "P", "R"}


@dataclass(frozen=True)
class Measure:
    family: str
    rel: int = 1
    cutoff: int | None = None


def vectorised_measure(name: str) -> Measure | None:
    """The measure ``name`` spells, if it is one computed here; None sends it to ir_measures."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    family, rel, cutoff = match["family"], match["rel"], match["cutoff"]
    if rel is not None and family not in _TAKES_REL:
        return None
    rule = _CUTOFF[family]
    if (cutoff is None and rule == "required") or (cutoff is not None and rule == "none"):
        return None
    if cutoff is not None and int(cutoff) < 1:
        return None
    return Measure(family, int(rel) if rel is not None else 1, int(cutoff) if cutoff is not None else None)


def _per_query(ranked: RankedRun, weights: np.ndarray) -> np.ndarray:
    return np.bincount(ranked.query, weights=weights, minlength=ranked.n_queries)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, 0.0)


def _ndcg(ranked: RankedRun, pairs: JudgedPairs, cutoff: int | None) -> np.ndarray:
    gain = np.where(ranked.grade > 0, ranked.grade, 0).astype(np.float64)
    if cutoff is not None:
        gain[ranked.rank > cutoff] = 0.0
    dcg = _per_query(ranked, gain / np.log2(ranked.rank + 1.0))
    return _divide(dcg, pairs.ideal_dcg(cutoff))


def _relevant_so_far(ranked: RankedRun, level: int) -> tuple[np.ndarray, np.ndarray]:
    """(relevant mask, relevant documents at or above each entry within its query)."""
    relevant = ranked.grade >= level
    running = np.cumsum(relevant)
    first = ranked.rank == 1
    before_query: np.ndarray = (running - relevant)[first]  # relevant documents of the queries before
    return relevant, running - before_query[np.cumsum(first) - 1]


def _average_precision(ranked: RankedRun, pairs: JudgedPairs, level: int) -> np.ndarray:
    relevant, so_far = _relevant_so_far(ranked, level)
    precision_sum = _per_query(ranked, np.where(relevant, so_far / ranked.rank, 0.0))
    return _divide(precision_sum, pairs.relevant_counts(level))


def _reciprocal_rank(ranked: RankedRun, level: int) -> np.ndarray:
    relevant = ranked.grade >= level
    out = np.zeros(ranked.n_queries)
    # entries are in rank order within each query, so a query's first relevant entry comes first
    queries, first = np.unique(ranked.query[relevant], return_index=True)
    out[queries] = 1.0 / ranked.rank[relevant][first]
    return out


def _relevant_in_top(ranked: RankedRun, level: int, cutoff: int) -> np.ndarray:
    return _per_query(ranked, ((ranked.grade >= level) & (ranked.rank <= cutoff)).astype(np.float64))


def _judged_share(ranked: RankedRun, cutoff: int) -> np.ndarray:
    in_top = ranked.rank <= cutoff
    judged = _per_query(ranked, (ranked.judged & in_top).astype(np.float64))
    shown = _per_query(ranked, in_top.astype(np.float64))
    return _divide(judged, shown)


def compute(measure: Measure, ranked: RankedRun, pairs: JudgedPairs, ranked_ascending: RankedRun | None = None) -> np.ndarray:
    """(Q,) values of ``measure`` for one run over ``pairs.queries``.

    ``ranked_ascending`` (the run in ir_measures' tie order) is needed only by Judged@k.
    """
    family, level, cutoff = measure.family, measure.rel, measure.cutoff
    if family == "nDCG":
        return _ndcg(ranked, pairs, cutoff)
    if family == "AP":
        return _average_precision(ranked, pairs, level)
    if family == "RR":
        return _reciprocal_rank(ranked, level)
    assert cutoff is not None
    if family == "P":
        return _relevant_in_top(ranked, level, cutoff) / cutoff
    if family == "R":
        return _divide(_relevant_in_top(ranked, level, cutoff), pairs.relevant_counts(level))
    if family == "Judged":
        if ranked_ascending is None:
            raise ValueError("Judged@k needs the run in ir_measures' tie order")
        return _judged_share(ranked_ascending, cutoff)
    raise ValueError(f"not a vectorised measure: {measure}")

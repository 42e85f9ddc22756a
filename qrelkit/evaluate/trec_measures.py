"""trec_eval 9.0.8's other measures on arrays, per query, each as its m_*.c file computes it.

With R = the query's relevant documents (judged, grade ≥ L), ret = its retrieved documents and
relret = the relevant ones among them:

Rprec           relevant in the top R / R (m_Rprec.c)
Bpref           Σ over retrieved relevant d of 1 − min(n_d, R) / min(N, R) (1 where n_d = 0), / R:
                n_d the judged nonrelevant (0 ≤ grade < L) ranked above d, N the query's judged
                nonrelevant; unjudged and negative grades are skipped (m_bpref.c)
IPrec@r         interpolated precision at recall r: the highest precision at or below the c-th
                relevant document, c = ⌊r·R + 0.9⌋ (the first for c = 0); 0 when c > relret
                (m_iprec_at_recall.c)
11pt_avg        IPrec averaged over its recall levels (default 0.0, 0.1, ..., 1.0) (m_11pt_avg.c)
Rprec_mult@m    relevant in the top c / c, c = ⌊m·R + 0.9⌋; 0 for c = 0 (m_Rprec_mult.c)
Success@k       1 if a relevant document is in the top k (m_success.c)
relative_P@k    relevant in the top k / min(k, R) (m_rel_P.c)
SetP, SetR, SetF(beta), SetAP, SetRelP
                relret/ret, relret/R, (β+1)·P·R/(β·P + R) (β, not β², as trec_eval), relret²/(ret·R),
                relret/min(ret, R) (m_set_*.c)
utility(a,b,c,d) a·relret + b·(ret − relret) + c·(R − relret) + d·(relret − ret − R), the
                collection size (-N) taken as 0 as trec_eval does without it (m_utility.c)
binG            Σ over retrieved relevant d of 1/log2(2 + documents not relevant above d), / R (m_binG.c)
infAP           Yilmaz and Aslam's inferred AP: for the retrieved relevant d at (0-based) position
                j > 0, 1/(j+1) + j/(j+1) · (r + n + u)/j · (r + ε)/(r + n + 2ε), 1 at j = 0, Σ / R,
                with r, n, u the judged relevant, judged nonrelevant and negative-graded (pooled,
                not judged) documents above d and ε = 1e-5 (m_infap.c)
NumRet, NumRelRet, NumRel, num_nonrel_judged_ret, NumQ
                ret, relret, R (over every query of the qrels), the judged nonrelevant retrieved, 1

A value trec_eval leaves undefined (0/0) is 0 here, as trec_eval prints every other empty ratio;
the one place trec_eval itself prints NaN (IPrec of a query with nothing judged retrieved under
-J) is named in docs/names.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qrelkit.evaluate.ranked import JudgedPairs, RankedRun, divide

ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _level_cutoffs(fraction: float, relevant: np.ndarray) -> np.ndarray:
    """trec_eval's (long) (fraction · R + 0.9): a share of R as a count of documents."""
    return (fraction * relevant + 0.9).astype(np.int64)


def _max_between(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """max(values[starts[i]:ends[i]]) for each i (every range non-empty), exactly (no offsets)."""
    if len(starts) == 0:
        return np.zeros(0)
    indices = np.empty(2 * len(starts), np.int64)
    indices[0::2], indices[1::2] = starts, ends
    return np.maximum.reduceat(np.append(values, 0.0), indices)[0::2]


def interpolated_precision(ranked: RankedRun, pairs: JudgedPairs, level: int, recall: float) -> np.ndarray:
    relevant_total = pairs.relevant_counts(level)
    relevant, so_far = ranked.relevant_so_far(level)
    query, found = ranked.query[relevant], so_far[relevant]
    precision = found / ranked.rank[relevant]
    relret = np.bincount(query, minlength=ranked.n_queries)
    first = np.zeros(ranked.n_queries, np.int64)  # each query's first relevant entry (a query's entries are contiguous)
    queries, starts = np.unique(query, return_index=True)
    first[queries] = starts
    wanted = np.maximum(_level_cutoffs(recall, relevant_total), 1)
    reached = np.flatnonzero((relret > 0) & (wanted <= relret))
    out = np.zeros(ranked.n_queries)
    out[reached] = _max_between(precision, first[reached] + wanted[reached] - 1, first[reached] + relret[reached])
    return out


def _bpref(ranked: RankedRun, pairs: JudgedPairs, level: int) -> np.ndarray:
    relevant_total, nonrelevant_total = pairs.relevant_counts(level), pairs.nonrelevant_counts(level)
    judged_nonrelevant = (ranked.grade >= 0) & (ranked.grade < level)
    nonrelevant_above = ranked.count_so_far(judged_nonrelevant) - judged_nonrelevant
    relevant = ranked.grade >= level
    q = ranked.query
    shared = np.minimum(nonrelevant_total[q], relevant_total[q])
    penalty = divide(np.minimum(nonrelevant_above, relevant_total[q]).astype(np.float64), shared)
    return divide(ranked.per_query(np.where(relevant, 1.0 - penalty, 0.0)), relevant_total)


def _in_top_per_query(ranked: RankedRun, level: int, cutoffs: np.ndarray) -> np.ndarray:
    """(Q,) relevant documents at ranks ≤ each query's own cut-off."""
    return ranked.per_query(((ranked.grade >= level) & (ranked.rank <= cutoffs[ranked.query])).astype(np.float64))


INFAP_EPSILON = 0.00001


def _inferred_ap(ranked: RankedRun, pairs: JudgedPairs, level: int) -> np.ndarray:
    relevant, so_far = ranked.relevant_so_far(level)
    nonrelevant = (ranked.grade >= 0) & (ranked.grade < level)
    pooled_unjudged = (ranked.grade < 0) & ranked.judged  # a negative grade: in the pool, not judged
    rel_above = (so_far - 1).astype(np.float64)
    nonrel_above = (ranked.count_so_far(nonrelevant) - nonrelevant).astype(np.float64)
    unjudged_above = (ranked.count_so_far(pooled_unjudged) - pooled_unjudged).astype(np.float64)
    j = (ranked.rank - 1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # j = 0 is taken apart below
        later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_above + nonrel_above + unjudged_above) / j) * (
            (rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON)
        )
    contribution = np.where(relevant, np.where(j == 0, 1.0, later), 0.0)
    return divide(ranked.per_query(contribution), pairs.relevant_counts(level))


def _set_measure(family: str, beta: float, retrieved: np.ndarray, relret: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    if family == "SetP":
        return divide(relret, retrieved)
    if family == "SetR":
        return divide(relret, relevant)
    if family == "SetRelP":
        return np.where(relevant > 0, divide(relret, np.minimum(retrieved, relevant)), 0.0)
    if family == "SetAP":
        return np.where(relevant > 0, divide(relret * relret, retrieved * relevant), 0.0)
    precision, recall = divide(relret, retrieved), divide(relret, relevant)
    return np.where(relret > 0, divide((beta + 1.0) * precision * recall, beta * precision + recall), 0.0)


def compute(measure: Any, ranked: RankedRun, pairs: JudgedPairs) -> np.ndarray:
    """(Q,) values of one of this module's measures (a `qrelkit.evaluate.measures.Measure`)."""
    family, level, cutoff = measure.family, measure.rel, measure.cutoff
    retrieved = ranked.per_query(np.ones(len(ranked.query)))
    relret = ranked.per_query((ranked.grade >= level).astype(np.float64))
    relevant = pairs.relevant_counts(level)
    counts = {"NumRet": retrieved, "NumRelRet": relret, "NumRel": relevant.astype(np.float64), "NumQ": np.ones(ranked.n_queries)}
    if family in counts:
        return counts[family]
    if family == "num_nonrel_judged_ret":
        return ranked.per_query(((ranked.grade >= 0) & (ranked.grade < level)).astype(np.float64))
    if family in ("SetP", "SetR", "SetRelP", "SetAP", "SetF"):
        return _set_measure(family, measure.params[0] if measure.params else 1.0, retrieved, relret, relevant)
    if family == "utility":
        a, b, c, d = measure.params
        return a * relret + b * (retrieved - relret) + c * (relevant - relret) + d * (relret - retrieved - relevant)
    if family == "Rprec":
        return divide(_in_top_per_query(ranked, level, relevant.astype(np.int64)), relevant)
    if family == "Bpref":
        return _bpref(ranked, pairs, level)
    if family == "binG":
        relevant_here, so_far = ranked.relevant_so_far(level)
        gain = np.where(relevant_here, 1.0 / np.log2(2.0 + (ranked.rank - so_far)), 0.0)  # ranked by non-relevant docs above
        return divide(ranked.per_query(gain), relevant)
    if family == "infAP":
        return _inferred_ap(ranked, pairs, level)
    if family == "IPrec":
        return interpolated_precision(ranked, pairs, level, float(cutoff))
    if family == "11pt_avg":
        points = measure.params or ELEVEN_POINTS
        return np.mean([interpolated_precision(ranked, pairs, level, point) for point in points], axis=0)
    if family == "Rprec_mult":
        cut = _level_cutoffs(float(cutoff), relevant)
        return divide(_in_top_per_query(ranked, level, cut), cut.astype(np.float64))
    if family == "Success":
        return (ranked.relevant_in_top(level, cutoff) > 0).astype(np.float64)
    if family == "relative_P":
        return divide(ranked.relevant_in_top(level, cutoff), np.minimum(float(cutoff), relevant))
    raise ValueError(f"not a measure computed here: {measure}")

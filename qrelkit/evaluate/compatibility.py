"""Compatibility (Clarke, Vtyurina and Smucker, TOIS 2021, "Assessing top-k preferences"; Clarke,
Smucker and Vtyurina, CIKM 2020): the rank-biased overlap (RBO, persistence p) of a run with the
ideal ranking its qrels imply, divided by the ideal ranking's RBO with itself.

Computed here, as its authors' reference script (`compatibility.py`, also used by Arabzadeh and
Clarke, SIGIR 2025) defines it, not handed to ir_measures: ir_measures 0.3–0.4 orders tied grades
in the ideal by the run's score and gives a relevant document the run did not retrieve the score
0.0, so with negative run scores (15 of the 37 TREC DL 2019 runs) unretrieved documents move ahead
of retrieved ones and the same ranking gets another value (0.2368 instead of 0.7632 on two
documents). The rules, as in the authors' script:

- relevant = grade > 0 (for a judge's fractional values: value > 0; only their order matters, so
  the order codes of a scored judge give exactly the values of the scores themselves);
- the run: its documents by score descending, ties by docid ascending (the script's sort), every
  retrieved document (judged or not) holding a place;
- the ideal: the relevant documents by grade descending; within a grade, those the run retrieved
  in the run's order, then those it did not, **whatever the run's scores**;
- RBO to depth 1000: Σ_{i<1000} p^i · |run[:i+1] ∩ ideal[:i+1]| / (i+1), over Σ p^i;
- normalised (the default) by the ideal's own RBO; a query with no relevant document scores 0
  (the authors' script leaves it out of its mean, which rescales every run's mean alike when the
  runs cover the same queries, as trec_eval's nDCG does).

A relevant document at run position a (0-based) and ideal position b is in both prefixes from depth
max(a, b) on, so RBO = Σ_d T(max(a_d, b_d)) / Σ p^i with T(m) = Σ_{i=m}^{999} p^i/(i+1): one array
operation per run, not a loop over depths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.measures import parse_flag, parse_number
from qrelkit.evaluate.ranked import JudgedPairs, RankedRun

DEPTH = 1000  # the authors' depth of the RBO sum
DEFAULT_P = 0.95  # the authors' default persistence (ir_measures' too)

_NAME = re.compile(r"Compat(?:\((?P<params>[^()]*)\))?")
_PARAM = re.compile(r"\s*(?P<key>p|normalize)\s*=\s*(?P<value>[^,]+?)\s*")


@dataclass(frozen=True)
class Compatibility:
    """Compat(p=P, normalize=True): RBO with persistence ``p`` against the ideal ranking."""

    p: float = DEFAULT_P
    normalize: bool = True
    family: str = "Compat"

    @property
    def order_only(self) -> bool:
        """Reads only the order of the grades (and which are > 0), never their size."""
        return True


def compatibility_measure(name: str) -> Compatibility | None:
    """The measure ``name`` spells if it is compatibility (`Compat`, `Compat(p=0.9)`,
    `Compat(p=0.9,normalize=False)`, ir_measures' syntax), else None."""
    match = _NAME.fullmatch(name.strip())
    if match is None:
        return None
    p, normalize = DEFAULT_P, True
    params = (match["params"] or "").strip()
    for item in params.split(",") if params else []:
        found = _PARAM.fullmatch(item)
        if found is None:
            raise QrelkitError(f"measure {name!r}: {item.strip()!r} is not p=NUMBER or normalize=True|False")
        if found["key"] == "p":
            p = parse_number(found["value"], "p", name)
        else:
            normalize = parse_flag(found["value"], "normalize", name)
    if not 0.0 < p < 1.0:
        raise QrelkitError(f"measure {name!r}: the persistence p must lie strictly between 0 and 1, found {p:g}")
    return Compatibility(p, normalize)


@lru_cache(maxsize=16)
def _tails(p: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(T, cumulative T, Σ p^i): T[m] = Σ_{i=m}^{DEPTH-1} p^i/(i+1) with T[DEPTH] = 0, and
    ideal[r] = Σ_{b<r} T[b], the ideal ranking's RBO sum with r relevant documents (r ≤ DEPTH)."""
    weights = p ** np.arange(DEPTH, dtype=np.float64)
    terms = weights / np.arange(1, DEPTH + 1, dtype=np.float64)
    tail = np.zeros(DEPTH + 1)
    tail[:DEPTH] = np.cumsum(terms[::-1])[::-1]
    ideal = np.concatenate(([0.0], np.cumsum(tail[:DEPTH])))
    return tail, ideal, float(weights.sum())


def _judged_keys(pairs: JudgedPairs) -> tuple[np.ndarray, np.ndarray]:
    """The relevant grades (ascending), and each relevant judged document's (query, grade) key
    sorted: the qrels' part of `_ideal_positions`, computed once per qrels, not once per run."""
    if "compat-keys" not in pairs._cache:
        judged_relevant = pairs.grades > 0
        levels = np.unique(pairs.grades[judged_relevant])
        width = len(levels) + 1
        keys = np.sort(pairs.query_of_key[judged_relevant] * width + np.searchsorted(levels, pairs.grades[judged_relevant]))
        pairs._cache["compat-keys"] = (levels, keys)
    return pairs._cache["compat-keys"]


def _ideal_positions(ranked: RankedRun, pairs: JudgedPairs, relevant: np.ndarray) -> np.ndarray:
    """The 0-based place in the ideal ranking of each retrieved relevant entry: the query's relevant
    documents of a higher grade, then those of its grade that the run retrieved earlier."""
    levels, judged_keys = _judged_keys(pairs)
    width = len(levels) + 1
    query, grade = ranked.query[relevant], ranked.grade[relevant]
    key = query * width + np.searchsorted(levels, grade)
    query_end = np.searchsorted(judged_keys, query * width + (width - 1), side="right")
    higher = query_end - np.searchsorted(judged_keys, key, side="right")
    # entries are grouped by query in run order: a stable sort by key keeps run order within a grade
    order = np.argsort(key, kind="stable")
    sorted_keys = key[order]
    group_start = np.searchsorted(sorted_keys, sorted_keys, side="left")
    earlier = np.empty(len(key), np.int64)
    earlier[order] = np.arange(len(key)) - group_start
    return higher + earlier


def compatibility(ranked: RankedRun, pairs: JudgedPairs, measure: Compatibility) -> np.ndarray:
    """(Q,) compatibility of one run over ``pairs.queries``; ``ranked`` must be the run in the
    authors' order (score descending, ties by docid ascending: `rank_run(..., docid_ascending=True)`)."""
    tail, ideal, weight_sum = _tails(measure.p)
    relevant = ranked.grade > 0
    run_position = ranked.rank[relevant] - 1
    both_from = np.minimum(np.maximum(run_position, _ideal_positions(ranked, pairs, relevant)), DEPTH)
    overlap = np.bincount(ranked.query[relevant], weights=tail[both_from], minlength=len(pairs.queries))
    relevant_counts = pairs.relevant_counts(1).astype(np.int64)  # grades are integers: > 0 is ≥ 1
    best = ideal[np.minimum(relevant_counts, DEPTH)]
    if not measure.normalize:
        return np.where(relevant_counts > 0, overlap / weight_sum, 0.0)
    return np.where(best > 0, overlap / np.where(best > 0, best, 1.0), 0.0)

"""Sampling designs: which pool pairs humans label, each with a known inclusion probability:
``queries`` (a simple random sample of whole queries, pi = n / Q), ``stratified`` (a simple random
sample of pairs in each query, shares by a divisor method: `allocation`) and ``weighted`` (Poisson
sampling, pi proportional to a size measure, `sizes.measure_sizes` times the judge's uncertainty,
mixed with a floor so that every pair can be drawn: an estimate is unbiased only then).
docs/human-budget.md says when to use which.

Every design draws from uniforms fixed per pair (a hash of seed, query and document in the
command; random numbers in a simulation): the same seed gives the same sample, and a larger
budget's sample holds a smaller one's (stratum shares only grow with the budget, and pi only
grows), so a larger plan only adds pairs. Arrays may carry leading axes (draws).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from qrelkit.errors import QrelkitError

KINDS = ("queries", "stratified", "weighted")
MIN_PER_STRATUM = 2  # a stratum's variance needs two pairs (Webster seats come after these)
FLOOR = 0.2  # share of the weighted design's probability spread evenly: every pair keeps pi > 0


def uniforms(seed: int, qids: list[str], docids: list[str] | None = None, phase: int = 0) -> np.ndarray:
    """A fixed number in [0, 1) per pair (or per query, without ``docids``), the same on every
    machine: 53 bits of a hash of (seed, phase, qid, docid)."""
    keys = qids if docids is None else [f"{q}\x1f{d}" for q, d in zip(qids, docids)]
    head = f"{seed}\x1f{phase}\x1f".encode()
    values = [int.from_bytes(hashlib.blake2b(head + key.encode("utf-8"), digest_size=8).digest(), "big") >> 11 for key in keys]
    return np.array(values, dtype=np.float64) / float(1 << 53)


def check_budget(budget: int, pool_size: int) -> None:
    if budget < 1:
        raise QrelkitError(f"--budget {budget}: give a number of human labels from 1 to the pool's {pool_size} pairs")
    if budget > pool_size:
        raise QrelkitError(f"--budget {budget} is larger than the pool ({pool_size} pairs): at most {pool_size} pairs can be labelled")


def query_count(sizes: np.ndarray, budget: int) -> int:
    """How many whole queries a budget of pairs buys: the budget over the mean pool size per
    query, rounded, at least 2 (a variance needs two) and at most every query."""
    return int(np.clip(round(budget / float(sizes.mean())), min(2, len(sizes)), len(sizes)))


def queries_chosen(keys: np.ndarray, count: int) -> np.ndarray:
    """(..., Q) bool: the ``count`` queries with the smallest keys."""
    order = np.argsort(keys, axis=-1, kind="stable")
    chosen = np.zeros(keys.shape, bool)
    np.put_along_axis(chosen, order[..., :count], True, axis=-1)
    return chosen


def allocation(sizes: np.ndarray, budget: int, minimum: int = MIN_PER_STRATUM) -> np.ndarray:
    """(H,) pairs per stratum, seat by seat in one fixed order: first up to ``minimum`` seats in
    every stratum (larger strata first), then by Webster's priorities N_h / (n_h + 1/2). One order
    of seats for every budget, so a larger budget adds seats and never takes one away."""
    sizes = np.asarray(sizes, dtype=np.int64)
    stratum = np.repeat(np.arange(len(sizes)), sizes)
    seat = np.concatenate([np.arange(s) for s in sizes]) if len(sizes) else np.zeros(0, np.int64)
    priority = np.where(seat < minimum, np.inf, sizes[stratum] / (seat + 0.5))
    first_round = np.where(seat < minimum, -sizes[stratum] * (minimum + 1) + seat, 0)  # floor seats: larger strata first
    order = np.lexsort((stratum, first_round, -priority))[: max(int(budget), 0)]
    return np.bincount(stratum[order], minlength=len(sizes))


def stratified_chosen(keys: np.ndarray, stratum: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(..., P) bool: in each stratum h, the counts[h] pairs with the smallest keys."""
    n_strata = len(counts)
    order = np.argsort(stratum + keys, axis=-1, kind="stable")  # keys in [0, 1): grouped by stratum
    starts = np.concatenate([[0], np.cumsum(np.bincount(stratum, minlength=n_strata))[:-1]])
    place = np.empty_like(order)
    np.put_along_axis(place, order, np.broadcast_to(np.arange(keys.shape[-1]), keys.shape).copy(), axis=-1)
    return (place - starts[stratum]) < counts[stratum]


def proportional_inclusion(size: np.ndarray, budget: float) -> np.ndarray:
    """pi proportional to ``size`` (> 0), capped at 1, summing to ``budget``."""
    size = np.asarray(size, dtype=np.float64)
    if budget >= len(size):
        return np.ones(len(size))
    capped = np.zeros(len(size), bool)
    for _ in range(len(size)):
        scale = (budget - capped.sum()) / size[~capped].sum()
        more = ~capped & (size * scale >= 1.0)
        if not more.any():
            break
        capped |= more
    return np.where(capped, 1.0, np.minimum(size * scale, 1.0))


def with_floor(size: np.ndarray, floor: float = FLOOR) -> np.ndarray:
    """``size`` mixed with an even share: (1 - floor) * size / mean + floor."""
    mean = float(size.mean()) if len(size) else 0.0
    return (1.0 - floor) * (size / mean if mean > 0 else np.ones(len(size))) + floor


@dataclass(frozen=True)
class Plan:
    """A design drawn on a pool: ``chosen`` (..., P) the pairs humans label, ``inclusion`` (P,)
    each pair's probability of being chosen, ``stratum`` (P,) the group its variance is computed
    in (the query for stratified and whole-query designs; -1: drawn on its own, Poisson)."""

    kind: str
    budget: int
    chosen: np.ndarray
    inclusion: np.ndarray
    stratum: np.ndarray
    counts: np.ndarray | None = None  # per stratum, the pairs drawn (stratified) or queries drawn (queries)


def plan(
    kind: str, query: np.ndarray, budget: int, keys: np.ndarray, *, size: np.ndarray | None = None, query_keys: np.ndarray | None = None
) -> Plan:
    """Draw design ``kind`` over pairs of queries ``query`` (P,) with ``budget`` labels.
    ``keys`` (..., P) the pairs' uniforms; ``query_keys`` (..., Q) the queries' (whole-query
    design); ``size`` (P,) the weighted design's size measure (floor included)."""
    n_pairs = len(query)
    check_budget(budget, n_pairs)
    sizes = np.bincount(query)
    if kind == "queries":
        count = query_count(sizes, budget)
        assert query_keys is not None
        picked = queries_chosen(query_keys, count)
        inclusion = np.full(n_pairs, count / len(sizes))
        return Plan(kind, budget, picked[..., query], inclusion, query.copy(), np.array([count]))
    if kind == "stratified":
        counts = allocation(sizes, budget)
        chosen = stratified_chosen(keys, query, counts)
        return Plan(kind, budget, chosen, counts[query] / sizes[query], query.copy(), counts)
    if kind == "weighted":
        assert size is not None
        inclusion = proportional_inclusion(size, budget)
        return Plan(kind, budget, keys < inclusion, inclusion, np.full(n_pairs, -1))
    raise QrelkitError(f"--design {kind!r}: choose one of {', '.join(KINDS)}")

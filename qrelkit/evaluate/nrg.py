"""Normalized Residual Gain (Bigdeli, Arabzadeh, Bagheri and Clarke, SIGIR-AP 2024; seed 004).

NRG scores a ranking R against prior rankings 𝓡 = {R_1..R_M} a searcher has already seen.
An item's residual gain is what is left of its gain after the priors (Eq. 3):

    G(d|𝓡) = G(d) · Π_j (1 − seen(pos(d, R_j)))          seen(∞) = 0

and NRG is the metric's browsing model with residual gain in place of gain (Eq. 4),
normalised as the metric normalises: nDCG and the 1/i model by the ideal ranking of the
query's judged items sorted by residual gain (cut at the depth), precision by K, RBP by
1/(1−p). With no priors it is the plain metric.

Layout: only items with positive gain can score, so the work is done on one matrix of
(run × relevant item) ranks, built in one pass over each run. Each run's prior set is then a
sum of log(1 − seen) rows: the union's total less a few rows (all others, best per group,
a list), a cumulative sum (a chronological order) or a sparse product (anything else). The
cost grows with runs × relevant items, not with the (target, prior, document) triples that
the reference code loops over. Unique contributions, rareness-based precision and TaSC, which
seed 004 compares NRG with, are in ``nrg_compare``.

Means run over the queries of the qrels; a run that lacks a query scores 0 on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter

import numpy as np
from scipy import sparse

from qrelkit.errors import QrelkitError
from qrelkit.io.trec import Qrels, Run

Grades = Mapping[str, Mapping[str, int]]
PriorSets = Mapping[str, Sequence[str]]


class NRGError(QrelkitError):
    """A bad NRG option or prior set (unknown run, unknown model, ...)."""


# ---------------------------------------------------------------- configuration


@dataclass(frozen=True)
class BrowsingModel:
    """seen(i): the probability that the searcher looks at rank i."""

    kind: str  # ndcg | rr | precision | rbp
    p: float = 0.8  # persistence, RBP only

    @classmethod
    def parse(cls, spec: str | BrowsingModel) -> BrowsingModel:
        if isinstance(spec, BrowsingModel):
            return spec
        text = spec.strip().lower()
        if text in ("ndcg", "rr", "precision"):
            return cls(text)
        if text.startswith("rbp"):
            p_text = text[4:] if text[3:4] == ":" else ("0.8" if text == "rbp" else "")
            try:
                p = float(p_text)
            except ValueError:
                p = -1.0
            if not 0.0 < p < 1.0:
                raise NRGError(f"model {spec!r}: RBP's persistence must be a number in (0, 1), as in rbp:0.8")
            return cls("rbp", p)
        raise NRGError(f"unknown model {spec!r}; choose ndcg, rr, precision or rbp:P (e.g. rbp:0.8)")

    def seen(self, ranks: np.ndarray) -> np.ndarray:
        """seen(rank) for 1-based ranks; rank 0 means 'not in the ranking' and gives 0."""
        r = ranks.astype(np.float64)
        hit = ranks > 0
        out = np.zeros_like(r)
        if self.kind == "ndcg":
            out[hit] = 1.0 / np.log2(r[hit] + 1.0)
        elif self.kind == "rr":
            out[hit] = 1.0 / r[hit]
        elif self.kind == "precision":
            out[hit] = 1.0
        else:
            out[hit] = self.p ** (r[hit] - 1.0)
        return out

    def label(self, depth: int | None) -> str:
        at = f"@{depth}" if depth else ""
        return {"ndcg": f"nDCG{at}", "rr": f"RR-style{at}", "precision": f"P{at}", "rbp": f"RBP(p={self.p:g}){at}"}[self.kind]


@dataclass(frozen=True)
class Gain:
    """G(d) from a grade: the label (linear), 2^g − 1 (exp), or 1 at grade ≥ level (binary)."""

    kind: str  # linear | exp | binary
    level: int = 1

    @classmethod
    def parse(cls, spec: str | Gain) -> Gain:
        if isinstance(spec, Gain):
            return spec
        text = spec.strip().lower()
        if text in ("linear", "exp"):
            return cls(text)
        if text.startswith("binary"):
            level_text = text.partition(":")[2] or "1"
            try:
                return cls("binary", int(level_text))
            except ValueError:
                pass
        raise NRGError(f"unknown gain {spec!r}; choose linear, exp or binary:LEVEL (e.g. binary:2)")

    def values(self, grades: np.ndarray) -> np.ndarray:
        g = grades.astype(np.float64)
        if self.kind == "binary":
            return (g >= self.level).astype(np.float64)
        g = np.maximum(g, 0.0)  # a negative grade (spam, junk) gives no gain, not a penalty
        return g if self.kind == "linear" else np.exp2(g) - 1.0

    def label(self) -> str:
        return f"binary:{self.level}" if self.kind == "binary" else self.kind


def parse_depth(depth: int | str | None) -> int | None:
    """An int ≥ 1, or None / 'full' for the whole ranking (what the reference code does)."""
    if depth is None or (isinstance(depth, str) and depth.strip().lower() == "full"):
        return None
    try:
        value = int(depth)
    except (TypeError, ValueError):
        raise NRGError(f"depth {depth!r}: give a positive integer or 'full'") from None
    if value < 1:
        raise NRGError(f"depth {depth!r}: give a positive integer or 'full'")
    return value


ORDERS = ("trec_eval", "file")
_QID, _DOCID, _SCORE = attrgetter("qid"), attrgetter("docid"), attrgetter("score")


@dataclass(frozen=True)
class NRGConfig:
    model: BrowsingModel
    gain: Gain
    depth: int | None  # None: full depth
    order: str = "trec_eval"  # trec_eval: score desc, docid desc; file: as the run file lists them

    @classmethod
    def parse(cls, model="ndcg", depth=10, gain="linear", order="trec_eval") -> NRGConfig:
        config = cls(BrowsingModel.parse(model), Gain.parse(gain), parse_depth(depth), order)
        if order not in ORDERS:
            raise NRGError(f"order {order!r}: choose trec_eval (score desc, docid desc) or file (as listed)")
        if config.model.kind == "precision" and config.depth is None:
            raise NRGError("the precision model needs a depth K (seen = 1 down to K); --depth full makes every item seen")
        return config

    @property
    def base_label(self) -> str:
        return self.model.label(self.depth)

    @property
    def label(self) -> str:
        return f"NRG[{self.base_label}, {self.gain.label()} gain]"


# ---------------------------------------------------------------- layout: runs × relevant items


@dataclass(frozen=True)
class _Items:
    """The items with positive gain, query after query (queries in sorted order)."""

    queries: list[str]
    gains: np.ndarray  # (U,)
    query_of_item: np.ndarray  # (U,) index into queries, non-decreasing
    starts: np.ndarray  # (Q+1,) items of query q are starts[q]:starts[q+1]
    index: dict[tuple[str, str], int]  # (qid, docid) -> item

    @property
    def size(self) -> int:
        return len(self.gains)


def _relevant_items(grades: Grades, gain: Gain) -> _Items:
    queries = sorted(grades)
    index: dict[tuple[str, str], int] = {}
    gains: list[np.ndarray] = []
    starts = [0]
    for qid in queries:
        judged = grades[qid]
        docids = sorted(judged)
        values = gain.values(np.fromiter((judged[d] for d in docids), np.float64, len(docids)))
        keep = np.flatnonzero(values > 0)
        index.update({(qid, docids[i]): starts[-1] + n for n, i in enumerate(keep)})
        gains.append(values[keep])
        starts.append(starts[-1] + len(keep))
    flat = np.concatenate(gains) if gains else np.zeros(0)
    counts = np.diff(starts)
    return _Items(queries, flat, np.repeat(np.arange(len(queries)), counts), np.asarray(starts), index)


def _ranks_within_query(qidx: np.ndarray, scores: np.ndarray, docids: list[str], order: str) -> np.ndarray:
    """1-based rank of each entry within its query, in trec_eval order or file order."""
    n = len(qidx)
    if order == "file":
        perm = np.argsort(qidx, kind="stable")
    else:
        perm = np.lexsort((-scores, qidx))
        q_sorted, s_sorted = qidx[perm], scores[perm]
        tied = (q_sorted[1:] == q_sorted[:-1]) & (s_sorted[1:] == s_sorted[:-1])
        if tied.any():  # equal scores: docid descending, as trec_eval; few blocks, sorted in Python
            edges = np.flatnonzero(np.diff(np.concatenate(([0], tied.astype(np.int8), [0]))))
            for start, last in zip(edges[::2], edges[1::2]):
                block = perm[start : last + 1]
                perm[start : last + 1] = sorted(block.tolist(), key=docids.__getitem__, reverse=True)
    q_sorted = qidx[perm]
    first = np.concatenate(([True], q_sorted[1:] != q_sorted[:-1]))
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    ranks = np.empty(n, np.int64)
    ranks[perm] = np.arange(n) - group_start + 1
    return ranks


def _positions(runs: Sequence[Run], items: _Items, depth: int | None, order: str) -> np.ndarray:
    """(runs × items) rank of each relevant item in each run, 0 where absent or below depth."""
    query_index = {qid: i for i, qid in enumerate(items.queries)}
    positions = np.zeros((len(runs), items.size), np.int32)
    for r, run in enumerate(runs):
        # one C-speed pass per column; the entries are Python objects, so this is the floor
        entries = run.entries
        qids = list(map(_QID, entries))
        qidx = np.fromiter(map(query_index.get, qids, repeat(-1)), np.int64, len(qids))
        docids = list(map(_DOCID, entries))
        scores = np.fromiter(map(_SCORE, entries), np.float64, len(entries))
        if (qidx < 0).any():  # queries the qrels lack play no part
            known = np.flatnonzero(qidx >= 0).tolist()
            qids, docids = [qids[i] for i in known], [docids[i] for i in known]
            qidx, scores = qidx[known], scores[known]
        if not qids:
            continue
        ranks = _ranks_within_query(qidx, scores, docids, order)
        chosen = np.flatnonzero(ranks <= depth).tolist() if depth else range(len(ranks))
        keys = zip([qids[i] for i in chosen], [docids[i] for i in chosen])
        found = np.fromiter(map(items.index.get, keys, repeat(-1)), np.int64, len(chosen))
        hit = found >= 0
        positions[r, found[hit]] = ranks[np.asarray(chosen, np.int64)[hit]]
    return positions


@dataclass(frozen=True)
class _Prepared:
    config: NRGConfig
    runs: list[str]
    items: _Items
    positions: np.ndarray  # (R, U) ranks
    seen: np.ndarray  # (R, U) seen(rank) of each item in each run


def _prepare(qrels: Qrels | Grades, runs: Sequence[Run], config: NRGConfig) -> _Prepared:
    names = [run.name for run in runs]
    if len(set(names)) != len(names):
        raise NRGError(f"run names must be unique; repeated: {sorted({n for n in names if names.count(n) > 1})}")
    grades = qrels.grades if isinstance(qrels, Qrels) else qrels
    items = _relevant_items(grades, config.gain)
    positions = _positions(runs, items, config.depth, config.order)
    return _Prepared(config, names, items, positions, config.model.seen(positions))


# ---------------------------------------------------------------- scoring


def _segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(T × U) -> (T × Q): sum of each query's items (0 for a query without items)."""
    out = np.zeros((values.shape[0], len(starts) - 1))
    nonempty = starts[:-1] < starts[1:]
    if nonempty.any():
        out[:, nonempty] = np.add.reduceat(values, starts[:-1][nonempty], axis=1)
    return out


def _ideal(residual: np.ndarray, prepared: _Prepared) -> np.ndarray:
    """(T × Q) score of the ideal ranking: each query's items by residual gain, descending, cut at depth."""
    items, config = prepared.items, prepared.config
    keys = np.broadcast_to(items.query_of_item, residual.shape)
    order = np.lexsort((-residual, keys), axis=-1)
    ranked = np.take_along_axis(residual, order, axis=1)
    rank = np.arange(items.size) - items.starts[items.query_of_item] + 1
    if config.depth:
        rank = np.where(rank <= config.depth, rank, 0)
    return _segment_sums(ranked * config.model.seen(rank), items.starts)


def _normalise(raw: np.ndarray, ideal: np.ndarray | None, config: NRGConfig) -> np.ndarray:
    if config.model.kind == "precision":
        return raw / config.depth
    if config.model.kind == "rbp":
        return raw * (1.0 - config.model.p)
    assert ideal is not None
    safe = np.where(ideal > 0, ideal, 1.0)
    return np.where(ideal > 0, raw / safe, 0.0)  # no relevant item left to find: 0, as the reference and trec_eval


def _prior_index(names: list[str], priors: PriorSets | None) -> list[np.ndarray]:
    """Prior runs of each run as index arrays; None means all other runs. A run left out has none."""
    index = {name: i for i, name in enumerate(names)}
    if priors is None:
        return [np.delete(np.arange(len(names)), i) for i in range(len(names))]
    unknown = sorted(set(priors) - set(index))
    if unknown:
        raise NRGError(f"prior sets given for unknown run(s) {unknown}; loaded runs: {', '.join(names)}")
    out = []
    for name in names:
        listed = list(dict.fromkeys(priors.get(name, ())))
        missing = [p for p in listed if p not in index]
        if missing:
            raise NRGError(f"prior set of {name!r} names unknown run(s) {missing}; loaded runs: {', '.join(names)}")
        if name in listed:
            raise NRGError(f"run {name!r} cannot be in its own prior set")
        out.append(np.array([index[p] for p in listed], np.int64))
    return out


def _prior_sums(member: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Σ_{j ∈ prior set of t} rows[j] for every run t, with member[t, j] saying whether j is a prior of t.

    Two shapes cost O(runs × items): sets that are the union of all priors less a few runs
    (all-others, best-per-group, explicit lists: the union's total minus those rows), and a
    chronological chain (prior of the k-th run = the k−1 before it: an exclusive cumulative
    sum). Any other family of sets is a sparse product, O(Σ|prior set| × items).
    """
    union = member.any(axis=0)
    left_out = union[None, :] & ~member
    if left_out.sum() <= member.shape[0]:
        return rows[union].sum(axis=0)[None, :] - sparse.csr_array(left_out.astype(np.float64)) @ rows
    chain = np.argsort(member.sum(axis=1), kind="stable")
    if np.array_equal(member[np.ix_(chain, chain)], np.tri(len(chain), k=-1, dtype=bool)):
        summed = np.empty_like(rows)
        summed[chain] = np.cumsum(rows[chain], axis=0) - rows[chain]
        return summed
    return sparse.csr_array(member.astype(np.float64)) @ rows


def _residual_gain(prepared: _Prepared, prior_index: list[np.ndarray]) -> np.ndarray:
    """(T × U) G(d|𝓡_t) for every run t: G(d) · Π_{j∈𝓡_t} (1 − seen_j(d)), via sums of logs.

    seen = 1 (rank 1 under every model, every rank within K under precision) makes a factor 0;
    those are counted apart so that log(0) never appears.
    """
    seen = prepared.seen
    n_runs, n_items = seen.shape
    zero = seen >= 1.0
    log_keep = np.log1p(-np.where(zero, 0.0, seen))
    member = np.zeros((n_runs, n_runs), bool)
    for t, prior in enumerate(prior_index):
        member[t, prior] = True
    summed = _prior_sums(member, np.hstack([log_keep, zero.astype(np.float64)]))
    log_sum, zero_count = summed[:, :n_items], summed[:, n_items:]
    return prepared.items.gains[None, :] * np.exp(log_sum) * (zero_count < 0.5)


def _score(prepared: _Prepared, residual: np.ndarray) -> np.ndarray:
    raw = _segment_sums(residual * prepared.seen, prepared.items.starts)
    normalised_by_ideal = prepared.config.model.kind in ("ndcg", "rr")
    return _normalise(raw, _ideal(residual, prepared) if normalised_by_ideal else None, prepared.config)


def _base(prepared: _Prepared) -> np.ndarray:
    """(R × Q) the absolute metric: NRG with no priors."""
    gains = np.broadcast_to(prepared.items.gains, prepared.seen.shape)
    raw = _segment_sums(gains * prepared.seen, prepared.items.starts)
    if prepared.config.model.kind in ("ndcg", "rr"):
        ideal = np.broadcast_to(_ideal(prepared.items.gains[None, :], prepared), raw.shape)
        return _normalise(raw, ideal, prepared.config)
    return _normalise(raw, None, prepared.config)


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class PerQuery:
    """One measure's per-query values of every run, over the queries of the qrels."""

    measure: str
    runs: list[str]
    queries: list[str]
    values: np.ndarray  # runs × queries

    def mean(self, run: str) -> float:
        return float(self.values[self.runs.index(run)].mean()) if self.queries else 0.0

    def means(self) -> dict[str, float]:
        return {run: self.mean(run) for run in self.runs}


@dataclass(frozen=True)
class NRGResult:
    """NRG and the absolute metric it extends, per run and query, with the prior set of each run."""

    config: NRGConfig
    runs: list[str]
    queries: list[str]
    nrg: np.ndarray  # runs × queries
    base: np.ndarray  # runs × queries, the plain metric (M = 0)
    priors: dict[str, list[str]]

    def means(self) -> dict[str, dict[str, float]]:
        """run -> {"nrg": mean NRG, "base": mean absolute metric} over the queries of the qrels."""
        n = max(len(self.queries), 1)
        return {
            run: {"nrg": float(self.nrg[i].sum() / n), "base": float(self.base[i].sum() / n)} for i, run in enumerate(self.runs)
        }

    def per_query(self) -> dict[str, dict[str, dict[str, float]]]:
        return {
            run: {q: {"nrg": float(self.nrg[i, j]), "base": float(self.base[i, j])} for j, q in enumerate(self.queries)}
            for i, run in enumerate(self.runs)
        }


def _result(prepared: _Prepared, prior_index: list[np.ndarray], base: np.ndarray | None = None) -> NRGResult:
    residual = _residual_gain(prepared, prior_index)
    names = prepared.runs
    return NRGResult(
        config=prepared.config,
        runs=names,
        queries=prepared.items.queries,
        nrg=_score(prepared, residual),
        base=_base(prepared) if base is None else base,
        priors={name: [names[j] for j in prior_index[t]] for t, name in enumerate(names)},
    )


def nrg(
    qrels: Qrels | Grades,
    runs: Sequence[Run],
    priors: PriorSets | None = None,
    *,
    model: str | BrowsingModel = "ndcg",
    depth: int | str | None = 10,
    gain: str | Gain = "linear",
    order: str = "trec_eval",
) -> NRGResult:
    """NRG of every run against its prior set (default: all other runs).

    ``priors`` maps a run name to the names of its prior runs; a run it leaves out has no
    priors, so its NRG is its plain metric. See ``qrelkit.evaluate.nrg_priors`` for the
    chronological, best-per-group and explicit-list prior sets.
    """
    prepared = _prepare(qrels, runs, NRGConfig.parse(model, depth, gain, order))
    return _result(prepared, _prior_index(prepared.runs, priors))


def base_metric(qrels: Qrels | Grades, runs: Sequence[Run], *, model="ndcg", depth=10, gain="linear", order="trec_eval") -> PerQuery:
    """The absolute metric NRG extends (nDCG@K, P@K, RBP, RR-style), computed by the same code."""
    prepared = _prepare(qrels, runs, NRGConfig.parse(model, depth, gain, order))
    return PerQuery(prepared.config.base_label, prepared.runs, prepared.items.queries, _base(prepared))

"""NRG scores: residual gain under each run's prior set, normalised as the metric normalises."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from qrelkit.evaluate.nrg.layout import Prepared, prepare, segment_sums
from qrelkit.evaluate.nrg.options import BrowsingModel, Gain, Grades, NRGConfig, NRGError, PriorSets
from qrelkit.io.results import Result, pandas
from qrelkit.io.trec import Qrels, Run


def _ideal(residual: np.ndarray, prepared: Prepared) -> np.ndarray:
    """(T × Q) score of the ideal ranking: each query's items by residual gain, descending, cut at depth."""
    items, config = prepared.items, prepared.config
    keys = np.broadcast_to(items.query_of_item, residual.shape)
    order = np.lexsort((-residual, keys), axis=-1)
    ranked = np.take_along_axis(residual, order, axis=1)
    rank = np.arange(items.size) - items.starts[items.query_of_item] + 1
    if config.depth:
        rank = np.where(rank <= config.depth, rank, 0)
    return segment_sums(ranked * config.model.seen(rank), items.starts)


def _normalise(raw: np.ndarray, ideal: np.ndarray | None, config: NRGConfig) -> np.ndarray:
    if config.model.kind == "precision":
        return raw / config.depth
    if config.model.kind == "rbp":
        return raw * (1.0 - config.model.p)
    assert ideal is not None
    safe = np.where(ideal > 0, ideal, 1.0)
    return np.where(ideal > 0, raw / safe, 0.0)  # no relevant item left to find: 0, as the reference and trec_eval


def prior_index(names: list[str], priors: PriorSets | None) -> list[np.ndarray]:
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
    union: np.ndarray = np.asarray(member.any(axis=0))
    left_out = union[None, :] & ~member
    if left_out.sum() <= member.shape[0]:
        summed = np.repeat(rows[union].sum(axis=0)[None, :], member.shape[0], axis=0)
        target, dropped = np.nonzero(left_out)
        np.subtract.at(summed, target, rows[dropped])
        return summed
    chain = np.argsort(member.sum(axis=1), kind="stable")
    if np.array_equal(member[np.ix_(chain, chain)], np.tri(len(chain), k=-1, dtype=bool)):
        summed = np.empty_like(rows)
        summed[chain] = np.cumsum(rows[chain], axis=0) - rows[chain]
        return summed
    from scipy import sparse  # only for irregular prior sets: scipy costs ~0.4 s to import

    return sparse.csr_array(member.astype(np.float64)) @ rows


def residual_gain(prepared: Prepared, prior_index: list[np.ndarray]) -> np.ndarray:
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


def _score(prepared: Prepared, residual: np.ndarray) -> np.ndarray:
    raw = segment_sums(residual * prepared.seen, prepared.items.starts)
    normalised_by_ideal = prepared.config.model.kind in ("ndcg", "rr")
    return _normalise(raw, _ideal(residual, prepared) if normalised_by_ideal else None, prepared.config)


def base_scores(prepared: Prepared) -> np.ndarray:
    """(R × Q) the absolute metric: NRG with no priors."""
    return _score(prepared, prepared.items.gains[None, :])  # one row: one ideal ranking per query, shared by the runs


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


@dataclass(frozen=True, repr=False)
class NRGResult(Result):
    """NRG and the absolute metric it extends, per run and query, with the prior set of each run."""

    config: NRGConfig
    runs: list[str]
    queries: list[str]
    nrg: np.ndarray  # runs × queries
    base: np.ndarray  # runs × queries, the plain metric (M = 0)
    priors: dict[str, list[str]]

    def summary(self) -> str:
        return f"measure={self.config.label!r}, runs={len(self.runs)}, queries={len(self.queries)}"

    def means(self) -> dict[str, dict[str, float]]:
        """run -> {"nrg": mean NRG, "base": mean absolute metric} over the queries of the qrels."""
        n = max(len(self.queries), 1)
        return {run: {"nrg": float(self.nrg[i].sum() / n), "base": float(self.base[i].sum() / n)} for i, run in enumerate(self.runs)}

    def to_dict(self) -> dict:
        """Means per run, each run's prior set, and the configuration."""
        return {
            "measure": self.config.label,
            "base": self.config.base_label,
            "queries": len(self.queries),
            "runs": self.means(),
            "priors": self.priors,
        }

    def to_pandas(self):
        """One row per (run, query): NRG and the absolute metric; pandas is optional."""

        rows = [
            (run, q, float(self.nrg[i, j]), float(self.base[i, j])) for i, run in enumerate(self.runs) for j, q in enumerate(self.queries)
        ]
        return pandas().DataFrame(rows, columns=["run", "query", "nrg", "base"])

    def per_query(self) -> dict[str, dict[str, dict[str, float]]]:
        return {
            run: {q: {"nrg": float(self.nrg[i, j]), "base": float(self.base[i, j])} for j, q in enumerate(self.queries)}
            for i, run in enumerate(self.runs)
        }


def build_result(prepared: Prepared, prior_index: list[np.ndarray], base: np.ndarray | None = None) -> NRGResult:
    residual = residual_gain(prepared, prior_index)
    names = prepared.runs
    return NRGResult(
        config=prepared.config,
        runs=names,
        queries=prepared.items.queries,
        nrg=_score(prepared, residual),
        base=base_scores(prepared) if base is None else base,
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
    priors, so its NRG is its plain metric. See ``qrelkit.evaluate.nrg.priors`` for the
    chronological, best-per-group and explicit-list prior sets.
    """
    prepared = prepare(qrels, runs, NRGConfig.parse(model, depth, gain, order))
    return build_result(prepared, prior_index(prepared.runs, priors))


def base_metric(qrels: Qrels | Grades, runs: Sequence[Run], *, model="ndcg", depth=10, gain="linear", order="trec_eval") -> PerQuery:
    """The absolute metric NRG extends (nDCG@K, P@K, RBP, RR-style), computed by the same code."""
    prepared = prepare(qrels, runs, NRGConfig.parse(model, depth, gain, order))
    return PerQuery(prepared.config.base_label, prepared.runs, prepared.items.queries, base_scores(prepared))

"""FD@k of runs (seed 000, Eq. 4): relevant judged items of the query set vs each run's retrieved
items for the same queries, at several cut-offs, optionally URR, sparsified and bootstrapped.

Works on vectors already computed (docid -> array); `qrelkit.commands.fd` does the embedding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.bootstrap import BootstrapSummary, draw_counts, jackknife_counts, summarize
from qrelkit.evaluate.choices import FD_DEFAULT_METHOD, METHOD_NAMES, NEEDS_JACKKNIFE, check_method
from qrelkit.evaluate.fd.bootstrap import bootstrap_fd
from qrelkit.evaluate.fd.distance import CovarianceFactor, FrechetResult, factor_from_samples, frechet_from_factors
from qrelkit.evaluate.fd.items import ItemSample, fd_label, item_sample, judged_items, retrieved_items
from qrelkit.evaluate.sparsify import default_relevance_level, relevant_items
from qrelkit.io import Qrels, Run
from qrelkit.io.results import Result, pandas


@dataclass(frozen=True)
class FDSettings:
    ks: tuple[int, ...] = (10,)
    urr: bool = False
    max_rel: int | None = None
    rel_level: int | None = None
    resamples: int = 0  # bootstrap resamples of the queries (0: no intervals)
    seed: int = 0
    interval: str = FD_DEFAULT_METHOD  # or 'jackknife', 'percentile', 'subsampling'
    keep: str = "top-grade"  # which relevant items --max-rel keeps (qrelkit.evaluate.sparsify)


# The jackknife (BCa's, or the jackknife interval's) over at most this many groups of queries: FD costs an eigenvalue problem per
# jackknife row, so MS MARCO dev's 6,980 queries would otherwise add 7 times the work of 1000 resamples.
JACKKNIFE_GROUPS = 200


@dataclass(frozen=True)
class RunFD:
    """One run at one cut-off: the FD with its sizes, and the bootstrap over queries."""

    run: str
    label: str  # "FD@10" or "URR-FD@10"
    result: FrechetResult | None  # None when the run has fewer than 2 items here
    n_ret: int
    bootstrap: BootstrapSummary | None = None
    samples: np.ndarray | None = field(default=None, repr=False)  # the resampled values
    reason: str | None = None  # why there is no value (None when there is one)

    @property
    def value(self) -> float | None:
        return None if self.result is None else self.result.value


def null_reason(n_ret: int, k: int, urr: bool) -> str | None:
    """Why a run has no FD at a cut-off, in words (None when it has one)."""
    if n_ret >= 2:
        return None
    if urr and n_ret == 0:
        return f"no unjudged item among the run's retrieved items (URR-FD@{k} skips every judged item; this run retrieves only judged ones)"
    if urr:
        return f"only 1 unjudged item among the run's retrieved items (URR-FD@{k} skips judged items); FD needs at least 2"
    return f"only {n_ret} retrieved item(s) over the queries with a relevant item; FD needs at least 2"


@dataclass(frozen=True, repr=False)
class FDReport(Result):
    """FD@k of every run; ``runs[run][label]``. The relevant side is shared by all runs."""

    settings: FDSettings
    embedder: str
    d: int
    qids: tuple[str, ...]
    n_rel: int
    rel_rank: int
    rel_level: int
    labels: tuple[str, ...]
    runs: dict[str, dict[str, RunFD]]
    embedding: dict[str, Any] | None = None  # what the vectors came from: reused from a cache, embedded (`qrelkit fd`)

    def summary(self) -> str:
        return f"embedder={self.embedder!r}, d={self.d}, n_rel={self.n_rel}, runs={len(self.runs)}, labels={list(self.labels)}"

    def values(self, label: str) -> dict[str, float | None]:
        return {run: by_label[label].value for run, by_label in self.runs.items()}

    @property
    def interval(self) -> str:
        """The interval method, as printed: "BCa", "percentile", "jackknife" or "subsampling"."""
        return METHOD_NAMES[check_method(self.settings.interval)]

    def warnings(self) -> list[str]:
        """Sentences for a reader: a cut-off with no value for some runs (and why), intervals with notes."""
        out = []
        for label in self.labels:
            null = {run: reason for run, by_label in self.runs.items() if (reason := by_label[label].reason)}
            if null:
                reasons = sorted(set(null.values()))
                shown = ", ".join(sorted(null)[:5]) + (f" and {len(null) - 5} more" if len(null) > 5 else "")
                out.append(f"{label} is null for {len(null)} of {len(self.runs)} runs ({shown}): " + "; ".join(reasons))
        for run, by_label in self.runs.items():
            for label, fd in by_label.items():
                if fd.bootstrap is not None and fd.bootstrap.note:
                    out.append(f"{label} of {run}: {fd.bootstrap.note}")
        return out

    def to_pandas(self):
        """One row per (run, cut-off): FD, its interval and the item counts; pandas is optional."""

        rows = [
            (run, label, fd.value, *((fd.bootstrap.low, fd.bootstrap.high) if fd.bootstrap else (None, None)), fd.n_ret, self.n_rel, self.d)
            for run, by_label in self.runs.items()
            for label, fd in by_label.items()
        ]
        return pandas().DataFrame(rows, columns=["run", "measure", "fd", "ci95_low", "ci95_high", "n_ret", "n_rel", "d"])

    def to_dict(self) -> dict:
        """The CLI's `--json`: {"embedder", "d", "runs": {run: {"FD@10": x, "FD@10_ci95": [lo, hi], "n_ret": n}}, "n_rel"}."""
        runs: dict[str, dict] = {}
        for run, by_label in self.runs.items():
            entry: dict = {}
            for label in self.labels:
                fd = by_label[label]
                entry[label] = fd.value
                if fd.reason:
                    entry[f"{label}_reason"] = fd.reason
                if self.settings.resamples:
                    entry[f"{label}_ci95"] = [fd.bootstrap.low, fd.bootstrap.high] if fd.bootstrap else None
                    entry[f"{label}_mean"] = fd.bootstrap.mean if fd.bootstrap else None
                    if fd.bootstrap is not None and fd.bootstrap.note:
                        entry[f"{label}_note"] = fd.bootstrap.note
                entry[f"n_ret@{label.rsplit('@', 1)[1]}"] = fd.n_ret
                entry[f"{label}_rank"] = fd.result.rank2 if fd.result else None
            entry["n_ret"] = by_label[self.labels[0]].n_ret
            runs[run] = entry
        s = self.settings
        return {
            "embedder": self.embedder,
            "d": self.d,
            "n_rel": self.n_rel,
            "rel_rank": self.rel_rank,
            "n_queries": len(self.qids),
            "rel_level": self.rel_level,
            "max_rel": s.max_rel,
            "urr": s.urr,
            "ks": list(s.ks),
            "resamples": s.resamples,
            "seed": s.seed,
            "interval": {"method": self.interval, "level": 0.95, "resamples": s.resamples, "seed": s.seed} if s.resamples else None,
            "keep": s.keep if s.max_rel else None,
            "runs": runs,
            "warnings": self.warnings(),
            "embedding": self.embedding,
        }


def _fd_against(relevant: CovarianceFactor, retrieved: ItemSample) -> FrechetResult | None:
    """FD of a run's items against the relevant items' factor; None with fewer than 2 items."""
    if len(retrieved) < 2:
        return None
    run = factor_from_samples(retrieved.vectors)
    return FrechetResult(frechet_from_factors(relevant, run), relevant.n, run.n, run.mean.shape[0], relevant.rank, run.rank)


def selected_docids(qrels: Qrels, runs: Sequence[Run], settings: FDSettings) -> dict[str, set[str]]:
    """Every docid FD@k will embed: 'relevant' and one entry per run (for error messages)."""
    relevant = relevant_items(qrels, rel_level=settings.rel_level, max_rel=settings.max_rel, seed=settings.seed, keep=settings.keep)
    skip = judged_items(qrels) if settings.urr else None
    out = {"relevant": {d for docs in relevant.values() for d in docs}}
    for run in runs:
        items = retrieved_items(run, list(relevant), max(settings.ks), skip=skip)
        out[run.name] = {d for docs in items.values() for d in docs}
    return out


def check_vectors(needed: Mapping[str, set[str]], vectors: Mapping[str, object], documents: str = "the documents") -> None:
    """A clear error naming the run (or the qrels) whose docids have no document."""
    for owner, docids in needed.items():
        missing = sorted(d for d in docids if d not in vectors)
        if missing:
            shown = ", ".join(repr(d) for d in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            what = "relevant judged items" if owner == "relevant" else f"run {owner!r}"
            raise QrelkitError(f"{what}: {len(missing)} docid(s) not in {documents}: {shown}")


def fd_of_runs(
    qrels: Qrels,
    runs: Sequence[Run],
    vectors: Mapping[str, np.ndarray],
    settings: FDSettings = FDSettings(),
    *,
    embedder: str = "",
    keep_samples: bool = False,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
) -> FDReport:
    """FD@k (or URR-FD@k) of each run against the relevant judged items, over the qrels' queries
    that have a relevant item. With ``settings.resamples`` = N, the same N query resamples
    (seeded) score every run, so the runs' intervals are paired. ``workers``: processes for the
    bootstrap (see `bootstrap_fd`; default one per core when the work repays it).
    """
    if not runs:
        raise QrelkitError("no runs to score")
    if len({r.name for r in runs}) != len(runs):
        raise QrelkitError("two runs share a name; rename one")
    level = default_relevance_level(qrels) if settings.rel_level is None else settings.rel_level
    method = check_method(settings.interval)
    relevant = relevant_items(qrels, rel_level=level, max_rel=settings.max_rel, seed=settings.seed, keep=settings.keep)
    qids = tuple(relevant)
    check_vectors(selected_docids(qrels, runs, settings), vectors)
    relevant_sample = item_sample(relevant, qids, vectors)
    if len(relevant_sample) < 2:
        raise QrelkitError(f"only {len(relevant_sample)} relevant item(s) in the qrels: FD needs at least 2")
    d = relevant_sample.vectors.shape[1]
    relevant_factor = factor_from_samples(relevant_sample.vectors)  # shared by every run and cut-off
    skip = judged_items(qrels) if settings.urr else None
    weights = draw_counts(len(qids), settings.resamples, settings.seed, method) if settings.resamples else None
    if weights is not None and method in NEEDS_JACKKNIFE and len(qids) >= 2:
        # the jackknife rows go through the same bootstrap code as the resamples
        weights = np.vstack([weights, jackknife_counts(len(qids), JACKKNIFE_GROUPS)])
    labels = tuple(fd_label(k, settings.urr) for k in settings.ks)
    out: dict[str, dict[str, RunFD]] = {run.name: {} for run in runs}
    for k, label in zip(settings.ks, labels):
        samples = [item_sample(retrieved_items(run, qids, k, skip=skip), qids, vectors) for run in runs]
        resampled = bootstrap_fd(relevant_sample, samples, weights, progress=progress, workers=workers) if weights is not None else None
        for j, (run, sample) in enumerate(zip(runs, samples)):
            result = _fd_against(relevant_factor, sample)
            values = summary = None
            if resampled is not None:
                values, jackknife = resampled[j, : settings.resamples], resampled[j, settings.resamples :]
                estimate = math.nan if result is None else result.value
                summary = summarize(values, estimate=estimate, jackknife=jackknife, method=method, n_queries=len(qids))
            reason = null_reason(len(sample), k, settings.urr)
            out[run.name][label] = RunFD(run.name, label, result, len(sample), summary, values if keep_samples else None, reason)
    return FDReport(settings, embedder, d, qids, len(relevant_sample), relevant_factor.rank, level, labels, out)


def fd_metric_tau(fd: Mapping[str, float | None], metric: Mapping[str, float]) -> float:
    """Kendall τ-b between FD and a metric over the runs that have both (negative = agreement: lower
    FD, higher metric), as the FD-vs-metric figure states it."""
    from qrelkit.evaluate.agreement import kendall_tau_b

    runs = [r for r in fd if fd[r] is not None and r in metric]
    return kendall_tau_b([fd[r] for r in runs], [metric[r] for r in runs])

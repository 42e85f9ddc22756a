"""Scores in the two regimes (Zhan et al., CIKM 2022, Tables 6–9): interpolation, extrapolation,
and Δ = Extra./Inter. − 1, with bootstrap intervals over test queries.

ReSTTest (`evaluate_resttest`): for bucket b, a run (one run set for every bucket, or the runs of
models trained on bucket b's training set) is scored on b's interpolation and extrapolation test
queries, and over the k buckets by two aggregates: ``average`` (the paper's §4.1.3 reading) and
``pooled`` (every query weighed equally in both regimes), as docs/interex.md defines them.
ReSTrain (`evaluate_restrain`): the same test queries, scored by a model trained on the
interpolation training set and by one trained on the extrapolation training set.

The bootstrap draws the test queries with replacement (the project's one resample draw); a
bucket's mean in a resample is the weighted mean over its queries drawn, undefined (and left out
of the interval) when none of them is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.bootstrap import Interval, resample_weights, summarize
from qrelkit.evaluate.choices import DEFAULT_RESAMPLES
from qrelkit.evaluate.metrics import Evaluation, evaluate_runs
from qrelkit.io import Qrels, Run
from qrelkit.io.results import pandas


@dataclass(frozen=True)
class BucketQueries:
    """One ReSTTest bucket's test queries: interpolation (the other buckets') and extrapolation (its own)."""

    name: str
    interpolation: tuple[str, ...]
    extrapolation: tuple[str, ...]


# The paper's intervals: percentiles of the resampled statistic over test-query resamples (the
# regimes' Δ is a ratio of two means of the same resample; no BCa here, unlike qrelkit's audits)
INTERVAL_METHOD = "percentile"


@dataclass(frozen=True)
class RegimeScore:
    """A run's metric in both regimes over the queries counted, with 95% bootstrap intervals."""

    interpolation: float | None
    extrapolation: float | None
    interpolation_queries: int
    extrapolation_queries: int
    interpolation_ci: Interval | None = None
    extrapolation_ci: Interval | None = None
    delta_ci: Interval | None = None
    # resamples on which Δ is defined: a bucket none of whose queries is drawn has no score there,
    # so a bucket of one query has an interval from only ~63% of the resamples, conditional on that query
    delta_resamples: int | None = None

    @property
    def delta(self) -> float | None:
        """Extra./Inter. − 1, the paper's Δ (None when either side is undefined or Inter. is 0)."""
        if self.interpolation is None or self.extrapolation is None or self.interpolation == 0:
            return None
        return self.extrapolation / self.interpolation - 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "interpolation": self.interpolation,
            "extrapolation": self.extrapolation,
            "delta": self.delta,
            "interpolation_queries": self.interpolation_queries,
            "extrapolation_queries": self.extrapolation_queries,
        }
        for name in ("interpolation", "extrapolation", "delta"):
            interval = getattr(self, f"{name}_ci")
            if interval is not None:
                out[f"{name}_ci95"] = [interval.low, interval.high]
        if self.delta_resamples is not None:
            out["delta_resamples"] = self.delta_resamples
        return out


@dataclass(frozen=True)
class ReSTTestScores:
    buckets: dict[str, RegimeScore]
    average: RegimeScore
    pooled: RegimeScore


def _rows(measures: Sequence[str], runs: Mapping[str, Mapping[str, Any]], splits) -> list[dict[str, Any]]:
    rows = []
    for run, by_measure in runs.items():
        for measure in measures:
            for split, score in splits(by_measure[measure]):
                rows.append({"run": run, "measure": measure, "split": split, **score.to_dict()})
    return rows


@dataclass(frozen=True)
class ReSTTestEvaluation:
    measures: tuple[str, ...]
    queries: tuple[str, ...]  # every test query of the buckets
    buckets: tuple[BucketQueries, ...]
    per_bucket_runs: bool  # False: one run set scored on every bucket
    runs: dict[str, dict[str, ReSTTestScores]]  # runs[run][measure]
    resamples: int
    seed: int
    ignored_queries: tuple[str, ...] = ()  # queries of the qrels in no bucket

    @staticmethod
    def _splits(scores: ReSTTestScores):
        return [*scores.buckets.items(), ("average", scores.average), ("pooled", scores.pooled)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": "ReSTTest",
            "measures": list(self.measures),
            "queries": len(self.queries),
            "ignored_queries": list(self.ignored_queries),
            "per_bucket_runs": self.per_bucket_runs,
            "resamples": self.resamples,
            "seed": self.seed,
            "interval": INTERVAL_METHOD if self.resamples else None,
            "buckets": {
                b.name: {"interpolation_queries": len(b.interpolation), "extrapolation_queries": len(b.extrapolation)} for b in self.buckets
            },
            "runs": {
                run: {measure: {split: score.to_dict() for split, score in self._splits(scores)} for measure, scores in by_measure.items()}
                for run, by_measure in self.runs.items()
            },
        }

    def to_pandas(self):
        """One row per run, measure and split (bucket name, ``average``, ``pooled``); needs pandas."""
        return pandas().DataFrame(_rows(self.measures, self.runs, self._splits))


@dataclass(frozen=True)
class ReSTrainEvaluation:
    measures: tuple[str, ...]
    queries: tuple[str, ...]
    runs: dict[str, dict[str, RegimeScore]]  # runs[run][measure]
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": "ReSTrain",
            "measures": list(self.measures),
            "queries": len(self.queries),
            "resamples": self.resamples,
            "seed": self.seed,
            "interval": INTERVAL_METHOD if self.resamples else None,
            "runs": {run: {m: score.to_dict() for m, score in by_measure.items()} for run, by_measure in self.runs.items()},
        }

    def to_pandas(self):
        return pandas().DataFrame(_rows(self.measures, self.runs, lambda score: [("all", score)]))


def check_buckets(buckets: Sequence[BucketQueries]) -> dict[str, int]:
    """qid -> index of the bucket that extrapolates it. The buckets must be a ReSTTest split: every
    test query extrapolated by exactly one bucket and interpolated by all the others."""
    if len(buckets) < 2:
        raise QrelkitError(f"ReSTTest needs at least 2 buckets, got {len(buckets)}")
    names = [b.name for b in buckets]
    if len(set(names)) != len(names):
        raise QrelkitError(f"bucket names repeat: {names}")
    own: dict[str, int] = {}
    for index, bucket in enumerate(buckets):
        for qid in bucket.extrapolation:
            if qid in own:
                raise QrelkitError(f"query {qid!r} is in the extrapolation sets of both {buckets[own[qid]].name} and {bucket.name}")
            own[qid] = index
    for index, bucket in enumerate(buckets):
        expected = {q for q, b in own.items() if b != index}
        given = set(bucket.interpolation)
        if given != expected:
            wrong = sorted(given - expected) or sorted(expected - given)
            why = "is not in another bucket's extrapolation set" if wrong[0] in given - expected else "is missing (it is another bucket's)"
            raise QrelkitError(f"{bucket.name}: interpolation query {wrong[0]!r} {why}; {len(wrong)} such")
    if not own:
        raise QrelkitError("the buckets hold no test queries")
    return own


def _weighted_means(weights: np.ndarray, values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """(resamples, buckets) means of ``values[b]`` over the members of bucket b; NaN where none is drawn."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ (members * values).T) / (weights @ members.T)


def _statistics(weights: np.ndarray, values: np.ndarray, inter: np.ndarray, extra: np.ndarray, own: np.ndarray) -> dict[str, np.ndarray]:
    """Every ReSTTest statistic under query weights (rows: resamples; one row 1/Q is the point estimate).
    values, inter, extra: buckets × queries; own[q] is the bucket that extrapolates query q."""
    by_query = np.arange(values.shape[1])
    per_query_inter = (inter * values).sum(axis=0) / inter.sum(axis=0)
    bucket_inter = _weighted_means(weights, values, inter)
    defined = inter.any(axis=1)  # a bucket with no interpolation query has no score to average
    return {
        "bucket_inter": bucket_inter,
        "bucket_extra": _weighted_means(weights, values, extra),
        "average_inter": bucket_inter[:, defined].mean(axis=1),
        "pooled_extra": weights @ values[own, by_query],
        "pooled_inter": weights @ per_query_inter,
    }


def _score(point_inter, point_extra, n_inter, n_extra, boot_inter=None, boot_extra=None, level=0.95) -> RegimeScore:
    def finite(x) -> float | None:
        return None if x is None or not np.isfinite(x) else float(x)

    point_inter, point_extra = finite(point_inter), finite(point_extra)
    if boot_inter is None or boot_extra is None:
        return RegimeScore(point_inter, point_extra, n_inter, n_extra)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = boot_extra / boot_inter - 1.0
    summaries = [summarize(x, level) for x in (boot_inter, boot_extra, delta)]
    inter_ci, extra_ci, delta_ci = (s.interval if s is not None else None for s in summaries)
    defined = summaries[2].resamples if summaries[2] is not None else 0
    return RegimeScore(point_inter, point_extra, n_inter, n_extra, inter_ci, extra_ci, delta_ci, defined)


def _resttest_scores(point, boot, buckets, n_inter, n_extra, level) -> ReSTTestScores:
    n_queries = int(n_extra.sum())

    def score(inter_key: str, extra_key: str, column: int | None = None) -> RegimeScore:
        def pick(stats: dict[str, np.ndarray], key: str) -> np.ndarray:
            return stats[key][:, column] if column is not None else stats[key]

        n_i, n_e = (int(n_inter[column]), int(n_extra[column])) if column is not None else (n_queries, n_queries)
        bi, be = (pick(boot, inter_key), pick(boot, extra_key)) if boot is not None else (None, None)
        return _score(pick(point, inter_key)[0], pick(point, extra_key)[0], n_i, n_e, bi, be, level)

    return ReSTTestScores(
        {b.name: score("bucket_inter", "bucket_extra", i) for i, b in enumerate(buckets)},
        score("average_inter", "pooled_extra"),
        score("pooled_inter", "pooled_extra"),
    )


def _evaluations(qrels: Qrels, buckets, runs, measures) -> tuple[list[Evaluation], bool]:
    if isinstance(runs, Mapping):
        missing = [b.name for b in buckets if b.name not in runs]
        if missing:
            raise QrelkitError(f"no runs for bucket(s) {', '.join(missing)}")
        evaluations = [evaluate_runs(qrels, list(runs[b.name]), measures) for b in buckets]
        names = set(evaluations[0].runs)
        for bucket, evaluation in zip(buckets, evaluations):
            if set(evaluation.runs) != names:
                odd = sorted(set(evaluation.runs) ^ names)[0]
                raise QrelkitError(f"run {odd!r} is in some buckets' runs but not in {bucket.name}'s: every bucket needs the same runs")
        return evaluations, True
    evaluation = evaluate_runs(qrels, list(runs), measures)
    return [evaluation] * len(buckets), False


def evaluate_resttest(
    qrels: Qrels,
    buckets: Sequence[BucketQueries],
    runs: Sequence[Run] | Mapping[str, Sequence[Run]],
    measures: Sequence[str] = ("nDCG@10",),
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> ReSTTestEvaluation:
    """Score runs on ReSTTest's buckets. ``runs``: one run set scored on every bucket, or a mapping
    bucket name -> the runs of the models trained on that bucket's training set (same run names)."""
    own = check_buckets(buckets)
    unjudged = sorted(q for q in own if q not in qrels.grades)
    if unjudged:
        raise QrelkitError(f"{len(unjudged)} bucket query(ies) have no judgments in the qrels, e.g. {unjudged[0]!r}")
    if not runs:
        raise QrelkitError("no runs to score")
    evaluations, per_bucket = _evaluations(qrels, buckets, runs, measures)
    queries = tuple(sorted(own))
    column_of = {q: i for i, q in enumerate(evaluations[0].queries)}
    columns = np.array([column_of[q] for q in queries], dtype=int)
    own_bucket = np.array([own[q] for q in queries])
    # check_buckets made every bucket interpolate exactly the queries it does not extrapolate
    extra = (own_bucket == np.arange(len(buckets))[:, None]).astype(np.float64)
    inter = 1.0 - extra
    point_weights = np.full((1, len(queries)), 1.0 / len(queries))
    boot_weights = resample_weights(len(queries), resamples, seed) if resamples else None
    n_inter, n_extra = inter.sum(axis=1).astype(int), extra.sum(axis=1).astype(int)
    out: dict[str, dict[str, ReSTTestScores]] = {}
    for run in evaluations[0].runs:
        out[run] = {}
        for measure in evaluations[0].measures:
            values = np.vstack([e.values[run][measure][columns] for e in evaluations])
            point = _statistics(point_weights, values, inter, extra, own_bucket)
            boot = _statistics(boot_weights, values, inter, extra, own_bucket) if boot_weights is not None else None
            out[run][measure] = _resttest_scores(point, boot, buckets, n_inter, n_extra, level)
    ignored = tuple(q for q in evaluations[0].queries if q not in own)
    return ReSTTestEvaluation(tuple(evaluations[0].measures), queries, tuple(buckets), per_bucket, out, resamples, seed, ignored)


def evaluate_restrain(
    qrels: Qrels,
    interpolation_runs: Sequence[Run],
    extrapolation_runs: Sequence[Run],
    measures: Sequence[str] = ("nDCG@10",),
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = 0.95,
) -> ReSTrainEvaluation:
    """Score each model on the (unchanged) test queries trained both ways: its interpolation run and
    its extrapolation run share a name. Intervals are paired: the same query resamples score both."""
    inter_names = {r.name for r in interpolation_runs}
    extra_names = {r.name for r in extrapolation_runs}
    if not inter_names:
        raise QrelkitError("no runs to score")
    if inter_names != extra_names:
        odd = sorted(inter_names ^ extra_names)[0]
        side = "interpolation" if odd in inter_names else "extrapolation"
        raise QrelkitError(f"run {odd!r} is only among the {side} runs: each model needs a run trained each way, with one name")
    inter = evaluate_runs(qrels, list(interpolation_runs), measures)
    extra = evaluate_runs(qrels, list(extrapolation_runs), measures)
    n = len(inter.queries)
    boot_weights = resample_weights(n, resamples, seed) if resamples else None
    out: dict[str, dict[str, RegimeScore]] = {}
    for run in inter.runs:
        out[run] = {}
        for measure in inter.measures:
            vi, ve = inter.values[run][measure], extra.values[run][measure]
            bi, be = (boot_weights @ vi, boot_weights @ ve) if boot_weights is not None else (None, None)
            out[run][measure] = _score(vi.mean(), ve.mean(), n, n, bi, be, level)
    return ReSTrainEvaluation(tuple(inter.measures), tuple(inter.queries), out, resamples, seed)

"""Scores to qrels (seed 003, section 3.3): below the median 0, median to 75th percentile 1,
at or above the 75th percentile 2 — quantiles and labels configurable, over all scores or per
topic, or fixed thresholds. The thresholds used are returned so they can be stored."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.io import Qrel, Qrels

ALL_TOPICS = "*"


@dataclass(frozen=True)
class GradingResult:
    qrels: Qrels
    thresholds: dict[str, list[float]]  # qid (or "*" for all topics) -> cut points
    description: dict[str, Any]


def quantile_cuts(scores: Sequence[float], quantiles: Sequence[float]) -> list[float]:
    """Cut points at the given quantiles (numpy's default linear interpolation)."""
    return [float(v) for v in np.quantile(np.asarray(scores, dtype=np.float64), quantiles)]


def label_for(score: float, cuts: Sequence[float], labels: Sequence[int]) -> int:
    """labels[i] where cuts[i-1] <= score < cuts[i]: a score equal to a cut takes the upper label."""
    return labels[bisect_right(cuts, score)]


def grade_scores(
    scores: Sequence[tuple[str, str, float]],
    *,
    name: str,
    method: str = "quantile",
    quantiles: Sequence[float] = (0.5, 0.75),
    thresholds: Sequence[float] | None = None,
    labels: Sequence[int] = (0, 1, 2),
    per_topic: bool = False,
) -> GradingResult:
    if not scores:
        raise QrelkitError("no scores to grade: the judge run has no `ok` judgments yet")
    if method == "thresholds":
        if not thresholds:
            raise QrelkitError("grading by thresholds needs thresholds")
        cuts_by_topic = {ALL_TOPICS: [float(t) for t in thresholds]}
    elif per_topic:
        by_topic: dict[str, list[float]] = {}
        for qid, _, score in scores:
            by_topic.setdefault(qid, []).append(score)
        cuts_by_topic = {qid: quantile_cuts(values, quantiles) for qid, values in by_topic.items()}
    else:
        cuts_by_topic = {ALL_TOPICS: quantile_cuts([s for _, _, s in scores], quantiles)}
    if len(labels) != len(next(iter(cuts_by_topic.values()))) + 1:
        raise QrelkitError(f"{len(labels)} labels do not fit {len(next(iter(cuts_by_topic.values())))} cut points")
    entries = tuple(
        Qrel(qid, docid, label_for(score, cuts_by_topic.get(qid, cuts_by_topic.get(ALL_TOPICS, [])), labels))
        for qid, docid, score in scores
    )
    description = {
        "method": method,
        "quantiles": list(quantiles) if method == "quantile" else None,
        "labels": list(labels),
        "per_topic": per_topic and method == "quantile",
        "thresholds": cuts_by_topic,
        "n_scores": len(scores),
    }
    return GradingResult(Qrels(name, entries), cuts_by_topic, description)


def grade_judge_run(
    store: Any,
    judge_run_id: str,
    *,
    name: str | None = None,
    score_column: str = "score",
    **options: Any,
) -> GradingResult:
    """Grade a stored judge run's `ok` scores and store the qrels set with its thresholds."""
    from qrelkit.storage.judgments import judge_run, ok_scores

    info = judge_run(store, judge_run_id)
    result = grade_scores(ok_scores(store, info.judge_run_id, score_column), name=name or f"graded-{info.judge_run_id}", **options)
    description = {**result.description, "score": score_column, "judge_run_id": info.judge_run_id}
    store.save_qrels(result.qrels, judge_run_id=info.judge_run_id, grading=description)
    return GradingResult(result.qrels, result.thresholds, description)

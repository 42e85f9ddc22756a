"""What `qrelkit estimate` found, as data (`EstimateResult`: `to_dict`, `to_pandas`) and as the
document every format prints (`estimate_document`: the answer first, then the tables, then notes)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qrelkit.io.results import Result


@dataclass(frozen=True)
class MeasureEstimates:
    """One measure: per estimator (values, low, high) over ``runs``; the chosen estimator's
    covariance, differences and rank intervals; the effective number of human labels per run."""

    measure: str
    runs: list[str]
    estimator: str
    values: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    difference: np.ndarray
    half_width: np.ndarray
    best: np.ndarray
    worst: np.ndarray
    effective: np.ndarray
    labels: int
    lam: np.ndarray | None = None

    @classmethod
    def of(cls, measure: str, runs: list[str], found: dict[str, Any], estimator: str) -> MeasureEstimates:
        from qrelkit.evaluate.estimate import inference

        values, low, high = {}, {}, {}
        for name, estimate in found.items():
            values[name] = estimate.values[0]
            if name == "judge":
                low[name] = high[name] = np.full(len(runs), np.nan)
            else:
                lo, hi = inference.intervals(estimate.values, estimate.covariance, estimate.df)
                low[name], high[name] = lo[0], hi[0]
        chosen = found[estimator]
        difference, half = inference.differences(chosen.values, chosen.covariance, chosen.df)
        best, worst = inference.rank_intervals(chosen.values, chosen.covariance, chosen.df)
        variance = np.diagonal(chosen.covariance[0])
        human_variance = np.diagonal(found["human"].covariance[0])
        labels = int(chosen.labels[0]) if estimator != "judge" else int(found["human"].labels[0])
        effective = inference.effective_labels(labels, human_variance, variance)
        lam = None if chosen.lam is None else chosen.lam[0]
        return cls(measure, runs, estimator, values, low, high, difference[0], half[0], best[0], worst[0], effective, labels, lam)

    def order(self) -> np.ndarray:
        return np.argsort(-self.values[self.estimator], kind="stable")

    def told_apart(self) -> np.ndarray:
        return np.abs(self.difference) > self.half_width

    def confident_runs(self) -> int:
        """Runs told apart from each run beside them in the estimated order."""
        order, apart = self.order(), self.told_apart()
        count = 0
        for place, run in enumerate(order):
            neighbours = [order[p] for p in (place - 1, place + 1) if 0 <= p < len(order)]
            count += all(apart[run, other] for other in neighbours)
        return count

    def pairs_told_apart(self) -> tuple[int, int]:
        n = len(self.runs)
        return int(np.triu(self.told_apart(), 1).sum()), n * (n - 1) // 2

    def to_dict(self) -> dict[str, Any]:
        order = self.order()
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(1, len(order) + 1)
        runs = {}
        for r, name in enumerate(self.runs):
            entry = {
                "estimate": _num(self.values[self.estimator][r]),
                "ci95": _interval(self.low[self.estimator][r], self.high[self.estimator][r]),
                "rank": int(rank[r]),
                "rank_interval": [int(self.best[r]), int(self.worst[r])],
                "effective_labels": _num(self.effective[r]),
                "estimators": {
                    e: {"estimate": _num(v[r]), "ci95": _interval(self.low[e][r], self.high[e][r])} for e, v in self.values.items()
                },
            }
            if self.lam is not None:
                entry["lambda"] = _num(self.lam[r])
            runs[name] = entry
        apart, total = self.pairs_told_apart()
        differences = []
        for i, a in enumerate(order):
            for b in order[i + 1 :]:
                d, h = self.difference[a, b], self.half_width[a, b]
                differences.append(
                    {
                        "run": self.runs[a],
                        "other": self.runs[b],
                        "difference": _num(d),
                        "ci95": _interval(d - h, d + h),
                        "told_apart": bool(abs(d) > h),
                    }
                )
        return {
            "measure": self.measure,
            "estimator": self.estimator,
            "runs": runs,
            "differences": differences,
            "told_apart": apart,
            "run_pairs": total,
            "ranked_with_confidence": self.confident_runs(),
        }


def _num(value: float) -> float | None:
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _interval(low: float, high: float) -> list[float] | None:
    return None if not (math.isfinite(float(low)) and math.isfinite(float(high))) else [float(low), float(high)]


@dataclass(frozen=True, repr=False)
class EstimateResult(Result):
    design: dict[str, Any]
    estimator: str
    measures: dict[str, MeasureEstimates]
    human_labels: int
    judge: dict[str, Any]
    human: dict[str, Any]
    pool_pairs: int
    notes: list[str] = field(default_factory=list)

    @property
    def primary(self) -> MeasureEstimates:
        return next(iter(self.measures.values()))

    def summary(self) -> str:
        return f"design={self.design['name']!r}, estimator={self.estimator!r}, measures={list(self.measures)}, labels={self.human_labels}"

    def coverage_note(self) -> tuple[str, bool] | None:
        """What the simulation measured of this design and estimator near this many labels, and
        whether that lies outside 93-97% (then the intervals are not to be read as 95% ones)."""
        from qrelkit.evaluate.choices import COVERAGE_RANGE, measured_coverage

        found = measured_coverage(self.design["design"], self.estimator, self.human_labels)
        if found is None:
            return None
        budget, mean, worst = found
        low, high = COVERAGE_RANGE
        outside = not low <= mean <= high
        text = (
            f"in qrelkit's simulation (benchmarks/bench_human_budget.py: DL19, nDCG@10, four judges, 1,000 draws) the 95% intervals "
            f"of {self.estimator} under the {self.design['design']} design with {budget:,} labels covered {mean:.1%} on average "
            f"({worst:.1%} with the weakest judge)"
        )
        if outside:
            text += f", outside {low:.0%}-{high:.0%}: do not read them as 95% intervals"
        return text, outside

    def to_dict(self) -> dict[str, Any]:
        primary, coverage = self.primary.to_dict(), self.coverage_note()
        return {
            **primary,
            "design": self.design,
            "human_labels": self.human_labels,
            "judge": self.judge,
            "human": self.human,
            "pool_pairs": self.pool_pairs,
            "measures": {name: found.to_dict() for name, found in self.measures.items()},
            "notes": list(self.notes),
            "warnings": [coverage[0]] if coverage and coverage[1] else [],
        }

    def to_pandas(self):
        """One row per (measure, run, estimator): estimate, low, high; the chosen estimator's rows
        also carry the effective number of human labels."""
        from qrelkit.io.results import pandas

        pd = pandas()
        rows = []
        for measure, found in self.measures.items():
            for r, run in enumerate(found.runs):
                for name, values in found.values.items():
                    chosen = name == found.estimator
                    numbers = (values[r], found.low[name][r], found.high[name][r], found.effective[r] if chosen else math.nan)
                    rows.append((measure, run, name, chosen, *map(float, numbers)))
        return pd.DataFrame(rows, columns=["measure", "run", "estimator", "chosen", "estimate", "low", "high", "effective_labels"])

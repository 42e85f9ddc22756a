"""Label agreement on the (qid, docid) pairs two qrels both judge: Cohen's κ (unweighted,
linear, quadratic), Krippendorff's α, the confusion matrix, and grade mappings between scales.

κ's intervals resample queries, not pairs (a query's pairs share its topic and its assessor), with
the same draws as every other statistic of an audit: κ is a function of the confusion matrix, and
a resample's confusion matrix is the query-weighted sum of per-query ones (:func:`kappa_statistic`).

Grades are integers. Weighted κ weighs a disagreement by the grade difference (|i−j| or
(i−j)²): the confusion matrix spans every grade from the lowest to the highest seen on either
side, so an unused grade in the middle still counts as a step (scikit-learn's
``cohen_kappa_score`` agrees when given ``labels=range(lowest, highest + 1)``).

κ and α compare categories on one scale, so they are computed only where both sides' grades (after
the maps) fit one scale of at most ``MAX_KAPPA_LEVELS`` = 11 grades (0–10), and neither side is a
judge's scores (fractional values). Relevance scales in use run to 0–3 (TREC), 0–4 and 0–5 (exam
methods), or 0–10 ratings; beyond that the values are counts (pairwise-preference wins, 1–45),
percentages or scores, each value of which κ would read as a category of its own, and whose
confusion matrix grows with the square of the range (0..20000 would take 3.2 GB). Elsewhere κ and α
are not computed, and the agreement says why in one sentence (`LabelAgreement.not_computed`):
nothing is built whose size depends on the grades' range.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.bootstrap import IntervalEstimate
from qrelkit.evaluate.joined import joined_pairs
from qrelkit.io import Qrels
from qrelkit.io.results import Result

Grades = dict[str, dict[str, int]]  # qid -> docid -> grade
MAX_KAPPA_LEVELS = 11  # grades on one scale for κ and α (0–10); see the module docstring


class NoSharedPairs(QrelkitError):
    """Two qrels that share no (qid, docid) pair: nothing to agree on."""


@dataclass(frozen=True)
class GradeMaps:
    """The grade maps label agreement applies first: ``reference`` to the reference's grades, ``model``
    to the model's (None: the grades as given)."""

    reference: Mapping[int, int] | None = None
    model: Mapping[int, int] | None = None

    def to_dict(self) -> dict[str, dict[int, int] | None]:
        sides = (("reference", self.reference), ("model", self.model))
        return {side: None if mapping is None else dict(mapping) for side, mapping in sides}


NO_MAPS = GradeMaps()


def map_grades(grades: Grades | Qrels, mapping: Mapping[int, int] | None, side: str) -> Grades:
    """Apply a grade mapping; a grade the mapping does not cover is an error, never a guess.
    ``grades``: a `Qrels` or its ``{qid: {docid: grade}}`` view."""
    grades = grades.grades if isinstance(grades, Qrels) else grades
    if mapping is None:
        return grades
    spec = ",".join(f"{k}:{v}" for k, v in mapping.items())
    named = getattr(mapping, "option", None) or f"the {side} map"  # how the caller named it (a request names its flag)
    out: Grades = {}
    for qid, docs in grades.items():
        for docid, grade in docs.items():
            if grade not in mapping:
                raise QrelkitError(
                    f"{named} {spec}: grade {grade} of the {side} qrels (qid {qid}, docid {docid}) is not mapped; add {grade}:<grade>"
                )
            out.setdefault(qid, {})[docid] = mapping[grade]
    return out


@dataclass(frozen=True)
class SharedPairs:
    """The pairs both sides judge, sorted by (qid, docid), with each side's grade."""

    qids: list[str]
    docids: list[str]
    reference: np.ndarray
    model: np.ndarray
    reference_total: int  # pairs the reference judges
    model_total: int  # pairs the model judges
    scored: bool = False  # a side is a judge's scores (fractional values as order codes), not grades


def shared_pairs(model: Grades, reference: Grades, *, scored: bool = False) -> SharedPairs:
    keys = sorted((qid, docid) for qid, docs in reference.items() for docid in docs if docid in model.get(qid, {}))
    return SharedPairs(
        qids=[q for q, _ in keys],
        docids=[d for _, d in keys],
        reference=np.array([reference[q][d] for q, d in keys], dtype=np.int64),
        model=np.array([model[q][d] for q, d in keys], dtype=np.int64),
        reference_total=sum(len(docs) for docs in reference.values()),
        model_total=sum(len(docs) for docs in model.values()),
        scored=scored,
    )


def fits_one_scale(qrels: Qrels) -> bool:
    """Whether κ could read these qrels' grades as categories: grades, not scores, spanning at most
    ``MAX_KAPPA_LEVELS`` values."""
    if qrels.scored or not len(qrels):
        return not qrels.scored
    grades = np.asarray(qrels.table.column("grade").to_numpy(), np.int64)
    return int(grades.max()) - int(grades.min()) + 1 <= MAX_KAPPA_LEVELS


def kappa_scale_problem(pairs: SharedPairs) -> str | None:
    """Why κ and α cannot compare these grades (None when they can): a side holds scores, or the
    grades of both sides span more than ``MAX_KAPPA_LEVELS`` values."""
    if pairs.scored:
        return "a judge's scores (fractional values) are not grades on a scale: κ and α compare grades, so they are not computed"
    if not len(pairs.qids):
        return None
    low = min(int(pairs.reference.min()), int(pairs.model.min()))
    high = max(int(pairs.reference.max()), int(pairs.model.max()))
    if high - low + 1 <= MAX_KAPPA_LEVELS:
        return None
    model, reference = (f"{int(side.min())}–{int(side.max())}" for side in (pairs.model, pairs.reference))
    sides = f"the model's {model}, the reference's {reference}"
    return (
        f"the grades span {high - low + 1:,} values ({sides}), more than the {MAX_KAPPA_LEVELS} of one relevance scale: "
        "κ and α would read each value as a category, so they are not computed; put both on one scale with --map / --map-model"
    )


def grade_range(*grade_arrays: np.ndarray) -> list[int]:
    values = np.concatenate([np.asarray(a, np.int64).ravel() for a in grade_arrays])
    if values.size == 0:
        return []
    return list(range(int(values.min()), int(values.max()) + 1))


def confusion_matrix(reference, model, labels: list[int] | None = None) -> np.ndarray:
    """Counts: rows are reference grades, columns model grades, both in ``labels`` order."""
    reference, model = np.asarray(reference, np.int64), np.asarray(model, np.int64)
    labels = labels if labels is not None else grade_range(reference, model)
    counts = np.zeros((len(labels), len(labels)), dtype=np.int64)
    np.add.at(counts, (_places(labels, reference.tolist()), _places(labels, model.tolist())), 1)
    return counts


def _places(keys: list, values: list) -> np.ndarray:
    """Each of ``values``' place in ``keys``."""
    index = {key: i for i, key in enumerate(keys)}
    return np.array([index[value] for value in values], dtype=np.int64)


def _disagreement_weights(n_labels: int, weights: str | None) -> np.ndarray:
    steps = np.arange(n_labels)
    distance = np.abs(steps[:, None] - steps[None, :]).astype(np.float64)
    if weights is None:
        return (distance > 0).astype(np.float64)
    if weights == "linear":
        return distance
    if weights == "quadratic":
        return distance**2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")


def cohen_kappa(reference, model, weights: str | None = None) -> float:
    """Cohen's κ = 1 − Σ w·observed / Σ w·expected; ``weights`` None, 'linear' or 'quadratic'. NaN
    when both sides used one and the same grade (agreement beyond chance is undefined) or none."""
    return float(kappa_rows(confusion_matrix(reference, model)[None], weights)[0])


def kappa_rows(confusions: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's κ of each matrix in a (rows, L, L) stack of confusion counts (which may be
    weighted: κ does not change when every count is scaled); NaN where κ is undefined."""
    counts = np.asarray(confusions, np.float64)
    weight = _disagreement_weights(counts.shape[-1], weights)
    total = counts.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = counts.sum(axis=2)[:, :, None] * counts.sum(axis=1)[:, None, :] / total[:, None, None]
        disagreement_expected = (weight * expected).sum(axis=(1, 2))
        defined = disagreement_expected > 0
        return np.where(defined, 1.0 - (weight * counts).sum(axis=(1, 2)) / np.where(defined, disagreement_expected, 1.0), np.nan)


def krippendorff_alpha(reliability_data, level: str = "ordinal") -> float:
    """Krippendorff's α for coders × units data (NaN = missing), from the coincidence matrix.

    α = 1 − (n−1) · Σ o_ck δ²_ck / Σ n_c n_k δ²_ck. Ordinal δ²_ck = (Σ_{g=c..k} n_g − (n_c+n_k)/2)²
    over the sorted values, which makes it depend on how often each grade is used, not on
    the grade numbers; interval δ² = (c−k)²; nominal δ² = [c≠k].
    """
    data = np.asarray(reliability_data, dtype=np.float64)
    values = np.unique(data[~np.isnan(data)])
    if len(values) < 2:
        return math.nan  # one value or none: nothing to disagree about
    per_unit = np.stack([(data == v).sum(axis=0) for v in values], axis=1).astype(np.float64)  # units × values
    pairable = per_unit.sum(axis=1)
    per_unit, pairable = per_unit[pairable >= 2], pairable[pairable >= 2]
    if per_unit.size == 0:
        return math.nan
    # o_ck = Σ_u n_uc (n_uk − [c=k]) / (m_u − 1): pairs of values from different coders of a unit.
    scaled = per_unit / (pairable - 1)[:, None]
    coincidence = scaled.T @ per_unit - np.diag(scaled.sum(axis=0))
    totals = coincidence.sum(axis=1)
    n = totals.sum()
    if level == "nominal":
        delta = (values[:, None] != values[None, :]).astype(np.float64)
    elif level == "interval":
        delta = (values[:, None] - values[None, :]) ** 2
    elif level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(totals)])
        low = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
        high = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
        between = cumulative[high + 1] - cumulative[low]  # Σ n_g for g from c to k, inclusive
        delta = (between - (totals[:, None] + totals[None, :]) / 2.0) ** 2
    else:
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', not {level!r}")
    expected = float((np.outer(totals, totals) * delta).sum())
    if expected == 0:
        return math.nan
    return float(1.0 - (n - 1.0) * float((coincidence * delta).sum()) / expected)


KAPPAS = {"cohen_kappa": None, "cohen_kappa_linear": "linear", "cohen_kappa_quadratic": "quadratic"}  # κ -> its weights
KAPPA_NAMES = {
    "cohen_kappa": "Cohen's κ",
    "cohen_kappa_linear": "Cohen's κ, linear weights",
    "cohen_kappa_quadratic": "Cohen's κ, quadratic weights",
    "cohen_kappa_binary": "Cohen's κ, binary",
}


def finite_or_none(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def interval_or_none(interval: tuple[float, float] | None) -> list[float | None] | None:
    return None if not interval else [finite_or_none(interval[0]), finite_or_none(interval[1])]


@dataclass(frozen=True, repr=False)
class LabelAgreement(Result):
    reference_pairs: int
    model_pairs: int
    shared_pairs: int
    labels: list[int]
    confusion: np.ndarray  # rows reference, columns model
    exact_agreement: float  # fraction of shared pairs with the same grade
    cohen_kappa: float
    cohen_kappa_linear: float
    cohen_kappa_quadratic: float
    krippendorff_alpha_ordinal: float
    rel_level: int | None = None
    cohen_kappa_binary: float | None = None  # both sides as grade >= rel_level
    # κ statistic name -> its bootstrap interval over queries (set by the audit, which owns the draws)
    intervals: dict[str, IntervalEstimate] = field(default_factory=dict)
    not_computed: str | None = None  # why κ and α were not computed (`kappa_scale_problem`), in one sentence

    def summary(self) -> str:
        alpha = self.krippendorff_alpha_ordinal
        return f"shared_pairs={self.shared_pairs}, cohen_kappa={self.cohen_kappa:.4f}, krippendorff_alpha_ordinal={alpha:.4f}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the `labels` part of `qrelkit agree --json`); an undefined statistic is null, never NaN."""
        statistics = (*KAPPAS, "krippendorff_alpha_ordinal", "exact_agreement")
        out: dict[str, Any] = {
            **{name: finite_or_none(getattr(self, name)) for name in statistics},
            "confusion": {"rows": "reference", "columns": "model", "labels": self.labels, "matrix": self.confusion.tolist()},
        }
        if self.not_computed is not None:
            out["not_computed"] = self.not_computed
        if self.rel_level is not None:
            out["rel_level"] = self.rel_level
            out["cohen_kappa_binary"] = finite_or_none(self.cohen_kappa_binary)
        for name in [n for n in KAPPA_NAMES if n in out]:
            found = self.intervals.get(name)
            out[f"{name}_ci95"] = interval_or_none(found.interval) if found else None
        out["notes"] = {name: found.note for name, found in self.intervals.items() if found.note}
        return out

    def to_pandas(self):
        """The confusion matrix: one row per (reference grade, model grade, pairs); pandas is optional."""
        from qrelkit.io.results import pandas

        rows = [(r, m, int(self.confusion[i, j])) for i, r in enumerate(self.labels) for j, m in enumerate(self.labels)]
        return pandas().DataFrame(rows, columns=["reference", "model", "pairs"])


def label_agreement(
    model: Grades | Qrels,
    reference: Grades | Qrels,
    *,
    maps: GradeMaps = NO_MAPS,
    rel_level: int | None = None,
) -> LabelAgreement:
    """Agreement of the model's grades with the reference's on the pairs both judge.

    The maps apply first (`GradeMaps`); ``rel_level`` then adds κ on both sides cut at grade >= level.
    """
    return agreement_of(mapped_pairs(model, reference, maps), rel_level)


def mapped_pairs(model: Grades | Qrels, reference: Grades | Qrels, maps: GradeMaps = NO_MAPS) -> SharedPairs:
    """The pairs both sides judge, each side's grade after its map: what every label statistic reads
    (an audit builds them once for κ, α and κ's bootstrap)."""
    scored = any(isinstance(side, Qrels) and side.scored for side in (model, reference))
    if isinstance(model, Qrels) and isinstance(reference, Qrels):  # in columns: a judge's file may hold millions of pairs
        joined = joined_pairs(model, reference, maps.model, maps.reference)
        if joined is not None:
            return SharedPairs(*joined, reference_total=len(reference.table), model_total=len(model.table), scored=scored)
    return shared_pairs(map_grades(model, maps.model, "model"), map_grades(reference, maps.reference, "reference"), scored=scored)


def agreement_of(pairs: SharedPairs, rel_level: int | None = None) -> LabelAgreement:
    """`label_agreement` on pairs already shared and mapped; κ and α not computed (and why) where
    the grades are not on one scale (`kappa_scale_problem`)."""
    if len(pairs.qids) == 0:
        raise NoSharedPairs(
            f"the model qrels ({pairs.model_total} pairs) and the reference qrels ({pairs.reference_total} pairs) "
            "share no (qid, docid) pair: are they for the same topics and collection?"
        )
    counts: dict[str, Any] = dict(reference_pairs=pairs.reference_total, model_pairs=pairs.model_total, shared_pairs=len(pairs.qids))
    problem = kappa_scale_problem(pairs)
    if problem is not None:
        undefined: dict[str, Any] = dict.fromkeys(("exact_agreement", *KAPPAS, "krippendorff_alpha_ordinal"), math.nan)
        binary = None if rel_level is None else math.nan
        empty = np.zeros((0, 0), np.int64)
        return LabelAgreement(
            **counts, labels=[], confusion=empty, **undefined, rel_level=rel_level, cohen_kappa_binary=binary, not_computed=problem
        )
    labels = grade_range(pairs.reference, pairs.model)
    return LabelAgreement(
        **counts,
        labels=labels,
        confusion=confusion_matrix(pairs.reference, pairs.model, labels),
        exact_agreement=float((pairs.reference == pairs.model).mean()),
        cohen_kappa=cohen_kappa(pairs.reference, pairs.model),
        cohen_kappa_linear=cohen_kappa(pairs.reference, pairs.model, "linear"),
        cohen_kappa_quadratic=cohen_kappa(pairs.reference, pairs.model, "quadratic"),
        krippendorff_alpha_ordinal=krippendorff_alpha(np.vstack([pairs.reference, pairs.model]), "ordinal"),
        rel_level=rel_level,
        cohen_kappa_binary=None if rel_level is None else cohen_kappa(pairs.reference >= rel_level, pairs.model >= rel_level),
    )


def per_query_confusions(pairs: SharedPairs, queries: list[str], labels: list[int]) -> np.ndarray:
    """Each query's confusion counts (reference grade × model grade over ``labels``) as the rows of a
    (Q, L·L) matrix: a resample's weights @ it is the resample's confusion matrix."""
    per_query = np.zeros((len(queries), len(labels), len(labels)))
    places = (_places(queries, pairs.qids), _places(labels, pairs.reference.tolist()), _places(labels, pairs.model.tolist()))
    np.add.at(per_query, places, 1.0)
    return per_query.reshape(len(queries), -1)


def kappa_statistic_of(
    pairs: SharedPairs, queries: list[str], rel_level: int | None = None
) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """Query weights (rows, len(queries)) -> each κ of :class:`LabelAgreement` per row, on pairs already
    shared and mapped (`mapped_pairs`): κ of the confusion matrix Σ_q w_q C_q, with C_q the confusion
    of query q's shared pairs. Uniform weights give κ itself; resample weights its bootstrap over
    queries."""
    labels = grade_range(pairs.reference, pairs.model)
    flat = per_query_confusions(pairs, queries, labels)
    relevant = np.array([label >= rel_level for label in labels]) if rel_level is not None else None

    def statistic(weights: np.ndarray) -> dict[str, np.ndarray]:
        confusions = (weights @ flat).reshape(len(weights), len(labels), len(labels))
        out = {name: kappa_rows(confusions, kind) for name, kind in KAPPAS.items()}
        if relevant is not None:
            binary = np.stack(
                [
                    np.stack([confusions[:, rows][:, :, columns].sum(axis=(1, 2)) for columns in (~relevant, relevant)], axis=1)
                    for rows in (~relevant, relevant)
                ],
                axis=1,
            )
            out["cohen_kappa_binary"] = kappa_rows(binary)
        return out

    return statistic

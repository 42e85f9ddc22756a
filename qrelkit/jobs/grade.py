"""Scores to qrels: one validated grading specification (the job's `grading:` and `qrelkit grade`
build the same model, so they accept and refuse the same things) and four methods.

* ``quantile`` (Yang and Lin, LLM4Eval workshop at SIGIR 2024, §3.3): below the median 0, from the median to the 75th
  percentile 1, from the 75th percentile up 2 — quantiles and labels configurable, within each topic
  (``per_topic``, the default everywhere: job files, ``qrelkit grade`` and this API) or over all
  scores (global). Two rules for tied scores (``ties``):

  ``midrank`` (the default): **ties are never split.** Real judges tie in large blocks (an LLM
  answers 0–3 or 1–100, CLIPScore clamps negatives to 0), so a score is placed by the mid-rank of
  its tied block on the scale numpy's default quantiles use:

      p(s) = (#scores below s + (#scores equal to s − 1) / 2) / (n − 1)      (p = ½ when n = 1)

  and gets labels[k], k = the number of quantiles q with p(s) ≥ q. Without ties p(sᵢ) = i/(n−1),
  and p ≥ q exactly when sᵢ ≥ numpy.quantile(scores, q): the same grades as the seed's rule
  (tested; but for scores one ulp apart, where numpy's interpolated value rounds onto the lower
  one). With ties every equal score gets one grade: six 0.0 and four 3.0 give p(0) = 2.5/9 → 0
  and p(3) = 7.5/9 → 2, where the seed's rule (q50 = 0, q75 = 3) grades the zeros 1. The mid-rank
  over n (Hazen's (i+½)/n) splits nothing either, but does not reproduce numpy's quantile on
  tie-free data (five scores 1..5: q75 = 4 grades two scores 2 by the seed's rule, (i+½)/n grades
  one); docs/grading.md has both.

  ``at-or-above``: seed 003's rule as written: a grade is reached when the score is ≥ its quantile
  value (numpy's default linear quantile). A tied block is kept together too, but it is graded by
  where the quantile value falls, so a block that straddles the median goes up: with half a
  topic's scores at 80 and the median 80, every 80 gets 1 (mid-rank may give 0).
* ``thresholds``: fixed cut points; a score equal to a cut takes the upper label.
* ``identity``: the score already is a grade (an UMBRELA-style judge answering on the qrels'
  scale): it must be an integer, and one of ``labels`` when they are given.
* ``map``: an explicit mapping of scores to grades, single values (``3: 2``) or inclusive ranges
  (``"1-25": 0``); a score the mapping does not cover is an error naming the pair.

A scope (all scores, or one topic) whose scores are all equal, and a grade that no pair of a
scope received, are counted and reported, never silently.
"""

from __future__ import annotations

import logging
import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from qrelkit.errors import QrelkitError
from qrelkit.io import Qrel, Qrels
from qrelkit.io.results import Result
from qrelkit.io.structured import field_problems

ALL_TOPICS = "*"
DEFAULT_LABELS = [0, 1, 2]
GRADE_MIN, GRADE_MAX = -(2**31), 2**31 - 1  # a qrels grade is stored as a 32-bit integer (as trec_eval reads it: a C int)
METHOD_OPTIONS = {"quantile": {"quantiles", "per_topic", "ties"}, "thresholds": {"thresholds"}, "identity": set(), "map": {"map"}}
_RANGE = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(?:-|\.\.)\s*([+-]?\d+(?:\.\d+)?)\s*$")


class GradingError(QrelkitError):
    """A grading specification that does not fit, or scores it cannot grade."""


@dataclass(frozen=True)
class ScoreRange:
    """Scores low..high (inclusive) map to ``grade``; low == high is a single value."""

    low: float
    high: float
    grade: int

    def covers(self, score: float) -> bool:
        return self.low <= score <= self.high


def parse_map_key(key: Any) -> tuple[float, float]:
    """`3` -> (3, 3); `"1-25"` or `"1..25"` -> (1, 25)."""
    if isinstance(key, bool):
        raise ValueError(f"map key {key!r} is not a score or a range")
    if isinstance(key, (int, float)):
        return float(key), float(key)
    text = str(key).strip()
    match = _RANGE.match(text)
    if match:
        low, high = float(match.group(1)), float(match.group(2))
        if low > high:
            raise ValueError(f"map range {text!r} runs backwards")
        return low, high
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"map key {text!r} is not a score or a range LOW-HIGH") from None
    return value, value


class GradingSpec(BaseModel):
    """How to turn a judge run's scores into qrels (see the module docstring): a job file's `grading:`.
    Each option is also a flag of `qrelkit grade`, where its help is (`GradeRequest`, whose field of
    the same name is the option)."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["quantile", "thresholds", "identity", "map"] = "quantile"
    quantiles: list[float] = Field(default_factory=lambda: [0.5, 0.75])
    thresholds: list[float] | None = None
    labels: list[int] | None = None  # default DEFAULT_LABELS
    per_topic: bool = True
    ties: Literal["midrank", "at-or-above"] = "midrank"
    map: dict[str, int] | None = None
    score_from: Literal["score", "parsed", "expected"] = "score"
    name: str | None = None  # default graded-<judge run id>

    @model_validator(mode="before")
    @classmethod
    def _renamed_score(cls, data: Any) -> Any:
        """`score` (0.1.0) is `score_from` now. A job file that still says `score:` is read, with one
        warning naming the new key: job files are shared beside their databases, and a re-run must
        not stop on a rename that changes no judgment (grading is no part of a judge run's identity)."""
        if isinstance(data, dict) and "score" in data:
            if "score_from" in data:
                raise ValueError("give `score_from` alone (`score` is its old name)")
            logging.getLogger("qrelkit").warning(
                "grading: `score` is now `score_from` (which stored score to grade); write score_from: %s", data["score"]
            )
            data = {("score_from" if key == "score" else key): value for key, value in data.items()}
        return data

    @field_validator("score_from", mode="before")
    @classmethod
    def _old_column_name(cls, value: Any) -> Any:
        return "expected" if value == "score_expected" else value  # the column's name before 0.2

    @field_validator("map", mode="before")
    @classmethod
    def _keys_as_text(cls, value: Any) -> Any:
        return {str(k): v for k, v in value.items()} if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _consistent(self) -> GradingSpec:
        given = self.model_fields_set - {"method", "labels", "score_from", "name"}
        if self.method != "quantile" and "per_topic" in given:
            if self.per_topic:
                raise ValueError(f"per_topic does not apply to method {self.method}: it grades every score alike, over all topics (global)")
            given = given - {"per_topic"}  # global: what every method but quantile does anyway
        stray = sorted(given - METHOD_OPTIONS[self.method])
        if stray:
            raise ValueError(f"{', '.join(stray)} do not apply to method {self.method}")
        # fixed cut points may give two intervals one grade (0,1,1) or run downwards (distances: 2,1,0)
        if (
            self.method != "thresholds"
            and self.labels is not None
            and (len(set(self.labels)) != len(self.labels) or self.labels != sorted(self.labels))
        ):
            raise ValueError("labels must be strictly increasing")
        if self.method == "quantile":
            self._check_cuts(self.quantiles)
            if not all(0 < q < 1 for q in self.quantiles):
                raise ValueError("quantiles must lie strictly between 0 and 1")
        elif self.method == "thresholds":
            if not self.thresholds:
                raise ValueError("method `thresholds` needs `thresholds`")
            self._check_cuts(self.thresholds)
        elif self.method == "map":
            if not self.map:
                raise ValueError("method `map` needs `map` (e.g. {3: 2, 2: 2, 1: 1, 0: 0})")
            self.ranges()  # keys parse and do not overlap
        return self

    def _check_cuts(self, cuts: list[float]) -> None:
        if not all(math.isfinite(c) for c in cuts):
            raise ValueError("cut points must be finite numbers")
        if cuts != sorted(cuts) or len(set(cuts)) != len(cuts):
            raise ValueError("cut points must be strictly increasing")
        labels = self.effective_labels()
        if len(labels) != len(cuts) + 1:
            raise ValueError(f"{len(cuts)} cut points need {len(cuts) + 1} labels, got {len(labels)}")

    def effective_labels(self) -> list[int]:
        return list(self.labels) if self.labels is not None else list(DEFAULT_LABELS)

    def ranges(self) -> list[ScoreRange]:
        ranges = sorted((ScoreRange(*parse_map_key(k), int(grade)) for k, grade in (self.map or {}).items()), key=lambda r: (r.low, r.high))
        for before, after in zip(ranges, ranges[1:]):
            if after.low <= before.high:
                raise ValueError(f"map entries {before.low:g}-{before.high:g} and {after.low:g}-{after.high:g} overlap")
        if self.labels is not None:
            unknown = sorted({r.grade for r in ranges} - set(self.labels))
            if unknown:
                raise ValueError(f"map grades {unknown} are not among the labels {self.labels}")
        return ranges

    def describe(self) -> str:
        if self.method == "quantile":
            scope = "within each topic" if self.per_topic else "over all scores"
            return f"quantiles {self.quantiles} {scope}, ties {self.ties}"
        if self.method == "thresholds":
            return "cut points " + ", ".join(f"{c:g}" for c in self.thresholds or [])
        if self.method == "map":
            return "map " + ", ".join(f"{k}:{v}" for k, v in (self.map or {}).items())
        return "identity (the scores are the grades)"


def grading_spec(options: dict[str, Any], *, where: str = "", option_names: dict[str, str] | None = None) -> GradingSpec:
    """Validate grading options, with one error message per problem naming where it came from
    (``where``: "job.yaml: grading", or "" for the command line, where ``option_names`` maps a
    field to its flag)."""
    try:
        return GradingSpec.model_validate(options)
    except ValidationError as exc:
        lines = []
        for loc, message in field_problems(exc, GradingSpec, noun="option"):
            loc = (option_names or {}).get(loc, loc)
            lines.append(f"{where + '.' if where and loc else where}{loc}: {message}" if (where or loc) else message)
        raise GradingError("\n".join(lines)) from None


@dataclass(frozen=True, repr=False)
class GradingResult(Result):
    qrels: Qrels
    thresholds: dict[str, list[float]]  # scope ("*" or a qid) -> cut points in score units (see record)
    description: dict[str, Any]  # the stored grading record
    warnings: list[str] = field(default_factory=list)
    matched_by: str = "id"  # how `--judge-run` found the graded run ("name": say so)
    judge_run_name: str | None = None

    def summary(self) -> str:
        return f"qrels={self.qrels.name!r}, method={self.description.get('method')!r}, grades={self.grade_counts()}"

    def to_dict(self) -> dict[str, Any]:
        return {"qrels": self.qrels.name, "grades": self.grade_counts(), **self.description}

    def to_pandas(self):
        """The graded qrels, one row per (qid, docid, grade); pandas is optional."""
        from qrelkit.io.results import pandas

        pd = pandas()

        return pd.DataFrame([(q.qid, q.docid, q.grade) for q in self.qrels.entries], columns=["qid", "docid", "grade"])

    def grade_counts(self) -> dict[int, int]:
        return dict(sorted(Counter(qrel.grade for qrel in self.qrels.entries).items()))


def quantile_cuts(scores: Sequence[float], quantiles: Sequence[float]) -> list[float]:
    """The quantile values (numpy's default linear interpolation), as the seed reports them."""
    return [float(v) for v in np.quantile(np.asarray(scores, dtype=np.float64), quantiles)]


def label_for(score: float, cuts: Sequence[float], labels: Sequence[int]) -> int:
    """labels[i] where cuts[i-1] <= score < cuts[i]: a score equal to a cut takes the upper label."""
    return labels[bisect_right(cuts, score)]


def tie_aware_labels(scores: np.ndarray, quantiles: Sequence[float], labels: Sequence[int]) -> np.ndarray:
    """Each score's label by the mid-rank percentile of its tied block (module docstring)."""
    n = len(scores)
    ordered = np.sort(scores)
    below = np.searchsorted(ordered, scores, side="left")
    equal = np.searchsorted(ordered, scores, side="right") - below
    # p >= q  <=>  2·below + equal − 1 >= 2·q·(n − 1), in integers on the left
    twice_rank = 2 * below + equal - 1
    if n == 1:
        level = np.array([sum(0.5 >= q for q in quantiles)])
    else:
        level = np.zeros(n, dtype=np.int64)
        for q in quantiles:
            level += twice_rank >= 2.0 * q * (n - 1)
    return np.asarray(labels)[level]


def at_or_above_labels(scores: np.ndarray, cuts: Sequence[float], labels: Sequence[int]) -> np.ndarray:
    """Each score's label by seed 003's rule: labels[k], k = the number of cut values the score is
    at or above (`label_for`, for every score at once)."""
    return np.asarray(labels)[np.searchsorted(np.asarray(cuts, dtype=np.float64), scores, side="right")]


class _Scopes:
    """Groups scores into scopes (all, or per topic) and counts the oddities to report."""

    def __init__(self) -> None:
        self.all_equal: list[str] = []
        self.empty: dict[int, list[str]] = {}

    def check(self, scope: str, scores: np.ndarray, grades: np.ndarray, labels: Sequence[int]) -> None:
        if len(scores) > 1 and scores.min() == scores.max():
            self.all_equal.append(scope)
        present = set(grades.tolist())
        for label in labels:
            if label not in present:
                self.empty.setdefault(label, []).append(scope)

    def warnings(self, total_scopes: int, per_topic: bool) -> list[str]:
        what = "topics" if per_topic else "scope"
        out = []
        if self.all_equal:
            shown = ", ".join(self.all_equal[:5]) + (" ..." if len(self.all_equal) > 5 else "")
            out.append(f"{len(self.all_equal)} of {total_scopes} {what} have all scores equal ({shown}): each got one grade")
        for label, scopes in sorted(self.empty.items()):
            out.append(f"grade {label} is empty in {len(scopes)} of {total_scopes} {what}")
        return out


def grade_scores(scores: Sequence[tuple[str, str, float]], spec: GradingSpec | None = None, *, name: str, **options: Any) -> GradingResult:
    """Grade (qid, docid, score) triples by ``spec`` (or by ``options``, validated into one)."""
    spec = spec or grading_spec(options)
    if not scores:
        raise GradingError("no scores to grade: the judge run has no `ok` judgments yet")
    if spec.method == "quantile":
        return _grade_quantile(scores, spec, name)
    grades = [_grade_one(spec, qid, docid, score) for qid, docid, score in scores]
    labels = spec.effective_labels() if spec.method != "identity" else sorted(set(grades))
    scopes = _Scopes()
    scopes.check(ALL_TOPICS, np.asarray([s for _, _, s in scores]), np.asarray(grades), labels if spec.method == "thresholds" else [])
    thresholds = {ALL_TOPICS: [float(t) for t in spec.thresholds or []]}
    warnings = scopes.warnings(1, False)
    entries = tuple(Qrel(qid, docid, grade) for (qid, docid, _), grade in zip(scores, grades))
    return GradingResult(Qrels(name, entries), thresholds, _record(spec, scores, thresholds, warnings), warnings)


def _grade_one(spec: GradingSpec, qid: str, docid: str, score: float) -> int:
    if spec.method == "thresholds":
        return label_for(score, spec.thresholds or [], spec.effective_labels())
    if spec.method == "identity":
        if not float(score).is_integer():
            raise GradingError(f"pair ({qid}, {docid}): score {score:g} is not an integer grade (method identity); use map or quantile")
        if not GRADE_MIN <= score <= GRADE_MAX:
            raise GradingError(
                f"pair ({qid}, {docid}): score {score:g} is beyond the grades qrels hold (32-bit integers) (method identity); "
                "use map or quantile"
            )
        if spec.labels is not None and int(score) not in spec.labels:
            raise GradingError(f"pair ({qid}, {docid}): score {score:g} is not one of the labels {spec.labels} (method identity)")
        return int(score)
    for entry in spec.ranges():
        if entry.covers(score):
            return entry.grade
    raise GradingError(f"pair ({qid}, {docid}): score {score:g} is not covered by the map {spec.map} (method map)")


def _grade_quantile(scores: Sequence[tuple[str, str, float]], spec: GradingSpec, name: str) -> GradingResult:
    labels = spec.effective_labels()
    by_scope: dict[str, list[int]] = {}
    for i, (qid, _, _) in enumerate(scores):
        by_scope.setdefault(qid if spec.per_topic else ALL_TOPICS, []).append(i)
    values = np.asarray([s for _, _, s in scores], dtype=np.float64)
    grades = np.zeros(len(scores), dtype=np.int64)
    thresholds: dict[str, list[float]] = {}
    lowest: dict[str, dict[int, float]] = {}
    scopes = _Scopes()
    for scope, members in by_scope.items():
        index = np.asarray(members)
        scope_scores = values[index]
        thresholds[scope] = quantile_cuts(scope_scores, spec.quantiles)
        if spec.ties == "at-or-above":
            scope_grades = at_or_above_labels(scope_scores, thresholds[scope], labels)
        else:
            scope_grades = tie_aware_labels(scope_scores, spec.quantiles, labels)
        grades[index] = scope_grades
        lowest[scope] = {int(g): float(scope_scores[scope_grades == g].min()) for g in sorted(set(scope_grades.tolist()))}
        scopes.check(scope, scope_scores, scope_grades, labels)
    warnings = scopes.warnings(len(by_scope), spec.per_topic)
    entries = tuple(Qrel(qid, docid, int(g)) for (qid, docid, _), g in zip(scores, grades))
    record = _record(spec, scores, thresholds, warnings)
    record["lowest_score_per_grade"] = {scope: {str(g): v for g, v in per.items()} for scope, per in lowest.items()}
    return GradingResult(Qrels(name, entries), thresholds, record, warnings)


def _record(
    spec: GradingSpec, scores: Sequence[tuple[str, str, float]], thresholds: dict[str, list[float]], warnings: list[str]
) -> dict[str, Any]:
    """The grading record stored with the qrels set."""
    return {
        "method": spec.method,
        "quantiles": list(spec.quantiles) if spec.method == "quantile" else None,
        "labels": spec.labels if spec.labels is not None or spec.method == "identity" else spec.effective_labels(),
        "per_topic": spec.per_topic and spec.method == "quantile",
        "map": spec.map,
        "score_from": spec.score_from,
        "thresholds": thresholds if spec.method in ("quantile", "thresholds") else None,
        "ties": spec.ties if spec.method == "quantile" else None,
        "n_scores": len(scores),
        "topics": len({qid for qid, _, _ in scores}),
        "warnings": warnings,
    }


def grade_judge_run(store: Any, judge_run_id: str, spec: GradingSpec, *, replace: bool = False, by_job: bool = False) -> GradingResult:
    """Grade a stored judge run's `ok` scores and store the qrels set with its grading record (which
    also says whether the run covers a sample of its pool). ``by_job``: the judge run's job grades,
    so the set is recorded as the one `--judge-run` audits.

    A qrels set that was loaded from a file is never overwritten; one graded earlier is replaced
    only with ``replace`` (a job re-grading its own judge run's set counts as asked)."""
    from qrelkit.storage.judgments import judge_run, ok_scores, record_job_qrels

    info = judge_run(store, judge_run_id)
    name = spec.name or f"graded-{info.judge_run_id}"
    result = grade_scores(ok_scores(store, info.judge_run_id, spec.score_from), spec, name=name)
    description = {**result.description, "judge_run_id": info.judge_run_id, "sample": info.sample}
    store.save_qrels(result.qrels, judge_run_id=info.judge_run_id, grading=description, replace=replace)
    if by_job:
        record_job_qrels(store, info.judge_run_id, name)
    return GradingResult(result.qrels, result.thresholds, description, result.warnings, info.matched_by, info.name)


def _shown(grades: Sequence[float]) -> str:
    consecutive = len(grades) > 2 and all(b - a == 1 for a, b in zip(grades, grades[1:]))
    return f"{grades[0]:g}-{grades[-1]:g}" if consecutive else ", ".join(f"{g:g}" for g in grades)


def template_grade_check(spec: GradingSpec, grade_tokens: Sequence[str], column: str, template_id: str) -> str | None:
    """Whether ``identity`` or ``map`` grading can grade every grade a template asks a judge for
    (``grade_tokens``; ``column``: the judge's parsed grade, or its expected grade Σ g·p(g), a real
    number between them). A grade left out would stop the grading after every judgment was paid for,
    so this is checked first; a line saying what was checked, or GradingError."""
    if spec.method not in ("identity", "map"):
        return None
    try:
        grades = sorted(float(token) for token in grade_tokens)
    except ValueError:
        return None  # grade tokens that are not numbers (e.g. yes/no): nothing to compare before judging
    what = f"template {template_id!r} grades {_shown(grades)}"
    if column == "expected":
        raise GradingError(
            f"method {spec.method} grades single scores, but the expected grade Σ g·p(g) is a real number between the {what}: "
            "grade it by quantile or thresholds, or grade the parsed grade (score: parsed)"
        )
    if spec.method == "identity":
        if spec.labels is None:
            return f"{what}: each is a grade (method identity)"
        missing = [g for g in grades if g not in spec.labels]
        covered_by = f"labels {spec.labels}"
    else:
        ranges = spec.ranges()
        missing = [g for g in grades if not any(r.covers(g) for r in ranges)]
        covered_by = "map"
    if missing:
        raise GradingError(
            f"the {what}, but the {covered_by} leave{'s' if covered_by == 'map' else ''} out {_shown(missing)}: "
            "a judgment with one of them would stop the grading after the judging"
        )
    return f"{what}: every one is covered by the {covered_by}"

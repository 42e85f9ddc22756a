"""What `qrelkit probe` returns: the sample, where a pair counts as relevant, and per probe its judge
run and paired shift (or, for a dry run, what each run would judge). Plain data with its JSON; its
document is `qrelkit.commands.documents.probe`'s."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qrelkit.io.results import Result

if TYPE_CHECKING:
    from qrelkit.commands.requests import ProbeRequest
    from qrelkit.evaluate.probes import ProbeShift
    from qrelkit.jobs.runner import JobReport
    from qrelkit.jobs.spec import JobSpec
    from qrelkit.storage import Store


@dataclass(frozen=True)
class Sample:
    """The pairs probed: ``asked`` of the ``candidates`` (pairs of the job's pool whose grade in the
    ``reference`` qrels is one of ``grades``), spread over the topics by ``seed``."""

    pairs: list[tuple[str, str]]
    candidates: int
    reference: str
    grades: tuple[int, ...]
    asked: int
    seed: int
    pool_pairs: int = 0  # the job's pool the candidates come from
    pool_topics: int = 0

    @property
    def topics(self) -> int:
        return len({qid for qid, _ in self.pairs})

    def record(self) -> dict[str, Any]:
        """What a judge run the probe creates covers, as a sampled job records it (`judge_runs.sample`)."""
        drawn_from = f"qrelkit probe: the pool's pairs graded {', '.join(map(str, self.grades))} in {self.reference}"
        return self._counts() | {"pool_pairs": self.pool_pairs, "pool_topics": self.pool_topics, "drawn_from": drawn_from}

    def to_dict(self) -> dict[str, Any]:
        return self._counts() | {"candidates": self.candidates, "reference": self.reference, "reference_grades": list(self.grades)}

    def _counts(self) -> dict[str, Any]:
        return {"pairs": len(self.pairs), "asked": self.asked, "seed": self.seed, "topics": self.topics}


@dataclass(frozen=True)
class Relevance:
    """Where a pair's score counts as relevant: a score given (``score``), the grade level itself for a
    judge that answers in grades (``grade``), the cut point of that grade in the job's graded qrels
    per topic or overall (``cut points``), or nowhere (``none``: the shares are not given)."""

    rule: str
    rel_level: int
    value: float | None = None
    cuts: dict[str, float] = field(default_factory=dict)
    qrels: str | None = None
    note: str | None = None

    def at(self, qid: str) -> float:
        if self.value is not None:
            return self.value
        return self.cuts.get(qid, self.cuts.get("*", math.nan))

    def describe(self) -> str:
        if self.rule == "score":
            return f"score ≥ {self.value:g} (given)"
        if self.rule == "grade":
            return f"grade ≥ {self.rel_level}"
        if self.rule == "cut points":
            scope = "each topic's" if "*" not in self.cuts else "the"
            return f"score ≥ {scope} cut point of grade {self.rel_level} in {self.qrels}"
        return "not given"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "rel_level": self.rel_level,
            "relevant_at": self.value,
            "qrels": self.qrels,
            "described": self.describe(),
        }


def _cut_points(record: dict[str, Any], rel_level: int) -> dict[str, float] | str:
    """scope -> the lowest score of grade ``rel_level`` or above, or why there is none."""
    thresholds, labels = record.get("thresholds"), record.get("labels")
    if not thresholds or not labels:
        return f"it was graded by {record.get('method')}, which keeps no cut points"
    reached = next((i for i, label in enumerate(labels) if label >= rel_level), None)
    if reached is None:
        return f"none of its grades {labels} reaches {rel_level}"
    return {scope: -math.inf if reached == 0 else float(cuts[reached - 1]) for scope, cuts in thresholds.items()}


def relevance_of(
    store: Store,
    judge_class: type,
    judge_run_id: str,
    rel_level: int,
    relevant_at: float | None,
    grading_name: str | None,
    score_range: Any = None,
) -> Relevance:
    """The rule a probe's shares use (see `Relevance`); ``grading_name``: the set the job grades into;
    ``score_range``: the grades the judge's template asks for (a level above them is never reached)."""
    if relevant_at is not None:
        return Relevance("score", rel_level, float(relevant_at))
    if getattr(judge_class, "needs_template", True):
        top = None if score_range is None else float(score_range[1])
        note = (
            None
            if top is None or rel_level <= top
            else f"the template's grades end at {top:g}: no pair reaches {rel_level}; give --rel-level"
        )
        return Relevance("grade", rel_level, float(rel_level), note=note)
    name = grading_name or f"graded-{judge_run_id}"
    origin = store.qrels_origin(name)
    how = "give --relevant-at SCORE, or judge and grade the whole job first (qrelkit judge JOB), whose cut points then say it"
    if origin is None or origin[0] != "graded" or origin[1] != judge_run_id:
        return Relevance(
            "none", rel_level, note=f"this judge's scores are not grades and its judge run has no graded qrels {name!r}: {how}"
        )
    record = store.qrels_grading(name) or {}
    cuts = _cut_points(record, rel_level)
    if isinstance(cuts, str):
        return Relevance("none", rel_level, qrels=name, note=f"the graded qrels {name!r} give no cut point: {cuts}; {how}")
    note = None
    if record.get("ties") == "midrank":
        note = (
            f"{name} was graded by mid-rank; a probed score counts as relevant at or above the cut point (the quantile value), "
            "which is the same rule wherever scores do not tie"
        )
    return Relevance("cut points", rel_level, cuts=cuts, qrels=name, note=note)


@dataclass(frozen=True)
class ProbeEntry:
    """One probe on the job's judge: its judge run, the pairs looked at and how many of them were not
    `ok` as they are or perturbed (left out), and the shift over the rest."""

    probe: dict[str, Any]  # `Probe.describe()`
    judge_run_id: str
    pairs: int
    not_ok: dict[str, int]
    shift: ProbeShift | None = None
    report: JobReport | None = None
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return str(self.probe["probe"])

    def to_dict(self, judge: str | None = None) -> dict[str, Any]:
        """One probe as `--json` gives it (mean_shift_ci95, pushed_to_relevant_ci95, ...)."""
        from qrelkit.evaluate.bootstrap import describe_intervals

        out: dict[str, Any] = {**self.probe, "judge": judge, "judge_run_id": self.judge_run_id, "sampled": self.pairs}
        out["not_ok"] = dict(self.not_ok)
        shift = self.shift
        found_notes: list[str] = []
        if shift is not None:
            out |= {"pairs": shift.pairs, "queries": shift.queries}
            for name, value in shift.estimates.items():
                out[name] = _finite(value)
                if name in ("mean_shift", "pushed_to_relevant", "share_change", "relevant_before"):
                    found = shift.intervals.get(name)
                    out[f"{name}_ci95"] = None if found is None else [_finite(found.low), _finite(found.high)]
            out |= {"p_value": shift.p_value, "share_p_value": shift.share_p_value}
            out |= {"raised": shift.raised, "lowered": shift.lowered, "unchanged": shift.unchanged}
            out["interval"] = {"method": shift.interval if shift.resamples else None, "level": shift.level, "resamples": shift.resamples}
            out["interval"] |= {"seed": shift.seed, "over": "queries (a pair's query goes with it)"}
            out["interval"]["described"] = describe_intervals(shift.interval, shift.level, shift.queries, shift.resamples, shift.seed)
            out["test"] = {"name": shift.test, "permutations": shift.permutations, "swaps": "each query's pairs, before and after"}
            found_notes = [f"{name}: {found.note}" for name, found in shift.intervals.items() if found is not None and found.note]
        else:
            out["pairs"] = 0
        if self.report is not None:
            out["judged_now"] = self.report.judged
        out["notes"] = [*self.notes, *found_notes]
        return out


def _finite(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else float(value)


@dataclass(frozen=True)
class RunPlan:
    """What one run of a probe job would judge (a dry run): its pairs, those done or failed before,
    those left, and a judge's cost estimate for them."""

    name: str
    judge_run_id: str
    pairs: int
    ok: int
    failed: int
    to_judge: int
    estimate: dict[str, Any] | None = None


@dataclass(repr=False)
class ProbeResult(Result):
    """`qrelkit probe`'s answer (`qrelkit.probe`): ``to_dict()`` is its JSON, ``to_pandas()`` a row per probe."""

    job: str
    judge: str
    model_id: str
    judge_run_id: str
    template_id: str | None
    score_from: str
    sample: Sample | None = None
    relevance: Relevance | None = None
    control: JobReport | None = None
    probes: list[ProbeEntry] = field(default_factory=list)
    plans: list[RunPlan] = field(default_factory=list)
    dry_run: bool = False
    interrupted: bool = False
    control_run_id: str | None = None  # the control run: the sample as it is

    @classmethod
    def for_job(
        cls,
        request: ProbeRequest,
        spec: JobSpec,
        judge: Any,
        sample: Sample,
        relevance: Relevance | None,
        control: Any,
        control_run: str | None = None,
    ) -> ProbeResult:
        template = judge.factory.template
        template_id = template.id if template is not None else None
        found = cls(str(request.job), spec.judge.name, judge.model_id, judge.judge_run_id, template_id, request.score_from)
        return dataclasses.replace(found, sample=sample, relevance=relevance, control=control, control_run_id=control_run)

    def summary(self) -> str:
        if self.dry_run:
            return f"judge={self.judge!r}, dry run: to_judge={sum(p.to_judge for p in self.plans)}"
        shifts = ", ".join(f"{e.name}: {e.shift.mean_shift:+.3g}" if e.shift else f"{e.name}: -" for e in self.probes)
        return f"judge={self.judge!r}, pairs={len(self.sample.pairs) if self.sample else 0}, mean shifts {{{shifts}}}"

    def to_dict(self) -> dict[str, Any]:
        """`qrelkit probe --json`."""
        out: dict[str, Any] = {
            "job": self.job,
            "judge": self.judge,
            "model_id": self.model_id,
            "judge_run_id": self.judge_run_id,
            "control_run_id": self.control_run_id,
            "template_id": self.template_id,
            "score_from": self.score_from,
            "sample": self.sample.to_dict() if self.sample else None,
            "dry_run": self.dry_run,
        }
        if self.dry_run:
            out["runs"] = [vars(plan) for plan in self.plans]
            return out
        out["relevant_at"] = self.relevance.to_dict() if self.relevance else None
        out["unperturbed"] = self.control.to_dict() if self.control else None
        out["probes"] = [entry.to_dict(self.judge) for entry in self.probes]
        out["interrupted"] = self.interrupted
        return out

    def to_pandas(self):
        """One row per probe: the shift, the shares, their intervals (low/high columns), the p-values."""
        from qrelkit.io.results import pandas

        records = []
        for entry in self.probes:
            found = entry.to_dict(self.judge)
            record = {key: value for key, value in found.items() if not isinstance(value, dict | list) or key.endswith("_ci95")}
            for key in [k for k in record if k.endswith("_ci95")]:
                low, high = record.pop(key) or [None, None]
                record[f"{key[:-5]}_low"], record[f"{key[:-5]}_high"] = low, high
            records.append(record)
        return pandas().DataFrame(records)

"""`qrelkit probe`: a job's judge put to gullibility probes (docs/probes.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from qrelkit.commands.fields import option, strings
from qrelkit.commands.requests.judging import JobRequest
from qrelkit.commands.requests.parts import interval_option, resamples_option
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import DEFAULT_PERMUTATIONS, check_resamples, check_seed

DEFAULT_PROBE_SAMPLE = 200


def _grades(value: Any) -> tuple[int, ...]:
    """Each grade once, in the order given (one grade, or any sequence of them)."""
    grades = (value,) if isinstance(value, int) else tuple(int(g) for g in value or ())
    return tuple(dict.fromkeys(grades))


@dataclass(frozen=True)
class ProbeRequest(JobRequest):
    """`qrelkit probe`: can the job's judge be fooled? Judge a sample of the job's pool that the
    reference calls non-relevant as it is and as each probe perturbs it (query terms or an instruction
    injected, padding, truncation, shuffled sentences; text drawn into an image, a blank or noise
    image, crop, scale), then per probe the mean shift of the scores and the share pushed to relevant,
    with paired intervals over queries and a paired randomisation test (docs/probes.md). Resumable:
    a run killed is run again, and nothing judged is judged twice."""

    probes: tuple[str, ...] = option(
        "--probe", "A probe: a built-in id (qrelkit probe --list) or a probe YAML file; repeatable.", (), parse=strings
    )
    sample: int = option("--sample", "Pairs to probe, spread over the topics (stratified, seeded).", DEFAULT_PROBE_SAMPLE)
    seed: int = option("--seed", "Seed of the sample and of the resamples.", 0, parse=check_seed)
    reference: str | None = option(
        "--reference-qrels",
        "Qrels that say which pairs are non-relevant: a set in the job's database or a file "
        "(default: the set the job's pool reads, else its only qrels set).",
        None,
    )
    grades: tuple[int, ...] = option(
        "--grade",
        "Reference grades of the pairs sampled; repeatable (default 0: the non-relevant).",
        (0,),
        parse=lambda v: (0,) if v is None else _grades(v),
    )
    rel_level: int = option("--rel-level", "The grade at which a pair counts as relevant (2 on the TREC DL scale).", 2)
    relevant_at: float | None = option(
        "--relevant-at",
        "The score at which a pair counts as relevant (default: --rel-level for a judge answering grades; for a judge "
        "with scores of its own, the cut point of that grade in the job's graded qrels).",
        None,
    )
    score_from: str = option("--score-from", "Which stored score to compare: score, parsed or expected.", "score")
    resamples: int = resamples_option("Bootstrap resamples of the queries (0: no intervals).")
    permutations: int = option(
        "--permutations", "Random swaps of the randomisation test behind each p-value (0: no test).", DEFAULT_PERMUTATIONS
    )
    interval: str = interval_option()
    dry_run: bool = option("--dry-run", "Only count the calls each run would make (and their cost, where a judge estimates it).", False)
    list_probes: bool = option("--list", "List the built-in probes and what each tests.", False, api=False)

    use_case = "qrelkit.commands.probe:run"
    document = "qrelkit.commands.documents.probe:probe"
    positional = ("job", "probes")

    def check(self) -> None:
        if self.list_probes:
            return
        if self.job is None:
            raise QrelkitError("give the job: qrelkit probe JOB.yaml --probe NAME (or --list for the built-in probes)")
        check_resamples(self.permutations)
        if not self.probes:
            raise QrelkitError("name a probe: --probe NAME (a built-in; `qrelkit probe --list` lists them) or --probe FILE.yaml")
        if self.sample < 1:
            raise QrelkitError(f"--sample must be 1 or more, got {self.sample}")
        if not self.grades:
            raise QrelkitError("--grade: give the reference grades whose pairs are sampled (e.g. 0)")
        if self.score_from not in ("score", "parsed", "expected"):
            raise QrelkitError(f"--score-from {self.score_from!r}: choose score, parsed or expected")
        if self.relevant_at is not None and not math.isfinite(self.relevant_at):
            raise QrelkitError(f"--relevant-at {self.relevant_at}: give a finite score")

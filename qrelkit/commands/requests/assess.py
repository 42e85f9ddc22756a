"""A few human labels beside a judge's: `qrelkit assess plan` (which pairs assessors label),
`qrelkit assess load` (what they return) and `qrelkit estimate` (the runs' measures from both)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qrelkit.commands.fields import Request, option, optional_path
from qrelkit.commands.requests.parts import QrelsRef, RunsRef, force_option, measures_option, qrels_option, runs_option
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import (
    DEFAULT_DESIGN,
    ESTIMATE_DESIGNS,
    check_design,
    check_estimator,
    check_scale,
)

JUDGE_HELP = (
    "The judge's labels of the pool: a judge's qrels or scores file, a qrels set in --db, or a judge run in --db "
    "(its graded qrels); grades on the humans' scale are best (others are read as they are)."
)
DESIGN_NAME_HELP = "The design's name in --db (default: the database's only design)."


def _positive(flag: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise QrelkitError(f"{flag} {value}: give a number of human labels of 1 or more")


@dataclass(frozen=True)
class AssessPlanRequest(Request):
    """`qrelkit assess plan`: choose the pairs human assessors label beside a judge's labels of the whole
    pool, with known inclusion probabilities, and record the design in the database. Designs: whole
    queries, pairs stratified by query, or pairs weighted by how much the measure weighs them and by the
    judge's uncertainty (the default). Writes the file assessors fill in (TSV: query and document text
    where the database holds them) and a TREC qrels template. The same seed gives the same sample, and a
    larger budget keeps the pairs of a smaller one; --next N adds the N pairs that most shrink the
    intervals still undecided, once the labels of the earlier pairs are loaded."""

    judge_qrels: QrelsRef = qrels_option("--judge-qrels", JUDGE_HELP, judge=True)
    runs: RunsRef = runs_option()
    budget: int | None = option("--budget", "How many pairs humans label (a whole-query design: about as many, in whole queries).", None)
    next_pairs: int | None = option(
        "--next", "Add N pairs to the design --name, drawn where the intervals still undecided shrink most.", None
    )
    seed: int = option("--seed", "Seed of the sample (the same seed, the same pairs).", 0)
    design: str = option(
        "--design",
        f"{' | '.join(ESTIMATE_DESIGNS)}; auto (the default): weighted from 500 labels, whole queries below, as qrelkit's "
        "coverage simulation chose (docs/human-budget.md).",
        DEFAULT_DESIGN,
        parse=check_design,
    )
    name: str = option("--name", "The design's name in the database.", "design")
    measure: str = option("--measure", "The measure the weighted design weighs the pairs by (nDCG@10, P@10, AP, RR, ...).", "nDCG@10")
    scale: tuple[int, int] = option("--scale", "The grades assessors give, LOW-HIGH.", "0-3", cli=str, parse=check_scale)
    depth: int = option("--depth", "The pool: the judge's pairs and every run's top DEPTH (pairs the judge lacks are named).", 10)
    out: Path | None = option(
        "--out", "Where to write the pairs for assessors (TSV, a header line, qid and docid first).", None, parse=optional_path
    )
    qrels_out: Path | None = option(
        "--qrels-out",
        "Where to write the TREC qrels template (grade left empty); default: beside --out, as .qrels.",
        None,
        parse=optional_path,
    )
    force: bool = force_option()

    use_case = "qrelkit.commands.assess:plan"
    document = "qrelkit.commands.documents.assess:plan_document"

    def check(self) -> None:
        _positive("--budget", self.budget)
        _positive("--next", self.next_pairs)
        if (self.budget is None) == (self.next_pairs is None):
            raise QrelkitError("give --budget N (a new plan) or --next N (more pairs for a planned design), not both")
        if self.depth < 1:
            raise QrelkitError(f"--depth {self.depth}: give 1 or more")
        if not self.judge_qrels.given:
            raise QrelkitError("give the judge's labels: --judge-qrels FILE_OR_NAME")


@dataclass(frozen=True)
class AssessLoadRequest(Request):
    """`qrelkit assess load`: load the grades assessors returned for a design's planned pairs (TREC qrels, or
    the plan's TSV with its grade column filled) as a human qrels set tied to the design. Every line is
    checked first (a pair outside the design, a missing grade, a grade off the scale, a changed grade: file
    and line); nothing is stored unless the whole file is right."""

    human_qrels: Path = option("HUMAN", "The file assessors returned.", argument=True, parse=Path)
    design: str | None = option("--design", DESIGN_NAME_HELP, None)
    name: str | None = option("--name", "The human qrels set's name (default: DESIGN-human).", None)

    use_case = "qrelkit.commands.assess:load"
    document = "qrelkit.commands.documents.assess:load_document"
    positional = ("human_qrels",)


@dataclass(frozen=True)
class EstimateRequest(Request):
    """`qrelkit estimate`: each run's measures from the judge's labels of the whole pool and the human labels
    of a design's sample: human-only, judge-only and judge-assisted estimates (PPI, PPI++ with its tuned
    lambda, and the design-based estimator of a pair design), each with its 95% interval, the effective
    number of human labels, the differences between runs and the ranking with the pairs told apart."""

    judge_qrels: QrelsRef = qrels_option("--judge-qrels", JUDGE_HELP, judge=True)
    human_qrels: QrelsRef = qrels_option(
        "--human-qrels",
        "The human labels: the file assessors returned (checked as assess load checks it) or a qrels set in --db; "
        "default: the labels loaded for the design.",
    )
    runs: RunsRef = runs_option()
    design: str | None = option("--design", DESIGN_NAME_HELP, None)
    measures: tuple[str, ...] = measures_option()
    estimator: str | None = option(
        "--estimator", "The estimator the answer, the ranking and the differences use (default: the design's, docs/human-budget.md).", None,
        parse=check_estimator,
    )  # fmt: skip

    use_case = "qrelkit.commands.estimate:run"
    document = "qrelkit.commands.documents.estimate:estimate_document"
    positional = ("judge_qrels", "human_qrels", "runs")

    def check(self) -> None:
        if not self.judge_qrels.given:
            raise QrelkitError("give the judge's labels: --judge-qrels FILE_OR_NAME")

"""The audits: `qrelkit agree` and `qrelkit report` (model qrels against reference qrels) and
`qrelkit compare` (several judges against one reference), on one set of shared options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.fields import Request, option, optional_path
from qrelkit.commands.requests.parts import (
    GradeMap,
    GroupPattern,
    QrelsRef,
    RunGroups,
    RunsRef,
    force_option,
    interval_option,
    measure_names,
    measures_option,
    on_duplicate_option,
    parse_group_patterns,
    qrels_option,
    reference_pairs_option,
    reference_qrels_option,
    resamples_option,
    runs_option,
)
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import DEFAULT_MEASURES, DEFAULT_PERMUTATIONS, check_decimals, check_resamples, check_seed
from qrelkit.io.duplicates import OnDuplicate


@dataclass(frozen=True)
class JudgeAudit(Request):
    """What every audit of a judge is asked besides the qrels: the runs, the measures on each side,
    the groups for Relative Δ, the grade maps and cut for κ, and the bootstrap."""

    runs: RunsRef = runs_option()
    reference_name: str | None = option(
        "--reference-name", "What to call the reference qrels in the output (default: the set's name, or FOLDER/FILE).", None
    )
    measures: tuple[str, ...] = measures_option()
    judge_measures: tuple[str, ...] = option(
        "--judge-measure",
        "The judge's own measure, e.g. 'Compat(p=0.9)' against the reference's --measure nDCG@10 (as judge-method "
        "studies do): one for every --measure, or one per --measure; default: the same measure on both sides.",
        (),
        parse=measure_names,
    )
    reference_decimals: int | None = option(
        "--reference-decimals",
        "Rank the systems under the reference by their means as printed to N decimals, as a study that reads "
        "trec_eval's output does (it prints 4: systems equal to 4 decimals tie); default: full precision.",
        None,
    )
    reference_pairs: str | None = reference_pairs_option()
    group_patterns: tuple[GroupPattern, ...] = option(
        "--group",
        "A group for Relative Δ: NAME=REGEX searched in run names; repeatable.",
        (),
        cli=list[str] | None,
        parse=parse_group_patterns,
    )
    groups: RunGroups | None = option(
        "--groups",
        "Groups TSV of runs as FILE[:COLUMN]: a `run` column and grouping columns (header optional); from Python also {group: [runs]}.",
        None,
        cli=str | None,
        parse=RunGroups.parse,
    )
    reference_map: GradeMap | None = option(
        "--map", "Map reference grades for κ, e.g. 3:2,2:2,1:1,0:0.", None, cli=str | None, parse=GradeMap.parse
    )
    model_map: GradeMap | None = option(
        "--map-model", "Map the judge's grades for κ.", None, cli=str | None, parse=lambda spec: GradeMap.parse(spec, "--map-model")
    )
    rel_level: int | None = option("--rel-level", "Also report κ with both sides cut at grade >= LEVEL (after maps).", None)
    resamples: int = resamples_option(
        "Resamples (half-samples for subsampling) of the queries for 95% intervals (0: no intervals; the jackknife draws none)."
    )
    seed: int | None = option("--seed", "Seed of the resamples (and of any sampling).", 0, parse=check_seed)
    interval: str = interval_option()
    on_duplicate: OnDuplicate = on_duplicate_option()

    @property
    def measure_list(self) -> list[str]:
        return list(self.measures or DEFAULT_MEASURES)

    @property
    def maps(self) -> Any:
        """The grade maps κ applies first (`qrelkit.evaluate.labels.GradeMaps`)."""
        from qrelkit.evaluate.labels import GradeMaps

        return GradeMaps(self.reference_map, self.model_map)

    def check(self) -> None:
        from qrelkit.evaluate.audit import measure_pairs

        measure_pairs(self.measure_list, self.judge_measures)  # one judge measure, or one per measure
        check_decimals(self.reference_decimals)


@dataclass(frozen=True)
class ModelAudit(JudgeAudit):
    """Model qrels against reference qrels: κ/α on the shared pairs, τ/ρ/r/τ_AP between the system
    rankings, Relative Δ toward groups, with intervals over queries. ``model_qrels``, once
    made, is the whole reference to the model's qrels, ``judge_run`` included."""

    model_qrels: QrelsRef = qrels_option(
        "--model-qrels",
        "Model qrels: a TREC qrels file, irds:<dataset id>, or a qrels set in --db; with --judge-run, which of its graded sets.",
        judge=True,
    )
    reference_qrels: QrelsRef = reference_qrels_option()
    judge_run: str | None = option(
        "--judge-run",
        "A judge run in --db (id, unique id prefix, or name): the qrels set its job graded (or its only graded set).",
        None,
    )
    partial: bool = option(
        "--partial",
        "Audit the judgments a running job has made so far (the file it writes beside --db), graded as its job grades, "
        "the systems ranked on the pairs judged so far; the output says they are partial.",
        False,
    )

    use_case = "qrelkit.commands.agree:run"
    positional = ("model_qrels", "reference_qrels", "runs")

    def check(self) -> None:
        super().check()
        if not self.reference_qrels.given:
            raise QrelkitError("give the reference qrels: --reference-qrels FILE_OR_NAME")
        if self.reference_name is not None:
            object.__setattr__(self, "reference_qrels", dataclasses.replace(self.reference_qrels, name=self.reference_name))
        if self.partial:
            if self.model_qrels.given:
                raise QrelkitError("--partial audits the running job's judgments so far: give no --model-qrels with it")
            return
        if self.judge_run is not None:
            named = self.model_qrels.ref
            object.__setattr__(self, "model_qrels", QrelsRef(ref=named, judge_run=str(self.judge_run), value=self.model_qrels.value))
        if not self.model_qrels.given:
            raise QrelkitError(
                "give the model qrels: --model-qrels FILE_OR_NAME, or --judge-run ID (with --db), or both (a set of that run)"
            )


@dataclass(frozen=True)
class AuditRequest(ModelAudit):
    """`qrelkit agree`: audit model qrels against reference qrels: Cohen's κ and Krippendorff's α on the
    shared pairs, Kendall τ / Spearman ρ / Pearson r / τ_AP between the system rankings, Relative Δ
    toward groups, with 95% intervals over queries (the jackknife unless --interval bca, percentile or
    subsampling)."""

    document = "qrelkit.commands.documents.audit:agree"


@dataclass(frozen=True)
class ReportRequest(ModelAudit):
    """`qrelkit report`: write one HTML page auditing a judge run (or model qrels from a file): the answer
    first (κ, τ, Δ, coverage, warnings), then the figures, the judge's failures, tokens and cost, and
    its grading."""

    out: Path = option(
        "--out", "Where to write the page: an .html file, or a folder (report.html inside).", None, cli=Path | None, parse=optional_path
    )
    force: bool = force_option()

    use_case = "qrelkit.commands.report:run"
    document = "qrelkit.commands.documents.audit:report_written"

    def check(self) -> None:
        super().check()
        if self.out is None:
            raise QrelkitError("give --out PAGE.html (or a folder) to write the report to")


@dataclass(frozen=True)
class CompareRequest(JudgeAudit):
    """`qrelkit compare`: compare judges against one reference over the same runs: a row per judge (coverage,
    failures, κ, Kendall τ and τ_AP per measure with intervals, cost, time), then the paired
    differences Δτ and Δκ between judges (the same query resamples for both; p from a paired
    randomisation test over queries), the κ between judges, and a note where two judges cannot be
    told apart. Judges and reference take every form `agree` takes (files, stored names, qrels in
    memory); a judge may also be a judge run, or a folder of judgment files."""

    judges: tuple[QrelsRef, ...] = option(
        "--judge",
        "A judge: a judge run in --db (id, prefix or name), a qrels set in --db, a judgment file (integer grades, or "
        "scores: fractional values, read for measures that use only their order), or a folder of judgment files; repeatable.",
        (),
        cli=list[str] | None,
        parse=lambda given: QrelsRef.several(given, judge=True),
    )
    reference: QrelsRef = reference_qrels_option()
    sweep: Path | None = option("--sweep", "A sweep job: every cell is a judge (failed cells shown as failed).", None, parse=optional_path)
    baseline: str | None = option("--baseline", "Compare each judge with this one (its name as shown) only.", None)
    permutations: int = option(
        "--permutations", "Random swaps of the randomisation test behind each p-value (0: no test).", DEFAULT_PERMUTATIONS
    )
    html: Path | None = option("--html", "Also write the comparison as one self-contained HTML page.", None, parse=optional_path)
    force: bool = force_option()

    use_case = "qrelkit.commands.compare:run"
    document = "qrelkit.commands.documents.compare:comparison"
    positional = ("judges", "reference", "runs")
    db_default = None  # the judges' database, or the sweep job's

    def check(self) -> None:
        super().check()
        if not self.reference.given:
            raise QrelkitError("give the reference qrels: --reference-qrels FILE_OR_NAME")
        if self.reference_name is not None:
            object.__setattr__(self, "reference", dataclasses.replace(self.reference, name=self.reference_name))
        check_resamples(self.permutations)
        if not self.judges and self.sweep is None:
            raise QrelkitError("name the judges to compare: --judge NAME (repeatable) and/or --sweep JOB")

"""`qrelkit report`: audit as `qrelkit agree` does, summarise the judge run, write the HTML page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qrelkit.commands import agree
from qrelkit.commands.requests import ReportRequest
from qrelkit.commands.workspace import Workspace, footer
from qrelkit.evaluate.choices import DEFAULT_METHOD

if TYPE_CHECKING:
    from qrelkit.storage import Store


@dataclass(frozen=True)
class JudgeSummary:
    """What a reviewer needs about the judge run behind the model qrels."""

    judge_run_id: str
    judge: str
    model_id: str | None
    config: dict[str, Any]
    template_id: str | None
    template: dict[str, Any] | None
    qrels_set: str | None
    grading: dict[str, Any] | None
    statuses: dict[str, int]
    judgments: int
    tokens_in: int
    tokens_out: int
    cost: float | None
    mean_latency_ms: float | None
    failures: Sequence[Any] = field(default_factory=list)  # a sample (status, qid, docid, answer, error), with the model's raw answers
    scores: list[tuple[str, str, float]] = field(default_factory=list)  # (qid, docid, raw score) of ok judgments
    probes: Sequence[Any] = field(default_factory=list)  # the gullibility probes it was put to (qrelkit.commands.probe_result.ProbeEntry)


def summarize_judge_run(
    store: Store, judge_run: str, qrels_set: str | None = None, *, seed: int | None = 0, interval: str = DEFAULT_METHOD
) -> JudgeSummary:
    """What the report shows about the judge run behind the model qrels (``qrels_set``, the set the
    audit read; by default the one `--judge-run` audits), and the probes it was put to (docs/probes.md)."""
    from qrelkit.commands.probe import ShiftSettings, stored_probe_entries
    from qrelkit.storage import judgments  # DuckDB only for a report from a database

    info = judgments.judge_run(store, judge_run)
    run_id = info.judge_run_id
    totals = judgments.judge_run_totals(store, run_id)
    if qrels_set is None:
        qrels_set = judgments.audit_qrels_name(store, info)
    return JudgeSummary(
        judge_run_id=run_id,
        judge=info.judge,
        model_id=info.model_id,
        config=info.config,
        template_id=info.template_id,
        template=info.template,
        qrels_set=qrels_set,
        grading=store.qrels_grading(qrels_set) if qrels_set is not None else None,
        statuses=judgments.status_counts(store, run_id),
        judgments=totals.judgments,
        tokens_in=totals.tokens_in,
        tokens_out=totals.tokens_out,
        cost=totals.cost,
        mean_latency_ms=totals.mean_latency_ms,
        failures=judgments.failed_sample(store, run_id, limit=10),
        scores=judgments.ok_scores(store, run_id),
        probes=stored_probe_entries(store, run_id, ShiftSettings(seed=seed, interval=interval)),
    )


@dataclass(frozen=True)
class WrittenReport:
    """The page `qrelkit report` wrote (``path``) and what it says (``page``, its Document: the command
    line prints its answer beside the path)."""

    path: Path
    page: Any

    def to_dict(self) -> dict[str, Any]:
        return {"page": str(self.path), "lead": list(self.page.lead), "audit": self.page.data}


def run(request: ReportRequest, workspace: Workspace) -> WrittenReport:
    """`qrelkit report`: audit (as :func:`qrelkit.commands.agree.run`) and write the page; the
    workspace's command is the command line shown at its bottom. Everything is computed before the
    file is written."""
    out = request.out  # an .html file, else a folder: report.html in it
    page = out if out.suffix.lower() in (".html", ".htm") else out / "report.html"
    workspace.check_output(page, force=request.force, refs=(request.model_qrels, request.reference_qrels, request.runs))
    result = agree.run(request, workspace)
    model = result.sources.get("model", {})
    # the judge run behind the model qrels, whether named by --judge-run or by a graded set's name
    judge_run_part = model.get("judge_run") or {}
    graded_from = judge_run_part.get("id") if judge_run_part.get("judge") is not None else None  # None: the run was dropped since
    judge = None
    if graded_from is not None and workspace.has_db:
        judge = summarize_judge_run(workspace.store, graded_from, model["name"], seed=request.seed, interval=request.interval)
    from qrelkit.commands.documents.audit import page as document
    from qrelkit.report.page import write_page

    found = document(result, judge, footer(workspace.command))
    found.blocks = [*found.blocks, *estimate_sections(request, workspace, model.get("name"))]
    return WrittenReport(write_page(found, page), found)


def estimate_sections(request: ReportRequest, workspace: Workspace, judge_name: str | None) -> list[Any]:
    """A section per design planned from the audited judge's labels whose human labels are loaded:
    `qrelkit estimate` on the report's runs (docs/human-budget.md); a design that cannot be estimated
    on them says why in its section."""
    if not workspace.has_db:
        return []
    from qrelkit.commands import estimate
    from qrelkit.commands.documents.estimate import estimate_document
    from qrelkit.commands.requests import EstimateRequest
    from qrelkit.errors import QrelkitError
    from qrelkit.report.document import Paragraph, Section
    from qrelkit.storage.designs import design_names, read_design

    sections = []
    for name in design_names(workspace.store):
        design = read_design(workspace.store, name)
        if design.human_set is None or design.judge.get("name") != judge_name:
            continue
        title = f"Estimates from the human sample of design {name!r} ({design.budget:,} pairs planned)"
        try:
            asked = EstimateRequest(judge_qrels=request.model_qrels, runs=request.runs, design=name)
            shown = estimate_document(estimate.run(asked, workspace))
        except QrelkitError as exc:
            sections.append(Section(title, [Paragraph(f"not estimated on this report's runs: {exc}")], key=f"estimates-{name}"))
            continue
        notes = Paragraph("\n".join(note.line() for note in shown.notes)) if shown.notes else None
        sections.append(Section(title, [Paragraph(shown.lead[0]), *shown.blocks, *([notes] if notes else [])], key=f"estimates-{name}"))
    return sections

"""`qrelkit probe JOB.yaml --probe NAME`: can the job's judge be fooled? A sample of the job's pool
that the reference qrels call non-relevant, each pair judged as it is (the probes' control run: the
job's judge under an identity of its own, so the job's judge run keeps covering its pool or its one
sample) and as each probe perturbs it (a judge run of its own per probe: the probe in its identity,
each perturbed copy stored and hashed), then the paired shifts (`qrelkit.evaluate.probes`). Killed,
it resumes where it stopped: copies are made the same again (the probe's seed fixes them), and only
pairs without an `ok` judgment are judged."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.judging import load_judging_job
from qrelkit.commands.probe_plan import dry_run
from qrelkit.commands.probe_result import ProbeEntry, ProbeResult, Relevance, Sample, relevance_of
from qrelkit.commands.probe_sample import (
    CONTROL,
    Judge,
    ProgressFor,
    choose_sample,
    collection,
    control_run_id,
    copies_folder,
    make_copies,
    probe_record,
    probe_run_id,
    reference_qrels,
    runs_of,
)
from qrelkit.commands.requests import ProbeRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import DEFAULT_METHOD, DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES
from qrelkit.jobs.plan import load_collection, resolve_judge
from qrelkit.jobs.report import JobStopped, ProgressCallback
from qrelkit.jobs.runner import JobReport, run_job
from qrelkit.jobs.spec import JobSpec
from qrelkit.probes import Probe, builtin_probes, load_probes
from qrelkit.storage import Store
from qrelkit.storage.perturbations import paired_judgments, save_copies, stored_copies

__all__ = ["CONTROL", "builtin_probes", "probe_record", "probe_run_id", "run", "stored_probe_entries"]


def prepare(request: ProbeRequest, spec: JobSpec, probes: list[Probe], judge: Judge, workspace: Workspace) -> tuple[Sample, Relevance]:
    """Load the job's collection, draw the sample, store every probe's copies of it (those that
    changed: the same seed makes the same copies), and say where a pair counts as relevant."""
    with Store(spec.database) as store:
        load_collection(store, spec)
        sample = choose_sample(store, spec, reference_qrels(store, spec, request, workspace), request)
        found = collection(store, sample.pairs)
        for probe in probes:
            run_id = probe_run_id(judge.judge_run_id, probe)
            rows = make_copies(probe, sample.pairs, found, copies_folder(spec.database, run_id))
            earlier = stored_copies(store, run_id)
            save_copies(store, run_id, [row for row in rows if earlier.get((row.qid, row.docid)) != row])
        template = judge.factory.template
        grading = spec.grading.name if spec.grading else None
        scale = template.score_range if template is not None else None
        relevance = relevance_of(store, judge.judge_class, judge.judge_run_id, request.rel_level, request.relevant_at, grading, scale)
    return sample, relevance


# -- judging and the statistics --------------------------------------------------------------------


def rounds(pairs: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The pairs cut so that no round holds a document twice. A probe's copy of a document depends
    on its topic (the query drawn into an image, injected into a passage), and a judge may keep
    what it computed of a document by its id for the rest of its run (CLIPScore's image vectors,
    the bi-encoder's passage vectors): each round is a judge of its own, which sees one copy of each."""
    seen: Counter[str] = Counter()
    cut: list[list[tuple[str, str]]] = []
    for qid, docid in sorted(pairs):
        if seen[docid] == len(cut):
            cut.append([])
        cut[seen[docid]].append((qid, docid))
        seen[docid] += 1
    return cut


def merged(reports: list[JobReport]) -> JobReport:
    """One report for a run judged in rounds: its counts summed."""
    first = reports[0]
    total = JobReport(
        first.judge_run_id, *(sum(getattr(r, name) for r in reports) for name in ("pairs", "already_ok", "already_failed", "to_judge"))
    )
    total.judged = sum(r.judged for r in reports)
    total.statuses = dict(sum((Counter(r.statuses) for r in reports), Counter()))
    total.interrupted = any(r.interrupted for r in reports)
    total.seconds = sum(r.seconds for r in reports)
    return total


def overall(progress: ProgressCallback | None, offset: int, size: int, total: int) -> ProgressCallback | None:
    """The progress of one run of ``size`` pairs among several, reported as the progress of all
    ``total`` of them (``offset`` in the runs before it): the bar's count, rate and time left are over
    every run's pairs (`qrelkit probe`: the control run, then each probe's); pairs a run had judged
    before count as done from its start."""
    if progress is None:
        return None
    return lambda done, to_judge: progress(offset + (size - to_judge) + done, total)


def judge_all(
    request: ProbeRequest, spec: JobSpec, probes: list[Probe], judge: Judge, sample: Sample, progress_for: ProgressFor
) -> dict[str, JobReport]:
    """Judge the sample as it is, then as each probe perturbs it (in `rounds`); stop after a run that
    was interrupted."""
    reports: dict[str, JobReport] = {}
    spec = spec.model_copy(update={"grading": None, "sample": None})  # a probe grades nothing, and judges its own sample
    runs = list(runs_of(probes, judge))
    total = len(runs) * len(sample.pairs)  # each run judges the sample once (in rounds or not)
    offset = 0
    for k, (name, run_judge, record) in enumerate(runs, 1):
        done: list[JobReport] = []
        parts = [sample.pairs] if name == CONTROL else rounds(sample.pairs)
        for number, pairs in enumerate(parts, 1):
            what = "the sample as it is" if name == CONTROL else f"probe {k - 1} of {len(runs) - 1}: {name}"
            shown = what if len(parts) == 1 else f"{what}, round {number} of {len(parts)}"
            with progress_for(f"{shown} (pairs of all {len(runs)} runs)") as progress:
                part = overall(progress, offset, len(pairs), total)
                options: dict[str, Any] = dict(probe=record, retry_failed=request.retry_failed, progress=part)
                done.append(run_job(spec, judge=run_judge, pairs=pairs, pairs_sample=sample.record(), **options))
            offset += len(pairs)
            if done[-1].interrupted:
                break
        reports[name] = merged(done)
        if reports[name].mostly_failed:  # `judge`'s rule: a judge that fails most pairs is broken, not probed
            later = "; the probes' copies were not judged" if name == CONTROL else ""
            raise JobStopped(f"probing {spec.source or 'the job'} [{name}]: {reports[name].failure_message()}{later}", reports[name])
        if reports[name].interrupted:
            break
    return reports


@dataclass(frozen=True)
class ShiftSettings:
    """How a probe's statistics are computed: which stored score, and the resampling (a request's, or a page's)."""

    score_from: str = "score"
    resamples: int = DEFAULT_RESAMPLES
    permutations: int = DEFAULT_PERMUTATIONS
    seed: int | None = 0
    interval: str = DEFAULT_METHOD


def entry_for(
    store: Store,
    settings: ShiftSettings,
    judge_run_id: str,
    probe_run: str,
    described: dict[str, Any],
    pairs: Any,
    relevance: Relevance,
    report: JobReport | None = None,
) -> ProbeEntry:
    """One probe's statistics: ``probe_run``'s judgments of ``pairs`` (every pair it judged, when
    None) against ``judge_run_id``'s, on the pairs both judged `ok`."""
    from qrelkit.evaluate.probes import probe_shift

    found = paired_judgments(store, judge_run_id, probe_run, settings.score_from, pairs)
    usable = [
        i
        for i, (b, a, sb, sa) in enumerate(zip(found.before_status, found.after_status, found.before, found.after))
        if b == "ok" and a == "ok" and sb is not None and sa is not None
    ]
    missing = {"unperturbed": sum(s != "ok" for s in found.before_status), "perturbed": sum(s != "ok" for s in found.after_status)}
    if not usable:
        note = "no pair has an `ok` judgment both as it is and perturbed: nothing to compare"
        return ProbeEntry(described, probe_run, len(found.qids), missing, report=report, notes=(note,))
    qids = [found.qids[i] for i in usable]
    shift = probe_shift(
        qids,
        [found.before[i] for i in usable],  # type: ignore[misc]
        [found.after[i] for i in usable],  # type: ignore[misc]
        [relevance.at(q) for q in qids],
        resamples=settings.resamples,
        permutations=settings.permutations,
        seed=settings.seed,
        interval=settings.interval,
    )
    return ProbeEntry(described, probe_run, len(found.qids), missing, shift, report, tuple(shift.notes))


def run(request: ProbeRequest, workspace: Workspace) -> list[Probe] | ProbeResult:
    """`qrelkit probe`: the built-in probes (--list), or the job's judge put to the probes the request
    names, each run's progress shown as the workspace shows it; ``workspace`` is that of the job's
    database (read once everything is judged: its store is opened only then)."""
    if request.list_probes:
        return builtin_probes()
    spec = load_judging_job(request)  # with --set; its grading and its own sample play no part in a probe
    if spec.judge.options.get("mode") == "batch":
        raise QrelkitError(
            f"{request.job}: judge.options.mode: a probe judges its copies live; set mode: sync (--set judge.options.mode=sync)"
        )
    if workspace.db is not None and workspace.db.resolve() != spec.database.resolve():
        raise QrelkitError(f"{request.job} writes {spec.database}, but the database given is {workspace.db}: give one database")
    workspace.db = spec.database  # the probe runs in the job's database
    probes = load_probes(request.probes)
    judge: Judge = resolve_judge(spec)
    if request.dry_run:
        return dry_run(request, spec, probes, judge, workspace)
    sample, relevance = prepare(request, spec, probes, judge, workspace)
    name = request.job.name if isinstance(request.job, Path) else "job"
    reports = judge_all(request, spec, probes, judge, sample, lambda run: workspace.progress(f"probing {name} [{run}]"))
    control = control_run_id(judge.judge_run_id)
    result = ProbeResult.for_job(request, spec, judge, sample, relevance, reports.get(CONTROL), control)
    settings = ShiftSettings(request.score_from, request.resamples, request.permutations, request.seed, request.interval)
    for probe in probes:
        if probe.id in reports:
            run_id = probe_run_id(judge.judge_run_id, probe)
            found = entry_for(workspace.store, settings, control, run_id, probe.describe(), sample.pairs, relevance, reports[probe.id])
            result.probes.append(found)
    result.interrupted = any(report.interrupted for report in reports.values())
    return result


def stored_probe_entries(
    store: Store, judge_run_id: str, settings: ShiftSettings = ShiftSettings(), *, rel_level: int = 2
) -> list[ProbeEntry]:
    """The probes a judge run was put to, from what the database holds (for the audit report and the
    comparison page): each probe's run on every pair it judged, against its control run's judgments."""
    from qrelkit.judges import judge_class
    from qrelkit.storage.judgments import audit_qrels_name, judge_run
    from qrelkit.storage.perturbations import probe_runs

    runs = probe_runs(store, judge_run_id)
    controls = [run for run in runs if (run.probe or {}).get("perturbation") is None]
    if not controls:
        return []
    info = controls[0]  # the job's judge, options, template and model: the control run is of the same judge
    try:
        cls: type = judge_class(info.judge)
    except QrelkitError:  # a judge this install cannot name (an imported module's): no relevance level
        cls = type("Unknown", (), {"needs_template": False})
    try:
        graded: str | None = audit_qrels_name(store, judge_run(store, judge_run_id))
    except QrelkitError:  # not judged itself, no graded set, or several and none its job's: the shares say they cannot be given
        graded = None
    relevance = relevance_of(store, cls, judge_run_id, rel_level, None, graded, (info.template or {}).get("score_range"))
    entries = []
    for run in runs:
        record = run.probe or {}
        if record.get("perturbation") is None:
            continue
        described = {key: value for key, value in record.items() if key not in ("perturbs", "control")}
        control = record.get("control", info.judge_run_id)
        entries.append(entry_for(store, settings, control, run.judge_run_id, described, None, relevance))
    return entries

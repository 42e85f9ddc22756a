"""`qrelkit compare`: several judges (judge runs, qrels sets, qrels files, qrels in memory, or the
cells of a sweep job) against one reference, over the same runs: each judge's row as `agree` gives
it, what its judge run cost, and the paired differences (`qrelkit.evaluate.compare`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.commands.agree import audit_options, ranking_pairs
from qrelkit.commands.requests import CompareRequest, JudgeRequest, QrelsRef
from qrelkit.commands.workspace import ResolvedQrels, Workspace, footer, stored_qrels
from qrelkit.errors import QrelkitError, StoreError
from qrelkit.evaluate.compare import Comparison, compare_judges
from qrelkit.io.results import Result


@dataclass(frozen=True)
class JudgeCost:
    """What a judge run did and cost, from its judgments (None where it is not known)."""

    judge_run_id: str
    judge: str
    model_id: str | None
    template_id: str | None
    statuses: dict[str, int]
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    seconds: float | None  # first to last judgment written

    @property
    def judgments(self) -> int:
        return sum(self.statuses.values())

    @property
    def failed(self) -> int:
        return sum(n for status, n in self.statuses.items() if status != "ok")

    @property
    def pairs_per_second(self) -> float | None:
        return self.judgments / self.seconds if self.seconds else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge_run_id": self.judge_run_id,
            "judge": self.judge,
            "model_id": self.model_id,
            "template_id": self.template_id,
            "statuses": self.statuses,
            "judgments": self.judgments,
            "failed": self.failed,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
            "seconds": self.seconds,
            "seconds_are": "first to last judgment written",
            "pairs_per_second": self.pairs_per_second,
        }


@dataclass(frozen=True)
class JudgeEntry:
    """One judge of the comparison: its name, what its qrels are, its judge run's cost, and whether it
    could be compared (a failed or ungraded sweep cell cannot)."""

    name: str
    status: str  # compared | not compared | failed | not graded | not judged
    source: dict[str, Any] = field(default_factory=dict)
    cost: JudgeCost | None = None
    note: str | None = None


@dataclass(frozen=True, repr=False)
class CompareResult(Result):
    comparison: Comparison | None  # None when no judge could be compared
    entries: list[JudgeEntry]
    reference: dict[str, Any]
    probes: dict[str, list[Any]] = field(default_factory=dict)  # judge -> the gullibility probes its judge run was put to

    def summary(self) -> str:
        """One line (the repr): the judges, the reference, what was compared; `verdict()` says the answer."""
        compared = sum(1 for e in self.entries if e.status == "compared")
        differences = len(self.comparison.differences) if self.comparison is not None else 0
        return (
            f"judges={[e.name for e in self.entries]!r}, reference={self.reference.get('name')!r}, compared={compared}, "
            f"differences={differences}"
        )

    def verdict(self) -> list[str]:
        """The answer in sentences, as every output leads with it: for every two judges, whose labels
        and whose system ranking are better, by how much and how sure."""
        from qrelkit.commands.documents.compare import pairwise

        return pairwise(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`qrelkit compare --json`): each judge's full audit as `agree --json` gives it."""
        from qrelkit.commands.documents.compare import caveats, lead
        from qrelkit.evaluate.audit import audit_to_dict

        comparison = self.comparison
        audits = comparison.audits if comparison else {}
        judges = [
            {
                "name": e.name,
                "status": e.status,
                "note": e.note,
                "source": e.source,
                "cost": e.cost.to_dict() if e.cost else None,
                "audit": audit_to_dict(audits[e.name]) if e.name in audits else None,
            }
            for e in self.entries
        ]
        out: dict[str, Any] = {"verdict": lead(self), "verdict_notes": caveats(self), "pairwise": self.verdict()}
        out |= {"reference": self.reference, "judges": judges, "differences": [], "kappa_between_judges": {}, "notes": []}
        if comparison is not None:
            out["differences"] = [difference_to_dict(d, comparison) for d in comparison.differences]
            out["kappa_between_judges"] = comparison.kappa_matrix
            out["notes"] = list(comparison.notes)
            out["bootstrap"] = {
                "method": comparison.interval if comparison.resamples else None,
                "level": comparison.level,
                "resamples": comparison.resamples,
                "seed": comparison.seed,
                "over": "queries; the same resamples for every judge and every statistic (paired)",
            }
            out["test"] = {
                "name": comparison.test,
                "permutations": comparison.permutations,
                "p_value": "(1 + swaps with |Δ*| ≥ |Δ|) / (1 + swaps)",
                "why": "resampled τ is biased low, so a p-value read off the bootstrap would test a shifted distribution",
            }
            out["baseline"] = comparison.baseline
        if self.probes:
            out["probes"] = {judge: [entry.to_dict(judge) for entry in entries] for judge, entries in self.probes.items()}
        return out

    def to_pandas(self):
        """One row per judge (failed ones too): κ, each measure's τ and τ_AP with interval ends, cost."""
        import pandas as pd

        return pd.DataFrame([entry_record(entry, self.comparison) for entry in self.entries])

    def differences_to_pandas(self):
        """One row per paired difference: first, second, statistic, measure, estimate, interval, p."""
        import pandas as pd

        rows = []
        for d in self.comparison.differences if self.comparison is not None else []:
            found = difference_to_dict(d, self.comparison)
            low, high = found.pop("ci") or [None, None]
            rows.append({**found, "low": low, "high": high})
        return pd.DataFrame(rows)


def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def difference_to_dict(d: Any, comparison: Comparison) -> dict[str, Any]:
    return {
        "first": d.first,
        "second": d.second,
        "difference": f"{d.first} − {d.second}",
        "statistic": d.statistic,
        "measure": d.measure,
        "estimate": _number(d.estimate),
        "ci": None if d.interval is None else [_number(d.interval.low), _number(d.interval.high)],
        "level": comparison.level,
        "interval_method": d.interval.method if d.interval else None,
        "interval_note": d.interval.note if d.interval else None,
        "p_value": d.p_value,
        "test": comparison.test,
        "permutations": d.permutations,
        "queries": d.queries,
        "indistinguishable": d.indistinguishable(comparison.alpha),
    }


def entry_record(entry: JudgeEntry, comparison: Comparison | None) -> dict[str, Any]:
    """One flat record of a judge (a pandas row)."""
    record: dict[str, Any] = {"judge": entry.name, "status": entry.status}
    found = comparison.audits.get(entry.name) if comparison else None
    if found is not None:
        labels = found.labels
        kappa = labels.intervals.get("cohen_kappa")
        record |= {"queries": len(found.queries), "pairs": labels.model_pairs, "shared_pairs": labels.shared_pairs}
        record |= {"kappa": labels.cohen_kappa, "kappa_low": kappa.low if kappa else None, "kappa_high": kappa.high if kappa else None}
        record |= {"kappa_linear": labels.cohen_kappa_linear, "kappa_quadratic": labels.cohen_kappa_quadratic}
        for measure, corr in found.systems.items():
            for statistic in ("kendall_tau", "tau_ap"):
                interval = corr.intervals.get(statistic)
                record[f"{statistic} {measure}"] = getattr(corr, statistic)
                record[f"{statistic} {measure} low"] = interval.low if interval else None
                record[f"{statistic} {measure} high"] = interval.high if interval else None
    if entry.cost is not None:
        cost = entry.cost
        record |= {"judgments": cost.judgments, "failed": cost.failed, "cost_usd": cost.cost_usd}
        record |= {
            "tokens_in": cost.tokens_in,
            "tokens_out": cost.tokens_out,
            "seconds": cost.seconds,
            "pairs_per_s": cost.pairs_per_second,
        }
    record["note"] = entry.note
    return record


def stored_cost(store: Any, judge_run_id: str) -> JudgeCost:
    from qrelkit.storage import judgments

    info = judgments.judge_run(store, judge_run_id)
    totals = judgments.judge_run_totals(store, info.judge_run_id)
    return JudgeCost(
        info.judge_run_id,
        info.judge,
        info.model_id,
        info.template_id,
        judgments.status_counts(store, info.judge_run_id),
        totals.tokens_in,
        totals.tokens_out,
        totals.cost,
        None if info.judge == "imported" else judgments.judging_span_seconds(store, info.judge_run_id),  # imported: not judged here
    )


def _is_judge_run(workspace: Workspace, ref: Any) -> bool:
    if not isinstance(ref, str) or not workspace.has_db or Path(ref).is_file():
        return False
    from qrelkit.storage import judgments

    try:
        judgments.judge_run(workspace.store, ref)
    except StoreError:
        return False
    if ref in workspace.store.qrels_names():
        raise QrelkitError(f"{ref!r} names both a judge run and a qrels set in {workspace.db}: give the judge run's id, or the set's file")
    return True


def resolve_judge(ref: QrelsRef, workspace: Workspace) -> ResolvedQrels:
    """A judge run (its audited set: the one its job graded), a qrels set, a judgment file (integer
    grades, or a judge's scores: `qrelkit.io.judge_files`), or qrels in memory."""
    if _is_judge_run(workspace, ref.ref) and ref.value is None:
        return workspace.judge_run_qrels(str(ref.ref))
    return workspace.qrels_with_source(ref)


def resolve_judges(refs: tuple[QrelsRef, ...], workspace: Workspace) -> list[ResolvedQrels]:
    """Every judge named, a folder standing for each judgment file in it; judges from files that
    would share a name (`qrels` in two folders) are named by FOLDER/FILE instead, judges in memory
    that would share one (two dicts: `qrels`) by their place among the judges."""
    from qrelkit.io.judge_files import judgment_files

    found: list[ResolvedQrels] = []
    for ref in refs:
        if ref.ref is not None and Path(ref.ref).is_dir():
            found += [resolve_judge(QrelsRef.of(str(path), judge=True), workspace) for path in judgment_files(ref.ref)]
        else:
            found.append(resolve_judge(ref, workspace))
    names = [r.qrels.name for r in found]
    clashing = [r for r in found if names.count(r.qrels.name) > 1 and r.source.get("origin") == "file"]
    for resolved, label in zip(clashing, path_labels([Path(r.source["path"]) for r in clashing])):
        resolved.qrels.name = resolved.source["name"] = label
    for place, resolved in enumerate(found, 1):
        if resolved.source.get("origin") == "memory" and names.count(resolved.qrels.name) > 1:
            resolved.qrels.name = resolved.source["name"] = f"{resolved.qrels.name} #{place}"
    return found


def path_labels(paths: list[Path]) -> list[str]:
    """The shortest tails of ``paths`` (FOLDER/FILE, then more folders) that tell them apart."""
    resolved = [path.resolve() for path in paths]
    for depth in range(2, max((len(p.parts) for p in resolved), default=2) + 1):
        labels = ["/".join(p.parts[-depth:]) for p in resolved]
        if len(set(labels)) == len(labels):
            return labels
    return [str(p) for p in resolved]


def _entry(resolved: ResolvedQrels, workspace: Workspace) -> JudgeEntry:
    note = "; ".join(resolved.source.get("notes") or []) or None  # repeated pairs merged: said, never silent
    run_dropped = (resolved.source.get("judge_run") or {}).get("judge") is None  # its judge run was dropped since
    if resolved.judge_run_id is None or not workspace.has_db or run_dropped:
        return JudgeEntry(resolved.qrels.name, "compared", resolved.source, note=note)  # a file, a loaded set: no judge run to cost
    return JudgeEntry(resolved.qrels.name, "compared", resolved.source, stored_cost(workspace.store, resolved.judge_run_id), note)


def sweep_entries(request: CompareRequest, db: Path | None) -> list[tuple[JudgeEntry, ResolvedQrels | None]]:
    """Every cell of the sweep job: its graded set when it has one, else why not (failed, not graded,
    not judged), from what the database holds."""
    from qrelkit.storage import Store, judgments

    cells = _sweep_cells(request)
    if cells is None:
        raise QrelkitError(f"--sweep {request.sweep}: this job has no sweep:")
    database = cells[0][1].database
    if db is not None and db.resolve() != database.resolve():
        raise QrelkitError(f"--sweep {request.sweep} writes {database}, but --db is {db}: give one database")
    if not database.exists():
        raise QrelkitError(f"--sweep {request.sweep}: its database {database} does not exist yet: run qrelkit judge {request.sweep} first")
    out: list[tuple[JudgeEntry, ResolvedQrels | None]] = []
    with Store(database, read_only=True) as store:
        known = set(judgments.judge_run_ids(store))
        for cell, spec, judge in cells:
            judge_run_id = judge.judge_run_id
            values = {"cell": cell.name, "judge_run_id": judge_run_id, **cell.values}
            if judge_run_id not in known:
                out.append((JudgeEntry(cell.name, "not judged", values, note="no judge run in the database"), None))
                continue
            cost = stored_cost(store, judge_run_id)
            origin = store.qrels_origin(cell.name)
            if spec.grading is not None and origin is not None and origin[:2] == ("graded", judge_run_id):
                out.append((JudgeEntry(cell.name, "compared", values, cost), stored_qrels(store, cell.name)))
                continue
            sample = judgments.failed_sample(store, judge_run_id, limit=1)
            reason = f"; e.g. {sample[0].status}: {sample[0].error}" if sample else ""
            status = "failed" if cost.failed or not cost.judgments else "not graded"
            if not cost.judgments:
                note = "no judgment saved: its judge stopped before the first answer (`qrelkit judge` on the sweep says why)"
            elif cost.failed:
                note = f"no graded qrels: {cost.failed} of {cost.judgments} judgments failed{reason}"
            else:
                note = f"no graded qrels: {cost.judgments} judgments, all ok; run the sweep again to grade it"
            out.append((JudgeEntry(cell.name, status, values, cost, note), None))
    return out


def run(request: CompareRequest, workspace: Workspace) -> CompareResult:
    """Resolve the judges, the reference, the runs and the groups in the workspace's database (for a
    sweep, the job's, when none is given), then :func:`compare_judges`."""
    if workspace.db is None and request.sweep is not None:  # the sweep job's database, where names are looked up
        cells = _sweep_cells(request)
        workspace.db = None if cells is None else cells[0][1].database
    if request.html is not None:  # before anything is computed: never over an input, an existing page only with --force
        files = {"--groups": request.groups.file.path if request.groups and request.groups.file else None, "--sweep": request.sweep}
        workspace.check_output(request.html, force=request.force, refs=(request.reference, *request.judges, request.runs), files=files)
    found: list[tuple[JudgeEntry, ResolvedQrels | None]] = [(_entry(r, workspace), r) for r in resolve_judges(request.judges, workspace)]
    if request.sweep is not None:
        workspace.close()  # the sweep's entries read the database on their own
        found += sweep_entries(request, workspace.db)
    reference = workspace.qrels_with_source(request.reference)
    runs = workspace.runs(request.runs)
    probes = probes_of([entry for entry, _ in found], workspace, request)
    workspace.close()
    compared = [resolved.qrels for entry, resolved in found if entry.status == "compared" and resolved is not None]
    ranking = {
        resolved.qrels.name: ranking_pairs(request.reference_pairs, resolved.source) for _, resolved in found if resolved is not None
    }
    comparison = None
    if compared:
        options = audit_options(request, runs)
        comparison = compare_judges(
            compared, reference.qrels, runs, baseline=request.baseline, permutations=request.permutations, ranking=ranking, **options
        )
    entries = [entry for entry, _ in found]
    if comparison is not None and comparison.skipped:
        if not comparison.audits:  # nothing left to compare: refuse, naming every judge and why
            why = "; ".join(f"{name} {reason}" for name, reason in comparison.skipped.items())
            raise QrelkitError(f"no judge could be compared: {why}")
        entries = [_not_compared(entry, comparison.skipped.get(entry.name)) for entry in entries]
    result = CompareResult(comparison, entries, reference.source, probes)
    if request.html is not None:
        from qrelkit.commands.documents.compare import comparison as document
        from qrelkit.report.page import write_page

        page = document(result, request)
        page.footer = footer(workspace.command)
        write_page(page, request.html)
    return result


def _not_compared(entry: JudgeEntry, why: str | None) -> JudgeEntry:
    if why is None:
        return entry
    return dataclasses.replace(entry, status="not compared", note="; ".join(n for n in (why, entry.note) if n))


def probes_of(entries: list[JudgeEntry], workspace: Workspace, request: CompareRequest) -> dict[str, list[Any]]:
    """Each judge run's gullibility probes (docs/probes.md), by judge, where it was put to any."""
    if not workspace.has_db:
        return {}
    from qrelkit.commands.probe import ShiftSettings, stored_probe_entries

    settings = ShiftSettings(resamples=request.resamples, permutations=request.permutations, seed=request.seed, interval=request.interval)
    found = {}
    for entry in entries:
        if entry.cost is not None:
            probes = stored_probe_entries(workspace.store, entry.cost.judge_run_id, settings)
            if probes:
                found[entry.name] = probes
    return found


def _sweep_cells(request: CompareRequest) -> list[Any] | None:
    """The cells of the sweep job (`load_cells`), or None for a job without `sweep:`."""
    from qrelkit.commands.sweep import load_cells
    from qrelkit.jobs.sweep import read_sweep

    assert request.sweep is not None
    sweep = read_sweep(request.sweep)
    return None if sweep is None else load_cells(JudgeRequest(job=request.sweep), sweep)

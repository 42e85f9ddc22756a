"""Documents of `qrelkit resample` (interpolation and extrapolation, Zhan et al., CIKM 2022)."""

from __future__ import annotations

from typing import Any

from qrelkit.evaluate.interex import ReSTrainEvaluation, ReSTrainSplit, ReSTTestEvaluation
from qrelkit.evaluate.interex.regimes import INTERVAL_METHOD
from qrelkit.report.document import Document, Estimate, Table, notes


def _percent(value: float | None, interval: Any = None) -> Estimate:
    low, high = interval if interval else (None, None)
    return Estimate(value, low, high, 1, 1, signed=True, percent=True)


def split(output: Any, request: Any) -> Document:
    """What `resample restrain` / `resample resttest` made and wrote."""
    found = output.split
    embedder = output.parameters["embedder"]["id"]
    if isinstance(found, ReSTrainSplit):
        header = ["training set", "queries", "nearest training query per test query: mean cosine [min, max]"]
        rows = []
        for name, qids, nearest, how in (
            ("interpolation", found.interpolation, found.nearest_interpolation, f"top {found.interpolation_per_query} of each test query"),
            ("extrapolation", found.extrapolation, found.nearest_extrapolation, f"all but the top {found.exclusion_per_query}"),
        ):
            near = None if nearest is None else Estimate(nearest.mean, nearest.min, nearest.max, 3, 3)
            rows.append([f"{name} ({how})", len(qids), near])
        cap = f", sampled to {len(found.extrapolation)} (seed {found.seed})" if found.extrapolation_size else ""
        title = f"ReSTrain: {found.test_queries} test queries, {found.train_queries} training queries ({embedder})"
        said = [f"excluded {found.excluded}; {found.extrapolation_available} left for extrapolation{cap}; wrote {output.out_dir}/"]
        lead = [
            f"ReSTrain wrote an interpolation and an extrapolation training set for {found.test_queries} test queries to {output.out_dir}/."
        ]
        return Document(lead=lead, blocks=[Table(title, header, rows, name="split")], notes=notes(said), data=output.parameters)
    header = ["bucket", "training queries in it", "test queries in it", "training set", "interpolation test", "extrapolation test"]
    rows = [[name, *row.values()] for name, row in found.to_dict()["buckets"].items()]
    title = f"ReSTTest: k = {found.k} buckets (k-means, seed {found.seed}; {embedder})"
    lead = [f"ReSTTest wrote {found.k} buckets of training and test queries to {output.out_dir}/."]
    said = [f"training set = the other buckets' training queries; wrote {output.out_dir}/"]
    return Document(lead=lead, blocks=[Table(title, header, rows, name="buckets")], notes=notes(said), data=output.parameters)


def regimes(result: ReSTTestEvaluation | ReSTrainEvaluation, request: Any) -> Document:
    """Each run's interpolation and extrapolation scores and Δ = Extra./Inter. − 1, per measure."""
    intervals = result.resamples > 0
    tables, said = [], []
    header = ["run", "Inter.", "Extra.", "Δ"] + ([f"Δ 95% ({INTERVAL_METHOD})"] if intervals else [])

    def cells(score: Any) -> list[Any]:
        return [score.interpolation, score.extrapolation, _percent(score.delta)] + ([_percent(None, score.delta_ci)] if intervals else [])

    def average(run: str, measure: str) -> Any:
        found: Any = result.runs[run][measure]
        return found if isinstance(result, ReSTrainEvaluation) else found.average

    def by_interpolation(measure: str) -> list[str]:
        return sorted(result.runs, key=lambda run: -(average(run, measure).interpolation or 0.0))

    for measure in result.measures:
        rows = [[run, *cells(average(run, measure))] for run in by_interpolation(measure)]
        if isinstance(result, ReSTrainEvaluation):
            title = f"ReSTrain, {measure} over {len(result.queries)} test queries"
            tables.append(Table(title, header, rows, digits=3, name=f"regimes-{measure}"))
            continue
        trained = "per-bucket runs" if result.per_bucket_runs else "one run set on every bucket"
        title = f"ReSTTest, {measure} over {len(result.queries)} test queries in {len(result.buckets)} buckets ({trained})"
        tables.append(Table(title, header, rows, digits=3))
        said.append(
            "Inter. = mean of the buckets' interpolation scores; Extra. = each query once, in its own bucket; Δ = Extra./Inter. − 1"
        )
        buckets = [f"{b.name} ({len(b.interpolation)}/{len(b.extrapolation)})" for b in result.buckets]
        rows = [
            [run, *(_percent(result.runs[run][measure].buckets[b.name].delta) for b in result.buckets)] for run in by_interpolation(measure)
        ]
        tables.append(
            Table(f"{measure}: Δ = Extra./Inter. − 1 per bucket (interpolation / extrapolation queries)", ["run", *buckets], rows)
        )
        if not result.per_bucket_runs:
            said.append("the same runs on every bucket: a bucket's Δ here is how its queries differ in difficulty, not extrapolation")
    lead = [f"{len(result.runs)} runs scored by interpolation and extrapolation on {len(result.queries)} test queries."]
    if result.runs:
        measure = result.measures[0]
        deltas = [d for d in (average(run, measure).delta for run in result.runs) if d is not None]
        best = by_interpolation(measure)[0]
        found = average(best, measure)
        lead = [
            f"{best} leads {len(result.runs)} runs by {measure} under interpolation ({found.interpolation:.3f}, {found.extrapolation:.3f} "
            f"extrapolating)"
            + (f"; extrapolation changes the runs' {measure} by {min(deltas):+.1%} to {max(deltas):+.1%}." if deltas else ".")
        ]
    return Document(lead=lead, blocks=list(tables), notes=notes(list(dict.fromkeys(said))), data=result.to_dict())


def overlap(report: Any, request: Any) -> Document:
    """Label overlap per training qrels (Table 3) and the duplicate listing (Table 4)."""
    tables, said = [], []
    if report.overlaps:
        rows = [
            [
                o.train,
                f">= {row.rel_level}",
                f"{row.at_least_one} ({row.share:.1%})",
                f"{row.more_than_one} ({row.share_more_than_one:.1%})",
            ]
            for o in report.overlaps
            for row in reversed(o.rows)
        ]
        header = ["training qrels", "test grade", "at least one", "more than one"]
        tables.append(
            Table(f"Test queries sharing a relevant passage with the training positives ({report.queries} test queries)", header, rows)
        )
        trains = "; ".join(f"{o.train}: {o.train_queries} queries, {o.train_positives} positives" for o in report.overlaps)
        said.append(
            f"'at least one' is Zhan et al.'s definition; 'more than one' is what their script counts. "
            f"Training positives: grade >= {report.overlaps[0].train_rel_level}. {trains}"
        )
    if report.duplicates is not None:
        rows = [[f"{p.test_qid}: {p.test_text or ''}", f"{p.train_qid}: {p.train_text or ''}", p.similarity] for p in report.duplicates]
        title = f"Nearest training query per test query, cosine >= {report.threshold} ({report.embedder['id']})"
        tables.append(Table(title, ["test query", "training query", "cosine"], rows, text_columns=2, digits=3))
        said.append(f"{len(report.duplicates)} of {report.queries} test queries")
    lead = [f"Label overlap of {report.queries} test queries with {len(report.overlaps)} training qrels."]
    if report.overlaps:  # the strictest row of each training qrels: the share that leaks
        lead = [
            f"{row.at_least_one} of {report.queries} test queries ({row.share:.1%}) share a passage of grade >= {row.rel_level} "
            f"with {o.train}'s training positives."
            for o in report.overlaps
            for row in [max(o.rows, key=lambda r: r.rel_level)]
        ]
    if report.duplicates is not None:
        lead.append(f"{len(report.duplicates)} of {report.queries} test queries have a training query at cosine >= {report.threshold}.")
    return Document(lead=lead, blocks=list(tables), notes=notes(said), data=report.to_dict())

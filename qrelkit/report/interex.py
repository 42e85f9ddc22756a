"""Terminal tables for `qrelkit resample` (interpolation and extrapolation, Zhan et al., CIKM 2022)."""

from __future__ import annotations

from qrelkit.evaluate.interex import RegimeScore, ReSTrainEvaluation, ReSTrainSplit, ReSTTestEvaluation, ReSTTestSplit
from qrelkit.evaluate.interex.regimes import INTERVAL_METHOD
from qrelkit.report.tables import fmt
from qrelkit.report.terminal_table import Table


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f}%"


def _percent_ci(interval) -> str:
    return "–" if not interval else f"[{_percent(interval[0])}, {_percent(interval[1])}]"


def resample_tables(output) -> list[Table]:
    """What `resample restrain` / `resample resttest` made (a `commands.resample.ResampleOutput`)."""
    split = output.split
    embedder = output.parameters["embedder"]["id"]
    if isinstance(split, ReSTrainSplit):
        table = Table(title=f"ReSTrain: {split.test_queries} test queries, {split.train_queries} training queries ({embedder})")
        table.add_column("training set")
        table.add_column("queries", justify="right")
        table.add_column("nearest training query per test query: mean cosine [min, max]", justify="right")
        for name, qids, nearest, how in (
            ("interpolation", split.interpolation, split.nearest_interpolation, f"top {split.interpolation_per_query} of each test query"),
            ("extrapolation", split.extrapolation, split.nearest_extrapolation, f"all but the top {split.exclusion_per_query}"),
        ):
            near = "–" if nearest is None else f"{nearest.mean:.3f} [{nearest.min:.3f}, {nearest.max:.3f}]"
            table.add_row(f"{name} ({how})", str(len(qids)), near)
        cap = f", sampled to {len(split.extrapolation)} (seed {split.seed})" if split.extrapolation_size else ""
        table.caption = f"excluded {split.excluded}; {split.extrapolation_available} left for extrapolation{cap}; wrote {output.out_dir}/"
        return [table]
    assert isinstance(split, ReSTTestSplit)
    table = Table(title=f"ReSTTest: k = {split.k} buckets (k-means, seed {split.seed}; {embedder})")
    for column in ("bucket", "training queries in it", "test queries in it", "training set", "interpolation test", "extrapolation test"):
        table.add_column(column, justify="left" if column == "bucket" else "right")
    summary = split.to_dict()["buckets"]
    for name, row in summary.items():
        table.add_row(name, *(str(v) for v in row.values()))
    table.caption = f"training set = the other buckets' training queries; wrote {output.out_dir}/"
    return [table]


def _regime_cells(score: RegimeScore, intervals: bool) -> list[str]:
    cells = [fmt(score.interpolation, 3), fmt(score.extrapolation, 3), _percent(score.delta)]
    if intervals:
        cells.append(_percent_ci(score.delta_ci))
    return cells


def evaluation_tables(result: ReSTTestEvaluation | ReSTrainEvaluation) -> list[Table]:
    intervals = result.resamples > 0
    tables = []
    for measure in result.measures:
        if isinstance(result, ReSTrainEvaluation):
            title = f"ReSTrain, {measure} over {len(result.queries)} test queries"
            table = _aggregate_table(title, intervals)
            for run, by_measure in result.runs.items():
                table.add_row(run, *_regime_cells(by_measure[measure], intervals))
            tables.append(table)
            continue
        trained = "per-bucket runs" if result.per_bucket_runs else "one run set on every bucket"
        title = f"ReSTTest, {measure} over {len(result.queries)} test queries in {len(result.buckets)} buckets ({trained})"
        table = _aggregate_table(title, intervals)
        for run, scores in result.runs.items():
            table.add_row(run, *_regime_cells(scores[measure].average, intervals))
        table.caption = (
            "Inter. = mean of the buckets' interpolation scores; Extra. = each query once, in its own bucket; Δ = Extra./Inter. − 1"
        )
        tables.append(table)
        tables.append(_bucket_table(result, measure))
    return tables


def _aggregate_table(title: str, intervals: bool) -> Table:
    table = Table(title=title)
    table.add_column("run", no_wrap=True)
    for column in ("Inter.", "Extra.", "Δ"):
        table.add_column(column, justify="right")
    if intervals:
        table.add_column(f"Δ 95% ({INTERVAL_METHOD})", justify="right")
    return table


def _bucket_table(result: ReSTTestEvaluation, measure: str) -> Table:
    """Δ per bucket (the scores themselves are in --json: a row of 3 × k numbers does not fit a terminal)."""
    table = Table(title=f"{measure}: Δ = Extra./Inter. − 1 per bucket (interpolation / extrapolation queries)")
    table.add_column("run", no_wrap=True)
    for bucket in result.buckets:
        table.add_column(f"{bucket.name} ({len(bucket.interpolation)}/{len(bucket.extrapolation)})", justify="right")
    for run, scores in result.runs.items():
        table.add_row(run, *(_percent(scores[measure].buckets[bucket.name].delta) for bucket in result.buckets))
    if not result.per_bucket_runs:
        table.caption = "the same runs on every bucket: a bucket's Δ here is how its queries differ in difficulty, not extrapolation"
    return table


def overlap_tables(report) -> list[Table]:
    """Label overlap per training qrels (Table 3) and the duplicate listing (Table 4) of a `commands.resample.OverlapReport`."""
    tables = []
    if report.overlaps:
        table = Table(title=f"Test queries sharing a relevant passage with the training positives ({report.queries} test queries)")
        for column in ("training qrels", "test grade", "at least one", "more than one"):
            table.add_column(column, justify="left" if column == "training qrels" else "right")
        for overlap in report.overlaps:
            for row in reversed(overlap.rows):
                table.add_row(
                    overlap.train,
                    f">= {row.rel_level}",
                    f"{row.at_least_one} ({row.share:.1%})",
                    f"{row.more_than_one} ({row.share_more_than_one:.1%})",
                )
        trains = "; ".join(f"{o.train}: {o.train_queries} queries, {o.train_positives} positives" for o in report.overlaps)
        level = report.overlaps[0].train_rel_level
        table.caption = (
            f"'at least one' is Zhan et al.'s definition; 'more than one' is what their script counts. "
            f"Training positives: grade >= {level}. {trains}"
        )
        tables.append(table)
    if report.duplicates is not None:
        table = Table(title=f"Nearest training query per test query, cosine >= {report.threshold} ({report.embedder['id']})")
        for column in ("test query", "training query", "cosine"):
            table.add_column(column, justify="right" if column == "cosine" else "left")
        for pair in report.duplicates:
            table.add_row(
                f"{pair.test_qid}: {pair.test_text or ''}", f"{pair.train_qid}: {pair.train_text or ''}", f"{pair.similarity:.3f}"
            )
        table.caption = f"{len(report.duplicates)} of {report.queries} test queries"
        tables.append(table)
    return tables


__all__ = ["evaluation_tables", "overlap_tables", "resample_tables"]

"""`qrelkit compare`, and `qrelkit judge` of a sweep job (one judge run per cell)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from qrelkit.cli.base import (
    DuplicateOption,
    ForceOption,
    IntervalOption,
    JudgeMeasureOption,
    MeasureOption,
    ReferenceDecimalsOption,
    RunsOption,
    SeedOption,
    app,
    command_line,
    err,
    out,
    print_json,
)


@app.command("compare")
def compare_cmd(
    ctx: typer.Context,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge",
            help="A judge: a judge run in --db (id, prefix or name), a qrels set in --db, a judgment file (integer grades, or "
            "scores: fractional values, read for measures that use only their order), or a folder of judgment files; repeatable.",
        ),
    ] = None,
    sweep: Annotated[
        Path | None, typer.Option("--sweep", help="A sweep job: every cell is a judge (failed cells shown as failed).")
    ] = None,
    reference_qrels: Annotated[
        str, typer.Option("--reference-qrels", help="Reference (human) qrels: a TREC qrels file, irds:<id>, or a qrels set in --db.")
    ] = "",
    reference_name: Annotated[str | None, typer.Option("--reference-name", help="What to call the reference in the output.")] = None,
    runs: RunsOption = None,
    measure: MeasureOption = None,
    judge_measure: JudgeMeasureOption = None,
    reference_decimals: ReferenceDecimalsOption = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Compare each judge with this one (its name as shown) only.")] = None,
    group: Annotated[list[str] | None, typer.Option("--group", help="A group for Relative Δ: NAME=REGEX on run names; repeatable.")] = None,
    groups: Annotated[str | None, typer.Option("--groups", help="Groups TSV of runs as FILE[:COLUMN].")] = None,
    grade_map: Annotated[str | None, typer.Option("--map", help="Map reference grades for κ, e.g. 3:2,2:2,1:1,0:0.")] = None,
    model_map: Annotated[str | None, typer.Option("--map-model", help="Map every judge's grades for κ.")] = None,
    rel_level: Annotated[int | None, typer.Option("--rel-level", help="Also κ with both sides cut at grade >= LEVEL.")] = None,
    resamples: Annotated[int, typer.Option("--resamples", help="Bootstrap resamples of the queries (0: no intervals).")] = 1000,
    permutations: Annotated[
        int, typer.Option("--permutations", help="Random swaps of the randomisation test behind each p-value (0: no test).")
    ] = 1000,
    seed: SeedOption = 0,
    interval: IntervalOption = "jackknife",
    db: Annotated[Path | None, typer.Option("--db", envvar="QRELKIT_DB", help="The database of the judge runs and qrels sets.")] = None,
    output_format: Annotated[str, typer.Option("--format", help="table (default), markdown or latex (booktabs).")] = "table",
    html: Annotated[Path | None, typer.Option("--html", help="Also write the comparison as one self-contained HTML page.")] = None,
    force: ForceOption = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: each judge's audit as agree --json, differences, κ matrix.")] = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Compare judges against one reference over the same runs: a row per judge (coverage, failures,
    κ, Kendall τ and τ_AP per measure with intervals, cost, time), then the paired differences Δτ and
    Δκ between judges (the same query resamples for both; p from a paired randomisation test over
    queries), the κ between judges, and a note where two judges cannot be told apart."""
    from qrelkit.commands.compare import CompareRequest, check_output, run
    from qrelkit.io import OnDuplicate
    from qrelkit.report import compare as views

    inputs = {"--db": db, "--reference-qrels": reference_qrels, "--judge": judge, "--runs": runs, "--groups": groups, "--sweep": sweep}
    check_output(output_format, html, force=force, inputs=inputs)
    request = CompareRequest(
        reference=reference_qrels,
        judges=tuple(judge or ()),
        sweep=sweep,
        reference_name=reference_name,
        runs=tuple(runs or ()),
        measures=tuple(measure or ()),
        judge_measures=tuple(judge_measure or ()),
        reference_decimals=reference_decimals,
        baseline=baseline,
        group_patterns=tuple(group or ()),
        groups=groups,
        reference_map=grade_map,
        model_map=model_map,
        rel_level=rel_level,
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        interval=interval,
        on_duplicate=OnDuplicate(on_duplicate),
    )
    result = run(request, db)
    if html is not None:
        from qrelkit.report.compare_html import write_comparison_page

        write_comparison_page(result, html, command_line(ctx))
        err.print(f"wrote {html}", highlight=False)
    if as_json:
        print_json(result.to_dict())
    elif output_format == "markdown":
        print(views.markdown(result), end="")
    elif output_format == "latex":
        print(views.latex(result), end="")
    elif not out.is_terminal:  # a pipe or a file: plain text, no cell cut to a width
        print(views.plain(result), end="")
    else:
        for part in views.terminal(result):
            out.print(part)
    if result.probes and not as_json:  # the judges side by side on their gullibility probes (docs/probes.md)
        from qrelkit.report.probes import side_by_side

        shown = side_by_side(result.probes, output_format if output_format != "table" or out.is_terminal else "plain")
        if isinstance(shown, str):
            print(shown, end="")
        else:
            for part in shown:
                out.print(part)


def judge_sweep(job: Path, *, quiet: bool, as_json: bool, dry_run: bool, **options: Any) -> None:
    """`qrelkit judge SWEEP.yaml`: every cell, a table of what each did; exit 3 when a cell failed
    (the others ran), 130 when interrupted."""
    from qrelkit.commands.sweep import run_sweep
    from qrelkit.report import compare as views
    from qrelkit.report.progress import progress_output

    def progress_for(cell: Any) -> Any:
        return progress_output(f"judging {job.name} [{cell.name}]", console=err, enabled=not (quiet or as_json or dry_run))

    outcome = run_sweep(job, dry_run=dry_run, progress_for=progress_for, **options)
    if as_json:
        print_json(outcome.to_dict())
    elif not out.is_terminal:
        print(views.sweep_grid(outcome).plain())
    else:
        out.print(views.sweep_table(outcome))
    for line in views.sweep_failures(outcome):
        err.print(line, highlight=False)
    if outcome.interrupted:
        raise typer.Exit(130)
    outcome.raise_for_failed_cells()

"""`qrelkit agree | report | fd | nrg`: auditing judges and scoring runs beyond the plain metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from qrelkit.cli.base import (
    DEFAULT_DB,
    ConfigOption,
    DbOption,
    DuplicateOption,
    FDIntervalOption,
    ForceOption,
    IntervalOption,
    JudgeMeasureOption,
    JudgeRunOption,
    KeepOption,
    MeasureOption,
    MoreRuns,
    ReferenceDecimalsOption,
    RunsOption,
    SeedOption,
    app,
    command_line,
    err,
    out,
    print_json,
    print_lines,
    with_options,
)

ModelQrels = Annotated[
    str | None,
    typer.Option(
        "--model-qrels",
        help="Model qrels: a TREC qrels file, irds:<dataset id>, or a qrels set in --db; with --judge-run, which of its graded sets.",
    ),
]
AuditJudgeRun = Annotated[
    str | None,
    typer.Option(
        "--judge-run",
        help="A judge run in --db (id, unique id prefix, or name): the qrels set its job graded (or its only graded set).",
    ),
]
ReferenceQrels = Annotated[
    str | None,
    typer.Option("--reference-qrels", help="Reference (human) qrels: a TREC qrels file, irds:<dataset id>, or a qrels set in --db."),
]
ReferenceName = Annotated[
    str | None,
    typer.Option("--reference-name", help="What to call the reference qrels in the output (default: the set's name, or FOLDER/FILE)."),
]
Groups = Annotated[
    str | None, typer.Option("--groups", help="Groups TSV of runs as FILE[:COLUMN]: a `run` column and grouping columns (header optional).")
]
Group = Annotated[list[str] | None, typer.Option("--group", help="A group for Relative Δ: NAME=REGEX searched in run names; repeatable.")]
GradeMap = Annotated[str | None, typer.Option("--map", help="Map reference grades for label agreement, e.g. 3:2,2:2,1:1,0:0.")]
ModelMap = Annotated[str | None, typer.Option("--map-model", help="Map model grades for label agreement.")]
RelLevel = Annotated[int | None, typer.Option("--rel-level", help="Also report κ with both sides cut at grade >= LEVEL (after maps).")]
Resamples = Annotated[
    int | None,
    typer.Option(
        "--resamples",
        help="Resamples (half-samples for subsampling) of the queries for 95% intervals (0: no intervals; default 1000; "
        "the jackknife draws none).",
    ),
]


def audit_options(
    model_qrels: ModelQrels = None,
    reference_qrels: ReferenceQrels = None,
    reference_name: ReferenceName = None,
    judge_run: AuditJudgeRun = None,
    runs: RunsOption = None,
    measure: MeasureOption = None,
    judge_measure: JudgeMeasureOption = None,
    reference_decimals: ReferenceDecimalsOption = None,
    group: Group = None,
    groups: Groups = None,
    grade_map: GradeMap = None,
    model_map: ModelMap = None,
    rel_level: RelLevel = None,
    resamples: Resamples = None,
    seed: SeedOption = 0,
    interval: IntervalOption = "jackknife",
    config: ConfigOption = None,
    db: DbOption = DEFAULT_DB,
    on_duplicate: DuplicateOption = "error",
) -> dict:
    """The options agree and report share, declared once (`with_options`), as `AuditRequest.from_options` takes them."""
    return dict(
        model_qrels=model_qrels,
        reference_qrels=reference_qrels,
        judge_run=judge_run,
        reference_name=reference_name,
        runs=runs or [],
        measures=measure,
        judge_measures=judge_measure,
        reference_decimals=reference_decimals,
        group_patterns=group,
        groups=groups,
        reference_map=grade_map,
        model_map=model_map,
        rel_level=rel_level,
        resamples=resamples,
        seed=seed,
        on_duplicate=on_duplicate,
        interval=interval,
    )


@app.command("agree")
@with_options(audit_options, own_first=False)
def agree_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: pairs, labels, systems, bias, warnings.")] = False,
    **options: Any,
) -> None:
    """Audit model qrels against reference qrels: Cohen's κ and Krippendorff's α on the shared pairs,
    Kendall τ / Spearman ρ / Pearson r / τ_AP between the system rankings, Relative Δ toward groups,
    with 95% intervals over queries (the jackknife unless --interval bca, percentile or subsampling).
    """

    from qrelkit.commands.agree import agree
    from qrelkit.report import tables

    result = agree(db=options["db"], **audit_options(**options))
    for warning in getattr(result, "warnings", []):
        err.print(f"warning: {warning}", highlight=False)
    if as_json:
        print_json(result.to_dict())
        return
    for table in tables.audit_tables(result):
        out.print(table)


@app.command("report")
@with_options(audit_options)
def report_cmd(
    ctx: typer.Context,
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write the page: an .html file, or a folder (report.html inside).")],
    force: ForceOption = False,
    **options: Any,
) -> None:
    """Write one HTML page auditing a judge run (or model qrels from a file): the answer first (κ, τ,
    Δ, coverage, warnings), then the figures, the judge's failures, tokens and cost, and its grading."""
    from qrelkit.commands.report import build_report

    page = build_report(out=out_dir, command=command_line(ctx), db=options["db"], force=force, **audit_options(**options))
    out.print(f"wrote {page}", highlight=False)


@app.command("fd")
def fd_cmd(
    qrels: Annotated[str | None, typer.Option("--qrels", help="Qrels: a TREC file, or a qrels set in --db.")] = None,
    runs: RunsOption = None,
    more_runs: MoreRuns = None,
    docs: Annotated[Path | None, typer.Option("--docs", help="Documents JSONL (text or image); default: the documents in --db.")] = None,
    embedder: Annotated[
        str, typer.Option("--embedder", help="minilm | a sentence-transformers path or hub id | open_clip:MODEL:WEIGHTS (images).")
    ] = "minilm",
    backend: Annotated[str, typer.Option("--backend", help="For minilm: onnx (int8, no torch) or torch.")] = "onnx",
    k: Annotated[list[int] | None, typer.Option("--k", help="Cut-off; repeatable (paper: --k 1 --k 10). Default 10.")] = None,
    urr: Annotated[bool, typer.Option("--urr", help="Unlabeled Retrieved Results: the first k unjudged items per query.")] = False,
    max_rel: Annotated[int | None, typer.Option("--max-rel", help="At most M relevant items per query (see --keep).")] = None,
    keep: KeepOption = "top-grade",
    rel_level: Annotated[int | None, typer.Option("--rel-level", help="Relevant = grade >= LEVEL (default 2 if graded, else 1).")] = None,
    resamples: Resamples = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sparsification and the resamples.")] = 0,
    interval: FDIntervalOption = "bca",
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Processes for the bootstrap (default: one per core when it is large; 1: this one)."),
    ] = None,
    judge_run: JudgeRunOption = None,
    config: ConfigOption = None,
    db: DbOption = DEFAULT_DB,
    cache: Annotated[
        Path | None, typer.Option("--cache", help="Database file that caches embeddings (default: --db when it exists).")
    ] = None,
    image_root: Annotated[Path | None, typer.Option("--image-root", help="Folder image paths are relative to.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the bootstrap intervals per run (PNG/PDF/SVG).")] = None,
    plot_metric: Annotated[Path | None, typer.Option("--plot-metric", help="Write FD vs --metric per run, with Kendall τ.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="ir_measures measure for --plot-metric (full qrels).")] = "nDCG@10",
    force: ForceOption = False,
    as_json: Annotated[bool, typer.Option("--json", help='Print JSON: {"embedder", "d", "runs": {run: {"FD@10": x}}, "n_rel"}.')] = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Fréchet distance between the embeddings of the relevant judged items and each run's top-k
    (Arabzadeh and Clarke, EACL 2024): lower is better. Reports n and d; FD with fewer
    items than dimensions is exact but its covariance is rank-deficient.
    """

    from qrelkit.commands.fd import fd_settings, run_fd
    from qrelkit.report import tables
    from qrelkit.report.progress import progress_output

    settings = fd_settings(k, urr=urr, max_rel=max_rel, rel_level=rel_level, resamples=resamples, seed=seed, interval=interval, keep=keep)
    with progress_output("FD bootstrap", console=err, enabled=not as_json, unit="resamples") as progress:
        report = run_fd(
            qrels=qrels,
            runs=(runs or []) + (more_runs or []),
            embedder=embedder,
            settings=settings,
            docs=docs,
            db=db,
            judge_run=judge_run,
            backend=backend,
            cache=cache,
            image_root=image_root,
            progress=not as_json,
            plot=plot,
            plot_metric=plot_metric,
            metric=metric,
            force=force,
            on_duplicate=on_duplicate,
            bootstrap_progress=progress,
            workers=workers,
        )
    for written in (plot, plot_metric):
        if written is not None:
            err.print(f"wrote {written}", highlight=False)
    for warning in report.warnings():
        err.print(f"warning: {warning}", highlight=False)
    if as_json:
        print_json(report.to_dict())
        return
    out.print(tables.fd_table(report))


@app.command("nrg")
def nrg_cmd(
    qrels: Annotated[str, typer.Option(help="A TREC qrels file, or the name of a qrels set in --db.")],
    runs: RunsOption = None,
    more_runs: MoreRuns = None,
    browsing_model: Annotated[
        str | None, typer.Option("--browsing-model", help="ndcg, rr (seen = 1/i), precision (seen = 1 to K), rbp:P. Default ndcg.")
    ] = None,
    depth: Annotated[str, typer.Option(help="Cut-off K for the run and its priors, or 'full' (the reference code's choice).")] = "10",
    gain: Annotated[str, typer.Option(help="linear (the grade), exp (2^g - 1), or binary:REL_LEVEL.")] = "linear",
    prior: Annotated[str, typer.Option(help="all-others | order:FILE | best-per-group:FILE[:COLUMN] | runs:A,B")] = "all-others",
    order: Annotated[str, typer.Option(help="Ranking order: trec_eval (score desc, docid desc) or file (as listed).")] = "trec_eval",
    compare: Annotated[bool, typer.Option("--compare", help="Also unique contributions, rareness-based P@K and TaSC.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write the NRG vs metric plot (PNG/PDF/SVG) here.")] = None,
    force: ForceOption = False,
    groups: Annotated[str | None, typer.Option(help="FILE[:COLUMN] of run groups to mark in the plot.")] = None,
    config: ConfigOption = None,
    db: DbOption = DEFAULT_DB,
    as_json: Annotated[bool, typer.Option("--json", help='Print JSON: {"runs": {run: {"nrg": x, "base": x}}, ...}.')] = False,
    per_query: Annotated[bool, typer.Option("--per-query", help="Also print each query's values.")] = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Normalized Residual Gain (Bigdeli, Arabzadeh, Bagheri and Clarke, SIGIR-AP 2024): what each run
    adds over its prior runs. Means run over the queries of the qrels; a run that misses one scores 0 on it.
    """

    from qrelkit.commands.nrg import nrg_command
    from qrelkit.report import tables

    outcome = nrg_command(
        qrels=qrels,
        runs=(runs or []) + (more_runs or []),
        db=db,
        prior=prior,
        browsing_model=browsing_model or "ndcg",
        depth=depth,
        gain=gain,
        order=order,
        compare=compare,
        groups=groups,
        plot=plot,
        force=force,
        on_duplicate=on_duplicate,
    )
    if plot:
        err.print(f"wrote {plot}")
    if as_json:
        print_json(outcome.to_dict(per_query))
        return
    out.print(tables.nrg_table(outcome))
    if per_query:
        print_lines(tables.nrg_per_query_lines(outcome.result))

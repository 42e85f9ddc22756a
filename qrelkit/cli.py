"""The `qrelkit` command line. Thin: parse arguments, call one function, print."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from qrelkit.errors import QrelkitError
from qrelkit.io import OnDuplicate, list_run_files

app = typer.Typer(
    help="Make relevance judgments with models, and audit them against human qrels.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
load_app = typer.Typer(
    help="Load topics, documents, runs or qrels into the database (idempotent; --replace for changed files).",
    no_args_is_help=True,
)
app.add_typer(load_app, name="load")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DbOption = Annotated[
    Path,
    typer.Option("--db", envvar="QRELKIT_DB", help="The DuckDB database file (env QRELKIT_DB)."),
]
DEFAULT_DB = Path("qrelkit.duckdb")
ReplaceOption = Annotated[bool, typer.Option("--replace", help="Replace what an earlier load of the same name put in the database.")]
DuplicateOption = Annotated[
    OnDuplicate,
    typer.Option(
        "--on-duplicate",
        help="A repeated (qid, docid) in one file: error (default), or keep the first, last or max.",
    ),
]


def _report_load(result) -> None:
    verb = {"loaded": "loaded", "replaced": "replaced", "unchanged": "already loaded, unchanged:"}[result.status]
    out.print(f"{verb} {result.kind} {result.name!r}" + (f" ({result.rows} rows)" if result.rows else ""))


@load_app.command("topics")
def load_topics(
    file: Annotated[Path, typer.Argument(help="Topics: TSV `qid<TAB>text`, or JSONL with `qid`, `text` and any fields.")],
    db: DbOption = DEFAULT_DB,
    name: Annotated[str | None, typer.Option(help="Name of this load (default: file name).")] = None,
    replace: ReplaceOption = False,
) -> None:
    """Load topics."""
    from qrelkit.storage import Store

    with Store(db) as store:
        _report_load(store.load_topics(file, name=name, replace=replace))


@load_app.command("docs")
def load_docs(
    file: Annotated[Path, typer.Argument(help="JSONL documents: `docid` with `text`, or `image` (a relative path).")],
    db: DbOption = DEFAULT_DB,
    image_root: Annotated[Path | None, typer.Option(help="Folder that image paths are relative to (default: the file's folder).")] = None,
    name: Annotated[str | None, typer.Option(help="Name of this load (default: file name).")] = None,
    replace: ReplaceOption = False,
) -> None:
    """Load documents (text passages or images)."""
    from qrelkit.storage import Store

    with Store(db) as store:
        _report_load(store.load_documents(file, name=name, image_root=image_root, replace=replace))


@load_app.command("runs")
def load_runs(
    paths: Annotated[
        list[Path], typer.Argument(help="TREC run files, or folders of them. A run's name is its file name without extension.")
    ],
    db: DbOption = DEFAULT_DB,
    group: Annotated[str | None, typer.Option(help="Group these runs belong to (for bias and NRG priors).")] = None,
    replace: ReplaceOption = False,
    on_duplicate: DuplicateOption = OnDuplicate.error,
) -> None:
    """Load TREC runs (`qid Q0 docid rank score tag`)."""
    from qrelkit.storage import Store

    with Store(db) as store:
        for path in list_run_files(list(paths)):
            _report_load(store.load_run(path, group=group, replace=replace, on_duplicate=on_duplicate))


@load_app.command("qrels")
def load_qrels(
    file: Annotated[Path, typer.Argument(help="TREC qrels (`qid iter docid grade`).")],
    db: DbOption = DEFAULT_DB,
    name: Annotated[str | None, typer.Option(help="Name of the qrels set (default: file name).")] = None,
    replace: ReplaceOption = False,
    on_duplicate: DuplicateOption = OnDuplicate.error,
) -> None:
    """Load human (or any) qrels as a named qrels set."""
    from qrelkit.storage import Store

    with Store(db) as store:
        _report_load(store.load_qrels(file, name=name, replace=replace, on_duplicate=on_duplicate))


@app.command()
def show(db: DbOption = DEFAULT_DB) -> None:
    """Show what the database holds."""
    from qrelkit.storage import Store

    with Store(db, read_only=True) as store:
        table = Table(title=str(db))
        for column in ("what", "count", "detail"):
            table.add_column(column, justify="right" if column == "count" else "left")
        for what, count, detail in store.summary():
            table.add_row(what, str(count), detail)
        out.print(table)


@app.command()
def evaluate(
    qrels: Annotated[str, typer.Option(help="A TREC qrels file, or the name of a qrels set in --db.")],
    runs: Annotated[
        list[str] | None,
        typer.Option(help="Run files or folders (every file inside), or run names in --db; repeatable. Default: all runs in --db."),
    ] = None,
    measure: Annotated[
        list[str] | None,
        typer.Option(help="An ir_measures measure, e.g. nDCG@10, 'AP(rel=2)', 'RR(rel=2)'; repeatable. Default nDCG@10."),
    ] = None,
    db: Annotated[Path | None, typer.Option("--db", envvar="QRELKIT_DB", help="Database for names.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: measures, queries, runs → measure → mean.")] = False,
    per_query: Annotated[bool, typer.Option("--per-query", help="Also print each query's value.")] = False,
    on_duplicate: DuplicateOption = OnDuplicate.error,
) -> None:
    """Score runs under qrels with ir_measures.

    Means run over the queries of the qrels; a run that misses one scores 0 on it.
    Run scores are read as float32 and ties broken by docid descending, as trec_eval does.
    """
    from qrelkit.commands.sources import resolve_qrels
    from qrelkit.commands.sources import stream_runs as resolve_runs  # one run in memory at a time
    from qrelkit.evaluate import evaluate_runs

    measures = measure or ["nDCG@10"]
    evaluation = evaluate_runs(
        resolve_qrels(qrels, db, on_duplicate=on_duplicate),
        resolve_runs(runs or [], db, on_duplicate=on_duplicate),
        measures,
    )
    if as_json:
        payload: dict = {"measures": measures, "queries": len(evaluation.queries), "runs": evaluation.means()}
        if per_query:
            payload["per_query"] = {
                run: {m: dict(zip(evaluation.queries, evaluation.values[run][m].tolist())) for m in measures} for run in evaluation.runs
            }
        print(json.dumps(payload, indent=1))
        return
    table = Table(title=f"mean over {len(evaluation.queries)} queries of the qrels")
    table.add_column("run")
    for m in measures:
        table.add_column(m, justify="right")
    for run, values in evaluation.means().items():
        table.add_row(run, *(f"{values[m]:.4f}" for m in measures))
    out.print(table)
    if per_query:
        for run in evaluation.runs:
            for i, qid in enumerate(evaluation.queries):
                print("\t".join([run, qid] + [f"{evaluation.values[run][m][i]:.4f}" for m in measures]))


prompts_app = typer.Typer(help="Prompt templates: list the built-ins, render one exactly as a model sees it.", no_args_is_help=True)
app.add_typer(prompts_app, name="prompts")
export_app = typer.Typer(help="Write what the database holds as files (TREC qrels).", no_args_is_help=True)
app.add_typer(export_app, name="export")


@prompts_app.command("list")
def prompts_list() -> None:
    """List the built-in templates (ids usable as `template:` in a job)."""
    from qrelkit.prompts import builtin_templates

    table = Table()
    for column in ("id", "modality", "scores", "description"):
        table.add_column(column)
    for t in builtin_templates():
        table.add_row(t.id, t.modality, f"{t.score_range[0]:g}-{t.score_range[1]:g}", t.description)
    out.print(table)


@prompts_app.command("show")
def prompts_show(
    template: Annotated[str, typer.Argument(help="A template YAML file or built-in id.")],
    topic: Annotated[str | None, typer.Option(help="qid of a topic in --db to render with.")] = None,
    doc: Annotated[str | None, typer.Option(help="docid of a document in --db to render with.")] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Render a template for one (topic, document) pair exactly as a model would see it.

    Without --topic/--doc, prints the template's parts and identity.
    """
    from qrelkit.commands.judging import render_pair
    from qrelkit.prompts import load_template

    if topic is None and doc is None:
        t = load_template(template)
        out.print(f"id {t.id} version {t.version} sha256 {t.content_hash}", highlight=False)
        print(t.model_dump_json(indent=1))
        return
    if topic is None or doc is None:
        raise QrelkitError("give both --topic QID and --doc DOCID (or neither)")
    print(render_pair(template, db, topic, doc))


@app.command("judges")
def judges_list(as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False) -> None:
    """List the registered judges and their options (entry-point group `qrelkit.judges`)."""
    from qrelkit.judges import describe_judges

    judges = describe_judges()
    if as_json:
        print(json.dumps(judges, indent=1, default=str))
        return
    for judge in judges:
        table = Table(title=f"{judge['name']}: {judge['summary']}", title_justify="left")
        for column in ("option", "type", "default", "description"):
            table.add_column(column)
        for option in judge["options"]:
            table.add_row(option["name"], option["type"], repr(option["default"]), option["description"])
        out.print(table)


@app.command()
def judge(
    job: Annotated[Path, typer.Argument(help="Job YAML: database, collection, pool, judge, template, grading.")],
    limit: Annotated[int | None, typer.Option(help="Judge at most N of the pending pairs.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count: pairs in the pool, done, failed, to judge.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Judge failed pairs (parse/model/input errors) again.")] = False,
    grade: Annotated[bool, typer.Option("--grade/--no-grade", help="Grade into qrels when the job has `grading`.")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
) -> None:
    """Run a judging job. Resumable: running it again judges only what is missing.

    Judgments are committed every few seconds; Ctrl-C stops cleanly after writing what was judged.
    """
    from qrelkit.commands.judging import finish_job
    from qrelkit.jobs import load_job, run_job

    spec = load_job(job)
    report = run_job(spec, limit=limit, dry_run=dry_run, retry_failed=retry_failed, console=err, progress=not quiet)
    finish_job(spec, report, dry_run=dry_run, grade=grade, console=out)
    if report.interrupted:
        raise typer.Exit(130)


@app.command("grade")
def grade_cmd(
    judge_run: Annotated[str, typer.Option("--judge-run", help="Judge run id (or a unique prefix).")],
    db: DbOption = DEFAULT_DB,
    quantiles: Annotated[str, typer.Option(help="Cut points as quantiles of the scores.")] = "0.5,0.75",
    thresholds: Annotated[str | None, typer.Option(help="Fixed cut points instead of quantiles, e.g. 0.3,0.5.")] = None,
    labels: Annotated[str, typer.Option(help="Grades for the intervals between cut points.")] = "0,1,2",
    per_topic: Annotated[bool, typer.Option("--per-topic", help="Quantiles within each topic instead of over all scores.")] = False,
    score: Annotated[str, typer.Option(help="score, or score_expected (llamacpp's probability-weighted grade).")] = "score",
    name: Annotated[str | None, typer.Option(help="Name of the qrels set (default graded-<judge run>).")] = None,
) -> None:
    """Grade a judge run's scores into qrels (seed 003: <q50 → 0, q50–q75 → 1, ≥q75 → 2)."""
    from qrelkit.commands.judging import grade_and_describe

    out.print(
        grade_and_describe(
            db, judge_run, quantiles=quantiles, thresholds=thresholds, labels=labels, per_topic=per_topic, score=score, name=name
        ),
        highlight=False,
    )


@export_app.command("qrels")
def export_qrels(
    output: Annotated[Path, typer.Argument(help="Where to write TREC qrels.")],
    judge_run: Annotated[str | None, typer.Option("--judge-run", help="Export the newest qrels graded from this judge run.")] = None,
    name: Annotated[str | None, typer.Option(help="Or: the qrels set with this name.")] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Write a qrels set (graded from a judge run, or loaded) as a TREC qrels file."""
    from qrelkit.commands.judging import export_qrels_file

    qrels = export_qrels_file(db, output, judge_run_id=judge_run, name=name)
    out.print(f"wrote {len(qrels)} judgments of {qrels.name!r} to {output}")


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the demo's database and qrels.")] = Path("demo-out"),
) -> None:
    """Judge the bundled toy collection with MiniLM, grade, and compare system rankings with the human qrels."""
    from qrelkit.commands.demo import run_demo

    run_demo(out_dir, console=out)


@app.command("nrg")
def nrg_cmd(
    qrels: Annotated[str, typer.Option(help="A TREC qrels file, or the name of a qrels set in --db.")],
    runs: Annotated[
        list[str] | None, typer.Option(help="Run files or folders (every file inside); a run is named by its file name without extension.")
    ] = None,
    more_runs: Annotated[list[str] | None, typer.Argument(help="More run files or folders (so `--runs a.run b.run` works).")] = None,
    model: Annotated[str, typer.Option(help="Browsing model: ndcg, rr (seen = 1/i), precision (seen = 1 to K), rbp:P.")] = "ndcg",
    depth: Annotated[str, typer.Option(help="Cut-off K for the run and its priors, or 'full' (the reference code's choice).")] = "10",
    gain: Annotated[str, typer.Option(help="linear (the grade), exp (2^g - 1), or binary:LEVEL.")] = "linear",
    prior: Annotated[str, typer.Option(help="all-others | order:FILE | best-per-group:FILE[:COLUMN] | runs:A,B")] = "all-others",
    order: Annotated[str, typer.Option(help="Ranking order: trec_eval (score desc, docid desc) or file (as listed).")] = "trec_eval",
    compare: Annotated[bool, typer.Option("--compare", help="Also unique contributions, rareness-based P@K and TaSC.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write the NRG vs metric plot (PNG/PDF/SVG) here.")] = None,
    groups: Annotated[str | None, typer.Option(help="FILE[:COLUMN] of run groups to mark in the plot.")] = None,
    db: Annotated[Path | None, typer.Option("--db", envvar="QRELKIT_DB", help="Database for names.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help='Print JSON: {"runs": {run: {"nrg": x, "base": x}}, ...}.')] = False,
    per_query: Annotated[bool, typer.Option("--per-query", help="Also print each query's values.")] = False,
    on_duplicate: DuplicateOption = OnDuplicate.error,
) -> None:
    """Normalized Residual Gain (seed 004): what each run adds over its prior runs.

    Means run over the queries of the qrels; a run that misses one scores 0 on it.
    """
    from qrelkit.commands.sources import resolve_qrels, resolve_runs
    from qrelkit.evaluate.nrg.compare import comparison_measures
    from qrelkit.evaluate.nrg.priors import groups_from_spec, nrg_from_spec

    qrels_data = resolve_qrels(qrels, db, on_duplicate=on_duplicate)
    run_list = resolve_runs((runs or []) + (more_runs or []), db, on_duplicate=on_duplicate)
    result, prior_groups = nrg_from_spec(qrels_data, run_list, prior, model=model, depth=depth, gain=gain, order=order)
    means = result.means()
    extra = {m.measure: m.means() for m in comparison_measures(qrels_data, run_list, result)} if compare else {}
    if groups:
        prior_groups = groups_from_spec(groups, result.runs)
    if plot:
        from qrelkit.report.plots.nrg import plot_nrg

        plot_nrg(result, plot, prior_groups, title=f"prior set: {prior.partition(':')[0]}")
        err.print(f"wrote {plot}")
    if as_json:
        payload: dict = {
            "measure": result.config.label,
            "base": result.config.base_label,
            "prior": prior,
            "queries": len(result.queries),
            "runs": means,
            "priors": result.priors,
        }
        for name, values in extra.items():
            for run, value in values.items():
                payload["runs"][run][name] = value
        if per_query:
            payload["per_query"] = result.per_query()
        print(json.dumps(payload, indent=1))
        return
    table = Table(title=f"{result.config.label}, prior {prior}: mean over {len(result.queries)} queries of the qrels")
    for column in ["run"] + (["group"] if prior_groups else []) + [result.config.base_label, "NRG", "priors"] + list(extra):
        table.add_column(column, justify="left" if column in ("run", "group") else "right")
    for run in sorted(result.runs, key=lambda r: -means[r]["base"]):
        cells = [run] + ([prior_groups[run]] if prior_groups else [])
        cells += [f"{means[run]['base']:.4f}", f"{means[run]['nrg']:.4f}", str(len(result.priors[run]))]
        table.add_row(*cells, *(f"{extra[m][run]:.4f}" for m in extra))
    out.print(table)
    if per_query:
        for i, run in enumerate(result.runs):
            for j, qid in enumerate(result.queries):
                print(f"{run}\t{qid}\t{result.base[i, j]:.4f}\t{result.nrg[i, j]:.4f}")


AuditReference = Annotated[str, typer.Option("--reference", help="Reference (human) qrels: a TREC qrels file, or a qrels set in --db.")]
AuditQrels = Annotated[str | None, typer.Option("--qrels", help="Model qrels: a TREC qrels file, or a qrels set in --db.")]
AuditJudgeRun = Annotated[
    str | None, typer.Option("--judge-run", help="Or: the newest graded qrels of this judge run in --db (id or unique prefix).")
]
AuditRuns = Annotated[
    list[str] | None,
    typer.Option("--runs", help="Run files or folders, or run names in --db; repeatable. Default: all runs in --db."),
]
AuditMeasures = Annotated[
    list[str] | None, typer.Option("--measure", help="An ir_measures measure; repeatable. Default: nDCG@10 and 'AP(rel=2)'.")
]
AuditGroup = Annotated[
    list[str] | None, typer.Option("--group", help="A group for Relative Δ: NAME=REGEX searched in run names; repeatable.")
]
AuditGroupsFile = Annotated[
    Path | None, typer.Option("--groups", help="Groups TSV: a `run` column and grouping columns (header optional).")
]
AuditGroupBy = Annotated[str | None, typer.Option("--group-by", help="The --groups column whose values are the groups.")]
AuditMap = Annotated[str | None, typer.Option("--map", help="Map reference grades for label agreement, e.g. 3:2,2:2,1:1,0:0.")]
AuditModelMap = Annotated[str | None, typer.Option("--map-model", help="Map model grades for label agreement.")]
AuditBinarize = Annotated[int | None, typer.Option("--binarize", help="Also report κ with both sides cut at grade >= LEVEL (after maps).")]
AuditBootstrap = Annotated[int, typer.Option("--bootstrap", help="Topic resamples for the 95% intervals (0: none).")]
AuditSeed = Annotated[int, typer.Option("--seed", help="Seed of the topic resamples.")]
AuditDb = Annotated[Path | None, typer.Option("--db", envvar="QRELKIT_DB", help="Database for names and judge runs.")]


@app.command("agree")
def agree_cmd(
    reference: AuditReference,
    qrels: AuditQrels = None,
    judge_run: AuditJudgeRun = None,
    runs: AuditRuns = None,
    measure: AuditMeasures = None,
    group: AuditGroup = None,
    groups: AuditGroupsFile = None,
    group_by: AuditGroupBy = None,
    grade_map: AuditMap = None,
    model_map: AuditModelMap = None,
    binarize: AuditBinarize = None,
    bootstrap: AuditBootstrap = 1000,
    seed: AuditSeed = 0,
    db: AuditDb = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: pairs, labels, systems, bias.")] = False,
    on_duplicate: DuplicateOption = OnDuplicate.error,
) -> None:
    """Audit model qrels against reference qrels: Cohen's κ and Krippendorff's α on the shared pairs,
    Kendall τ / Spearman ρ / Pearson r / τ_AP between the system rankings, Relative Δ toward groups,
    with bootstrap 95% intervals over topics.
    """
    from qrelkit.commands.agree import agree
    from qrelkit.evaluate.audit import audit_to_dict
    from qrelkit.report.tables import audit_tables

    result = agree(
        qrels=qrels,
        reference=reference,
        runs=runs or [],
        db=db,
        judge_run=judge_run,
        measures=measure,
        group_patterns=group,
        groups_file=groups,
        group_by=group_by,
        reference_map=grade_map,
        model_map=model_map,
        binarize_at=binarize,
        samples=bootstrap,
        seed=seed,
        on_duplicate=on_duplicate,
    )
    if as_json:
        print(json.dumps(audit_to_dict(result), indent=1))
        return
    for table in audit_tables(result):
        out.print(table)


@app.command("report")
def report_cmd(
    reference: AuditReference,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.html and its figures (PNG and SVG).")],
    judge_run: AuditJudgeRun = None,
    qrels: AuditQrels = None,
    runs: AuditRuns = None,
    measure: AuditMeasures = None,
    group: AuditGroup = None,
    groups: AuditGroupsFile = None,
    group_by: AuditGroupBy = None,
    grade_map: AuditMap = None,
    model_map: AuditModelMap = None,
    binarize: AuditBinarize = None,
    bootstrap: AuditBootstrap = 1000,
    seed: AuditSeed = 0,
    db: AuditDb = None,
    on_duplicate: DuplicateOption = OnDuplicate.error,
) -> None:
    """Write an HTML audit of a judge run (or of model qrels from a file): the judge's configuration,
    template, failures, tokens and cost; the agreement and bias tables; and the three figures.
    """
    from qrelkit.commands.report import build_report

    page = build_report(
        out=out_dir,
        judge_run=judge_run,
        db=db,
        qrels=qrels,
        reference=reference,
        runs=runs or [],
        measures=measure,
        group_patterns=group,
        groups_file=groups,
        group_by=group_by,
        reference_map=grade_map,
        model_map=model_map,
        binarize_at=binarize,
        samples=bootstrap,
        seed=seed,
        on_duplicate=on_duplicate,
    )
    out.print(f"wrote {page}", highlight=False)


@app.command("fd")
def fd_cmd(
    qrels: Annotated[str | None, typer.Option("--qrels", help="Qrels: a TREC file, or a qrels set in --db.")] = None,
    runs: AuditRuns = None,
    more_runs: Annotated[list[str] | None, typer.Argument(help="More run files or folders (so `--runs a.run b.run` works).")] = None,
    docs: Annotated[Path | None, typer.Option("--docs", help="Documents JSONL (text or image); default: the documents in --db.")] = None,
    embedder: Annotated[
        str, typer.Option("--embedder", help="minilm | a sentence-transformers path or hub id | open_clip:MODEL:WEIGHTS (images).")
    ] = "minilm",
    backend: Annotated[str, typer.Option("--backend", help="For minilm: onnx (int8, no torch) or torch.")] = "onnx",
    k: Annotated[list[int] | None, typer.Option("--k", help="Cut-off; repeatable (paper: --k 1 --k 10). Default 10.")] = None,
    urr: Annotated[bool, typer.Option("--urr", help="Unlabeled Retrieved Results: the first k unjudged items per query.")] = False,
    max_rel: Annotated[int | None, typer.Option("--max-rel", help="At most M relevant items per query, highest grade first.")] = None,
    rel_level: Annotated[int | None, typer.Option("--rel-level", help="Relevant = grade >= L (default 2 if graded, else 1).")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Query resamples for the 95% intervals (0: none).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sparsification and the resamples.")] = 0,
    judge_run: AuditJudgeRun = None,
    db: AuditDb = None,
    cache: Annotated[Path | None, typer.Option("--cache", help="Database file that caches embeddings (default: --db).")] = None,
    image_root: Annotated[Path | None, typer.Option("--image-root", help="Folder image paths are relative to.")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the bootstrap intervals per run (PNG/PDF/SVG).")] = None,
    plot_metric: Annotated[Path | None, typer.Option("--plot-metric", help="Write FD vs --metric per run, with Kendall τ.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="ir_measures measure for --plot-metric (full qrels).")] = "nDCG@10",
    as_json: Annotated[bool, typer.Option("--json", help='Print JSON: {"embedder", "d", "runs": {run: {"FD@10": x}}, "n_rel"}.')] = False,
    on_duplicate: DuplicateOption = OnDuplicate.error,
) -> None:
    """Fréchet distance between the embeddings of the relevant judged items and each run's top-k
    (seeds 000/001): lower is better. Reports n and d; FD with fewer items than dimensions is exact
    but its covariance is rank-deficient.
    """
    from qrelkit.commands.fd import run_fd
    from qrelkit.evaluate.fd.runs import FDSettings
    from qrelkit.report.tables import fd_table

    settings = FDSettings(tuple(k or [10]), urr, max_rel, rel_level, bootstrap, seed)
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
        on_duplicate=on_duplicate,
    )
    for written in (plot, plot_metric):
        if written is not None:
            err.print(f"wrote {written}", highlight=False)
    if as_json:
        print(json.dumps(report.to_json(), indent=1))
        return
    out.print(fd_table(report))


def main() -> None:
    try:
        app()
    except QrelkitError as exc:
        err.print(Text("error: ", style="bold red") + Text(str(exc)), soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()

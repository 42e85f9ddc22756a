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

out = Console()
err = Console(stderr=True)

DbOption = Annotated[
    Path,
    typer.Option("--db", envvar="QRELKIT_DB", help="The DuckDB database file (env QRELKIT_DB)."),
]
DEFAULT_DB = Path("qrelkit.duckdb")
ReplaceOption = Annotated[
    bool, typer.Option("--replace", help="Replace what an earlier load of the same name put in the database.")
]
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
    image_root: Annotated[
        Path | None, typer.Option(help="Folder that image paths are relative to (default: the file's folder).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name of this load (default: file name).")] = None,
    replace: ReplaceOption = False,
) -> None:
    """Load documents (text passages or images)."""
    from qrelkit.storage import Store

    with Store(db) as store:
        _report_load(store.load_documents(file, name=name, image_root=image_root, replace=replace))


@load_app.command("runs")
def load_runs(
    paths: Annotated[list[Path], typer.Argument(help="TREC run files, or folders of them. A run's name is its file name without extension.")],
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
    from qrelkit.evaluate import evaluate_runs
    from qrelkit.sources import resolve_qrels, resolve_runs

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
                run: {m: dict(zip(evaluation.queries, evaluation.values[run][m].tolist())) for m in measures}
                for run in evaluation.runs
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
    from qrelkit.jobs.actions import render_pair
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
    from qrelkit.jobs import load_job, run_job
    from qrelkit.jobs.actions import finish_job

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
    from qrelkit.jobs.actions import grade_and_describe

    out.print(grade_and_describe(db, judge_run, quantiles=quantiles, thresholds=thresholds, labels=labels,
                                 per_topic=per_topic, score=score, name=name), highlight=False)  # fmt: skip


@export_app.command("qrels")
def export_qrels(
    output: Annotated[Path, typer.Argument(help="Where to write TREC qrels.")],
    judge_run: Annotated[str | None, typer.Option("--judge-run", help="Export the newest qrels graded from this judge run.")] = None,
    name: Annotated[str | None, typer.Option(help="Or: the qrels set with this name.")] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Write a qrels set (graded from a judge run, or loaded) as a TREC qrels file."""
    from qrelkit.jobs.actions import export_qrels_file

    qrels = export_qrels_file(db, output, judge_run_id=judge_run, name=name)
    out.print(f"wrote {len(qrels)} judgments of {qrels.name!r} to {output}")


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the demo's database and qrels.")] = Path("demo-out"),
) -> None:
    """Judge the bundled toy collection with MiniLM, grade, and compare system rankings with the human qrels."""
    from qrelkit.jobs.demo import run_demo

    run_demo(out_dir, console=out)


def main() -> None:
    try:
        app()
    except QrelkitError as exc:
        err.print(Text("error: ", style="bold red") + Text(str(exc)), soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()

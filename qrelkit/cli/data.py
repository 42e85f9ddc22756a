"""`qrelkit load | show | evaluate | import | export`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from qrelkit.cli.base import (
    DEFAULT_DB,
    ConfigOption,
    DbOption,
    DuplicateOption,
    ForceOption,
    JsonOption,
    KeepOption,
    MaxRelLevelOption,
    MaxRelSeedOption,
    MeasureOption,
    ReplaceOption,
    RunsOption,
    app,
    err,
    export_app,
    import_app,
    load_app,
    out,
    print_json,
    print_lines,
)

NameOption = Annotated[
    str | None, typer.Option(help="Name of this load (default: the file name without extension, or the ir_datasets id).")
]


def _loaded(results) -> None:
    from qrelkit.report import tables

    for line in tables.describe_loads(results):
        out.print(line, highlight=False)


@load_app.command("topics")
def load_topics(
    file: Annotated[
        Path, typer.Argument(help="Topics: TSV `qid<TAB>text`, JSONL with `qid`, `text` and any fields, or irds:<dataset id>.")
    ],
    db: DbOption = DEFAULT_DB,
    name: NameOption = None,
    replace: ReplaceOption = False,
) -> None:
    """Load topics."""

    from qrelkit.commands import data

    _loaded(data.load_topics(db, file, name=name, replace=replace))


@load_app.command("docs")
def load_docs(
    file: Annotated[Path, typer.Argument(help="JSONL documents (`docid` with `text`, or `image`: a relative path), or irds:<dataset id>.")],
    db: DbOption = DEFAULT_DB,
    image_root: Annotated[Path | None, typer.Option(help="Folder that image paths are relative to (default: the file's folder).")] = None,
    name: NameOption = None,
    replace: ReplaceOption = False,
) -> None:
    """Load documents (text passages or images)."""

    from qrelkit.commands import data

    _loaded(data.load_documents(db, file, name=name, image_root=image_root, replace=replace))


@load_app.command("runs")
def load_runs(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="TREC run files, or folders of them (READMEs, hidden and other non-run files are skipped and named). "
            "A run's name is its file name without extension; NIST's `input.<tag>.gz` is named <tag>."
        ),
    ],
    db: DbOption = DEFAULT_DB,
    name: Annotated[str | None, typer.Option(help="Name of the run (one file only; default: its file name).")] = None,
    tag_names: Annotated[bool, typer.Option("--tag-names", help="Name each run by its tag column (column 6) instead of its file.")] = False,
    replace: ReplaceOption = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Load TREC runs (`qid Q0 docid rank score tag`): all files in one transaction, so all land or none."""

    from qrelkit.commands import data

    _loaded(data.load_runs(db, paths, name=name, tag_names=tag_names, replace=replace, on_duplicate=on_duplicate))


@load_app.command("qrels")
def load_qrels(
    file: Annotated[Path, typer.Argument(help="TREC qrels (`qid iter docid grade`), or irds:<ir_datasets id>.")],
    db: DbOption = DEFAULT_DB,
    name: Annotated[str | None, typer.Option(help="Name of the qrels set (default: file name).")] = None,
    replace: ReplaceOption = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Load human (or any) qrels as a named qrels set. Loaded sets are never overwritten by grading."""

    from qrelkit.commands import data

    _loaded(data.load_qrels(db, file, name=name, replace=replace, on_duplicate=on_duplicate))


@app.command()
def show(db: DbOption = DEFAULT_DB, as_json: JsonOption = False) -> None:
    """Show what the database holds: topics, documents, runs, each qrels set with its origin, judge runs
    (--json: each with its stored fields)."""

    from qrelkit.commands import data
    from qrelkit.report import tables

    if as_json:
        print_json(data.contents(db))
        return
    out.print(tables.summary_table(str(db), data.show(db)))


@app.command()
def evaluate(
    qrels: Annotated[str, typer.Option(help="A TREC qrels file, irds:<ir_datasets id>, or the name of a qrels set in --db.")],
    runs: RunsOption = None,
    measure: MeasureOption = None,
    config: ConfigOption = None,
    db: DbOption = DEFAULT_DB,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON: measures, queries, averaging, runs → measure → mean (= --format json).")
    ] = False,
    per_query: Annotated[bool, typer.Option("--per-query", help="Also print each query's value.")] = False,
    output: Annotated[
        str, typer.Option("--format", help="table, json, or trec (trec_eval -q's output, byte for byte: -c unless --average run).")
    ] = "table",
    average: Annotated[
        str,
        typer.Option("--average", help="What a mean runs over: qrels (every query of the qrels, a missed one scoring 0; default) or run."),
    ] = "qrels",
    max_rel: Annotated[
        int | None, typer.Option("--max-rel", help="Score under qrels cut to at most M relevant items per query (seed 001, Table 2).")
    ] = None,
    keep: KeepOption = "top-grade",
    rel_level: MaxRelLevelOption = None,
    seed: MaxRelSeedOption = 0,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Score runs under qrels (ir_measures; default nDCG@10).

    Means run over the queries of the qrels; a run that misses one scores 0 on it (--average run:
    over the queries each run covers). Run scores are read as float32 and ties broken by docid
    descending, as trec_eval does.
    """

    from qrelkit.commands import data
    from qrelkit.report import tables

    data.check_format(output)
    evaluation = data.evaluate(
        qrels,
        runs or [],
        measure,
        db,
        on_duplicate=on_duplicate,
        average=average,
        max_rel=max_rel,
        keep=keep,
        seed=seed,
        rel_level=rel_level,
        trec_layout=output == "trec" and not as_json,
    )
    if as_json or output == "json":
        print_json(evaluation.to_dict(per_query))
        return
    if output == "trec":
        # stdout is trec_eval's, byte for byte; what the means run over goes to stderr
        err.print(f"means {evaluation.describe_average()}" + (f"; qrels cut to {evaluation.qrels_cut}" if evaluation.qrels_cut else ""))
        print_lines(tables.trec_eval_lines(evaluation))
        return
    out.print(tables.evaluation_table(evaluation, evaluation.qrels_cut))
    if per_query:
        print_lines(tables.per_query_lines(evaluation))


@app.command()
def correlate(
    qrels: Annotated[list[str], typer.Option("--qrels", help="Qrels files or stored sets; repeatable (orderings under each).")],
    runs: RunsOption = None,
    measure: MeasureOption = None,
    max_rel: Annotated[
        list[int] | None, typer.Option("--max-rel", help="Also the first qrels cut to at most M relevant per query; repeatable.")
    ] = None,
    keep: KeepOption = "top-grade",
    rel_level: MaxRelLevelOption = None,
    seed: MaxRelSeedOption = 0,
    scores: Annotated[
        list[Path] | None,
        typer.Option(
            "--scores",
            help="More orderings: `qrelkit fd --json` output (its FD@k, URR-FD@k) or `run score` lines; repeatable.",
        ),
    ] = None,
    config: ConfigOption = None,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Kendall τ-b, Spearman ρ and τ_AP between orderings of the same runs: between measures (seed 000,
    Table 3; FD@k through `qrelkit fd --json > fd.json` and --scores fd.json), between qrels sets, or
    between full and cut qrels (--max-rel; seed 001, Table 2)."""

    from qrelkit.commands.correlate import correlate as run_correlate
    from qrelkit.report import tables

    result = run_correlate(
        qrels=qrels,
        runs=runs or [],
        measures=measure,
        db=db,
        max_rel=max_rel,
        keep=keep,
        seed=seed,
        rel_level=rel_level,
        on_duplicate=on_duplicate,
        scores=tuple(scores or ()),
    )
    if as_json:
        print_json(result.to_dict())
        return
    for table in tables.correlation_tables(result):
        out.print(table)


@import_app.command("scores")
def import_scores(
    file: Annotated[Path, typer.Argument(help="`qid docid score` lines (TSV or spaces), or a TREC qrels file.")],
    name: Annotated[str, typer.Option(help="Name of the imported judge run (use it as --judge-run NAME).")],
    db: DbOption = DEFAULT_DB,
    replace: Annotated[bool, typer.Option("--replace", help="Replace an earlier import of the same name from another file.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Store scores made by any tool (UMBRELA's output, a colleague's run) as a judge run of origin
    `imported`, so `grade`, `agree` and `report` work on it."""

    from qrelkit.commands import judging

    result = judging.import_scores(db, file, name=name, replace=replace)
    if as_json:
        print_json(result.__dict__)
        return
    verb = {"imported": "imported", "replaced": "replaced", "unchanged": "already imported, unchanged:"}[result.status]
    out.print(f"{verb} {result.rows or ''} scores as judge run {result.judge_run_id} ({result.name!r})".replace("  ", " "), highlight=False)


@export_app.command("qrels")
def export_qrels(
    output: Annotated[Path, typer.Argument(help="Where to write TREC qrels.")],
    judge_run: Annotated[
        str | None, typer.Option("--judge-run", help="Export the qrels set this judge run's job graded (or its only graded set).")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Or: the qrels set with this name.")] = None,
    db: DbOption = DEFAULT_DB,
    force: ForceOption = False,
) -> None:
    """Write a qrels set (graded from a judge run, or loaded) as a TREC qrels file."""

    from qrelkit.commands import judging

    qrels, note = judging.export_qrels_file(db, output, judge_run_id=judge_run, name=name, force=force)
    if note:
        err.print(note, highlight=False)
    out.print(f"wrote {len(qrels)} judgments of {qrels.name!r} to {output}", highlight=False)


@export_app.command("judgments")
def export_judgments(
    output: Annotated[Path, typer.Argument(help="Where to write: OUT.parquet, OUT.csv or OUT.jsonl (the suffix chooses the format).")],
    judge_run: Annotated[str | None, typer.Option("--judge-run", help="One judge run (id, unique prefix or name); default: all.")] = None,
    db: DbOption = DEFAULT_DB,
    force: ForceOption = False,
) -> None:
    """Write judgments with every stored field (raw output, score, parsed and expected grade, status,
    error, tokens, latency, cost, attempts, model id, fingerprint, time; the run's judge and template)."""

    from qrelkit.commands import judging

    rows, runs = judging.export_judgments(db, output, judge_run=judge_run, force=force)
    out.print(f"wrote {rows} judgments of {len(runs)} judge run(s) ({', '.join(runs) or 'none'}) to {output}", highlight=False)

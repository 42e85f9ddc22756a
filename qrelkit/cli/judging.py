"""`qrelkit prompts | judges | judge | grade | demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from qrelkit.cli.base import DEFAULT_DB, DbOption, JsonOption, app, err, out, print_json, print_lines, prompts_app


@prompts_app.command("list")
def prompts_list(as_json: JsonOption = False) -> None:
    """List the built-in templates (ids usable as `template:` in a job)."""

    from qrelkit.commands import judging
    from qrelkit.report import tables

    templates = judging.builtin_templates()
    if as_json:
        print_json(judging.templates_payload(templates))
        return
    out.print(tables.prompts_table(templates))


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

    from qrelkit.commands import judging
    from qrelkit.prompts import load_template

    if topic is None and doc is None:
        t = load_template(template)
        out.print(f"id {t.id} version {t.version} sha256 {t.content_hash}", highlight=False)
        print(t.model_dump_json(indent=1))
        return
    print_lines([str(judging.render_pair(template, db, topic, doc))])


@app.command("judges")
def judges_list(
    name: Annotated[str | None, typer.Argument(help="One judge, with its options' allowed values.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List the registered judges and their options (entry-point group `qrelkit.judges`)."""

    from qrelkit.judges import describe_judges
    from qrelkit.report import tables

    judges = describe_judges(name)
    if as_json:
        print_json(judges)
        return
    for table in tables.judges_tables(judges):
        out.print(table)


@app.command()
def judge(
    job: Annotated[Path, typer.Argument(help="Job YAML: database, collection, pool, judge, template, grading.")],
    limit: Annotated[
        int | None, typer.Option(help="A cap on this run's calls: the first N pending pairs in pool order (not a sample: see --sample).")
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample", help="Judge N pairs of the pool spread over every topic (stratified; a larger N later judges only the difference)."
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the --sample order (default 0).")] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Only count (what it would load; pairs, done, failed, to judge), estimate cost and run the checks made before "
            "judging (database, grading target, template grades); writes nothing.",
        ),
    ] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Judge failed pairs (parse/model/input errors) again.")] = False,
    grade: Annotated[bool, typer.Option("--grade/--no-grade", help="Grade into qrels when the job has `grading`.")] = True,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a job setting: KEY.PATH=VALUE (YAML value), e.g. judge.options.batch_size=32."),
    ] = None,
    executor: Annotated[
        str | None, typer.Option("--executor", help="local (one judge in this process) or ray (Ray actors); overrides the job's.")
    ] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Ray workers, each with its own judge (with --executor ray).")] = None,
    on_duplicate: Annotated[
        str | None,
        typer.Option(
            "--on-duplicate",
            help="A repeated (qid, docid) in a run or qrels file: error, first, last or max (job key collection.on_duplicate).",
        ),
    ] = None,
    allow_import: Annotated[
        bool, typer.Option("--allow-import", help="Allow a `judge.name: module:Class` job to import and run that Python module.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress output.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run's report as JSON.")] = False,
    mode: Annotated[
        str | None, typer.Option("--mode", help="sync (a live request per pair) or batch (the Batch API: half price, within 24 h).")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Batch mode: check with backoff until every batch is collected.")] = False,
) -> None:
    """Run a judging job. Resumable: running it again judges only what is missing.

    Judgments are committed every few seconds; Ctrl-C stops cleanly after writing what was judged.
    A judge that fails the same way on `max_consecutive_failures` pairs in a row (default 20) stops
    the job; a job whose judgments mostly failed exits 3. In batch mode (`--mode batch`, or the
    judge option `mode: batch`) the pairs go out in Batch API files; running the job again (or
    `qrelkit batches`) collects the finished batches (docs/openai-batch.md). `--executor ray
    --workers N` judges on Ray actors (the `ray` extra; see docs/ray.md); this process stays the
    only writer.
    """

    from qrelkit.commands import judging
    from qrelkit.commands.sweep import sweep_of
    from qrelkit.jobs import JobStopped
    from qrelkit.report import tables
    from qrelkit.report.progress import progress_output

    if sweep_of(job) is not None:  # one judge run per cell of the sweep (docs/compare.md)
        from qrelkit.cli.compare import judge_sweep

        options: dict[str, Any] = dict(sample=sample, seed=seed, mode=mode, executor=executor, workers=workers, on_duplicate=on_duplicate)
        options |= dict(sets=overrides, limit=limit, retry_failed=retry_failed, grade=grade, wait=wait, allow_import=allow_import)
        return judge_sweep(job, quiet=quiet, as_json=as_json, dry_run=dry_run, **options)
    spec = judging.load_judging_job(
        job,
        sets=overrides,
        sample=sample,
        seed=seed,
        mode=mode,
        executor=executor,
        workers=workers,
        on_duplicate=on_duplicate,
        allow_import=allow_import,
    )
    try:
        with progress_output(f"judging {job.name}", console=err, enabled=not (quiet or as_json or dry_run)) as progress:
            outcome = judging.run_judging(
                spec, limit=limit, dry_run=dry_run, retry_failed=retry_failed, grade=grade, progress=progress, wait=wait
            )
    except JobStopped as stopped:
        for line in tables.describe_job(stopped.report):
            err.print(line, highlight=False)
        raise
    if as_json:
        print_json(outcome.to_dict())
    else:
        for line in tables.describe_job(outcome.report, dry_run=dry_run, limit=limit):
            out.print(line, highlight=False)
        for line in tables.describe_grading(outcome.grading) if outcome.grading else []:
            out.print(line, highlight=False)
    if outcome.report.interrupted:
        raise typer.Exit(130)


@app.command("grade")
def grade_cmd(
    judge_run: Annotated[str, typer.Option("--judge-run", help="Judge run: id, unique id prefix, or name.")],
    db: DbOption = DEFAULT_DB,
    method: Annotated[str | None, typer.Option(help="quantile (default), thresholds, identity (scores are grades) or map.")] = None,
    quantiles: Annotated[str | None, typer.Option(help="Cut points as quantiles of the scores (default 0.5,0.75).")] = None,
    thresholds: Annotated[str | None, typer.Option(help="Fixed cut points, e.g. 0.3,0.5 (method thresholds).")] = None,
    labels: Annotated[
        str | None,
        typer.Option(
            help="Grades for the intervals between cut points (default 0,1,2); increasing for quantiles, any for thresholds "
            "(0,1,1 merges two intervals; 2,1,0 grades distances)."
        ),
    ] = None,
    per_topic: Annotated[
        bool | None,
        typer.Option(
            "--per-topic/--global",
            help="Quantiles within each topic (the default, as in job files) or over all scores; thresholds, identity and map "
            "grade all scores alike (--global is what they do).",
        ),
    ] = None,
    ties: Annotated[
        str | None,
        typer.Option(
            "--ties", help="Tied scores: midrank (default; a tie is never split) or at-or-above (seed 003: score >= the quantile value)."
        ),
    ] = None,
    grade_map: Annotated[str | None, typer.Option("--map", help="Score (or LOW-HIGH range) to grade, e.g. 3:2,2:2,1:1,0:0.")] = None,
    score_from: Annotated[
        str | None, typer.Option("--score-from", help="Which score: score (the judge's own, default), parsed, or expected.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Name of the qrels set (default graded-<judge run>).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Grade again into a set graded before (never a loaded one).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Grade a judge run's scores into qrels. Quantile grading (Yang and Lin, LLM4Eval workshop at SIGIR 2024): below the
    median 0, to the 75th percentile 1, above 2; per topic unless --global; tied scores share a grade (--ties)."""

    from qrelkit.commands import judging
    from qrelkit.report import tables

    spec = judging.grading_from_flags(
        method=method,
        quantiles=quantiles,
        thresholds=thresholds,
        labels=labels,
        per_topic=per_topic,
        ties=ties,
        grade_map=grade_map,
        score_from=score_from,
        name=name,
    )
    result = judging.grade_run(db, judge_run, spec, replace=replace)
    note = tables.judge_run_match_note(judge_run, result.description["judge_run_id"], result.matched_by)
    if note:
        err.print(note, highlight=False)
    if as_json:
        print_json({"qrels": result.qrels.name, "grades": result.grade_counts(), **result.description})
        return
    for line in tables.describe_grading(result):
        out.print(line, highlight=False)


@app.command()
def demo(out_dir: Annotated[Path, typer.Option("--out", help="Folder for the demo's database and qrels.")] = Path("demo-out")) -> None:
    """Judge the bundled toy collection with MiniLM, grade, and compare system rankings with the human qrels."""

    from qrelkit.commands.demo import run_demo
    from qrelkit.report import tables
    from qrelkit.report.progress import progress_output

    with progress_output("judging the demo collection", console=err) as progress:
        result = run_demo(out_dir, progress=progress)
    for line in tables.demo_lines(result):
        out.print(line, highlight=False)

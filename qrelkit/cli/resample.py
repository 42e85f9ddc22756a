"""`qrelkit resample restrain | resttest | evaluate | overlap`: interpolation and extrapolation
(Zhan et al., CIKM 2022)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from qrelkit.cli.base import DuplicateOption, ForceOption, app, out, print_json

resample_app = typer.Typer(
    help="Interpolation and extrapolation (Zhan et al., CIKM 2022): resample training (and test) queries by "
    "query similarity (ReSTrain, ReSTTest), score runs in both regimes, measure train/test overlap.",
    no_args_is_help=True,
)
app.add_typer(resample_app, name="resample")

TrainTopics = Annotated[
    Path, typer.Option("--train-topics", help="Training query texts: TSV `qid<TAB>text` (MS MARCO queries.train.tsv) or JSONL.")
]
TestTopics = Annotated[Path, typer.Option("--test-topics", help="Test query texts: TSV `qid<TAB>text` or JSONL.")]
TrainQrels = Annotated[Path, typer.Option("--train-qrels", help="Training qrels; only queries judged here are training queries.")]
TestQrelsFilter = Annotated[Path | None, typer.Option("--test-qrels", help="Keep only the test queries judged in these qrels.")]
ResampleOut = Annotated[Path, typer.Option("--out", help="Folder for the training qrels, query lists and the parameters JSON.")]
ResampleEmbedder = Annotated[
    str, typer.Option("--embedder", help="minilm, or a sentence-transformers path or hub id (with --backend torch).")
]
ResampleBackend = Annotated[str, typer.Option("--backend", help="For minilm: onnx (int8, no torch) or torch.")]
ResampleCache = Annotated[Path | None, typer.Option("--cache", help="A qrelkit database that keeps the query embeddings between runs.")]
ResampleSeed = Annotated[int, typer.Option("--seed", help="Seed (ReSTrain: the extrapolation sample; ReSTTest: k-means).")]
ResampleJson = Annotated[bool, typer.Option("--json", help="Print the parameters JSON written beside the files.")]


def _embedder_choice(embedder: str, backend: str, cache: Path | None, quiet: bool):
    from qrelkit.commands.resample import EmbedderChoice

    return EmbedderChoice(embedder, backend, cache=cache, progress=not quiet)


@resample_app.command("restrain")
def resample_restrain(
    train_topics: TrainTopics,
    test_topics: TestTopics,
    train_qrels: TrainQrels,
    out_dir: ResampleOut,
    interpolate_top: Annotated[
        int, typer.Option("--interpolate-top", help="I: the interpolation set is the top-I training queries of each test query.")
    ],
    exclude_top: Annotated[
        int, typer.Option("--exclude-top", help="E: the extrapolation set excludes the top-E training queries of each test query.")
    ],
    extrapolation_size: Annotated[
        str | None,
        typer.Option("--extrapolation-size", help="Cap the extrapolation set: N queries, or 'match' (the interpolation set's size)."),
    ] = None,
    seed: ResampleSeed = 0,
    test_qrels: TestQrelsFilter = None,
    embedder: ResampleEmbedder = "minilm",
    backend: ResampleBackend = "onnx",
    cache: ResampleCache = None,
    as_json: ResampleJson = False,
    force: ForceOption = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """ReSTrain (Zhan et al. §4.1.2): keep the test set; write an interpolation training set (each test
    query's top-I most similar training queries, by the cosine of query embeddings) and an extrapolation
    training set (every training query outside each test query's top E), as TREC training qrels
    (interpolate.train-qrel.txt, extrapolate.train-qrel.txt), query lists and restrain.json. Train a
    model on each and score both with `qrelkit resample evaluate --interpolation-runs --extrapolation-runs`.
    """
    from qrelkit.commands.resample import run_restrain
    from qrelkit.report.interex import resample_tables

    output = run_restrain(
        train_topics=train_topics,
        test_topics=test_topics,
        train_qrels=train_qrels,
        out_dir=out_dir,
        interpolation_per_query=interpolate_top,
        exclusion_per_query=exclude_top,
        extrapolation_size=extrapolation_size,
        seed=seed,
        test_qrels=test_qrels,
        embedder=_embedder_choice(embedder, backend, cache, as_json),
        on_duplicate=on_duplicate,
        force=force,
    )
    _show(output, resample_tables, as_json)


@resample_app.command("resttest")
def resample_resttest(
    train_topics: TrainTopics,
    test_topics: TestTopics,
    train_qrels: TrainQrels,
    out_dir: ResampleOut,
    k: Annotated[int, typer.Option("--k", help="Buckets (the paper: 5).")] = 5,
    seed: ResampleSeed = 0,
    test_qrels: TestQrelsFilter = None,
    embedder: ResampleEmbedder = "minilm",
    backend: ResampleBackend = "onnx",
    cache: ResampleCache = None,
    as_json: ResampleJson = False,
    force: ForceOption = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """ReSTTest (Zhan et al. §4.1.3): k-means over training and test query embeddings together. For each
    bucket B it writes B.train-qrel.txt (the other buckets' training queries), B.interpolate.qids (the other
    buckets' test queries), B.extrapolate.qids (its own test queries) and resttest.json. Train a model per
    bucket and score with `qrelkit resample evaluate --buckets OUT --bucket-runs DIR`.
    """
    from qrelkit.commands.resample import run_resttest
    from qrelkit.report.interex import resample_tables

    output = run_resttest(
        train_topics=train_topics,
        test_topics=test_topics,
        train_qrels=train_qrels,
        out_dir=out_dir,
        k=k,
        seed=seed,
        test_qrels=test_qrels,
        embedder=_embedder_choice(embedder, backend, cache, as_json),
        on_duplicate=on_duplicate,
        force=force,
    )
    _show(output, resample_tables, as_json)


@resample_app.command("evaluate")
def resample_evaluate(
    qrels: Annotated[Path, typer.Option("--qrels", help="The test qrels (TREC).")],
    buckets: Annotated[
        Path | None, typer.Option("--buckets", help="ReSTTest: folder of NAME.extrapolate.qids (+ NAME.interpolate.qids).")
    ] = None,
    runs: Annotated[
        list[str] | None, typer.Option("--runs", help="ReSTTest: run files or folders scored on every bucket; repeatable.")
    ] = None,
    bucket_runs: Annotated[
        Path | None, typer.Option("--bucket-runs", help="ReSTTest: DIR/NAME/ holds the runs of models trained for bucket NAME.")
    ] = None,
    interpolation_runs: Annotated[
        list[str] | None,
        typer.Option("--interpolation-runs", help="ReSTrain: runs of models trained on the interpolation set; repeatable."),
    ] = None,
    extrapolation_runs: Annotated[
        list[str] | None,
        typer.Option("--extrapolation-runs", help="ReSTrain: the same models trained on the extrapolation set (same run names)."),
    ] = None,
    measure: Annotated[list[str] | None, typer.Option("--measure", help="An ir_measures measure; repeatable. Default nDCG@10.")] = None,
    resamples: Annotated[
        int | None, typer.Option("--resamples", help="Query resamples for the 95% intervals (0: none; default 1000).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the query resamples.")] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON: runs -> measure -> split -> interpolation, extrapolation, delta.")
    ] = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """Score runs in the two regimes with Δ = Extra./Inter. − 1 (Zhan et al., Tables 6–9). ReSTTest
    (--buckets): each bucket's interpolation and extrapolation queries, then the average over buckets
    (interpolation: the mean of the buckets' scores; extrapolation: every query once, in its own bucket)
    and the pooled form (each query's k − 1 interpolation scores averaged). ReSTrain
    (--interpolation-runs, --extrapolation-runs): every test query, scored by each model trained both ways.
    """
    from qrelkit.commands.resample import run_evaluate
    from qrelkit.report.interex import evaluation_tables

    result = run_evaluate(
        qrels=qrels,
        measures=measure or ["nDCG@10"],
        buckets=buckets,
        runs=runs or [],
        bucket_runs=bucket_runs,
        interpolation_runs=interpolation_runs or [],
        extrapolation_runs=extrapolation_runs or [],
        resamples=1000 if resamples is None else resamples,
        seed=seed,
        on_duplicate=on_duplicate,
    )
    _show(result, evaluation_tables, as_json)


@resample_app.command("overlap")
def resample_overlap(
    qrels: Annotated[Path | None, typer.Option("--qrels", help="The test qrels (TREC, graded).")] = None,
    train_qrels: Annotated[list[Path] | None, typer.Option("--train-qrels", help="Training qrels to compare with; repeatable.")] = None,
    level: Annotated[
        list[int] | None, typer.Option("--level", help="Test grade level t (passages with grade >= t); repeatable. Default 1, 2, 3.")
    ] = None,
    train_rel_level: Annotated[int, typer.Option("--train-rel-level", help="A training passage is a positive at grade >= this.")] = 1,
    topics: Annotated[Path | None, typer.Option("--topics", help="Test query texts, for the duplicate-query listing.")] = None,
    train_topics: Annotated[
        Path | None, typer.Option("--train-topics", help="Training query texts, for the duplicate-query listing.")
    ] = None,
    threshold: Annotated[
        float, typer.Option("--threshold", help="List a test query when its nearest training query's cosine reaches this.")
    ] = 0.85,
    embedder: ResampleEmbedder = "minilm",
    backend: ResampleBackend = "onnx",
    cache: ResampleCache = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: label_overlap per training file, duplicates.")] = False,
    on_duplicate: DuplicateOption = "error",
) -> None:
    """How much a test set overlaps its training set (Zhan et al. §3.2). Table 3: the test queries with at
    least one passage of grade >= t that is also a training positive, for each --level t (the authors'
    script counts only queries sharing more than one; both are shown). Table 4: with --topics and
    --train-topics, each test query's most similar training query at cosine >= --threshold.
    """
    from qrelkit.commands.resample import run_overlap
    from qrelkit.report.interex import overlap_tables

    report = run_overlap(
        qrels=qrels,
        train_qrels=train_qrels or [],
        levels=level or [1, 2, 3],
        train_rel_level=train_rel_level,
        topics=topics,
        train_topics=train_topics,
        threshold=threshold,
        embedder=_embedder_choice(embedder, backend, cache, as_json),
        on_duplicate=on_duplicate,
    )
    _show(report, overlap_tables, as_json)


def _show(result: Any, tables: Callable[[Any], Iterable[Any]], as_json: bool) -> None:
    """A resample result as JSON or as its tables."""
    if as_json:
        print_json(result.to_dict())
        return
    for table in tables(result):
        out.print(table)

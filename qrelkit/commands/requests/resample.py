"""`qrelkit resample restrain | resttest | evaluate | overlap`: interpolation and extrapolation (Zhan et
al., CIKM 2022)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.fields import Request, integers, option, optional_path, paths, strings
from qrelkit.commands.requests.parts import EmbedderRef, force_option, on_duplicate_option, resamples_option
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import check_seed
from qrelkit.io.duplicates import OnDuplicate


def _train_topics() -> Any:
    return option("--train-topics", "Training query texts: TSV `qid<TAB>text` (MS MARCO queries.train.tsv) or JSONL.", parse=Path)


def _test_topics() -> Any:
    return option("--test-topics", "Test query texts: TSV `qid<TAB>text` or JSONL.", parse=Path)


def _train_qrels() -> Any:
    return option("--train-qrels", "Training qrels; only queries judged here are training queries.", parse=Path)


def _test_qrels() -> Any:
    return option("--test-qrels", "Keep only the test queries judged in these qrels.", None, parse=optional_path)


def _seed() -> Any:
    return option("--seed", "Seed (ReSTrain: the extrapolation sample; ReSTTest: k-means).", 0, parse=check_seed)


def _out() -> Any:
    return option("--out", "Folder for the training qrels, query lists and the parameters JSON.", parse=Path)


@dataclass(frozen=True)
class EmbeddedQueries(Request):
    """What a resampling that embeds query texts is asked besides its own options: the embedder and
    the cache that keeps the vectors between runs."""

    embedder: str = option("--embedder", "minilm, or a sentence-transformers path or hub id (with --backend torch).", "minilm")
    backend: str = option("--backend", "For minilm: onnx (int8, no torch) or torch.", "onnx")
    cache: Path | None = option("--cache", "A qrelkit database that keeps the query embeddings between runs.", None, parse=optional_path)
    on_duplicate: OnDuplicate = on_duplicate_option()

    uses_db = False

    @property
    def embedder_ref(self) -> EmbedderRef:
        return EmbedderRef(self.embedder, self.backend)


@dataclass(frozen=True)
class RestrainRequest(EmbeddedQueries):
    """ReSTrain (Zhan et al. §4.1.2): keep the test set; write an interpolation training set (each test
    query's top-I most similar training queries, by the cosine of query embeddings) and an extrapolation
    training set (every training query outside each test query's top E), as TREC training qrels
    (interpolate.train-qrel.txt, extrapolate.train-qrel.txt), query lists and restrain.json. Train a
    model on each and score both with `qrelkit resample evaluate --interpolation-runs --extrapolation-runs`."""

    train_topics: Path = _train_topics()
    test_topics: Path = _test_topics()
    train_qrels: Path = _train_qrels()
    out_dir: Path = _out()
    interpolate_top: int = option("--interpolate-top", "I: the interpolation set is the top-I training queries of each test query.")
    exclude_top: int = option("--exclude-top", "E: the extrapolation set excludes the top-E training queries of each test query.")
    extrapolation_size: str | None = option(
        "--extrapolation-size", "Cap the extrapolation set: N queries, or 'match' (the interpolation set's size).", None
    )
    seed: int = _seed()
    test_qrels: Path | None = _test_qrels()
    force: bool = force_option()

    use_case = "qrelkit.commands.resample:run_restrain"
    document = "qrelkit.commands.documents.resample:split"


@dataclass(frozen=True)
class ResttestRequest(EmbeddedQueries):
    """ReSTTest (Zhan et al. §4.1.3): k-means over training and test query embeddings together. For each
    bucket B it writes B.train-qrel.txt (the other buckets' training queries), B.interpolate.qids (the other
    buckets' test queries), B.extrapolate.qids (its own test queries) and resttest.json. Train a model per
    bucket and score with `qrelkit resample evaluate --buckets OUT --bucket-runs DIR`."""

    train_topics: Path = _train_topics()
    test_topics: Path = _test_topics()
    train_qrels: Path = _train_qrels()
    out_dir: Path = _out()
    k: int = option("--k", "Buckets (the paper: 5).", 5)
    seed: int = _seed()
    test_qrels: Path | None = _test_qrels()
    force: bool = force_option()

    use_case = "qrelkit.commands.resample:run_resttest"
    document = "qrelkit.commands.documents.resample:split"


@dataclass(frozen=True)
class ResampleEvaluateRequest(Request):
    """Score runs in the two regimes with Δ = Extra./Inter. − 1 (Zhan et al., Tables 6–9). ReSTTest
    (--buckets): each bucket's interpolation and extrapolation queries, then the average over buckets
    (interpolation: the mean of the buckets' scores; extrapolation: every query once, in its own bucket)
    and the pooled form (each query's k − 1 interpolation scores averaged). ReSTrain
    (--interpolation-runs, --extrapolation-runs): every test query, scored by each model trained both ways."""

    qrels: Path = option("--qrels", "The test qrels (TREC).", parse=Path)
    buckets: Path | None = option(
        "--buckets", "ReSTTest: folder of NAME.extrapolate.qids (+ NAME.interpolate.qids).", None, parse=optional_path
    )
    runs: tuple[str, ...] = option("--runs", "ReSTTest: run files or folders scored on every bucket; repeatable.", (), parse=strings)
    bucket_runs: Path | None = option(
        "--bucket-runs", "ReSTTest: DIR/NAME/ holds the runs of models trained for bucket NAME.", None, parse=optional_path
    )
    interpolation_runs: tuple[str, ...] = option(
        "--interpolation-runs", "ReSTrain: runs of models trained on the interpolation set; repeatable.", (), parse=strings
    )
    extrapolation_runs: tuple[str, ...] = option(
        "--extrapolation-runs", "ReSTrain: the same models trained on the extrapolation set (same run names).", (), parse=strings
    )
    measures: tuple[str, ...] = option(
        "--measure", "An ir_measures measure; repeatable. Default nDCG@10.", ("nDCG@10",), parse=lambda v: strings(v) or ("nDCG@10",)
    )
    resamples: int = resamples_option("Query resamples for the 95% intervals (0: none).")
    seed: int = option("--seed", "Seed of the query resamples.", 0, parse=check_seed)
    on_duplicate: OnDuplicate = on_duplicate_option()

    use_case = "qrelkit.commands.resample:run_evaluate"
    document = "qrelkit.commands.documents.resample:regimes"
    uses_db = False

    def check(self) -> None:
        if self.buckets is not None:
            if self.interpolation_runs or self.extrapolation_runs:
                raise QrelkitError("--buckets (ReSTTest) takes --runs or --bucket-runs, not --interpolation-runs/--extrapolation-runs")
            return
        if not self.interpolation_runs or not self.extrapolation_runs:
            raise QrelkitError(
                "give --buckets (ReSTTest), or --interpolation-runs and --extrapolation-runs "
                "(ReSTrain: each model trained on each training set)"
            )


@dataclass(frozen=True)
class OverlapRequest(EmbeddedQueries):
    """How much a test set overlaps its training set (Zhan et al. §3.2). Table 3: the test queries with at
    least one passage of grade >= t that is also a training positive, for each --level t (the authors'
    script counts only queries sharing more than one; both are shown). Table 4: with --topics and
    --train-topics, each test query's most similar training query at cosine >= --threshold."""

    qrels: Path | None = option("--qrels", "The test qrels (TREC, graded).", None, parse=optional_path)
    train_qrels: tuple[Path, ...] = option("--train-qrels", "Training qrels to compare with; repeatable.", (), parse=paths)
    levels: tuple[int, ...] = option(
        "--level",
        "Test grade level t (passages with grade >= t); repeatable. Default 1, 2, 3.",
        (1, 2, 3),
        parse=lambda v: integers(v) or (1, 2, 3),
    )
    train_rel_level: int = option("--train-rel-level", "A training passage is a positive at grade >= this.", 1)
    topics: Path | None = option("--topics", "Test query texts, for the duplicate-query listing.", None, parse=optional_path)
    train_topics: Path | None = option(
        "--train-topics", "Training query texts, for the duplicate-query listing.", None, parse=optional_path
    )
    threshold: float = option("--threshold", "List a test query when its nearest training query's cosine reaches this.", 0.85)

    use_case = "qrelkit.commands.resample:run_overlap"
    document = "qrelkit.commands.documents.resample:overlap"

    def check(self) -> None:
        if (self.topics is None) != (self.train_topics is None):
            raise QrelkitError("the duplicate listing needs both --topics (test queries) and --train-topics (training queries)")
        if self.train_qrels and self.qrels is None:
            raise QrelkitError("label overlap needs the test --qrels")
        if not self.train_qrels and self.topics is None:
            raise QrelkitError("give --train-qrels (label overlap) and/or --topics with --train-topics (duplicate queries)")

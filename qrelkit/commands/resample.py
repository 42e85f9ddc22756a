"""`qrelkit resample`: interpolation and extrapolation (Zhan et al., CIKM 2022).

Reads the files (query texts, qrels, runs, bucket qid lists), embeds query texts with a text
embedder, calls `qrelkit.evaluate.interex`, and writes training qrels, query lists and a small JSON
of the parameters and the embedder beside them. Everything is computed before anything is
written, so a bad input leaves earlier outputs as they were.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.commands.requests import OverlapRequest, ResampleEvaluateRequest, RestrainRequest, ResttestRequest
from qrelkit.commands.requests.resample import EmbeddedQueries
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import InputFormatError, QrelkitError
from qrelkit.evaluate.interex import (
    BucketQueries,
    DuplicateQuery,
    LabelOverlap,
    ReSTrainEvaluation,
    ReSTrainSplit,
    ReSTTestEvaluation,
    ReSTTestSplit,
    duplicate_queries,
    evaluate_restrain,
    evaluate_resttest,
    label_overlap,
    restrain,
    resttest,
)
from qrelkit.io import Qrels, file_sha256, read_qrels, read_runs, read_topics, write_qrels
from qrelkit.io.files import check_output, write_atomically
from qrelkit.io.qids import read_qid_list, write_qid_list

PAPER = "Zhan et al., Evaluating Interpolation and Extrapolation Performance of Neural Retrieval Models, CIKM 2022"
EMBED_CHUNK = 16384  # texts per encode call: bounded token lists, a steady progress bar


@dataclass(frozen=True)
class Queries:
    qids: list[str]
    vectors: np.ndarray


@dataclass(frozen=True)
class ResampleOutput:
    """What `resample restrain|resttest` wrote, and the parameters JSON it wrote beside the files."""

    split: ReSTrainSplit | ReSTTestSplit
    out_dir: Path
    files: list[str]
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**self.parameters, "out_dir": str(self.out_dir)}


# --- reading and embedding ------------------------------------------------------------------


def _texts(path: Path) -> dict[str, str]:
    return {topic.qid: topic.text for topic in read_topics(path)}


def _training_texts(train_topics: Path, train_qrels: Qrels) -> dict[str, str]:
    """The texts of the training queries that have judgments (a query without any is no training data)."""
    texts = _texts(train_topics)
    judged = train_qrels.grades
    missing = [qid for qid in judged if qid not in texts]
    if missing:
        raise QrelkitError(
            f"{train_qrels.source}: {len(missing)} training qid(s) have no text in {train_topics}, e.g. {missing[0]!r}; "
            "give the query file the qrels were made for"
        )
    return {qid: text for qid, text in texts.items() if qid in judged}


def _test_texts(test_topics: Path, test_qrels: Path | None) -> dict[str, str]:
    texts = _texts(test_topics)
    if test_qrels is None:
        return texts
    judged = read_qrels(test_qrels).grades
    kept = {qid: text for qid, text in texts.items() if qid in judged}
    if not kept:
        raise QrelkitError(f"no query of {test_topics} is judged in {test_qrels}")
    return kept


def embed_texts(embedder, texts: dict[str, str], cache: Path | None = None) -> Queries:
    """One float32 row per query, in ``texts`` order; through the store's cache when ``cache`` is given."""
    qids = list(texts)
    vectors = np.zeros((len(qids), embedder.dim), np.float32)
    from qrelkit.embed import embed_with_cache

    with contextlib.ExitStack() as opened:
        store = None
        if cache is not None:
            from qrelkit.storage import Store

            store = opened.enter_context(Store(cache))
        for start in range(0, len(qids), EMBED_CHUNK):
            chunk = qids[start : start + EMBED_CHUNK]
            if store is not None:
                found = embed_with_cache(store, embedder, "topic", {qid: texts[qid] for qid in chunk})
                vectors[start : start + len(chunk)] = np.stack([found[qid] for qid in chunk])
            else:
                vectors[start : start + len(chunk)] = embedder.encode([texts[qid] for qid in chunk])
    return Queries(qids, vectors)


# --- writing ------------------------------------------------------------------------------


def _subset(qrels: Qrels, qids: Sequence[str], name: str) -> Qrels:
    keep = set(qids)
    return Qrels(name, tuple(q for q in qrels.entries if q.qid in keep), qrels.source)


def _inputs(paths: dict[str, Path | None]) -> dict[str, Any]:
    return {key: {"path": str(path), "sha256": file_sha256(path)} for key, path in paths.items() if path is not None}


REGIMES = ("interpolate", "extrapolate")
RESTRAIN_FILES = (*(f"{regime}.{kind}" for kind in ("train-qrel.txt", "train.qids") for regime in REGIMES), "restrain.json")
INPUTS = {"--train-topics": "train_topics", "--test-topics": "test_topics", "--train-qrels": "train_qrels", "--test-qrels": "test_qrels"}


def check_outputs(request: RestrainRequest | ResttestRequest, names: Sequence[str]) -> None:
    """Each file a resampling writes into its folder: none over an input, none over an existing file
    without --force (`qrelkit.io.files.check_output`)."""
    inputs = {flag: getattr(request, field) for flag, field in INPUTS.items()}
    for name in names:
        check_output(request.out_dir / name, force=request.force, inputs=inputs)


def _write_outputs(
    request: RestrainRequest | ResttestRequest,
    qrels_files: Mapping[str, Qrels],
    qid_files: Mapping[str, Sequence[str]],
    parameters: dict,
    json_name: str,
) -> list[str]:
    out_dir = request.out_dir
    check_outputs(request, [*qrels_files, *qid_files, json_name])
    for name, qrels in qrels_files.items():
        write_atomically(out_dir / name, partial(write_qrels, qrels))
    for name, qids in qid_files.items():
        write_atomically(out_dir / name, partial(write_qid_list, qids))
    parameters["files"] = sorted([*qrels_files, *qid_files])
    text = json.dumps(parameters, indent=1) + "\n"
    write_atomically(out_dir / json_name, lambda temporary: temporary.write_text(text, encoding="utf-8"))
    return [*parameters["files"], json_name]


def _embedder_record(embedder, request: EmbeddedQueries) -> dict[str, Any]:
    return {"name": request.embedder, "backend": request.backend, "id": embedder.embedder_id, "dim": int(embedder.dim)}


# --- the use cases ------------------------------------------------------------------------


def _prepare(request: RestrainRequest | ResttestRequest, workspace: Workspace):
    train_judgments = read_qrels(request.train_qrels, on_duplicate=request.on_duplicate)
    train_texts = _training_texts(request.train_topics, train_judgments)
    test_texts = _test_texts(request.test_topics, request.test_qrels)
    embedder = request.embedder_ref.load(progress=workspace.shows_progress)
    train, test = (embed_texts(embedder, texts, request.cache) for texts in (train_texts, test_texts))
    return train_judgments, train, test, embedder


def _parameters(protocol: str, request: RestrainRequest | ResttestRequest, model: Any) -> dict[str, Any]:
    inputs = _inputs({name: getattr(request, name) for name in INPUTS.values()})
    return {"protocol": protocol, "reference": PAPER, "embedder": _embedder_record(model, request), "inputs": inputs}


def run_restrain(request: RestrainRequest, workspace: Workspace) -> ResampleOutput:
    """ReSTrain: `interpolate.train-qrel.txt` and `extrapolate.train-qrel.txt` (the authors' file
    names), their query lists, and `restrain.json` (files already there only with --force)."""
    check_outputs(request, RESTRAIN_FILES)
    judgments, train, test, model = _prepare(request, workspace)
    split = restrain(
        test.vectors,
        train.vectors,
        train.qids,
        interpolation_per_query=request.interpolate_top,
        exclusion_per_query=request.exclude_top,
        extrapolation_size=request.extrapolation_size,
        seed=request.seed,
    )
    parameters = {**_parameters("ReSTrain", request, model), "similarity": "cosine", **split.to_dict()}
    lists = dict(zip(REGIMES, (split.interpolation, split.extrapolation)))
    qrels_files = {f"{regime}.train-qrel.txt": _subset(judgments, qids, f"{regime}.train-qrel") for regime, qids in lists.items()}
    qid_files = {f"{regime}.train.qids": qids for regime, qids in lists.items()}
    files = _write_outputs(request, qrels_files, qid_files, parameters, "restrain.json")
    return ResampleOutput(split, request.out_dir, files, parameters)


def run_resttest(request: ResttestRequest, workspace: Workspace) -> ResampleOutput:
    """ReSTTest: per bucket `bucket-K.train-qrel.txt` (the other buckets' training queries),
    `bucket-K.train.qids`, `bucket-K.interpolate.qids`, `bucket-K.extrapolate.qids` (the layout
    `resample evaluate --buckets` reads), and `resttest.json` (files already there only with --force)."""
    check_outputs(request, ["resttest.json"])
    judgments, train, test, model = _prepare(request, workspace)
    split = resttest(test.vectors, test.qids, train.vectors, train.qids, k=request.k, seed=request.seed)
    qrels_files: dict[str, Qrels] = {}
    qid_files: dict[str, tuple[str, ...]] = {}
    for bucket in split.buckets:
        training = split.training_qids(bucket.name)
        qrels_files[f"{bucket.name}.train-qrel.txt"] = _subset(judgments, training, f"{bucket.name}.train-qrel")
        qid_files[f"{bucket.name}.train.qids"] = training
        qid_files[f"{bucket.name}.interpolate.qids"] = split.interpolation_qids(bucket.name)
        qid_files[f"{bucket.name}.extrapolate.qids"] = split.extrapolation_qids(bucket.name)
    clustering = "scikit-learn KMeans (k-means++, n_init=1) on unit-length embeddings"
    parameters = {**_parameters("ReSTTest", request, model), "clustering": clustering, **split.to_dict()}
    files = _write_outputs(request, qrels_files, qid_files, parameters, "resttest.json")
    return ResampleOutput(split, request.out_dir, files, parameters)


def _natural(name: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def read_buckets(folder: Path, qrels: Qrels) -> list[BucketQueries]:
    """`NAME.extrapolate.qids` (and `NAME.interpolate.qids`; derived from the other buckets when
    absent) for each bucket NAME in ``folder``. A qid without judgments is an error at its line."""
    folder = Path(folder)
    if not folder.is_dir():
        raise QrelkitError(f"--buckets {folder}: not a folder (expected NAME.extrapolate.qids files)")
    extrapolation_files = sorted(folder.glob("*.extrapolate.qids"), key=lambda p: _natural(p.name))
    if len(extrapolation_files) < 2:
        raise QrelkitError(f"{folder}: expected the extrapolation query lists of at least 2 buckets (NAME.extrapolate.qids)")
    lists: dict[str, dict[str, dict[str, int]]] = {}
    for path in extrapolation_files:
        name = path.name.removesuffix(".extrapolate.qids")
        lists[name] = {"extrapolate": read_qid_list(path, allow_empty=True)}
        interpolation = folder / f"{name}.interpolate.qids"
        if interpolation.is_file():
            lists[name]["interpolate"] = read_qid_list(interpolation, allow_empty=True)
    judged = qrels.grades
    for name, by_regime in lists.items():
        for regime, qids in by_regime.items():
            for qid, line in qids.items():
                if qid not in judged:
                    raise InputFormatError.single(folder / f"{name}.{regime}.qids", line, f"qid {qid!r} has no judgments in {qrels.source}")
    buckets = []
    for name, by_regime in lists.items():
        derived = [q for other, lists_ in lists.items() if other != name for q in lists_["extrapolate"]]
        interpolation_qids = tuple(by_regime["interpolate"]) if "interpolate" in by_regime else tuple(derived)
        buckets.append(BucketQueries(name, interpolation_qids, tuple(by_regime["extrapolate"])))
    return buckets


def run_evaluate(request: ResampleEvaluateRequest, workspace: Workspace) -> ReSTTestEvaluation | ReSTrainEvaluation:
    """ReSTTest with ``buckets`` (and ``runs`` for every bucket, or ``bucket_runs``/NAME/ per bucket);
    ReSTrain with ``interpolation_runs`` and ``extrapolation_runs`` (one run per model each, same names)."""
    on_duplicate, measures, resamples, seed = request.on_duplicate, list(request.measures), request.resamples, request.seed
    runs, bucket_runs = request.runs, request.bucket_runs
    judgments = read_qrels(request.qrels, on_duplicate=on_duplicate)
    if request.buckets is not None:
        bucket_list = read_buckets(request.buckets, judgments)
        if (not runs) == (bucket_runs is None):
            raise QrelkitError("give either --runs (one run set, scored on every bucket) or --bucket-runs DIR (DIR/<bucket>/ per bucket)")
        if bucket_runs is not None:
            missing = [b.name for b in bucket_list if not (Path(bucket_runs) / b.name).is_dir()]
            if missing:
                raise QrelkitError(f"--bucket-runs {bucket_runs}: no folder {missing[0]!r} with the runs of that bucket's models")
            scored: Any = {b.name: read_runs([Path(bucket_runs) / b.name], on_duplicate=on_duplicate) for b in bucket_list}
        else:
            scored = read_runs(list(runs), on_duplicate=on_duplicate)
        return evaluate_resttest(judgments, bucket_list, scored, measures, resamples=resamples, seed=seed)
    inter = read_runs(list(request.interpolation_runs), on_duplicate=on_duplicate)
    extra = read_runs(list(request.extrapolation_runs), on_duplicate=on_duplicate)
    return evaluate_restrain(judgments, inter, extra, measures, resamples=resamples, seed=seed)


@dataclass(frozen=True)
class OverlapReport:
    """Label overlap (Table 3) against each training qrels file, and the duplicate listing (Table 4)."""

    queries: int
    overlaps: list[LabelOverlap]
    duplicates: list[DuplicateQuery] | None = None
    threshold: float | None = None
    embedder: dict[str, Any] | None = None
    inputs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reference": PAPER, "queries": self.queries, "inputs": self.inputs}
        out["label_overlap"] = [o.to_dict() for o in self.overlaps]
        if self.duplicates is not None:
            out["duplicates"] = {"threshold": self.threshold, "embedder": self.embedder, "pairs": [d.to_dict() for d in self.duplicates]}
        return out


def run_overlap(request: OverlapRequest, workspace: Workspace) -> OverlapReport:
    """Label overlap of the test ``qrels`` with each of ``train_qrels``; with ``topics`` and
    ``train_topics``, each test query's most similar training query at or above ``threshold``."""
    qrels, train_qrels, topics, train_topics = request.qrels, request.train_qrels, request.topics, request.train_topics
    on_duplicate, levels = request.on_duplicate, list(request.levels)
    test = read_qrels(qrels, on_duplicate=on_duplicate) if qrels is not None else None
    train_sets = [read_qrels(path, on_duplicate=on_duplicate) for path in train_qrels]
    overlaps = [label_overlap(test, train, levels, train_rel_level=request.train_rel_level) for train in train_sets] if test else []
    inputs = _inputs({"qrels": qrels, "topics": topics, "train_topics": train_topics})
    inputs["train_qrels"] = [_inputs({"train_qrels": path})["train_qrels"] for path in train_qrels]
    if topics is None or train_topics is None:
        return OverlapReport(len(test.grades) if test else 0, overlaps, inputs=inputs)
    test_texts = _texts(topics)
    if test is not None:
        test_texts = {qid: text for qid, text in test_texts.items() if qid in test.grades}
    train_texts = _texts(train_topics)
    model = request.embedder_ref.load(progress=workspace.shows_progress)
    test_queries = embed_texts(model, test_texts, request.cache)
    train_queries = embed_texts(model, train_texts, request.cache)
    pairs = duplicate_queries(
        test_queries.qids,
        test_queries.vectors,
        train_queries.qids,
        train_queries.vectors,
        threshold=request.threshold,
        test_texts=test_texts,
        train_texts=train_texts,
    )
    count = len(test.grades) if test else len(test_texts)
    return OverlapReport(count, overlaps, pairs, request.threshold, _embedder_record(model, request), inputs)

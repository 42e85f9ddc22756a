"""`qrelkit fd` end to end on the bundled toy collection (MiniLM int8 ONNX, 120 passages)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from stored import count_embeddings
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.fd.runs import FDSettings, fd_of_runs
from qrelkit.io import Qrel, Qrels, Run, RunEntry, read_qrels
from qrelkit.storage import Store

pytest.importorskip("onnxruntime")
DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
runner = CliRunner()


def fd_json(*args: str) -> dict:
    result = runner.invoke(app, ["fd", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def assert_same_numbers(got, expected, path: str = "") -> None:
    """Equal structure and strings; numbers equal to rounding (1e-12 relative)."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), path
        for key in expected:
            assert_same_numbers(got[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), path
        for i, (a, b) in enumerate(zip(got, expected)):
            assert_same_numbers(a, b, f"{path}[{i}]")
    elif isinstance(expected, float):
        assert got == pytest.approx(expected, rel=1e-12, abs=0), path
    else:
        assert got == expected, path


def test_fd_json_ranks_the_good_run_first_with_intervals(tmp_path):
    cache = tmp_path / "cache.duckdb"
    # the demo track, its documents, FD@1 and FD@5 with 100 resamples, embeddings cached
    args = ["--qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs"), "--docs", str(DEMO / "passages.jsonl")]
    args += ["--k", "1", "--k", "5", "--resamples", "100", "--cache", str(cache), "--interval", "percentile"]
    payload = fd_json(*args)
    assert payload["embedder"] == "minilm-l6-v2/onnx-int8" and payload["d"] == 384
    qrels = read_qrels(DEMO / "qrels.txt")
    assert payload["n_rel"] == sum(1 for q in qrels.entries if q.grade >= 2) and payload["rel_level"] == 2
    runs = payload["runs"]
    assert set(runs) == {"good", "lexical", "mixed", "shuffled"}
    for entry in runs.values():
        assert entry["n_ret"] == entry["n_ret@1"] == 12 and entry["n_ret@5"] == 60
        for label in ("FD@1", "FD@5"):
            low, high = entry[f"{label}_ci95"]
            assert 0 <= low <= entry[f"{label}_mean"] <= high
    # the run built to be good is closest to the relevant items; the shuffled one is far
    assert runs["good"]["FD@5"] < runs["mixed"]["FD@5"] < runs["shuffled"]["FD@5"]
    with Store(cache) as store:
        cached = count_embeddings(store, "minilm-l6-v2/onnx-int8")
    assert cached > 0
    again = fd_json(*args, "--workers", "2")
    # cached vectors, same seed: the same numbers, also with the bootstrap in two worker processes
    # (the first call was small enough to stay in-process); every vector reused, none embedded again
    assert (again["embedding"]["reused"], again["embedding"]["embedded"]) == (payload["embedding"]["embedded"], 0)
    assert_same_numbers({**again, "embedding": None}, {**payload, "embedding": None})
    with Store(cache) as store:
        assert count_embeddings(store) == cached


def test_urr_labels_and_sparsification(tmp_path):
    payload = fd_json(
        "--qrels",
        str(DEMO / "qrels.txt"),
        "--runs",
        str(DEMO / "runs" / "good.run"),
        str(DEMO / "runs" / "mixed.run"),
        "--docs",
        str(DEMO / "passages.jsonl"),
        "--urr",
        "--k",
        "2",
        "--max-rel",
        "1",
        "--resamples",
        "0",
    )
    assert payload["n_rel"] == 12 and payload["max_rel"] == 1 and payload["urr"] is True
    entry = payload["runs"]["good"]
    assert "URR-FD@2" in entry and "FD@2" not in entry and "URR-FD@2_ci95" not in entry
    # every demo run retrieves only judged passages, so URR has nothing to score
    assert entry["n_ret"] == 0 and entry["URR-FD@2"] is None


def test_a_run_docid_missing_from_the_documents_is_named(tmp_path):
    run = tmp_path / "odd.run"
    run.write_text((DEMO / "runs" / "good.run").read_text() + "d01 Q0 no-such-passage 0 99.0 odd\n")
    result = runner.invoke(app, ["fd", "--qrels", str(DEMO / "qrels.txt"), "--runs", str(run), "--docs", str(DEMO / "passages.jsonl")])
    assert isinstance(result.exception, QrelkitError)
    assert "run 'odd'" in str(result.exception) and "'no-such-passage'" in str(result.exception)


def test_fd_from_a_database_and_from_a_judge_runs_qrels(tmp_path):
    db = tmp_path / "qk.duckdb"
    with Store(db) as store:
        store.load_topics(DEMO / "topics.tsv")
        store.load_documents(DEMO / "passages.jsonl")
        for path in sorted((DEMO / "runs").iterdir()):
            store.load_run(path)
        store.load_qrels(DEMO / "qrels.txt", name="nist")
    from_files = fd_json(
        "--qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs"), "--docs", str(DEMO / "passages.jsonl"), "--resamples", "0"
    )
    from_db = fd_json("--db", str(db), "--qrels", "nist", "--resamples", "0")
    for run, entry in from_files["runs"].items():
        assert from_db["runs"][run]["FD@10"] == pytest.approx(entry["FD@10"], rel=1e-12)
    # model qrels graded from a judge run: here, the human grades with 1 and 2 swapped
    from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run

    model = Qrels("model", tuple(Qrel(q.qid, q.docid, {1: 2, 2: 1}.get(q.grade, q.grade)) for q in read_qrels(DEMO / "qrels.txt").entries))
    with Store(db) as store:
        ensure_judge_run(store, JudgeRunInfo("abc123def", "embedding", {}, None, None, None, "test"))
        store.save_qrels(model, judge_run_id="abc123def", grading={"quantiles": [0.5, 0.75]})
    judged = fd_json("--db", str(db), "--judge-run", "abc1", "--resamples", "0")
    assert judged["n_rel"] == sum(1 for q in model.entries if q.grade >= 2)
    assert judged["runs"]["good"]["FD@10"] != from_db["runs"]["good"]["FD@10"]
    with Store(db, read_only=True) as store:
        assert count_embeddings(store) > 0  # --db doubles as the cache


def test_plots_are_written(tmp_path):
    result = runner.invoke(
        app,
        [
            "fd",
            "--qrels",
            str(DEMO / "qrels.txt"),
            "--runs",
            str(DEMO / "runs"),
            "--docs",
            str(DEMO / "passages.jsonl"),
            "--resamples",
            "50",
            "--k",
            "3",
            "--plot",
            str(tmp_path / "boot.png"),
            "--plot-metric",
            str(tmp_path / "vs.png"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "boot.png").stat().st_size > 1000 and (tmp_path / "vs.png").stat().st_size > 1000
    assert "good" in result.stdout and "rank-deficient" in result.stdout


def test_fd_of_runs_on_plain_vectors_without_an_embedder():
    rng = np.random.default_rng(0)
    vectors = {f"d{i}": rng.normal(size=8) for i in range(40)}
    qrels = Qrels("q", tuple(Qrel(str(q), f"d{q * 10 + i}", 2) for q in range(3) for i in range(4)))
    near = Run("near", tuple(RunEntry(str(q), f"d{q * 10 + i}", i + 1, 10.0 - i) for q in range(3) for i in range(5)))
    far = Run("far", tuple(RunEntry(str(q), f"d{q * 10 + 5 + i}", i + 1, 10.0 - i) for q in range(3) for i in range(5)))
    report = fd_of_runs(qrels, [near, far], vectors, FDSettings(ks=(4,), resamples=20))
    assert report.runs["near"]["FD@4"].value == pytest.approx(0.0, abs=1e-9)  # the same 12 items
    assert report.runs["far"]["FD@4"].value > 1.0
    assert report.to_dict()["runs"]["near"]["n_ret"] == 12

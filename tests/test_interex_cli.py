"""`qrelkit resample` end to end with MiniLM (int8 ONNX): Zhan et al.'s Table 4 duplicate pairs as
test and training queries, the bundled demo topics as unrelated training queries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from stored import count_embeddings
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.io import read_qrels, read_topics
from qrelkit.storage import Store

pytest.importorskip("onnxruntime")
runner = CliRunner()
DEMO_TOPICS = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo" / "topics.tsv"
# Table 4 of Zhan et al. (CIKM 2022): TREC DL 2020 test queries and their duplicate training queries
TABLE4 = [
    ("average wedding dress alteration cost", "average cost for wedding dress alterations"),
    ("what does it mean if your tsh is low", "what does it mean if my tsh is low"),
    ("meaning of shebang", "what is a shebang"),
    ("do google docs auto save", "does google docs automatically save"),
    ("how long does it take to remove wisdom tooth", "how long does it take to have wisdom teeth removed"),
    ("how much would it cost to install my own wind turbine", "how much does it cost to install a wind turbine"),
    ("when did rock n roll begin?", "when did rock and roll begin"),
]


@pytest.fixture()
def collection(tmp_path: Path) -> dict[str, Path]:
    """Test queries q1..q7 (Table 4's test side); training queries t1..t7 (their duplicates) and the 12
    demo topics, each judged with one passage of its own; test qrels and a run for the test queries."""
    test_lines = [f"q{i}\t{test}" for i, (test, _) in enumerate(TABLE4, 1)]
    train_lines = [f"t{i}\t{train}" for i, (_, train) in enumerate(TABLE4, 1)]
    train_lines += [f"{t.qid}\t{t.text}" for t in read_topics(DEMO_TOPICS)]
    paths = {name: tmp_path / name for name in ("test.tsv", "train.tsv", "train.qrels", "test.qrels", "system.run")}
    paths["test.tsv"].write_text("\n".join(test_lines) + "\n")
    paths["train.tsv"].write_text("\n".join(train_lines) + "\n")
    paths["train.qrels"].write_text("".join(f"{line.split()[0]}\t0\tp-{line.split()[0]}\t1\n" for line in train_lines))
    paths["test.qrels"].write_text("".join(f"q{i} 0 p-q{i} {i % 4}\nq{i} 0 x-q{i} 0\n" for i in range(1, 8)))
    paths["system.run"].write_text(
        "".join(f"q{i} Q0 p-q{i} {1 + i % 2} {1.0 - i % 2} sys\nq{i} Q0 x-q{i} {2 - i % 2} 0.5 sys\n" for i in range(1, 8))
    )
    return paths


def resample(*args: str) -> dict:
    result = runner.invoke(app, ["resample", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def minilm_ranking(test_tsv: Path, train_tsv: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Independent: embed both files and rank every training query for each test query."""
    from qrelkit.embed import load_text_embedder

    embedder = load_text_embedder("minilm", "onnx")
    test, train = read_topics(test_tsv), read_topics(train_tsv)
    scores = embedder.encode([t.text for t in test]) @ embedder.encode([t.text for t in train]).T
    return [t.qid for t in test], [t.qid for t in train], np.argsort(-scores, axis=1, kind="stable")


def test_restrain_writes_table4_duplicates_as_interpolation_and_excludes_every_top_e(collection, tmp_path):
    out = tmp_path / "restrain"
    c = collection
    payload = resample(
        "restrain", "--train-topics", str(c["train.tsv"]), "--test-topics", str(c["test.tsv"]), "--train-qrels", str(c["train.qrels"]),
        "--out", str(out), "--interpolate-top", "1", "--exclude-top", "2",
    )  # fmt: skip
    assert payload["embedder"] == {"name": "minilm", "backend": "onnx", "id": "minilm-l6-v2/onnx-int8", "dim": 384}
    assert (payload["interpolation_per_query"], payload["exclusion_per_query"], payload["train_queries"]) == (1, 2, 19)
    assert len(payload["inputs"]["train_qrels"]["sha256"]) == 64
    assert json.loads((out / "restrain.json").read_text())["files"] == payload["files"]
    interpolation = (out / "interpolate.train.qids").read_text().split()
    extrapolation = (out / "extrapolate.train.qids").read_text().split()
    # each Table 4 test query's nearest training query is its duplicate
    assert sorted(interpolation) == [f"t{i}" for i in range(1, 8)]
    test_qids, train_qids, ranking = minilm_ranking(c["test.tsv"], c["train.tsv"])
    top_e = {train_qids[j] for row in ranking for j in row[:2]}
    assert set(extrapolation) == set(train_qids) - top_e and not set(extrapolation) & set(interpolation)
    for name, qids in (("interpolate", interpolation), ("extrapolate", extrapolation)):
        written = read_qrels(out / f"{name}.train-qrel.txt")
        assert sorted(written.grades) == sorted(qids)
        assert all(written.grades[q] == {f"p-{q}": 1} for q in qids)


def test_resttest_buckets_round_trip_into_resample_evaluate(collection, tmp_path):
    out, c = tmp_path / "resttest", collection
    args = (
        "resttest", "--train-topics", str(c["train.tsv"]), "--test-topics", str(c["test.tsv"]), "--train-qrels", str(c["train.qrels"]),
        "--k", "3", "--seed", "1", "--cache", str(tmp_path / "cache.duckdb"),
    )  # fmt: skip
    payload = resample(*args, "--out", str(out))
    assert payload["k"] == 3 and len(payload["buckets"]) == 3
    # the second run reads every vector from the cache and makes the same buckets
    assert resample(*args, "--out", str(tmp_path / "again"))["buckets"] == payload["buckets"]
    with Store(tmp_path / "cache.duckdb") as store:
        assert count_embeddings(store, "minilm-l6-v2/onnx-int8") == 7 + 19  # each test and training query once
    train_qids = {line.split()[0] for line in c["train.qrels"].read_text().splitlines()}
    extrapolated = []
    for name, sizes in payload["buckets"].items():
        own = set((out / f"{name}.extrapolate.qids").read_text().split())
        training = set(read_qrels(out / f"{name}.train-qrel.txt").grades) if sizes["training_set"] else set()
        assert len(training) == sizes["training_set"] == len(train_qids) - sizes["train_queries_in_bucket"]
        assert set((out / f"{name}.train.qids").read_text().split()) == training
        extrapolated += own
    assert sorted(extrapolated) == [f"q{i}" for i in range(1, 8)]  # each test query extrapolated once
    scores = resample(
        "evaluate", "--qrels", str(c["test.qrels"]), "--buckets", str(out), "--runs", str(c["system.run"]), "--resamples", "0"
    )
    per_query = {f"q{i}": (1.0 if i % 2 == 0 else 0.6309297535714575) if i % 4 else 0.0 for i in range(1, 8)}
    assert scores["runs"]["system"]["nDCG@10"]["average"]["extrapolation"] == pytest.approx(np.mean(list(per_query.values())))


def test_overlap_lists_exactly_the_table4_pairs(collection, tmp_path):
    c = collection
    distractors = tmp_path / "more-test.tsv"
    distractors.write_text(c["test.tsv"].read_text() + "x1\thow do i bake sourdough bread at home\n")
    payload = resample("overlap", "--topics", str(distractors), "--train-topics", str(c["train.tsv"]))
    pairs = payload["duplicates"]["pairs"]
    assert {(p["test_qid"], p["train_qid"]) for p in pairs} == {(f"q{i}", f"t{i}") for i in range(1, 8)}
    assert all(0.85 <= p["similarity"] <= 1.0 for p in pairs) and payload["duplicates"]["threshold"] == 0.85
    assert [p["similarity"] for p in pairs] == sorted((p["similarity"] for p in pairs), reverse=True)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", "resample", *args], capture_output=True, text=True)


def test_an_unjudged_bucket_query_is_one_message_naming_file_and_line(tmp_path, collection):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "bucket-1.extrapolate.qids").write_text("q1\nq2\n")
    (tmp_path / "b" / "bucket-2.extrapolate.qids").write_text("q3\nnope\n")
    result = run_cli(
        "evaluate", "--qrels", str(collection["test.qrels"]), "--buckets", str(tmp_path / "b"), "--runs", str(collection["system.run"])
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{tmp_path / 'b' / 'bucket-2.extrapolate.qids'}:2: qid 'nope' has no judgments" in result.stderr.replace("\n", "")


def test_a_failed_resample_leaves_earlier_outputs_untouched(tmp_path, collection):
    out, c = tmp_path / "out", collection
    out.mkdir()
    (out / "interpolate.train-qrel.txt").write_text("kept\n")
    bad = tmp_path / "bad.qrels"
    bad.write_text("t1 0 p-t1 1\nunknown 0 p 1\n")
    result = run_cli(
        "restrain",
        "--train-topics",
        str(c["train.tsv"]),
        "--test-topics",
        str(c["test.tsv"]),
        "--train-qrels",
        str(bad),
        "--out",
        str(out),
        "--interpolate-top",
        "1",
        "--exclude-top",
        "1",
        "--force",
    )  # fmt: skip (--force: the earlier outputs may be replaced, and a failed resample still leaves them as they were)
    assert result.returncode == 2 and "have no text in" in result.stderr and "'unknown'" in result.stderr
    assert (out / "interpolate.train-qrel.txt").read_text() == "kept\n"


@pytest.mark.parametrize("command", ["restrain", "resttest", "evaluate", "overlap"])
def test_resample_help_names_the_paper(command):
    result = runner.invoke(app, ["resample", command, "--help"])
    assert result.exit_code == 0 and "Zhan et al." in result.output and "--json" in result.output

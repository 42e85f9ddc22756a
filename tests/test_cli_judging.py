"""The judging commands end to end on the bundled toy collection (MiniLM, int8 ONNX)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.io import read_qrels

pytest.importorskip("onnxruntime", reason="the ONNX backend is not installed (pip install 'qrelkit[onnx]')")
DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
runner = CliRunner()


def invoke(*args: str):
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    job = (DEMO / "job.yaml").read_text().replace("database: demo.duckdb", f"database: {folder / 'demo.duckdb'}")
    (DEMO / ".cli-test-job.yaml").write_text(job)
    try:
        dry = invoke("judge", str(DEMO / ".cli-test-job.yaml"), "--dry-run")
        first = invoke("judge", str(DEMO / ".cli-test-job.yaml"), "--quiet")
        again = invoke("judge", str(DEMO / ".cli-test-job.yaml"), "--quiet")
    finally:
        (DEMO / ".cli-test-job.yaml").unlink()
    run_id = first.split("judge run ", 1)[1].split(":", 1)[0]
    return {"db": str(folder / "demo.duckdb"), "folder": folder, "run_id": run_id, "dry": dry, "first": first, "again": again}


def test_judge_dry_run_then_run_then_nothing_left(judged):
    assert "120 pairs in the pool; before this run 0 ok, 0 failed; 120 to judge" in judged["dry"]
    assert "judged 120 pairs" in judged["first"] and "ok 120" in judged["first"]
    assert "graded 120 scores into qrels 'minilm'" in judged["first"]
    assert "before this run 120 ok, 0 failed; 0 to judge" in judged["again"]


def test_grade_with_fixed_thresholds_and_export(judged, tmp_path):
    output = invoke("grade", "--db", judged["db"], "--judge-run", judged["run_id"][:8], "--thresholds", "0.3,0.5", "--name", "fixed")
    assert "graded 120 scores into qrels 'fixed' (cut points 0.3, 0.5)" in output
    invoke("export", "qrels", str(tmp_path / "fixed.qrels"), "--name", "fixed", "--db", judged["db"])
    qrels = read_qrels(tmp_path / "fixed.qrels")
    with __import__("qrelkit.storage", fromlist=["Store"]).Store(judged["db"], read_only=True) as store:
        scores = dict(
            ((q, d), s)
            for q, d, s in store.con.execute(
                "SELECT qid, docid, score FROM judgments WHERE judge_run_id = ?", [judged["run_id"]]
            ).fetchall()
        )
    for q in qrels.entries:
        score = scores[(q.qid, q.docid)]
        assert q.grade == (0 if score < 0.3 else 1 if score < 0.5 else 2)


def test_export_a_judge_runs_newest_graded_qrels(judged, tmp_path):
    invoke("export", "qrels", str(tmp_path / "m.qrels"), "--judge-run", judged["run_id"], "--db", judged["db"])
    assert len(read_qrels(tmp_path / "m.qrels")) == 120


def test_export_qrels_shows_its_progress_in_lines_written(judged, tmp_path, monkeypatch):
    """`export qrels` reports the lines it has written (issue 44's leftover), 120 of 120 at the end."""
    monkeypatch.setenv("QRELKIT_PROGRESS_SECONDS", "0")  # a line at every report
    output = invoke("export", "qrels", str(tmp_path / "p.qrels"), "--judge-run", judged["run_id"], "--db", judged["db"])
    lines = [line for line in output.splitlines() if line.startswith("exporting qrels to p.qrels: ")]
    assert lines and lines[-1].startswith("exporting qrels to p.qrels: 120/120 rows (100.0%)"), output


@pytest.mark.parametrize("scored", [False, True])
def test_qrels_written_a_batch_at_a_time_read_back_the_same(tmp_path, scored):
    """Seven lines three at a time: the progress hears 3, 6, 7 of 7 and the file reads back line for
    line (grades as integers; a judge's scores as given, never their order codes)."""
    import pyarrow as pa

    from qrelkit.io import Qrels, write_qrels

    columns = {
        "qid": [f"q{i % 3}" for i in range(7)],
        "iteration": ["0"] * 7,
        "docid": [f"d{i}" for i in range(7)],
        "grade": [i % 4 for i in range(7)],
    }
    if scored:
        columns["value"] = [0.125 * i for i in range(7)]
    qrels = Qrels.from_table("t", pa.table(columns))
    heard: list[tuple[int, int]] = []
    write_qrels(qrels, tmp_path / "t.qrels", progress=lambda done, total: heard.append((done, total)), batch_rows=3)
    assert heard == [(3, 7), (6, 7), (7, 7)]
    wanted = [f"q{i % 3} 0 d{i} {0.125 * i!r}" if scored else f"q{i % 3} 0 d{i} {i % 4}" for i in range(7)]
    assert (tmp_path / "t.qrels").read_text().splitlines() == wanted


def test_prompts_show_renders_a_stored_pair_exactly(judged):
    output = invoke("prompts", "show", "trec-dl-graded", "--topic", "d01", "--doc", "p0102", "--db", judged["db"])
    assert "Query: how long to boil an egg for a runny yolk" in output
    assert "Passage: For a soft-boiled egg with a runny yolk" in output
    assert output.index("[system]") < output.index("[user]") < output.index('"Relevance: <grade>"')


def test_prompts_list_and_judges_list_what_is_registered():
    assert "atomic-image-suggestion" in invoke("prompts", "list")
    judges = {j["name"]: j for j in json.loads(invoke("judges", "--json"))}
    assert {"embedding", "llamacpp", "clipscore", "vllm"} <= set(judges)
    assert "backend" in [o["name"] for o in judges["embedding"]["options"]]


def test_show_lists_the_judge_run_and_its_statuses(judged):
    output = invoke("show", "--db", judged["db"])
    assert f"judge run {judged['run_id']}" in output and "ok=120" in output


def test_demo_prints_the_comparison(tmp_path):
    output = invoke("demo", "--out", str(tmp_path / "demo"))
    answer = next(line for line in output.splitlines() if not line.startswith("judging the demo"))  # the first line of stdout
    assert answer.startswith("MiniLM's qrels rank the 4 bundled runs by nDCG@10 with Kendall τ 1.000 against the human qrels' ranking")
    assert (tmp_path / "demo" / "minilm.qrels").is_file()


def test_demo_runs_again_into_the_same_folder_with_the_same_result(tmp_path):
    """`make demo` twice (issue 37): the second run resumes its judge run, judges nothing, and writes
    its own qrels file again; the figures are the first run's."""
    first = invoke("demo", "--out", str(tmp_path / "demo"))
    qrels = (tmp_path / "demo" / "minilm.qrels").read_text()
    again = invoke("demo", "--out", str(tmp_path / "demo"))
    assert "judged 0 of " in again and "already in the database" in again
    tau = re.compile(r"with Kendall τ (\S+) against the human qrels' ranking; binary agreement \(grade ≥ 2\) on (\d+/\d+) pairs")
    assert tau.search(first).groups() == tau.search(again).groups()
    assert (tmp_path / "demo" / "minilm.qrels").read_text() == qrels


def test_grade_without_flags_grades_as_the_job_file_and_the_api_do(judged, tmp_path):
    """One default (issue 23): per-topic quantiles with mid-rank ties, whether the job grades, `qrelkit grade`
    grades with no grading flags, or Python calls grade_scores with none."""
    from qrelkit.jobs import grade_scores
    from qrelkit.storage import Store
    from qrelkit.storage.judgments import ok_scores

    output = invoke("grade", "--db", judged["db"], "--judge-run", judged["run_id"], "--name", "no-flags")
    assert "graded 120 scores into qrels 'no-flags' (per-topic quantiles [0.5, 0.75] over 12 topics, ties: midrank)" in output
    with Store(judged["db"], read_only=True) as store:
        job, command_line = store.qrels("minilm").grades, store.qrels("no-flags").grades
        api = grade_scores(ok_scores(store, judged["run_id"]), name="api").qrels.grades
    assert command_line == job == api
    output = invoke("grade", "--db", judged["db"], "--judge-run", judged["run_id"], "--name", "global", "--global", "--ties", "at-or-above")
    assert "(global quantiles [0.5, 0.75] at " in output and "ties: at-or-above)" in output
    shown = {s["name"]: s for s in json.loads(invoke("show", "--db", judged["db"], "--json"))["qrels_sets"]}
    graded = {
        name: (s["origin"], s["judge_run_id"], s["grading"]["method"], s["grading"]["per_topic"], s["grading"]["ties"])
        for name, s in shown.items()
        if s["grading"]
    }
    assert graded["no-flags"] == ("graded", judged["run_id"], "quantile", True, "midrank")
    assert graded["global"] == ("graded", judged["run_id"], "quantile", False, "at-or-above")

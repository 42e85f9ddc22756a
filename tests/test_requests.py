"""Requests as data (issue 25): the command line builds one request per use case from flags or from
`--config FILE.yaml` (the same options; a flag given wins), and the request parses each option
string once, with the command line's messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.commands.requests import AuditRequest, GradeMap, PriorSpec, QrelsRef, RunsRef
from qrelkit.errors import QrelkitError

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
runner = CliRunner()


def cli_json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_config_file_gives_what_the_same_flags_give(tmp_path):
    flags = ["--model-qrels", str(DEMO / "qrels.txt"), "--reference-qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs")]
    flags += ["--measure", "nDCG@10", "--measure", "P@5", "--resamples", "30", "--map", "3:2,2:2,1:1,0:0"]
    config = tmp_path / "agree.yaml"
    config.write_text(
        f"model-qrels: {DEMO / 'qrels.txt'}\nreference_qrels: {DEMO / 'qrels.txt'}\nruns: {DEMO / 'runs'}\n"
        "measure: [nDCG@10, P@5]\nresamples: 30\nmap: '3:2,2:2,1:1,0:0'\n"
    )
    from_flags = cli_json("agree", *flags)
    assert cli_json("agree", "--config", str(config)) == from_flags
    assert from_flags["maps"]["reference"] == {"3": 2, "2": 2, "1": 1, "0": 0}
    overridden = cli_json("agree", "--config", str(config), "--resamples", "0", "--measure", "RR(rel=2)")  # flags win
    assert overridden["bootstrap"]["resamples"] == 0 and list(overridden["systems"]) == ["RR(rel=2)"]


def test_a_config_key_no_option_has_is_named_with_the_file(tmp_path):
    config = tmp_path / "evaluate.yaml"
    config.write_text(f"qrels: {DEMO / 'qrels.txt'}\nmetrics: [P@5]\n")  # the option is --measure (key measure or measures)
    result = subprocess.run([sys.executable, "-m", "qrelkit.cli", "evaluate", "--config", str(config)], capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert f"error: {config}: 'metrics' is no option of this command (its options: average, db," in " ".join(result.stderr.split())


def test_option_strings_are_parsed_once_with_the_command_lines_messages():
    assert GradeMap.parse("3:2, 2:2,1:1,0:0").mapping == {3: 2, 2: 2, 1: 1, 0: 0}
    with pytest.raises(QrelkitError, match=r"--map-model '3-2': '3-2' is not `grade:grade`"):
        GradeMap.parse("3-2", "--map-model")
    assert PriorSpec.parse("runs:a, b").runs == ("a", "b") and PriorSpec.parse("order:o.txt").order_file == Path("o.txt")
    with pytest.raises(QrelkitError, match="--prior 'best':"):
        PriorSpec.parse("best")
    with pytest.raises(QrelkitError, match="--group 'x': expected NAME=REGEX"):
        AuditRequest(model_qrels="m", reference_qrels="r", group_patterns=["x"])
    with pytest.raises(QrelkitError, match="give the model qrels"):
        AuditRequest(reference_qrels="r")
    request = AuditRequest(model_qrels="set", reference_qrels="r", judge_run="abc", groups="g.tsv:family")
    assert request.model_qrels == QrelsRef(ref="set", judge_run="abc") and (request.groups.file.column, request.groups.file.path) == (
        "family",
        Path("g.tsv"),
    )
    assert RunsRef.of(["a.run", "b"]).refs == ("a.run", "b") and RunsRef.of(None) == RunsRef()


def test_a_job_files_old_grading_score_key_is_read_with_a_warning_naming_the_new_one(caplog):
    from qrelkit.jobs.grade import GradingError, grading_spec

    with caplog.at_level("WARNING", logger="qrelkit"):
        assert grading_spec({"method": "quantile", "score": "expected"}).score_from == "expected"
    assert "`score` is now `score_from` (which stored score to grade); write score_from: expected" in caplog.text
    with pytest.raises(GradingError, match="job.yaml: grading: give `score_from` alone"):
        grading_spec({"score": "parsed", "score_from": "expected"}, where="job.yaml: grading")


def test_show_json_is_data_sets_runs_and_judge_runs_with_their_fields(tmp_path):
    db = tmp_path / "lab.duckdb"

    def cli(*args: str) -> str:
        result = subprocess.run([sys.executable, "-m", "qrelkit.cli", *args, "--db", str(db)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout

    cli("load", "qrels", str(DEMO / "qrels.txt"), "--name", "human")
    cli("load", "runs", str(DEMO / "runs"))
    cli("import", "scores", str(DEMO / "qrels.txt"), "--name", "imported")
    cli("grade", "--judge-run", "imported", "--method", "identity", "--name", "graded")
    shown = json.loads(cli("show", "--json"))
    assert (shown["topics"], shown["documents"], shown["embeddings"]) == (0, {"count": 0, "images": 0}, 0)
    assert {r["name"]: r["entries"] for r in shown["runs"]} == {"good": 120, "lexical": 120, "mixed": 120, "shuffled": 120}
    sets = {s["name"]: s for s in shown["qrels_sets"]}
    assert sets["human"]["origin"] == "loaded" and sets["human"]["path"] == str(DEMO / "qrels.txt") and sets["human"]["judgments"] == 120
    (judge_run,) = shown["judge_runs"]
    assert judge_run["name"] == "imported" and judge_run["statuses"] == {"ok": 120} and judge_run["judgments"] == 120
    assert sets["graded"]["judge_run_id"] == judge_run["judge_run_id"] and sets["graded"]["grading"]["method"] == "identity"

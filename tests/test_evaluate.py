"""`qrelkit evaluate`: trec_eval conventions, NIST's DL19 numbers, the JSON contract."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.evaluate import evaluate_runs
from qrelkit.io import read_qrels, read_run

runner = CliRunner()


def invoke(*args: str):
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_dl19_ndcg10_reproduces_nist_for_all_37_runs(dl19):
    result = invoke("evaluate", "--qrels", str(dl19 / "qrels.txt"), "--runs", str(dl19 / "runs"), "--measure", "nDCG@10", "--json")
    payload = json.loads(result.stdout)
    official = json.loads((dl19 / "official-nist.json").read_text())
    assert payload["measures"] == ["nDCG@10"] and payload["queries"] == 43
    assert sorted(payload["runs"]) == sorted(official) and len(official) == 37
    for run, values in payload["runs"].items():
        assert values["nDCG@10"] == pytest.approx(official[run]["ndcg_cut_10"], abs=6e-5), run


def test_float32_near_ties_are_ranked_as_trec_eval_ranks_them(tmp_path):
    """d1 outscores d9 only beyond float32 precision: trec_eval sees a tie, breaks it by docid
    descending (d9 first), so the relevant d1 lands at rank 2 and nDCG@10 = 1/log2(3)."""
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d9 0\n")
    (tmp_path / "r.run").write_text("q1 Q0 d1 1 0.1000000001 t\nq1 Q0 d9 2 0.1 t\n")
    evaluation = evaluate_runs(read_qrels(tmp_path / "q.txt"), [read_run(tmp_path / "r.run")], ["nDCG@10"])
    assert evaluation.mean("r", "nDCG@10") == pytest.approx(1 / math.log2(3))


def test_measure_keys_are_kept_as_written_and_missing_queries_score_zero(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 a 2\nq1 0 b 0\nq2 0 c 1\n")
    (tmp_path / "sys.run").write_text("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 1.0 t\nq9 Q0 z 1 1.0 t\n")
    payload = json.loads(
        invoke(
            "evaluate",
            "--qrels",
            str(tmp_path / "q.txt"),
            "--runs",
            str(tmp_path / "sys.run"),
            "--measure",
            "nDCG@10",
            "--measure",
            "AP(rel=2)",
            "--json",
        ).stdout
    )
    # q1: the relevant doc at rank 2 -> nDCG = (2/log2(3)) / 2; q2 absent from the run -> 0; q9 ignored.
    assert payload["queries"] == 2
    assert payload["runs"]["sys"]["nDCG@10"] == pytest.approx((1 / math.log2(3)) / 2)
    assert payload["runs"]["sys"]["AP(rel=2)"] == pytest.approx(0.5 / 2)


def test_per_query_values(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 a 1\nq2 0 c 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 a 1 2.0 t\n")
    payload = json.loads(
        invoke("evaluate", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "r.run"), "--json", "--per-query").stdout
    )
    assert payload["per_query"]["r"]["nDCG@10"] == {"q1": 1.0, "q2": 0.0}


def test_evaluate_from_the_database_matches_files(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 a 2\nq1 0 b 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 1.0 t\n")
    db = str(tmp_path / "x.duckdb")
    invoke("load", "runs", str(tmp_path / "r.run"), "--db", db)
    invoke("load", "qrels", str(tmp_path / "q.txt"), "--db", db, "--name", "human")
    from_files = json.loads(invoke("evaluate", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "r.run"), "--json").stdout)
    from_db = json.loads(invoke("evaluate", "--qrels", "human", "--db", db, "--json").stdout)
    assert from_db["runs"] == from_files["runs"]


def test_unknown_measure_is_a_clear_error(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 a 2\n")
    (tmp_path / "r.run").write_text("q1 Q0 a 1 2.0 t\n")
    from qrelkit.errors import QrelkitError

    with pytest.raises(QrelkitError, match="unknown measure 'nDGC@10'"):
        evaluate_runs(read_qrels(tmp_path / "q.txt"), [read_run(tmp_path / "r.run")], ["nDGC@10"])


def test_measures_differing_only_in_parameters_do_not_mix(tmp_path):
    """nDCG@10 beside nDCG(gains=...)@10: each keeps its own value (ir_measures 0.4 can mix
    them up inside one evaluator)."""
    (tmp_path / "q.txt").write_text("q1 0 a 1\nq1 0 b 3\n")
    (tmp_path / "r.run").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n")
    qrels, run = read_qrels(tmp_path / "q.txt"), read_run(tmp_path / "r.run")
    both = evaluate_runs(qrels, [run], ["nDCG@10", "nDCG(gains={0:0,1:1,3:7})@10"])
    linear = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    exponential = (1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3))
    assert both.mean("r", "nDCG@10") == pytest.approx(linear)
    assert both.mean("r", "nDCG(gains={0:0,1:1,3:7})@10") == pytest.approx(exponential)

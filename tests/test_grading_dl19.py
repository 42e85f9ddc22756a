"""Grading on TREC DL 2019: scores made elsewhere (UMBRELA's GPT-4o qrels) imported, graded by
identity and by a map, exported and audited; NIST's qrels protected from grading."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app

runner = CliRunner()


def cli(*args: str) -> str:
    result = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def lines(path) -> list[str]:
    return sorted(" ".join(line.split()) for line in path.read_text().splitlines() if line.strip())


@pytest.fixture(scope="module")
def umbrela_db(dl19, tmp_path_factory):
    db = tmp_path_factory.mktemp("grading") / "dl19.duckdb"
    cli("import", "scores", dl19 / "umbrela-gpt4o.qrels", "--name", "umbrela", "--db", db)
    return db


def test_imported_umbrela_scores_graded_by_identity_export_the_same_qrels(dl19, umbrela_db, tmp_path):
    output = cli("grade", "--judge-run", "umbrela", "--method", "identity", "--name", "umbrela-identity", "--db", umbrela_db)
    assert "graded 9260 scores into qrels 'umbrela-identity'" in output
    cli("export", "qrels", tmp_path / "identity.qrels", "--name", "umbrela-identity", "--db", umbrela_db)
    assert lines(tmp_path / "identity.qrels") == lines(dl19 / "umbrela-gpt4o.qrels")


def test_a_map_turns_umbrelas_3_into_2(dl19, umbrela_db, tmp_path):
    cli("grade", "--judge-run", "umbrela", "--map", "3:2,2:2,1:1,0:0", "--name", "umbrela-0-2", "--db", umbrela_db)
    cli("export", "qrels", tmp_path / "mapped.qrels", "--name", "umbrela-0-2", "--db", umbrela_db)
    expected = []
    for line in lines(dl19 / "umbrela-gpt4o.qrels"):
        qid, iteration, docid, grade = line.split()
        expected.append(f"{qid} {iteration} {docid} {min(int(grade), 2)}")
    assert lines(tmp_path / "mapped.qrels") == sorted(expected)


def test_agree_on_the_imported_run_gives_umbrelas_known_kappa_and_tau(dl19, umbrela_db):
    cli("grade", "--judge-run", "umbrela", "--method", "identity", "--name", "umbrela-agree", "--db", umbrela_db)
    payload = json.loads(
        cli(
            "agree",
            "--judge-run",
            "umbrela",
            "--model-qrels",  # the run has three graded sets by now, none a job's: the audit is told which (issue 23)
            "umbrela-agree",
            "--reference-qrels",
            dl19 / "qrels.txt",
            "--runs",
            dl19 / "runs",
            "--resamples",
            "0",
            "--json",
            "--db",
            umbrela_db,
        )
    )
    assert payload["labels"]["cohen_kappa"] == pytest.approx(0.3626, abs=5e-5)
    assert payload["systems"]["nDCG@10"]["kendall_tau"] == pytest.approx(0.9159, abs=5e-5)


def test_importing_the_same_file_again_is_unchanged_and_a_changed_one_needs_replace(dl19, umbrela_db, tmp_path):
    assert "already imported, unchanged" in cli("import", "scores", dl19 / "umbrela-gpt4o.qrels", "--name", "umbrela", "--db", umbrela_db)
    changed = tmp_path / "changed.tsv"
    changed.write_text("19335\t1017759\t0.5\n")
    result = runner.invoke(app, ["import", "scores", str(changed), "--name", "umbrela", "--db", str(umbrela_db)])
    assert result.exit_code != 0 and "pass --replace" in str(result.exception)


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *map(str, args)], capture_output=True, text=True)


def test_grading_into_the_name_of_loaded_nist_qrels_is_refused_and_they_still_evaluate(dl19, tmp_path):
    db = tmp_path / "protect.duckdb"
    cli("load", "qrels", dl19 / "qrels.txt", "--name", "nist", "--db", db)
    cli("import", "scores", dl19 / "umbrela-gpt4o.qrels", "--name", "umbrela", "--db", db)
    refused = run_cli("grade", "--judge-run", "umbrela", "--method", "identity", "--name", "nist", "--db", db)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    message = " ".join(refused.stderr.split())
    assert "qrels set 'nist' holds qrels loaded from" in message and "qrels.txt" in message and "grading judge run" in message
    # NIST's qrels are untouched: bm25base_p's nDCG@10 is still NIST's published value
    payload = json.loads(cli("evaluate", "--qrels", "nist", "--runs", dl19 / "runs" / "bm25base_p.run", "--json", "--db", db))
    official = json.loads((dl19 / "official-nist.json").read_text())["bm25base_p"]["ndcg_cut_10"]
    assert payload["runs"]["bm25base_p"]["nDCG@10"] == pytest.approx(official, abs=5e-5)
    assert "loaded from" in cli("show", "--db", db)


def test_load_qrels_replace_always_reloads(tmp_path):
    qrels, db = tmp_path / "h.qrels", tmp_path / "r.duckdb"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    assert "loaded qrels 'h'" in cli("load", "qrels", qrels, "--db", db)
    assert "unchanged" in cli("load", "qrels", qrels, "--db", db)
    assert "replaced qrels 'h'" in cli("load", "qrels", qrels, "--db", db, "--replace")  # asked: reloaded although unchanged
    qrels.write_text("q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\n")
    assert run_cli("load", "qrels", qrels, "--db", db).returncode == 2  # changed without --replace: refused
    assert "replaced qrels 'h' (3 rows)" in cli("load", "qrels", qrels, "--db", db, "--replace")
    payload = json.loads(cli("show", "--db", db, "--json"))
    assert {"name": "h", "judgments": 3} == {
        k: v for k, v in next(p for p in payload["qrels_sets"] if p["name"] == "h").items() if k in ("name", "judgments")
    }


def test_regrading_a_graded_set_needs_replace(dl19, tmp_path):
    db = tmp_path / "regrade.duckdb"
    cli("import", "scores", dl19 / "umbrela-gpt4o.qrels", "--name", "umbrela", "--db", db)
    cli("grade", "--judge-run", "umbrela", "--method", "identity", "--name", "g", "--db", db)
    again = run_cli("grade", "--judge-run", "umbrela", "--method", "identity", "--name", "g", "--db", db)
    assert again.returncode == 2 and "pass --replace to grade it again" in " ".join(again.stderr.split())
    assert "graded 9260 scores into qrels 'g'" in cli(
        "grade", "--judge-run", "umbrela", "--method", "identity", "--name", "g", "--db", db, "--replace"
    )

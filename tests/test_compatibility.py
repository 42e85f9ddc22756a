"""Compatibility (Clarke, Vtyurina and Smucker, TOIS 2021) is computed by qrelkit as its authors'
script computes it (issue 34): a relevant document the run did not retrieve comes after the
retrieved ones whatever the run's scores, so a run's value never depends on its scores' signs.

Checked against a closed form, against a plain reference written from the definition
(`tests/compat_reference.py`) on the 37 TREC DL 2019 runs and four judges' files, and, where the
authors' repository is at hand ($QRELKIT_JUDGE_METHODS_REPO: a checkout of
github.com/Narabzad/llm-relevance-judgement-comparison), against their script and its released
per-topic values."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compat_reference import compatibility as reference_compatibility
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.compatibility import Compatibility, compatibility_measure
from qrelkit.evaluate.metrics import evaluate_runs
from qrelkit.io import read_run, read_runs
from qrelkit.io.judge_files import read_judge_file

runner = CliRunner()
AUTHORS_REPO = os.environ.get("QRELKIT_JUDGE_METHODS_REPO")


def _two_relevant_one_retrieved(tmp_path: Path, score: float) -> tuple[Path, Path]:
    qrels, run = tmp_path / "qrels.txt", tmp_path / f"run{score:+}.run"
    qrels.write_text("1 0 a 1\n1 0 b 1\n")
    run.write_text(f"1 Q0 a 1 {score} r\n")
    return qrels, run


@pytest.mark.parametrize("score", [-1.0, 1.0])
def test_an_unretrieved_relevant_document_comes_after_the_retrieved_one_whatever_the_score_sign(tmp_path, score):
    """Issue 34's repro: qrels a and b relevant, a run holding only a. ir_measures gives 0.2368 with
    score −1.0 (b, scored 0.0 as unretrieved, is ranked first in the ideal) and 0.7632 with 1.0 (its
    RBO stops at depth 2). The authors' script gives 0.6214519110894751 for both (printed by
    Compatibility/compatibility.py -p 0.9 on these two files): the closed form S/(2S − 1), with
    S = Σ_{i<1000} 0.9^i/(i+1) the RBO sum of a document at the top of both rankings."""
    qrels, run = _two_relevant_one_retrieved(tmp_path, score)
    found = evaluate_runs(read_judge_file(qrels).qrels, [read_run(run)], ["Compat(p=0.9)"]).means()
    s = sum(0.9**i / (i + 1) for i in range(1000))
    assert found[run.stem]["Compat(p=0.9)"] == pytest.approx(s / (2 * s - 1), abs=1e-15)
    assert found[run.stem]["Compat(p=0.9)"] == pytest.approx(0.6214519110894751, abs=1e-15)
    printed = runner.invoke(app, ["evaluate", "--qrels", str(qrels), "--runs", str(run), "--measure", "Compat(p=0.9)", "--json"])
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout)["runs"][run.stem]["Compat(p=0.9)"] == pytest.approx(0.6214519110894751, abs=1e-15)


def test_compat_is_read_in_ir_measures_syntax_and_a_bad_persistence_is_refused():
    assert compatibility_measure("Compat") == Compatibility(0.95, True)
    assert compatibility_measure("Compat(p=0.9)") == Compatibility(0.9, True)
    assert compatibility_measure("Compat(normalize=False, p=0.8)") == Compatibility(0.8, False)
    assert compatibility_measure("nDCG@10") is None
    for bad, message in [("Compat(p=1.0)", "strictly between 0 and 1"), ("Compat(q=0.9)", "not p=NUMBER"), ("Compat(p=x)", "a number")]:
        with pytest.raises(QrelkitError, match=message):
            compatibility_measure(bad)


def test_without_normalisation_compat_is_the_rbo_itself(tmp_path):
    """normalize=False: the run's RBO with the ideal, S / Σ 0.9^i, for the same two documents."""
    qrels, run = _two_relevant_one_retrieved(tmp_path, 1.0)
    found = evaluate_runs(read_judge_file(qrels).qrels, [read_run(run)], ["Compat(p=0.9,normalize=False)"]).means()
    s = sum(0.9**i / (i + 1) for i in range(1000))
    assert found[run.stem]["Compat(p=0.9,normalize=False)"] == pytest.approx(s / sum(0.9**i for i in range(1000)), abs=1e-15)


def test_a_grade_above_another_comes_first_in_the_ideal_and_ties_follow_the_run(tmp_path):
    """Grades 2 > 1 order the ideal whatever the run says; within grade 1 the run's own order (c
    before b, by score) holds, and an unjudged document still takes a place in the run."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "r.run"
    qrels.write_text("1 0 a 2\n1 0 b 1\n1 0 c 1\n1 0 d 0\n")
    run.write_text("1 Q0 x 1 -0.1 r\n1 Q0 c 2 -0.2 r\n1 Q0 b 3 -0.3 r\n1 Q0 a 4 -0.4 r\n")
    found = evaluate_runs(read_judge_file(qrels).qrels, [read_run(run)], ["Compat(p=0.9)"]).means()["r"]["Compat(p=0.9)"]
    assert found == pytest.approx(reference_compatibility(qrels, run, 0.9)[2], abs=1e-15)


@pytest.fixture(scope="module")
def methods(dl19) -> Path:
    folder = dl19.parent / "judge-methods-dl19"
    if not (folder / "binary.txt").is_file():
        pytest.skip(f"the judge-method files were not found at {folder}")
    return folder


@pytest.mark.parametrize("judge", ["binary.txt", "exam-graded-mean.txt", "preferences.txt", "nist"])
def test_every_run_and_topic_of_dl19_equals_the_reference_definition(dl19, methods, judge):
    """37 DL19 runs (15 with negative scores) × 43 topics, for integer grades (binary), a judge's
    fractional scores (exam graded, mean), win counts (preferences) and NIST's qrels. Compat orders
    the scores as written (float64), as the authors' script does."""
    qrels = dl19 / "qrels.txt" if judge == "nist" else methods / judge
    runs = read_runs([dl19 / "runs"])
    found = evaluate_runs(read_judge_file(qrels).qrels, runs, ["Compat(p=0.9)"])
    for run in runs:
        _, expected, _ = reference_compatibility(qrels, Path(run.source), 0.9)
        values = dict(zip(found.queries, found.values[run.name]["Compat(p=0.9)"].tolist()))
        assert set(expected) == set(values)
        for topic, value in expected.items():
            assert values[topic] == pytest.approx(value, abs=1e-12), (run.name, topic)


# -- the authors' own script and released values ($QRELKIT_JUDGE_METHODS_REPO) ----------------------

FULL_RUNS = ["ICT-BERT2", "ICT-CKNRM_B", "ICT-CKNRM_B50"]  # the DL19 runs the repository holds in full
AUTHORS_QRELS = {
    "binary": "raw qrels/gpt-4o/binary/binary_dl19.txt",
    "exam_graded_mean": "raw qrels/gpt-4o/exam graded mean/qrels.mean.exam_selfrate_dl19.txt",
    "nuggets_vital": "raw qrels/gpt-4o/nuggets/vital/qrels.autonuggetizer.vital.dl19.txt",
    "preferences": "Pref/prefs.dl19",
    "original": "data/qrels.dl19-passage.txt",
}


@pytest.fixture(scope="module")
def authors_repo() -> Path:
    if not AUTHORS_REPO:
        pytest.skip("QRELKIT_JUDGE_METHODS_REPO is not set (a checkout of github.com/Narabzad/llm-relevance-judgement-comparison)")
    repo = Path(AUTHORS_REPO)
    if not (repo / "Compatibility" / "compatibility.py").is_file():
        pytest.skip(f"{repo} holds no Compatibility/compatibility.py")
    return repo


def _released(repo: Path, tag: str) -> dict[tuple[str, str], float]:
    """(run, topic) -> compatibility from the authors' Compatibility/Output/dl19.<tag>.compatibility."""
    out = {}
    for line in (repo / "Compatibility" / "Output" / f"dl19.{tag}.compatibility").read_text().splitlines():
        run, topic, value = line.split(",")
        if run != "runid" and topic != "average":
            out[(run, topic)] = float(value)
    return out


def _script(repo: Path, qrels: Path, run: Path) -> dict[str, float]:
    """topic -> compatibility as the authors' script prints it (-p 0.90, as their compatibility.sh runs it)."""
    done = subprocess.run(
        [sys.executable, str(repo / "Compatibility" / "compatibility.py"), "-p", "0.90", str(qrels), str(run)],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [line.split(",") for line in done.stdout.splitlines()[1:]]
    return {topic: float(value) for _, topic, value in rows if topic != "average"}


@pytest.mark.parametrize("tag", sorted(AUTHORS_QRELS))
def test_the_authors_script_and_released_values_on_the_full_dl19_runs(authors_repo, tag):
    """On the three DL19 runs the repository holds in full: the authors' script reproduces their
    released per-topic values, and qrelkit gives the script's values (both order the scores as
    written, as doubles)."""
    released = _released(authors_repo, tag)
    qrels = authors_repo / AUTHORS_QRELS[tag]
    judge = read_judge_file(qrels, on_duplicate="max").qrels
    for name in FULL_RUNS:
        path = authors_repo / "runs" / "dl19" / f"input.{name}.txt"
        script = _script(authors_repo, qrels, path)
        assert all(math.isclose(value, released[(name, topic)], abs_tol=1e-12) for topic, value in script.items())
        found = evaluate_runs(judge, [read_run(path)], ["Compat(p=0.9)"])
        values = dict(zip(found.queries, found.values[found.runs[0]]["Compat(p=0.9)"].tolist()))
        for topic, value in script.items():
            assert values[topic] == pytest.approx(value, abs=1e-12), (name, topic)

"""Any judgment file a judging method produces loads (issue 34): integer grades as qrels, fractional
values as the judge's scores (for measures that read only their order), repeats resolved with a
count, a folder as one judge per file; the judge's measure beside the reference's, named on both
sides; and the route from scores to graded qrels (`import scores`, `grade --method thresholds`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from judge_tracks import DOCS, QUERIES, write_track
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import InputFormatError
from qrelkit.io.judge_files import order_codes, read_judge_file

runner = CliRunner()


def cli(*args: object) -> subprocess.CompletedProcess:
    """The command as a user runs it: its own process, its exit code and its stderr."""
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.fixture
def track(tmp_path) -> dict[str, Path]:
    return write_track(tmp_path / "track")


def test_fractional_values_are_scores_and_integers_written_as_decimals_are_grades(tmp_path):
    fractions, decimals = tmp_path / "exam.txt", tmp_path / "graded.txt"
    fractions.write_text("1 0 a 0.25\n1 0 b 0.0\n1 0 c 0.75\n1 0 d -0.5\n1 0 e 0.25\n")
    decimals.write_text("1 0 a 2.0\n1 0 b 0\n1 0 c 1.0\n")
    scored = read_judge_file(fractions).qrels
    assert scored.scored and scored.table.column("value").to_pylist() == [0.25, 0.0, 0.75, -0.5, 0.25]
    assert scored.table.column("grade").to_pylist() == [1, 0, 2, 0, 1]  # order codes: 0 for ≤ 0, then up the positive values
    graded = read_judge_file(decimals).qrels
    assert not graded.scored and graded.grades == {"1": {"a": 2, "b": 0, "c": 1}}
    assert order_codes(np.array([3.0, -1.0, 0.5, 3.0])).tolist() == [2, 0, 1, 2]


def test_a_repeated_pair_is_named_or_resolved_by_the_policy_and_counted(tmp_path):
    path = tmp_path / "llama.txt"
    path.write_text("1 0 a 0.5\n1 0 b 0.1\n1 0 a 0.9\n1 0 a 0.2\n")
    with pytest.raises(InputFormatError, match=r"llama.txt:3: duplicate judgment for qid '1', docid 'a' \(first on line 1\)"):
        read_judge_file(path)
    found = read_judge_file(path, on_duplicate="max")
    assert found.qrels.table.column("value").to_pylist() == [0.1, 0.9]  # in file order, each kept line where it stands
    assert (found.lines, found.repeats) == (4, 2)
    assert found.repeat_note() == f"{path}: 2 of 4 lines repeat a (qid, docid) pair; --on-duplicate max kept the highest value of each"


def test_a_folder_is_one_judge_per_judgment_file_and_its_readme_is_left_out_with_a_warning(track):
    result = cli(
        "compare",
        "--judge",
        track["judges"],
        "--reference-qrels",
        track["qrels"],
        "--runs",
        track["runs"],
        "--measure",
        "nDCG@10",
        "--judge-measure",
        "Compat(p=0.9)",
        "--resamples",
        "0",
        "--permutations",
        "0",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    judges = {j["name"]: j for j in json.loads(result.stdout)["judges"]}
    assert sorted(judges) == ["binary", "exam"]
    assert judges["exam"]["source"]["values"] == "scores" and judges["binary"]["source"]["values"] == "grades"
    assert "skipped" in result.stderr and "README.md" in result.stderr


def test_judges_from_files_of_one_name_are_named_by_folder_and_file(tmp_path):
    first, second = write_track(tmp_path / "a"), write_track(tmp_path / "b", seed=4)
    result = runner.invoke(
        app,
        ["compare", "--judge", str(first["binary"]), "--judge", str(second["binary"]), "--reference-qrels", str(first["qrels"])]
        + ["--runs", str(first["runs"]), "--measure", "nDCG@10", "--resamples", "0", "--permutations", "0", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert [j["name"] for j in json.loads(result.stdout)["judges"]] == ["a/judges/binary.txt", "b/judges/binary.txt"]


def agree(track: dict[str, Path], model: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli("agree", "--model-qrels", model, "--reference-qrels", track["qrels"], "--runs", track["runs"], *extra)


def test_a_measure_that_reads_grades_as_gains_is_refused_on_scores_naming_the_judge_and_the_route(track):
    result = agree(track, track["exam"], "--measure", "nDCG@10", "--resamples", "0")
    assert result.returncode == 2 and result.stdout == ""
    message = result.stderr.replace("\n", "")  # the console wraps; the message is one line
    assert "Traceback" not in message and message.startswith("error: measure 'nDCG@10' reads grades as gains, and 'exam' holds")
    assert "--judge-measure 'Compat(p=0.9)'" in message and "qrelkit import scores" in message


def test_agree_ranks_by_each_sides_measure_and_its_json_names_both(track):
    result = agree(track, track["exam"], "--measure", "nDCG@10", "--judge-measure", "Compat(p=0.9)", "--resamples", "0", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    systems = payload["systems"]["nDCG@10 vs Compat(p=0.9)"]
    assert (systems["reference_measure"], systems["judge_measure"]) == ("nDCG@10", "Compat(p=0.9)")
    assert payload["labels"]["cohen_kappa"] is None and "scores" in payload["labels"]["not_computed"]
    same = json.loads(agree(track, track["binary"], "--measure", "nDCG@10", "--resamples", "0", "--json").stdout)
    assert list(same["systems"]) == ["nDCG@10"] and same["systems"]["nDCG@10"]["judge_measure"] == "nDCG@10"


def test_the_judge_measures_must_pair_with_the_reference_measures(track):
    result = agree(
        track, track["binary"], "--measure", "nDCG@10", "--measure", "P@5", "--judge-measure", "Compat", "--judge-measure", "P@5"
    )
    assert result.returncode == 0, result.stderr  # one per measure
    result = agree(track, track["binary"], "--measure", "nDCG@10", "--judge-measure", "Compat", "--judge-measure", "P@5")
    assert result.returncode == 2
    assert "--judge-measure: give one (for every --measure) or one per --measure (1: nDCG@10), not 2" in result.stderr.replace("\n", "")


def test_qrels_of_fractional_grades_name_the_route_once(tmp_path):
    qrels, run = tmp_path / "exam.txt", tmp_path / "r.run"
    qrels.write_text("1 0 a 0.5\n1 0 b 0.75\n")
    run.write_text("1 Q0 a 1 1.0 r\n")
    result = cli("evaluate", "--qrels", qrels, "--runs", run)
    assert result.returncode == 2
    message = result.stderr.replace("\n", "")
    assert f"{qrels}:1: grade (column 4) must be an integer, found '0.5' (a judge's scores?" in message
    assert message.count("qrelkit import scores") == 1


def test_the_route_to_graded_qrels_import_scores_then_grade_by_thresholds(track, tmp_path):
    """`grade --method thresholds` accepts what its help says: --global, and labels that repeat or run downwards."""
    db = tmp_path / "j.duckdb"
    done = runner.invoke(app, ["import", "scores", str(track["exam"]), "--name", "exam", "--db", str(db)])
    assert done.exit_code == 0, done.output
    for labels, name in [("0,1,1", "merged"), ("2,1,0", "downwards")]:
        args = ["grade", "--judge-run", "exam", "--method", "thresholds", "--thresholds", "0.3,0.6", "--labels", labels]
        graded = runner.invoke(app, [*args, "--global", "--name", name, "--db", str(db), "--json"])
        assert graded.exit_code == 0, graded.output
        counts = json.loads(graded.stdout)["grades"]
        assert set(map(int, counts)) <= set(map(int, labels.split(","))) and sum(counts.values()) == len(QUERIES) * len(DOCS)
    refused = cli(*args, "--per-topic", "--name", "x", "--db", db)
    assert refused.returncode == 2
    assert "per_topic does not apply to method thresholds: it grades every score alike" in refused.stderr.replace("\n", "")

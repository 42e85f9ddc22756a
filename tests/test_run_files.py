"""How run files are found and named: NIST's `input.<tag>.gz`, a runs folder with a README beside
the runs, `load runs --name` and `--tag-names`."""

from __future__ import annotations

import gzip
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import InputFormatError, QrelkitError, SkippedFilesWarning, StoreError
from qrelkit.io import list_run_files, read_run, run_name_from_path
from qrelkit.storage import Store

runner = CliRunner()


def run_text(tag: str, shift: float = 0.0) -> str:
    return f"q1 Q0 d1 1 {2.0 + shift} {tag}\nq1 Q0 d2 2 {1.0 + shift} {tag}\n"


def test_nist_input_files_are_named_by_their_tag(tmp_path):
    path = tmp_path / "input.bm25base_p.gz"
    path.write_bytes(gzip.compress(run_text("bm25base_p").encode()))
    assert run_name_from_path(path) == "bm25base_p"
    assert run_name_from_path("runs/input.p_exp.rm3.gz") == "p_exp.rm3"  # everything after `input.`
    assert run_name_from_path("runs/bm25.run") == "bm25" and run_name_from_path("runs/bm25.run.gz") == "bm25"
    assert run_name_from_path("runs/input") == "input"
    assert read_run(path).name == "bm25base_p"


@pytest.fixture
def runs_folder(tmp_path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "input.bm25.gz").write_bytes(gzip.compress(run_text("bm25").encode()))
    (folder / "dense.txt").write_text(run_text("dense"))  # a run, though named .txt
    (folder / "README.md").write_text("# Runs\nThe submitted runs.\n")
    (folder / "LICENSE").write_text("CC BY 4.0\n")
    (folder / "notes.txt").write_text("Runs were made on 2019-08-01.\n")
    (folder / ".DS_Store").write_bytes(b"\x00\x01")
    (folder / "setup.json").write_text("{}\n")
    return folder


def test_a_runs_folder_skips_what_is_evidently_not_a_run_and_says_why(runs_folder):
    skipped: list[tuple[Path, str]] = []
    files = list_run_files([runs_folder], skipped)
    assert [f.name for f in files] == ["dense.txt", "input.bm25.gz"]
    assert {f.name: reason for f, reason in skipped} == {
        ".DS_Store": "hidden file",
        "LICENSE": "not a run file (LICENSE)",
        "README.md": "not a run file (README)",
        "notes.txt": "not a run file (its first line is not `qid Q0 docid rank score tag`)",
        "setup.json": "not a run file (.json)",
    }
    with pytest.warns(SkippedFilesWarning, match=r"skipped .*LICENSE \(not a run file \(LICENSE\)\), .*README.md"):
        list_run_files([runs_folder])


def test_a_file_named_directly_is_always_read(runs_folder):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list_run_files([runs_folder / "notes.txt"]) == [runs_folder / "notes.txt"]
    with pytest.raises(InputFormatError, match=r"notes.txt:1: expected 6 columns"):
        read_run(runs_folder / "notes.txt")


def test_load_runs_from_a_folder_names_the_skipped_files(runs_folder, tmp_path):
    db = tmp_path / "r.duckdb"
    result = runner.invoke(app, ["load", "runs", str(runs_folder), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "loaded runs 'bm25' (2 rows)" in result.output and "loaded runs 'dense' (2 rows)" in result.output
    assert f"skipped {runs_folder / 'README.md'}: not a run file (README)" in result.output
    with Store(db, read_only=True) as store:
        assert store.run_names() == ["bm25", "dense"]


def test_evaluate_warns_in_one_line_about_skipped_files(runs_folder, tmp_path):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    command = [sys.executable, "-m", "qrelkit.cli", "evaluate", "--qrels", str(tmp_path / "q.qrels"), "--runs", str(runs_folder)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(f"warning: skipped {runs_folder / 'LICENSE'} (not a run file (LICENSE)), ")
    assert "UserWarning" not in result.stderr and "bm25" in result.stdout and "dense" in result.stdout


def test_load_runs_name_and_tag_names(tmp_path):
    a, b = tmp_path / "one" / "run.txt", tmp_path / "two" / "run.txt"  # same file name: both would be `run`
    for path, tag in ((a, "bm25_tuned"), (b, "colbert")):
        path.parent.mkdir()
        path.write_text(run_text(tag))
    db = tmp_path / "r.duckdb"
    with pytest.raises(
        StoreError, match="run name 'run' comes from both .* with --name NAME, or name every run by its tag with --tag-names"
    ):
        runner.invoke(app, ["load", "runs", str(a), str(b), "--db", str(db)], catch_exceptions=False)
    result = runner.invoke(app, ["load", "runs", str(a), str(b), "--tag-names", "--db", str(db)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["load", "runs", str(a), "--name", "first", "--db", str(db)])
    assert "loaded runs 'first' (2 rows)" in result.output
    with Store(db, read_only=True) as store:
        assert store.run_names() == ["bm25_tuned", "colbert", "first"]
        assert store.run("first").entries == store.run("bm25_tuned").entries
    with pytest.raises(QrelkitError, match="--name names one run, but 2 run files were given"):
        runner.invoke(app, ["load", "runs", str(a), str(b), "--name", "x", "--db", str(db)], catch_exceptions=False)


def test_tag_names_refuse_a_file_with_several_tags(tmp_path):
    path = tmp_path / "mixed.run"
    path.write_text(run_text("a") + "q2 Q0 d3 1 1.0 b\n")
    with pytest.raises(
        InputFormatError, match=r"mixed.run: cannot name the run by its tag: the file has several tags: 'a' \(line 1\), 'b' \(line 3\)"
    ):
        runner.invoke(app, ["load", "runs", str(path), "--tag-names", "--db", str(tmp_path / "r.duckdb")], catch_exceptions=False)

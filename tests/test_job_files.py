"""Portable job files: ``${VAR}`` and ``--set``, one-line errors naming the job file and the key,
`--on-duplicate` in the collection section and on `judge`, and a `--dry-run` that writes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import yaml
from fault_judges import OverlapJudge
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import InputFormatError
from qrelkit.jobs import load_job, run_job
from qrelkit.jobs.spec import JobError
from qrelkit.storage import Store

# The jobs here name test judges by `module:Class`: the caller allows the import (a job file cannot).
load_job = partial(load_job, allow_import=True)

TESTS = Path(__file__).resolve().parent
TOPICS = "q1\tgoldfish grow big\nq2\twifi versus bluetooth\n"
DOCS = [("d1", "goldfish grow big"), ("d2", "goldfish"), ("d3", "cats"), ("d4", "wifi bluetooth"), ("d5", "bluetooth"), ("d6", "x")]
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 d4 2\nq2 0 d5 1\nq2 0 d6 0\n"
RUN = "q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq1 Q0 d3 3 1.0 a\nq2 Q0 d4 1 3.0 a\nq2 Q0 d5 2 2.0 a\nq2 Q0 d6 3 1.0 a\n"


@pytest.fixture
def data(tmp_path) -> Path:
    """A collection folder (topics, documents, qrels, a runs folder with a README) beside a job folder."""
    folder = tmp_path / "data"
    (folder / "runs").mkdir(parents=True)
    (folder / "topics.tsv").write_text(TOPICS)
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in DOCS))
    (folder / "human.qrels").write_text(QRELS)
    (folder / "runs" / "a.run").write_text(RUN)
    (folder / "runs" / "README.md").write_text("# Runs\nSubmitted runs of the track.\n")
    (tmp_path / "jobs").mkdir()
    OverlapJudge.calls.clear()
    return folder


def write_job(tmp_path: Path, **changes) -> Path:
    spec = {
        "database": "${OUT:-../out}/j.duckdb",
        "collection": {
            "topics": "${DATA}/topics.tsv",
            "documents": "${DATA}/docs.jsonl",
            "qrels": {"human": "${DATA}/human.qrels"},
        },
        "pool": {"qrels": "human"},
        "judge": {"name": "fault_judges:OverlapJudge"},
        "allow_import": True,
        "flush_seconds": 0.001,
        **changes,
    }
    path = tmp_path / "jobs" / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    (tmp_path / "out").mkdir(exist_ok=True)
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its sha256: equal snapshots mean nothing was written."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- ${VAR} and --set ----------------------------------------------------------------------------------


def test_variables_and_defaults_are_expanded_from_the_environment(tmp_path, data):
    job = write_job(tmp_path)
    spec = load_job(job, environ={"DATA": str(data)})
    assert spec.collection.topics == data / "topics.tsv"
    assert spec.database == tmp_path / "jobs" / ".." / "out" / "j.duckdb"  # the default, relative to the job file
    other = load_job(job, environ={"DATA": str(data), "OUT": str(tmp_path / "elsewhere")})
    assert other.database == tmp_path / "elsewhere" / "j.duckdb"


def test_a_missing_variable_is_one_line_naming_the_job_file_and_the_key(tmp_path, data):
    job = write_job(tmp_path)
    with pytest.raises(JobError) as error:
        load_job(job, environ={})
    assert str(error.value) == f"{job}: collection.topics: ${{DATA}} is not set; export DATA=... or write ${{DATA:-default}}"


def test_set_overrides_nested_keys_with_yaml_values(tmp_path, data):
    job = write_job(tmp_path)
    spec = load_job(job, sets=["judge.options.workers=3", "batch_size=7", "collection.on_duplicate=max"], environ={"DATA": str(data)})
    assert spec.judge.options == {"workers": 3} and spec.batch_size == 7 and spec.collection.on_duplicate == "max"
    with pytest.raises(JobError, match=r"^--set 'batch_size': expected KEY.PATH=VALUE"):
        load_job(job, sets=["batch_size"], environ={"DATA": str(data)})
    with pytest.raises(JobError, match=f"^{job}: batch_size: Input should be a valid integer"):
        load_job(job, sets=["batch_size=many"], environ={"DATA": str(data)})
    with pytest.raises(JobError, match=f"^--set 'pool.qrels.name=x': pool.qrels in {job} is not a mapping$"):
        load_job(job, sets=["pool.qrels.name=x"], environ={"DATA": str(data)})


def test_a_missing_path_is_one_line_naming_the_job_file_and_the_key(tmp_path, data):
    job = write_job(tmp_path)
    spec = load_job(job, sets=["collection.documents=${DATA}/nowhere.jsonl"], environ={"DATA": str(data)})
    with pytest.raises(JobError) as error:
        spec.check_paths()
    assert str(error.value) == f"{job}: collection.documents: {data / 'nowhere.jsonl'} not found"


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(TESTS), **env}
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *args], capture_output=True, text=True, env=environment)


def test_the_cli_reports_variable_and_path_errors_in_one_line_and_exits_2(tmp_path, data):
    job = write_job(tmp_path)
    unset = run_cli("judge", str(job), "--dry-run", "--allow-import", env={"DATA": ""})
    assert unset.returncode == 2 and "Traceback" not in unset.stderr
    assert unset.stderr.strip() == f"error: {job}: collection.topics: ${{DATA}} is not set; export DATA=... or write ${{DATA:-default}}"
    missing = run_cli(
        "judge", str(job), "--dry-run", "--allow-import", "--set", "collection.qrels.human=${DATA}/none.qrels", env={"DATA": str(data)}
    )
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"error: {job}: collection.qrels.human: {data / 'none.qrels'} not found"
    assert not (tmp_path / "out" / "j.duckdb").exists()


# -- --dry-run writes nothing ---------------------------------------------------------------------------


def test_a_dry_run_on_a_new_database_counts_and_creates_nothing(tmp_path, data):
    job = write_job(tmp_path)
    before = snapshot(tmp_path)
    arguments = ["judge", str(job), "--dry-run", "--allow-import", "--set", f"collection.runs=[{data / 'runs'}]"]
    result = CliRunner().invoke(app, arguments, env={"DATA": str(data)})
    assert result.exit_code == 0, result.output
    assert "6 pairs in the pool; before this run 0 ok, 0 failed; 6 to judge" in result.output
    assert "would load topics 'topics' (2 rows)" in result.output and "would load runs 'a' (6 rows)" in result.output
    assert f"skipped {data / 'runs' / 'README.md'}: not a run file (README)" in result.output
    assert snapshot(tmp_path) == before and not (tmp_path / "out" / "j.duckdb").exists()
    assert OverlapJudge.calls == []


def test_a_dry_run_on_an_unchanged_collection_reads_the_database_read_only(tmp_path, data, monkeypatch):
    spec = load_job(write_job(tmp_path), environ={"DATA": str(data)})
    run_job(spec, limit=4, progress=False)
    before = snapshot(tmp_path)

    def no_copy(path):
        raise AssertionError("the collection is unchanged: no in-memory copy is needed")

    monkeypatch.setattr(Store, "in_memory_copy", staticmethod(no_copy))
    report = run_job(spec, dry_run=True, progress=False)
    assert (report.pairs, report.already_ok, report.to_judge, report.judged) == (6, 4, 2, 0)
    assert all(load.status == "unchanged" for load in report.loads)
    assert snapshot(tmp_path) == before


def test_a_dry_run_with_new_files_plans_on_a_copy_and_leaves_the_database_as_it_was(tmp_path, data):
    (data / "pairs.tsv").write_text("q1\td1\nq2\td4\n")
    job = write_job(tmp_path, pool={"pairs": "${DATA}/pairs.tsv"})
    run_job(load_job(job, environ={"DATA": str(data)}), progress=False)  # judges (q1, d1) and (q2, d4)
    before = snapshot(tmp_path)
    # Now pool the top 2 of a runs folder the database has not seen: (q1, d1), (q1, d2), (q2, d4), (q2, d5).
    spec = load_job(job, sets=[f"collection.runs=[{data / 'runs'}]", "pool={depth: 2}"], environ={"DATA": str(data)})
    report = run_job(spec, dry_run=True, progress=False)
    assert (report.pairs, report.already_ok, report.already_failed, report.to_judge) == (4, 2, 0, 2)
    assert [(load.kind, load.name, load.rows, load.status) for load in report.loads if load.status != "unchanged"] == [
        ("runs", "a", 6, "loaded"),
        ("runs", str(data / "runs" / "README.md"), 0, "skipped"),
    ]
    assert snapshot(tmp_path) == before
    with Store(spec.database, read_only=True) as store:
        assert store.run_names() == []


# -- --on-duplicate in the job and on `judge` -----------------------------------------------------------


def test_on_duplicate_in_the_collection_section_and_on_judge(tmp_path, data):
    (data / "human.qrels").write_text(QRELS + "q1 0 d1 0\n")  # d1 judged twice: 2, then 0
    job = write_job(tmp_path)
    with pytest.raises(InputFormatError, match=r"human.qrels:7: duplicate judgment for qid 'q1', docid 'd1'"):
        run_job(load_job(job, environ={"DATA": str(data)}), progress=False)
    collection = {**yaml.safe_load(job.read_text())["collection"], "on_duplicate": "max"}
    spec = load_job(write_job(tmp_path, collection=collection), environ={"DATA": str(data)})
    assert run_job(spec, progress=False).pairs == 6
    with Store(spec.database, read_only=True) as store:
        assert store.qrels("human").grades["q1"]["d1"] == 2  # max kept the 2
    job = write_job(tmp_path, database="${OUT:-../out}/k.duckdb")
    result = CliRunner().invoke(app, ["judge", str(job), "--on-duplicate", "last", "--quiet", "--allow-import"], env={"DATA": str(data)})
    assert result.exit_code == 0, result.output
    with Store(tmp_path / "out" / "k.duckdb", read_only=True) as store:
        assert store.qrels("human").grades["q1"]["d1"] == 0  # last kept the 0

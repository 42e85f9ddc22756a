"""A broken judge stops the job: the same error on `max_consecutive_failures` pairs in a row ends
it with the judgments kept and a non-zero exit, and a dead endpoint fails at preflight, in seconds."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import yaml

from qrelkit.jobs import JobStopped, load_job, run_job
from qrelkit.judges import FatalJudgeError
from qrelkit.storage import Store
from qrelkit.storage.judgments import status_counts

# The jobs here name test judges by `module:Class`: the caller allows the import (a job file cannot).
load_job = partial(load_job, allow_import=True)

TESTS = Path(__file__).resolve().parent


def write_job(folder: Path, n_docs: int = 60, **extra) -> Path:
    (folder / "topics.tsv").write_text("q1\tgoldfish grow big\n")
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docid": f"d{i}", "text": f"goldfish {i}"}) + "\n" for i in range(n_docs)))
    (folder / "pairs.tsv").write_text("".join(f"q1\td{i}\n" for i in range(n_docs)))
    spec = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "fault_judges:OverlapJudge", "options": {"fail_docids": [f"d{i}" for i in range(n_docs)]}},
        "allow_import": True,  # a test judge loaded by `module:Class`
        "batch_size": 4,
        "flush_seconds": 0.001,
        **extra,
    }
    (folder / "job.yaml").write_text(yaml.safe_dump(spec))
    return folder / "job.yaml"


def test_twenty_identical_failures_stop_the_job_and_keep_the_judgments(tmp_path):
    spec = load_job(write_job(tmp_path))
    with pytest.raises(JobStopped, match="20 judgments in a row failed with the same error") as stopped:
        run_job(spec, progress=False)
    report = stopped.value.report
    assert 20 <= report.judged < 60  # stopped early: the batch that reached 20 is kept, not all 60 pairs
    with Store(spec.database, read_only=True) as store:
        assert status_counts(store, report.judge_run_id) == {"model_error": report.judged}
    # the same command again resumes where it stopped (and stops again: the judge is still broken)
    with pytest.raises(JobStopped):
        run_job(spec, progress=False)


def test_max_consecutive_failures_zero_never_stops(tmp_path):
    spec = load_job(write_job(tmp_path, max_consecutive_failures=0))
    report = run_job(spec, progress=False)
    assert report.judged == 60 and report.statuses == {"model_error": 60} and report.mostly_failed


def test_the_command_exits_3_when_the_judge_is_broken_or_most_judgments_failed(tmp_path):
    env = {"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "qrelkit.cli", "judge", "--allow-import"]
    broken = subprocess.run([*command, str(write_job(tmp_path))], capture_output=True, text=True, env=env)
    assert broken.returncode == 3 and "Traceback" not in broken.stderr
    assert "judge looks broken" in " ".join(broken.stderr.split())
    folder = tmp_path / "mostly"
    folder.mkdir()
    mostly = subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "judge", "--allow-import", str(write_job(folder, n_docs=10))],
        capture_output=True,
        text=True,
        env=env,
    )
    assert mostly.returncode == 3 and "most judgments failed: 10 of the 10" in " ".join(mostly.stderr.split())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when the with-block ends: nothing listens there


def test_a_dead_endpoint_fails_at_preflight_in_seconds_naming_the_url(tmp_path):
    folder = tmp_path
    write_job(folder, n_docs=5)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    spec_path = folder / "job.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    spec["judge"] = {"name": "openai", "options": {"base_url": url, "model": "m", "max_tries": 6, "timeout": 30}}
    spec["template"] = "trec-dl-graded"
    spec_path.write_text(yaml.safe_dump(spec))
    started = time.monotonic()
    with pytest.raises(FatalJudgeError, match=f"cannot reach {url}"):
        run_job(load_job(spec_path), progress=False)
    assert time.monotonic() - started < 10  # not 5 pairs × 6 tries of backoff
    result = subprocess.run([sys.executable, "-m", "qrelkit.cli", "judge", str(spec_path)], capture_output=True, text=True)
    assert result.returncode == 3 and url in " ".join(result.stderr.split()) and "Traceback" not in result.stderr

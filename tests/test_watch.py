"""A running job can be watched (issue 44): the job writes its status and its judgments so far
beside its database (DuckDB lets no other process read a file one process writes), and `show`,
`status` and `agree --partial` read those at once, with counts that grow; a job that was killed is
said to be gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from qrelkit.commands.requests import ShowRequest
from qrelkit.commands.workspace import execute
from qrelkit.io.job_status import read_status, status_path
from qrelkit.jobs.watch import JobWatch

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *args], capture_output=True, text=True, timeout=300)


# -- the status file ---------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_status_is_written_at_most_every_second_and_says_rate_and_time_left(tmp_path):
    clock = Clock()
    watch = JobWatch(tmp_path / "j.duckdb", {"judge_run_id": "abc", "pool_pairs": 100, "already_ok": 0, "already_failed": 0}, clock=clock)
    writes = []
    watch._safely = lambda write: writes.append(write) or write()  # count the writes, still write them
    clock.now = 0.5
    watch.tick(0, 100)
    assert read_status(tmp_path / "j.duckdb")["done"] == 0
    clock.now = 1.0
    watch.tick(10, 100)  # within a second of the last status: nothing written
    assert len(writes) == 1
    clock.now = 2.5
    watch.tick(40, 100)
    found = read_status(tmp_path / "j.duckdb")
    # 40 pairs in the 2.5 s since the watch began (the first tick saw none done): 16/s, 60 left: 3.75 s
    assert (found["done"], found["pending"], found["state"]) == (40, 60, "judging")
    assert found["pairs_per_second"] == pytest.approx(16.0) and found["seconds_left"] == pytest.approx(3.75)
    watch.finish("finished", 100, 100)
    assert read_status(tmp_path / "j.duckdb")["state"] == "finished"


# -- a real job: the README's MiniLM job on a sample of DL19 ---------------------------------------------


def start_job(dl19: Path, tmp_path: Path, sample: int) -> tuple[subprocess.Popen, Path]:
    spec = yaml.safe_load((ROOT / "configs" / "dl19-minilm.yaml").read_text())
    spec["database"] = str(tmp_path / "dl19.duckdb")
    job = tmp_path / "dl19-minilm.yaml"
    for key in ("topics", "documents"):
        spec["collection"][key] = str(dl19 / Path(spec["collection"][key]).name)
    spec["collection"]["runs"] = [str(dl19 / "runs")]
    spec["collection"]["qrels"] = {"nist": str(dl19 / "qrels.txt")}
    job.write_text(yaml.safe_dump(spec))
    child = subprocess.Popen(
        [sys.executable, "-m", "qrelkit.cli", "judge", str(job), "--sample", str(sample), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return child, Path(spec["database"])


def wait_for_status(db: Path, child: subprocess.Popen, done_at_least: int = 1) -> dict:
    while child.poll() is None:
        found = read_status(db)
        if found is not None and found["done"] >= done_at_least:
            return found
        time.sleep(0.2)
    raise AssertionError(f"the job ended before its status said {done_at_least} pairs were done: {child.stderr.read()}")


@pytest.mark.slow
def test_show_status_and_a_partial_audit_answer_at_once_while_the_job_runs_with_counts_that_grow(dl19, tmp_path):
    pytest.importorskip("onnxruntime")
    child, db = start_job(dl19, tmp_path, 2000)
    try:
        wait_for_status(db, child)
        seen, seconds = [], []
        while child.poll() is None and len(set(seen)) < 3:
            started = time.perf_counter()
            shown = execute(ShowRequest(), db)  # what `qrelkit show --db` answers, without the interpreter's start
            seconds.append(time.perf_counter() - started)
            if shown.state == "judging":
                seen.append(shown.counts()["judged"])
            time.sleep(1.0)
        assert len(set(seen)) >= 3 and seen == sorted(seen), seen  # the counts grow
        assert max(seconds) < 1.0, seconds  # no lock to wait for: the job's own status file
        printed = cli("show", "--db", str(db))
        assert printed.returncode == 0, printed.stderr
        assert (
            " judging; " in printed.stdout.splitlines()[0] and "pairs/s" in printed.stdout and "held by this judging job" in printed.stdout
        )
        partial = cli(
            "agree", "--partial", "--db", str(db), "--reference-qrels", str(dl19 / "qrels.txt"), "--runs", str(dl19 / "runs"), "--json"
        )
        assert partial.returncode == 0, partial.stderr
        found = json.loads(partial.stdout)
        judged = found["pairs"]["model"]
        assert found["coverage"]["model"] == {"pairs": judged, "covers": "partial"} and found["coverage"]["reference_pairs"] == "judged"
        assert 0 < judged < 2000 and found["coverage"]["reference"]["pairs"] == judged  # the reference cut to the pairs judged so far
        assert found["sources"]["model"]["origin"] == "partial" and "judged ok so far" in found["sources"]["model"]["partial"]
    finally:
        child.wait(timeout=900)
    assert child.returncode == 0
    ended = json.loads(cli("status", "--db", str(db), "--json").stdout)
    assert (ended["state"], ended["judged"], ended["pending"], ended["running"]) == ("finished", 2000, 0, False)


@pytest.mark.slow
def test_a_job_that_was_killed_is_said_to_be_gone(dl19, tmp_path):
    pytest.importorskip("onnxruntime")
    child, db = start_job(dl19, tmp_path, 2000)
    try:
        wait_for_status(db, child)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert read_status(db)["state"] == "judging"  # it had no time to say otherwise
    found = cli("status", "--db", str(db))
    assert found.returncode == 0, found.stderr
    assert ": gone; " in found.stdout.splitlines()[0]
    assert f"process {read_status(db)['pid']} is gone while the status says it was judging" in found.stdout + found.stderr
    shown = cli("show", "--db", str(db))  # the database is free again: show lists it
    assert shown.returncode == 0 and shown.stdout.splitlines()[0] == str(db)  # its contents, not the job's status
    assert status_path(db).name == "dl19.duckdb.status.json"

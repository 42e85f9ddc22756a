"""A full disk while judging (issue 13, class 5): the job stops at once with the count of saved
judgments and exit code 3; nothing saved is lost, no pair carries the disk's failure as its
status, and once there is room a re-run finishes without duplicates.

The database lives on a small tmpfs, which needs root (`mount -t tmpfs`); elsewhere the test is
skipped with the reason."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
import yaml
from hostile import one_error, qrelkit

from qrelkit.storage import Store

N_DOCS = 400
ANSWER_BYTES = 32_768  # 400 answers of 32 KiB: 13 MB of judgments for a 4 MiB disk


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; run as root (e.g. in the CI container) to test a full disk")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def grow(disk, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)


def test_a_full_disk_stops_the_job_with_the_count_saved_and_nothing_lost(tmp_path, small_disk):
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish\n")
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"docid": f"d{i:03d}", "text": "x" * i}) + "\n" for i in range(N_DOCS)))
    (tmp_path / "pairs.tsv").write_text("".join(f"q1\td{i:03d}\n" for i in range(N_DOCS)))
    job = {
        "database": "disk/j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "hostile_judges:BulkyJudge", "options": {"answer_bytes": ANSWER_BYTES}},
        "allow_import": True,
        "batch_size": 10,
        "flush_seconds": 0.001,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))

    full = qrelkit("judge", "job.yaml", "--quiet", "--no-grade", "--allow-import", cwd=tmp_path)
    error = one_error(full, 3)
    assert "No space left on device" in error or "disk is full" in error or "Could not write" in error, error
    saved = int(re.search(r"the job stopped at once: (\d+) judgments of this run were saved before", error).group(1))
    assert 0 < saved < N_DOCS

    grow(small_disk, "64m")
    database = tmp_path / "disk" / "j.duckdb"
    with Store(database, read_only=True) as store:
        statuses = dict(store.con.execute("SELECT status, count(*) FROM judgments GROUP BY status").fetchall())
        before = store.con.execute("SELECT docid, raw_output FROM judgments ORDER BY docid").fetchall()
    assert statuses == {"ok": saved}  # the disk's failure is never a judgment's status

    again = qrelkit("judge", "job.yaml", "--quiet", "--no-grade", "--allow-import", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    with Store(database, read_only=True) as store:
        after = store.con.execute("SELECT docid, raw_output, status FROM judgments ORDER BY docid").fetchall()
    assert len(after) == N_DOCS and {status for *_, status in after} == {"ok"}
    kept = {docid: raw for docid, raw, _ in after}
    assert all(kept[docid] == raw for docid, raw in before)  # what was saved before the disk filled is unchanged


def test_a_full_disk_during_load_runs_is_one_line_and_the_runs_loaded_before_are_kept(tmp_path, small_disk):
    """A run load that fills the disk: exit 3 with the disk's message (the load's transaction is rolled
    back; resetting its memory cap inside the aborted transaction no longer masks that with a traceback)."""
    import random

    random.seed(7)
    (tmp_path / "small.run").write_text("".join(f"q1 Q0 d{i} {i + 1} {100 - i}.5 small\n" for i in range(100)))
    with open(tmp_path / "big.run", "w") as handle:  # 600,000 distinct entries: far more than the 4 MiB disk holds
        for qid in range(300):
            handle.writelines(f"q{qid} Q0 doc{qid}_{r}_{random.randrange(10**9)} {r + 1} {2000 - r}.5 big\n" for r in range(2000))
    database = small_disk / "runs.duckdb"
    assert qrelkit("load", "runs", tmp_path / "small.run", "--db", database).returncode == 0
    error = one_error(qrelkit("load", "runs", tmp_path / "big.run", "--db", database), 3)
    assert error.startswith(f"error: cannot write to the database {database}:") and "No space left on device" in error, error
    grow(small_disk, "256m")
    with Store(database, read_only=True) as store:
        assert store.run_names() == ["small"] and len(store.run("small").table) == 100  # nothing of the big run landed
    assert qrelkit("load", "runs", tmp_path / "big.run", "--db", database).returncode == 0  # room again: it loads

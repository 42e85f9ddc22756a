"""A dry run says how long judging will take (issue 44): from the judge run's earlier judging in the
database, or by timing a few pairs of a local judge, and writes nothing either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from test_progress import text_collection

from qrelkit.storage import Store
from qrelkit.storage.judgments import judging_rate

ROOT = Path(__file__).resolve().parents[1]


def judge(job: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", "judge", str(job), *args], capture_output=True, text=True, timeout=900)


def test_the_stored_rate_counts_each_flush_over_the_time_since_the_one_before_and_skips_each_sittings_first(tmp_path):
    start = datetime(2025, 1, 1, 12, 0, 0)
    # (seconds after start, judgments in that flush): a first sitting, a pause of ten minutes, a second
    flushes = [(0, 10), (2, 20), (5, 30), (605, 40), (606, 5)]
    with Store(tmp_path / "r.duckdb") as store:
        for n, (at, count) in enumerate(flushes):
            for i in range(count):
                store.con.execute(
                    "INSERT INTO judgments (judge_run_id, qid, docid, status, judged_at) VALUES ('run', ?, ?, 'ok', ?)",
                    [f"q{n}", f"d{i}", start + timedelta(seconds=at)],
                )
        # by hand: 20 judgments in 2 s, 30 in 3 s, then (after the pause, the 40 left out) 5 in 1 s
        assert judging_rate(store, "run") == (55, 6.0)
        assert judging_rate(store, "another") is None


def test_a_dry_run_of_a_local_judge_times_a_few_pairs_and_writes_nothing(tmp_path):
    pytest.importorskip("onnxruntime")
    job = text_collection(tmp_path)
    found = judge(job, "--dry-run", "--json")
    assert found.returncode == 0, found.stderr
    estimate = json.loads(found.stdout)["time_estimate"]
    assert estimate["source"] == "timed" and estimate["pairs"] == 27 and estimate["measured_pairs"] == 27 - 8  # 8 warm the judge up
    assert estimate["seconds"] == pytest.approx(27 / estimate["pairs_per_second"] + estimate["start_seconds"], abs=0.1)
    assert list(tmp_path.glob("p.duckdb*")) == []
    text = judge(job, "--dry-run", "--time-pairs", "0").stdout
    assert "estimated time" not in text  # asked for no timing, and nothing judged before


def test_a_dry_run_after_an_earlier_run_reads_the_stored_rate_instead_of_timing(tmp_path):
    pytest.importorskip("onnxruntime")
    job = text_collection(tmp_path)
    spec = yaml.safe_load(job.read_text())
    spec["batch_size"], spec["flush_seconds"] = 2, 0.001  # a flush per call of two pairs: a rate to read back
    job.write_text(yaml.safe_dump(spec))
    assert judge(job, "--limit", "20").returncode == 0
    with Store(tmp_path / "p.duckdb", read_only=True) as store:
        run_id = store.con.execute("SELECT judge_run_id FROM judge_runs").fetchone()[0]
        pairs, seconds = judging_rate(store, run_id)
    found = json.loads(judge(job, "--dry-run", "--json").stdout)["time_estimate"]
    assert found["source"] == "stored" and found["pairs"] == 7 and found["measured_pairs"] == pairs
    assert found["pairs_per_second"] == pytest.approx(pairs / seconds, rel=0.01)
    assert "this judge run's earlier judging" in found["sentence"]


@pytest.mark.slow
def test_the_dry_runs_estimate_of_a_dl19_sample_is_within_a_factor_of_one_and_a_half_of_the_run(dl19, tmp_path):
    """The README's MiniLM job on 1,200 pairs (the full job is the benchmark: benchmarks/bench_watch.py)."""
    pytest.importorskip("onnxruntime")
    spec = yaml.safe_load((ROOT / "configs" / "dl19-minilm.yaml").read_text())
    spec["database"] = str(tmp_path / "dl19.duckdb")
    job = ROOT / "configs" / f".test-estimate-{os.getpid()}.yaml"
    job.write_text(yaml.safe_dump(spec))
    try:
        dry = judge(job, "--sample", "1200", "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        estimate = json.loads(dry.stdout)["time_estimate"]
        run = judge(job, "--sample", "1200", "--json", "--no-grade")
        assert run.returncode == 0, run.stderr
        seconds = json.loads(run.stdout)["seconds"]
    finally:
        job.unlink()
    assert 1 / 1.5 <= estimate["seconds"] / seconds <= 1.5, (estimate, seconds)

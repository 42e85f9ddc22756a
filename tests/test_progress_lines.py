"""Progress without a terminal (nohup, SLURM, a pipe): `qrelkit judge` writes plain lines on stderr
with done/total, the rate and the ETA, every QRELKIT_PROGRESS_SECONDS."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TESTS = Path(__file__).resolve().parent
LINE = re.compile(
    r"^judging job\.yaml: (?P<done>\d+)/(?P<total>\d+) pairs \((?P<share>\d+\.\d)%\), (?P<rate>\d+\.\d) pairs/s, "
    r"elapsed (?P<elapsed>\d+s|\d+m\d\ds)(?:, ETA (?P<eta>\d+s|\d+m\d\ds))?$"
)


@pytest.fixture
def job(tmp_path) -> Path:
    """Eight pairs judged one per batch by the word-overlap judge, each pair taking 50 ms."""
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish grow big\nq2\twifi versus bluetooth\n")
    docs = [f"d{i}" for i in range(1, 5)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"docid": d, "text": f"goldfish {d}"}) + "\n" for d in docs))
    (tmp_path / "pairs.tsv").write_text("".join(f"{q}\t{d}\n" for q in ("q1", "q2") for d in docs))
    spec = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "fault_judges:SlowJudge", "options": {"seconds": 0.05}},
        "allow_import": True,
        "batch_size": 1,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "job.yaml"


def judge(job: Path, interval: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(TESTS), "QRELKIT_PROGRESS_SECONDS": interval}
    env.pop("FORCE_COLOR", None)
    env.pop("TERM", None)
    return subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "judge", str(job), "--allow-import"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
    )


def test_without_a_terminal_judge_writes_plain_progress_lines(job):
    result = judge(job, "0")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr and "\r" not in result.stderr  # no bar, no colours: lines a log keeps
    lines = result.stderr.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    done = [int(m["done"]) for m in matches]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 8 and len(done) >= 8
    assert {int(m["total"]) for m in matches} == {8}
    for m in matches:
        assert float(m["share"]) == pytest.approx(100.0 * int(m["done"]) / 8, abs=0.05)
    middle = [m for m in matches if 0 < int(m["done"]) < 8]
    assert middle and all(m["eta"] is not None for m in middle)  # an ETA while work is left
    assert matches[-1]["eta"] is None and float(matches[-1]["rate"]) > 0  # none when done; the rate is pairs per second
    # Each pair takes at least 50 ms, so the rate can not exceed 20 pairs per second.
    assert all(float(m["rate"]) <= 20.0 for m in matches)
    assert "judged 8 pairs" in result.stdout


def test_the_interval_spaces_the_lines(job):
    result = judge(job, "3600")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and LINE.match(lines[0])["done"] == "8"  # only the closing line within the hour

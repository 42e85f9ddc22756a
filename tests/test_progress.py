"""Long work shows its progress (issue 44): `probe` says which probe of how many it is judging and
the time left over all of them; without a terminal, progress is plain lines on stderr."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TOPICS = {"q1": "goldfish grow big", "q2": "wifi versus bluetooth", "q3": "how tall is everest"}
DOCS = [
    "goldfish grow big in ponds",
    "goldfish are orange",
    "wifi and bluetooth differ in range",
    "cats sleep",
    "everest is 8849 metres tall",
    "mountains of nepal",
    "bluetooth pairing",
    "ponds and lakes",
    "k2 is tall",
]
LINE = re.compile(r"^probing job\.yaml \[(?P<what>.*) \(pairs of all (?P<runs>\d+) runs\)\]: (?P<done>\d+)/(?P<total>\d+) pairs")


def text_collection(folder: Path, judge: dict | None = None) -> Path:
    """Three topics, nine passages, every pair judged by the qrels; a job of the MiniLM judge over them."""
    (folder / "topics.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in TOPICS.items()))
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docid": f"d{i}", "text": t}) + "\n" for i, t in enumerate(DOCS)))
    pairs = [(q, f"d{i}") for q in TOPICS for i in range(len(DOCS))]
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {n % 3}\n" for n, (q, d) in enumerate(pairs)))
    job = {
        "database": "p.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl", "qrels": {"nist": "qrels.txt"}},
        "pool": {"qrels": "nist"},
        "judge": judge or {"name": "embedding"},
        "batch_size": 4,
    }
    (folder / "job.yaml").write_text(yaml.safe_dump(job))
    return folder / "job.yaml"


def test_probe_shows_which_probe_of_how_many_and_the_time_left_over_all_of_them(tmp_path):
    pytest.importorskip("onnxruntime")
    job = text_collection(tmp_path)
    env = {**os.environ, "QRELKIT_PROGRESS_SECONDS": "0"}  # a line per batch: every step is seen
    found = subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "probe", str(job), "--probe", "query-term-injection", "--probe", "instruction-injection"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert found.returncode == 0, found.stderr
    lines = [m for m in map(LINE.match, found.stderr.splitlines()) if m]
    assert lines, found.stderr
    done = [int(m["done"]) for m in lines]
    totals = {int(m["total"]) for m in lines}
    assert {m["runs"] for m in lines} == {"3"} and len(totals) == 1  # one count over the control run and both probes
    (total,) = totals
    assert done == sorted(done) and done[-1] == total and total % 3 == 0  # each run judges the same sample
    names = [m["what"] for m in lines]
    assert names[0] == "the sample as it is"
    assert any(n.startswith("probe 1 of 2: query-term-injection") for n in names)
    assert names[-1].startswith("probe 2 of 2: instruction-injection")
    assert any(", ETA " in line for line in found.stderr.splitlines() if LINE.match(line))  # the time left, over all runs

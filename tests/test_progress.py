"""Long work shows its progress (issue 44): `probe` says which probe of how many it is judging and
the time left over all of them; without a terminal, progress is plain lines on stderr."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from qrelkit.report.progress import A_FEW_SECONDS, PlainProgress, api_progress

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


# -- the Python API ----------------------------------------------------------------------------------


class RecordingBar:
    """A tqdm-like bar (what `progress=tqdm.auto.tqdm` gets): remembers how it was made and moved."""

    made: list[RecordingBar] = []

    def __init__(self, total: int, desc: str, unit: str):
        self.total, self.desc, self.unit, self.updates, self.closed = total, desc, unit, [], False
        RecordingBar.made.append(self)

    def update(self, n: int) -> None:
        self.updates.append(n)

    def close(self) -> None:
        self.closed = True


def test_the_python_api_drives_a_tqdm_like_progress_given_to_it(tmp_path):
    pytest.importorskip("onnxruntime")
    import qrelkit

    job = text_collection(tmp_path)
    RecordingBar.made.clear()
    judged = qrelkit.judge(str(job), progress=RecordingBar)
    (bar,) = RecordingBar.made
    assert judged.report.judged == 27 and bar.total == 27 and sum(bar.updates) == 27 and all(n > 0 for n in bar.updates)
    assert bar.desc == "judging job.yaml" and bar.unit == "pairs" and bar.closed


def _python_judge(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=900)


def test_the_python_api_shows_plain_progress_lines_on_stderr_for_work_over_a_few_seconds(dl19, tmp_path):
    """Not a terminal (a notebook's captured stderr, a log): lines with the rate and the time left."""
    pytest.importorskip("onnxruntime")
    code = (
        "import qrelkit\n"
        f"qrelkit.judge({str(ROOT / 'configs' / 'dl19-minilm.yaml')!r}, sets=['database={tmp_path / 'dl19.duckdb'}'], sample=600)\n"
    )
    found = _python_judge(code, {"QRELKIT_PROGRESS_SECONDS": "1"})
    assert found.returncode == 0, found.stderr
    lines = [line for line in found.stderr.splitlines() if line.startswith("judging dl19-minilm.yaml: ")]
    assert len(lines) >= 2 and lines[-1].startswith("judging dl19-minilm.yaml: 600/600 pairs (100.0%)"), found.stderr
    assert any(", ETA " in line for line in lines) and all(" pairs/s, elapsed " in line for line in lines)


def test_the_python_api_shows_nothing_when_told_not_to(tmp_path):
    pytest.importorskip("onnxruntime")
    job = text_collection(tmp_path)
    told = _python_judge(f"import qrelkit\nqrelkit.judge({str(job)!r}, progress=False)\n", {"QRELKIT_PROGRESS_SECONDS": "0"})
    assert told.returncode == 0 and "judging job.yaml" not in told.stderr


def _plain_lines(calls: list[tuple[float, int, int]], *, interval: float, quiet_under: float) -> list[str]:
    """The lines `PlainProgress` writes for (time, done, total) calls, on a clock that reads 0 at its start."""
    times = iter([0.0, *(at for at, _, _ in calls)])
    stream = io.StringIO()
    progress = PlainProgress("judging job.yaml", "pairs", stream, interval, lambda: next(times), quiet_under=quiet_under)
    for _, done, total in calls:
        progress(done, total)
    return stream.getvalue().splitlines()


def test_the_python_api_default_shows_nothing_for_work_that_ends_within_a_few_seconds():
    """The default (`progress=None`) is quiet for work that ends within A_FEW_SECONDS, on a clock the test holds."""
    quick = [(0.5, 9, 27), (1.5, 18, 27), (A_FEW_SECONDS - 0.01, 27, 27)]
    assert _plain_lines(quick, interval=0.0, quiet_under=A_FEW_SECONDS) == []
    assert len(_plain_lines(quick, interval=0.0, quiet_under=0.0)) == 3  # progress=True: every call, interval 0
    slow = [(1.0, 9, 27), (A_FEW_SECONDS + 0.5, 18, 27), (A_FEW_SECONDS + 1.0, 27, 27)]
    lines = _plain_lines(slow, interval=0.0, quiet_under=A_FEW_SECONDS)
    assert [line.split(",")[0] for line in lines] == ["judging job.yaml: 18/27 pairs (66.7%)", "judging job.yaml: 27/27 pairs (100.0%)"]
    assert lines[-1] == "judging job.yaml: 27/27 pairs (100.0%), 4.5 pairs/s, elapsed 4s"  # rate from the first call's 9
    for progress, quiet in ((None, A_FEW_SECONDS), (True, 0.0)):  # what the API's default and progress=True build off a terminal
        with api_progress(progress)("judging job.yaml") as made:
            assert isinstance(made, PlainProgress) and made.quiet_under == quiet


# -- fd: progress, and the vectors kept --------------------------------------------------------------


def test_fd_shows_its_embedding_progress_and_a_second_run_reuses_every_vector(dl19, tmp_path):
    pytest.importorskip("onnxruntime")
    qrels = tmp_path / "two-topics.qrels"
    qrels.write_text("".join(line for line in (dl19 / "qrels.txt").open() if line.split()[0] in ("19335", "47923")))
    args = ["fd", "--qrels", str(qrels), "--runs", str(dl19 / "runs"), "--docs", str(dl19 / "passages.jsonl"), "--resamples", "0"]
    env = {**os.environ, "QRELKIT_CACHE": str(tmp_path / "cache"), "QRELKIT_PROGRESS_SECONDS": "0"}
    runs = [
        subprocess.run([sys.executable, "-m", "qrelkit.cli", *args, *extra], capture_output=True, text=True, env=env, timeout=900)
        for extra in ([], ["--json"], ["--json"])
    ]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr
    needed = len({line.split()[2] for line in qrels.open() if int(line.split()[3]) >= 2})  # the relevant passages FD@10 embeds...
    lines = [line for line in runs[0].stderr.splitlines() if line.startswith("embedding documents (minilm-l6-v2/onnx-int8): ")]
    embedded = int(lines[-1].split(": ")[1].split("/")[0])  # ...and each run's top 10
    assert embedded > needed and lines[-1].split(": ")[1].startswith(f"{embedded}/{embedded} texts (100.0%)")
    assert f"embeddings: 0 reused, {embedded:,} embedded (cache {tmp_path / 'cache' / 'embeddings.duckdb'})" in runs[0].stderr
    second, third = (json.loads(run.stdout)["embedding"] for run in runs[1:])
    assert (second["reused"], second["embedded"], second["cached"]) == (embedded, 0, True)  # every vector reused, counted
    assert second == third and f"embeddings: {embedded:,} reused, 0 embedded" in runs[1].stderr
    assert not any(line.startswith("embedding documents") for line in runs[1].stderr.splitlines())  # --json: no progress lines

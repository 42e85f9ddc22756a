"""The README's MiniLM job on TREC DL 2019 (configs/dl19-minilm.yaml, 9,260 pairs), issue 44:

* **estimate**: `qrelkit judge --dry-run --json` (a fresh database: the judge timed on 256 pairs)
  against the real run's judging time (`seconds` of `qrelkit judge --json`), same job, same machine;
* **watcher**: the job's pairs/s with and without a watcher that asks for the job's status every
  second (`qrelkit.commands.workspace.execute(ShowRequest(), db)` in one process: what `qrelkit show
  --db` answers, without an interpreter's start each second), and how long each answer took.

Each round runs: the dry run, the job alone, the job with the watcher (even rounds: the watcher's run
first), every run on a fresh database, so that a machine shared with other work drifts over both
sides alike. The load average is printed before every run.

Usage: python benchmarks/bench_watch.py [--rounds 2] [--sample N]   (QRELKIT_DATA: the data folder)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def job_file(folder: Path, name: str) -> Path:
    spec = yaml.safe_load((ROOT / "configs" / "dl19-minilm.yaml").read_text())
    spec["database"] = str(folder / f"{name}.duckdb")
    path = folder / f"{name}.yaml"  # the job's data paths are ${QRELKIT_DATA}'s, its database absolute: it may live anywhere
    path.write_text(yaml.safe_dump(spec))
    return path


def judge(job: Path, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "judge", str(job), "--json", "--no-grade", *args], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


class Watcher(threading.Thread):
    """Asks for the job's status every second, as `qrelkit show --db` does; keeps how long each took."""

    def __init__(self, database: Path):
        super().__init__(daemon=True)
        self.database, self.seconds, self.judged, self.stop = database, [], [], threading.Event()

    def run(self) -> None:
        import qrelkit.commands.data  # noqa: F401 - imported before the job starts: an answer's time is its reading
        import qrelkit.commands.status  # noqa: F401
        import qrelkit.report.document  # noqa: F401
        from qrelkit.commands.requests import ShowRequest
        from qrelkit.commands.workspace import execute

        while not self.stop.is_set():
            if Path(str(self.database) + ".status.json").exists():
                started = time.perf_counter()
                found = execute(ShowRequest(), self.database)
                self.seconds.append(time.perf_counter() - started)
                if hasattr(found, "counts"):
                    self.judged.append(found.counts()["judged"])
            self.stop.wait(1.0)


def watched_run(job: Path, database: Path, args: list[str]) -> tuple[dict, Watcher]:
    watcher = Watcher(database)
    watcher.start()
    try:
        report = judge(job, *args)
    finally:
        watcher.stop.set()
        watcher.join()
    return report, watcher


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sample", type=int, default=None, help="judge a sample of the pool (default: all 9,260 pairs)")
    args = parser.parse_args()
    extra = ["--sample", str(args.sample)] if args.sample else []
    print(f"machine: {os.cpu_count()} cores ({os.uname().machine}), python {sys.version.split()[0]}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        jobs = []
        try:
            for number in range(args.rounds):
                row: dict = {"round": number + 1}
                job = job_file(Path(folder), f"dry{number}")
                jobs.append(job)
                row["load_dry"] = load()
                row["estimate"] = judge(job, "--dry-run", *extra)["time_estimate"]
                order = ["alone", "watched"] if number % 2 == 0 else ["watched", "alone"]
                for kind in order:
                    job = job_file(Path(folder), f"{kind}{number}")
                    jobs.append(job)
                    row[f"load_{kind}"] = load()
                    if kind == "alone":
                        report = judge(job, *extra)
                    else:
                        report, watcher = watched_run(job, Path(folder) / f"{kind}{number}.duckdb", extra)
                        row["answers"] = len(watcher.seconds)
                        row["answer_median_s"] = statistics.median(watcher.seconds) if watcher.seconds else None
                        row["answer_max_s"] = max(watcher.seconds) if watcher.seconds else None
                        row["judged_seen"] = [watcher.judged[0], watcher.judged[-1]] if watcher.judged else None
                    row[f"{kind}_seconds"] = report["seconds"]
                    row[f"{kind}_rate"] = report["judged"] / report["seconds"]
                row["estimate_over_real"] = row["estimate"]["seconds"] / row["alone_seconds"]
                row["watched_over_alone_rate"] = row["watched_rate"] / row["alone_rate"]
                print(json.dumps(row), flush=True)
                rows.append(row)
        finally:
            for job in jobs:
                job.unlink(missing_ok=True)
    ratios = [r["estimate_over_real"] for r in rows]
    slowdown = [r["watched_over_alone_rate"] for r in rows]
    print(json.dumps({"estimate_over_real": ratios, "watched_over_alone_rate": slowdown}), flush=True)


if __name__ == "__main__":
    main()

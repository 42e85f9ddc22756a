"""The README's MiniLM job on TREC DL 2019 (configs/dl19-minilm.yaml), issue 44. On a machine shared
with other work the load drifts over minutes, so each comparison is made between runs close in time:

* **estimate** (`--part estimate`): the whole job (9,260 pairs) judged once per round, with a dry run
  right before it and one right after it (each on a fresh database: the judge timed on 256 pairs);
  the run's judging time (`seconds` of `qrelkit judge --json`) against the mean of the two estimates.
* **watcher** (`--part watcher`): a sample of the job (`--sample`, default 1,500 pairs) judged
  alternately alone and with a watcher that asks for the job's status every second
  (`qrelkit.commands.workspace.execute(ShowRequest(), db)`: what `qrelkit show --db` answers,
  without an interpreter's start each second); each run's pairs/s (wall), its CPU seconds per pair
  (the job process's own, which other work on the machine does not inflate), the share of its time
  the job spent making itself watchable (`overhead_seconds` of its last status), and how long the
  watcher's answers took; `qrelkit show --db` from a fresh process is timed beside `qrelkit
  --version` (the interpreter's and the command line's start alone) while the job runs.

Usage: python benchmarks/bench_watch.py [--part estimate|watcher|both] [--rounds 2] [--pairs 3] [--sample 1500]
(QRELKIT_DATA: the data folder)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "qrelkit.cli"]


def job_file(folder: Path, name: str) -> Path:
    spec = yaml.safe_load((ROOT / "configs" / "dl19-minilm.yaml").read_text())
    spec["database"] = str(folder / f"{name}.duckdb")
    path = folder / f"{name}.yaml"  # the job's data paths are ${QRELKIT_DATA}'s, its database absolute: it may live anywhere
    path.write_text(yaml.safe_dump(spec))
    return path


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def judge(job: Path, *args: str) -> dict:
    """`qrelkit judge --json` in a process of its own, with the CPU seconds that process used."""
    before = children_cpu()
    done = subprocess.run([*CLI, "judge", str(job), "--json", "--no-grade", *args], capture_output=True, text=True, check=True)
    return {**json.loads(done.stdout), "cpu_seconds": children_cpu() - before}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


class Watcher(threading.Thread):
    """Asks for the job's status every second, as `qrelkit show --db` does; keeps how long each took,
    and times a few `qrelkit show --db` and `qrelkit --version` processes too."""

    def __init__(self, database: Path):
        super().__init__(daemon=True)
        self.database, self.seconds, self.judged, self.stop = database, [], [], threading.Event()
        self.cli_show: list[float] = []
        self.cli_version: list[float] = []

    def run(self) -> None:
        import qrelkit.commands.data  # noqa: F401 - imported before the job judges: an answer's time is its reading
        import qrelkit.commands.status  # noqa: F401
        import qrelkit.report.document  # noqa: F401
        from qrelkit.commands.requests import ShowRequest
        from qrelkit.commands.workspace import execute

        while not self.stop.is_set():
            if Path(str(self.database) + ".status.json").exists():
                started = time.perf_counter()
                found = execute(ShowRequest(), self.database)
                self.seconds.append(time.perf_counter() - started)
                if hasattr(found, "counts") and found.state == "judging":
                    self.judged.append(found.counts()["judged"])
                    if len(self.judged) % 20 == 10 and len(self.cli_show) < 3:
                        self.cli_show.append(timed([*CLI, "show", "--db", str(self.database)]))
                        self.cli_version.append(timed([*CLI, "--version"]))
            self.stop.wait(1.0)


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    return time.perf_counter() - started


def last_status(database: Path) -> dict:
    return json.loads(Path(str(database) + ".status.json").read_text())


def estimate_rounds(folder: Path, rounds: int) -> list[dict]:
    rows = []
    for number in range(rounds):
        row: dict = {"round": number + 1}
        before = judge(job_file(folder, f"dry-before{number}"), "--dry-run")["time_estimate"]
        row["load_run"] = load()
        database = folder / f"run{number}.duckdb"
        report = judge(job_file(folder, f"run{number}"))
        after = judge(job_file(folder, f"dry-after{number}"), "--dry-run")["time_estimate"]
        row["estimates_s"] = [before["seconds"], after["seconds"]]
        row["estimate_rates"] = [before["pairs_per_second"], after["pairs_per_second"]]
        row["run_s"] = report["seconds"]
        row["run_rate"] = report["judged"] / report["seconds"]
        row["estimate_over_run"] = statistics.mean(row["estimates_s"]) / report["seconds"]
        row["overhead_share"] = last_status(database)["overhead_seconds"] / report["seconds"]
        row["load_after"] = load()
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def watcher_rounds(folder: Path, pairs: int, sample: int) -> list[dict]:
    rows = []
    for number in range(pairs):
        row: dict = {"pair": number + 1}
        for kind in ("alone", "watched") if number % 2 == 0 else ("watched", "alone"):
            name = f"{kind}{number}"
            database = folder / f"{name}.duckdb"
            row[f"load_{kind}"] = load()
            watcher = Watcher(database) if kind == "watched" else None
            if watcher is not None:
                watcher.start()
            try:
                report = judge(job_file(folder, name), "--sample", str(sample))
            finally:
                if watcher is not None:
                    watcher.stop.set()
                    watcher.join()
            row[f"{kind}_rate"] = report["judged"] / report["seconds"]
            row[f"{kind}_cpu_per_pair_ms"] = 1000 * report["cpu_seconds"] / report["judged"]
            row[f"{kind}_overhead_share"] = last_status(database)["overhead_seconds"] / report["seconds"]
            if watcher is not None:
                row["answers"] = len(watcher.seconds)
                row["answer_median_ms"] = 1000 * statistics.median(watcher.seconds)
                row["answer_max_ms"] = 1000 * max(watcher.seconds)
                row["judged_seen"] = [watcher.judged[0], watcher.judged[-1]] if watcher.judged else None
                row["cli_show_s"] = watcher.cli_show
                row["cli_version_s"] = watcher.cli_version
        row["watched_over_alone_rate"] = row["watched_rate"] / row["alone_rate"]
        row["watched_over_alone_cpu"] = row["watched_cpu_per_pair_ms"] / row["alone_cpu_per_pair_ms"]
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=["estimate", "watcher", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=2, help="estimate: runs of the whole job")
    parser.add_argument("--pairs", type=int, default=3, help="watcher: pairs of runs (alone, watched)")
    parser.add_argument("--sample", type=int, default=1500, help="watcher: pairs judged per run")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores ({os.uname().machine}), python {sys.version.split()[0]}, load {load()}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        if args.part in ("estimate", "both"):
            rows = estimate_rounds(Path(folder), args.rounds)
            print(json.dumps({"estimate_over_run": [round(r["estimate_over_run"], 3) for r in rows]}), flush=True)
        if args.part in ("watcher", "both"):
            rows = watcher_rounds(Path(folder), args.pairs, args.sample)
            summary = {
                "watched_over_alone_rate": [round(r["watched_over_alone_rate"], 3) for r in rows],
                "watched_over_alone_cpu": [round(r["watched_over_alone_cpu"], 3) for r in rows],
            }
            print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()

"""Time the walkthroughs the docs quote a time for (issue 37: docs quoted 11 s for `agree` and half a
minute for the Python page): README example 2's `qrelkit agree` on TREC DL 2019 (UMBRELA's GPT-4o
qrels against NIST's, 37 runs), as a user runs it (a fresh process), and every code block of
docs/python-api.md, in order, in a fresh folder (MiniLM judges a 600-pair sample there).

Usage: python benchmarks/bench_walkthroughs.py [--repeat 3]
Needs the shared DL19 data ($QRELKIT_DATA or ../shared/data). Prints the median of each and the load.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DL19, shared_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def agree_seconds() -> float:
    command = [sys.executable, "-m", "qrelkit.cli", "agree", "--model-qrels", str(DL19 / "umbrela-gpt4o.qrels")]
    command += ["--reference-qrels", str(DL19 / "qrels.txt"), "--runs", str(DL19 / "runs")]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - started


def python_page_seconds() -> float:
    blocks = re.findall(r"^```python\n(.*?)^```$", (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8"), flags=re.S | re.M)
    script = "import matplotlib\nmatplotlib.use('Agg')\n" + "\n".join(blocks)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "configs").symlink_to(ROOT / "configs")
        environ = {**os.environ, "PYTHONPATH": str(ROOT), "QRELKIT_DATA": str(shared_data())}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, cwd=folder, env=environ)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (DL19 / "qrels.txt").exists():
        raise SystemExit(f"needs the DL19 data at {DL19}")
    print(f"# {platform.node()}, {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f} at start")
    print("| walkthrough | median s | runs |")
    print("|---|---:|---:|")
    for name, timed in (
        ("README example 2: qrelkit agree on DL19", agree_seconds),
        ("docs/python-api.md, every block", python_page_seconds),
    ):
        samples = [timed() for _ in range(args.repeat)]
        print(f"| {name} | {statistics.median(samples):.1f} | {', '.join(f'{s:.1f}' for s in samples)} |", flush=True)
    print(f"# load at the end {os.getloadavg()[0]:.1f} (1 min), {os.getloadavg()[1]:.1f} (5 min)")


if __name__ == "__main__":
    main()

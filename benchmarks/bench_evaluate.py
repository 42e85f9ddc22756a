"""Evaluating a TREC track: qrelkit vs pytrec_eval called directly vs trec_eval 9.0.8 vs ranx.

Every tool runs as a whole process (startup, reading, scoring, output), timed with its peak
resident memory, on TREC DL 2019 (37 runs) and on synthetic tracks of 10 / 25 / 50 / 100 runs
× 200 queries × depth 1,000 (`synthetic_track.py`; the sizes share files). Measures: nDCG@10,
AP(rel=2), RR(rel=2). Every tool's means are compared with pytrec_eval's: qrelkit must agree to
1e-9 on every run and measure; trec_eval prints 4 decimals.

- qrelkit:   `python -m qrelkit.cli evaluate --json` on the run files
- pytrec_eval: the loop a user writes by hand (split lines, float32 scores, one RelevanceEvaluator,
             runs one at a time)
- trec_eval: the C program, one call per run (`-c -l 2 -m ndcg_cut.10 -m map -m recip_rank`),
             built from source into ~/.cache/qrelkit-bench when absent (--trec-eval-source: a git
             repository with the tag v9.0.8, or a source folder)
- ranx:      `ranx.evaluate` per run, if ranx is installed (numba compiles on a warm-up call first)

Then the database against files (`--db-runs`, default 100; 0 skips it): that many synthetic runs
loaded once into a database (cached under ~/.cache/qrelkit-bench/evaluate-db), and `evaluate --db`
of all of them against `evaluate` of the same run files, whole processes, in `--db-repeat`
alternating pairs (the order flips each round, so a change of the machine's load hits both
alike); the ratio is the median of the pairs' ratios. Goal ≤ 1.05.

Usage: python benchmarks/bench_evaluate.py [--sizes 10,25,50,100] [--repeat 1] [--no-dl19] [--tools ...]
       [--db-runs 100] [--db-repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import DL19

HERE = Path(__file__).resolve().parent
# The parent process stays lean (no numpy, no ranx): a child's peak RSS as wait4 reports it
# includes the parent's at the fork, so a fat parent would inflate every tool's figure.
CACHE = Path(os.environ.get("QRELKIT_BENCH_CACHE", Path.home() / ".cache" / "qrelkit-bench"))

MEASURES = ["nDCG@10", "AP(rel=2)", "RR(rel=2)"]
TREC_EVAL_NAMES = {"ndcg_cut_10": "nDCG@10", "map": "AP(rel=2)", "recip_rank": "RR(rel=2)"}
# A local trec_eval repository to build from when --trec-eval-source is not given (no default: a path of one machine)
MIRROR = Path(os.environ["QRELKIT_TREC_EVAL_SOURCE"]) if os.environ.get("QRELKIT_TREC_EVAL_SOURCE") else None


# -- the tools, each as a whole process ---------------------------------------------------------------


def run_pytrec(qrels_path: str, run_paths: list[str]) -> dict:
    import numpy as np
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for line in Path(qrels_path).read_text().splitlines():
        qid, _, docid, grade = line.split()
        qrels.setdefault(qid, {})[docid] = int(grade)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recip_rank"}, relevance_level=2)
    keys = {"nDCG@10": "ndcg_cut_10", "AP(rel=2)": "map", "RR(rel=2)": "recip_rank"}
    means = {}
    for path in run_paths:
        run: dict[str, dict[str, float]] = {}
        for line in Path(path).read_text().splitlines():
            qid, _, docid, _, score, _ = line.split()
            run.setdefault(qid, {})[docid] = float(np.float32(score))
        per_query = evaluator.evaluate({q: d for q, d in run.items() if q in qrels})
        means[Path(path).stem] = {m: sum(v[k] for v in per_query.values()) / len(qrels) for m, k in keys.items()}
    return {"runs": means}


def run_ranx(qrels_path: str, run_paths: list[str]) -> dict:
    from ranx import Qrels, Run, evaluate

    qrels = Qrels.from_file(qrels_path, kind="trec")
    names = {"ndcg@10": "nDCG@10", "map-l2": "AP(rel=2)", "mrr-l2": "RR(rel=2)"}
    means = {}
    for path in run_paths:
        run = Run.from_file(path, kind="trec")
        scores = evaluate(qrels, run, list(names), make_comparable=True)
        means[Path(path).stem] = {names[k]: float(v) for k, v in scores.items()}
    return {"runs": means}


def _rusage_child(command: list[str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in KB, stdout) of one child process, reaped with wait4
    for its rusage. CPU time says more than wall time on a machine shared with other jobs."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        assert child.stdout is not None
        out = b"".join(iter(lambda: child.stdout.read(1 << 16), b""))
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            errors.seek(0)
            raise RuntimeError(f"{' '.join(command[:5])} ... failed: {errors.read().decode()[-800:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out.decode()


def measure_qrelkit(qrels: Path, runs: list[Path]) -> tuple[float, float, int, dict]:
    command = [sys.executable, "-m", "qrelkit.cli", "evaluate", "--qrels", str(qrels), "--json"]
    for run in runs:
        command += ["--runs", str(run)]
    for m in MEASURES:
        command += ["--measure", m]
    seconds, cpu, rss, out = _rusage_child(command)
    return seconds, cpu, rss, json.loads(out)["runs"]


def measure_qrelkit_db(qrels: Path, db: Path) -> tuple[float, float, int, dict]:
    """`evaluate --db`: every run stored in ``db``, the qrels from the same file as the other tools."""
    command = [sys.executable, "-m", "qrelkit.cli", "evaluate", "--qrels", str(qrels), "--db", str(db), "--json"]
    for m in MEASURES:
        command += ["--measure", m]
    seconds, cpu, rss, out = _rusage_child(command)
    return seconds, cpu, rss, json.loads(out)["runs"]


def stored_track(runs: list[Path]) -> Path:
    """A database holding ``runs``, loaded once by `qrelkit load runs` and kept under the cache."""
    folder = CACHE / "evaluate-db"
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"track-{len(runs)}-{runs[0].parent.parent.name}.duckdb"
    if not db.exists():
        partial = db.with_suffix(".loading")
        partial.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-m", "qrelkit.cli", "load", "runs", *map(str, runs), "--db", str(partial)], capture_output=True, check=True
        )
        partial.rename(db)
    return db


def compare_db_with_files(qrels: Path, runs: list[Path], repeat: int) -> None:
    """`evaluate --db` against `evaluate` of the same run files, in alternating pairs."""
    db = stored_track(runs)
    rounds = []
    for attempt in range(repeat):
        sides = ["db", "files"] if attempt % 2 == 0 else ["files", "db"]
        took = {}
        for side in sides:
            took[side] = measure_qrelkit_db(qrels, db) if side == "db" else measure_qrelkit(qrels, runs)
        rounds.append((took["db"], took["files"], os.getloadavg()[0]))
        print(f"  round {attempt + 1}: --db {took['db'][0]:.2f} s, files {took['files'][0]:.2f} s, load {rounds[-1][2]:.1f}", flush=True)
    ratios = [db_side[0] / files_side[0] for db_side, files_side, _ in rounds]
    by_name = {Path(name).stem: values for name, values in rounds[-1][1][3].items()}
    delta = largest_difference(rounds[-1][0][3], by_name)
    print(f"\n`evaluate --db` against the same {len(runs)} runs read from their files (whole processes, {repeat} alternating pairs):\n")
    print("| runs | --db s (median) | files s (median) | ratio (median of pairs; each) | goal | peak RSS MB --db / files | max Δ | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {len(runs)} | {statistics.median(r[0][0] for r in rounds):.2f} | {statistics.median(r[1][0] for r in rounds):.2f} | "
        f"**{statistics.median(ratios):.3f}** ({', '.join(f'{r:.3f}' for r in ratios)}) | ≤ 1.05 | "
        f"{max(r[0][2] for r in rounds) / 1024:.0f} / {max(r[1][2] for r in rounds) / 1024:.0f} | {delta:.1e} | "
        f"{statistics.median(r[2] for r in rounds):.1f} |",
        flush=True,
    )


def measure_script(tool: str, qrels: Path, runs: list[Path]) -> tuple[float, float, int, dict]:
    seconds, cpu, rss, out = _rusage_child([sys.executable, __file__, "--tool", tool, str(qrels), *map(str, runs)])
    return seconds, cpu, rss, json.loads(out)["runs"]


def measure_trec_eval(binary: Path, qrels: Path, runs: list[Path]) -> tuple[float, float, int, dict]:
    """One trec_eval call per run, as a user loops over a track's runs."""
    seconds, cpu, peak, means = 0.0, 0.0, 0, {}
    for run in runs:
        command = [str(binary), "-c", "-l", "2", "-m", "ndcg_cut.10", "-m", "map", "-m", "recip_rank", str(qrels), str(run)]
        took, used, rss, out = _rusage_child(command)
        seconds, cpu, peak = seconds + took, cpu + used, max(peak, rss)
        values = {}
        for line in out.splitlines():
            name, scope, value = line.split()
            if scope == "all" and name in TREC_EVAL_NAMES:
                values[TREC_EVAL_NAMES[name]] = float(value)
        means[run.stem] = values
    return seconds, cpu, peak, means


# -- trec_eval from source ----------------------------------------------------------------------------


def trec_eval_binary(source: Path | None) -> Path | None:
    """trec_eval 9.0.8 under the cache folder, built from ``source`` (or the local mirror) when absent."""
    folder = CACHE / "trec_eval-9.0.8"
    binary = folder / "trec_eval"
    if binary.exists():
        return binary
    source = source or (MIRROR if MIRROR is not None and MIRROR.exists() else None)
    if source is None or shutil.which("make") is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    if (source / "HEAD").exists() or (source / ".git").exists():  # a git repository (bare or not)
        archive = subprocess.run(["git", "-C", str(source), "archive", "v9.0.8"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    else:
        shutil.copytree(source, folder, dirs_exist_ok=True)
    subprocess.run(["make", "-C", str(folder)], capture_output=True, check=True)
    return binary if binary.exists() else None


# -- the table ----------------------------------------------------------------------------------------


def largest_difference(ours: dict, reference: dict) -> float:
    return max(abs(ours[run][m] - reference[run][m]) for run in reference for m in MEASURES)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()}, {model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def workloads(sizes: list[int], dl19: bool) -> list[tuple[str, Path, list[Path]]]:
    out = []
    if dl19 and (DL19 / "qrels.txt").is_file():
        out.append(("TREC DL 2019, 37 runs × 43 queries (cut runs)", DL19 / "qrels.txt", sorted((DL19 / "runs").iterdir())))
    if sizes:
        writer = [sys.executable, str(HERE / "synthetic_track.py"), str(max(sizes)), "200", "1000"]
        track = subprocess.run(writer, capture_output=True, check=True)
        files = json.loads(track.stdout)
        qrels, runs = Path(files["qrels"]), [Path(p) for p in files["runs"]]
        for size in sizes:
            out.append((f"synthetic {size} runs × 200 queries × depth 1,000", qrels, runs[:size]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,25,50,100", help="synthetic track sizes (runs); empty for none")
    parser.add_argument("--repeat", type=int, default=1, help="whole-process repeats per tool (median reported)")
    parser.add_argument("--no-dl19", action="store_true")
    parser.add_argument("--tools", default="qrelkit,pytrec_eval,trec_eval,ranx")
    parser.add_argument("--trec-eval-source", type=Path, default=None, help="trec_eval git repository or source folder")
    parser.add_argument("--db-runs", type=int, default=100, help="runs of the --db against files comparison (0: skip it)")
    parser.add_argument("--db-repeat", type=int, default=3, help="alternating (--db, files) pairs")
    parser.add_argument("--tool", help=argparse.SUPPRESS)  # internal: run one tool in this process
    args, rest = parser.parse_known_args()
    if args.tool:
        runner = {"pytrec": run_pytrec, "ranx": run_ranx}[args.tool]
        print(json.dumps(runner(rest[0], rest[1:])))
        return 0
    tools = args.tools.split(",")
    binary = trec_eval_binary(args.trec_eval_source) if "trec_eval" in tools else None
    ranx_installed = importlib.util.find_spec("ranx") is not None
    ranx_ok = ranx_installed and "ranx" in tools
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f} at start.")
    ranx_note = "yes" if ranx_ok else ("not installed" if not ranx_installed else "not asked for")
    print(f"trec_eval: {binary or 'not available'}; ranx: {ranx_note}; repeats: {args.repeat}\n")
    print("| workload | tool | seconds | CPU seconds | peak RSS MB | max abs. Δ from pytrec_eval | load |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, qrels, runs in workloads(sizes, not args.no_dl19):
        if ranx_ok:
            measure_script("ranx", qrels, runs[:1])  # numba compiles (and caches) on the first call
        reference: dict | None = None
        rows = []
        candidates = [
            ("pytrec_eval (direct)", lambda q=qrels, r=runs: measure_script("pytrec", q, r), "pytrec_eval" in tools),
            ("qrelkit evaluate", lambda q=qrels, r=runs: measure_qrelkit(q, r), "qrelkit" in tools),
            ("trec_eval 9.0.8, one call per run", lambda q=qrels, r=runs: measure_trec_eval(binary, q, r), binary is not None),
            ("ranx", lambda q=qrels, r=runs: measure_script("ranx", q, r), ranx_ok),
        ]
        for name, measure, wanted in candidates:
            if not wanted:
                continue
            samples = [measure() for _ in range(args.repeat)]
            seconds = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            rss = max(s[2] for s in samples) / 1024
            values = samples[-1][3]
            if name.startswith("pytrec_eval"):
                reference = values
            delta = largest_difference(values, reference) if reference is not None else float("nan")
            rows.append((name, seconds, rss, delta, os.getloadavg()[0]))
            print(f"| {label} | {name} | {seconds:.2f} | {cpu:.2f} | {rss:.0f} | {delta:.1e} | {rows[-1][4]:.1f} |", flush=True)
        ours = [row for row in rows if row[0] == "qrelkit evaluate"]
        if ours and reference is not None and not ours[0][3] <= 1e-9:
            print(f"\nqrelkit differs from pytrec_eval by {ours[0][3]:.2e} on {label}", file=sys.stderr)
            return 1
    if args.db_runs:
        writer = [sys.executable, str(HERE / "synthetic_track.py"), str(args.db_runs), "200", "1000"]
        files = json.loads(subprocess.run(writer, capture_output=True, check=True).stdout)
        compare_db_with_files(Path(files["qrels"]), [Path(p) for p in files["runs"]][: args.db_runs], args.db_repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())

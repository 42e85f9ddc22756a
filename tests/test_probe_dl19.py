"""Query-term injection on TREC DL 2019 with the MiniLM judge (configs/dl19-minilm.yaml): the
passages NIST graded 0 score higher once the query is put in front of them, the interval over
queries lies above 0, and the shift is the cosine change MiniLM's own encoder gives those texts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import qrelkit
from qrelkit.io import read_documents, read_topics

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("onnxruntime", reason="the ONNX backend is not installed (pip install 'qrelkit[onnx]')")


@pytest.mark.slow
def test_query_term_injection_raises_minilms_scores_of_non_relevant_dl19_passages(dl19, tmp_path):
    result = qrelkit.probe(
        ROOT / "configs" / "dl19-minilm.yaml",
        ["query-term-injection"],
        sample=86,  # two grade-0 pairs of each of the 43 topics
        sets=[f"database={tmp_path / 'dl19.duckdb'}"],
    )
    assert result.sample.topics == 43 and len(result.sample.pairs) == 86 and result.sample.reference == "nist"
    grades = qrelkit.read_qrels(dl19 / "qrels.txt").grades
    assert all(grades[q][d] == 0 for q, d in result.sample.pairs)
    shift = result.probes[0].shift
    interval = shift.intervals["mean_shift"]
    assert shift.pairs == 86 and interval.method == "jackknife" and interval.low > 0.0

    from qrelkit.embed import load_text_embedder

    topics = {t.qid: t.text for t in read_topics(dl19 / "topics.tsv")}
    wanted = {d for _, d in result.sample.pairs}
    passages = {d.docid: d.text for d in read_documents(dl19 / "passages.jsonl") if d.docid in wanted}
    embedder = load_text_embedder("minilm", "onnx", progress=False)
    queries = embedder.encode([topics[q] for q, _ in result.sample.pairs])
    before = embedder.encode([passages[d] for _, d in result.sample.pairs])
    after = embedder.encode([f"{topics[q]} {passages[d]}" for q, d in result.sample.pairs])
    expected = np.mean(np.sum(queries * after, axis=1) - np.sum(queries * before, axis=1))
    assert shift.mean_shift == pytest.approx(float(expected), abs=1e-5)
    assert result.relevance.rule == "none"  # a fresh database holds no graded qrels of the job: no shares, said so
    assert "--relevant-at" in result.relevance.note and shift.estimates["pushed_to_relevant"] != shift.estimates["pushed_to_relevant"]

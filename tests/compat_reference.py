"""A plain reference for compatibility (Clarke, Vtyurina and Smucker, TOIS 2021) as the authors'
script defines it (`Compatibility/compatibility.py` in Narabzad/llm-relevance-judgement-comparison,
after claclark/Compatibility), written for the tests from the published definition and independent
of qrelkit: its own file parsing, Python's sort, and the RBO sum taken depth by depth.

- qrels: `qid iter docid value`, any number; relevant = value > 0; a repeated pair keeps its highest;
- run: `qid Q0 docid rank score tag`; documents by score descending, ties by docid ascending;
- ideal: the relevant documents by value descending, within a value in the run's order, those the
  run did not retrieve after those it did;
- RBO(run, ideal) = Σ_{i<1000} p^i·|run[:i+1] ∩ ideal[:i+1]|/(i+1) / Σ_{i<1000} p^i, normalised by
  RBO(ideal, ideal); a run's mean runs over its topics that have a relevant document.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

DEPTH = 1000


def read_values(path: Path) -> dict[str, dict[str, float]]:
    """Relevant documents only: topic -> docid -> value (> 0), the highest of a repeated pair."""
    out: dict[str, dict[str, float]] = {}
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        topic, _, docid, value = line.split()
        if float(value) > 0.0:
            docs = out.setdefault(topic, {})
            docs[docid] = max(float(value), docs.get(docid, float(value)))
    return out


def read_ranking(path: Path, score: Callable[[str], float] = float) -> tuple[str, dict[str, list[str]]]:
    """(run tag, topic -> docids by score descending, ties by docid ascending); ``score`` reads a score."""
    scores: dict[str, dict[str, float]] = {}
    tag = ""
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        topic, _, docid, _, value, tag = line.split()
        scores.setdefault(topic, {})[docid] = score(value)
    ranking = {topic: sorted(docs, key=lambda d: (-docs[d], d)) for topic, docs in scores.items()}
    return tag, ranking


def _rbo_sum(run: list[str], ideal: list[str], p: float) -> float:
    """Σ_i p^i·overlap(i+1)/(i+1) to DEPTH; overlap(k) = documents in both first-k prefixes."""
    deepest = {docid: i for i, docid in enumerate(run[:DEPTH])}
    both_from = [max(deepest[d], i) for i, d in enumerate(ideal[:DEPTH]) if d in deepest]
    overlap = np.cumsum(np.bincount(np.asarray(both_from, dtype=np.int64), minlength=DEPTH))[:DEPTH]
    weights = np.empty(DEPTH)
    weight = 1.0
    for i in range(DEPTH):  # p^i by repeated products, as the script does
        weights[i] = weight
        weight *= p
    return float((weights * overlap / np.arange(1, DEPTH + 1)).sum() / weights.sum())


def topic_compatibility(run: list[str], relevant: dict[str, float], p: float) -> float:
    position = {docid: i for i, docid in enumerate(run)}
    ideal = sorted(relevant, key=lambda d: (-relevant[d], position.get(d, len(run))))
    return _rbo_sum(run, ideal, p) / _rbo_sum(ideal, ideal, p)


def compatibility(qrels: Path, run: Path, p: float = 0.9, score: Callable[[str], float] = float) -> tuple[str, dict[str, float], float]:
    """(run tag, topic -> compatibility, mean over the run's topics with a relevant document)."""
    values = read_values(qrels)
    tag, ranking = read_ranking(run, score)
    per_topic = {topic: topic_compatibility(docs, values[topic], p) for topic, docs in ranking.items() if topic in values}
    return tag, per_topic, sum(per_topic.values()) / len(per_topic) if per_topic else 0.0

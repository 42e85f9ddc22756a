"""Sentences about plain records, shared by the documents that show them: a number and its
interval, a sample of a pool, a grading record, where a qrels set came from."""

from __future__ import annotations

import math
from typing import Any


def fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def describe_sample(sample: dict[str, Any]) -> str:
    """`sample of N pairs over T topics (seed S, from a pool of P pairs over U topics)`."""
    return (
        f"sample of {sample['pairs']} pairs over {sample['topics']} topics (seed {sample['seed']}, "
        f"from a pool of {sample['pool_pairs']} pairs over {sample['pool_topics']} topics)"
    )


def grading_rule(grading: dict[str, Any]) -> str:
    """A grading record in words: the method, per topic or global, the tie rule, the score graded."""
    method = grading.get("method")
    thresholds = grading.get("thresholds") or {}
    ties = grading.get("ties") or "not recorded"  # a quantile grading's tie rule: the oldest records name none
    if method == "quantile" and grading.get("per_topic"):
        topics = grading.get("topics", len(thresholds))  # records before 0.2 had no count: their per-topic cuts tell it
        rule = f"per-topic quantiles {grading.get('quantiles')} over {topics} topics, ties: {ties}"
    elif method == "quantile":
        cuts = thresholds.get("*")
        at = " at " + ", ".join(f"{c:.4g}" for c in cuts) if cuts else ""
        rule = f"global quantiles {grading.get('quantiles')}{at}, ties: {ties}"
    elif method in ("thresholds", "threshold"):
        rule = "cut points " + ", ".join(f"{c:g}" for c in thresholds.get("*", [])) if thresholds.get("*") else f"method {method}"
    elif method == "map":
        rule = "map " + ",".join(f"{k}:{v}" for k, v in (grading.get("map") or {}).items())
    elif method == "identity":
        rule = "identity: the scores are the grades"
    else:
        rule = f"method {method}"
    score = grading.get("score_from", grading.get("score", "score"))  # `score` in records before 0.2
    return rule + ("" if score == "score" else f", by the {score} score")


def judge_run_match_note(ref: str, judge_run_id: str, matched_by: str) -> str | None:
    """A line saying that `--judge-run REF` found its run by name, not by id."""
    if matched_by != "name":
        return None
    return f"note: --judge-run {ref} matched the judge run named {ref!r} (id {judge_run_id}), by its name"


def describe_qrels(source: dict[str, Any]) -> str:
    """What an audit's qrels are (`Audit.sources` entries): name, where from, judge run, grading, sample."""
    name, origin = source.get("name"), source.get("origin")
    if origin == "file":
        return f"{name}, the file {source.get('path')}"
    if origin == "irds":
        return f"{name}, from ir_datasets"
    if origin == "partial":
        return f"{name}, a running job's judgments so far ({source.get('path')}), graded by {grading_rule(source.get('grading') or {})}"
    if origin != "graded":
        return f"{name}, loaded from {source.get('path')}"
    judge_run = source.get("judge_run") or {}
    run = f"judge run {judge_run.get('id')}"
    if judge_run.get("name"):
        matched = ", matched by name" if judge_run.get("matched_by") == "name" else ""
        run += f" ({judge_run['name']!r}{matched})"
    grading = source.get("grading") or {}
    text = f"{name}, graded from {run} by {grading_rule(grading)}"
    return text + (f"; {describe_sample(grading['sample'])}" if grading.get("sample") else "")

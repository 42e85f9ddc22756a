"""The vectorised measures against pytrec_eval (trec_eval's C code) and ir_measures, to 1e-9:
on TREC DL 2019, on a DL21-shaped synthetic track, and on hypothesis-made edge cases (ties,
queries without relevant documents, runs missing queries, cut-offs beyond the depth)."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracks import write_track

from qrelkit.errors import QrelkitError
from qrelkit.evaluate import evaluate_runs
from qrelkit.evaluate.measures import Measure, vectorised_measure
from qrelkit.io import Qrel, Qrels, Run, RunEntry, read_qrels, read_runs

# measure -> (pytrec_eval measure, result key, relevance level)
PYTREC = {
    "nDCG@10": ("ndcg_cut.10", "ndcg_cut_10", 1),
    "nDCG@1000": ("ndcg_cut.1000", "ndcg_cut_1000", 1),
    "nDCG": ("ndcg", "ndcg", 1),
    "AP": ("map", "map", 1),
    "AP(rel=2)": ("map", "map", 2),
    "RR": ("recip_rank", "recip_rank", 1),
    "RR(rel=2)": ("recip_rank", "recip_rank", 2),
    "P@5": ("P.5", "P_5", 1),
    "P(rel=2)@10": ("P.10", "P_10", 2),
    "R@100": ("recall.100", "recall_100", 1),
    "R(rel=2)@1000": ("recall.1000", "recall_1000", 2),
}


def pytrec_values(grades: dict[str, dict[str, int]], run: Run) -> dict[str, np.ndarray]:
    """Per-query values over the qrels' queries from pytrec_eval directly, 0 where the run has none."""
    scores = {qid: docs for qid, docs in run.scores.items() if qid in grades}
    out = {}
    for level in (1, 2):
        measures = {m: spec for m, spec in PYTREC.items() if spec[2] == level}
        result = pytrec_eval.RelevanceEvaluator(grades, {name for name, _, _ in measures.values()}, relevance_level=level).evaluate(scores)
        for measure, (_, key, _) in measures.items():
            out[measure] = np.array([result[qid][key] if qid in result else 0.0 for qid in sorted(grades)])
    return out


def ir_measures_values(qrels: Qrels, runs: list[Run], measure: str) -> dict[str, np.ndarray]:
    """The same measure forced through ir_measures (a spelling the vectorised path does not take)."""
    import ir_measures

    parsed = ir_measures.parse_measure(measure)
    evaluator = ir_measures.evaluator([parsed], qrels.grades)
    queries = sorted(qrels.grades)
    out = {}
    for run in runs:
        vector = np.zeros(len(queries))
        for metric in evaluator.iter_calc({q: d for q, d in run.scores.items() if q in qrels.grades}):
            vector[queries.index(metric.query_id)] = metric.value
        out[run.name] = vector
    return out


def assert_matches_references(qrels: Qrels, runs: list[Run]) -> None:
    measures = [*PYTREC, "Judged@10", "Judged@3"]
    evaluation = evaluate_runs(qrels, runs, measures)
    grades = qrels.grades
    for run in runs:
        expected = pytrec_values(grades, run)
        for measure in PYTREC:
            np.testing.assert_allclose(evaluation.values[run.name][measure], expected[measure], rtol=0, atol=1e-9, err_msg=measure)
    for judged in ("Judged@10", "Judged@3"):
        expected = ir_measures_values(qrels, runs, judged)
        for run in runs:
            np.testing.assert_allclose(evaluation.values[run.name][judged], expected[run.name], rtol=0, atol=1e-9)


def test_names_in_ir_measures_syntax_are_vectorised_and_others_are_not():
    assert vectorised_measure("nDCG@10") == Measure("nDCG", 1, 10)
    assert vectorised_measure("AP(rel=2)") == Measure("AP", 2, None)
    assert vectorised_measure("P(rel=2)@5") == Measure("P", 2, 5)
    assert vectorised_measure("AP@100") == Measure("AP", 1, 100)
    assert vectorised_measure("nDCG(gains={0:0,1:1})@10") == Measure("nDCG", 1, 10, gains=((0, 0.0), (1, 1.0)))
    assert vectorised_measure("IPrec@0") == Measure("IPrec", 1, 0.0)
    assert vectorised_measure("NumRet(rel=2)") == Measure("NumRelRet", 2)
    for other in ("P", "Judged", "ERR@20", "nDCG(rel=2)@10", "ndcg@10", "RBP(p=0.8)", "nDCG(dcg='exp-log2')@10"):
        assert vectorised_measure(other) is None, other


@pytest.mark.parametrize("name", ["P@0", "nDCG@0", "R@0", "Success@0", "AP@0", "Judged@0", "P@-1"])
def test_a_cut_off_below_one_is_refused_as_trec_eval_refuses_it(name):
    with pytest.raises(QrelkitError, match="a cut-off must be at least 1"):
        vectorised_measure(name)


@pytest.mark.parametrize("name", ["IPrec@1.5", "IPrec@-0.1"])
def test_a_recall_level_outside_zero_to_one_is_refused(name):
    with pytest.raises(QrelkitError, match=r"recall level must lie in \[0, 1\]"):
        vectorised_measure(name)


def test_vectorised_measures_equal_pytrec_eval_on_dl19(dl19):
    assert_matches_references(read_qrels(dl19 / "qrels.txt"), read_runs([dl19 / "runs"]))


def test_vectorised_measures_equal_pytrec_eval_on_a_dl21_shaped_track(tmp_path):
    qrels_path, runs_dir = write_track(tmp_path)
    assert_matches_references(read_qrels(qrels_path), read_runs([runs_dir]))


def test_vectorised_and_ir_measures_paths_give_the_same_evaluation(dl19):
    """The dispatch keeps names as written: the same measure spelt two ways gives one value."""
    qrels, runs = read_qrels(dl19 / "qrels.txt"), read_runs([dl19 / "runs"])[:5]
    evaluation = evaluate_runs(qrels, runs, ["nDCG@10", "nDCG(dcg='log2')@10", "AP(rel=2)", "AP(rel=2,judged_only=False)"])
    np.testing.assert_allclose(evaluation.matrix("nDCG@10"), evaluation.matrix("nDCG(dcg='log2')@10"), atol=1e-12)
    np.testing.assert_allclose(evaluation.matrix("AP(rel=2)"), evaluation.matrix("AP(rel=2,judged_only=False)"), atol=1e-12)


QUERIES = ["q1", "q2", "q3", "q4"]
DOCS = [f"d{i}" for i in range(9)]


@st.composite
def collections(draw):
    """Small qrels and runs built to hit the edges: grades -1..3 (each query has one ≥ 0), a
    query with no relevant document, scores from a tiny set (ties) including near-ties in
    float32, docids the qrels lack, queries the qrels lack, runs missing queries."""
    judgments = []
    for qid in QUERIES[:3]:
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=7, unique=True))
        grades = [draw(st.integers(0, 3))] + [draw(st.integers(-1, 3)) for _ in docs[1:]]
        if qid == "q3":
            grades = [min(g, 0) for g in grades]  # judged, nothing relevant
        judgments += [Qrel(qid, d, g) for d, g in zip(docs, grades)]
    scores = st.sampled_from([0.0, 0.5, 1.0, 2.0, 0.1, 0.1 + 1e-10, -1.5])
    runs = []
    for r in range(draw(st.integers(1, 3))):
        entries = []
        for qid in draw(st.lists(st.sampled_from(QUERIES), max_size=4, unique=True)):
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=9, unique=True))
            entries += [RunEntry(qid, d, i + 1, draw(scores)) for i, d in enumerate(docs)]
        if not entries:
            entries = [RunEntry("q4", "d0", 1, 1.0)]
        runs.append(Run(f"r{r}", entries))
    return Qrels("q", judgments), runs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections())
def test_vectorised_measures_equal_pytrec_eval_on_edge_cases(collection):
    qrels, runs = collection
    assert_matches_references(qrels, runs)


def test_a_query_without_judgments_still_counts_as_zero_in_a_given_query_list():
    run = Run("r", [RunEntry("a", "d1", 1, 1.0)])
    evaluation = evaluate_runs({"a": {"d1": 1}, "b": {}}, [run], ["nDCG@10", "P@1"])
    assert evaluation.queries == ["a", "b"]
    assert evaluation.values["r"]["nDCG@10"].tolist() == [1.0, 0.0] and evaluation.mean("r", "P@1") == 0.5


@pytest.mark.parametrize("measure", ["nDCG@10", "AP(rel=2)"])
def test_runs_are_consumed_one_at_a_time(tmp_path, measure):
    """evaluate_runs takes an iterator, so a caller can stream runs from disk."""
    qrels_path, runs_dir = write_track(tmp_path, n_runs=4, n_queries=6, depth=20)
    qrels, runs = read_qrels(qrels_path), read_runs([runs_dir])
    streamed = evaluate_runs(qrels, iter(runs), [measure])
    listed = evaluate_runs(qrels, runs, [measure])
    assert streamed.runs == listed.runs and np.array_equal(streamed.matrix(measure), listed.matrix(measure))

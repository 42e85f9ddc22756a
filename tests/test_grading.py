"""Quantile grading (seed 003): < q50 → 0, q50 ≤ s < q75 → 1, ≥ q75 → 2."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qrelkit.errors import QrelkitError
from qrelkit.jobs import grade_scores, label_for
from qrelkit.jobs.spec import GradingSpec


def test_global_quantiles_give_exact_thresholds_and_grades():
    scores = [("q1", f"d{i}", float(i)) for i in range(1, 9)]  # 1..8
    result = grade_scores(scores, name="g")
    # numpy linear quantiles of 1..8: q50 = 4.5, q75 = 6.25
    assert result.thresholds == {"*": [4.5, 6.25]}
    assert [q.grade for q in result.qrels.entries] == [0, 0, 0, 0, 1, 1, 2, 2]


def test_a_score_equal_to_a_threshold_takes_the_upper_grade():
    assert label_for(4.5, [4.5, 6.25], [0, 1, 2]) == 1
    assert label_for(6.25, [4.5, 6.25], [0, 1, 2]) == 2
    assert label_for(4.4999, [4.5, 6.25], [0, 1, 2]) == 0


def test_per_topic_quantiles_use_each_topics_own_scores():
    scores = [("a", f"d{i}", float(i)) for i in range(4)] + [("b", f"e{i}", 10.0 * i) for i in range(4)]
    result = grade_scores(scores, name="g", per_topic=True)
    assert result.thresholds == {"a": [1.5, 2.25], "b": [15.0, 22.5]}
    grades = {(q.qid, q.docid): q.grade for q in result.qrels.entries}
    assert [grades[("a", f"d{i}")] for i in range(4)] == [0, 0, 1, 2]
    assert [grades[("b", f"e{i}")] for i in range(4)] == [0, 0, 1, 2]
    assert result.description["per_topic"] is True


def test_fixed_thresholds_and_custom_labels():
    scores = [("q", "a", 0.1), ("q", "b", 0.3), ("q", "c", 0.5), ("q", "d", 0.9)]
    result = grade_scores(scores, name="g", method="thresholds", thresholds=[0.3, 0.5, 0.8], labels=[0, 1, 2, 3])
    assert [q.grade for q in result.qrels.entries] == [0, 1, 2, 3]


@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=200))
def test_quantile_grades_split_the_scores_as_the_quantiles_say(values):
    scores = [("q", f"d{i}", v) for i, v in enumerate(values)]
    result = grade_scores(scores, name="g")
    q50, q75 = np.quantile(values, [0.5, 0.75])
    for (_, _, value), qrel in zip(scores, result.qrels.entries):
        assert qrel.grade == (0 if value < q50 else 1 if value < q75 else 2)
    # at least half the scores reach grade >= 1, at least a quarter grade 2
    grades = np.array([q.grade for q in result.qrels.entries])
    assert (grades >= 1).mean() >= 0.5 - 1e-9 or len(set(values)) < len(values)


def test_nothing_to_grade_is_a_clear_error():
    with pytest.raises(QrelkitError, match="no `ok` judgments"):
        grade_scores([], name="g")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"quantiles": [0.75, 0.5]}, "strictly increasing"),
        ({"quantiles": [0.5, 1.0]}, "strictly between 0 and 1"),
        ({"labels": [0, 1]}, "2 cut points need 3 labels"),
        ({"method": "thresholds"}, "needs `thresholds`"),
    ],
)
def test_grading_specs_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        GradingSpec(**options)

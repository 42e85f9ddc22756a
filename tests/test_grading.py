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
    result = grade_scores(scores, name="g", per_topic=False)
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


@given(st.lists(st.integers(-1000, 1000), min_size=4, max_size=200, unique=True))
def test_without_ties_the_grades_are_the_seeds_cut_at_the_quantile_values(thousandths):
    """Scores on a grid of 0.001: numpy's interpolated quantile s_i + t (s_i+1 - s_i) can round onto
    s_i when the two scores are one ulp apart (0.9999999999999999 and 1.0, hypothesis found), where
    the mid-rank rule keeps the exact order (s_i lies below the 75th percentile); off that rounding
    the two rules agree."""
    values = [k / 1000 for k in thousandths]
    scores = [("q", f"d{i}", v) for i, v in enumerate(values)]
    result = grade_scores(scores, name="g")
    q50, q75 = np.quantile(values, [0.5, 0.75])
    for (_, _, value), qrel in zip(scores, result.qrels.entries):
        assert qrel.grade == (0 if value < q50 else 1 if value < q75 else 2)
    # at least half the scores reach grade >= 1
    grades = np.array([q.grade for q in result.qrels.entries])
    assert (grades >= 1).mean() >= 0.5 - 1e-9


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


def test_an_unknown_grading_option_names_the_nearest_and_the_options_there():
    from qrelkit.jobs import grading_spec

    with pytest.raises(QrelkitError) as info:
        grading_spec({"method": "quantile", "quantile": [0.5]}, where="job.yaml: grading")
    assert str(info.value) == (
        "job.yaml: grading.quantile: unknown option; did you mean 'quantiles'? "
        "(options here: method, quantiles, thresholds, labels, per_topic, ties, map, score_from, name)"
    )


# -- ties (issue: grading that is right for real judges) ----------------------------------------


def test_a_topic_of_six_zeros_and_four_threes_grades_the_zeros_0_and_the_threes_2():
    scores = [("t", f"z{i}", 0.0) for i in range(6)] + [("t", f"h{i}", 3.0) for i in range(4)]
    result = grade_scores(scores, name="g", per_topic=True)
    grades = {q.docid: q.grade for q in result.qrels.entries}
    assert [grades[f"z{i}"] for i in range(6)] == [0] * 6
    assert [grades[f"h{i}"] for i in range(4)] == [2] * 4
    # comparing with the quantile values (q50 = 0, q75 = 3) would have graded the zeros 1
    assert result.thresholds["t"] == [0.0, 3.0]
    assert result.description["lowest_score_per_grade"]["t"] == {"0": 0.0, "2": 3.0}
    assert result.warnings == ["grade 1 is empty in 1 of 1 topics"]


def test_a_topic_whose_scores_are_all_equal_gets_one_grade_and_is_reported():
    scores = [("same", f"d{i}", 0.0) for i in range(16)] + [("varied", f"e{i}", float(i)) for i in range(8)]
    result = grade_scores(scores, name="g", per_topic=True)
    same = {q.grade for q in result.qrels.entries if q.qid == "same"}
    assert same == {1}  # mid-rank percentile ½: the middle grade, not 2 as before
    assert "1 of 2 topics have all scores equal (same): each got one grade" in result.warnings
    assert "grade 0 is empty in 1 of 2 topics" in result.warnings and "grade 2 is empty in 1 of 2 topics" in result.warnings
    assert result.description["warnings"] == result.warnings


def test_integer_scores_from_1_to_100_with_heavy_ties_never_split_a_tie():
    rng = np.random.default_rng(3)
    values = rng.choice([10, 40, 75, 75, 75, 90, 90, 100], size=400)
    scores = [("q", f"d{i}", float(v)) for i, v in enumerate(values)]
    result = grade_scores(scores, name="g")
    by_score: dict[float, set[int]] = {}
    for (_, _, score), qrel in zip(scores, result.qrels.entries):
        by_score.setdefault(score, set()).add(qrel.grade)
    assert all(len(grades) == 1 for grades in by_score.values())
    # grades are monotone in the score
    ordered = [next(iter(by_score[s])) for s in sorted(by_score)]
    assert ordered == sorted(ordered)
    # each score's grade follows its block's mid-rank percentile on numpy's (n - 1) scale
    n = len(values)
    for score, grades in by_score.items():
        below, equal = int((values < score).sum()), int((values == score).sum())
        p = (below + (equal - 1) / 2) / (n - 1)
        assert grades == {0 if p < 0.5 else 1 if p < 0.75 else 2}


# -- methods --------------------------------------------------------------------------------------


def test_identity_keeps_integer_grades_and_names_the_pair_that_is_not_one():
    scores = [("q", "a", 0.0), ("q", "b", 3.0), ("q", "c", 2.0)]
    assert [q.grade for q in grade_scores(scores, name="g", method="identity").qrels.entries] == [0, 3, 2]
    with pytest.raises(QrelkitError, match=r"pair \(q, x\): score 2.5 is not an integer grade"):
        grade_scores(scores + [("q", "x", 2.5)], name="g", method="identity")
    with pytest.raises(QrelkitError, match=r"pair \(q, b\): score 3 is not one of the labels \[0, 1, 2\]"):
        grade_scores(scores, name="g", method="identity", labels=[0, 1, 2])


def test_map_takes_single_scores_and_ranges_and_names_an_unmapped_pair():
    scores = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0), ("q", "d", 0.0)]
    mapped = grade_scores(scores, name="g", method="map", map={3: 2, 2: 2, 1: 1, 0: 0})
    assert [q.grade for q in mapped.qrels.entries] == [2, 2, 1, 0]
    ranged = grade_scores(
        [("q", "a", 12.0), ("q", "b", 60.0), ("q", "c", 100.0)], name="g", method="map", map={"1-25": 0, "26-75": 1, "76..100": 2}
    )
    assert [q.grade for q in ranged.qrels.entries] == [0, 1, 2]
    with pytest.raises(QrelkitError, match=r"pair \(q, d\): score 0 is not covered by the map"):
        grade_scores(scores, name="g", method="map", map={3: 2, 2: 2, 1: 1})
    with pytest.raises(ValueError, match="overlap"):
        GradingSpec(method="map", map={"1-25": 0, "20-30": 1})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "quantile", "thresholds": [0.5]}, "thresholds do not apply to method quantile"),
        ({"method": "thresholds", "thresholds": [0.5, float("nan")]}, "must be finite"),
        ({"method": "map"}, "method `map` needs `map`"),
        ({"method": "identity", "quantiles": [0.5]}, "quantiles do not apply to method identity"),
        ({"labels": [2, 1, 0]}, "labels must be strictly increasing"),
        ({"score": "score_expected"}, None),  # the column's old name is still accepted
    ],
)
def test_the_job_file_and_the_command_line_get_the_same_errors(tmp_path, options, message):
    from typer.testing import CliRunner

    from qrelkit.cli import app
    from qrelkit.commands.requests import GradeRequest
    from qrelkit.jobs import grading_spec

    if message is None:
        assert grading_spec(options).score_from == "expected"
        return
    with pytest.raises(QrelkitError, match=message):
        grading_spec(options, where="job.yaml: grading")
    flags = {"method": options.get("method"), "labels": options.get("labels"), "quantiles": options.get("quantiles")}
    flags["thresholds"] = options.get("thresholds")
    with pytest.raises(QrelkitError, match=message):
        _ = GradeRequest(
            judge_run="x",
            method=flags["method"],
            quantiles=",".join(map(str, flags["quantiles"])) if flags["quantiles"] else None,
            thresholds=",".join(map(str, flags["thresholds"])) if flags["thresholds"] else None,
            labels=",".join(map(str, flags["labels"])) if flags["labels"] else None,
        ).spec
    # and through the real command, one clean message and exit code 2
    args = ["grade", "--judge-run", "x", "--db", str(tmp_path / "none.duckdb")]
    for flag in ("method", "quantiles", "thresholds", "labels"):
        if flags[flag]:
            args += [f"--{flag}", flags[flag] if isinstance(flags[flag], str) else ",".join(map(str, flags[flag]))]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0 and message.split()[0] in str(result.exception or result.output)


def test_every_grading_option_of_a_job_file_is_a_flag_of_grade_and_its_errors_name_the_flag():
    from qrelkit.commands.fields import declared
    from qrelkit.commands.requests import GradeRequest

    assert set(GradingSpec.model_fields) <= {field.name for field, _ in declared(GradeRequest)}  # one more option: one more flag
    with pytest.raises(QrelkitError, match=r"^--ties: Input should be 'midrank' or 'at-or-above'"):
        _ = GradeRequest(judge_run="x", ties="paper").spec
    with pytest.raises(QrelkitError, match=r"^--per-topic/--global: Input should be a valid boolean"):
        _ = GradeRequest(judge_run="x", per_topic="sometimes").spec
    assert GradeRequest(judge_run="x", thresholds="0.5", labels="0,1").spec.method == "thresholds"  # cut points alone say the method


# -- the tie rule and the one default (issue 23) ------------------------------------------------

# docs/grading.md's worked example: half of a topic's ten scores are 80, the median is 80.
HALF_AT_80 = [40.0, 80.0, 80.0, 80.0, 80.0, 80.0, 85.0, 90.0, 95.0, 100.0]


def test_half_a_topic_at_80_grades_the_80s_0_by_midrank_and_1_by_the_papers_at_or_above_rule():
    scores = [("t", f"d{i}", v) for i, v in enumerate(HALF_AT_80)]
    q50, q75 = np.quantile(HALF_AT_80, [0.5, 0.75])
    assert (q50, q75) == (80.0, 88.75)
    midrank = grade_scores(scores, name="m")
    paper = grade_scores(scores, name="p", ties="at-or-above")
    # the 80s span ranks 1-5 of 0-9: mid-rank 3, p = 3/9 = 0.33 < 0.5 -> 0; the paper: 80 >= q50 = 80 -> 1
    assert [q.grade for q in midrank.qrels.entries] == [0, 0, 0, 0, 0, 0, 1, 2, 2, 2]
    assert [q.grade for q in paper.qrels.entries] == [0, 1, 1, 1, 1, 1, 1, 2, 2, 2]
    assert (midrank.description["ties"], paper.description["ties"]) == ("midrank", "at-or-above")
    assert paper.thresholds == midrank.thresholds == {"t": [80.0, 88.75]}


@given(st.lists(st.integers(1, 5), min_size=2, max_size=60))
def test_at_or_above_is_seed_003s_rule_a_grade_is_reached_when_the_score_is_at_or_above_numpys_quantile(values):
    scores = [("q", f"d{i}", float(v)) for i, v in enumerate(values)]
    result = grade_scores(scores, name="g", ties="at-or-above")
    q50, q75 = np.quantile(np.asarray(values, dtype=np.float64), [0.5, 0.75])
    assert [q.grade for q in result.qrels.entries] == [0 if v < q50 else 1 if v < q75 else 2 for v in values]
    by_score: dict[int, set[int]] = {}
    for value, qrel in zip(values, result.qrels.entries):
        by_score.setdefault(value, set()).add(qrel.grade)
    assert all(len(grades) == 1 for grades in by_score.values())  # this rule never splits a tie either


def test_the_tie_rule_belongs_to_quantile_grading_only():
    assert GradingSpec(ties="at-or-above").ties == "at-or-above" and GradingSpec().ties == "midrank"
    with pytest.raises(ValueError, match="ties do not apply to method thresholds"):
        GradingSpec(method="thresholds", thresholds=[0.5], ties="midrank")
    with pytest.raises(ValueError, match="ties"):
        GradingSpec(ties="paper")


def test_one_default_per_topic_quantiles_by_midrank_in_the_api_the_job_file_and_the_command_line():
    from qrelkit.commands.requests import GradeRequest
    from qrelkit.jobs import grading_spec

    api, job, command_line = GradingSpec(), grading_spec({}), GradeRequest(judge_run="x").spec
    assert (api.per_topic, api.ties) == (job.per_topic, job.ties) == (command_line.per_topic, command_line.ties) == (True, "midrank")
    assert GradeRequest(judge_run="x", per_topic=False).spec.per_topic is False  # --global
    scores = [("a", f"d{i}", float(i)) for i in range(4)] + [("b", f"e{i}", 10.0 * i) for i in range(4)]
    assert set(grade_scores(scores, name="g").thresholds) == {"a", "b"}  # per topic unless asked otherwise


def test_every_grading_line_names_its_method_scope_and_tie_rule():
    from qrelkit.commands.documents.judging import grading_lines as describe_grading

    scores = [("a", f"d{i}", float(i)) for i in range(4)] + [("b", f"e{i}", 10.0 * i) for i in range(4)]
    per_topic = describe_grading(grade_scores(scores, name="g"))[0]
    assert "(per-topic quantiles [0.5, 0.75] over 2 topics, ties: midrank)" in per_topic
    overall = describe_grading(grade_scores(scores, name="g", per_topic=False, ties="at-or-above"))[0]
    assert "(global quantiles [0.5, 0.75] at 2.5, 12.5, ties: at-or-above)" in overall


def test_the_seed_003_configs_grade_globally_by_the_papers_tie_rule():
    from pathlib import Path

    from qrelkit.jobs import load_job

    configs = sorted((Path(__file__).resolve().parents[1] / "configs").glob("atomic-*.yaml"))
    assert len(configs) == 4
    for config in configs:
        grading = load_job(config).grading
        assert grading is not None and (grading.method, grading.per_topic, grading.ties) == ("quantile", False, "at-or-above"), config

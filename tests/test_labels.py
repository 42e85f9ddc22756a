"""Label agreement: Cohen's κ against scikit-learn, Krippendorff's α against the `krippendorff`
package, the confusion matrix, grade maps between scales, and the pair counts."""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion
from tracks import umbrela_vs_nist
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.commands.requests import GradeMap
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.labels import (
    GradeMaps,
    cohen_kappa,
    confusion_matrix,
    krippendorff_alpha,
    label_agreement,
    map_grades,
)

runner = CliRunner()

label_pairs = st.integers(min_value=2, max_value=60).flatmap(
    lambda n: st.tuples(st.lists(st.integers(-1, 4), min_size=n, max_size=n), st.lists(st.integers(-1, 4), min_size=n, max_size=n))
)


def _sklearn_kappa(a, b, weights):
    labels = list(range(min(a + b), max(a + b) + 1))  # every grade in the span: distance = grade difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns (and returns NaN) when κ is undefined
        return cohen_kappa_score(a, b, labels=labels, weights=weights)


@settings(max_examples=200, deadline=None)
@given(label_pairs, st.sampled_from([None, "linear", "quadratic"]))
def test_cohen_kappa_matches_scikit_learn(pair, weights):
    reference, model = pair
    ours, theirs = cohen_kappa(reference, model, weights), _sklearn_kappa(reference, model, weights)
    if math.isnan(theirs):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-10)


@settings(max_examples=100, deadline=None)
@given(label_pairs)
def test_confusion_matrix_matches_scikit_learn(pair):
    reference, model = pair
    labels = list(range(min(reference + model), max(reference + model) + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn notes when only one label occurs
        theirs = sk_confusion(reference, model, labels=labels)
    np.testing.assert_array_equal(confusion_matrix(reference, model), theirs)


reliability = st.integers(min_value=2, max_value=4).flatmap(
    lambda coders: st.integers(min_value=2, max_value=40).flatmap(
        lambda units: st.lists(
            st.lists(st.one_of(st.integers(0, 4).map(float), st.just(math.nan)), min_size=units, max_size=units),
            min_size=coders,
            max_size=coders,
        )
    )
)


@settings(max_examples=200, deadline=None)
@given(reliability, st.sampled_from(["ordinal", "nominal", "interval"]))
def test_krippendorff_alpha_matches_the_krippendorff_package(data, level):
    data = np.array(data)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    values = np.unique(data[:, pairable][~np.isnan(data[:, pairable])])
    if len(values) < 2:
        assert math.isnan(krippendorff_alpha(data, level))  # nothing to disagree about
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(theirs, abs=1e-9)


def test_krippendorff_ordinal_alpha_on_two_coders_without_missing_values():
    reference = np.array([0, 1, 2, 3, 0, 1, 2, 3, 2, 1])
    model = np.array([0, 1, 2, 2, 1, 1, 2, 3, 0, 1])
    expected = krippendorff.alpha(reliability_data=[reference, model], level_of_measurement="ordinal")
    assert label_agreement(
        {"q": {f"d{i}": int(g) for i, g in enumerate(model)}}, {"q": {f"d{i}": int(g) for i, g in enumerate(reference)}}
    ).krippendorff_alpha_ordinal == pytest.approx(expected)


def test_parse_grade_map_and_its_errors():
    assert dict(GradeMap.parse("3:2,2:2,1:1,0:0")) == {3: 2, 2: 2, 1: 1, 0: 0}
    assert dict(GradeMap.parse(" 1:1 , 0:0")) == {1: 1, 0: 0}
    with pytest.raises(QrelkitError, match=r"'3-2' is not `grade:grade`"):
        GradeMap.parse("3-2,1:1")
    with pytest.raises(QrelkitError, match=r"'x:1' is not"):
        GradeMap.parse("x:1")
    with pytest.raises(QrelkitError, match="grade 3 is mapped twice"):
        GradeMap.parse("3:2,3:1")


def test_an_unmapped_grade_is_an_error_naming_the_pair():
    with pytest.raises(QrelkitError, match=r"grade 3 of the reference qrels \(qid 7, docid d9\) is not mapped"):
        map_grades({"7": {"d1": 0, "d9": 3}}, {0: 0, 1: 1, 2: 2}, "reference")


def test_nist_four_grades_mapped_onto_seed_003_three_grades():
    reference = {"q1": {"a": 3, "b": 2, "c": 1, "d": 0, "e": 3}}
    model = {"q1": {"a": 2, "b": 2, "c": 1, "d": 0, "f": 1}}
    result = label_agreement(model, reference, maps=GradeMaps(reference={3: 2, 2: 2, 1: 1, 0: 0}))
    assert (result.reference_pairs, result.model_pairs, result.shared_pairs) == (5, 5, 4)
    assert result.labels == [0, 1, 2]
    assert result.cohen_kappa == pytest.approx(1.0)  # after the map, every shared pair agrees
    unmapped = label_agreement(model, reference)
    assert unmapped.labels == [0, 1, 2, 3] and unmapped.cohen_kappa < 1.0


def test_binarized_kappa_cuts_both_sides_at_the_level():
    reference = {"q": {"a": 0, "b": 1, "c": 2, "d": 3}}
    model = {"q": {"a": 1, "b": 0, "c": 3, "d": 2}}
    result = label_agreement(model, reference, rel_level=2)
    assert result.cohen_kappa_binary == pytest.approx(1.0)  # {0,1} vs {2,3} agree exactly
    assert result.cohen_kappa < 0  # every four-grade label differs
    assert label_agreement(model, reference).cohen_kappa_binary is None


def test_qrels_sharing_no_pair_is_a_clear_error():
    with pytest.raises(QrelkitError, match="share no"):
        label_agreement({"q1": {"a": 1}}, {"q2": {"a": 1}})


def test_cli_rejects_a_bad_map_cleanly(tmp_path):
    (tmp_path / "m.qrels").write_text("q1 0 a 1\nq1 0 b 0\n")
    (tmp_path / "h.qrels").write_text("q1 0 a 1\nq1 0 b 0\n")
    (tmp_path / "r.run").write_text("q1 Q0 a 1 2.0 r\nq1 Q0 b 2 1.0 r\n")
    result = runner.invoke(
        app,
        [
            "agree",
            "--model-qrels",
            str(tmp_path / "m.qrels"),
            "--reference-qrels",
            str(tmp_path / "h.qrels"),
            "--runs",
            str(tmp_path / "r.run"),
            "--map",
            "1=1",
            "--json",
        ],
    )
    assert result.exit_code != 0
    assert isinstance(result.exception, QrelkitError) and "'1=1' is not `grade:grade`" in str(result.exception)


def test_dl19_nist_grades_mapped_and_binarised(dl19):
    """NIST 0–3 onto 0–2 on both sides, then binarised at 2: same as binarising the raw grades at 2."""
    result = runner.invoke(
        app,
        [
            *umbrela_vs_nist(dl19),
            "--measure",
            "nDCG@10",
            "--resamples",
            "0",
            "--json",
            "--map",
            "3:2,2:2,1:1,0:0",
            "--map-model",
            "3:2,2:2,1:1,0:0",
            "--rel-level",
            "2",
        ],
        catch_exceptions=False,
    )
    payload = json.loads(result.stdout)
    assert payload["labels"]["confusion"]["labels"] == [0, 1, 2]
    assert round(payload["labels"]["cohen_kappa_binary"], 4) == 0.5244
    assert payload["maps"]["reference"] == {"3": 2, "2": 2, "1": 1, "0": 0}
    # The map changes label agreement only; systems are still scored on each side's own grades.
    assert round(payload["systems"]["nDCG@10"]["kendall_tau"], 4) == 0.9159

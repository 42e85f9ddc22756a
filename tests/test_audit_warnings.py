"""The audit says when its numbers should not be read as they stand: grades on different scales,
and too few shared pairs, runs or queries for the statistics it prints (`Audit.warnings`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracks import umbrela_vs_nist
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.evaluate.audit import MIN_KAPPA_PAIRS, MIN_QUERIES, MIN_RUNS, audit, scale_warning, size_warnings
from qrelkit.evaluate.labels import GradeMaps
from qrelkit.io import Qrel, Qrels, Run, RunEntry

runner = CliRunner()
NIST_ONTO_0_2 = "3:2,2:2,1:1,0:0"


def grades(*values: int) -> dict[str, dict[str, int]]:
    return {"q1": {f"d{i}": g for i, g in enumerate(values)}}


def test_a_0_2_model_against_a_0_3_reference_is_told_to_map_the_reference():
    warning = scale_warning(grades(0, 1, 2, 2), grades(0, 1, 2, 3))
    assert warning == (
        "the grades are on different scales: the model's span 0–2, the reference's 0–3; Cohen's κ counts every grade one side "
        f"never gives as a disagreement. Put both on one scale with --map {NIST_ONTO_0_2} (reference grades onto the model's scale)."
    )


def test_a_wider_model_scale_is_told_to_map_the_model():
    warning = scale_warning(grades(0, 1, 2, 3), grades(0, 1, 1, 0))
    assert warning is not None and "the model's span 0–3, the reference's 0–1" in warning
    assert "--map-model 3:1,2:1,1:1,0:0 (model grades onto the reference's scale)" in warning


def test_no_scale_warning_when_the_scales_match_or_a_map_makes_them_match():
    assert scale_warning(grades(0, 1, 2, 3), grades(3, 2, 1, 0)) is None
    assert scale_warning(grades(0, 1, 2), grades(0, 1, 2, 3), maps=GradeMaps(reference={3: 2, 2: 2, 1: 1, 0: 0})) is None
    assert scale_warning(grades(0, 1, 2, 3), grades(0, 1, 2), maps=GradeMaps(model={3: 2, 2: 2, 1: 1, 0: 0})) is None


@pytest.mark.parametrize(
    ("pairs", "queries", "runs", "expected"),
    [
        (
            MIN_KAPPA_PAIRS - 1,
            MIN_QUERIES,
            MIN_RUNS,
            "Cohen's κ and α rest on only 49 shared pairs (fewer than 50): at that size κ's 95% interval is about ±0.2 or wider.",
        ),
        (
            MIN_KAPPA_PAIRS,
            MIN_QUERIES,
            MIN_RUNS - 1,
            "the system-ranking correlations compare only 4 runs (fewer than 5): "
            "even a perfect Kendall τ cannot be told from chance at the 5% level.",
        ),
        (
            MIN_KAPPA_PAIRS,
            MIN_QUERIES - 1,
            MIN_RUNS,
            "systems are scored on only 9 queries judged by both qrels (fewer than 10): "
            "the rankings, τ, Relative Δ and their bootstrap intervals rest on too few queries.",
        ),
    ],
)
def test_each_size_warning_names_how_few_and_appears_only_below_its_threshold(pairs, queries, runs, expected):
    assert size_warnings(pairs, queries, runs) == [expected]


def test_no_size_warning_at_the_thresholds():
    assert size_warnings(MIN_KAPPA_PAIRS, MIN_QUERIES, MIN_RUNS) == []


def _qrels(name: str, entries: dict[tuple[str, str], int]) -> Qrels:
    return Qrels(name, tuple(Qrel(q, d, g) for (q, d), g in sorted(entries.items())))


def nested(entries: dict[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (qid, docid), grade in entries.items():
        out.setdefault(qid, {})[docid] = grade
    return out


def test_audit_collects_the_warnings_and_its_json_carries_them():
    """3 queries × 4 documents, 3 runs, model 0–2 against reference 0–3: every warning applies."""
    reference = {(f"q{q}", f"d{d}"): (q + d) % 4 for q in range(3) for d in range(4)}
    model = {key: min(grade, 2) for key, grade in reference.items()}
    runs = [
        Run(f"r{r}", tuple(RunEntry(f"q{q}", f"d{d}", rank, float(-rank)) for q in range(3) for rank, d in enumerate(order, 1)))
        for r, order in enumerate([(0, 1, 2, 3), (3, 2, 1, 0), (1, 3, 0, 2)])
    ]
    result = audit(_qrels("model", model), _qrels("reference", reference), runs, measures=["nDCG@10"], resamples=0)
    assert result.warnings == [scale_warning(nested(model), nested(reference)), *size_warnings(12, 3, 3)]
    mapped = audit(
        _qrels("model", model),
        _qrels("reference", reference),
        runs,
        measures=["nDCG@10"],
        resamples=0,
        maps=GradeMaps(reference={3: 2, 2: 2, 1: 1, 0: 0}),
    )
    assert mapped.warnings == size_warnings(12, 3, 3)  # the map puts both on 0–2: no scale warning


def _agree(dl19: Path, *extra: str):
    return runner.invoke(
        app,
        [
            *umbrela_vs_nist(dl19),
            "--measure",
            "nDCG@10",
            "--resamples",
            "0",
            *extra,
        ],
        catch_exceptions=False,
    )


def test_dl19_umbrela_audit_warns_of_nothing(dl19):
    """UMBRELA and NIST are both on 0–3; 9,260 pairs, 43 queries, 37 runs: nothing to warn about."""
    result = _agree(dl19, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["warnings"] == []
    assert "warning" not in result.stderr


def test_dl19_agree_prints_the_scale_warning_on_stderr_and_keeps_json_clean(dl19):
    """Only the reference mapped to 0–2: UMBRELA's 3s now have no counterpart."""
    result = _agree(dl19, "--json", "--map", NIST_ONTO_0_2)
    payload = json.loads(result.stdout)  # stdout is still pure JSON
    assert payload["warnings"] == [
        "the grades are on different scales: the model's span 0–3, the reference's 0–2; Cohen's κ counts every grade one side "
        "never gives as a disagreement. Put both on one scale with --map-model 3:2,2:2,1:1,0:0 (model grades onto the reference's scale)."
    ]
    assert "warning: the grades are on different scales: the model's span 0–3, the reference's 0–2" in result.stderr

"""Relative Δ (seed 003, Table 3): a hand-computed example, the three ways to name a group,
their errors, and the DL19 neural/traditional split."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tracks import umbrela_vs_nist
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.commands.agree import resolve_groups
from qrelkit.commands.requests import parse_group_patterns
from qrelkit.errors import InputFormatError, QrelkitError
from qrelkit.evaluate.bias import (
    group_bias,
    groups_from_file,
    relative_delta,
)
from qrelkit.evaluate.metrics import Evaluation
from qrelkit.io.groups import read_groups_table

runner = CliRunner()


def _evaluation(per_run: dict[str, list[float]], measure: str = "nDCG@10") -> Evaluation:
    runs = list(per_run)
    queries = [f"q{i}" for i in range(len(per_run[runs[0]]))]
    return Evaluation([measure], queries, runs, {run: {measure: np.array(v, float)} for run, v in per_run.items()})


def test_relative_delta_by_hand():
    # Group means 0.6 and 0.4 -> M_g = 0.5; the other run 0.3 -> M_o = 0.3;
    # Δ = 2·(0.5 − 0.3)/(0.5 + 0.3)·100 = 50.
    model = _evaluation({"clip-a": [0.5, 0.7], "clip-b": [0.4, 0.4], "bm25": [0.2, 0.4]})
    # Under the reference the group is worse: M_g = (0.2 + 0.3)/2 = 0.25, M_o = 0.5 -> Δ = 2·(−0.25)/0.75·100.
    reference = _evaluation({"clip-a": [0.2, 0.2], "clip-b": [0.3, 0.3], "bm25": [0.5, 0.5]})
    result = group_bias(model, reference, {"clip": ["clip-a", "clip-b"]}, resamples=0)["clip"]["nDCG@10"]
    assert result.model == pytest.approx(50.0)
    assert result.reference == pytest.approx(-200 / 3)
    assert result.difference == pytest.approx(50.0 + 200 / 3)
    assert result.model_means == pytest.approx((0.5, 0.3))
    assert result.group_runs == ["clip-a", "clip-b"] and result.other_runs == 1
    assert result.model_ci95 is None


def test_relative_delta_is_antisymmetric_and_zero_for_equal_means():
    assert relative_delta(0.3, 0.3) == 0.0
    assert relative_delta(0.6, 0.2) == pytest.approx(-relative_delta(0.2, 0.6)) == pytest.approx(100.0)
    assert np.isnan(relative_delta(0.0, 0.0))
    # Seed 003's CLIP-S row, Δ = 114.7, means the group scored (200 + Δ)/(200 − Δ) ≈ 3.69 times the others.
    assert relative_delta(314.7, 85.3) == pytest.approx(114.7)
    assert relative_delta(1.0, 1.0 / 3.689) == pytest.approx(114.7, abs=0.01)


def test_bootstrap_interval_is_seeded_and_brackets_a_stable_bias():
    rng = np.random.default_rng(0)
    runs = {f"n{i}": list(0.6 + rng.normal(0, 0.05, 30)) for i in range(4)}
    runs |= {f"t{i}": list(0.4 + rng.normal(0, 0.05, 30)) for i in range(4)}
    evaluation = _evaluation(runs)
    first = group_bias(evaluation, evaluation, {"neural": ["n0", "n1", "n2", "n3"]}, resamples=300, seed=5)
    again = group_bias(evaluation, evaluation, {"neural": ["n0", "n1", "n2", "n3"]}, resamples=300, seed=5)
    result = first["neural"]["nDCG@10"]
    assert result == again["neural"]["nDCG@10"]
    assert result.model_ci95[0] < result.model < result.model_ci95[1]
    assert result.model_ci95 == result.reference_ci95  # identical qrels: identical intervals
    assert result.difference_ci95 == (0.0, 0.0)


RUNS = ["bm25", "bm25_rm3", "bert_base", "bert_large", "duet"]


def groups_from_patterns(specs: list[str], runs: list[str]) -> dict[str, list[str]]:
    """`--group NAME=REGEX` items as the audit reads them: parsed by the request, matched by the use case."""
    return resolve_groups(runs, parse_group_patterns(specs))


def test_groups_by_regex_and_their_errors():
    assert groups_from_patterns(["neural=bert|duet"], RUNS) == {"neural": ["bert_base", "bert_large", "duet"]}
    with pytest.raises(QrelkitError, match=r"group 'x' \(regex 'colbert'\) matches none of the 5 runs"):
        groups_from_patterns(["x=colbert"], RUNS)
    with pytest.raises(QrelkitError, match="holds all 5 runs"):
        groups_from_patterns(["all=."], RUNS)
    with pytest.raises(QrelkitError, match="expected NAME=REGEX"):
        groups_from_patterns(["bert"], RUNS)
    with pytest.raises(QrelkitError, match="invalid regular expression"):
        groups_from_patterns(["bad=("], RUNS)


def test_groups_file_with_and_without_header(tmp_path):
    with_header = tmp_path / "groups.tsv"
    with_header.write_text(
        "run\tgroup\tfamily\n"
        + "".join(f"{run}\t{'UNH' if 'bm25' in run else 'MSR'}\t{'traditional' if 'bm25' in run else 'neural'}\n" for run in RUNS)
        + "extra_run\tX\tneural\n"
    )
    assert read_groups_table(with_header)[0] == ["group", "family"]
    assert groups_from_file(with_header, "family", RUNS) == {
        "neural": ["bert_base", "bert_large", "duet"],
        "traditional": ["bm25", "bm25_rm3"],
    }
    with pytest.raises(QrelkitError, match="choose one with FILE:COLUMN"):
        groups_from_file(with_header, None, RUNS)
    with pytest.raises(QrelkitError, match="no column 'team'"):
        groups_from_file(with_header, "team", RUNS)
    plain = tmp_path / "plain.tsv"
    plain.write_text("".join(f"{run}\t{'neural' if 'b' in run[:2] and 'bm' not in run else 'other'}\n" for run in RUNS))
    assert groups_from_file(plain, None, RUNS) == {"neural": ["bert_base", "bert_large"], "other": ["bm25", "bm25_rm3", "duet"]}


def test_groups_file_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("run\tgroup\tfamily\nbm25\tUNH\ttraditional\nduet\tneural\n")
    with pytest.raises(InputFormatError, match=r"bad\.tsv:3: expected 3 columns \(run, group, family\), found 2"):
        read_groups_table(bad)
    short = tmp_path / "short.tsv"
    short.write_text("run\tfamily\nbm25\ttraditional\nduet\tneural\n")
    with pytest.raises(QrelkitError, match="no line for run\\(s\\) bm25_rm3, bert_base, bert_large"):
        groups_from_file(short, "family", RUNS)


def test_dl19_neural_bias_under_nist_and_umbrela(dl19):
    result = runner.invoke(
        app,
        [
            *umbrela_vs_nist(dl19),
            "--groups",
            f"{dl19 / 'groups.tsv'}:family",
            "--resamples",
            "200",
            "--json",
        ],
        catch_exceptions=False,
    )
    bias = json.loads(result.stdout)["bias"]
    assert set(bias) == {"neural", "traditional"}
    neural = bias["neural"]["nDCG@10"]
    assert (neural["group_runs"], neural["other_runs"]) == (26, 11)
    # The neural runs beat BM25 and friends under both qrels: Δ > 0 with the interval above 0.
    assert neural["reference"] > 0 and neural["reference_ci95"][0] > 0
    assert neural["model"] > 0 and neural["model_ci95"][0] > 0
    assert bias["traditional"]["nDCG@10"]["model"] == pytest.approx(-neural["model"])
    official = json.loads((dl19 / "official-nist.json").read_text())
    families = dict(line.split("\t")[::2] for line in (dl19 / "groups.tsv").read_text().splitlines()[1:])
    by_family = {f: np.mean([official[r]["ndcg_cut_10"] for r in official if families[r] == f]) for f in ("neural", "traditional")}
    # Under NIST's qrels, Δ follows from NIST's own published nDCG@10 of each run.
    assert neural["reference"] == pytest.approx(relative_delta(by_family["neural"], by_family["traditional"]), abs=0.01)


def test_dl19_group_regex_matching_no_run_is_a_clean_error(dl19):
    result = runner.invoke(
        app,
        [
            *umbrela_vs_nist(dl19),
            "--group",
            "colbert=colbert",
            "--json",
        ],
    )
    assert result.exit_code != 0 and "matches none of the 37 runs" in str(result.exception)

"""NRG (seed 004): the paper's Table 1, the plain metric at M = 0, the reference code's semantics on
DL19, the prior sets, the comparison measures and the CLI contract."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import qrelkit
from qrelkit.cli import app
from qrelkit.errors import InputFormatError, QrelkitError
from qrelkit.evaluate import evaluate_runs
from qrelkit.evaluate.nrg import base_metric, nrg
from qrelkit.evaluate.nrg.compare import rareness_precision, tasc, unique_contributions
from qrelkit.evaluate.nrg.priors import (
    all_others,
    best_per_group,
    chronological,
    read_run_order,
)
from qrelkit.io import Run, RunEntry, read_qrels, read_runs
from qrelkit.io.groups import run_groups
from qrelkit.report.plots.nrg import plot_nrg

runner = CliRunner()

# Seed 004, Table 1: the same ten items in three orders; A, E, F and J relevant at one grade (4).
TABLE1 = {"R1": "ABCDEFGHIJ", "R2": "EDCBAFGHIJ", "R3": "JIHGFEDCBA"}
TABLE1_QRELS = {"q": {d: (4 if d in "AEFJ" else 0) for d in "ABCDEFGHIJ"}}
TABLE1_NRG = {  # (target, prior set) -> NRG@10 as printed
    ("R1", ("R2",)): 0.7361,
    ("R1", ("R3",)): 0.8277,
    ("R1", ("R2", "R3")): 0.8417,
    ("R2", ("R1",)): 0.7361,
    ("R2", ("R3",)): 0.7988,
    ("R2", ("R1", "R3")): 0.8316,
    ("R3", ("R1",)): 0.8277,
    ("R3", ("R2",)): 0.7988,
    ("R3", ("R1", "R2")): 0.8681,
}


def make_run(name: str, ranking: dict[str, str | list[str]]) -> Run:
    entries = [
        RunEntry(qid, docid, rank, float(len(docs) - rank + 1)) for qid, docs in ranking.items() for rank, docid in enumerate(docs, start=1)
    ]
    return Run(name, tuple(entries))


TABLE1_RUNS = [make_run(name, {"q": list(docs)}) for name, docs in TABLE1.items()]


@pytest.mark.parametrize(("target", "prior"), list(TABLE1_NRG))
def test_table1_nrg_at_10_reproduces_seed_004(target, prior):
    result = nrg(TABLE1_QRELS, TABLE1_RUNS, {target: list(prior)}, depth=10)
    means = result.means()[target]
    assert round(means["nrg"], 4) == TABLE1_NRG[(target, prior)]
    assert round(means["base"], 4) == 0.7933  # NDCG@10 of every ranking


def test_table1_other_two_is_the_default_all_others_prior_set():
    means = nrg(TABLE1_QRELS, TABLE1_RUNS).means()
    assert [round(means[r]["nrg"], 4) for r in TABLE1] == [0.8417, 0.8316, 0.8681]


def test_chronological_prior_first_run_scores_its_plain_metric():
    result = nrg(TABLE1_QRELS, TABLE1_RUNS, chronological(["R1", "R2", "R3"]))
    means = result.means()
    assert result.priors == {"R1": [], "R2": ["R1"], "R3": ["R1", "R2"]}
    assert [round(means[r]["nrg"], 4) for r in TABLE1] == [0.7933, 0.7361, 0.8681]


def test_no_priors_is_the_plain_metric_on_dl19(dl19):
    """M = 0: Eq. 4 reduces to Eq. 1. nDCG@10 equals NIST's figures and ir_measures; P@10 and full-depth nDCG too."""
    qrels, runs = read_qrels(dl19 / "qrels.txt"), read_runs([dl19 / "runs"])
    official = json.loads((dl19 / "official-nist.json").read_text())
    measures = ["nDCG@10", "nDCG", "P(rel=2)@10", "nDCG(gains={0:0,1:1,2:3,3:7})@10"]
    evaluation = evaluate_runs(qrels, runs, measures)
    reference = {m: evaluation.matrix(m) for m in measures}
    no_priors = nrg(qrels, runs, {})
    assert np.array_equal(no_priors.nrg, no_priors.base)
    for i, run in enumerate(no_priors.runs):
        assert no_priors.base[i].mean() == pytest.approx(official[run]["ndcg_cut_10"], abs=6e-5), run
    np.testing.assert_allclose(no_priors.base, reference["nDCG@10"], atol=1e-12)
    cases = [
        ("nDCG", dict(depth="full")),
        ("P(rel=2)@10", dict(model="precision", gain="binary:2")),
        ("nDCG(gains={0:0,1:1,2:3,3:7})@10", dict(gain="exp")),
    ]
    for measure, options in cases:
        np.testing.assert_allclose(base_metric(qrels, runs, **options).values, reference[measure], atol=1e-12)


def test_rr_model_is_reciprocal_rank_when_each_query_has_one_relevant_item(dl19):
    qrels, runs = read_qrels(dl19 / "qrels.txt"), read_runs([dl19 / "runs"])[:10]
    one_relevant = {
        q: {d: (1 if d == min(d for d, g in docs.items() if g == 3) else 0) for d in docs}
        for q, docs in qrels.grades.items()
        if 3 in docs.values()
    }
    rr = evaluate_runs(one_relevant, runs, ["RR"]).matrix("RR")
    np.testing.assert_allclose(base_metric(one_relevant, runs, model="rr", depth="full", gain="binary:1").values, rr, atol=1e-12)


def test_rbp_without_priors_is_rank_biased_precision():
    run = make_run("r", {"q": ["a", "x", "b", "y"]})
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "x": 0}}
    value = base_metric(qrels, [run], model="rbp:0.5", depth="full", gain="binary:1").values[0, 0]
    assert value == pytest.approx(0.5 * (1 + 0.5**2))  # (1 − p) Σ rel_i p^(i−1); c unretrieved


def test_item_seen_at_rank_one_by_a_prior_has_no_residual_gain():
    qrels = {"q": {"a": 1, "b": 1}}
    runs = [make_run("prior", {"q": ["a"]}), make_run("new", {"q": ["a", "b"]})]
    means = nrg(qrels, runs, {"new": ["prior"]}).means()["new"]
    # a is fully seen (seen(1) = 1); b keeps its gain and is the ideal's only item -> (1/log2 3) / 1
    assert means["nrg"] == pytest.approx(1 / math.log2(3))


def _reference_discount(rank: int) -> float:
    return 0.0 if rank == 0 else 1 / math.log2(rank + 1)


def _reference_value(doc: str, judged: dict[str, int], positions: list[dict[str, int]]) -> float:
    gain = judged.get(doc, 0)
    if gain == 0:
        return 0.0
    exposure = 1.0
    for pos in positions:
        exposure *= 1 - _reference_discount(pos.get(doc, 0))
    return gain * exposure


def reference_code_nrg(qrels_file: Path, run_files: list[Path]) -> dict[str, float]:
    """What aminbigdeli/Normalized-Residual-Gain code/calculate_nrg.py computes (doc_gain_version 1),
    re-implemented from reading it: each run's docs in file order, full depth; gain = the grade
    (0 unjudged); prior set = every other run file; discount 1/log2(rank+1), 0 when absent; ideal =
    all judged docs of the query sorted by residual gain; 0 when the ideal is 0; mean over the
    qrels' queries that the runs have. Grade-0 docs are skipped: their value is 0 either way."""
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_file.read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    lists = {f.stem: {} for f in run_files}
    for f in run_files:
        for line in f.read_text().splitlines():
            qid, _, doc = line.split()[:3]
            if qid in qrels:
                lists[f.stem].setdefault(qid, []).append(doc)
    queries = sorted({q for per_query in lists.values() for q in per_query})
    discount = _reference_discount
    means = {}
    for target in lists:
        total = 0.0
        for qid in queries:
            positions = [{d: i + 1 for i, d in enumerate(lists[r][qid])} for r in lists if r != target]
            judged = qrels[qid]
            score = sum(_reference_value(d, judged, positions) * discount(i + 1) for i, d in enumerate(lists[target][qid]))
            ideal_values = sorted((_reference_value(d, judged, positions) for d in judged), reverse=True)
            ideal = sum(v * discount(i + 1) for i, v in enumerate(ideal_values))
            total += score / ideal if ideal != 0 else 0.0
        means[target] = total / len(queries)
    return means


def test_full_depth_linear_all_others_equals_the_reference_code_on_dl19(dl19):
    run_files = sorted((dl19 / "runs").iterdir())
    expected = reference_code_nrg(dl19 / "qrels.txt", run_files)
    result = nrg(read_qrels(dl19 / "qrels.txt"), read_runs(run_files), depth="full", gain="linear", order="file")
    got = {run: v["nrg"] for run, v in result.means().items()}
    assert len(got) == 37
    for run in expected:
        assert got[run] == pytest.approx(expected[run], rel=1e-12, abs=1e-15), run


def test_best_per_group_prior_sets_on_dl19(dl19):
    qrels, runs = read_qrels(dl19 / "qrels.txt"), read_runs([dl19 / "runs"])
    outcome = qrelkit.nrg(qrels, runs, prior=f"best-per-group:{dl19 / 'groups.tsv'}")
    result, groups = outcome.result, outcome.groups
    assert groups is not None and len(set(groups.values())) == 12
    for run, prior in result.priors.items():
        assert len(prior) == 11 and groups[run] not in {groups[p] for p in prior}
    # seed 004: the best BASELINE run by nDCG@10 is bm25tuned_prf_p; the best run overall is idst_bert_p1
    assert "bm25tuned_prf_p" in result.priors["idst_bert_p1"]
    assert "idst_bert_p1" in result.priors["bm25tuned_prf_p"]


def test_best_per_group_leaves_out_the_runs_own_group():
    groups = {"a1": "A", "a2": "A", "b1": "B", "c1": "C", "c2": "C"}
    scores = {"a1": 0.3, "a2": 0.5, "b1": 0.1, "c1": 0.4, "c2": 0.4}  # c1/c2 tie: c1 by name
    assert best_per_group(groups, scores) == {
        "a1": ["b1", "c1"],
        "a2": ["b1", "c1"],
        "b1": ["a2", "c1"],
        "c1": ["a2", "b1"],
        "c2": ["a2", "b1"],
    }


def test_unique_contributions_count_relevant_items_no_prior_has_in_its_top_k(dl19):
    qrels, runs = read_qrels(dl19 / "qrels.txt"), read_runs([dl19 / "runs"])
    priors = all_others([r.name for r in runs])
    got = unique_contributions(qrels, runs, priors, depth=10, rel_level=2)
    tops = {r.name: {q: set(docs[:10]) for q, docs in r.ranking().items()} for r in runs}
    for i, run in enumerate(got.runs):
        for j, q in enumerate(got.queries):
            relevant = {d for d, g in qrels.grades[q].items() if g >= 2}
            others = set().union(*(tops[p].get(q, set()) for p in priors[run]))
            assert got.values[i, j] == len((tops[run].get(q, set()) & relevant) - others)


def test_rareness_precision_and_tasc_by_their_definitions():
    qrels = {"q": {"a": 1, "b": 2, "c": 0, "d": 1}}
    runs = [make_run("r1", {"q": ["a", "b", "c"]}), make_run("r2", {"q": ["b", "c", "d"]})]
    rare = rareness_precision(qrels, runs, depth=2, alpha=1.0).means()
    # r1 top 2 {a, b}: a in 1 of 2 runs' top 2 (rarity 1/2), b in both (rarity 0) -> (1.5 + 1) / 2;
    # r2 top 2 {b, c}: c is not relevant -> (1 + 0) / 2
    assert rare == {"r1": pytest.approx(1.25), "r2": pytest.approx(0.5)}
    ndcg = base_metric(qrels, runs, depth=2).values[:, 0]
    values = tasc(qrels, runs, {"r2": ["r1"]}, depth=2).values[:, 0]
    assert values.tolist() == pytest.approx([ndcg[0], (1 - ndcg[0]) * ndcg[1]])


def test_order_file_errors_name_the_file_and_line(tmp_path):
    order = tmp_path / "order.txt"
    order.write_text("# oldest first\nR1\nR9\nR1\n")
    with pytest.raises(InputFormatError) as raised:
        read_run_order(order, ["R1", "R2"])
    message = str(raised.value)
    assert f"{order}:3: unknown run 'R9'" in message and f"{order}:4: run 'R1' already listed on line 2" in message
    order.write_text("R1\n")
    with pytest.raises(InputFormatError, match="missing: R2"):
        read_run_order(order, ["R1", "R2"])


def test_groups_file_errors(tmp_path):
    groups = tmp_path / "groups.tsv"
    groups.write_text("run\tteam\nR1\tX\n")
    with pytest.raises(InputFormatError, match="no column 'group'"):
        run_groups(groups, ["R1"], "group")
    assert run_groups(groups, ["R1"], "team") == {"R1": "X"}
    with pytest.raises(InputFormatError, match="no line for run"):
        run_groups(groups, ["R1", "R2"], "team")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": "dcg"}, "unknown model"),
        ({"model": "rbp:1.5"}, "persistence"),
        ({"gain": "binary:x"}, "unknown gain"),
        ({"depth": "0"}, "positive integer"),
        ({"model": "precision", "depth": "full"}, "needs a depth"),
    ],
)
def test_bad_options_are_clear_errors(options, message):
    with pytest.raises(QrelkitError, match=message):
        nrg(TABLE1_QRELS, TABLE1_RUNS, **options)


def test_a_run_cannot_be_its_own_prior_and_unknown_priors_are_named():
    with pytest.raises(QrelkitError, match="own prior set"):
        nrg(TABLE1_QRELS, TABLE1_RUNS, {"R1": ["R1"]})
    with pytest.raises(QrelkitError, match=r"unknown run\(s\) \['R7'\]"):
        nrg(TABLE1_QRELS, TABLE1_RUNS, {"R1": ["R7"]})


def write_table1(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "qrels.txt").write_text("".join(f"q 0 {d} {g}\n" for d, g in TABLE1_QRELS["q"].items()))
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, docs in TABLE1.items():
        (runs / f"{name}.run").write_text("".join(f"q Q0 {d} {i} {10 - i} {name}\n" for i, d in enumerate(docs, 1)))
    return tmp_path / "qrels.txt", runs


def test_cli_json_with_explicit_and_ordered_priors(tmp_path):
    qrels, runs = write_table1(tmp_path)
    (tmp_path / "order.txt").write_text("R1\nR2\nR3\n")

    def means(*extra: str, run_args: tuple[str, ...] = ("--runs", str(runs))) -> dict:
        result = runner.invoke(app, ["nrg", "--qrels", str(qrels), *run_args, "--json", *extra], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return {run: round(v["nrg"], 4) for run, v in json.loads(result.stdout)["runs"].items()}

    assert means("--prior", "runs:R1") == {"R1": 0.7933, "R2": 0.7361, "R3": 0.8277}
    assert means("--prior", "runs:R1,R2,R3") == {"R1": 0.8417, "R2": 0.8316, "R3": 0.8681}
    assert means("--prior", f"order:{tmp_path / 'order.txt'}") == {"R1": 0.7933, "R2": 0.7361, "R3": 0.8681}
    files = [str(runs / f"{name}.run") for name in TABLE1]
    assert means(run_args=("--runs", *files)) == {"R1": 0.8417, "R2": 0.8316, "R3": 0.8681}


def test_cli_unknown_prior_run_is_an_error(tmp_path):
    qrels, runs = write_table1(tmp_path)
    result = runner.invoke(app, ["nrg", "--qrels", str(qrels), "--runs", str(runs), "--prior", "runs:R1,R8"])
    assert result.exit_code != 0 and isinstance(result.exception, QrelkitError) and "R8" in str(result.exception)


def test_plot_marks_groups(tmp_path):
    result = nrg(TABLE1_QRELS, TABLE1_RUNS)
    path = plot_nrg(result, tmp_path / "fig" / "nrg.png", {"R1": "A", "R2": "A", "R3": "B"})
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

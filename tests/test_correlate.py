"""`qrelkit correlate` (seed 000, Table 3: τ between measures over the same runs; seed 001, Table 2:
τ between nDCG@10 under full and sparsified qrels) and `qrelkit evaluate --max-rel`, which cuts
the qrels with the same sparsification as `qrelkit fd --max-rel`."""

from __future__ import annotations

import json

import pytest
from scipy import stats
from typer.testing import CliRunner

import qrelkit
from qrelkit.cli import app
from qrelkit.evaluate.agreement import tau_ap
from qrelkit.evaluate.sparsify import relevant_items
from qrelkit.io import read_qrels, write_qrels

runner = CliRunner()


def invoke(*args: object) -> str:
    result = runner.invoke(app, list(map(str, args)), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_correlate_between_measures_is_kendall_tau_of_the_evaluated_means(dl19):
    common = ["--qrels", dl19 / "qrels.txt", "--runs", dl19 / "runs"]
    measures = ["--measure", "nDCG@10", "--measure", "AP(rel=2)", "--measure", "RR(rel=2)"]
    payload = json.loads(invoke("correlate", *common, *measures, "--json"))
    means = json.loads(invoke("evaluate", *common, *measures, "--json"))["runs"]
    runs = sorted(means)
    assert payload["orderings"] == ["nDCG@10", "AP(rel=2)", "RR(rel=2)"] and payload["runs"] == 37 and payload["queries"] == 43
    column = {m: [means[run][m] for run in runs] for m in payload["orderings"]}
    tau = payload["correlations"]["kendall_tau"]
    assert tau["nDCG@10"]["AP(rel=2)"] == pytest.approx(stats.kendalltau(column["nDCG@10"], column["AP(rel=2)"]).statistic, abs=1e-12)
    assert tau["AP(rel=2)"]["nDCG@10"] == tau["nDCG@10"]["AP(rel=2)"] and tau["RR(rel=2)"]["RR(rel=2)"] == 1.0
    rho = payload["correlations"]["spearman_rho"]["nDCG@10"]["RR(rel=2)"]
    assert rho == pytest.approx(stats.spearmanr(column["nDCG@10"], column["RR(rel=2)"]).statistic, abs=1e-12)
    # τ_AP takes the row as the truth: not symmetric
    ap = payload["correlations"]["tau_ap"]
    assert ap["nDCG@10"]["RR(rel=2)"] == pytest.approx(tau_ap(column["nDCG@10"], column["RR(rel=2)"]), abs=1e-12)
    assert ap["nDCG@10"]["RR(rel=2)"] != ap["RR(rel=2)"]["nDCG@10"]
    table = " ".join(invoke("correlate", *common, *measures).split())
    assert "Kendall τ-b between the orderings of 37 runs" in table and "means over the 43 queries of qrels" in table


def test_correlate_with_max_rel_reproduces_seed_001_table_2_on_dl19(dl19):
    """Seed 001, Table 2: τ between nDCG@10 under the full qrels and under at most 10 / 5 / 1 random
    relevant judgments per query, on DL19: 0.796 / 0.784 / 0.594 (one random draw in the paper)."""
    args = ["correlate", "--qrels", dl19 / "qrels.txt", "--runs", dl19 / "runs", "--keep", "random", "--json"]
    payload = json.loads(invoke(*args, "--max-rel", "10", "--max-rel", "5", "--max-rel", "1"))
    tau = payload["correlations"]["kendall_tau"]["qrels"]
    ours = [tau[f"qrels (max-rel {m}, random, seed 0)"] for m in (10, 5, 1)]
    assert ours == pytest.approx([0.796, 0.784, 0.594], abs=0.05)
    assert ours == pytest.approx([0.7988, 0.7447, 0.5714], abs=5e-4)
    assert any("kept at random whatever their grade (--keep random, seed 0)" in note for note in payload["notes"])


def test_evaluate_max_rel_scores_the_same_cut_fd_uses(dl19, tmp_path):
    qrels = read_qrels(dl19 / "qrels.txt")
    run = dl19 / "runs" / "bm25base_p.run"
    payload = json.loads(invoke("evaluate", "--qrels", dl19 / "qrels.txt", "--runs", run, "--max-rel", "1", "--seed", "3", "--json"))
    assert payload["qrels_cut"].startswith("at most 1 relevant (grade >= 2) per query, kept highest grade first")
    # the cut by hand: FD's relevant items (same options), written as a qrels file with their grades
    kept = relevant_items(qrels, max_rel=1, seed=3)
    cut = qrelkit.Qrels("cut", [qrelkit.io.Qrel(q, d, qrels.grades[q][d]) for q, docs in kept.items() for d in docs])
    write_qrels(cut, tmp_path / "cut.qrels")
    by_hand = json.loads(invoke("evaluate", "--qrels", tmp_path / "cut.qrels", "--runs", run, "--json"))
    assert payload["runs"] == by_hand["runs"] and payload["runs"]["bm25base_p"]["nDCG@10"] != pytest.approx(0.5058, abs=1e-3)
    table = " ".join(invoke("evaluate", "--qrels", dl19 / "qrels.txt", "--runs", run, "--max-rel", "1", "--keep", "random").split())
    assert "qrels cut to at most 1 relevant (grade >= 2) per query, kept at random whatever their grade (--keep random, seed 0)" in table


def test_keep_random_and_top_grade_differ_and_are_seeded():
    from qrelkit.evaluate.sparsify import sparsify_qrels

    rows = [("1", f"p{i}", 3) for i in range(3)] + [("1", f"h{i}", 2) for i in range(10)] + [("1", "n", 1), ("2", "x", 2)]
    qrels = qrelkit.Qrels("q", [qrelkit.io.Qrel(q, d, g) for q, d, g in rows])
    top, how = sparsify_qrels(qrels, 3, seed=0)
    assert {d for d in top.grades["1"]} == {"p0", "p1", "p2"} and top.grades["2"] == {"x": 2} and "highest grade first" in how
    picks = {frozenset(sparsify_qrels(qrels, 3, seed=s, keep="random")[0].grades["1"]) for s in range(10)}
    assert len(picks) > 1 and any(any(d.startswith("h") for d in p) for p in picks)  # any grade can be drawn
    assert sparsify_qrels(qrels, 3, seed=4, keep="random")[0].grades == sparsify_qrels(qrels, 3, seed=4, keep="random")[0].grades
    assert "n" not in top.grades["1"]  # only relevant items are kept


def test_correlate_and_evaluate_refuse_what_they_cannot_answer(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 a 2\nq2 0 b 1\n")
    (tmp_path / "runs").mkdir()
    for name in ("r1", "r2", "r3"):
        (tmp_path / "runs" / f"{name}.run").write_text(f"q1 Q0 a 1 1 {name}\nq2 Q0 b 1 1 {name}\n")
    one = runner.invoke(app, ["correlate", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "runs")])
    assert one.exit_code != 0 and "nothing to correlate" in str(one.exception)
    keep = runner.invoke(app, ["evaluate", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "runs"), "--keep", "random"])
    assert keep.exit_code != 0 and "give --max-rel M too" in str(keep.exception)


def test_python_api_has_the_same_answers(dl19):
    result = qrelkit.correlate(qrels=[str(dl19 / "qrels.txt")], runs=[str(dl19 / "runs")], measures=["nDCG@10", "AP(rel=2)"])
    assert result.orderings == ["nDCG@10", "AP(rel=2)"] and len(result.runs) == 37
    frame = result.to_pandas()
    assert set(frame["statistic"]) == {"kendall_tau", "spearman_rho", "tau_ap"} and len(frame) == 3 * 4
    evaluation = qrelkit.evaluate(str(dl19 / "qrels.txt"), [str(dl19 / "runs" / "bm25base_p.run")], max_rel=1, seed=3)
    assert evaluation.qrels_cut and evaluation.to_dict()["qrels_cut"] == evaluation.qrels_cut

"""A judge run that covers a sample of its pool is audited on the pairs it judged (issue 44): the
reference cut to those pairs ranks the systems, the output says so, and the full-pool comparison is
given only when asked for, labelled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import kendalltau

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.audit import audit
from qrelkit.evaluate.coverage import cut_to_judged
from qrelkit.io.frames import qrels_from_dict, run_from_dict

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *args], capture_output=True, text=True, env=os.environ.copy())


# -- the numerics, on a track small enough to check by hand ------------------------------------------


def _track():
    """Four queries; the model judged two pairs of each query the reference judged three of."""
    reference = {q: {"a": 2, "b": 1, "c": 0} for q in "1234"}
    model = {q: {"a": 2, "c": 1} for q in "1234"}
    runs = [
        run_from_dict({q: dict(zip(order, (3.0, 2.0, 1.0))) for q in "1234"}, name)
        for name, order in {"abc": "abc", "bac": "bac", "cab": "cab", "acb": "acb", "bca": "bca", "cba": "cba"}.items()
    ]
    return qrels_from_dict(model, "model"), qrels_from_dict(reference, "reference"), runs


def test_the_reference_cut_to_the_judged_pairs_keeps_exactly_the_pairs_the_model_judged():
    model, reference, _ = _track()
    cut = cut_to_judged(reference, model)
    assert cut.grades == {q: {"a": 2, "c": 0} for q in "1234"} and cut.name == "reference"


def test_an_audit_on_the_judged_pairs_is_the_audit_against_the_reference_cut_by_hand():
    model, reference, runs = _track()
    by_hand = qrels_from_dict({q: {"a": 2, "c": 0} for q in "1234"}, "reference")
    judged = audit(model, reference, runs, reference_pairs="judged", resamples=0)
    expected = audit(model, by_hand, runs, resamples=0)
    assert judged.systems["nDCG@10"].kendall_tau == pytest.approx(expected.systems["nDCG@10"].kendall_tau)
    whole = audit(model, reference, runs, resamples=0)
    assert whole.systems["nDCG@10"].kendall_tau != pytest.approx(judged.systems["nDCG@10"].kendall_tau)  # the cut matters here
    assert judged.labels.cohen_kappa == pytest.approx(whole.labels.cohen_kappa)  # κ reads the shared pairs either way
    coverage = judged.to_dict()["coverage"]
    assert coverage["reference_pairs"] == "judged" and coverage["reference"] == {
        "pairs": 8,
        "given": 12,
        "cut_to": "the pairs the model judged",
    }
    assert whole.to_dict()["coverage"]["sentence"] is None  # qrels as given, nothing to say


def test_an_unknown_choice_of_reference_pairs_is_refused():
    model, reference, runs = _track()
    with pytest.raises(QrelkitError, match="--reference-pairs 'some'"):
        audit(model, reference, runs, reference_pairs="some")
    result = cli("agree", "--model-qrels", "x", "--reference-qrels", "y", "--reference-pairs", "some")
    assert result.returncode == 2 and "--reference-pairs 'some'" in result.stderr and "Traceback" not in result.stderr


# -- DL19, MiniLM, --sample 600: the case ---------------------------------------------------------


@pytest.fixture(scope="module")
def sample_db(dl19, tmp_path_factory) -> Path:
    """The README's MiniLM job on a sample of 600 pairs (seed 0), judged and graded by the real ONNX judge."""
    pytest.importorskip("onnxruntime", reason="the ONNX backend is not installed (pip install 'qrelkit[onnx]')")
    import qrelkit

    db = tmp_path_factory.mktemp("sample") / "dl19.duckdb"
    judged = qrelkit.judge(str(ROOT / "configs" / "dl19-minilm.yaml"), sets=[f"database={db}"], sample=600)
    assert judged.report.statuses == {"ok": 600}
    (db.parent / "judge-run").write_text(judged.judge_run_id)
    return db


def _tau_by_hand(db: Path, dl19: Path, reference_pairs: str) -> float:
    """Kendall τ-b (scipy) between the runs' nDCG@10 under the judge's qrels and under NIST's, cut by
    hand to the judged pairs or not at all."""
    from qrelkit.evaluate import evaluate_runs
    from qrelkit.io import read_qrels, read_runs
    from qrelkit.storage import Store

    with Store(db, read_only=True) as store:
        model = store.qrels("minilm-dl19").grades
    nist = read_qrels(dl19 / "qrels.txt").grades
    if reference_pairs == "judged":
        nist = {q: {d: g for d, g in docs.items() if d in model.get(q, {})} for q, docs in nist.items()}
    runs = read_runs([dl19 / "runs"])
    ours, theirs = (evaluate_runs(grades, runs, ["nDCG@10"]).means() for grades in (model, nist))
    names = sorted(ours)
    return kendalltau([ours[n]["nDCG@10"] for n in names], [theirs[n]["nDCG@10"] for n in names]).statistic


def _agree(db: Path, dl19: Path, *extra: str) -> subprocess.CompletedProcess:
    judge_run = (db.parent / "judge-run").read_text()
    found = cli(
        "agree",
        "--judge-run",
        judge_run,
        "--db",
        str(db),
        "--reference-qrels",
        str(dl19 / "qrels.txt"),
        "--runs",
        str(dl19 / "runs"),
        *extra,
    )
    assert found.returncode == 0, found.stderr
    return found


def test_agree_on_a_sampled_judge_run_ranks_systems_on_the_judged_pairs_and_says_so(sample_db, dl19):
    found = json.loads(_agree(sample_db, dl19, "--json").stdout)
    tau = found["systems"]["nDCG@10"]["kendall_tau"]
    assert tau == pytest.approx(0.73, abs=0.005)  # the hand measurement: 0.728
    assert tau == pytest.approx(_tau_by_hand(sample_db, dl19, "judged"), abs=0.002)  # (a tie split by rounding: 0.0006)
    coverage = found["coverage"]
    assert coverage["reference_pairs"] == "judged" and coverage["model"] == {"pairs": 600, "covers": "sample"}
    assert coverage["reference"] == {"pairs": 600, "given": 9260, "cut_to": "the pairs the model judged"}
    assert "sample of 600 of its pool's 9,260 pairs (seed 0)" in coverage["why"]
    assert found["pairs"] == {"model": 600, "reference": 9260, "shared": 600}
    text = _agree(sample_db, dl19).stdout.splitlines()
    assert text[0].startswith(f"minilm-dl19 ranks 37 runs as trec-dl-2019/qrels.txt does with Kendall τ-b {tau:.3f}")
    assert text[1].startswith("Systems ranked on the judged pairs only: the reference cut to the 600 of its 9,260 pairs the model judged")


def test_the_full_pool_comparison_is_given_only_when_asked_and_labelled(sample_db, dl19):
    found = json.loads(_agree(sample_db, dl19, "--json", "--reference-pairs", "all").stdout)
    tau = found["systems"]["nDCG@10"]["kendall_tau"]
    assert tau == pytest.approx(0.568, abs=0.005)  # the number for the full pool
    assert tau == pytest.approx(_tau_by_hand(sample_db, dl19, "all"), abs=0.002)
    assert found["coverage"]["reference_pairs"] == "all" and found["coverage"]["reference"]["pairs"] == 9260
    assert "full pool" in found["coverage"]["sentence"] and "as asked (--reference-pairs all)" in found["coverage"]["sentence"]


def test_compare_and_correlate_follow_the_same_rule(sample_db, dl19):
    compared = cli(
        "compare",
        "--db",
        str(sample_db),
        "--judge",
        "minilm-dl19",
        "--judge",
        str(dl19 / "umbrela-gpt4o.qrels"),
        "--reference-qrels",
        str(dl19 / "qrels.txt"),
        "--runs",
        str(dl19 / "runs"),
        "--permutations",
        "0",
        "--json",
    )
    assert compared.returncode == 0, compared.stderr
    found = json.loads(compared.stdout)
    rows = {judge["name"]: judge["audit"] for judge in found["judges"]}
    minilm = rows["minilm-dl19"]
    assert minilm["coverage"]["reference_pairs"] == "judged"
    assert minilm["systems"]["nDCG@10"]["kendall_tau"] == pytest.approx(_tau_by_hand(sample_db, dl19, "judged"), abs=0.002)
    assert rows["umbrela-gpt4o"]["coverage"]["reference_pairs"] == "all"  # a whole set: the reference as given
    differences = {(d["statistic"], d["measure"]) for d in found["differences"]}
    assert ("cohen_kappa", None) in differences and not any(s == "kendall_tau" for s, _ in differences)
    assert any("no Δτ or Δτ_AP" in note for note in found["notes"])

    correlated = cli(
        "correlate",
        "--db",
        str(sample_db),
        "--qrels",
        str(dl19 / "qrels.txt"),
        "--qrels",
        "minilm-dl19",
        "--runs",
        str(dl19 / "runs"),
        "--json",
    )
    assert correlated.returncode == 0, correlated.stderr
    result = json.loads(correlated.stdout)
    assert any("graded from a sample of 600" in note for note in result["notes"])
    tau = result["correlations"]["kendall_tau"]["qrels"]["minilm-dl19"]
    assert tau == pytest.approx(_tau_by_hand(sample_db, dl19, "judged"), abs=0.002)


def test_the_report_of_a_sampled_judge_run_says_its_systems_are_ranked_on_the_judged_pairs(sample_db, dl19, tmp_path):
    judge_run = (sample_db.parent / "judge-run").read_text()
    page = tmp_path / "report.html"
    reference, runs = str(dl19 / "qrels.txt"), str(dl19 / "runs")
    found = cli(
        "report", "--judge-run", judge_run, "--db", str(sample_db), "--reference-qrels", reference, "--runs", runs, "--out", str(page)
    )
    assert found.returncode == 0, found.stderr
    assert 'data-summary="ranked-on">Systems ranked on the judged pairs only: the reference cut to the 600 of its 9,260' in page.read_text()

"""Comparing judges (issue 27), the pure part: each judge audited as `agree` audits it, paired
differences on the very resamples behind each judge's own interval, the randomisation test's
p-value, the κ between judges, and a note where two judges cannot be told apart."""

from __future__ import annotations

import numpy as np
import pytest

from qrelkit.evaluate.agreement import kendall_tau_b
from qrelkit.evaluate.audit import audit
from qrelkit.evaluate.bootstrap import bootstrap_interval, jackknife_weights, resample_weights
from qrelkit.evaluate.compare import TEST_NAME, compare_judges, randomisation_p_values
from qrelkit.evaluate.labels import cohen_kappa
from qrelkit.io import Qrel, Qrels, Run, RunEntry

QUERIES = [f"q{i:02d}" for i in range(14)]
DOCS = [f"d{j}" for j in range(12)]


def toy_track(seed: int = 1) -> tuple[Qrels, list[Run], dict[str, dict[str, int]]]:
    rng = np.random.default_rng(seed)
    truth = {q: {d: int(rng.integers(0, 4)) for d in DOCS} for q in QUERIES}
    runs = []
    for r in range(8):  # runs of graded quality: run r sees the grades through noise r
        entries = []
        for q in QUERIES:
            scores = {d: truth[q][d] + rng.normal(0, 0.4 + 0.5 * r) for d in DOCS}
            ranked = sorted(DOCS, key=lambda d: -scores[d])
            entries += [RunEntry(q, d, i + 1, float(len(DOCS) - i)) for i, d in enumerate(ranked)]
        runs.append(Run(f"run{r}", tuple(entries)))
    human = Qrels("human", tuple(Qrel(q, d, g) for q, docs in truth.items() for d, g in docs.items()))
    return human, runs, truth


def noisy(name: str, truth: dict[str, dict[str, int]], flip: float, seed: int, queries=QUERIES) -> Qrels:
    """A judge that gives a random grade instead of the true one with probability ``flip``."""
    rng = np.random.default_rng(seed)
    entries = []
    for q in queries:
        for d, g in truth[q].items():
            entries.append(Qrel(q, d, int(rng.integers(0, 4)) if rng.random() < flip else g))
    return Qrels(name, tuple(entries))


@pytest.fixture(scope="module")
def track():
    return toy_track()


def test_each_judge_is_audited_as_agree_audits_it(track):
    human, runs, truth = track
    judges = [noisy("good", truth, 0.3, 2), noisy("poor", truth, 0.8, 3)]
    found = compare_judges(judges, human, runs, measures=["nDCG@10"], resamples=200, permutations=100, seed=4)
    for judge in judges:
        alone = audit(judge, human, runs, measures=["nDCG@10"], resamples=200, seed=4)
        mine = found.audits[judge.name]
        assert mine.labels.cohen_kappa == alone.labels.cohen_kappa
        assert mine.labels.intervals == alone.labels.intervals
        assert mine.systems["nDCG@10"].kendall_tau == alone.systems["nDCG@10"].kendall_tau
        assert mine.systems["nDCG@10"].intervals == alone.systems["nDCG@10"].intervals


def _tau_by_hand(judge: Qrels, human: Qrels, runs: list[Run], weights: np.ndarray) -> np.ndarray:
    """τ of the judge's system means against the reference's under each row of query weights."""
    from qrelkit.evaluate.metrics import evaluate_runs

    model = evaluate_runs(judge.grades, runs, ["nDCG@10"]).matrix("nDCG@10")
    reference = evaluate_runs(human.grades, runs, ["nDCG@10"]).matrix("nDCG@10")
    return np.array([kendall_tau_b(reference @ w, model @ w) for w in weights])


def test_the_paired_interval_of_delta_tau_comes_from_the_resamples_of_each_judges_own_interval(track):
    human, runs, truth = track
    good, poor = noisy("good", truth, 0.3, 2), noisy("poor", truth, 0.8, 3)
    found = compare_judges([good, poor], human, runs, measures=["nDCG@10"], resamples=300, permutations=200, seed=9, interval="bca")
    weights = resample_weights(len(QUERIES), 300, seed=9)  # the draws `agree --seed 9 --interval bca` makes
    tau_good, tau_poor = _tau_by_hand(good, human, runs, weights), _tau_by_hand(poor, human, runs, weights)
    jack = jackknife_weights(len(QUERIES))
    for judge, resampled in ((good, tau_good), (poor, tau_poor)):  # each judge's own interval rests on these draws
        estimate = found.audits[judge.name].systems["nDCG@10"].kendall_tau
        own = bootstrap_interval(estimate, resampled, _tau_by_hand(judge, human, runs, jack))
        assert found.audits[judge.name].systems["nDCG@10"].intervals["kendall_tau"] == own
    (delta,) = [d for d in found.differences if d.statistic == "kendall_tau"]
    assert (delta.first, delta.second, delta.measure) == ("good", "poor", "nDCG@10")
    tau = {j: found.audits[j].systems["nDCG@10"].kendall_tau for j in ("good", "poor")}
    assert delta.estimate == pytest.approx(tau["good"] - tau["poor"], abs=1e-12)
    paired = bootstrap_interval(
        delta.estimate, tau_good - tau_poor, _tau_by_hand(good, human, runs, jack) - _tau_by_hand(poor, human, runs, jack)
    )
    assert delta.interval == paired
    assert delta.interval.method == "BCa" and delta.interval.resamples == 300


def test_the_default_jackknife_interval_of_delta_tau_pairs_both_judges_on_each_query_left_out(track):
    """The default since issue 37: each judge's τ interval and the Δτ interval are the jackknife's,
    estimate ± 1.96 · SE over the same queries left out, τ by scipy's kendalltau here."""
    from scipy import stats

    from qrelkit.evaluate.metrics import evaluate_runs

    human, runs, truth = track
    good, poor = noisy("good", truth, 0.3, 2), noisy("poor", truth, 0.8, 3)
    found = compare_judges([good, poor], human, runs, measures=["nDCG@10"], resamples=50, permutations=50, seed=9)

    def jackknife(judge) -> np.ndarray:
        model, reference = evaluate_runs(judge, runs, ["nDCG@10"]), evaluate_runs(human, runs, ["nDCG@10"])
        m, r = model.matrix("nDCG@10"), reference.matrix("nDCG@10")
        keep = [np.arange(len(QUERIES)) != i for i in range(len(QUERIES))]
        return np.array([stats.kendalltau(r[:, k].mean(axis=1), m[:, k].mean(axis=1)).statistic for k in keep])

    def by_hand(estimate: float, values: np.ndarray) -> tuple[float, float]:
        error = np.sqrt((len(values) - 1) / len(values) * np.sum((values - values.mean()) ** 2))
        return max(estimate - stats.norm.ppf(0.975) * error, -2.0), min(estimate + stats.norm.ppf(0.975) * error, 2.0)

    for judge in (good, poor):
        corr = found.audits[judge.name].systems["nDCG@10"]
        low, high = by_hand(corr.kendall_tau, jackknife(judge))
        assert corr.intervals["kendall_tau"].method == "jackknife"
        assert (corr.intervals["kendall_tau"].low, corr.intervals["kendall_tau"].high) == pytest.approx((low, min(high, 1.0)), abs=1e-12)
    (delta,) = [d for d in found.differences if d.statistic == "kendall_tau"]
    assert (delta.interval.low, delta.interval.high) == pytest.approx(by_hand(delta.estimate, jackknife(good) - jackknife(poor)), abs=1e-12)
    assert delta.interval.method == "jackknife" and delta.interval.resamples == len(QUERIES)


def test_delta_kappa_is_the_difference_of_the_two_kappas_on_the_same_resamples(track):
    human, runs, truth = track
    good, poor = noisy("good", truth, 0.3, 2), noisy("poor", truth, 0.8, 3)
    found = compare_judges([good, poor], human, runs, measures=["nDCG@10"], resamples=100, permutations=100, seed=1)
    (delta,) = [d for d in found.differences if d.statistic == "cohen_kappa"]
    assert delta.estimate == pytest.approx(found.audits["good"].labels.cohen_kappa - found.audits["poor"].labels.cohen_kappa, abs=1e-12)
    assert delta.estimate > 0.3 and delta.interval.low > 0  # a judge that flips 30% of grades against one that flips 80%


def test_the_randomisation_test_tells_a_good_judge_from_a_poor_one_and_not_a_judge_from_itself(track):
    human, runs, truth = track
    good, poor = noisy("good", truth, 0.2, 2), noisy("poor", truth, 0.9, 3)
    found = compare_judges([good, poor], human, runs, measures=["nDCG@10"], resamples=100, permutations=400, seed=2)
    by_name = {d.statistic: d for d in found.differences}
    assert by_name["cohen_kappa"].p_value == pytest.approx(1 / 401)  # no swap pattern reaches the observed Δκ
    assert by_name["kendall_tau"].p_value < 0.05
    assert found.test == TEST_NAME and "randomisation" in TEST_NAME
    twin = Qrels("twin", good.entries)
    same = compare_judges([good, twin], human, runs, measures=["nDCG@10"], resamples=100, permutations=100, seed=2)
    for d in same.differences:
        assert d.estimate == 0.0 and d.p_value == 1.0 and d.indistinguishable(0.05)
    assert any("good and twin are indistinguishable on Δτ nDCG@10" in note for note in same.notes)


def test_p_value_counts_ties_with_the_observed_value_and_is_never_zero():
    null = {"a": np.array([0.1, -0.3, 0.3, 0.0, np.nan]), "b": np.array([0.0, 0.0])}
    p = randomisation_p_values({"a": 0.3, "b": 0.5}, null)
    assert p["a"] == pytest.approx((1 + 2) / (1 + 4))  # |−0.3| and 0.3 are as extreme; the NaN swap is left out
    assert p["b"] == pytest.approx(1 / 3)


def test_judges_covering_different_queries_are_differenced_on_the_shared_ones_with_a_note(track):
    human, runs, truth = track
    full = noisy("full", truth, 0.3, 2)
    part = noisy("part", truth, 0.3, 5, queries=QUERIES[:10])
    found = compare_judges([full, part], human, runs, measures=["nDCG@10"], resamples=50, permutations=50, seed=0)
    assert all(d.queries == 10 for d in found.differences)
    assert any("the 10 queries both judges cover" in note for note in found.notes)


def test_kappa_matrix_between_judges_and_a_baseline(track):
    human, runs, truth = track
    judges = [noisy("a", truth, 0.3, 2), noisy("b", truth, 0.6, 3), noisy("c", truth, 0.9, 4)]
    found = compare_judges(judges, human, runs, measures=["nDCG@10"], resamples=0, permutations=0, baseline="a")
    assert {(d.first, d.second) for d in found.differences} == {("b", "a"), ("c", "a")}
    a, b = (np.array([q.grade for q in sorted(j.entries, key=lambda e: (e.qid, e.docid))]) for j in judges[:2])
    assert found.kappa_matrix["a"]["b"] == pytest.approx(cohen_kappa(a, b)) and found.kappa_matrix["b"]["b"] == 1.0
    assert all(d.interval is None and d.p_value is None for d in found.differences)  # --resamples 0, no permutations
    assert not any("indistinguishable" in note for note in found.notes)  # nothing was tested, so nothing is claimed


def test_the_python_api_compares_qrels_files_and_gives_pandas_tables(track, tmp_path):
    import qrelkit
    from qrelkit.io import write_qrels

    human, runs, truth = track
    folder = tmp_path / "runs"
    folder.mkdir()
    for run in runs:
        (folder / f"{run.name}.txt").write_text("".join(f"{e.qid} Q0 {e.docid} {e.rank} {e.score} {run.name}\n" for e in run.entries))
    files = {}
    for name, judge in (("human", human), ("good", noisy("good", truth, 0.3, 2)), ("poor", noisy("poor", truth, 0.8, 3))):
        files[name] = tmp_path / f"{name}.qrels"
        write_qrels(judge, files[name])
    result = qrelkit.compare(
        judges=[str(files["good"]), str(files["poor"])], reference=str(files["human"]), runs=[str(folder)], resamples=100, permutations=100
    )
    table = result.to_pandas()
    assert list(table["judge"]) == ["good", "poor"] and list(table["status"]) == ["compared", "compared"]
    alone = audit(noisy("good", truth, 0.3, 2), human, runs, resamples=100)
    assert table.loc[0, "kappa"] == pytest.approx(alone.labels.cohen_kappa) and table.loc[0, "kendall_tau nDCG@10"] == pytest.approx(
        alone.systems["nDCG@10"].kendall_tau
    )
    differences = result.differences_to_pandas()
    assert set(differences["statistic"]) == {"kendall_tau", "tau_ap", "cohen_kappa"} and (differences["difference"] == "good − poor").all()
    assert result.to_dict()["test"]["name"] == TEST_NAME
    grouped = qrelkit.compare(
        judges=[str(files["good"])], reference=str(files["human"]), runs=[str(folder)], group_patterns=["top=run[0-2]"], resamples=50
    )
    from qrelkit.commands.documents.compare import judges_table
    from qrelkit.commands.requests import CompareRequest
    from qrelkit.report.render import markdown

    grid = judges_table(grouped)
    column = list(grid.header).index("Rel. Δ top nDCG@10, judge − ref %")
    bias = grouped.comparison.audits["good"].bias["top"]["nDCG@10"]
    assert grid.text_rows()[0][column].startswith(f"{bias.difference:.1f} [")  # Relative Δ, judge − reference, with its interval
    document = CompareRequest.describe(grouped) if hasattr(CompareRequest, "describe") else None
    from qrelkit.commands.documents.compare import comparison as compare_document

    document = compare_document(grouped, None)
    assert "Rel. Δ top nDCG@10" in markdown(document)

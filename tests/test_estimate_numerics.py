"""The numerics of estimates from a human sample: measures as functions of label features equal
`evaluate`'s, the difference estimators are unbiased over every possible sample of small cases,
designs have the inclusion probabilities they claim, and samples are reproducible and nested."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import DL19

from qrelkit.evaluate.estimate import designs, pairs
from qrelkit.evaluate.estimate.estimators import Setting, pair_estimates
from qrelkit.evaluate.estimate.measures import Kernel, features, parse, query_totals
from qrelkit.evaluate.estimate.pool import Pool, ranked_lists
from qrelkit.evaluate.metrics import evaluate_runs
from qrelkit.io import Qrels, Run, read_qrels, read_runs
from qrelkit.io.trec import Qrel, RunEntry

MEASURES = ["nDCG@10", "nDCG@3", "nDCG", "P@5", "P(rel=2)@5", "AP", "AP(rel=2)", "RR", "RR(rel=2)"]


def small_track(seed: int = 0, n_queries: int = 4, n_docs: int = 12, n_runs: int = 3) -> tuple[Qrels, list[Run]]:
    """Graded qrels 0-3 on most documents, runs with tied scores and unjudged documents."""
    rng = np.random.default_rng(seed)
    entries = []
    for q in range(n_queries):
        for d in range(n_docs):
            if rng.random() < 0.8:
                entries.append(Qrel(f"q{q}", f"d{q}-{d}", int(rng.choice(4, p=[0.45, 0.27, 0.17, 0.11]))))
    runs = []
    for r in range(n_runs):
        rows = []
        for q in range(n_queries):
            scores = np.round(rng.normal(size=n_docs + 3), 1)  # ties at one decimal; 3 documents nobody judged
            for d, score in enumerate(scores):
                rows.append(RunEntry(f"q{q}", f"d{q}-{d}", d + 1, float(score)))
        runs.append(Run(f"run{r}", rows))
    return Qrels("small", entries), runs


def _pool(qrels: Qrels, judge: dict | None = None) -> tuple[Pool, np.ndarray]:
    grades = {(q, d): float(g) for q, docs in qrels.grades.items() for d, g in docs.items()}
    pool = Pool.of(grades, judge or {})
    return pool, pool.labels_of(grades)


def _values(pool: Pool, runs: list[Run], name: str, labels: np.ndarray, top: int = 3) -> np.ndarray:
    measure = parse(name, top)
    kernel = Kernel(measure, ranked_lists(pool, runs, measure.cutoff), top)
    x = features(labels, top)[None]
    return kernel.values(kernel.gather(x), query_totals(x, pool))[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_measures_of_label_features_equal_evaluate_per_query(seed):
    qrels, runs = small_track(seed)
    pool, labels = _pool(qrels)
    reference = evaluate_runs(qrels, runs, MEASURES)
    for name in MEASURES:
        assert np.allclose(_values(pool, runs, name, labels), reference.matrix(name), atol=1e-12), name


@pytest.mark.skipif(not (DL19 / "qrels.txt").exists(), reason="the shared DL19 data is absent (../shared/data/trec-dl-2019)")
def test_measures_equal_evaluate_on_full_nist_qrels_of_dl19():
    qrels, runs = read_qrels(DL19 / "qrels.txt"), read_runs([DL19 / "runs"])
    pool, labels = _pool(qrels)
    names = ["nDCG@10", "P@10", "AP", "RR", "AP(rel=2)", "RR(rel=2)"]
    reference = evaluate_runs(qrels, runs, names)
    for name in names:
        assert np.allclose(_values(pool, runs, name, labels), reference.matrix(name), atol=1e-12), name


@pytest.mark.parametrize("name", ["nDCG@10", "AP", "RR", "P@5"])
def test_gradients_equal_finite_differences(name):
    qrels, runs = small_track(2)
    pool, labels = _pool(qrels)
    measure = parse(name, 3)
    lists = ranked_lists(pool, runs, measure.cutoff)
    kernel = Kernel(measure, lists, 3)
    rng = np.random.default_rng(0)
    x = features(labels, 3) + rng.normal(0, 0.2, (len(pool), 4))  # an estimate: fractional features
    _, gradient = kernel.gradient(kernel.gather(x[None]), query_totals(x[None], pool))
    place = lists.place(len(pool))
    flat = gradient.listed[0].reshape(len(runs), -1, 4)
    base = kernel.values(kernel.gather(x[None]), query_totals(x[None], pool))[0]
    for i in range(0, len(pool), 5):
        for f in range(4):
            moved = x.copy()
            moved[i, f] += 1e-6
            numeric = (kernel.values(kernel.gather(moved[None]), query_totals(moved[None], pool))[0] - base)[:, pool.query[i]] / 1e-6
            analytic = gradient.query[0][:, pool.query[i], f] + np.where(
                place[:, i] >= 0, flat[np.arange(len(runs)), np.maximum(place[:, i], 0), f], 0.0
            )
            assert np.allclose(numeric, analytic, atol=1e-4), (name, i, f)


@pytest.mark.parametrize("cutoff", [10, None])
def test_the_expected_slope_of_the_ideal_dcg_is_the_smoothed_curves_derivative(cutoff):
    """With a spread s, `ideal_curve`'s slope is E[Phi'(C + sZ)]; by Stein's lemma that is
    E[Phi(C + sZ) Z] / s, computed here from the curve's values alone (a fine grid over Z), and
    with a spread near 0 it is the slope at C itself."""
    from qrelkit.evaluate.estimate.measures import ideal_curve

    counts = np.array([[-3.0, 0.5, 4.2, 9.7, 10.0, 14.0, 40.0]])
    z = np.linspace(-12.0, 12.0, 240_001)
    density = np.exp(-z * z / 2.0) / np.sqrt(2.0 * np.pi)
    places = cutoff or int(np.ceil(counts.max())) + 2  # without a cut-off, the places the curve has for these counts
    for spread in (0.5, 3.0, 12.0):
        _, slope = ideal_curve(counts, cutoff, np.full(counts.shape, spread))
        for c, found in zip(counts[0], slope[0]):
            values, _ = ideal_curve(c + spread * z, places)
            stein = np.trapezoid(values * z * density, z) / spread
            assert found == pytest.approx(stein, abs=2e-6), (cutoff, spread, c)
    _, narrow = ideal_curve(counts[:, 1:] + 0.25, cutoff, np.full(counts[:, 1:].shape, 1e-6))
    _, at = ideal_curve(counts[:, 1:] + 0.25, cutoff)
    assert np.allclose(narrow, at)


@pytest.mark.parametrize("cutoff", [10, None])
def test_the_spread_slope_of_the_ideal_dcg_carries_the_curves_own_spread(cutoff):
    """``slope="spread"``: slope * s is the standard deviation of Phi(C + sZ) (a fine grid over Z);
    it never exceeds half the curve's range (a count's wide spread cannot give the ideal DCG more
    variance than its values allow), and with a spread near 0 it is the slope at C itself."""
    from qrelkit.evaluate.estimate.measures import ideal_curve

    counts = np.array([[-3.0, 0.5, 4.2, 9.7, 10.0, 14.0, 40.0]])
    z = np.linspace(-12.0, 12.0, 240_001)
    density = np.exp(-z * z / 2.0) / np.sqrt(2.0 * np.pi)
    for spread in (0.5, 3.0, 12.0):
        _, slope = ideal_curve(counts, cutoff, np.full(counts.shape, spread), slope="spread")
        for c, found in zip(counts[0], slope[0]):
            places = cutoff or int(np.ceil(c + 13.0 * spread)) + 2  # without a cut-off, room for the whole grid
            values, _ = ideal_curve(c + spread * z, places)
            mean = np.trapezoid(values * density, z)
            sd = np.sqrt(np.trapezoid((values - mean) ** 2 * density, z))
            assert found * spread == pytest.approx(sd, abs=2e-5), (cutoff, spread, c)
            if cutoff is not None:
                assert found * spread <= values.max() / 2.0 + 1e-9
    _, narrow = ideal_curve(counts[:, 1:] + 0.25, cutoff, np.full(counts[:, 1:].shape, 1e-6), slope="spread")
    _, at = ideal_curve(counts[:, 1:] + 0.25, cutoff)
    assert np.allclose(narrow, at)


def test_a_level_the_labels_prove_past_the_cutoff_is_exact_and_a_query_proven_whole_is_not_capped():
    """nDCG@10 with grades 0-3: a level whose labelled pairs of grade >= L number 10 or more has its
    count kept at least that and held (no variance); a query whose three levels are proven is not
    capped at 1 (its ideal DCG is known exactly); the counts' spreads are their design variances."""
    query = np.array([0, 0, 1, 1])
    pool = Pool(["a", "b"], ["a", "a", "b", "b"], ["1", "2", "1", "2"], query, np.zeros(4))
    kernel = Kernel(parse("nDCG@10", 3), ranked_lists(pool, [], 10), 3)
    kept = np.array([[[30.0, 11.0, 6.0, 2.0], [40.0, 20.0, 12.0, 9.0]]])  # (D, Q, F)
    seen = np.array([[[20.0, 12.0, 5.0, 1.0], [35.0, 15.0, 11.0, 10.0]]])
    residual = np.array([[[0.0, 1.0, 0.5, 0.0], [0.0, -2.0, 0.0, 1.0], [0.0, 0.5, 0.5, 0.5]]])  # (D, n, F)
    sample = pairs.PairSample(np.array([[0, 1, 2]]), np.full((1, 3), 2.0), np.array([[2.0, 2.0, 4.0]]), np.full((1, 3), -1))
    counts, held, high, spread = pairs.ideal_parts(kernel, pool, kept, np.zeros(kept.shape, bool), seen, residual, sample)
    assert counts[0, 0].tolist() == [30.0, 12.0, 6.0, 2.0] and counts[0, 1].tolist() == [40.0, 20.0, 12.0, 10.0]
    assert held[0, 0].tolist() == [False, True, False, False] and held[0, 1].tolist() == [False, True, True, True]
    assert high[0, 0].tolist() == [1.0, np.inf]
    assert np.allclose(spread[0, 0, 1:], np.sqrt([2 * 1.0 + 2 * 4.0, 2 * 0.25, 2 * 1.0]))
    assert np.allclose(spread[0, 1, 1:], np.sqrt(4 * 0.25))


def test_the_ratio_bias_is_the_second_order_term_of_dcg_over_idcg():
    """The correction nDCG's estimate takes, from a Poisson sample's linear terms, equals
    (nDCG Var(IDCG) - Cov(DCG, IDCG)) / IDCG^2 per run and query, with the variance and covariance
    written out pair by pair: each sampled pair's move of the DCG (its gain residual at its place in
    the run's list) and of the ideal DCG (its level residuals times the ideal DCG's slopes)."""
    from qrelkit.evaluate.estimate.measures import Gradient, cutoff_of, ideal_curve

    qrels, runs = small_track(8, n_queries=3, n_docs=14)
    pool, human = _pool(qrels)
    rng = np.random.default_rng(8)
    judge = np.clip(human + rng.integers(-1, 2, len(pool)), 0, 3).astype(float)
    measure = parse("nDCG@5", 3)
    kernel = Kernel(measure, ranked_lists(pool, runs, measure.cutoff), 3)
    y = features(human, 3)
    pi = rng.uniform(0.3, 0.9, len(pool))
    sample = pairs.sample_of(designs.Plan("weighted", 20, (rng.random(len(pool)) < pi)[None], pi, np.full(len(pool), -1)))
    estimated, residual = pairs.corrected(features(judge, 3), y, sample)
    totals = query_totals(estimated, pool)
    bounds = pairs.known_bounds(y, sample, pool)
    kept = pairs.constrained(totals, *bounds)
    kept, held, _, spread = pairs.ideal_parts(kernel, pool, kept, kept != totals, bounds[0], residual, sample)
    values, gradient = kernel.gradient(kernel.gather(estimated), kept, spread, slope="spread")
    on_query = np.where(~held[..., None, :, :], gradient.query, 0.0)
    place = kernel.lists.place(len(pool))
    on_list, on_ideal = pairs.linear_parts(kernel, Gradient(gradient.listed, on_query), pool, residual, sample, place)
    found = pairs.ratio_bias(values, on_list + on_ideal, on_ideal, sample, pool)[0]

    ideal = ideal_curve(kept[0, :, 1:], cutoff_of(measure))[0].sum(axis=-1)
    slopes = np.where(held[0, :, 1:], 0.0, ideal_curve(kept[0, :, 1:], cutoff_of(measure), spread[0, :, 1:], slope="spread")[1])
    discount = 1.0 / np.log2(kernel.lists.rank + 1.0)  # (R, Q, depth): unjudged documents take ranks too
    expected = np.zeros(found.shape)
    for n in np.flatnonzero(sample.present[0]):
        i, coef, r = sample.index[0, n], sample.coef[0, n], residual[0, n]
        q = pool.query[i]
        d_ideal = float(slopes[q] @ r[1:])
        for run in range(len(runs)):
            spot = place[run, i]
            d_dcg = r[0] * discount[run].ravel()[spot] if spot >= 0 else 0.0  # 1 / log2(the run's rank + 1)
            v = values[0, run, q]
            expected[run, q] += coef * (v * d_ideal * d_ideal - d_dcg * d_ideal) / ideal[q] ** 2
    assert np.abs(expected).max() > 1e-4  # the case has a bias to correct
    assert np.allclose(found, expected, atol=1e-12)


def test_the_weighted_design_weighs_a_query_whose_count_the_judge_puts_just_past_the_cutoff():
    """A judge that says a query has 11 pairs of grade >= 1 (nDCG@10's ideal DCG has its slope 0
    there) still gives those pairs a part in the ideal DCG: the size of an unlisted pair of that query
    is not 0 (the slope expected over the judge's count's uncertainty), and it is larger than for a
    query the judge puts far past the cut-off."""
    from qrelkit.evaluate.estimate.sizes import SPREAD, measure_sizes, pair_gradients

    entries = [Qrel("near", f"n{i:02d}", int(i < 11)) for i in range(30)] + [Qrel("far", f"f{i:02d}", int(i < 25)) for i in range(30)]
    qrels = Qrels("judge", entries)
    rows = [RunEntry(q, f"{q[0]}{i:02d}", rank, float(-rank)) for q in ("near", "far") for rank, i in enumerate((0, 29), start=1)]
    runs = [Run("r", rows)]
    pool, labels = _pool(qrels)
    kernel = Kernel(parse("nDCG@10", 1), ranked_lists(pool, runs, 10), 1)
    judged = features(labels, 1)
    sizes = measure_sizes(pair_gradients(kernel, pool, judged, kernel.lists.place(len(pool))), labels, 1)
    index = pool.index()
    near, far = sizes[index[("near", "n05")]], sizes[index[("far", "f05")]]
    assert SPREAD * np.sqrt(30) > 1.0 and near > 0 and near > 2 * far


def _tiny_case() -> tuple[Pool, list[Run], np.ndarray]:
    """Two queries of four pairs, a judge that is off on some of them, two runs."""
    human = {("a", "1"): 3, ("a", "2"): 0, ("a", "3"): 1, ("a", "4"): 2, ("b", "1"): 0, ("b", "2"): 2, ("b", "3"): 0, ("b", "4"): 1}
    judge = {
        ("a", "1"): 2.0,
        ("a", "2"): 1.0,
        ("a", "3"): 1.0,
        ("a", "4"): 3.0,
        ("b", "1"): 0.0,
        ("b", "2"): 1.0,
        ("b", "3"): 1.0,
    }  # (b, 4) unjudged
    runs = [
        Run("x", [RunEntry(q, d, i, 10.0 - i) for q in "ab" for i, d in enumerate("1234", start=1)]),
        Run("y", [RunEntry(q, d, i, 10.0 - i) for q in "ab" for i, d in enumerate("4321", start=1)]),
    ]
    pool = Pool.of(human, judge)
    return pool, runs, pool.labels_of({k: float(v) for k, v in human.items()})


def _linear_setting(pool: Pool, runs: list[Run]) -> Setting:
    measure = parse("P(rel=2)@2", 3)
    kernel = Kernel(measure, ranked_lists(pool, runs, measure.cutoff), 3)
    return Setting.of(pool, kernel, features(pool.judge, 3))


def _every_poisson_sample(pi: np.ndarray):
    for bits in itertools.product([False, True], repeat=len(pi)):
        chosen = np.array(bits)
        yield chosen, float(np.prod(np.where(chosen, pi, 1.0 - pi)))


def test_the_difference_estimator_is_unbiased_over_every_poisson_sample():
    """A linear measure (P(rel=2)@2): over all 2^8 samples, the estimate averages to the truth and
    the variance estimate to the true variance; each label feature's estimate averages to its truth."""
    pool, runs, human = _tiny_case()
    setting = _linear_setting(pool, runs)
    y = features(human, 3)
    truth = setting.per_query(y).mean(axis=-1)
    pi = np.array([0.9, 0.3, 0.5, 0.7, 0.2, 0.6, 0.4, 0.8])
    mean = np.zeros(len(runs))
    second = np.zeros(len(runs))
    variance_estimate = np.zeros(len(runs))
    feature_mean = np.zeros_like(y)
    for chosen, probability in _every_poisson_sample(pi):
        plan = designs.Plan("weighted", 4, chosen[None], pi, np.full(len(pool), -1))
        sample = pairs.sample_of(plan)
        found = pair_estimates(setting, y, sample, "ppi")
        estimated, _ = pairs.corrected(features(pool.judge, 3), y, sample)
        mean += probability * found.values[0]
        second += probability * found.values[0] ** 2
        variance_estimate += probability * np.diagonal(found.covariance[0])
        feature_mean += probability * estimated[0]
    assert np.allclose(feature_mean, y, atol=1e-12)
    assert np.allclose(mean, truth, atol=1e-12)
    assert np.allclose(variance_estimate, second - mean**2, atol=1e-12)


def test_the_stratified_estimator_is_unbiased_over_every_sample_of_two_per_query():
    pool, runs, human = _tiny_case()
    setting = _linear_setting(pool, runs)
    y = features(human, 3)
    truth = setting.per_query(y).mean(axis=-1)
    counts = np.array([2, 2])
    mean = np.zeros(len(runs))
    second = np.zeros(len(runs))
    variance_estimate = np.zeros(len(runs))
    samples = list(itertools.product(itertools.combinations(range(4), 2), itertools.combinations(range(4, 8), 2)))
    for first, other in samples:
        chosen = np.zeros(8, bool)
        chosen[list(first) + list(other)] = True
        plan = designs.Plan("stratified", 4, chosen[None], np.full(8, 0.5), pool.query.copy(), counts)
        found = pair_estimates(setting, y, pairs.sample_of(plan), "ppi")
        mean += found.values[0] / len(samples)
        second += found.values[0] ** 2 / len(samples)
        variance_estimate += np.diagonal(found.covariance[0]) / len(samples)
    assert np.allclose(mean, truth, atol=1e-12)
    assert np.allclose(variance_estimate, second - mean**2, atol=1e-12)


def test_phases_chosen_from_what_the_first_found_keep_the_estimate_unbiased():
    """A second Poisson phase whose probabilities depend on the first phase's labels, combined with
    fixed shares: unbiased over every pair of samples."""
    pool, runs, human = _tiny_case()
    setting = _linear_setting(pool, runs)
    y = features(human, 3)
    truth = setting.per_query(y).mean(axis=-1)
    first_pi = np.full(8, 0.4)
    shares = pairs.phase_shares([3, 2])
    mean = np.zeros(len(runs))
    for first, p1 in _every_poisson_sample(first_pi):
        # what the first phase found decides the second: pairs of the query with more relevant labels seen
        seen = np.bincount(pool.query[first], weights=human[first] >= 2, minlength=2)
        second_pi = np.where(first, 0.0, np.where(pool.query == np.argmax(seen), 0.7, 0.3))
        for second, p2 in _every_poisson_sample(second_pi):
            if (second & first).any():
                continue
            one = pairs.sample_of(designs.Plan("weighted", 3, first[None], first_pi, np.full(8, -1)), *shares[0])
            parts = [one]
            if second.any():
                parts.append(
                    pairs.sample_of(
                        designs.Plan("weighted", 2, second[None], np.where(second_pi > 0, second_pi, 1.0), np.full(8, -1)), *shares[1]
                    )
                )
            found = pair_estimates(setting, y, pairs.combine(parts, [3, 2]), "ppi")
            mean += p1 * p2 * found.values[0]
    assert np.allclose(mean, truth, atol=1e-12)


def test_a_census_gives_the_exact_values_of_every_measure():
    """Every pair labelled (pi = 1): the estimates are the measures under the human labels, ratios included."""
    qrels, runs = small_track(3)
    rng = np.random.default_rng(1)
    pool, human = _pool(qrels, judge=None)
    judge = np.clip(human + rng.integers(-1, 2, len(pool)), 0, 3)
    pool = Pool(pool.queries, pool.qids, pool.docids, pool.query, judge)
    for name in ("nDCG@10", "AP", "RR"):
        measure = parse(name, 3)
        setting = Setting.of(pool, Kernel(measure, ranked_lists(pool, runs, measure.cutoff), 3), features(judge, 3))
        plan = designs.plan("weighted", pool.query, len(pool), np.zeros((1, len(pool))), size=np.ones(len(pool)))
        for estimator in ("ppi", "ppi++", "calibrated", "human"):
            found = pair_estimates(setting, features(human, 3), pairs.sample_of(plan), estimator)
            assert np.allclose(found.values[0], setting.per_query(features(human, 3)).mean(axis=-1), atol=1e-9), (name, estimator)
            assert np.allclose(found.covariance, 0.0, atol=1e-18)


def _reference_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, query: np.ndarray, own: set[int]) -> tuple[float, dict[int, float], float]:
    """Weighted least squares of y on [x, a column per query in ``own``, one shared column for the
    rest] by numpy's lstsq: (slope, intercept per own query, shared intercept)."""
    own_list = sorted(own)
    columns = [x] + [(query == q).astype(float) for q in own_list] + [(~np.isin(query, own_list)).astype(float)]
    design = np.stack(columns, axis=-1)
    root = np.sqrt(w)[:, None]
    beta = np.linalg.lstsq(design * root, y * root[:, 0], rcond=None)[0]
    return float(beta[0]), dict(zip(own_list, beta[1:-1])), float(beta[-1])


def test_ppi_plus_plus_fits_an_intercept_per_query_as_weighted_least_squares_does():
    """PPI++'s predictions on a Poisson sample equal numpy's weighted least squares of each human
    feature on the judge's with a column per query of two or more sampled pairs and one column
    shared by the pairs of the others (a query with one sampled pair, and a query with none, take it)."""
    qrels, _ = small_track(6, n_queries=5, n_docs=14)
    pool, human = _pool(qrels)
    rng = np.random.default_rng(6)
    judge = np.clip(human + rng.integers(-1, 2, len(pool)), 0, 3).astype(float)
    judge_features, y = features(judge, 3), features(human, 3)
    pi = rng.uniform(0.3, 0.9, len(pool))
    chosen = rng.random(len(pool)) < pi
    first = np.flatnonzero(pool.query == 3)
    chosen[pool.query == 3] = False
    chosen[first[0]] = True  # query 3: one sampled pair
    chosen[pool.query == 4] = False  # query 4: none
    sample = pairs.sample_of(designs.Plan("weighted", 20, chosen[None], pi, np.full(len(pool), -1)))
    predicted = pairs.predictions("ppi++", judge_features, pairs.level_matrix(judge), y, sample, pool.query)[0]
    index = sample.index[0][sample.present[0]]
    weight = sample.weight[0][sample.present[0]]
    own = {q for q in range(pool.n_queries) if (pool.query[index] == q).sum() >= 2}
    assert own == {0, 1, 2}
    for f in range(y.shape[-1]):
        slope, intercepts, shared = _reference_fit(judge_features[index, f], y[index, f], weight, pool.query[index], own)
        expected = slope * judge_features[:, f] + np.array([intercepts.get(q, shared) for q in pool.query])
        assert np.allclose(predicted[:, f], expected, atol=1e-9), f


def test_ppi_plus_plus_keeps_one_intercept_for_a_stratified_sample():
    """Strata are the queries: a stratified sample's PPI++ is the one-intercept GREG fit."""
    qrels, _ = small_track(7, n_queries=4, n_docs=16)
    pool, human = _pool(qrels)
    rng = np.random.default_rng(7)
    judge = np.clip(human + rng.integers(-1, 2, len(pool)), 0, 3).astype(float)
    judge_features, y = features(judge, 3), features(human, 3)
    plan = designs.plan("stratified", pool.query, 24, designs.uniforms(1, pool.qids, pool.docids))
    sample = pairs.sample_of(plan)
    predicted = pairs.predictions("ppi++", judge_features, pairs.level_matrix(judge), y, sample, pool.query)[0]
    index = sample.index[0][sample.present[0]]
    for f in range(y.shape[-1]):
        slope, _, shared = _reference_fit(
            judge_features[index, f], y[index, f], sample.weight[0][sample.present[0]], pool.query[index], set()
        )
        assert np.allclose(predicted[:, f], slope * judge_features[:, f] + shared, atol=1e-9), f
    assert np.array_equal(pairs.variance_sample("ppi++", sample, pool.query).coef, sample.coef)


def test_a_query_with_its_own_intercept_has_its_variance_terms_scaled_by_n_over_n_minus_1():
    """Residuals about a fitted mean understate the spread by (n_q - 1) / n_q: a Poisson pair's
    variance coefficient is scaled back by n_q / (n_q - 1) in a query with n_q >= 2 sampled pairs."""
    query = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    chosen = np.array([True, True, True, True, False, True, True, False, True])
    pi = np.full(len(query), 0.5)
    sample = pairs.sample_of(designs.Plan("weighted", 5, chosen[None], pi, np.full(len(query), -1)))
    scaled = pairs.variance_sample("ppi++", sample, query)
    ratio = scaled.coef[0][sample.present[0]] / sample.coef[0][sample.present[0]]
    expected = {0: 3 / 2, 1: 1.0, 2: 3 / 2}
    assert np.allclose(ratio, [expected[q] for q in query[sample.index[0][sample.present[0]]]])


@pytest.mark.parametrize("kind", ["weighted", "stratified", "queries"])
@pytest.mark.parametrize("budget", [7, 40, 150])
def test_inclusion_probabilities_sum_to_the_budget(kind, budget):
    qrels, _ = small_track(4, n_queries=5, n_docs=40)
    pool, _ = _pool(qrels)
    keys = designs.uniforms(0, pool.qids, pool.docids)
    size = np.random.default_rng(0).uniform(0.1, 5.0, len(pool))
    plan = designs.plan(kind, pool.query, budget, keys, size=size, query_keys=designs.uniforms(0, pool.queries))
    if kind == "queries":
        assert plan.inclusion.sum() == pytest.approx(plan.counts[0] / pool.n_queries * len(pool))
        assert plan.chosen.sum() == pool.sizes()[np.unique(pool.query[plan.chosen])].sum()
    else:
        assert plan.inclusion.sum() == pytest.approx(budget)
    if kind == "stratified":
        assert plan.chosen.sum() == budget  # a fixed size in each stratum


@pytest.mark.parametrize("kind", ["weighted", "stratified", "queries"])
def test_the_same_seed_draws_the_same_sample_and_a_larger_budget_keeps_a_smaller_ones_pairs(kind):
    qrels, _ = small_track(5, n_queries=6, n_docs=40)
    pool, _ = _pool(qrels)
    size = np.random.default_rng(0).uniform(0.1, 5.0, len(pool))

    def drawn(seed: int, budget: int) -> np.ndarray:
        keys = designs.uniforms(seed, pool.qids, pool.docids)
        return designs.plan(kind, pool.query, budget, keys, size=size, query_keys=designs.uniforms(seed, pool.queries)).chosen

    assert np.array_equal(drawn(3, 60), drawn(3, 60))
    assert not np.array_equal(drawn(3, 60), drawn(4, 60))
    for smaller, larger in [(20, 60), (60, 61), (61, 150)]:
        assert not (drawn(3, smaller) & ~drawn(3, larger)).any(), (smaller, larger)


def test_stratum_shares_never_shrink_as_the_budget_grows():
    sizes = np.array([3, 50, 7, 120, 1, 33])
    previous = np.zeros(len(sizes), np.int64)
    for budget in range(0, sizes.sum() + 1):
        found = designs.allocation(sizes, budget)
        assert found.sum() == budget and (found <= sizes).all()
        assert (found >= previous).all()
        previous = found


def test_uniforms_are_fixed_by_seed_query_and_document():
    first = designs.uniforms(7, ["q1", "q2"], ["d1", "d2"])
    assert np.array_equal(first, designs.uniforms(7, ["q1", "q2"], ["d1", "d2"]))
    assert ((first >= 0) & (first < 1)).all()
    assert not np.array_equal(first, designs.uniforms(8, ["q1", "q2"], ["d1", "d2"]))
    assert not np.array_equal(first, designs.uniforms(7, ["q1", "q2"], ["d1", "d2"], phase=2))


def test_the_coverage_qrelkit_quotes_is_the_simulations():
    """`choices.MEASURED_COVERAGE` (what `estimate` says of its intervals) is what the committed run of
    benchmarks/bench_human_budget.py measured: each DL19 judge's mean coverage, averaged, and the worst."""
    import json

    from conftest import ROOT

    from qrelkit.evaluate.choices import MEASURED_COVERAGE

    saved = json.loads((ROOT / "benchmarks" / "human_budget_results.json").read_text())
    found: dict = {}
    for row in saved["rows"]:
        if row["collection"].startswith("DL19") and "coverage" in row and ("t, finite" in row["estimator"] or row["design"] != "queries"):
            key = (row["design"], row["estimator"].split(" (")[0])
            found.setdefault(key, {}).setdefault(row["budget"], []).append(row["coverage"])
    assert set(found) == set(MEASURED_COVERAGE)
    for key, by_budget in found.items():
        for budget, coverage in by_budget.items():
            assert MEASURED_COVERAGE[key][budget] == pytest.approx((np.mean(coverage), min(coverage)), abs=6e-4), (key, budget)


def test_auto_plans_what_the_committed_simulation_picks_budget_by_budget():
    """`--design auto` plans the weighted design from `choices.WEIGHTED_FROM` labels: at every budget
    of the committed run from there on, the rule (mean coverage over the DL19 judges within 94-96%,
    then the smallest mean RMSE) picks the weighted design's PPI++; below, it picks nothing of it."""
    import json

    from conftest import ROOT

    from qrelkit.evaluate.choices import DEFAULT_ESTIMATOR, WEIGHTED_FROM

    saved = json.loads((ROOT / "benchmarks" / "human_budget_results.json").read_text())
    cells: dict = {}
    for row in saved["rows"]:
        if row["collection"].startswith("DL19") and "coverage" in row:
            cells.setdefault(row["budget"], {}).setdefault((row["design"], row["estimator"]), []).append(row)
    for budget, by_key in sorted(cells.items()):
        means = {key: (np.mean([r["coverage"] for r in rows]), np.mean([r["rmse"] for r in rows])) for key, rows in by_key.items()}
        inside = {key: value for key, value in means.items() if 0.94 <= value[0] <= 0.96}
        picked = min(inside, key=lambda key: inside[key][1]) if inside else None
        assert (picked == ("weighted", DEFAULT_ESTIMATOR["weighted"])) == (budget >= WEIGHTED_FROM), (budget, picked)

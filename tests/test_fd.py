"""Fréchet distance: the formula against the sqrtm reference, the rank-deficient case, the
small-space identity, item selection (sparsification, URR) and the query bootstrap."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from process_helpers import no_children_left

from qrelkit.errors import FatalJobError, QrelkitError
from qrelkit.evaluate.bootstrap import resample_counts, summarize
from qrelkit.evaluate.fd import (
    ItemSample,
    default_relevance_level,
    factor_from_samples,
    frechet_distance,
    frechet_distance_from_stats,
    item_sample,
    judged_items,
    relevant_items,
    retrieved_items,
    trace_sqrt_product,
)
from qrelkit.evaluate.fd import bootstrap as fd_bootstrap
from qrelkit.evaluate.fd.bootstrap import bootstrap_fd
from qrelkit.io import Qrel, Qrels, Run, RunEntry


def sqrtm_fd(x: np.ndarray, y: np.ndarray) -> float:
    """The reference formula of pytorch-fid / clean-fid: sqrtm of the non-symmetric Σ₁Σ₂."""
    mu1, mu2 = x.mean(axis=0), y.mean(axis=0)
    sigma1, sigma2 = np.atleast_2d(np.cov(x, rowvar=False)), np.atleast_2d(np.cov(y, rowvar=False))
    covmean = scipy.linalg.sqrtm(sigma1 @ sigma2)
    if np.iscomplexobj(covmean):
        covmean = covmean.real
    diff = mu1 - mu2
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean))


def nuclear_norm_fd(x: np.ndarray, y: np.ndarray) -> float:
    """An independent route: ‖Δμ‖² + ‖A₁‖²_F + ‖A₂‖²_F − 2‖A₁A₂ᵀ‖_* via SVD of the centred data."""
    a1 = (x - x.mean(axis=0)) / np.sqrt(len(x) - 1)
    a2 = (y - y.mean(axis=0)) / np.sqrt(len(y) - 1)
    diff = x.mean(axis=0) - y.mean(axis=0)
    nuclear = np.linalg.svd(a1 @ a2.T, compute_uv=False).sum()
    return float(diff @ diff + np.sum(a1**2) + np.sum(a2**2) - 2 * nuclear)


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(1, 24),
    extra1=st.integers(0, 60),
    extra2=st.integers(0, 60),
    shift=st.floats(0.0, 2.0),
    scale=st.floats(0.5, 2.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_agrees_with_the_sqrtm_formula_on_well_conditioned_samples(d, extra1, extra2, shift, scale, seed):
    rng = np.random.default_rng(seed)
    n1, n2 = 3 * d + 10 + extra1, 3 * d + 10 + extra2  # n well above d: covariances well conditioned
    mixing = np.eye(d) + 0.3 * rng.normal(size=(d, d)) / np.sqrt(d)
    x = rng.normal(size=(n1, d)) @ mixing
    y = scale * rng.normal(size=(n2, d)) + shift * rng.normal(size=d)
    ours = frechet_distance(x, y)
    assert ours.value == pytest.approx(sqrtm_fd(x, y), rel=1e-8, abs=1e-12)
    assert (ours.n1, ours.n2, ours.d, ours.rank1, ours.rank2) == (n1, n2, d, d, d) and not ours.rank_deficient
    from_stats = frechet_distance_from_stats(
        x.mean(0), np.cov(x, rowvar=False).reshape(d, d), y.mean(0), np.cov(y, rowvar=False).reshape(d, d)
    )
    assert from_stats.value == pytest.approx(ours.value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n1,n2,d", [(43, 43, 384), (43, 430, 384), (2, 3, 50), (10, 10, 10), (5, 200, 20)])
def test_rank_deficient_samples_give_finite_nonnegative_values(n1, n2, d):
    # FD@1 over the 43 DL19 queries in 384 dimensions: Σ has rank 42, sqrtm(Σ₁Σ₂) is ill-posed
    rng = np.random.default_rng(n1 * 1000 + n2)
    x, y = rng.normal(size=(n1, d)), rng.normal(0.1, 1.0, size=(n2, d))
    result = frechet_distance(x, y)
    assert np.isfinite(result.value) and result.value >= 0
    assert result.rank1 == min(n1 - 1, d) and result.rank2 == min(n2 - 1, d)
    assert result.rank_deficient == (min(n1, n2) - 1 < d)
    assert result.value == pytest.approx(nuclear_norm_fd(x, y), rel=1e-10)
    assert "n1=" in result.describe()


def test_is_zero_for_identical_samples_and_small_ones():
    rng = np.random.default_rng(0)
    for n, d in [(100, 10), (20, 384), (2, 5)]:
        x = rng.normal(size=(n, d))
        assert frechet_distance(x, x).value == pytest.approx(0.0, abs=1e-10 * d)
        assert frechet_distance(x, x.copy()).value >= 0


def test_equal_covariances_leave_the_squared_mean_difference():
    rng = np.random.default_rng(1)
    for n, d in [(200, 8), (30, 384)]:
        x = rng.normal(size=(n, d))
        offset = rng.normal(size=d)
        assert frechet_distance(x, x + offset).value == pytest.approx(float(offset @ offset), rel=1e-9)


def test_small_space_identity_nonzero_eigenvalues_match():
    # nonzero eig(Σ₁^½ Σ₂ Σ₁^½) (d×d) = eig(K Kᵀ), K = A₁A₂ᵀ (n₁×n₂), with Σᵢ = AᵢᵀAᵢ
    rng = np.random.default_rng(2)
    d, n1, n2 = 60, 7, 12
    a1, a2 = rng.normal(size=(n1, d)), rng.normal(size=(n2, d))
    sigma1, sigma2 = a1.T @ a1, a2.T @ a2
    values, vectors = np.linalg.eigh(sigma1)
    root1 = vectors @ np.diag(np.sqrt(np.clip(values, 0, None))) @ vectors.T
    big = np.sort(np.linalg.eigvalsh(root1 @ sigma2 @ root1))[::-1][:n1]
    k = a1 @ a2.T
    small = np.sort(np.linalg.eigvalsh(k @ k.T))[::-1]
    np.testing.assert_allclose(small, big, rtol=1e-8)
    assert trace_sqrt_product(a1, a2) == pytest.approx(np.sqrt(big).sum(), rel=1e-9)
    assert trace_sqrt_product(a2, a1) == pytest.approx(np.sqrt(big).sum(), rel=1e-9)  # symmetric in 1↔2
    # and it is what the small-sample factor uses: the sample's own centred rows
    assert factor_from_samples(rng.normal(size=(n1, d))).rows.shape == (n1, d)
    assert factor_from_samples(rng.normal(size=(3 * d, d))).rows.shape == (d, d)


def test_too_few_items_is_a_user_error():
    with pytest.raises(QrelkitError, match="at least 2 items"):
        frechet_distance(np.zeros((1, 4)), np.zeros((5, 4)))
    with pytest.raises(QrelkitError, match="different dimension"):
        frechet_distance(np.zeros((3, 4)), np.ones((5, 3)))


# -- item selection ------------------------------------------------------------------------


def _qrels(rows) -> Qrels:
    return Qrels("q", tuple(Qrel(q, d, g) for q, d, g in rows))


def test_relevance_level_defaults_to_2_for_graded_and_1_for_binary():
    graded = _qrels([("1", "a", 3), ("1", "b", 1), ("2", "c", 2), ("3", "d", 1)])
    assert default_relevance_level(graded) == 2
    assert relevant_items(graded) == {"1": ["a"], "2": ["c"]}  # query 3 has nothing ≥ 2
    binary = _qrels([("1", "a", 1), ("1", "b", 0), ("2", "c", 1)])
    assert default_relevance_level(binary) == 1
    assert relevant_items(binary) == {"1": ["a"], "2": ["c"]}
    with pytest.raises(QrelkitError, match="grade >= 5"):
        relevant_items(graded, rel_level=5)


def test_balanced_sparsification_takes_the_highest_grade_first_then_random():
    rows = [("1", f"p{i}", 3) for i in range(3)] + [("1", f"h{i}", 2) for i in range(10)] + [("2", "x", 2)]
    qrels = _qrels(rows)
    one = relevant_items(qrels, max_rel=1, seed=0)
    assert one["1"][0].startswith("p") and one["2"] == ["x"]
    five = relevant_items(qrels, max_rel=5, seed=0)
    assert sorted(five["1"][:3]) == ["p0", "p1", "p2"] and all(d.startswith("h") for d in five["1"][3:])
    assert relevant_items(qrels, max_rel=5, seed=0) == five  # reproducible
    picks = {tuple(relevant_items(qrels, max_rel=5, seed=s)["1"][3:]) for s in range(20)}
    assert len(picks) > 1  # random within the grade
    reordered = _qrels(list(reversed(rows)))
    assert relevant_items(reordered, max_rel=5, seed=0) == five  # file order does not matter


def test_top_k_follows_trec_eval_order_and_urr_skips_judged_items():
    run = Run(
        "r",
        (
            RunEntry("1", "a", 1, 1.0),
            RunEntry("1", "b", 2, 3.0),
            RunEntry("1", "c", 3, 3.0),
            RunEntry("1", "d", 4, 0.5),
            RunEntry("2", "e", 1, 1.0),
        ),
    )
    assert retrieved_items(run, ["1", "2", "3"], 2) == {"1": ["c", "b"], "2": ["e"], "3": []}
    judged = judged_items(_qrels([("1", "c", 0), ("1", "a", 2)]))
    assert retrieved_items(run, ["1"], 2, skip=judged) == {"1": ["b", "d"]}


def test_a_docid_without_a_document_is_named():
    vectors = {"a": np.ones(3)}
    with pytest.raises(QrelkitError, match="'zz'"):
        item_sample({"1": ["a", "zz"]}, ["1"], vectors)


# -- bootstrap -----------------------------------------------------------------------------


def _sample(rng, per_query, d, shift) -> ItemSample:
    index = np.repeat(np.arange(len(per_query)), per_query)
    qids = tuple(str(q) for q in range(len(per_query)))
    return ItemSample(qids, tuple(f"d{i}" for i in range(len(index))), index, rng.normal(shift, 1.0, (len(index), d)))


@pytest.mark.parametrize(
    "rel_per_query,d",
    [(1, 16), (5, 16), (5, 4)],  # relevant side small (< d), large (> d), run side > d too
)
def test_bootstrap_equals_fd_of_the_explicitly_resampled_items(rel_per_query, d):
    rng = np.random.default_rng(rel_per_query * 10 + d)
    n_queries = 12
    relevant = _sample(rng, [rel_per_query] * n_queries, d, 0.0)
    runs = [_sample(rng, [k] * n_queries, d, s) for k, s in ((1, 0.3), (3, 0.6), (10, 0.1))]
    weights = resample_counts(n_queries, 6, seed=4)
    got = bootstrap_fd(relevant, runs, weights)
    for b, row in enumerate(weights):
        x = np.repeat(relevant.vectors, row[relevant.query_index].astype(int), axis=0)
        for j, run in enumerate(runs):
            y = np.repeat(run.vectors, row[run.query_index].astype(int), axis=0)
            assert got[j, b] == pytest.approx(frechet_distance(x, y).value, rel=1e-9)


def test_bootstrap_resamples_are_seeded_multinomial_draws():
    weights = resample_counts(43, 100, seed=7)
    assert weights.shape == (100, 43) and np.all(weights.sum(axis=1) == 43)
    np.testing.assert_array_equal(weights, resample_counts(43, 100, seed=7))
    summary = summarize(np.array([1.0, 2.0, np.nan, 3.0, 4.0]))
    assert summary.resamples == 4 and summary.mean == 2.5 and summary.low < 1.1 and summary.high > 3.9
    assert summarize(np.array([np.nan])) is None


def test_bootstrap_gives_nan_where_a_resample_leaves_a_run_too_few_items():
    rng = np.random.default_rng(0)
    relevant = _sample(rng, [2, 2, 2], 3, 0.0)
    sparse_run = _sample(rng, [2, 0, 0], 3, 0.0)  # only query 0 retrieved anything
    weights = np.array([[3.0, 0.0, 0.0], [0.0, 3.0, 0.0], [1.0, 1.0, 1.0]])
    got = bootstrap_fd(relevant, [sparse_run], weights)
    assert np.isfinite(got[0, 0]) and np.isnan(got[0, 1]) and np.isfinite(got[0, 2])


@pytest.mark.parametrize("rel_per_query,d", [(5, 16), (5, 4)])
def test_bootstrap_in_d_dimensions_equals_the_explicitly_resampled_items(monkeypatch, rel_per_query, d):
    """The route for very deep k (per-query second moments in d dimensions) gives the same values."""
    monkeypatch.setattr(fd_bootstrap, "TENSOR_LIMIT", 0)
    rng = np.random.default_rng(rel_per_query * 10 + d + 1)
    relevant = _sample(rng, [rel_per_query] * 12, d, 0.0)
    runs = [_sample(rng, [k] * 12, d, s) for k, s in ((3, 0.6), (10, 0.1))]
    weights = resample_counts(12, 5, seed=2)
    got = bootstrap_fd(relevant, runs, weights)
    for b, row in enumerate(weights):
        x = np.repeat(relevant.vectors, row[relevant.query_index].astype(int), axis=0)
        for j, run in enumerate(runs):
            y = np.repeat(run.vectors, row[run.query_index].astype(int), axis=0)
            assert got[j, b] == pytest.approx(frechet_distance(x, y).value, rel=1e-9)


def test_bootstrap_in_worker_processes_gives_the_values_of_one_process_and_reports_every_pair():
    rng = np.random.default_rng(5)
    relevant = _sample(rng, [4] * 8, 6, 0.0)
    runs = [_sample(rng, [k] * 8, 6, s) for k, s in ((2, 0.2), (5, 0.4), (3, 0.1))]
    weights = resample_counts(8, 40, seed=2)
    seen: list[tuple[int, int, str]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total, threading.current_thread().name))

    alone = bootstrap_fd(relevant, runs, weights, workers=1, chunk=10)
    spread = bootstrap_fd(relevant, runs, weights, workers=2, chunk=10, progress=progress)
    # The same arithmetic with single-threaded BLAS in each process; BLAS may still pick other
    # kernels (alignment), so equal to rounding, not bit for bit.
    np.testing.assert_allclose(spread, alone, rtol=1e-12, atol=0)
    assert seen[-1][:2] == (120, 120) and [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)
    assert {name for _, _, name in seen} == {threading.current_thread().name}
    assert no_children_left()


def test_fewer_runs_than_workers_are_cut_into_resample_ranges_that_cover_each_run_once():
    runs = [_sample(np.random.default_rng(j), [j + 1] * 3, 2, 0.0) for j in range(2)]
    pieces = fd_bootstrap._pieces(runs, 1000, workers=4)
    assert [j for j, _, _ in pieces] == [1, 1, 0, 0]  # the larger run first
    for j in (0, 1):
        ranges = sorted((a, b) for k, a, b in pieces if k == j)
        assert ranges[0][0] == 0 and ranges[-1][1] == 1000 and all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
    assert fd_bootstrap._pieces(runs, 1, workers=4) == [(1, 0, 1), (0, 0, 1)]


def test_an_error_in_a_worker_process_reaches_the_caller_and_leaves_no_process_behind():
    rng = np.random.default_rng(1)
    relevant = _sample(rng, [3] * 5, 4, 0.0)
    wrong = _sample(rng, [3] * 5, 3, 0.0)  # 3 dimensions against 4: the inner products fail
    with pytest.raises(ValueError):
        bootstrap_fd(relevant, [wrong, wrong], resample_counts(5, 4, seed=0), workers=2)
    assert no_children_left()


def test_a_worker_process_killed_midway_is_a_failure_of_the_machine_not_a_hang():
    rng = np.random.default_rng(4)
    relevant = _sample(rng, [6] * 43, 300, 0.0)
    runs = [_sample(rng, [6] * 43, 300, 0.1) for _ in range(8)]
    started = threading.Event()
    outcome: list[BaseException | None] = []

    def bootstrap() -> None:
        try:
            bootstrap_fd(relevant, runs, resample_counts(43, 400, seed=0), workers=2, chunk=5, progress=lambda *_: started.set())
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=bootstrap)
    worker.start()
    assert started.wait(timeout=120), "no progress from the workers"
    children = multiprocessing.active_children()
    assert children
    os.kill(children[0].pid, signal.SIGKILL)
    worker.join(timeout=120)
    assert not worker.is_alive() and outcome and isinstance(outcome[0], FatalJobError), outcome
    assert "worker process ended" in str(outcome[0])
    assert no_children_left()


UNGUARDED_SCRIPT = """
import numpy as np
from qrelkit.evaluate.bootstrap import resample_counts
from qrelkit.evaluate.fd.bootstrap import bootstrap_fd
from qrelkit.evaluate.fd.items import ItemSample

print("top level ran")
rng = np.random.default_rng(0)
index = np.repeat(np.arange(6), 3)
def sample(shift):
    return ItemSample(tuple(map(str, range(6))), tuple(f"d{i}" for i in range(18)), index, rng.normal(shift, 1.0, (18, 4)))
values = bootstrap_fd(sample(0.0), [sample(0.1), sample(0.3)], resample_counts(6, 10, seed=0), workers=2)
print("finite", int(np.isfinite(values).sum()))
"""


def test_a_script_without_a_main_guard_is_not_run_again_in_the_workers(tmp_path):
    """Spawned workers re-import the caller's script unless told not to; a research script rarely
    has `if __name__ == "__main__":`, and would be re-run whole in each worker, then fail."""
    script = tmp_path / "script.py"
    script.write_text(UNGUARDED_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["top level ran", "finite 20"]


def test_a_small_bootstrap_stays_in_this_process_and_a_large_one_is_spread():
    rng = np.random.default_rng(2)
    relevant = _sample(rng, [10] * 43, 8, 0.0)
    runs = [_sample(rng, [10] * 43, 8, 0.0) for _ in range(37)]
    assert fd_bootstrap._estimated_seconds(relevant, runs[:3], 20) < fd_bootstrap.SERIAL_SECONDS
    assert fd_bootstrap._estimated_seconds(relevant, runs, 1000) > fd_bootstrap.SERIAL_SECONDS


def test_a_process_limited_to_one_cpu_scores_in_itself(monkeypatch):
    """OMP_NUM_THREADS=1 (what Ray gives a 1-CPU worker) means no worker processes, however large."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(fd_bootstrap, "SERIAL_SECONDS", 0.0)

    def no_pool(*args, **kwargs):
        raise AssertionError("worker processes started")

    monkeypatch.setattr(fd_bootstrap, "_in_processes", no_pool)
    rng = np.random.default_rng(6)
    relevant = _sample(rng, [2] * 4, 3, 0.0)
    got = bootstrap_fd(relevant, [_sample(rng, [2] * 4, 3, 0.2)], resample_counts(4, 5, seed=0))
    assert got.shape == (1, 5)


def test_bootstrap_reports_progress_in_the_calling_thread_up_to_every_pair():
    rng = np.random.default_rng(3)
    relevant = _sample(rng, [2] * 6, 5, 0.0)
    runs = [_sample(rng, [3] * 6, 5, 0.2) for _ in range(3)]
    seen: list[tuple[int, int, str]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total, threading.current_thread().name))

    bootstrap_fd(relevant, runs, resample_counts(6, 120, seed=1), chunk=25, progress=progress)
    assert seen[-1][:2] == (360, 360) and all(total == 360 for _, total, _ in seen)
    assert [done for done, _, _ in seen] == sorted(done for done, _, _ in seen)
    assert {name for _, _, name in seen} == {threading.current_thread().name}

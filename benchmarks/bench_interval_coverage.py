"""How often does each interval method cover the population value? A simulation on DL-shaped
synthetic tracks where the population value is known (issue 37).

qrelkit's intervals resample queries: the systems and the judged pairs are fixed, the topics are a
sample. A simulated track draws Q new topics from a population whose value of τ-b, τ_AP or κ is
known, computes every candidate interval exactly as qrelkit does (the same resample draws, the
same functions), and counts how often it holds the population value. Candidates:

- ``percentile`` and ``bca``: the bootstrap over queries (with replacement), percentile and
  bias-corrected accelerated (Efron 1987);
- ``subsampling``: m-out-of-n subsampling of queries without replacement, m = ⌊n/2⌋ (Politis and
  Romano 1994), the basic interval scaled by √(m/(n−m));
- ``jackknife``: estimate ± z·(jackknife standard error).

Scenarios (systems fixed, topics drawn):

- ``dl19-umbrela`` and ``dl19-binary`` (τ-b, τ_AP on nDCG@10): TREC DL 2019's 37 runs, each topic's
  nDCG@10 under NIST's qrels and under GPT-4o's (UMBRELA graded; binary) stacked into one vector;
  a new topic is Gaussian with the 43 real topics' mean and covariance, so the population τ is the
  τ between the real means (0.9159 for UMBRELA) and every cross-system correlation is DL19's.
  Needs the shared data (skipped without it).
- ``dl21-shaped`` (τ-b, τ_AP): 63 systems × 53 topics, no data needed: system ability μ_s (close
  together, as DL21's runs are), topic difficulty, a system × topic interaction shared by both
  qrels, a judge bias per system β_s and judge noise per (system, topic); population τ = τ(μ, μ + β).
- ``dl19-umbrela`` (κ): a new topic is one of DL19's 43 topics, its pairs redrawn from that topic's
  confusion of UMBRELA's and NIST's grades (as many pairs as it has); population κ = κ of the
  pooled confusion, 0.3626.
- ``dl-shaped`` (κ), no data needed: 120-280 pairs a topic, grade shares per topic around DL's
  45/27/17/11%, a model grade that reads the true grade through topic-level leniency and noise;
  population κ from the expected confusion (200,000 topics, analytic within each).

Usage: python benchmarks/bench_interval_coverage.py [--tracks 1000] [--resamples 1000] [--seed 0]
       [--scenarios dl19-umbrela,dl19-binary,dl21-shaped,dl-shaped]
Prints one row per (scenario, statistic, method): coverage with its Monte Carlo standard error,
misses below and above, mean width, and how often the estimate lies outside its own interval.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import DL19, shared_data  # noqa: E402

from qrelkit.evaluate.agreement import kendall_tau_b_rows, tau_ap_rows  # noqa: E402
from qrelkit.evaluate.bootstrap import IntervalEstimate, draw_weights, interval_of, jackknife_weights, uniform_weights  # noqa: E402
from qrelkit.evaluate.labels import kappa_rows  # noqa: E402

_ERFC = np.frompyfunc(math.erfc, 1, 1)


def ndtr(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF, elementwise (scipy.special.ndtr without scipy)."""
    return 0.5 * _ERFC(-np.asarray(x) / math.sqrt(2.0)).astype(np.float64)


METHODS = ("percentile", "bca", "subsampling", "jackknife")
GRADE_SHARES = np.array([0.45, 0.27, 0.17, 0.11])
Statistic = Callable[[np.ndarray], dict[str, np.ndarray]]  # query weights (rows, Q) -> name -> (rows,)


@dataclass
class Scenario:
    name: str
    population: dict[str, float]  # statistic -> its population value
    draw: Callable[[np.random.Generator], Statistic]  # one simulated track, as a statistic of query weights
    queries: int
    about: str


@dataclass
class Tally:
    covered: int = 0
    below: int = 0  # the interval lies below the population value
    above: int = 0
    outside: int = 0  # the track's own estimate lies outside its interval
    undefined: int = 0
    widths: list[float] = field(default_factory=list)
    estimates: list[float] = field(default_factory=list)

    def add(self, found: IntervalEstimate | None, estimate: float, truth: float) -> None:
        self.estimates.append(estimate)
        if found is None or not (math.isfinite(found.low) and math.isfinite(found.high)):
            self.undefined += 1
            return
        self.covered += found.low <= truth <= found.high
        self.below += found.high < truth
        self.above += found.low > truth
        self.outside += not (found.low <= estimate <= found.high)
        self.widths.append(found.high - found.low)


# -- system rankings ----------------------------------------------------------------------------


def _ranking_statistic(reference: np.ndarray, model: np.ndarray) -> Statistic:
    """(systems, Q) per-topic scores under each qrels -> τ-b and τ_AP of the systems' weighted means,
    as `qrelkit agree` computes them (reference ordering as the truth for τ_AP)."""

    def statistic(weights: np.ndarray) -> dict[str, np.ndarray]:
        truth, estimate = weights @ reference.T, weights @ model.T
        return {"τ-b": kendall_tau_b_rows(truth, estimate), "τ_AP": tau_ap_rows(truth, estimate)}

    return statistic


def _ranking_population(reference_means: np.ndarray, model_means: np.ndarray) -> dict[str, float]:
    return {
        "τ-b": float(kendall_tau_b_rows(reference_means, model_means)[0]),
        "τ_AP": float(tau_ap_rows(reference_means, model_means)[0]),
    }


def gaussian_topics(per_topic: np.ndarray, queries: int) -> Callable[[np.random.Generator], Statistic]:
    """New topics with the mean and covariance of ``per_topic`` ((2·systems, Q0): reference rows, then
    model rows): x = mean + C·z, C the centred topics / √(Q0 − 1), z standard normal."""
    mean = per_topic.mean(axis=1, keepdims=True)
    spread = (per_topic - mean) / math.sqrt(per_topic.shape[1] - 1)
    systems = per_topic.shape[0] // 2

    def draw(rng: np.random.Generator) -> Statistic:
        topics = mean + spread @ rng.standard_normal((per_topic.shape[1], queries))
        return _ranking_statistic(topics[:systems], topics[systems:])

    return draw


def dl19_ranking(judge_file: Path, name: str) -> Scenario | None:
    if not (DL19 / "qrels.txt").exists() or not judge_file.exists():
        return None
    from qrelkit.evaluate import evaluate_runs
    from qrelkit.io import read_qrels, read_runs

    reference = read_qrels(DL19 / "qrels.txt")
    runs = read_runs(sorted((DL19 / "runs").glob("*.run")))
    judge = read_qrels(judge_file)
    nist = evaluate_runs(reference, runs, ["nDCG@10"])
    model = evaluate_runs(judge, runs, ["nDCG@10"])
    if nist.queries != model.queries:
        raise SystemExit(f"{judge_file}: its qrels cover other topics than NIST's")
    per_topic = np.vstack([nist.matrix("nDCG@10"), model.matrix("nDCG@10")])
    systems = per_topic.shape[0] // 2
    means = per_topic.mean(axis=1)
    return Scenario(
        name,
        _ranking_population(means[:systems], means[systems:]),
        gaussian_topics(per_topic, per_topic.shape[1]),
        per_topic.shape[1],
        f"{systems} DL19 runs, nDCG@10 under NIST vs {judge_file.name}, Gaussian topics with DL19's covariance",
    )


def dl21_ranking(systems: int = 63, queries: int = 53, seed: int = 2021) -> Scenario:
    """Parametric: score(s, q) = μ_s + u_q + v_sq under the reference, plus β_s + w_sq under the model."""
    fixed = np.random.default_rng(seed)
    ability = np.sort(fixed.normal(0.60, 0.06, systems))  # DL21's runs lie close together
    bias = fixed.normal(0.0, 0.015, systems)  # the judge favours some systems

    def draw(rng: np.random.Generator) -> Statistic:
        shared = ability[:, None] + rng.normal(0.0, 0.15, (1, queries)) + rng.normal(0.0, 0.18, (systems, queries))
        model = shared + bias[:, None] + rng.normal(0.0, 0.10, (systems, queries))
        return _ranking_statistic(shared, model)

    about = f"{systems} systems × {queries} topics, ability sd 0.06, judge bias sd 0.015, interaction sd 0.18, judge noise sd 0.10"
    return Scenario("dl21-shaped", _ranking_population(ability, ability + bias), draw, queries, about)


# -- label agreement ----------------------------------------------------------------------------


def _kappa_statistic(per_topic: np.ndarray) -> Statistic:
    """(Q, 16) per-topic confusion counts -> Cohen's κ of the weighted pooled confusion."""

    def statistic(weights: np.ndarray) -> dict[str, np.ndarray]:
        return {"κ": kappa_rows((weights @ per_topic).reshape(len(weights), 4, 4))}

    return statistic


def dl19_kappa() -> Scenario | None:
    judge_file = DL19 / "umbrela-gpt4o.qrels"
    if not (DL19 / "qrels.txt").exists() or not judge_file.exists():
        return None
    from qrelkit.evaluate.labels import mapped_pairs, per_query_confusions
    from qrelkit.io import read_qrels

    pairs = mapped_pairs(read_qrels(judge_file), read_qrels(DL19 / "qrels.txt"))
    topics = sorted(set(pairs.qids))
    confusions = per_query_confusions(pairs, topics, [0, 1, 2, 3])
    sizes = confusions.sum(axis=1).astype(np.int64)
    shares = confusions / sizes[:, None]

    def draw(rng: np.random.Generator) -> Statistic:
        chosen = rng.integers(0, len(topics), len(topics))
        return _kappa_statistic(rng.multinomial(sizes[chosen], shares[chosen]).astype(np.float64))

    population = float(kappa_rows(confusions.sum(axis=0).reshape(1, 4, 4))[0])
    about = f"DL19's {len(topics)} topics' UMBRELA × NIST confusions, a topic drawn at random and its pairs redrawn"
    return Scenario("dl19-umbrela", {"κ": population}, draw, len(topics), about)


def _grade_probabilities(leniency: np.ndarray, noise: float) -> np.ndarray:
    """(topics, 4 true grades, 4 model grades): P(model grade | true grade, topic leniency), the model
    reading grade + leniency + N(0, noise²) rounded into 0-3."""
    cuts = np.array([-np.inf, 0.5, 1.5, 2.5, np.inf])
    centre = np.arange(4)[None, :, None] + leniency[:, None, None]
    cdf = ndtr((cuts[None, None, :] - centre) / noise)
    return np.diff(cdf, axis=2)


def dl_kappa(queries: int = 43, seed: int = 2019, noise: float = 0.9) -> Scenario:
    def topics(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Expected confusion share (count, 16) of each topic, and its pair count."""
        sizes = rng.integers(120, 281, count)
        grade_shares = rng.dirichlet(4.0 * GRADE_SHARES, count)
        leniency = rng.normal(0.0, 0.5, count)
        expected = grade_shares[:, :, None] * _grade_probabilities(leniency, noise)
        return expected.reshape(count, 16), sizes

    shares, sizes = topics(np.random.default_rng(seed), 200_000)
    population = float(kappa_rows((sizes[:, None] * shares).sum(axis=0).reshape(1, 4, 4))[0])

    def draw(rng: np.random.Generator) -> Statistic:
        shares, sizes = topics(rng, queries)
        return _kappa_statistic(rng.multinomial(sizes, shares / shares.sum(axis=1, keepdims=True)).astype(np.float64))

    about = f"{queries} topics of 120-280 pairs, grade shares ~ Dirichlet(4·DL), leniency sd 0.5, noise sd {noise}"
    return Scenario("dl-shaped", {"κ": population}, draw, queries, about)


# -- the study ------------------------------------------------------------------------------------


BOUNDS = {"τ-b": (-1.0, 1.0), "τ_AP": (-1.0, 1.0), "κ": (-math.inf, 1.0)}  # as qrelkit's audits cut intervals back


def intervals_of(
    statistic: Statistic, queries: int, resamples: int, seed: int
) -> dict[str, tuple[float, dict[str, IntervalEstimate | None]]]:
    """statistic name -> (estimate, method -> interval): each method on the draws qrelkit makes for it
    (`draw_weights`), through the function qrelkit's audits call (`interval_of`)."""
    estimates = {name: float(values[0]) for name, values in statistic(uniform_weights(queries)).items()}
    jackknife = statistic(jackknife_weights(queries))
    draws = {method: statistic(draw_weights(queries, resamples, seed, method)) for method in ("bca", "subsampling")}
    out = {}
    for name, estimate in estimates.items():
        by_method = {}
        for method in METHODS:
            resampled = draws["subsampling" if method == "subsampling" else "bca"][name]
            by_method[method] = interval_of(method, estimate, resampled, jackknife[name], queries, 0.95, BOUNDS[name])
        out[name] = (estimate, by_method)
    return out


def study(scenario: Scenario, tracks: int, resamples: int, seed: int) -> dict[str, dict[str, Tally]]:
    tallies = {name: {method: Tally() for method in METHODS} for name in scenario.population}
    rng = np.random.default_rng([seed, sum(map(ord, scenario.name))])
    for track in range(tracks):
        found = intervals_of(scenario.draw(rng), scenario.queries, resamples, seed + track)
        for name, (estimate, by_method) in found.items():
            for method, interval in by_method.items():
                tallies[name][method].add(interval, estimate, scenario.population[name])
    return tallies


def scenarios(chosen: list[str]) -> list[Scenario]:
    built: list[Scenario] = []
    makers: dict[str, Callable[[], list[Scenario | None]]] = {
        "dl19-umbrela": lambda: [dl19_ranking(DL19 / "umbrela-gpt4o.qrels", "dl19-umbrela"), dl19_kappa()],
        "dl19-binary": lambda: [dl19_ranking(shared_data() / "judge-methods-dl19" / "binary.txt", "dl19-binary")],
        "dl21-shaped": lambda: [dl21_ranking()],
        "dl-shaped": lambda: [dl_kappa()],
    }
    for name in chosen:
        if name not in makers:
            raise SystemExit(f"unknown scenario {name!r}: choose from {', '.join(makers)}")
        found = [s for s in makers[name]() if s is not None]
        if not found:
            print(f"# {name}: skipped (the shared data is not at {shared_data()})")
        built += found
    return built


def row(scenario: Scenario, name: str, method: str, tally: Tally, tracks: int) -> float:
    """Print one method's row of the table; its coverage."""
    defined = tracks - tally.undefined
    share = tally.covered / defined if defined else math.nan
    error = math.sqrt(share * (1 - share) / defined) if defined else math.nan
    misses = f"{tally.below / max(defined, 1):.1%} / {tally.above / max(defined, 1):.1%}"
    print(
        f"| {scenario.name} | {name} | {scenario.population[name]:.4f} | {np.mean(tally.estimates):.4f} | {method} | "
        f"{share:.1%} (± {error:.1%}) | {misses} | {np.mean(tally.widths):.4f} | {tally.outside / max(defined, 1):.1%} |",
        flush=True,
    )
    return share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tracks", type=int, default=1000, help="simulated tracks per scenario (each gives every method's interval)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples and half-samples per track")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenarios", default="dl19-umbrela,dl19-binary,dl21-shaped,dl-shaped")
    args = parser.parse_args()
    load_before = os.getloadavg()
    started = time.perf_counter()
    print(f"# {platform.node()}, {os.cpu_count()} cores, {platform.python_version()}; load {load_before[0]:.1f} at start")
    print(f"# {args.tracks} tracks per scenario, {args.resamples} resamples, 95% intervals, seed {args.seed}")
    columns = ["scenario", "statistic", "population", "mean estimate", "method", "coverage (± MC s.e.)", "misses below / above"]
    print("| " + " | ".join(columns + ["mean width", "estimate outside"]) + " |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|", flush=True)
    best: dict[str, list[float]] = {method: [] for method in METHODS}
    for scenario in scenarios(args.scenarios.split(",")):
        print(f"# {scenario.name}: {scenario.about}", file=sys.stderr)
        for name, by_method in study(scenario, args.tracks, args.resamples, args.seed).items():
            for method, tally in by_method.items():
                share = row(scenario, name, method, tally, args.tracks)
                best[method].append(abs(share - 0.95))
    ranked = sorted(METHODS, key=lambda m: float(np.mean(best[m])) if best[m] else math.inf)
    print("# mean |coverage − 95%| over the rows: " + ", ".join(f"{m} {float(np.mean(best[m])):.1%}" for m in ranked if best[m]))
    load_after = os.getloadavg()
    print(f"# {time.perf_counter() - started:.0f} s; load average at the end {load_after[0]:.1f} (1 min), {load_after[1]:.1f} (5 min)")


if __name__ == "__main__":
    main()

"""Which judge agrees better with the reference? Several judges' qrels audited against one reference,
and the paired differences between them.

Each judge is audited exactly as `qrelkit agree` audits it (:func:`qrelkit.evaluate.audit.audit`,
the same seed, so the same query resamples and the same figures and intervals). The differences
are statistics of query weights like any other (`qrelkit.evaluate.bootstrap.paired_intervals`):

- Δτ = τ(reference, judge A) − τ(reference, judge B) on a measure, and the same for τ_AP;
- Δκ = κ(judge A, reference) − κ(judge B, reference) (Cohen's κ, after the maps).

Both judges are scored on every resample from the same drawn queries, so the interval of a
difference is paired: a topic draw that is hard for both moves both τ together and cancels in Δτ.
When both judges cover the same queries (the usual case) those are exactly the resamples behind
each judge's own interval; otherwise the difference runs over the queries both share, and says so.

The p-value of a difference comes from a paired randomisation test over queries (Fisher's
randomisation test, as Smucker, Allan and Carterette recommend for IR, CIKM 2007): under the null
hypothesis that the two judges are exchangeable, swapping judge A's and judge B's judgments of a
query leaves the distribution of the difference unchanged, so each of ``permutations`` random
swap patterns (each query swapped with probability ½) gives a difference under the null, and
p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + permutations) (two-sided; the +1 keeps it a valid p-value, Phipson
and Smyth 2010). Why not a p-value read off the bootstrap: resampled τ is strongly biased (resampling
queries adds noise that only lowers a correlation; MiniLM's τ on DL19 sits above 98% of its
resamples), so "how often does the resampled Δτ cross 0" tests a shifted distribution; the
randomisation test needs no such shape and holds the number of queries fixed.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.agreement import in_chunks, kendall_tau_b_rows, printed, tau_ap_rows
from qrelkit.evaluate.audit import Audit, audit, measure_pairs
from qrelkit.evaluate.bootstrap import IntervalEstimate, draw_weights, finite_values, paired_intervals, uniform_weights
from qrelkit.evaluate.choices import (
    DEFAULT_MEASURES,
    DEFAULT_METHOD,
    DEFAULT_PERMUTATIONS,
    DEFAULT_RESAMPLES,
    METHOD_NAMES,
    check_method,
    check_resamples,
)
from qrelkit.evaluate.joined import restricted
from qrelkit.evaluate.labels import (
    NO_MAPS,
    GradeMaps,
    NoSharedPairs,
    SharedPairs,
    fits_one_scale,
    grade_range,
    kappa_rows,
    kappa_statistic_of,
    label_agreement,
    mapped_pairs,
    per_query_confusions,
)
from qrelkit.evaluate.metrics import evaluate_runs
from qrelkit.io import Qrels, Run

TEST_NAME = "paired randomisation test over queries (two-sided)"
DIFFERENCE_NAMES = {"kendall_tau": "Δτ", "tau_ap": "Δτ_AP", "cohen_kappa": "Δκ"}


@dataclass(frozen=True)
class PairedDifference:
    """first − second on one statistic, with its paired interval and randomisation p-value."""

    first: str
    second: str
    statistic: str  # kendall_tau, tau_ap or cohen_kappa
    measure: str | None  # the measure the systems are ranked by (None for κ)
    estimate: float
    interval: IntervalEstimate | None
    p_value: float | None
    queries: int  # the queries both judges cover: the ones resampled and swapped
    permutations: int

    @property
    def name(self) -> str:
        return DIFFERENCE_NAMES[self.statistic] + (f" {self.measure}" if self.measure else "")

    def indistinguishable(self, alpha: float) -> bool:
        """Neither the test nor the interval tells the two judges apart (False when neither was computed:
        nothing was tested)."""
        if self.interval is None and self.p_value is None:
            return False
        holds_zero = self.interval is None or self.interval.low <= 0.0 <= self.interval.high
        return (self.p_value is None or self.p_value >= alpha) and holds_zero


@dataclass(frozen=True)
class Comparison:
    """Several judges' qrels against one reference: each one's audit, the paired differences, the
    κ between every two judges, and notes in sentences."""

    judges: list[str]
    reference_name: str
    audits: dict[str, Audit]
    differences: list[PairedDifference]
    kappa_matrix: dict[str, dict[str, float | None]]  # Cohen's κ between two judges on the pairs both judged
    resamples: int
    permutations: int
    seed: int | None
    interval: str  # as printed: "jackknife", "BCa", "percentile" or "subsampling"
    level: float
    baseline: str | None = None
    notes: list[str] = field(default_factory=list)
    test: str = TEST_NAME
    skipped: dict[str, str] = field(default_factory=dict)  # judge -> why it was not compared (no shared pair)

    @property
    def alpha(self) -> float:
        return 1.0 - self.level


RANKING = {"kendall_tau": kendall_tau_b_rows, "tau_ap": tau_ap_rows}


def _on(evaluation: Any, measure: str, queries: list[str]) -> np.ndarray:
    """The runs × queries matrix of ``measure`` on ``queries``: the evaluation's own matrix when it has
    exactly those queries. Never a reordered copy then: τ-b sees systems whose means tie, and a copy
    laid out otherwise in memory sums in another order, which can split a tie by rounding and give
    another τ than the judge's own row."""
    matrix = evaluation.matrix(measure)
    if list(evaluation.queries) == list(queries):
        return matrix
    position = {q: i for i, q in enumerate(evaluation.queries)}
    return np.ascontiguousarray(matrix[:, [position[q] for q in queries]])


class RowCache:
    """A judge's τ and τ_AP rows on given query weights, kept for every pair it is in: with 12 judges
    each judge's bootstrap rows are scored once, not in each of its 11 pairs (the values are the
    same: same judge, queries, measure and weights)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[Any, ...], np.ndarray] = {}
        self.shared: dict[tuple[Any, ...], SharedPairs] = {}
        self.kappas: dict[tuple[Any, ...], Callable[[np.ndarray], dict[str, np.ndarray]]] = {}

    def shared_pairs(self, audit_: Audit, queries: list[str], maps: GradeMaps) -> SharedPairs:
        """A judge's pairs shared with the reference on ``queries``, mapped: built from its grades once
        per comparison (κ's bootstrap and the randomisation test of each of its pairs read them)."""
        key = (audit_.model_name, tuple(queries))
        if key not in self.shared:  # in columns: a judge may hold millions of pairs
            model, reference = restricted(audit_.model_qrels, queries), restricted(audit_.reference_qrels, queries)
            self.shared[key] = mapped_pairs(model, reference, maps)
        return self.shared[key]

    def kappa_statistic(self, audit_: Audit, queries: list[str], maps: GradeMaps) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
        """A judge's κ per row of query weights (`kappa_statistic_of`), its confusions per query built
        once per comparison."""
        key = (audit_.model_name, tuple(queries))
        if key not in self.kappas:
            self.kappas[key] = kappa_statistic_of(self.shared_pairs(audit_, queries, maps), queries)
        return self.kappas[key]

    def get(self, key: tuple[Any, ...], weights: np.ndarray, compute: Callable[[], np.ndarray]) -> np.ndarray:
        full = (*key, weights.shape, hashlib.sha1(np.ascontiguousarray(weights).tobytes()).digest())
        if full not in self.rows:
            self.rows[full] = compute()
        return self.rows[full]


class _Pair:
    """Two judges' per-query material on the queries both cover: the runs × queries matrices of each
    measure and the per-query confusion matrices of κ."""

    def __init__(
        self, first: Audit, second: Audit, queries: list[str], measures: list[str], maps: GradeMaps, cache: RowCache | None = None
    ):
        self.queries = queries
        self.names = (first.model_name, second.model_name)
        self.cache = cache or RowCache()
        self.queries_key = tuple(queries)
        self.decimals = first.reference_decimals  # the reference's means as printed, as in each judge's own τ
        # measure -> the runs × queries matrices of (the reference, the first judge, the second)
        evaluations = (first.reference_evaluation, first.model_evaluation, second.model_evaluation)
        self.matrices = {measure: tuple(_on(found, measure, queries) for found in evaluations) for measure in measures}
        # Δκ only where both judges' κ is computed (grades on one scale: `labels.kappa_scale_problem`)
        self.with_kappa = first.labels.not_computed is None and second.labels.not_computed is None
        if self.with_kappa:
            shared = [self.cache.shared_pairs(audit_, queries, maps) for audit_ in (first, second)]
            self.kappa_a, self.kappa_b = (self.cache.kappa_statistic(audit_, queries, maps) for audit_ in (first, second))
            # both judges' per-query confusions (Q, L·L) on one label set, the union of both: unweighted κ
            # does not change with a label neither side uses
            self.labels = grade_range(*[p.reference for p in shared], *[p.model for p in shared])
            self.confusion_a, self.confusion_b = (per_query_confusions(found, queries, self.labels) for found in shared)

    def _truth(self, measure: str, reference: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return self.cache.get(("reference", self.queries_key, measure), weights, lambda: printed(weights @ reference.T, self.decimals))

    def _rows(self, judge: str, name: str, measure: str, weights: np.ndarray, truth: np.ndarray, matrix: np.ndarray) -> np.ndarray:
        """One judge's τ (or τ_AP) per row of ``weights``, scored once per comparison."""
        function = RANKING[name]
        return self.cache.get((judge, name, self.queries_key, measure), weights, lambda: in_chunks(function, truth, weights @ matrix.T))

    def statistic(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Query weights (rows, Q) -> every difference first − second, per row."""
        out: dict[str, np.ndarray] = {}
        for measure, (reference, a, b) in self.matrices.items():
            truth = self._truth(measure, reference, weights)
            for name in RANKING:
                first, second = (self._rows(judge, name, measure, weights, truth, m) for judge, m in zip(self.names, (a, b)))
                out[f"{name}|{measure}"] = first - second
        if self.with_kappa:
            out["cohen_kappa|"] = self.kappa_a(weights)["cohen_kappa"] - self.kappa_b(weights)["cohen_kappa"]
        return out

    def swapped(self, masks: np.ndarray) -> dict[str, np.ndarray]:
        """Swap patterns (rows, Q), 1 where a query's judgments of the two judges trade places -> every
        difference per row (the randomisation test's null distribution)."""
        n = masks.shape[1]
        keep, swap = (1.0 - masks) / n, masks / n
        out: dict[str, np.ndarray] = {}
        for measure, (reference, a, b) in self.matrices.items():
            truth = printed(uniform_weights(n) @ reference.T, self.decimals)  # one row: the same for every swap
            first, second = keep @ a.T + swap @ b.T, swap @ a.T + keep @ b.T
            for name, function in RANKING.items():
                out[f"{name}|{measure}"] = in_chunks(function, truth, first) - in_chunks(function, truth, second)
        if not self.with_kappa:
            return out
        size = len(self.labels)
        first_confusion = (keep @ self.confusion_a + swap @ self.confusion_b).reshape(len(masks), size, size)
        second_confusion = (swap @ self.confusion_a + keep @ self.confusion_b).reshape(len(masks), size, size)
        out["cohen_kappa|"] = kappa_rows(first_confusion) - kappa_rows(second_confusion)
        return out


def randomisation_p_values(observed: dict[str, float], null: dict[str, np.ndarray]) -> dict[str, float | None]:
    """Two-sided p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + defined swaps); swaps where Δ* is undefined are left out."""
    out: dict[str, float | None] = {}
    for name, value in observed.items():
        values = finite_values(null[name])
        if not math.isfinite(value) or values.size == 0:
            out[name] = None
            continue
        # a tolerance for round-off: a swap that changes nothing must count as "as extreme"
        extreme = int(np.count_nonzero(np.abs(values) >= abs(value) - 1e-12))
        out[name] = (1 + extreme) / (1 + values.size)
    return out


def swap_masks(n_queries: int, permutations: int, seed: int | None) -> np.ndarray:
    """(permutations, n_queries) of 0/1: which queries' judgments trade places; a stream of its own
    (seed, 27), so adding the test leaves the bootstrap draws untouched."""
    rng = np.random.default_rng(None if seed is None else [seed, 27])
    return rng.integers(0, 2, size=(permutations, n_queries)).astype(np.float64)


def paired_differences(
    first: Audit,
    second: Audit,
    *,
    measures: list[str],
    maps: GradeMaps,
    resamples: int,
    permutations: int,
    seed: int | None,
    method: str,
    level: float,
    cache: RowCache | None = None,
) -> tuple[list[PairedDifference], str | None]:
    """first − second on Δτ and Δτ_AP of each measure and on Δκ; a note when they run over fewer
    queries than either judge's own figures. ``cache``: shared by the pairs of one comparison."""
    queries = sorted(set(first.queries) & set(second.queries))
    if len(queries) < 2:
        return [], f"{first.model_name} and {second.model_name} share {len(queries)} queries: no paired difference"
    note = None
    if queries != first.queries or queries != second.queries:
        note = (
            f"{first.model_name} − {second.model_name}: the differences run over the {len(queries)} queries both judges cover "
            f"({first.model_name} covers {len(first.queries)}, {second.model_name} {len(second.queries)}), so they are not "
            "the plain difference of the two rows above"
        )
    # both judges' systems ranked against one reference ranking? (not so when one's reference is cut
    # to a sample it judged: `qrelkit.evaluate.coverage`)
    ours, theirs = first.reference_evaluation, second.reference_evaluation
    if not all(np.array_equal(_on(ours, m, queries), _on(theirs, m, queries), equal_nan=True) for m in measures):
        note = "; ".join(filter(None, [note, different_reference_note(first, second)]))
        measures = []  # Δκ still: κ reads the shared pairs either way
    pair = _Pair(first, second, queries, measures, maps, cache)
    draws = draw_weights(len(queries), resamples, seed, method)
    bounds = {f"{name}|{measure}": (-2.0, 2.0) for measure in pair.matrices for name in RANKING}  # Δ of two correlations
    found = paired_intervals(pair.statistic, draws, method=method, level=level, bounds=bounds)
    p_values: dict[str, float | None] = dict.fromkeys(found.estimates)
    if permutations:
        p_values = randomisation_p_values(found.estimates, pair.swapped(swap_masks(len(queries), permutations, seed)))
    out = []
    for key, estimate in found.estimates.items():
        statistic, measure = key.split("|")
        interval, p_value = found.intervals.get(key), p_values[key]
        out.append(PairedDifference(*pair.names, statistic, measure or None, estimate, interval, p_value, len(queries), permutations))
    return out, note


def different_reference_note(first: Audit, second: Audit) -> str:
    def ranked_on(found: Audit) -> str:
        c = found.coverage
        return f"the reference's {c.reference_pairs:,} pairs" + (" it judged" if c.restricted else "")

    return (
        f"{first.model_name} − {second.model_name}: no Δτ or Δτ_AP: {first.model_name}'s systems are ranked against "
        f"{ranked_on(first)}, {second.model_name}'s against {ranked_on(second)}, so their τs answer to different references "
        "(--reference-pairs all ranks every judge against every reference pair); Δκ is on the pairs each shares with the reference"
    )


def kappa_between(judges: dict[str, Qrels]) -> dict[str, dict[str, float | None]]:
    """Cohen's κ between every two judges on the pairs both judged (grades as given; None: no shared
    pair, or grades κ cannot compare: a judge's scores, or more values than one scale holds)."""
    names = list(judges)
    matrix: dict[str, dict[str, float | None]] = {a: {} for a in names}
    for a in names:
        matrix[a][a] = 1.0 if fits_one_scale(judges[a]) else None
    for a, b in itertools.combinations(names, 2):
        try:
            value: float | None = label_agreement(judges[a], judges[b]).cohen_kappa
        except QrelkitError:
            value = None
        matrix[a][b] = matrix[b][a] = value if value is None or math.isfinite(value) else None
    return matrix


def pairs_to_compare(names: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """Every two judges in the order given (first − second), or each judge against ``baseline``
    (judge − baseline)."""
    if baseline is None:
        return list(itertools.combinations(names, 2))
    if baseline not in names:
        raise QrelkitError(f"--baseline {baseline!r} is none of the judges compared: {', '.join(names) or 'none'}")
    return [(name, baseline) for name in names if name != baseline]


def indistinguishable_notes(differences: list[PairedDifference], alpha: float, level: float) -> list[str]:
    notes = []
    for d in differences:
        if not d.indistinguishable(alpha):
            continue
        found = d.interval
        interval = f"{level:.0%} {found.method} interval [{found.low:.3f}, {found.high:.3f}] holds 0" if found else "no interval"
        p = f"p = {d.p_value:.3f} ≥ {alpha:.2f}" if d.p_value is not None else "no test"
        notes.append(f"{d.first} and {d.second} are indistinguishable on {d.name}: {d.name} = {d.estimate:+.4f}, {interval}, {p}")
    return notes


def audit_each(
    judges: list[Qrels], reference: Qrels, runs: list[Run], ranking: dict[str, dict[str, Any]] | None = None, **options: Any
) -> tuple[dict[str, Audit], dict[str, str]]:
    """Each judge's audit (`audit`'s options), the reference scored once for all of them; a judge that
    shares no (qid, docid) pair with the reference is left out, with why (never the whole comparison).
    ``ranking``: a judge's own ``reference_pairs``, ``model_covers`` and ``why`` (a sample's judge is
    ranked on the pairs it judged: `qrelkit.evaluate.coverage`), by name."""
    pairs = measure_pairs(options["measures"], options.get("judge_measures", ()))
    reference_evaluation = evaluate_runs(reference, runs, list(dict.fromkeys(p.reference for p in pairs)))
    audits: dict[str, Audit] = {}
    skipped: dict[str, str] = {}
    for judge in judges:
        try:
            own = (ranking or {}).get(judge.name, {})
            audits[judge.name] = audit(judge, reference, runs, reference_evaluation=reference_evaluation, **options, **own)
        except NoSharedPairs:
            skipped[judge.name] = (
                f"shares no (qid, docid) pair with {reference.name} ({len(judge):,} pairs against {len(reference):,}): not compared"
            )
    return audits, skipped


def compare_judges(
    judges: list[Qrels],
    reference: Qrels,
    runs: list[Run],
    *,
    measures: list[str] | tuple[str, ...] = DEFAULT_MEASURES,
    judge_measures: list[str] | tuple[str, ...] = (),
    groups: dict[str, list[str]] | None = None,
    maps: GradeMaps = NO_MAPS,
    rel_level: int | None = None,
    baseline: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int | None = 0,
    interval: str = DEFAULT_METHOD,
    level: float = 0.95,
    reference_decimals: int | None = None,
    ranking: dict[str, dict[str, Any]] | None = None,
) -> Comparison:
    """Audit each judge's qrels against ``reference`` (as `agree` does) and test the differences
    between them; judges are named by their qrels' names, which must differ. ``judge_measures``: the
    judges' own measures, paired with ``measures`` (`qrelkit.evaluate.audit.measure_pairs`);
    ``ranking``: the pairs each judge's systems are ranked on (`audit_each`)."""
    method = check_method(interval)
    check_resamples(resamples)
    check_resamples(permutations)
    if not judges:
        raise QrelkitError("compare needs at least one judge")
    names = [q.name for q in judges]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise QrelkitError(f"two judges are both called {', '.join(map(repr, repeated))}: name each judge once")
    measures = list(dict.fromkeys(measures))
    keys = [p.key for p in measure_pairs(measures, judge_measures)]
    options: dict[str, Any] = dict(measures=measures, judge_measures=judge_measures, groups=groups, resamples=resamples, seed=seed)
    options |= dict(interval=method, reference_decimals=reference_decimals, maps=maps, rel_level=rel_level)
    audits, skipped = audit_each(judges, reference, runs, ranking, level=level, **options)
    names = [name for name in names if name in audits]
    differences: list[PairedDifference] = []
    notes: list[str] = []
    settings: dict[str, Any] = dict(
        measures=keys, maps=maps, resamples=resamples, permutations=permutations, seed=seed, method=method, level=level
    )
    cache = RowCache()
    for a, b in pairs_to_compare(names, baseline):
        found, note = paired_differences(audits[a], audits[b], **settings, cache=cache)
        differences += found
        notes += [note] if note else []
    notes += indistinguishable_notes(differences, 1.0 - level, level)
    return Comparison(
        judges=names,
        reference_name=reference.name,
        audits=audits,
        differences=differences,
        kappa_matrix=kappa_between({q.name: q for q in judges if q.name in audits}),
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        interval=METHOD_NAMES[method],
        level=level,
        baseline=baseline,
        notes=notes,
        skipped=skipped,
    )

"""The choices a user makes of the evaluate layer (resamples, interval method, averaging, which
relevant items a cut keeps, decimals), each with its default and its check, written once.

Light on purpose: the requests (`qrelkit.commands.requests`) declare their defaults from here and
check a value when a request is made, before anything is read, and `qrelkit evaluate --help` must
not load numpy to show a default.
"""

from __future__ import annotations

from qrelkit.errors import QrelkitError

DEFAULT_RESAMPLES = 1000  # bootstrap resamples of the queries, for every interval qrelkit gives
DEFAULT_PERMUTATIONS = 1000  # random swaps of a paired randomisation test
METHODS = ("jackknife", "bca", "percentile", "subsampling")
# The default: of the four, the one whose coverage came nearest 95% on DL-shaped simulated tracks
# (the figures: `qrelkit.evaluate.bootstrap`'s docstring, docs/audit.md; benchmarks/bench_interval_coverage.py).
DEFAULT_METHOD = "jackknife"
METHOD_NAMES = {"jackknife": "jackknife", "bca": "BCa", "percentile": "percentile", "subsampling": "subsampling"}
NEEDS_JACKKNIFE = ("bca", "jackknife")
# FD's intervals stay BCa by default: the coverage study behind the audits' default (the jackknife;
# benchmarks/bench_interval_coverage.py) measured τ and κ, not FD, whose bootstrap is biased upward
# in a way of its own (resampling duplicates items).
FD_DEFAULT_METHOD = "bca"
# 100,000 resamples put a 99.9% interval's tails on 50 values each (scipy's default is 9,999);
# beyond that the weight matrix (resamples × queries) only costs memory.
MAX_RESAMPLES = 100_000
MAX_WEIGHT_ENTRIES = 200_000_000  # resamples × queries: 1.6 GB of float64 weights
DEFAULT_MEASURES = ("nDCG@10", "AP(rel=2)")  # an audit's, when none is named
KEEP = ("top-grade", "random")
AVERAGES = {
    "qrels": "over the {n} queries of the qrels; a query a run misses scores 0 (trec_eval -c)",
    "run": "over the queries each run covers (num_q per run; trec_eval without -c)",
}


# Estimates from a human sample (docs/human-budget.md). The defaults are the simulation's
# (benchmarks/bench_human_budget.py: DL19, four judges, 200-2,000 labels, 1,000 draws each): at each
# budget, the design and estimator whose mean coverage of 95% intervals over the judges lay in 94-96%
# with the smallest RMSE. From 500 labels that is the weighted design with PPI++ (94.3%, RMSE 0.036 at
# 500; 94.8%, 0.023 at 1,000; 94.7%, 0.012 at 2,000); at 200 no design reached 94%, and whole queries
# with PPI came nearest (93.6%; the weighted design's PPI++ 90.7%, its worst judge 87.7%), so `auto` plans those.
ESTIMATE_DESIGNS = ("auto", "weighted", "stratified", "queries")
DEFAULT_DESIGN = "auto"
WEIGHTED_FROM = 500  # labels from which `auto` plans the weighted design
ESTIMATORS = ("human", "judge", "ppi", "ppi++", "calibrated")
DESIGN_ESTIMATORS = {
    "queries": ("human", "judge", "ppi", "ppi++"),
    "stratified": ("human", "judge", "ppi", "ppi++", "calibrated"),
    "weighted": ("human", "judge", "ppi", "ppi++", "calibrated"),
}
DEFAULT_ESTIMATOR = {"queries": "ppi", "stratified": "ppi++", "weighted": "ppi++"}
# (design, estimator) -> labels -> (coverage of nDCG@10's 95% intervals averaged over the runs and the
# four DL19 judges, the worst judge's), as the simulation measured them (benchmarks/RESULTS.md); an
# estimator whose mean lies outside COVERAGE_RANGE is named as such wherever it is used.
MEASURED_COVERAGE: dict[tuple[str, str], dict[int, tuple[float, float]]] = {
    ("queries", "human"): {200: (0.928, 0.922), 500: (0.927, 0.924), 1000: (0.931, 0.922), 2000: (0.942, 0.939)},
    ("queries", "ppi"): {200: (0.936, 0.931), 500: (0.937, 0.934), 1000: (0.945, 0.939), 2000: (0.946, 0.940)},
    ("queries", "ppi++"): {200: (0.677, 0.607), 500: (0.681, 0.634), 1000: (0.888, 0.874), 2000: (0.913, 0.902)},
    ("stratified", "human"): {200: (0.0, 0.0), 500: (0.017, 0.016), 1000: (0.212, 0.203), 2000: (0.572, 0.560)},
    ("stratified", "ppi"): {200: (0.819, 0.525), 500: (0.874, 0.587), 1000: (0.919, 0.752), 2000: (0.943, 0.862)},
    ("stratified", "ppi++"): {200: (0.721, 0.334), 500: (0.818, 0.512), 1000: (0.890, 0.767), 2000: (0.924, 0.876)},
    ("stratified", "calibrated"): {200: (0.575, 0.402), 500: (0.748, 0.589), 1000: (0.861, 0.795), 2000: (0.914, 0.886)},
    ("weighted", "human"): {200: (0.203, 0.042), 500: (0.758, 0.639), 1000: (0.900, 0.867), 2000: (0.823, 0.515)},
    ("weighted", "ppi"): {200: (0.924, 0.831), 500: (0.933, 0.910), 1000: (0.902, 0.790), 2000: (0.763, 0.297)},
    ("weighted", "ppi++"): {200: (0.907, 0.877), 500: (0.943, 0.924), 1000: (0.948, 0.940), 2000: (0.947, 0.938)},
    ("weighted", "calibrated"): {200: (0.815, 0.732), 500: (0.914, 0.869), 1000: (0.917, 0.851), 2000: (0.841, 0.728)},
}
COVERAGE_RANGE = (0.93, 0.97)


def design_for(design: str, budget: int) -> str:
    """The design `auto` stands for at ``budget`` labels; any other as it is."""
    if design != "auto":
        return design
    return "weighted" if budget >= WEIGHTED_FROM else "queries"


def measured_coverage(design: str, estimator: str, labels: int) -> tuple[int, float, float] | None:
    """(the simulated budget nearest ``labels``, mean coverage, worst judge's), where measured."""
    found = MEASURED_COVERAGE.get((design, estimator))
    if not found:
        return None
    budget = min(found, key=lambda b: abs(b - labels))
    return (budget, *found[budget])


def check_design(design: str) -> str:
    if design not in ESTIMATE_DESIGNS:
        raise QrelkitError(f"--design {design!r}: choose {', '.join(ESTIMATE_DESIGNS)} (docs/human-budget.md)")
    return design


def check_estimator(estimator: str | None) -> str | None:
    if estimator is not None and estimator not in ESTIMATORS:
        raise QrelkitError(f"--estimator {estimator!r}: choose {', '.join(ESTIMATORS)}")
    return estimator


def check_scale(scale: str | tuple[int, int]) -> tuple[int, int]:
    """`LOW-HIGH` (e.g. 0-3) as two whole grades, LOW < HIGH, LOW >= 0."""
    parts = [str(part) for part in scale] if isinstance(scale, tuple) else str(scale).split("-")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts) or not 0 <= int(parts[0]) < int(parts[1]):
        raise QrelkitError(f"--scale {scale!r}: give the assessors' grades as LOW-HIGH, e.g. 0-3")
    return int(parts[0]), int(parts[1])


def check_resamples(resamples: int, n_queries: int | None = None) -> None:
    """A resample count qrelkit will draw: 0 ≤ N ≤ MAX_RESAMPLES (and the weights fit in memory)."""
    if resamples < 0:
        raise QrelkitError(f"bootstrap resamples must be >= 0, got {resamples}")
    if resamples > MAX_RESAMPLES:
        raise QrelkitError(
            f"--resamples {resamples}: at most {MAX_RESAMPLES:,} bootstrap resamples "
            "(enough for a 99.9% interval; scipy's default is 9,999)"
        )
    if n_queries is not None and resamples * n_queries > MAX_WEIGHT_ENTRIES:
        raise QrelkitError(
            f"--resamples {resamples} over {n_queries:,} queries needs {resamples * n_queries * 8 / 1e9:.1f} GB of resample weights; "
            f"use at most {MAX_WEIGHT_ENTRIES // n_queries:,} resamples"
        )


def check_seed(seed: object) -> int | None:
    """A seed numpy's generators take: a whole number from 0 up (None: the command's default). Checked
    when the request is made, before any paid request is sent."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | str) or not str(seed).strip().lstrip("-").isdigit():
        raise QrelkitError(f"--seed {seed!r}: give a whole number, 0 or more")
    value = int(seed)
    if value < 0:
        raise QrelkitError(f"--seed {value}: a seed is 0 or more")
    return value


def check_method(method: str) -> str:
    """``jackknife``, ``bca``, ``percentile`` or ``subsampling`` (any case); anything else is a clear error."""
    chosen = str(method).lower()
    if chosen not in METHODS:
        raise QrelkitError(f"--interval {method!r}: choose jackknife (the default), bca, percentile or subsampling")
    return chosen


def check_keep(keep: str) -> str:
    if keep not in KEEP:
        raise QrelkitError(f"--keep {keep!r}: choose top-grade (highest grade first, at random within a grade) or random")
    return keep


def check_average(average: str) -> str:
    if average not in AVERAGES:
        raise QrelkitError(f"--average {average!r}: choose qrels (every query of the qrels, a missed one scoring 0) or run")
    return average


def check_decimals(decimals: int | None) -> int | None:
    if decimals is not None and not 0 <= decimals <= 15:
        raise QrelkitError(f"--reference-decimals {decimals}: give 0 to 15 decimals (trec_eval prints 4)")
    return decimals

"""The vectorised NRG against a plain-Python reading of the definition (Eq. 3-4), on random
collections: every model, gain, depth, ranking order and prior-set shape, ties included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit.evaluate.nrg import nrg
from qrelkit.evaluate.nrg.compare import rareness_precision, tasc, unique_contributions
from qrelkit.io import Run, RunEntry

DOCS = [f"d{i}" for i in range(9)]


def seen_of(model: str, p: float):
    return {
        "ndcg": lambda i: 1 / math.log2(i + 1),
        "rr": lambda i: 1 / i,
        "precision": lambda i: 1.0,
        "rbp": lambda i: p ** (i - 1),
    }[model]


def gain_of(kind: str, level: int):
    return {
        "linear": lambda g: max(g, 0),
        "exp": lambda g: 2 ** max(g, 0) - 1,
        "binary": lambda g: 1 if g >= level else 0,
    }[kind]


def ranked(run: Run, order: str) -> dict[str, list[str]]:
    if order == "trec_eval":
        return run.ranking()
    out: dict[str, list[str]] = {}
    for entry in run.entries:
        out.setdefault(entry.qid, []).append(entry.docid)
    return out


def oracle_nrg(grades, runs, priors, model, p, depth, gain, order) -> dict[str, dict[str, float]]:
    """Eq. 3-4 read literally: loops, list.index, no shared work between runs or queries."""
    seen = seen_of(model, p)
    lists = {run.name: ranked(run, order) for run in runs}

    def top(name, qid):
        docs = lists[name].get(qid, [])
        return docs[:depth] if depth else docs

    def residual(doc, qid, target):
        value = gain(grades[qid].get(doc, 0))
        for prior in priors.get(target, []):
            if doc in top(prior, qid):
                value *= 1 - seen(top(prior, qid).index(doc) + 1)
        return value

    out: dict[str, dict[str, float]] = {}
    for run in runs:
        out[run.name] = {}
        for qid in sorted(grades):
            raw = sum(residual(d, qid, run.name) * seen(i + 1) for i, d in enumerate(top(run.name, qid)))
            if model == "precision":
                out[run.name][qid] = raw / depth
            elif model == "rbp":
                out[run.name][qid] = raw * (1 - p)
            else:
                ideal_values = sorted((residual(d, qid, run.name) for d in grades[qid]), reverse=True)[: depth or None]
                ideal = sum(v * seen(i + 1) for i, v in enumerate(ideal_values))
                out[run.name][qid] = raw / ideal if ideal > 0 else 0.0
    return out


@st.composite
def collections(draw):
    queries = [f"q{i}" for i in range(draw(st.integers(1, 3)))]
    grades = {}
    for qid in queries:
        judged = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=7))
        grades[qid] = {d: draw(st.integers(-1, 3)) for d in judged}
    runs = []
    for r in range(draw(st.integers(1, 5))):
        entries = []
        for qid in draw(st.lists(st.sampled_from(queries), unique=True, min_size=0, max_size=len(queries))):
            docs = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=8))
            # scores from a small set make ties, broken by docid descending (trec_eval)
            entries += [RunEntry(qid, d, k + 1, float(draw(st.integers(0, 3)))) for k, d in enumerate(docs)]
        runs.append(Run(f"r{r}", tuple(entries)))
    names = [run.name for run in runs]
    shape = draw(st.sampled_from(["all-others", "random", "chronological", "none"]))
    if shape == "all-others":
        priors = None
    elif shape == "chronological":
        priors = {name: names[:k] for k, name in enumerate(names)}
    elif shape == "none":
        priors = {}
    else:
        priors = {name: draw(st.lists(st.sampled_from([n for n in names if n != name]), unique=True)) for name in names if len(names) > 1}
    return grades, runs, priors


configs = st.tuples(
    st.sampled_from(["ndcg", "rr", "precision", "rbp"]),
    st.sampled_from([0.5, 0.8, 0.95]),
    st.one_of(st.none(), st.integers(1, 9)),
    st.sampled_from(["linear", "exp", "binary"]),
    st.integers(1, 3),
    st.sampled_from(["trec_eval", "file"]),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collection=collections(), config=configs)
def test_vectorised_nrg_equals_the_definition(collection, config):
    grades, runs, priors = collection
    model, p, depth, gain_kind, level, order = config
    if model == "precision" and depth is None:
        depth = 5
    model_spec = f"rbp:{p}" if model == "rbp" else model
    gain_spec = f"binary:{level}" if gain_kind == "binary" else gain_kind
    result = nrg(grades, runs, priors, model=model_spec, depth=depth or "full", gain=gain_spec, order=order)
    names = [run.name for run in runs]
    prior_sets = {n: [m for m in names if m != n] for n in names} if priors is None else priors
    expected = oracle_nrg(grades, runs, prior_sets, model, p, depth, gain_of(gain_kind, level), order)
    plain = oracle_nrg(grades, runs, {}, model, p, depth, gain_of(gain_kind, level), order)
    for i, name in enumerate(result.runs):
        for j, qid in enumerate(result.queries):
            assert result.nrg[i, j] == pytest.approx(expected[name][qid], rel=1e-9, abs=1e-12)
            assert result.base[i, j] == pytest.approx(plain[name][qid], rel=1e-9, abs=1e-12)
            if model in ("ndcg", "rr"):
                assert -1e-12 <= result.nrg[i, j] <= 1 + 1e-12  # the ideal bounds the run (rearrangement)


@settings(max_examples=120, deadline=None)
@given(collection=collections(), depth=st.integers(1, 6), level=st.integers(1, 3), alpha=st.sampled_from([0.5, 1.0, 2.0]))
def test_comparison_measures_equal_their_definitions(collection, depth, level, alpha):
    grades, runs, priors = collection
    names = [run.name for run in runs]
    prior_sets = {n: [m for m in names if m != n] for n in names} if priors is None else priors
    tops = {run.name: {q: docs[:depth] for q, docs in run.ranking().items()} for run in runs}
    unique = unique_contributions(grades, runs, priors, depth=depth, rel_level=level)
    rare = rareness_precision(grades, runs, depth=depth, alpha=alpha, rel_level=level)
    ndcg = nrg(grades, runs, {}, depth=depth).base
    max_tasc = tasc(grades, runs, priors, depth=depth)
    for i, name in enumerate(unique.runs):
        for j, qid in enumerate(unique.queries):
            relevant = {d for d, g in grades[qid].items() if g >= level}
            mine = set(tops[name].get(qid, [])) & relevant
            seen_before = set().union(*(tops[p].get(qid, []) for p in prior_sets.get(name, [])))
            assert unique.values[i, j] == len(mine - seen_before)
            counts = {d: sum(d in tops[r].get(qid, []) for r in names) for d in mine}
            assert rare.values[i, j] == pytest.approx(sum(1 + alpha * (1 - counts[d] / len(names)) for d in mine) / depth)
            best_prior = max((ndcg[names.index(p), j] for p in prior_sets.get(name, [])), default=0.0)
            assert max_tasc.values[i, j] == pytest.approx((1 - best_prior) * ndcg[i, j])


def test_adding_a_prior_never_raises_residual_gain_so_unique_counts_only_fall():
    rng = np.random.default_rng(7)
    grades = {"q": {d: int(rng.integers(0, 3)) for d in DOCS}}
    runs = [Run(f"r{k}", tuple(RunEntry("q", d, i + 1, float(9 - i)) for i, d in enumerate(rng.permutation(DOCS)[:5]))) for k in range(6)]
    previous = None
    for m in range(1, 6):
        counts = unique_contributions(grades, runs, {"r0": [f"r{k}" for k in range(1, m + 1)]}, depth=5).values[0]
        assert previous is None or (counts <= previous).all()
        previous = counts

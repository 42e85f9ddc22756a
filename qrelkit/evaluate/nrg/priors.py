"""Prior sets for NRG (seed 004): all other runs, a chronological order (Figure 1a), the best
run of each other group (Figure 2), or an explicit list. Each builder returns plain data,
``{run: [prior runs]}``; the file readers name the file and line of anything wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from qrelkit.evaluate.nrg.layout import prepare
from qrelkit.evaluate.nrg.options import NRGConfig, NRGError
from qrelkit.evaluate.nrg.score import base_scores, build_result, prior_index
from qrelkit.io.groups import read_run_order


def all_others(names: Sequence[str]) -> dict[str, list[str]]:
    return {name: [other for other in names if other != name] for name in names}


def chronological(order: Sequence[str]) -> dict[str, list[str]]:
    """Each run against the runs listed before it (the first has no priors: its plain metric)."""
    return {name: list(order[:k]) for k, name in enumerate(order)}


def listed(names: Sequence[str], prior_runs: Sequence[str]) -> dict[str, list[str]]:
    """Each run against the listed runs other than itself."""
    return {name: [p for p in prior_runs if p != name] for name in names}


def best_per_group(groups: Mapping[str, str], scores: Mapping[str, float]) -> dict[str, list[str]]:
    """Each run against the best run (by ``scores``) of every other group; its own group is left out.

    Ties for a group's best go to the run name that sorts first, so the choice is reproducible.
    """
    best: dict[str, str] = {}
    for run in sorted(groups, key=lambda r: (-scores[r], r)):
        best.setdefault(groups[run], run)
    return {run: [best[g] for g in sorted(best) if g != own] for run, own in groups.items()}


def prior_sets(
    kind: str,
    names: Sequence[str],
    scores: Callable[[], Mapping[str, float]],
    *,
    order_file: str | Path | None = None,
    listed_runs: Sequence[str] = (),
    groups: Mapping[str, str] | None = None,
    explicit: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, list[str]]:
    """The prior sets of ``kind``: all-others, order (``order_file``), runs (``listed_runs``),
    best-per-group (``groups``: run -> group; ``scores``, called only here, ranks each group's runs)
    or explicit (``explicit``: run -> its prior runs, as given)."""
    if kind == "explicit":
        return {run: list(before) for run, before in (explicit or {}).items()}
    if kind == "all-others":
        return all_others(names)
    if kind == "order":
        assert order_file is not None
        return chronological(read_run_order(order_file, names))
    if kind == "runs":
        return listed(names, listed_runs)
    if kind == "best-per-group":
        assert groups is not None
        return best_per_group(groups, scores())
    raise NRGError(f"unknown kind of prior set {kind!r}: all-others, order, runs or best-per-group")


def nrg_with_priors(
    qrels,
    runs,
    kind: str = "all-others",
    *,
    order_file: str | Path | None = None,
    listed_runs: Sequence[str] = (),
    groups: Mapping[str, str] | None = None,
    explicit: Mapping[str, Sequence[str]] | None = None,
    model="ndcg",
    depth=10,
    gain="linear",
    order="trec_eval",
    best_by: Mapping[str, float] | None = None,
):
    """NRG with the prior sets of ``kind`` (see `prior_sets`).

    For best-per-group, each group's best run is the one with the highest ``best_by`` score,
    by default the mean absolute metric of this configuration (nDCG@10 by default, as in seed
    004's Figure 2; pass nDCG@10 means explicitly to keep that choice at another depth or model).
    """
    prepared = prepare(qrels, runs, NRGConfig.parse(model, depth, gain, order))
    base = base_scores(prepared)
    scores = (lambda: dict(best_by)) if best_by is not None else (lambda: dict(zip(prepared.runs, base.mean(axis=1).tolist())))
    priors = prior_sets(kind, prepared.runs, scores, order_file=order_file, listed_runs=listed_runs, groups=groups, explicit=explicit)
    return build_result(prepared, prior_index(prepared.runs, priors), base)

"""Prior sets for NRG (seed 004): all other runs, a chronological order (Figure 1a), the best
run of each other group (Figure 2), or an explicit list. Each builder returns plain data,
``{run: [prior runs]}``; the file readers name the file and line of anything wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from qrelkit.evaluate.nrg.options import NRGError
from qrelkit.io.groups import read_run_order, run_groups, split_groups_spec

PRIOR_SPECS = "all-others | order:FILE | best-per-group:FILE[:COLUMN] | runs:A,B"


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


def read_run_groups(path: str | Path, names: Sequence[str] | None = None, column: str = "group") -> dict[str, str]:
    """run -> group from a groups file's ``column`` (see `qrelkit.io.groups`)."""
    return run_groups(path, names, column)


def groups_from_spec(spec: str, names: Sequence[str] | None = None) -> dict[str, str]:
    """``FILE`` or ``FILE:COLUMN`` -> run -> group (the only grouping column, or `group`)."""
    file, column = split_groups_spec(spec)
    return run_groups(file, names, column, default="group")


def prior_sets_from_spec(
    spec: str, names: Sequence[str], scores: Callable[[], Mapping[str, float]]
) -> tuple[dict[str, list[str]], dict[str, str] | None]:
    """Parse ``--prior``; returns the prior sets and, for best-per-group, the groups (for the plot).

    ``scores`` is called only for best-per-group: mean absolute metric per run, to pick each group's best.
    """
    kind, _, arg = spec.partition(":")
    if kind == "all-others" and not arg:
        return all_others(names), None
    if kind == "order" and arg:
        return chronological(read_run_order(arg, names)), None
    if kind == "runs" and arg:
        chosen = [r.strip() for r in arg.split(",") if r.strip()]
        unknown = [r for r in chosen if r not in set(names)]
        if unknown:
            raise NRGError(f"--prior runs: unknown run(s) {', '.join(unknown)}; loaded runs: {', '.join(names)}")
        return listed(names, chosen), None
    if kind == "best-per-group" and arg:
        groups = groups_from_spec(arg, names)
        return best_per_group(groups, scores()), groups
    raise NRGError(f"--prior {spec!r}: expected {PRIOR_SPECS}")


def nrg_from_spec(
    qrels,
    runs,
    prior: str = "all-others",
    *,
    model="ndcg",
    depth=10,
    gain="linear",
    order="trec_eval",
    best_by: Mapping[str, float] | None = None,
):
    """NRG with the prior sets a ``--prior`` spec names; returns (NRGResult, groups or None).

    For best-per-group, each group's best run is the one with the highest ``best_by`` score,
    by default the mean absolute metric of this configuration (nDCG@10 by default, as in seed
    004's Figure 2; pass nDCG@10 means explicitly to keep that choice at another depth or model).
    """
    from qrelkit.evaluate.nrg.layout import prepare
    from qrelkit.evaluate.nrg.options import NRGConfig
    from qrelkit.evaluate.nrg.score import base_scores, build_result, prior_index

    prepared = prepare(qrels, runs, NRGConfig.parse(model, depth, gain, order))
    base = base_scores(prepared)
    scores = (lambda: dict(best_by)) if best_by is not None else (lambda: dict(zip(prepared.runs, base.mean(axis=1).tolist())))
    priors, groups = prior_sets_from_spec(prior, prepared.runs, scores)
    return build_result(prepared, prior_index(prepared.runs, priors), base), groups

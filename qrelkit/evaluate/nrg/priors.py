"""Prior sets for NRG (seed 004): all other runs, a chronological order (Figure 1a), the best
run of each other group (Figure 2), or an explicit list. Each builder returns plain data,
``{run: [prior runs]}``; the file readers name the file and line of anything wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from qrelkit.errors import InputFormatError, LineProblem
from qrelkit.evaluate.nrg.options import NRGError
from qrelkit.io.lines import iter_lines, raise_if_problems

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


def _data_lines(path: Path) -> list[tuple[int, str]]:
    problems: list[LineProblem] = []
    lines = [(n, text.strip()) for n, text in iter_lines(path, problems) if not text.lstrip().startswith("#")]
    raise_if_problems(problems)
    return lines


def read_run_order(path: str | Path, names: Sequence[str]) -> list[str]:
    """Run names, one a line, oldest first ('#' comments and blank lines skipped); every loaded run once."""
    path = Path(path)
    known, seen, problems = set(names), {}, []
    for number, line in _data_lines(path):
        name = line.split()[0]
        if name not in known:
            problems.append(LineProblem(str(path), number, f"unknown run {name!r}; loaded runs: {', '.join(sorted(known))}"))
        elif name in seen:
            problems.append(LineProblem(str(path), number, f"run {name!r} already listed on line {seen[name]}"))
        else:
            seen[name] = number
    raise_if_problems(problems)
    missing = [n for n in names if n not in seen]
    if missing:
        raise InputFormatError.single(path, 0, f"the order must list every run; missing: {', '.join(missing)}")
    return sorted(seen, key=seen.__getitem__)


def read_run_groups(path: str | Path, names: Sequence[str] | None = None, column: str = "group") -> dict[str, str]:
    """run -> group from a table with a header naming a `run` column and ``column`` (tab- or space-separated)."""
    path = Path(path)
    lines = _data_lines(path)
    if not lines:
        raise InputFormatError.single(path, 0, "empty groups file; expected a header such as `run<TAB>group`")
    split = (lambda s: s.split("\t")) if "\t" in lines[0][1] else str.split
    header = [h.strip() for h in split(lines[0][1])]
    for wanted in ("run", column):
        if wanted not in header:
            raise InputFormatError.single(path, lines[0][0], f"no column {wanted!r} in header {header}")
    run_col, group_col = header.index("run"), header.index(column)
    groups: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems: list[LineProblem] = []
    for number, line in lines[1:]:
        cols = [c.strip() for c in split(line)]
        if len(cols) <= max(run_col, group_col):
            problems.append(LineProblem(str(path), number, f"expected {len(header)} columns, found {len(cols)}"))
        elif cols[run_col] in groups:
            problems.append(LineProblem(str(path), number, f"run {cols[run_col]!r} already on line {first_line[cols[run_col]]}"))
        else:
            groups[cols[run_col]] = cols[group_col]
            first_line[cols[run_col]] = number
    raise_if_problems(problems)
    if names is not None:
        missing = [n for n in names if n not in groups]
        if missing:
            raise InputFormatError.single(path, 0, f"no group for run(s): {', '.join(missing)}")
        groups = {n: groups[n] for n in names}
    return groups


def groups_from_spec(spec: str, names: Sequence[str] | None = None) -> dict[str, str]:
    """``FILE`` or ``FILE:COLUMN`` (default column `group`) -> run -> group."""
    file, column = (spec, "group") if Path(spec).is_file() or ":" not in spec else spec.rsplit(":", 1)
    return read_run_groups(file, names, column)


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

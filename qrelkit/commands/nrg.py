"""`qrelkit nrg`: resolve qrels, runs, prior sets and groups, score NRG and the measures the
paper compares it with, and draw the plot when asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.commands.requests import GroupsFile, NRGRequest, PriorSpec
from qrelkit.commands.workspace import Workspace
from qrelkit.evaluate.nrg import NRGError, NRGResult
from qrelkit.evaluate.nrg.compare import comparison_measures
from qrelkit.evaluate.nrg.priors import nrg_with_priors
from qrelkit.io import Run
from qrelkit.io.groups import run_groups


@dataclass
class NRGOutcome:
    result: NRGResult
    prior: str
    groups: dict[str, str] | None  # run -> group (for the table and the plot)
    extra: dict[str, dict[str, float]] = field(default_factory=dict)  # comparison measure -> run -> mean

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        result = self.result
        runs = {run: dict(values) for run, values in result.means().items()}
        for name, values in self.extra.items():
            for run, value in values.items():
                runs[run][name] = value
        payload: dict[str, Any] = {
            "measure": result.config.label,
            "base": result.config.base_label,
            "prior": self.prior,
            "queries": len(result.queries),
            "runs": runs,
            "priors": result.priors,
        }
        if per_query:
            payload["per_query"] = result.per_query()
        return payload


def run_groups_of(groups_file: GroupsFile | None, names: Sequence[str]) -> dict[str, str] | None:
    """run -> group from a groups file (its only grouping column, or `group`)."""
    return None if groups_file is None else run_groups(groups_file.path, names, groups_file.column, default="group")


def nrg_from_spec(
    qrels: Any,
    runs: Sequence[Run],
    prior: str | PriorSpec = "all-others",
    *,
    model: str = "ndcg",
    depth: int | str | None = 10,
    gain: str = "linear",
    order: str = "trec_eval",
    best_by: Mapping[str, float] | None = None,
) -> tuple[NRGResult, dict[str, str] | None]:
    """NRG with the prior sets a ``--prior`` spec names; returns (NRGResult, groups or None) (see
    `qrelkit.evaluate.nrg.priors.nrg_with_priors` for ``best_by``)."""
    spec = PriorSpec.parse(prior)
    names = [run.name for run in runs]
    unknown = [r for r in spec.runs if r not in set(names)]
    if unknown:
        raise NRGError(f"--prior runs: unknown run(s) {', '.join(unknown)}; loaded runs: {', '.join(names)}")
    groups = run_groups_of(spec.groups_file, names)
    options: dict[str, Any] = dict(model=model, depth=depth, gain=gain, order=order, best_by=best_by)
    result = nrg_with_priors(qrels, runs, spec.kind, order_file=spec.order_file, listed_runs=spec.runs, groups=groups, **options)
    return result, groups


def run(request: NRGRequest, workspace: Workspace) -> NRGOutcome:
    """`qrelkit nrg`: NRG over the prior sets, the comparison measures when asked, the plot when asked."""
    if request.plot:
        workspace.check_output(request.plot, force=request.force, refs=(request.qrels, request.runs))
    qrels, runs = workspace.qrels(request.qrels), workspace.runs(request.runs)
    options: dict[str, Any] = dict(model=request.browsing_model, depth=request.depth, gain=request.gain, order=request.order)
    result, prior_groups = nrg_from_spec(qrels, runs, request.prior, **options)
    extra = {m.measure: m.means() for m in comparison_measures(qrels, runs, result)} if request.compare else {}
    if request.groups_file is not None:
        prior_groups = run_groups_of(request.groups_file, result.runs)
    if request.plot:
        from qrelkit.report.plots.nrg import plot_nrg

        plot_nrg(result, request.plot, prior_groups, title=f"prior set: {request.prior.kind}")
    return NRGOutcome(result, request.prior_text, prior_groups, extra)


def nrg_command(*, db: Path | None = None, **options: Any) -> NRGOutcome:
    """`qrelkit nrg` from option values (those of `NRGRequest.from_options`) and ``db``."""
    request = NRGRequest.from_options(**options)
    with Workspace(db, on_duplicate=request.on_duplicate) as workspace:
        return run(request, workspace)

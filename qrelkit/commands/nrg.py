"""`qrelkit nrg`: resolve qrels, runs, prior sets and groups, score NRG and the measures the
paper compares it with, and draw the plot when asked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qrelkit.commands.requests import GroupsFile, NRGRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.evaluate.nrg import NRGError, NRGResult
from qrelkit.evaluate.nrg.compare import comparison_measures
from qrelkit.evaluate.nrg.priors import nrg_with_priors
from qrelkit.io.groups import run_groups
from qrelkit.io.results import Result
from qrelkit.report.plots import check_plot_path


@dataclass(repr=False)
class NRGOutcome(Result):
    """NRG of each run (``result``), the prior sets as asked (``prior``), the runs' groups where a
    groups file gave them, and the comparison measures (``extra``) when asked."""

    result: NRGResult
    prior: str
    groups: dict[str, str] | None  # run -> group (for the table and the plot)
    extra: dict[str, dict[str, float]] = field(default_factory=dict)  # comparison measure -> run -> mean

    @property
    def queries(self) -> list[str]:
        return self.result.queries

    @property
    def priors(self) -> dict[str, list[str]]:
        return self.result.priors

    def means(self) -> dict[str, dict[str, float]]:
        return self.result.means()

    def summary(self) -> str:
        return self.result.summary()

    def to_pandas(self):
        """One row per (run, query): nrg and base (`NRGResult.to_pandas`)."""
        return self.result.to_pandas()

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


def run(request: NRGRequest, workspace: Workspace) -> NRGOutcome:
    """NRG over the prior sets `--prior` names (from Python also ``{run: [prior runs]}``; best per group
    ranked by ``best_by`` when given, else by this configuration's own metric)."""
    if request.plot:
        check_plot_path(workspace.check_output(request.plot, force=request.force, refs=(request.qrels, request.runs)))
    qrels, runs = workspace.qrels(request.qrels), workspace.runs(request.runs)
    spec, names = request.prior, [run.name for run in runs]
    unknown = [r for r in spec.runs if r not in set(names)]
    if unknown:
        raise NRGError(f"--prior runs: unknown run(s) {', '.join(unknown)}; loaded runs: {', '.join(names)}")
    groups = run_groups_of(spec.groups_file, names)
    options: dict[str, Any] = dict(model=request.browsing_model, depth=request.depth, gain=request.gain, order=request.order)
    result = nrg_with_priors(
        qrels,
        runs,
        spec.kind,
        order_file=spec.order_file,
        listed_runs=spec.runs,
        groups=groups,
        explicit=dict(spec.lists),
        best_by=request.best_by,
        **options,
    )
    extra = {m.measure: m.means() for m in comparison_measures(qrels, runs, result)} if request.compare else {}
    if request.groups is not None:
        groups = run_groups_of(request.groups, result.runs)
    if request.plot:
        from qrelkit.report.plots.nrg import plot_nrg

        plot_nrg(result, request.plot, groups, title=f"prior set: {spec.kind}")
    return NRGOutcome(result, spec.text, groups, extra)

"""`qrelkit nrg`: resolve qrels, runs, prior sets and groups, score NRG and the measures the
paper compares it with, and draw the plot when asked."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.commands.workspace import Workspace
from qrelkit.evaluate.nrg import NRGResult
from qrelkit.evaluate.nrg.compare import comparison_measures
from qrelkit.evaluate.nrg.priors import groups_from_spec, nrg_from_spec
from qrelkit.io import OnDuplicate


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


def nrg_command(
    *,
    qrels: str,
    runs: list[str],
    db: Path | None,
    prior: str = "all-others",
    browsing_model: str = "ndcg",
    depth: str = "10",
    gain: str = "linear",
    order: str = "trec_eval",
    compare: bool = False,
    groups: str | None = None,
    plot: Path | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.error,
) -> NRGOutcome:
    with Workspace(db, on_duplicate=on_duplicate) as workspace:
        qrels_data = workspace.qrels(qrels)
        run_list = workspace.runs(runs)
    result, prior_groups = nrg_from_spec(qrels_data, run_list, prior, model=browsing_model, depth=depth, gain=gain, order=order)
    extra = {m.measure: m.means() for m in comparison_measures(qrels_data, run_list, result)} if compare else {}
    if groups:
        prior_groups = groups_from_spec(groups, result.runs)
    if plot:
        from qrelkit.report.plots.nrg import plot_nrg

        plot_nrg(result, plot, prior_groups, title=f"prior set: {prior.partition(':')[0]}")
    return NRGOutcome(result, prior, prior_groups, extra)

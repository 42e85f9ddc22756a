"""`qrelkit.judgments(db, judge_run)`: a judge run's judgments as a table, every stored field."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from qrelkit.commands.requests import JudgmentsRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.io.results import Result, pandas


@dataclass(frozen=True, repr=False)
class Judgments(Result):
    """One row per judgment: raw output, score, parsed and expected grade, status, error, tokens,
    latency, cost, attempts, model id, fingerprint, time, and its run's judge and template."""

    table: pa.Table
    judge_runs: list[str]

    def statuses(self) -> dict[str, int]:
        return dict(sorted(Counter(self.table.column("status").to_pylist()).items()))

    def summary(self) -> str:
        return f"judgments={self.table.num_rows}, judge_runs={self.judge_runs}, statuses={self.statuses()}"

    def to_arrow(self) -> pa.Table:
        return self.table

    def to_pandas(self):
        pandas()  # the install hint, not Arrow's own error
        return self.table.to_pandas()

    def to_dict(self) -> dict[str, Any]:
        return {"judge_runs": self.judge_runs, "statuses": self.statuses(), "judgments": self.table.to_pylist()}


def run(request: JudgmentsRequest, workspace: Workspace) -> Judgments:
    """The judgments of ``judge_run`` (its id, a unique prefix or its name; all runs when None)."""
    from qrelkit.storage.judgments import judge_run as find_judge_run
    from qrelkit.storage.judgments import judgments_table

    store = workspace.store
    judge_run_id = find_judge_run(store, request.judge_run).judge_run_id if request.judge_run is not None else None
    table = judgments_table(store, judge_run_id)
    return Judgments(table, sorted(set(table.column("judge_run_id").to_pylist())))

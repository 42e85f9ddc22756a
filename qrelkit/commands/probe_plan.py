"""`qrelkit probe --dry-run`: what each run of a probe job would judge, and what a judge that
estimates its cost says it would cost (on the perturbed copies themselves), with nothing written:
the database is read as `qrelkit judge --dry-run` reads it, and image copies go to a folder that is
removed afterwards."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from qrelkit.commands.probe_result import ProbeResult, RunPlan
from qrelkit.commands.probe_sample import CONTROL, Judge, choose_sample, collection, control_run_id, reference_qrels, run_pairs, runs_of
from qrelkit.commands.requests import ProbeRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.jobs.plan import load_collection
from qrelkit.jobs.spec import JobSpec
from qrelkit.judges import Pair
from qrelkit.probes import Probe
from qrelkit.storage.pools import pool_state

NO_DOWNLOADS = (
    "a dry run starts no download, and ir_datasets would fetch this dataset's files; "
    "load it first (qrelkit load topics|docs|qrels irds:ID), or run without --dry-run"
)


def _estimate(judge: Judge, pairs: list[Pair]) -> dict[str, Any] | None:
    if not pairs or not hasattr(judge.judge_class, "estimate"):
        return None
    return judge.judge_class.estimate(judge.config, judge.factory.template, pairs)


def dry_run(request: ProbeRequest, spec: JobSpec, probes: list[Probe], judge: Judge, workspace: Workspace) -> ProbeResult:
    """Each run's counts (the control run first) and cost estimate; nothing is judged or stored."""
    from qrelkit.io.irds import no_downloads
    from qrelkit.jobs.runner import planning_store

    by_id = {probe.id: probe for probe in probes}
    with no_downloads(NO_DOWNLOADS), planning_store(spec) as store, tempfile.TemporaryDirectory(prefix="qrelkit-probe-") as folder:
        if store.in_memory:  # a copy of the database: the job's files are loaded into it, as a real run would
            load_collection(store, spec)
        sample = choose_sample(store, spec, reference_qrels(store, spec, request, workspace), request)
        result = ProbeResult.for_job(request, spec, judge, sample, None, None, control_run_id(judge.judge_run_id))
        result.dry_run = True
        found = collection(store, sample.pairs)
        for name, run_judge, _ in runs_of(probes, judge):
            state = pool_state(store, run_judge.judge_run_id, sample.pairs, retry_failed=request.retry_failed)
            probe = None if name == CONTROL else by_id[name]
            pairs = run_pairs(probe, state.todo, found, Path(folder) / name)
            plan = RunPlan(
                name, run_judge.judge_run_id, len(sample.pairs), state.ok, state.failed, len(state.todo), _estimate(run_judge, pairs)
            )
            result.plans.append(plan)
    return result

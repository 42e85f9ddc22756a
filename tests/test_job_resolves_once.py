"""A judging job resolves its judge once (issue 25): the judge's config validated once and its
template loaded once per job, where the runner, the plan and the judge's construction each did
it again; and the runner and its executors share one module for judging a batch, so no import
circle is hidden inside a function."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import qrelkit

DEMO = Path(qrelkit.__file__).parent / "data" / "demo"


def test_a_job_validates_its_judge_config_and_loads_its_template_once(tmp_path, monkeypatch):
    from qrelkit.jobs import load_job, plan, run_job
    from qrelkit.judges import registry

    shutil.copytree(DEMO, tmp_path / "demo")
    job = tmp_path / "demo" / "job.yaml"
    job.write_text(job.read_text() + "template: trec-dl-graded\n")  # the embedding judge takes a template too
    counts: Counter[str] = Counter()

    def counting(name, real):
        def call(*args, **kwargs):
            counts[name] += 1
            return real(*args, **kwargs)

        return call

    real_config = registry.make_config
    monkeypatch.setattr(registry, "make_config", counting("config", real_config))
    monkeypatch.setattr(plan, "load_template", counting("template", plan.load_template))
    report = run_job(load_job(job), progress=False)
    assert report.judged == 120 and report.statuses == {"ok": 120}
    assert counts == {"config": 1, "template": 1}
